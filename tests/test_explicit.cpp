// The explicit path: device and pinned buffers, copies, fill, streams and events, allocators
// and memory resources. Host tests run everywhere; GPU tests skip without a GPU.
#include "test_support.hpp"

#include <unimem/allocator.hpp>        // not in the umbrella header
#include <unimem/memory_resource.hpp>  // not in the umbrella header

#include <array>
#include <cstdint>
#include <memory_resource>
#include <numeric>
#include <string>
#include <stdexcept>
#include <type_traits>
#include <vector>

__global__ void explicit_scale(float* data, std::size_t n, float factor) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] *= factor;
}
__global__ void explicit_spin(std::uint64_t cycles) {
  const long long start = clock64();
  while (static_cast<std::uint64_t>(clock64() - start) < cycles) {
  }
}

static_assert(!std::is_copy_constructible<unimem::device_buffer<int>>::value, "");
static_assert(std::is_nothrow_move_constructible<unimem::device_buffer<int>>::value, "");
static_assert(!std::is_copy_constructible<unimem::pinned_buffer<int>>::value, "");
static_assert(std::is_nothrow_move_assignable<unimem::pinned_buffer<int>>::value, "");
static_assert(!std::is_copy_constructible<unimem::stream>::value, "");
static_assert(std::is_nothrow_move_constructible<unimem::stream>::value, "");
static_assert(!std::is_copy_constructible<unimem::event>::value, "");
static_assert(std::is_nothrow_move_constructible<unimem::event>::value, "");

namespace {

// The five kinds of range copy() accepts, filled with `first, first + 1, ...`, read back as a
// host vector.
enum class kind { managed, device, pinned, vector, view_of_managed };
const std::array<kind, 5> all_kinds{kind::managed, kind::device, kind::pinned, kind::vector,
                                    kind::view_of_managed};
const char* name(kind k) {
  switch (k) {
    case kind::managed: return "managed_buffer";
    case kind::device: return "device_buffer";
    case kind::pinned: return "pinned_buffer";
    case kind::vector: return "std::vector";
    case kind::view_of_managed: return "view";
  }
  return "?";
}

struct any_range {
  kind k;
  unimem::managed_buffer<float> managed;
  unimem::device_buffer<float> device;
  unimem::pinned_buffer<float> pinned;
  std::vector<float> vec;

  any_range(kind k_, std::size_t n, float first) : k(k_) {
    std::vector<float> values(n);
    std::iota(values.begin(), values.end(), first);
    switch (k) {
      case kind::managed:
      case kind::view_of_managed: managed = unimem::managed_buffer<float>(values.begin(), values.end()); break;
      case kind::device: device = unimem::device_buffer<float>(values.begin(), values.end()); break;
      case kind::pinned: pinned = unimem::pinned_buffer<float>(values.begin(), values.end()); break;
      case kind::vector: vec = values; break;
    }
  }
  std::vector<float> host() const {
    switch (k) {
      case kind::managed:
      case kind::view_of_managed: return std::vector<float>(managed.begin(), managed.end());
      case kind::device: return device.to<std::vector<float>>();
      case kind::pinned: return std::vector<float>(pinned.begin(), pinned.end());
      case kind::vector: return vec;
    }
    return {};
  }
  // Calls f with the range as its own type.
  template <class F>
  void visit(F&& f) {
    switch (k) {
      case kind::managed: f(managed); break;
      case kind::device: f(device); break;
      case kind::pinned: f(pinned); break;
      case kind::vector: f(vec); break;
      case kind::view_of_managed: f(managed.view()); break;
    }
  }
};

}  // namespace

// ---- host tests ----

TEST(Copy, SizeMismatchThrowsBeforeAnyRuntimeCall) {
  std::vector<int> three(3), four(4);
  EXPECT_THROW(unimem::copy(three, four), unimem::argument_error);
  EXPECT_THROW(unimem::copy(unimem::view<int>(four.data(), 4), three), unimem::argument_error);
  EXPECT_THROW(unimem::copy_async(three, four, unimem::default_stream), unimem::argument_error);
  unimem::device_buffer<int> empty_device;
  EXPECT_THROW(unimem::copy(empty_device, three), unimem::argument_error);
  try {
    unimem::copy(three, four);
  } catch (const unimem::argument_error& e) {
    EXPECT_NE(std::string(e.what()).find("3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4"), std::string::npos) << e.what();
  }
}

