// managed_buffer<T>: size checks, ownership, constructors (host tests run everywhere;
// tests that allocate skip without a GPU).
#include "test_support.hpp"

#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <list>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

static_assert(!std::is_copy_constructible<unimem::managed_buffer<float>>::value, "");
static_assert(!std::is_copy_assignable<unimem::managed_buffer<float>>::value, "");
static_assert(std::is_nothrow_move_constructible<unimem::managed_buffer<float>>::value, "");
static_assert(std::is_nothrow_move_assignable<unimem::managed_buffer<float>>::value, "");
static_assert(std::is_nothrow_destructible<unimem::managed_buffer<float>>::value, "");

namespace {

// A host-memory policy that counts, to test the ownership core without a GPU.
struct counting_memory {
  static inline int live = 0;
  static inline int allocations = 0;
  static void* allocate(std::size_t bytes, const char*, unimem::call_site) {
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    ++live;
    ++allocations;
    return p;
  }
  static void deallocate(void* p, std::size_t) noexcept {
    std::free(p);
    --live;
  }
};
using counted = unimem::detail::owned_array<int, counting_memory>;

struct pod {
  int a;
  double b;
};

}  // namespace

TEST(ManagedBuffer, SizeOverflowThrowsLengthErrorBeforeAnyRuntimeCall) {
  // unimem::argument_error, not unimem::error: the size check comes before the runtime call, which
  // would fail differently (no GPU, out of memory) or could hang.
  using B = unimem::managed_buffer<float>;
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW((void)B(max), unimem::argument_error);
  EXPECT_THROW((void)B(max / sizeof(float) + 1), unimem::argument_error);
  EXPECT_THROW((void)B(B::max_size() + 1), unimem::argument_error);
  EXPECT_THROW((void)B(max, unimem::uninitialized), unimem::argument_error);
  EXPECT_THROW((void)B(max / 2, 1.0f), unimem::argument_error);
  EXPECT_THROW((void)unimem::managed_buffer<pod>(max / sizeof(pod) + 1), unimem::argument_error);
  try {
    B b(max);
  } catch (const unimem::argument_error& e) {
    EXPECT_NE(std::string(e.what()).find("managed_buffer"), std::string::npos) << e.what();
  }
}

TEST(ManagedBuffer, ZeroSizeAllocatesNothing) {
  unimem::managed_buffer<float> a;
  unimem::managed_buffer<float> b(0);
  unimem::managed_buffer<float> c(0, unimem::uninitialized);
  unimem::managed_buffer<float> d({});
  std::vector<float> none;
  unimem::managed_buffer<float> e(none.begin(), none.end());
  for (auto* buf : {&a, &b, &c, &d, &e}) {
    EXPECT_TRUE(buf->empty());
    EXPECT_EQ(buf->size(), 0u);
    EXPECT_EQ(buf->size_bytes(), 0u);
    EXPECT_EQ(buf->data(), nullptr);
    EXPECT_EQ(buf->begin(), buf->end());
    EXPECT_TRUE(buf->view().empty());
    EXPECT_THROW(buf->at(0), unimem::argument_error);
  }
}

TEST(ManagedBuffer, MovedFromEmptyBuffersStayValid) {
  unimem::managed_buffer<int> a;
  unimem::managed_buffer<int> b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  EXPECT_TRUE(b.empty());
  a = std::move(b);
  EXPECT_TRUE(a.empty());
}

TEST(OwnedArray, MoveTransfersOwnershipAndFreesExactlyOnce) {
  counting_memory::live = 0;
  {
    counted a(100, "counted", unimem::call_site::current());
    EXPECT_EQ(counting_memory::live, 1);
    int* p = a.data();
    counted b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(a.size(), 0u);
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.size(), 100u);
    counted c(10, "counted", unimem::call_site::current());
    EXPECT_EQ(counting_memory::live, 2);
    c = std::move(b);  // c's old array is freed
    EXPECT_EQ(counting_memory::live, 1);
    EXPECT_EQ(c.data(), p);
    auto& self = c;
    c = std::move(self);  // self-move keeps the array
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(counting_memory::live, 1);
  }
  EXPECT_EQ(counting_memory::live, 0);
}

TEST(OwnedArray, ZeroSizeAndReleaseAndOverflow) {
  counting_memory::live = 0;
  counting_memory::allocations = 0;
  { counted z(0, "counted", unimem::call_site::current()); }
  EXPECT_EQ(counting_memory::allocations, 0);  // zero size makes no allocation call
  EXPECT_THROW(counted(unimem::max_elements<int>() + 1, "counted", unimem::call_site::current()), unimem::argument_error);
  EXPECT_EQ(counting_memory::allocations, 0);  // nor does an overflowing size
  int* raw = nullptr;
  {
    counted a(5, "counted", unimem::call_site::current());
    raw = a.release();
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.size(), 0u);
  }
  EXPECT_EQ(counting_memory::live, 1);  // released, not freed
  counting_memory::deallocate(raw, 5 * sizeof(int));
  EXPECT_EQ(counting_memory::live, 0);
}

// ---- tests that allocate managed memory ----

