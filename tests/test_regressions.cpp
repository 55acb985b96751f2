// Regression tests for the correctness bugs found by reproduction on two H200s (issue 9). Each
// test failed on the code before its fix; docs/reliability.md names them (rows 26-34). They use
// only the API that existed before the fixes, so the same file also builds against the old
// headers to show the failure. Two-GPU tests skip unless two GPUs are visible.
#include "test_support.hpp"

#include <unimem/memory_resource.hpp>  // not in the umbrella header

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory_resource>
#include <new>
#include <utility>

// ---- a global operator new that can be told to fail (bug 6) ----
// Armed per thread; disarmed it behaves as the standard one. Host code only: the GPU
// compilers' device passes must not see a replacement of the global allocation functions.
namespace {
thread_local long regression_new_countdown = -1;  // n >= 0: the (n + 1)-th allocation fails
}  // namespace

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
void* operator new(std::size_t n) {
  if (regression_new_countdown >= 0 && regression_new_countdown-- == 0) throw std::bad_alloc();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// The nothrow form as the standard's default is (it calls the one above), replaced too so that
// every allocation unimem makes goes through the countdown, and so that AddressSanitizer, which
// intercepts the nothrow form itself, does not pair its allocation with the free() below.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
// GCC sees free() of a pointer from operator new; here operator new is malloc. Out of line:
// inlined into a caller's new/delete pair, GCC 11 warns there, outside this pragma.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#else
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

namespace {

/// Makes the (after + 1)-th operator new of this thread throw, for the scope.
struct fail_new_after {
  explicit fail_new_after(long after) { regression_new_countdown = after; }
  ~fail_new_after() { regression_new_countdown = -1; }
  fail_new_after(const fail_new_after&) = delete;
  fail_new_after& operator=(const fail_new_after&) = delete;
};

/// A runtime_resource over malloc that counts what it holds: the bookkeeping of unimem's pmr
/// resources, testable without a GPU.
struct counting_kind {
  static inline int outstanding = 0;
  static void* allocate(std::size_t bytes, const char*, unimem::call_site) {
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    ++outstanding;
    return p;
  }
  static void deallocate(void* p, std::size_t) noexcept {
    --outstanding;
    std::free(p);
  }
};
class counting_resource final : public unimem::detail::runtime_resource<counting_kind> {
 public:
  counting_resource() { counting_kind::outstanding = 0; }
  int outstanding() const { return counting_kind::outstanding; }

 private:
  const char* resource_name() const noexcept override { return "counting_resource"; }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
};

/// The same bookkeeping over real device memory; once armed, the bookkeeping allocation that
/// follows a successful runtime allocation fails (an operator new failing inside the runtime's
/// own allocation call would test something else).
class failing_bookkeeping_device_resource final
    : public unimem::detail::runtime_resource<unimem::device_memory> {
 public:
  bool armed = false;

 private:
  const char* resource_name() const noexcept override {
    return "failing_bookkeeping_device_resource";
  }
  void* raw_allocate(std::size_t bytes) override {
    void* p = unimem::device_memory::allocate(bytes, resource_name(), unimem::call_site::current());
    if (armed) regression_new_countdown = 0;
    return p;
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
};

}  // namespace

__global__ void regression_inplace_add(const float* in, float* out, std::size_t n, float delta) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + delta;
}
__global__ void regression_out_then_in(float* out, const float* in, std::size_t n, float delta) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + delta;
}
__global__ void regression_add(int* data, std::size_t n, int delta) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] += delta;
}
__global__ void regression_fill(int* data, std::size_t n, int value) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] = value;
}
// Keeps its stream busy for about `cycles` GPU clock cycles.
__global__ void regression_spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
// Keeps its stream busy until the host sets *flag (or about `cycles` cycles pass).
__global__ void regression_wait_for_flag(const volatile int* flag, long long cycles) {
  const long long start = clock64();
  while (*flag == 0 && clock64() - start < cycles) {
  }
}

namespace {

constexpr long long quarter_second_of_cycles = 500'000'000;  // >= 0.25 s below 2 GHz

template <class T>
std::size_t count_not_equal(const unimem::managed_buffer<T>& b, T expected) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < b.size(); ++i) wrong += b[i] != expected;
  return wrong;
}