TEST(Copy, EmptyCopiesAreNoOps) {
  std::vector<int> a, b;
  unimem::device_buffer<int> d;
  unimem::pinned_buffer<int> p;
  EXPECT_NO_THROW(unimem::copy(a, b));
  EXPECT_NO_THROW(unimem::copy(d, a));
  EXPECT_NO_THROW(unimem::copy(p, d));
  EXPECT_NO_THROW(unimem::fill(d, 5));
}

TEST(Copy, DirectionsFromTypes) {
  using namespace unimem::detail;
  using k = backend::copy_kind;
  using r = range_residence;
  static_assert(direction(r::device, r::host) == k::host_to_device, "");
  static_assert(direction(r::host, r::device) == k::device_to_host, "");
  static_assert(direction(r::device, r::device) == k::device_to_device, "");
  static_assert(direction(r::host, r::host) == k::host_to_host, "");
  static_assert(direction(r::migrating, r::device) == k::infer, "");
  static_assert(direction(r::device, r::unknown) == k::infer, "");
  // Every range type's residence comes from its memory kind (memory_kind.hpp).
  static_assert(residence_of<std::vector<int>>() == r::host, "");
  static_assert(residence_of<unimem::managed_vector<int>>() == r::migrating, "");
  static_assert(residence_of<unimem::managed_buffer<int>>() == r::migrating, "");
  static_assert(residence_of<unimem::device_buffer<int>>() == r::device, "");
  static_assert(residence_of<unimem::pinned_buffer<int>>() == r::host, "");
  static_assert(residence_of<unimem::view<int>>() == r::unknown, "");
  SUCCEED();
}

TEST(ExplicitBuffers, EmptyAndMovedFromAreSafe) {
  unimem::device_buffer<double> d;
  unimem::pinned_buffer<double> p;
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.data(), nullptr);
  EXPECT_TRUE(d.to<std::vector<double>>().empty());
  unimem::device_buffer<double> d2(std::move(d));
  unimem::pinned_buffer<double> p2(std::move(p));
  EXPECT_TRUE(d2.empty());
  EXPECT_TRUE(p2.empty());
  EXPECT_THROW((void)unimem::device_buffer<float>(std::size_t(-1)), unimem::argument_error);
  EXPECT_THROW((void)unimem::pinned_buffer<float>(std::size_t(-1)), unimem::argument_error);
  unimem::managed_allocator<int> alloc;
  // One overflow rule everywhere: more than max_elements<T>() is unimem::argument_error, before any
  // runtime call (so it holds without a GPU), for buffers, the allocator and the pmr resources.
  EXPECT_THROW((void)alloc.allocate(std::size_t(-1)), unimem::argument_error);
  EXPECT_THROW((void)alloc.allocate(unimem::max_elements<int>() + 1), unimem::argument_error);
  EXPECT_EQ(alloc.max_size(), unimem::managed_buffer<int>::max_size());
  EXPECT_EQ(unimem::device_buffer<int>::max_size(), unimem::pinned_buffer<int>::max_size());
  unimem::managed_memory_resource managed_resource;
  unimem::pinned_memory_resource pinned_resource;
  // Sizes the compiler cannot see (it warns about constant allocation sizes over PTRDIFF_MAX).
  volatile std::size_t beyond_ptrdiff = std::size_t(-1) / 2 + 1;
  volatile std::size_t largest = std::size_t(-1);
  volatile std::size_t just_below = std::size_t(-1) / 2 - 8;
  EXPECT_THROW((void)managed_resource.allocate(beyond_ptrdiff), unimem::argument_error);
  EXPECT_THROW((void)pinned_resource.allocate(largest), unimem::argument_error);
  EXPECT_THROW((void)managed_resource.allocate(just_below, 512), unimem::argument_error);
  EXPECT_EQ(alloc.allocate(0), nullptr);
  EXPECT_TRUE(alloc == unimem::managed_allocator<double>());
}

// ---- GPU tests ----

