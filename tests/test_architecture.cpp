// The architecture step (issue 11): containers opt in through unimem_view, streams know their
// device, errors name the caller's line, fill_async never blocks, attach for every managed
// range, device choice, and what report() says.
#include "test_support.hpp"

#include <unimem/allocator.hpp>        // not in the umbrella header
#include <unimem/memory_resource.hpp>  // not in the umbrella header

#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <string>
#include <type_traits>
#include <vector>

namespace user {

/// A user's own container of managed memory that opts in with the documented hook only.
template <class T>
class managed_array {
 public:
  explicit managed_array(std::size_t n) : storage_(n) {}
  T* data() noexcept { return storage_.data(); }
  const T* data() const noexcept { return storage_.data(); }
  std::size_t size() const noexcept { return storage_.size(); }
  T& operator[](std::size_t i) noexcept { return storage_[i]; }

  friend unimem::view<T> unimem_view(managed_array& a) noexcept { return {a.data(), a.size()}; }
  friend unimem::view<const T> unimem_view(const managed_array& a) noexcept {
    return {a.data(), a.size()};
  }

 private:
  unimem::managed_vector<T> storage_;
};

/// A container that did not opt in.
struct plain {
  float* data() { return nullptr; }
  std::size_t size() { return 0; }
};

}  // namespace user

namespace {

__global__ void arch_add(const float* in, float* out, std::size_t n, float delta) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + delta;
}
__global__ void arch_scale_view(unimem::view<float> v, float a) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < v.size()) v[i] *= a;
}
__global__ void arch_spin(std::uint64_t cycles) {
  const long long start = clock64();
  while (static_cast<std::uint64_t>(clock64() - start) < cycles) {
  }
}

}  // namespace

// ---- the extension point (kernel_argument.hpp), checked at compile time ----

static_assert(unimem::detail::viewable_v<user::managed_array<float>>, "");
static_assert(unimem::detail::viewable_v<const user::managed_array<float>>, "");
static_assert(!unimem::detail::viewable_v<user::plain>, "");
static_assert(!unimem::detail::viewable_v<std::vector<float>>, "");
static_assert(unimem::detail::viewable_v<unimem::managed_vector<float>>, "");
static_assert(unimem::detail::viewable_v<unimem::managed_buffer<float>>, "");
static_assert(unimem::detail::viewable_v<unimem::device_buffer<float>>, "");
static_assert(unimem::detail::viewable_v<unimem::pinned_buffer<float>>, "");
static_assert(std::is_same<decltype(unimem::to_view(std::declval<const user::managed_array<int>&>())),
                           unimem::view<const int>>::value,
              "a const container gives a view of const elements");
static_assert(std::is_same<decltype(unimem::in(std::declval<user::managed_array<int>&>())),
                           unimem::access_tag<const int, unimem::access_mode::in>>::value,
              "");
static_assert(std::is_same<decltype(unimem::out(std::declval<unimem::managed_vector<int>&>())),
                           unimem::access_tag<int, unimem::access_mode::out>>::value,
              "");
// The launch traits accept the user's container for pointer and view parameters, and refuse a
// temporary one (it owns memory: it would be freed before the kernel runs).
static_assert(unimem::detail::argument_traits<user::managed_array<float>&, float*>::ok, "");
static_assert(unimem::detail::argument_traits<const user::managed_array<float>&, const float*>::ok,
              "");
static_assert(!unimem::detail::argument_traits<const user::managed_array<float>&, float*>::ok, "");
static_assert(unimem::detail::argument_traits<user::managed_array<float>&, unimem::view<float>>::ok,
              "");
static_assert(!unimem::detail::argument_traits<user::managed_array<float>, float*>::ok, "");
static_assert(unimem::detail::argument_traits<std::vector<float>&, float*>::host_container, "");

// ---- the launch's customization point (core/detail/kernel_args.hpp) ----

namespace user {
struct counted_arg;
/// A launch session of the user's own: what it saw of one launch.
struct counted_session {
  static int made, added, before, after, device;
  static float* flag;  // written before the kernel is queued: the kernel must see it
  explicit counted_session(const unimem::launch_context& c) {
    ++made;
    device = c.device_id;
  }
  void add(const counted_arg& a);
  void before_launch() {
    ++before;
    if (flag != nullptr) *flag = 7.0f;
  }
  void after_launch() { ++after; }
};
int counted_session::made = 0, counted_session::added = 0, counted_session::before = 0,
    counted_session::after = 0, counted_session::device = unimem::no_device;
float* counted_session::flag = nullptr;
/// What launch() makes of a `counted`: a float* for the kernel, in a counted_session.
struct counted_arg {
  using launch_session = counted_session;
  float* p;
  float* kernel_value() const noexcept { return p; }
};
inline void counted_session::add(const counted_arg& a) {
  ++added;
  flag = a.p;
}
struct counted {
  float* p;
};
inline counted_arg unimem_launch_argument(const counted& c) noexcept { return {c.p}; }
}  // namespace user