#define UNIMEM_REGRESSION_REQUIRE_TWO_GPUS()                                                   \
  do {                                                                                         \
    if (unimem::device_count() < 2)                                                            \
      GTEST_SKIP() << "needs two GPUs; unimem::device_count() == " << unimem::device_count(); \
  } while (0)

}  // namespace

// ---- bug 8: dims::volume() and launch_config::threads() wrapped around ----

TEST(Regression, ThreadCountsSaturateInsteadOfWrapping) {
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const unimem::dims largest_grid(0x7fffffffu, 65535u, 65535u);  // legal on CUDA
  EXPECT_EQ(largest_grid.volume(), std::uint64_t{9223090559730712575u});  // exact, < 2^63
  // (2^31 - 1) * 65535 * 65535 * 1024 = 9.4e21 threads: more than 64 bits hold. Wrapped, it
  // read 18158511498668801024, a number that looks like a real launch.
  EXPECT_EQ(unimem::launch_config(largest_grid, unimem::dims(1024)).threads(), max);
  EXPECT_EQ(unimem::dims(0xffffffffu, 0xffffffffu, 0xffffffffu).volume(), max);
  EXPECT_EQ(unimem::launch_config(unimem::dims(0xffffffffu, 0xffffffffu), unimem::dims(2)).threads(),
            max);
  // 2^64 exactly does not fit either; just below it the product is exact.
  EXPECT_EQ(unimem::launch_config(unimem::dims(1u << 31, 1u << 31), unimem::dims(2, 2)).threads(),
            max);
  EXPECT_EQ(unimem::launch_config(unimem::dims(1u << 31, 1u << 30), unimem::dims(3)).threads(),
            std::uint64_t{3} << 61);
  EXPECT_EQ(unimem::dims(0, 0xffffffffu, 0xffffffffu).volume(), 0u);
}

// ---- bug 6: an over-aligned pmr allocation leaked when its bookkeeping threw ----

TEST(Regression, OverAlignedPmrAllocationLeavesNothingWhenBookkeepingThrows) {
  counting_resource r;
  {
    fail_new_after guard(0);  // the first operator new inside allocate() fails
    EXPECT_THROW((void)r.allocate(1000, 4096), std::bad_alloc);
  }
  EXPECT_EQ(r.outstanding(), 0) << "the runtime allocation outlived the exception";
  void* p = r.allocate(1000, 4096);  // and the resource still works
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  EXPECT_EQ(r.outstanding(), 1);
  r.deallocate(p, 1000, 4096);
  EXPECT_EQ(r.outstanding(), 0);
}

TEST(RegressionGpu, OverAlignedDeviceAllocationIsFreedWhenBookkeepingThrows) {
  UNIMEM_REQUIRE_GPU();
  failing_bookkeeping_device_resource r;
  const std::size_t bytes = std::size_t{256} << 20;
  r.deallocate(r.allocate(bytes, 65536), bytes, 65536);  // warm the allocator up
  const std::size_t free_before = unimem::device(0).free_memory();
  r.armed = true;
  EXPECT_THROW((void)r.allocate(bytes, 65536), std::bad_alloc);
  regression_new_countdown = -1;
  r.armed = false;
  const std::size_t free_after = unimem::device(0).free_memory();
  // The runtime hands out memory in 2 MiB pages: anything less than that is not this leak
  // (which was 256 MiB + 64 KiB).
  EXPECT_LT(free_before - std::min(free_before, free_after), std::size_t{2} << 20)
      << "free memory " << free_before << " before, " << free_after << " after";
}

// ---- bug 1: out() discarded memory that an in()/inout() of the same launch reads ----