TEST(ExplicitGpu, CopiesInEveryDirection) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 100003;  // odd, several pages
  for (kind dk : all_kinds) {
    for (kind sk : all_kinds) {
      SCOPED_TRACE(std::string(name(sk)) + " -> " + name(dk));
      any_range src(sk, n, 1.0f), dst(dk, n, -5.0f);
      for (int async = 0; async < 2; ++async) {
        unimem::stream s;
        src.visit([&](auto&& from) {
          dst.visit([&](auto&& to) {
            if (async) {
              unimem::copy_async(to, from, s);
              s.synchronize();
            } else {
              unimem::copy(to, from);
            }
          });
        });
        const std::vector<float> got = dst.host();
        ASSERT_EQ(got.size(), n);
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) wrong += got[i] != 1.0f + static_cast<float>(i);
        ASSERT_EQ(wrong, 0u) << (async ? "copy_async" : "copy");
      }
    }
  }
}

TEST(ExplicitGpu, AsyncCopiesAreOrderedOnAStream) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 1 << 22;
  unimem::pinned_buffer<float> in(n), out(n, unimem::uninitialized);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 1000);
  unimem::device_buffer<float> d(n, unimem::uninitialized);
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  for (int round = 0; round < 3; ++round) {
    unimem::launch(explicit_spin, unimem::launch_config(1, 1).on(s), std::uint64_t{20'000'000});
    unimem::copy_async(d, in, s);  // behind the spin
    unimem::launch(explicit_scale, unimem::grid_for(n).on(s), d, n, 2.0f);
    unimem::copy_async(out, d, s);
    EXPECT_FALSE(s.ready());
    s.synchronize();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      wrong += out[i] != 2.0f * static_cast<float>(i % 1000 + static_cast<std::size_t>(round));
    }
    ASSERT_EQ(wrong, 0u) << "round " << round;
    for (std::size_t i = 0; i < n; ++i) in[i] += 1.0f;
  }
}

TEST(ExplicitGpu, FillOnTheDevice) {
  UNIMEM_REQUIRE_GPU();
  struct pair_t {
    int a;
    float b;
  };
  const std::size_t n = 1000001;
  unimem::device_buffer<pair_t> d(n, unimem::uninitialized);
  unimem::fill(d, pair_t{7, 2.5f});  // not one repeated byte: the doubling path
  const auto host = d.to<std::vector<pair_t>>();
  std::size_t wrong = 0;
  for (const pair_t& p : host) wrong += p.a != 7 || p.b != 2.5f;
  EXPECT_EQ(wrong, 0u);

  unimem::managed_buffer<std::uint8_t> m(12345, unimem::uninitialized);
  unimem::fill(m, std::uint8_t{0xab});  // the memset path
  for (auto v : m) ASSERT_EQ(v, 0xab);
  unimem::device_buffer<int> values(77, 9);
  for (int v : values.to<std::vector<int>>()) ASSERT_EQ(v, 9);
  unimem::device_buffer<int> zeros(1 << 20);
  for (int v : zeros.to<std::vector<int>>()) ASSERT_EQ(v, 0);
  unimem::device_buffer<int> listed{1, 2, 3};
  EXPECT_EQ(listed.to<std::vector<int>>(), (std::vector<int>{1, 2, 3}));
  // Eight bytes not all one: the constructor writes the first element a byte at a time, fill()
  // a 32-bit word at a time; both double it by copies, to an odd count.
  unimem::device_buffer<double> halves(1000003, 1.5);
  for (double v : halves.to<std::vector<double>>()) ASSERT_EQ(v, 1.5);
  unimem::fill(halves, -2.25);
  for (double v : halves.to<std::vector<double>>()) ASSERT_EQ(v, -2.25);
  unimem::fill(halves.view().subview(1, 5), 4.0);  // from an element other than the first
  const auto some = halves.to<std::vector<double>>();
  EXPECT_TRUE(some[0] == -2.25 && some[1] == 4.0 && some[5] == 4.0 && some[6] == -2.25);
  struct three {
    unsigned char c[3];
  };
  unimem::device_buffer<three> odd(4097, three{{1, 2, 3}});  // no word fits: bytes
  for (const three& t : odd.to<std::vector<three>>()) {
    ASSERT_TRUE(t.c[0] == 1 && t.c[1] == 2 && t.c[2] == 3);
  }
  unimem::fill(odd.view().subview(1), three{{4, 5, 6}});  // misaligned for a word
  const auto filled = odd.to<std::vector<three>>();
  EXPECT_TRUE(filled[0].c[0] == 1 && filled[1].c[0] == 4 && filled[4096].c[2] == 6);
}