static_assert(unimem::detail::has_launch_hook<user::counted&>::value, "");
static_assert(std::is_same<unimem::detail::kernel_value_t<user::counted&>, float*>::value, "");
static_assert(unimem::detail::argument_traits<user::counted&, float*>::ok, "");
static_assert(!unimem::detail::argument_traits<user::counted&, int*>::ok, "");
// One session per distinct type, however many arguments name it; the tags' session beside it.
using two_sessions = unimem::detail::sessions_t<
    user::counted&, const user::counted&, int, unimem::managed_buffer<float>&,
    decltype(unimem::in(std::declval<unimem::managed_buffer<float>&>())),
    decltype(unimem::out(std::declval<unimem::managed_buffer<float>&>()))>;
static_assert(std::is_base_of<user::counted_session, two_sessions>::value &&
                  std::is_base_of<unimem::detail::tag_session, two_sessions>::value &&
                  !two_sessions::none,
              "");
static_assert(unimem::detail::sessions_t<int, float*, unimem::view<float>>::none,
              "plain arguments make no session");

__global__ void arch_read_flag(const float* flag, float* out) { *out = *flag; }

TEST(Architecture, ALaunchSessionOfTheUsersOwnRunsOnceAroundTheKernel) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<float> flag(1, 0.0f), out(1, 0.0f);
  user::counted_session::made = user::counted_session::added = user::counted_session::before =
      user::counted_session::after = 0;
  unimem::launch(arch_read_flag, unimem::launch_config(1, 1), user::counted{flag.data()}, out);
  unimem::synchronize();
  EXPECT_EQ(user::counted_session::made, 1);
  EXPECT_EQ(user::counted_session::added, 1);
  EXPECT_EQ(user::counted_session::before, 1);
  EXPECT_EQ(user::counted_session::after, 1);
  EXPECT_EQ(user::counted_session::device, unimem::device::current().device_id());
  EXPECT_EQ(out[0], 7.0f) << "the kernel ran before the session's before_launch()";
  // An empty grid launches nothing, and makes no session.
  unimem::launch(arch_read_flag, unimem::grid_for(0), user::counted{flag.data()}, out);
  EXPECT_EQ(user::counted_session::made, 1);
}

TEST(Architecture, UserContainerIsALaunchArgumentAndATagTarget) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 1 << 20;
  user::managed_array<float> in(n), out(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i);
  unimem::stream s;
  unimem::launch(arch_add, unimem::grid_for(n).on(s), unimem::in(in), unimem::out(out), n, 1.0f);
  unimem::launch(arch_scale_view, unimem::grid_for(n).on(s), out, 2.0f);  // untagged, as a view
  (void)unimem::ready_for_host(out, s);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += out[i] != 2.0f * (static_cast<float>(i) + 1.0f);
  EXPECT_EQ(wrong, 0u);
  // The placement calls take the container too.
  EXPECT_EQ(unimem::prefetch(in, unimem::location::device(s.device_id()), s),
            unimem::migrates_on_demand(unimem::location::device(s.device_id()))
                ? unimem::hint_status::applied
                : unimem::hint_status::unsupported);
  s.synchronize();
}

// ---- errors name the caller's file and line ----

TEST(Architecture, ErrorsNameTheCallersLine) {
  // Without a GPU the allocation fails; with one, a device that does not exist does. Either
  // way the error points here, and still names the native call or unimem's own.
  const int line_device = __LINE__ + 2;
  try {
    unimem::device d(1 << 20);
    FAIL() << "device(1 << 20) did not throw";
  } catch (const unimem::error& e) {
    EXPECT_STREQ(e.file(), __FILE__) << e.what();
    EXPECT_EQ(e.line(), line_device) << e.what();
    EXPECT_NE(std::string(e.what()).find("test_architecture.cpp:" + std::to_string(line_device)),
              std::string::npos)
        << e.what();
  }
  if (!unimem_test::has_gpu()) {
    const int line_buffer = __LINE__ + 2;
    try {
      unimem::managed_buffer<float> b(16);
      FAIL() << "a managed allocation without a GPU did not throw";
    } catch (const unimem::error& e) {
      EXPECT_STREQ(e.file(), __FILE__) << e.what();
      EXPECT_EQ(e.line(), line_buffer) << e.what();
      EXPECT_NE(std::string(e.what()).find("Malloc"), std::string::npos) << e.what();
    }
    const int line_stream = __LINE__ + 2;
    try {
      unimem::stream s;
      FAIL() << "a stream without a GPU did not throw";
    } catch (const unimem::error& e) {
      EXPECT_EQ(e.line(), line_stream) << e.what();
    }
  }
}