TEST(RegressionGpu, OutOverlappingAnotherArgumentKeepsItsContents) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = std::size_t{1} << 22;
  unimem::stream s;  // not the legacy default stream: where CUDA >= 12.8 discards out() ranges
  const auto cfg = unimem::grid_for(n).on(s);
  {
    unimem::managed_buffer<float> b(n, 3.0f);
    unimem::launch(regression_inplace_add, cfg, unimem::in(b), unimem::out(b), n, 1.0f);
    s.synchronize();
    EXPECT_EQ(count_not_equal(b, 4.0f), 0u) << "in(b) with out(b); b[1] = " << b[1];
  }
  {
    unimem::managed_buffer<float> b(n, 3.0f);
    unimem::launch(regression_out_then_in, cfg, unimem::out(b), unimem::inout(b), n, 1.0f);
    s.synchronize();
    EXPECT_EQ(count_not_equal(b, 4.0f), 0u) << "out(b) with inout(b); b[1] = " << b[1];
  }
  {  // the kernel reads through an untagged argument: the buffer itself, or a raw pointer
    unimem::managed_buffer<float> b(n, 3.0f);
    unimem::launch(regression_out_then_in, cfg, unimem::out(b), std::as_const(b).view(), n, 1.0f);
    s.synchronize();
    EXPECT_EQ(count_not_equal(b, 4.0f), 0u) << "out(b) with b; b[1] = " << b[1];
    const float* raw = b.data();
    unimem::launch(regression_out_then_in, cfg, unimem::out(b), raw, n, 1.0f);
    s.synchronize();
    EXPECT_EQ(count_not_equal(b, 5.0f), 0u) << "out(b) with b.data(); b[1] = " << b[1];
  }
  {  // partial overlap: out(second half) while in(middle half) is read
    unimem::managed_buffer<float> b(2 * n, 3.0f);
    const auto out_half = b.view().subview(n, n);
    const auto in_middle = std::as_const(b).view().subview(n / 2, n);
    unimem::launch(regression_out_then_in, cfg, unimem::out(out_half), unimem::in(in_middle), n,
                   1.0f);
    s.synchronize();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += b[i] != 3.0f;
    for (std::size_t i = n; i < n + n / 2; ++i) wrong += b[i] != 4.0f;
    // The second half of out_half read what the first half of it had just written, or 3: the
    // kernel races with itself there; it must never read a discarded page (0).
    for (std::size_t i = n + n / 2; i < 2 * n; ++i) wrong += b[i] != 4.0f && b[i] != 5.0f;
    EXPECT_EQ(wrong, 0u);
  }
  {  // disjoint ranges keep the fast path, and the result is right
    unimem::managed_buffer<float> a(n, 3.0f);
    unimem::managed_buffer<float> c(n, 42.0f);
    unimem::launch(regression_out_then_in, cfg, unimem::out(c), unimem::in(a), n, 1.0f);
    s.synchronize();
    EXPECT_EQ(count_not_equal(c, 4.0f), 0u);
  }
}

// ---- bug 2: a launch the runtime refused had already discarded its out() ranges ----

TEST(RegressionGpu, RefusedTaggedLaunchLosesNoData) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = std::size_t{1} << 22;
  unimem::stream s;
  unimem::managed_buffer<float> a(n, 1.0f);
  unimem::managed_buffer<float> b(n, 42.0f);
  const unimem::launch_config too_many_threads(unimem::dims(n / 4096), unimem::dims(4096), 0, s);
  EXPECT_THROW(unimem::launch(regression_out_then_in, too_many_threads, unimem::out(b),
                              unimem::in(a), n, 1.0f),
               unimem::error);
  const unimem::launch_config too_much_shared =
      unimem::grid_for(n).on(s).with_shared_bytes(std::size_t{1} << 30);
  EXPECT_THROW(unimem::launch(regression_out_then_in, too_much_shared, unimem::out(b),
                              unimem::in(a), n, 1.0f),
               unimem::error);
  const unimem::launch_config block_z_too_deep(unimem::dims(1), unimem::dims(1, 1, 128), 0, s);
  EXPECT_THROW(unimem::launch(regression_out_then_in, block_z_too_deep, unimem::out(b),
                              unimem::in(a), n, 1.0f),
               unimem::error);
  s.synchronize();
  unimem::ready_for_host(b, s);
  EXPECT_EQ(count_not_equal(b, 42.0f), 0u) << "b[0] = " << b[0];
  // The refusals left no error behind: a valid launch works and writes every element.
  unimem::launch(regression_out_then_in, unimem::grid_for(n).on(s), unimem::out(b), unimem::in(a),
                 n, 1.0f);
  s.synchronize();
  EXPECT_EQ(count_not_equal(b, 2.0f), 0u);
}

// ---- query_ready cleared an error that the caller's own runtime call left pending ----