TEST(ExplicitGpu, EventsMeasureElapsedTime) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;
  unimem::event start, stop;
  start.record(s);
  unimem::launch(explicit_spin, unimem::launch_config(1, 1).on(s), std::uint64_t{50'000'000});
  stop.record(s);
  const float ms = unimem::elapsed_ms(start, stop);
  EXPECT_GT(ms, 0.0f);
  EXPECT_TRUE(stop.ready());

  // Cross-stream ordering: s2 waits for an event of s1.
  unimem::stream s1, s2;
  unimem::event done(unimem::event::timing_mode::disable_timing);
  unimem::launch(explicit_spin, unimem::launch_config(1, 1).on(s1), std::uint64_t{100'000'000});
  done.record(s1);
  s2.wait(done);
  unimem::event after;
  after.record(s2);
  EXPECT_FALSE(after.ready());
  after.synchronize();
  EXPECT_TRUE(done.ready());
  EXPECT_THROW((void)unimem::elapsed_ms(done, after), unimem::error);  // no timing on `done`
  unimem::event moved(std::move(after));
  EXPECT_FALSE(static_cast<bool>(after));  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(moved.ready());
}

TEST(ExplicitGpu, ManagedVectorInAKernel) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_vector<float> v(5000, 1.5f);
  v.push_back(10.0f);  // a std::vector in every way
  unimem::launch(explicit_scale, unimem::grid_for(v.size()), v, v.size(), 4.0f);
  unimem::synchronize();
  EXPECT_EQ(v[0], 6.0f);
  EXPECT_EQ(v.back(), 40.0f);
  std::vector<float, unimem::managed_allocator<float>> copy_of(v.begin(), v.end());
  EXPECT_EQ(copy_of[4999], 6.0f);
}

TEST(ExplicitGpu, MemoryResourcesHonourAlignment) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_memory_resource managed;
  unimem::pinned_memory_resource pinned;
  unimem::device_memory_resource device;
  std::pmr::memory_resource* resources[] = {&managed, &pinned, &device};
  for (std::pmr::memory_resource* r : resources) {
    for (std::size_t alignment : {1u, 8u, 64u, 256u, 4096u, 65536u}) {
      for (std::size_t bytes : {0u, 1u, 1000u, 1u << 20}) {
        void* p = r->allocate(bytes, alignment);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u)
            << bytes << " bytes aligned to " << alignment;
        r->deallocate(p, bytes, alignment);
      }
    }
  }
  EXPECT_TRUE(managed.is_equal(managed));
  EXPECT_FALSE(managed.is_equal(pinned));
  unimem::device_memory_resource device_again(unimem::device(0));
  EXPECT_TRUE(device.is_equal(device_again));
  const std::size_t not_a_power_of_two = std::stoul("3");
  EXPECT_THROW((void)managed.allocate(64, not_a_power_of_two), std::bad_alloc);

  std::pmr::vector<int> v(&managed);
  v.resize(1000);
  std::iota(v.begin(), v.end(), 0);
  EXPECT_EQ(v[999], 999);
}

TEST(ExplicitGpu, MovedFromObjectsAreEmptyAndSafe) {
  UNIMEM_REQUIRE_GPU();
  unimem::device_buffer<int> d(100, 1);
  int* p = d.data();
  unimem::device_buffer<int> d2(std::move(d));
  EXPECT_TRUE(d.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(d.data(), nullptr);
  EXPECT_EQ(d2.data(), p);
  d = std::move(d2);
  EXPECT_EQ(d.data(), p);
  unimem::pinned_buffer<int> pb(10, 3);
  unimem::pinned_buffer<int> pb2;
  pb2 = std::move(pb);
  EXPECT_TRUE(pb.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(pb2[9], 3);
  unimem::stream s;
  unimem::stream s2(std::move(s));
  EXPECT_FALSE(static_cast<bool>(s));  // NOLINT(bugprone-use-after-move)
  s2.synchronize();
}