TEST(Architecture, LaunchErrorsNameTheLaunchLine) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<float> a(64), b(64);
  const int line = __LINE__ + 2;
  try {
    unimem::launch(arch_add, unimem::launch_config(1, 4096), a, b, a.size(), 1.0f);  // too big
    FAIL() << "a block of 4096 threads was accepted";
  } catch (const unimem::error& e) {
    EXPECT_STREQ(e.file(), __FILE__) << e.what();
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find("LaunchKernel"), std::string::npos) << e.what();
  }
}

// ---- streams know their device ----

TEST(ArchitectureMultiGpu, StreamsDecideTheDeviceOfLaunchesAndFirstTouch) {
  if (unimem::device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  unimem::device(0).make_current();
  unimem::stream s1(unimem::device(1));
  unimem::stream s0(unimem::device(0));
  const std::size_t n = 1 << 20;

  // first_touch(stream): the pages go to the stream's device.
  unimem::managed_buffer<float> b(n, unimem::first_touch(s1));
  EXPECT_EQ(unimem::device::current().device_id(), 0) << "the current device is left as it was";
  if (unimem::device(1).migrates_on_demand()) {
    EXPECT_EQ(unimem::last_prefetch_location(b), unimem::location::device(1));
  }
  for (std::size_t i = 0; i < 16; ++i) ASSERT_EQ(b[i], 0.0f);

  // A location of one device with a stream of another is refused, before anything is allocated
  // on the wrong device.
  const int line = __LINE__ + 2;
  try {
    unimem::managed_buffer<float> wrong(n, unimem::first_touch(unimem::location::device(0), s1));
    FAIL() << "first_touch(device 0, a stream of device 1) was accepted";
  } catch (const unimem::error& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find("belongs to device 1"), std::string::npos) << e.what();
  }

  // An untagged launch on a stream of device 1, with device 0 current, runs on device 1.
  unimem::managed_buffer<float> in(n, 1.0f), out(n, unimem::first_touch(s1));
  unimem::launch(arch_add, unimem::grid_for(n).on(s1), in, out, n, 2.0f);
  EXPECT_EQ(unimem::device::current().device_id(), 0);
  s1.synchronize();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += out[i] != 3.0f;
  EXPECT_EQ(wrong, 0u);

  // on_device() of another device than the stream's is a clear error.
  EXPECT_THROW(unimem::launch(arch_add, unimem::grid_for(n).on(s1).on_device(0), in, out, n, 1.0f),
               unimem::error);
  // first_touch() on the default stream cannot say where: refused with a clear message.
  EXPECT_THROW(unimem::managed_buffer<float>(n, unimem::first_touch(unimem::default_stream)),
               unimem::error);
  (void)s0;
}

// ---- fill_async never blocks the host ----

namespace {
struct three_bytes {
  std::uint8_t a, b, c;
};
struct twelve_bytes {
  int a;
  float b;
  std::uint32_t c;
};

template <class T, class Equal>
void check_fill(const T& value, std::size_t n, Equal equal) {
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  unimem::device_buffer<T> d(n, unimem::uninitialized);
  unimem::managed_buffer<T> m(n, unimem::uninitialized);
  unimem::pinned_buffer<T> p(n, unimem::uninitialized);
  // The stream is busy for a while: a fill that waited for it would find it idle afterwards.
  unimem::launch(arch_spin, unimem::launch_config(1, 1).on(s), std::uint64_t{200'000'000});
  unimem::fill_async(d, value, s);
  unimem::fill_async(m, value, s);
  unimem::fill_async(p, value, s);
  EXPECT_FALSE(s.ready()) << "fill_async of a " << sizeof(T)
                          << "-byte value waited for the stream";
  s.synchronize();
  const std::vector<T> from_device = d.template to<std::vector<T>>();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    wrong += !equal(from_device[i], value) || !equal(m[i], value) || !equal(p[i], value);
  }
  EXPECT_EQ(wrong, 0u) << sizeof(T) << "-byte value, " << n << " elements";
}
}  // namespace