TEST(RegressionGpu, ReadinessQueryLeavesTheCallersPendingErrorAlone) {
  UNIMEM_REQUIRE_GPU();
  unimem::pinned_buffer<int> flag(1);
  flag[0] = 0;
  unimem::stream s;
  unimem::launch(regression_wait_for_flag, unimem::launch_config(1, 1, 0, s), flag.data(),
                 8 * quarter_second_of_cycles);
  // The caller's own failing runtime call (a device that does not exist) leaves its error.
  ASSERT_NE(unimem::detail::backend::set_device(1 << 20).code, unimem::detail::backend::success);
  const bool ready = s.ready();
  const auto pending = unimem::detail::backend::take_last_error();
  *static_cast<volatile int*>(flag.data()) = 1;
  s.synchronize();
  EXPECT_FALSE(ready);
  EXPECT_EQ(pending, unimem::detail::backend::error_invalid_device)
      << "the caller's pending error was cleared by stream::ready(): "
      << unimem::detail::backend::error_name(pending);
}

// ---- bug 3: ready_for_host() ignored work on other GPUs ----

TEST(RegressionMultiGpu, ReadyForHostWaitsForWritesOnAnotherGpu) {
  UNIMEM_REGRESSION_REQUIRE_TWO_GPUS();
  const std::size_t n = std::size_t{1} << 20;
  unimem::managed_buffer<int> m(n, 0);
  {
    unimem::device_guard on1(1);  // GPU 1's default stream: busy, then writes 99
    unimem::launch(regression_spin, unimem::launch_config(1, 1), quarter_second_of_cycles);
    unimem::launch(regression_fill, unimem::grid_for(n), m, n, 99);
  }
  ASSERT_EQ(unimem::device::current().device_id(), 0);
  EXPECT_EQ(unimem::ready_for_host(m), unimem::hint_status::applied);
  EXPECT_EQ(count_not_equal(m, 99), 0u) << "the CPU read while GPU 1 was still writing: m[0] = "
                                        << m[0];
  unimem::device(1).synchronize();
}

TEST(RegressionMultiGpu, ReadyForHostOnAGpuThatCannotMigrateWaitsForEveryGpu) {
  UNIMEM_REGRESSION_REQUIRE_TWO_GPUS();
  const std::size_t n = std::size_t{1} << 20;
  unimem::managed_buffer<int> m(n, 0);
  unimem::stream s0;  // a stream of GPU 0, the current device
  {
    unimem::device_guard on1(1);
    unimem::launch(regression_spin, unimem::launch_config(1, 1), quarter_second_of_cycles);
    unimem::launch(regression_fill, unimem::grid_for(n), m, n, 99);
  }
  {
    unimem_test::pretend_no_migration no(0);
    EXPECT_EQ(unimem::ready_for_host(m, s0), unimem::hint_status::unsupported);
  }
  EXPECT_EQ(count_not_equal(m, 99), 0u) << "the CPU read while GPU 1 was still writing: m[0] = "
                                        << m[0];
  unimem::device(1).synchronize();
}

// ---- bug 5: access tags prefetched to the current device, not the launch stream's ----

TEST(RegressionMultiGpu, TagsPlaceDataOnTheDeviceOfTheLaunchStream) {
  UNIMEM_REGRESSION_REQUIRE_TWO_GPUS();
  using unimem::location;
  const std::size_t n = std::size_t{1} << 22;
  unimem::managed_buffer<int> b(n, 0);
  unimem::stream s1(unimem::device(1));
  ASSERT_EQ(unimem::device::current().device_id(), 0);
  unimem::launch(regression_add, unimem::grid_for(n).on(s1), unimem::inout(b), n, 7);
  s1.synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(1)) << "the pages went to GPU 0";
  EXPECT_EQ(unimem::device::current().device_id(), 0);
  // A native handle: the runtime is asked for the stream's device.
  unimem::prefetch(b, location::device(0));
  unimem::synchronize();
  unimem::launch(regression_add, unimem::grid_for(n).on(unimem::stream_ref(s1.get())),
                 unimem::inout(b), n, 1);
  s1.synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(1)) << "native handle";
  // A stream of GPU 1 with on_device(0) is refused, with and without tags.
  EXPECT_THROW(unimem::launch(regression_add, unimem::grid_for(n).on(s1).on_device(0),
                              unimem::inout(b), n, 100),
               unimem::error);
  EXPECT_THROW(unimem::launch(regression_add, unimem::grid_for(n).on(s1).on_device(0), b, n, 100),
               unimem::error);
  EXPECT_EQ(unimem::device::current().device_id(), 0);
  unimem::ready_for_host(b);
  EXPECT_EQ(count_not_equal(b, 8), 0u);
}