TEST(ManagedBufferGpu, Constructors) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<int> zeros(1000);
  EXPECT_EQ(zeros.size(), 1000u);
  EXPECT_EQ(zeros.size_bytes(), 4000u);
  for (int v : zeros) ASSERT_EQ(v, 0);

  unimem::managed_buffer<int> sevens(333, 7);
  for (int v : sevens) ASSERT_EQ(v, 7);

  unimem::managed_buffer<pod> list{{1, 1.5}, {2, 2.5}};
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].a, 2);
  EXPECT_EQ(list.back().b, 2.5);

  const std::list<short> l{5, 6, 7};
  unimem::managed_buffer<short> from_list(l.begin(), l.end());
  EXPECT_EQ(from_list.size(), 3u);
  EXPECT_EQ(from_list.front(), 5);

  std::istringstream in("10 20 30 40");
  unimem::managed_buffer<long> from_stream{std::istream_iterator<long>(in),
                                           std::istream_iterator<long>()};
  ASSERT_EQ(from_stream.size(), 4u);
  EXPECT_EQ(from_stream[3], 40);

  unimem::managed_buffer<double> raw(1 << 20, unimem::uninitialized);
  EXPECT_EQ(raw.size(), 1u << 20);
  EXPECT_NE(raw.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(raw.data()) % 256, 0u);
  EXPECT_EQ(zeros.at(999), 0);
  EXPECT_THROW(zeros.at(1000), unimem::argument_error);
}

TEST(ManagedBufferGpu, MoveKeepsTheAllocation) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<int> a(64, 3);
  int* p = a.data();
  unimem::managed_buffer<int> b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b[63], 3);
  unimem::managed_buffer<int> c(8, 1);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 64u);
  swap(a, c);
  EXPECT_EQ(a.data(), p);
  EXPECT_TRUE(c.empty());
}

// ---- where managed_buffer(n) value-initialises (docs/pitfalls.md, section 14) ----

namespace {

__global__ void managed_buffer_test_spin(std::uint64_t cycles) {
  const long long start = clock64();
  while (static_cast<std::uint64_t>(clock64() - start) < cycles) {
  }
}

struct seven {
  int v = 7;  // not trivially default constructible: value-initialised by the CPU
};

bool all_zero(const unimem::managed_buffer<float>& b) {
  std::size_t nonzero = 0;
  for (float v : b) nonzero += v != 0.0f;
  return nonzero == 0;
}

}  // namespace

static_assert(unimem::gpu_value_init_min_bytes % 4096 == 0,
              "the GPU value-initialisation threshold is a whole number of pages");

TEST(ManagedBufferGpu, LargeTrivialArraysAreZeroedOnTheGpuSmallOnesOnTheCpu) {
  UNIMEM_REQUIRE_GPU();
  const int d = unimem::device::current().device_id();
  const bool migrates = unimem::migrates_on_demand(unimem::location::device(d));
  const std::size_t at_threshold = unimem::gpu_value_init_min_bytes / sizeof(float);

  unimem::managed_buffer<float> big(at_threshold);
  EXPECT_TRUE(all_zero(big));
  if (migrates) {
    // Placed by the constructor: prefetched to the current device and zeroed there.
    EXPECT_TRUE(unimem::last_prefetch_location(big) == unimem::location::device(d));
  } else {
    EXPECT_FALSE(unimem::last_prefetch_location(big).has_value());
  }

  unimem::managed_buffer<float> small(at_threshold - 1);  // one element short: the CPU
  EXPECT_TRUE(all_zero(small));
  EXPECT_FALSE(unimem::last_prefetch_location(small).has_value());

  unimem::managed_buffer<seven> sevens(unimem::gpu_value_init_min_bytes / sizeof(seven) + 1);
  std::size_t wrong = 0;
  for (const seven& s : sevens) wrong += s.v != 7;
  EXPECT_EQ(wrong, 0u);
  EXPECT_FALSE(unimem::last_prefetch_location(sevens).has_value());

  // The CPU uses a GPU-zeroed array at once, and a kernel after it sees its writes.
  big[0] = 1.0f;
  big[at_threshold - 1] = 2.0f;
  EXPECT_EQ(big[0] + big[at_threshold - 1], 3.0f);
}

TEST(ManagedBufferGpu, ValueInitialisationStaysOnTheCpuWhereTheDeviceCannotMigrate) {
  UNIMEM_REQUIRE_GPU();
  const int d = unimem::device::current().device_id();
  const unimem_test::pretend_no_migration no(d);
  unimem::managed_buffer<float> big(4 * unimem::gpu_value_init_min_bytes / sizeof(float));
  EXPECT_TRUE(all_zero(big));
  EXPECT_FALSE(unimem::last_prefetch_location(big).has_value());
}

TEST(ManagedBufferGpu, GpuValueInitialisationDoesNotWaitForOtherStreams) {
  UNIMEM_REQUIRE_GPU();
  const int d = unimem::device::current().device_id();
  if (!unimem::migrates_on_demand(unimem::location::device(d))) {
    GTEST_SKIP() << "device " << d << " does not migrate on demand: managed_buffer(n) zeroes "
                 << "on the CPU there (see LargeTrivialArraysAreZeroedOnTheGpuSmallOnesOnTheCpu)";
  }
  unimem::stream busy(unimem::stream::blocking_mode::non_blocking);
  // Busy for about half a second: a constructor that waited for it would find it idle after.
  unimem::launch(managed_buffer_test_spin, unimem::launch_config(1, 1).on(busy),
                 std::uint64_t{1'000'000'000});
  unimem::managed_buffer<float> b(2 * unimem::gpu_value_init_min_bytes / sizeof(float));
  EXPECT_FALSE(busy.ready()) << "managed_buffer(n) waited for another stream's kernel";
  EXPECT_TRUE(unimem::last_prefetch_location(b) == unimem::location::device(d));
  busy.synchronize();
  EXPECT_TRUE(all_zero(b));
}