TEST(Architecture, FillAsyncIsStreamOrderedAndNeverBlocks) {
  UNIMEM_REQUIRE_GPU();
  const auto same = [](const auto& a, const auto& b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{1000}, std::size_t{1000003}}) {
    check_fill(std::uint8_t{0x5a}, n, same);
    check_fill(std::uint16_t{0x1234}, n, same);       // 16-bit memset
    check_fill(std::int32_t{-123456789}, n, same);    // 32-bit memset
    check_fill(1.5f, n, same);
    check_fill(2.25, n, same);                        // 8 bytes: seed + doubling
    check_fill(three_bytes{1, 2, 3}, n, same);        // odd size: byte seeds
    check_fill(twelve_bytes{-1, 0.5f, 7u}, n, same);  // 12 bytes
  }
}

// ---- attach for views, managed_vector, pmr memory, and host-attached allocation ----

TEST(Architecture, AttachTakesEveryManagedRange) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 1 << 16;
  unimem::stream s;
  unimem::managed_buffer<float> b(n);
  unimem::attach(b.view(), s);  // a view of a whole allocation
  unimem::managed_vector<float> v(n, 1.0f);
  unimem::attach(v, s);
  unimem::managed_memory_resource resource;
  std::pmr::vector<float> pv(n, 2.0f, &resource);
  unimem::attach(unimem::view<float>(pv.data(), pv.size()), s);
  s.synchronize();
  unimem::attach(v, s, unimem::attach_mode::global);
  unimem::attach(b, s, unimem::attach_mode::global);
  s.synchronize();
#if !defined(UNIMEM_DETAIL_HIP_AMD)  // HIP on AMD documents attachment as a no-op
  // A part of an allocation is refused by the runtime, as a unimem::error.
  EXPECT_THROW(unimem::attach(b.view().subview(1, 10), s), unimem::error);
#endif

  // Host-attached from the start, as NVIDIA's UnifiedMemoryPerf allocates; attached globally
  // before a kernel uses it.
  unimem::managed_buffer<float> h(n, unimem::host_attached);
  for (std::size_t i = 0; i < n; ++i) h[i] = static_cast<float>(i);
  unimem::attach(h, s, unimem::attach_mode::global);
  unimem::launch(arch_scale_view, unimem::grid_for(n).on(s), h, 3.0f);
  s.synchronize();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += h[i] != 3.0f * static_cast<float>(i);
  EXPECT_EQ(wrong, 0u);
}

// ---- devices: compute mode, choice, report ----

TEST(Architecture, PickDeviceChoosesAUsableDevice) {
  if (!unimem_test::has_gpu()) {
    try {
      (void)unimem::pick_device();
      FAIL() << "pick_device() without a GPU did not throw";
    } catch (const unimem::error& e) {
      EXPECT_TRUE(e.no_gpu()) << e.what();
    }
    return;
  }
  const unimem::device best = unimem::pick_device();
  EXPECT_NE(best.compute_mode(), unimem::compute_mode::prohibited);
  for (const unimem::device& d : unimem::devices()) {
    if (d.compute_mode() == unimem::compute_mode::prohibited) continue;
    EXPECT_LE(d.multiprocessors(), best.multiprocessors());
  }
  const unimem::device roomiest = unimem::pick_device(unimem::device_criterion::most_memory);
  for (const unimem::device& d : unimem::devices()) {
    if (d.compute_mode() != unimem::compute_mode::prohibited) {
      EXPECT_LE(d.total_memory(), roomiest.total_memory());
    }
  }
  EXPECT_EQ(unimem::device(0).properties().compute_mode, unimem::device(0).compute_mode());
}

TEST(Architecture, ReportStatesEachFactOnce) {
  const std::string r = unimem::report();
  EXPECT_EQ(r.find("runtime none"), std::string::npos) << r;
  EXPECT_NE(unimem::runtime_version(), "none");
  // An error whose runtime describes it by its own name prints the name once.
  const unimem::runtime_error e(unimem::detail::backend::error_invalid_value, "someCall()", "x.cpp", 1);
  const std::string name = e.code_name();
  const std::string what = e.what();
  EXPECT_EQ(what.find(name + ": " + name), std::string::npos) << what;
  EXPECT_NE(what.find(name), std::string::npos) << what;
}
