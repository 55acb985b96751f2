// Placement: locations, prefetch, advice and queries, first touch, attach, access-tagged
// launches, the unsupported policy. Host tests run everywhere; GPU tests skip without a GPU.
#include "test_support.hpp"

#include <unimem/allocator.hpp>
#include <unimem/placement/detail/uvm_counters.hpp>
#include <unimem/managed_pool.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <stdexcept>
#include <string>
#include <type_traits>

__global__ void migration_spin_then_mark(std::uint64_t cycles, int* marker, int value) {
  const long long start = clock64();
  while (static_cast<std::uint64_t>(clock64() - start) < cycles) {
  }
  marker[0] = value;
}

__global__ void migration_nothing(const int*, int*, int*, std::size_t) {}

__global__ void migration_find(const int* p, std::size_t n, int value, int* found) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n && p[i] == value) *found = 1;
}

__global__ void migration_combine(const int* a, int* b, int* c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) {
    c[i] = a[i] + b[i];
    b[i] += 1;
  }
}

__global__ void migration_fill(unimem::view<int> v, int base) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < v.size()) v[i] = base + static_cast<int>(i);
}

namespace {

using unimem::location;

// Restores the process-wide policy and the capability cache after a test that changes them.
struct policy_restorer {
  ~policy_restorer() {
    unimem::set_unsupported_policy(unimem::unsupported_policy::ignore);
  }
};

constexpr std::size_t mib = std::size_t{1} << 20;

std::size_t free_memory(int device) { return unimem::device(device).free_memory(); }

}  // namespace

// ---- host tests ----

TEST(Location, HostAndDevice) {
  constexpr location h = location::host();
  constexpr location d = location::device(3);
  static_assert(h.is_host() && !h.is_device(), "");
  static_assert(d.is_device() && d.device_id() == 3, "");
  static_assert(h != d && d == location::device(3) && d != location::device(2), "");
  EXPECT_EQ(to_string(h), "host");
  EXPECT_EQ(to_string(d), "device 3");
  static_assert(h.device_id() == unimem::no_device, "the host has no device id");
  EXPECT_EQ(unimem::to_string(unimem::hint_status::unsupported), "unsupported");
  EXPECT_EQ(unimem::to_string(unimem::hint_status::not_needed), "not_needed");
  EXPECT_EQ(unimem::to_string(unimem::hint_status::applied) + "!", "applied!");
  static_assert(std::is_same<decltype(unimem::to_string(unimem::hint_status::empty)),
                             std::string>::value,
                "to_string returns a std::string for every type, as std::to_string does");
}

// ---- one entry point: every kind of range takes the same tags and placement calls ----

namespace {
template <class R, class = void>
struct takes_placement_calls : std::false_type {};
template <class R>
struct takes_placement_calls<
    R, std::void_t<decltype(unimem::prefetch(std::declval<const R&>(), location::host(),
                                             unimem::stream_ref())),
                   decltype(unimem::advise(std::declval<const R&>(), unimem::advice::read_mostly)),
                   decltype(unimem::advise(std::declval<const R&>(), unimem::advice::accessed_by,
                                           location::host())),
                   decltype(unimem::unadvise(std::declval<const R&>(),
                                             unimem::advice::read_mostly)),
                   decltype(unimem::unadvise(std::declval<const R&>(),
                                             unimem::advice::accessed_by, location::host())),
                   decltype(unimem::is_read_mostly(std::declval<const R&>())),
                   decltype(unimem::preferred_location(std::declval<const R&>())),
                   decltype(unimem::last_prefetch_location(std::declval<const R&>())),
                   decltype(unimem::accessed_by(std::declval<const R&>())),
                   decltype(unimem::set_intent(std::declval<const R&>(), unimem::intent::map)),
                   decltype(unimem::set_intent(std::declval<const R&>(), unimem::intent::move,
                                               location::device(0))),
                   decltype(unimem::get_intent(std::declval<const R&>())),
                   decltype(unimem::ready_for_host(std::declval<const R&>())),
                   decltype(unimem::ready_for_host(std::declval<const R&>(), unimem::stream_ref())),
                   decltype(unimem::host_touched(std::declval<const R&>())),
                   decltype(unimem::attach(std::declval<const R&>(), unimem::stream_ref())),
                   decltype(unimem::in(std::declval<R&>())),
                   decltype(unimem::out(std::declval<R&>())),
                   decltype(unimem::inout(std::declval<R&>(), unimem::intent::map))>>
    : std::true_type {};

template <class R>
using in_tag_t = decltype(unimem::in(std::declval<R&>()));
}  // namespace

static_assert(takes_placement_calls<unimem::managed_buffer<int>>::value, "");
static_assert(takes_placement_calls<unimem::pool_buffer<int>>::value,
              "a pool_buffer takes every call a managed_buffer takes");
static_assert(takes_placement_calls<unimem::managed_vector<int>>::value, "");
static_assert(takes_placement_calls<unimem::view<int>>::value, "");
static_assert(!takes_placement_calls<std::vector<int>>::value, "host memory is no range");
static_assert(std::is_same<in_tag_t<unimem::pool_buffer<int>>,
                           in_tag_t<unimem::managed_buffer<int>>>::value,
              "the same tag for both buffers");

// Empty ranges of every kind answer every placement call before any runtime call: no GPU needed.
template <class R>
void expect_empty_range_calls(R& empty) {
  EXPECT_EQ(unimem::prefetch(empty, location::device(0)), unimem::hint_status::empty);
  EXPECT_EQ(unimem::prefetch(empty, location::device(12345)), unimem::hint_status::empty);
  EXPECT_EQ(unimem::advise(empty, unimem::advice::read_mostly), unimem::hint_status::empty);
  EXPECT_EQ(unimem::advise(empty, unimem::advice::preferred_location, location::device(0)),
            unimem::hint_status::empty);
  EXPECT_EQ(unimem::unadvise(empty, unimem::advice::read_mostly), unimem::hint_status::empty);
  EXPECT_EQ(unimem::unadvise(empty, unimem::advice::accessed_by, location::device(0)),
            unimem::hint_status::empty);
  EXPECT_FALSE(unimem::is_read_mostly(empty));
  EXPECT_FALSE(unimem::preferred_location(empty).has_value());
  EXPECT_FALSE(unimem::last_prefetch_location(empty).has_value());
  EXPECT_TRUE(unimem::accessed_by(empty).empty());
  EXPECT_EQ(unimem::set_intent(empty, unimem::intent::map, location::device(0)),
            unimem::hint_status::empty);
  EXPECT_EQ(unimem::get_intent(empty), unimem::intent::move);
  EXPECT_EQ(unimem::ready_for_host(empty), unimem::hint_status::empty);
  EXPECT_NO_THROW(unimem::attach(empty, unimem::default_stream));
  unimem::host_touched(empty);
  EXPECT_EQ(unimem::in(empty).range.data(), nullptr);
  EXPECT_EQ(unimem::inout(empty).record, unimem::detail::record_of(empty));
}

TEST(Placement, EmptyRangesAreNoOpsWithoutAnyRuntimeCall) {
  unimem::managed_buffer<float> buffer;
  unimem::pool_buffer<float> pooled;
  unimem::managed_vector<float> vector;
  unimem::view<float> view;
  expect_empty_range_calls(buffer);
  expect_empty_range_calls(pooled);
  expect_empty_range_calls(vector);
  expect_empty_range_calls(view);
  // The buffers that keep a placement record hand it to their tags and calls, both kinds alike.
  EXPECT_NE(unimem::detail::record_of(buffer), nullptr);
  EXPECT_NE(unimem::detail::record_of(pooled), nullptr);
  EXPECT_EQ(unimem::detail::record_of(vector), nullptr);
  EXPECT_EQ(unimem::detail::record_of(view), nullptr);
}

TEST(Placement, AdviceWithoutALocationIsOnlyReadMostly) {
  unimem::managed_buffer<float> empty;
  EXPECT_THROW(unimem::advise(empty, unimem::advice::preferred_location), unimem::argument_error);
  EXPECT_THROW(unimem::unadvise(empty, unimem::advice::accessed_by), unimem::argument_error);
}

TEST(Placement, PolicyIsProcessWide) {
  policy_restorer restore;
  EXPECT_EQ(unimem::get_unsupported_policy(), unimem::unsupported_policy::ignore);
  unimem::set_unsupported_policy(unimem::unsupported_policy::throw_error);
  EXPECT_EQ(unimem::get_unsupported_policy(), unimem::unsupported_policy::throw_error);
}

TEST(AccessTags, ReachTheKernelAsViewsOrPointers) {
  using namespace unimem::detail;
  using buf = unimem::managed_buffer<int>;
  using in_tag = decltype(unimem::in(std::declval<buf&>()));
  using out_tag = decltype(unimem::out(std::declval<buf&>()));
  using inout_tag = decltype(unimem::inout(std::declval<buf&>()));
  static_assert(std::is_same<kernel_value_t<in_tag>, unimem::view<const int>>::value, "");
  static_assert(std::is_same<kernel_value_t<out_tag>, unimem::view<int>>::value, "");
  static_assert(argument_traits<in_tag, const int*>::ok, "");
  static_assert(!argument_traits<in_tag, int*>::ok, "in() is read-only");
  static_assert(argument_traits<out_tag, int*>::ok, "");
  static_assert(argument_traits<inout_tag, unimem::view<int>>::ok, "");
  static_assert(argument_traits<inout_tag, unimem::view<const int>>::ok, "");
  static_assert(has_launch_hook<in_tag>::value && !has_launch_hook<buf&>::value, "");
  SUCCEED();
}

TEST(PlacementRecord, HoldsItsOwnStampUntilForgotten) {
  using unimem::detail::placement_record;
  using unimem::detail::placement_stamp;
  placement_record r;
  const auto moved0 = placement_stamp::make(0, false, 1234);
  const auto mapped0 = placement_stamp::make(0, true, 1234);
  const auto moved1 = placement_stamp::make(1, false, 1234);
  const auto later = placement_stamp::make(0, false, 1235);
  EXPECT_FALSE(r.holds(moved0)) << "a new record knows nothing";
  r.set(moved0);
  EXPECT_TRUE(r.holds(moved0));
  EXPECT_FALSE(r.holds(mapped0)) << "moved is not mapped";
  EXPECT_FALSE(r.holds(moved1)) << "device 0 is not device 1";
  EXPECT_FALSE(r.holds(later)) << "a page fault since: the record no longer holds";
  placement_record moved_to(std::move(r));
  EXPECT_TRUE(moved_to.holds(moved0));
  EXPECT_FALSE(r.holds(moved0)) << "a moved-from record knows nothing";  // NOLINT: use after move
  placement_record other;
  other.set(mapped0);
  moved_to.swap(other);
  EXPECT_TRUE(moved_to.holds(mapped0));
  EXPECT_TRUE(other.holds(moved0));
  other.forget();
  EXPECT_FALSE(other.holds(moved0));
  // Counts wrap within their 55 bits; devices past 254 are never recorded (always placed).
  EXPECT_EQ(placement_stamp::make(3, false, std::uint64_t{1} << 55),
            placement_stamp::make(3, false, 0));
  EXPECT_EQ(placement_stamp::make(255, false, 7), 0u);
  EXPECT_EQ(placement_stamp::make(-1, false, 7), 0u);
  EXPECT_EQ(placement_stamp::make(unimem::no_device, false, 7), 0u);
  EXPECT_EQ(placement_stamp::device_of(moved1), 1);
  EXPECT_EQ(placement_stamp::device_of(0), unimem::no_device) << "no stamp names no device";
  other.set(placement_stamp::make(255, false, 7));
  EXPECT_FALSE(other.holds(placement_stamp::make(255, false, 7)));
}

TEST(PlacementRecord, TagsOfBuffersCarryItViewsAndVectorsDoNot) {
  unimem::managed_buffer<int> b;
  const unimem::managed_buffer<int>& cb = b;
  unimem::detail::placement_record* r = unimem::detail::record_of(b);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(unimem::in(cb).record, r);
  EXPECT_EQ(unimem::out(b).record, r);
  EXPECT_EQ(unimem::inout(b, unimem::intent::map).record, r);
  EXPECT_EQ(unimem::in(b.view()).record, nullptr) << "a view does not know its buffer";
  unimem::managed_vector<int> v;
  EXPECT_EQ(unimem::in(v).record, nullptr);
  EXPECT_EQ(unimem::detail::record_of(v), nullptr);
  // The record belongs to the buffer object: a moved buffer takes what its source knew.
  r->set(unimem::detail::placement_stamp::make(0, false, 99));
  unimem::managed_buffer<int> moved(std::move(b));
  EXPECT_TRUE(unimem::detail::record_of(moved)->holds(
      unimem::detail::placement_stamp::make(0, false, 99)));
  EXPECT_FALSE(r->holds(unimem::detail::placement_stamp::make(0, false, 99)));
  unimem::host_touched(moved);  // forgets; no runtime call, so no GPU needed
  EXPECT_FALSE(unimem::detail::record_of(moved)->holds(
      unimem::detail::placement_stamp::make(0, false, 99)));
}

TEST(HostFaults, EveryFirstTouchOfAPageAndEveryDeliberateFaultCounts) {
#if defined(__linux__)
  // What placement records rest on (detail/placement_record.hpp): the process's page-fault
  // count moves when the CPU touches pages that are not mapped yet, and at fault_on_purpose().
  const std::size_t pages = 64, page = 4096;
  char* p = static_cast<char*>(
      mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  const std::uint64_t before = unimem::detail::host_faults();
  for (std::size_t i = 0; i < pages; ++i) p[i * page] = 1;
  const std::uint64_t touched = unimem::detail::host_faults();
  EXPECT_GE(touched - before, pages) << "first touches of fresh pages were not counted";
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t f0 = unimem::detail::host_faults();
    unimem::detail::fault_on_purpose();
    EXPECT_GE(unimem::detail::host_faults(), f0 + 1) << "the deliberate fault was not counted";
  }
  munmap(p, pages * page);
#else
  GTEST_SKIP() << "the fault count is read with getrusage (Linux)";
#endif
}

TEST(Intent, TagsCarryTheirIntent) {
  using unimem::detail::intent_choice;
  unimem::managed_buffer<int> b;
  EXPECT_EQ(unimem::in(b).how, intent_choice::follow);
  EXPECT_EQ(unimem::in(b, unimem::intent::map).how, intent_choice::map);
  EXPECT_EQ(unimem::out(b, unimem::intent::move).how, intent_choice::move);
  EXPECT_EQ(unimem::inout(b.view(), unimem::intent::map).how, intent_choice::map);
  EXPECT_EQ(unimem::in(b.view()).how, intent_choice::follow);
  // Empty ranges: no runtime call, so these work without a GPU.
  EXPECT_EQ(unimem::set_intent(b, unimem::intent::map, location::device(0)),
            unimem::hint_status::empty);
  EXPECT_EQ(unimem::get_intent(b), unimem::intent::move);
  EXPECT_EQ(unimem::ready_for_host(b), unimem::hint_status::empty);
}

// ---- GPU tests ----

TEST(PlacementGpu, PrefetchIsStreamOrdered) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;
  unimem::managed_buffer<int> marker(1);
  unimem::managed_buffer<float> data(16 * mib / sizeof(float), 1.0f);
  // ~0.1 s of spinning ahead of the prefetches on the same stream.
  unimem::launch(migration_spin_then_mark, unimem::launch_config(1, 1).on(s),
                 std::uint64_t{200'000'000}, marker, 42);
  EXPECT_EQ(unimem::prefetch(data, location::device(0), s), unimem::hint_status::applied);
  EXPECT_EQ(unimem::prefetch(marker, location::host(), s), unimem::hint_status::applied);
  EXPECT_FALSE(s.ready()) << "the prefetches finished before the kernel queued ahead of them";
  s.synchronize();
  EXPECT_TRUE(s.ready());
  EXPECT_EQ(unimem::last_prefetch_location(data), location::device(0));
  EXPECT_EQ(unimem::last_prefetch_location(marker), location::host());
  EXPECT_EQ(marker[0], 42);  // the kernel ran before the host prefetch, and wrote its mark
  EXPECT_EQ(data[data.size() - 1], 1.0f);
}

TEST(PlacementGpu, LastPrefetchLocationFollowsPrefetches) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<double> b(1 << 20, 2.0);
  EXPECT_FALSE(unimem::last_prefetch_location(b).has_value());  // never prefetched
  unimem::prefetch(b, location::device(0));
  unimem::synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(0));
  EXPECT_EQ(unimem::ready_for_host(b), unimem::hint_status::applied);
  EXPECT_EQ(unimem::last_prefetch_location(b), location::host());
  for (double v : b) ASSERT_EQ(v, 2.0);
}

TEST(PlacementGpu, AdviceIsVisibleSurvivesPrefetchAndUnadviseClearsIt) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<int> b(4 * mib, 7);
  EXPECT_FALSE(unimem::is_read_mostly(b));
  EXPECT_FALSE(unimem::preferred_location(b).has_value());
  EXPECT_TRUE(unimem::accessed_by(b).empty());

  EXPECT_EQ(unimem::advise(b, unimem::advice::read_mostly), unimem::hint_status::applied);
  EXPECT_EQ(unimem::advise(b, unimem::advice::preferred_location, location::device(0)),
            unimem::hint_status::applied);
  EXPECT_EQ(unimem::advise(b, unimem::advice::accessed_by, location::device(0)),
            unimem::hint_status::applied);
  EXPECT_TRUE(unimem::is_read_mostly(b));
  EXPECT_EQ(unimem::preferred_location(b), location::device(0));
  ASSERT_EQ(unimem::accessed_by(b).size(), 1u);
  EXPECT_EQ(unimem::accessed_by(b)[0], location::device(0));

  unimem::prefetch(b, location::host());
  unimem::prefetch(b, location::device(0));
  unimem::ready_for_host(b);
  EXPECT_TRUE(unimem::is_read_mostly(b));
  EXPECT_EQ(unimem::preferred_location(b), location::device(0));
  EXPECT_EQ(unimem::accessed_by(b).size(), 1u);

  unimem::advise(b, unimem::advice::preferred_location, location::host());
  EXPECT_EQ(unimem::preferred_location(b), location::host());

  EXPECT_EQ(unimem::unadvise(b, unimem::advice::read_mostly), unimem::hint_status::applied);
  EXPECT_EQ(unimem::unadvise(b, unimem::advice::preferred_location, location::host()),
            unimem::hint_status::applied);
  EXPECT_EQ(unimem::unadvise(b, unimem::advice::accessed_by, location::device(0)),
            unimem::hint_status::applied);
  EXPECT_FALSE(unimem::is_read_mostly(b));
  EXPECT_FALSE(unimem::preferred_location(b).has_value());
  EXPECT_TRUE(unimem::accessed_by(b).empty());
  for (int v : b) ASSERT_EQ(v, 7);
}

TEST(PlacementGpu, AdviceAloneMovesNoData) {
  UNIMEM_REQUIRE_GPU();
  // Device memory in use is the witness: pages that move to the GPU take its memory.
  const std::size_t bytes = 512 * mib;
  unimem::managed_buffer<char> b(bytes, unimem::uninitialized);
  std::memset(b.data(), 1, bytes);  // every page now lives on the host
  unimem::synchronize();
  const std::size_t before = free_memory(0);
  unimem::advise(b, unimem::advice::preferred_location, location::device(0));
  unimem::advise(b, unimem::advice::accessed_by, location::device(0));
  unimem::synchronize();
  const std::size_t after_advice = free_memory(0);
  EXPECT_LT(before - std::min(before, after_advice), bytes / 4)
      << "advice moved data: free memory fell from " << before << " to " << after_advice;
  unimem::prefetch(b, location::device(0));
  unimem::synchronize();
  const std::size_t after_prefetch = free_memory(0);
  EXPECT_GT(before - std::min(before, after_prefetch), bytes / 2)
      << "the prefetch did not move the pages (the witness cannot see migration)";
  EXPECT_EQ(b[bytes - 1], 1);
}

TEST(PlacementGpu, SubRangePrefetch) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<float> b(16 * mib, 3.0f);
  const auto first = b.view().subview(0, b.size() / 2);
  const auto second = b.view().subview(b.size() / 2);
  EXPECT_EQ(unimem::prefetch(second, location::device(0)), unimem::hint_status::applied);
  EXPECT_EQ(unimem::prefetch(first, location::host()), unimem::hint_status::applied);
  unimem::synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(second), location::device(0));
  EXPECT_EQ(unimem::last_prefetch_location(first), location::host());
  EXPECT_FALSE(unimem::last_prefetch_location(b).has_value());  // the halves disagree
  EXPECT_EQ(unimem::advise(second, unimem::advice::preferred_location, location::device(0)),
            unimem::hint_status::applied);
  EXPECT_EQ(unimem::preferred_location(second), location::device(0));
  EXPECT_FALSE(unimem::preferred_location(first).has_value());
  EXPECT_EQ(b[0], 3.0f);
  EXPECT_EQ(b[b.size() - 1], 3.0f);
}

TEST(PlacementGpu, InvalidDeviceIdsThrow) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<int> b(1024);
  const int n = unimem::device_count();
  for (int bad : {-1, n, 99}) {
    SCOPED_TRACE(bad);
    try {
      unimem::prefetch(b, location::device(bad));
      FAIL() << "prefetch to device " << bad << " did not throw";
    } catch (const unimem::error& e) {
      EXPECT_EQ(e.code(), unimem::detail::backend::error_invalid_device);
      EXPECT_NE(std::string(e.what()).find("device " + std::to_string(bad)), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(unimem::advise(b, unimem::advice::preferred_location, location::device(bad)),
                 unimem::error);
    EXPECT_THROW(unimem::advise(b, unimem::advice::accessed_by, location::device(bad)),
                 unimem::error);
    EXPECT_THROW(unimem::unadvise(b, unimem::advice::accessed_by, location::device(bad)),
                 unimem::error);
    EXPECT_THROW((void)unimem::migrates_on_demand(location::device(bad)), unimem::error);
    EXPECT_THROW(unimem::managed_buffer<int>(16, unimem::first_touch(location::device(bad))),
                 unimem::error);
    EXPECT_THROW(unimem::launch(migration_fill, unimem::grid_for(b.size()).on_device(bad),
                                unimem::out(b), 0),
                 unimem::error);
    EXPECT_THROW(unimem::stream(unimem::device(bad)), unimem::error);
  }
  EXPECT_EQ(b[0], 0);  // nothing ran
}

TEST(PlacementGpu, FirstTouchOnTheDevice) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 64 * mib / sizeof(int);
  const std::size_t before = free_memory(0);
  const unimem::detail::uvm_counters uvm;
  unimem::managed_buffer<int> zeros(n, unimem::first_touch(location::device(0)));
  EXPECT_EQ(unimem::last_prefetch_location(zeros), location::device(0));
  if (uvm.counts_gpu_faults()) {
    // The pages are on the GPU: a kernel over all of them takes no GPU fault. (The GPU's free
    // memory says nothing here: the UVM driver keeps memory freed by earlier tests and gives
    // it to the next allocation.)
    unimem::device_buffer<int> found(1);
    const std::uint64_t faults = uvm.gpu_faults();
    unimem::launch(migration_find, unimem::grid_for(n), zeros.data(), n, 1, found);
    unimem::synchronize();
    EXPECT_EQ(uvm.gpu_faults(), faults) << "the pages were not created on the device";
  } else {
    EXPECT_GT(before - std::min(before, free_memory(0)), n * sizeof(int) / 2)
        << "the pages were not created on the device";
  }

  unimem::stream s;
  unimem::managed_buffer<int> raw(n, unimem::first_touch(location::device(0), s),
                                  unimem::uninitialized);
  EXPECT_EQ(unimem::last_prefetch_location(raw), location::device(0));
  unimem::launch(migration_fill, unimem::grid_for(n).on(s), raw, 5);  // initialised there
  unimem::ready_for_host(raw, s);
  unimem::ready_for_host(zeros);
  for (std::size_t i = 0; i < n; i += 4097) {
    ASSERT_EQ(zeros[i], 0);
    ASSERT_EQ(raw[i], 5 + static_cast<int>(i));
  }
  unimem::managed_buffer<int> on_host(1000, unimem::first_touch(location::host()));
  for (int v : on_host) ASSERT_EQ(v, 0);
}

TEST(PlacementGpu, DataIntactThroughCyclesWithEveryTagCombination) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = (1 << 20) + 17;
  unimem::managed_buffer<int> a(n), b(n), c(n);
  unimem::stream side;
  int combination = 0;
  for (int ta = 0; ta < 2; ++ta) {          // a: plain, in
    for (int tb = 0; tb < 2; ++tb) {        // b: plain, inout
      for (int tc = 0; tc < 3; ++tc) {      // c: plain, out, inout
        for (int on_side = 0; on_side < 2; ++on_side, ++combination) {
          SCOPED_TRACE("a " + std::to_string(ta) + " b " + std::to_string(tb) + " c " +
                       std::to_string(tc) + (on_side ? " side stream" : " default stream"));
          for (int cycle = 0; cycle < 2; ++cycle) {  // host, device, host, device
            for (std::size_t i = 0; i < n; ++i) {
              a[i] = static_cast<int>(i) + combination;
              b[i] = 2 * static_cast<int>(i) - cycle;
              c[i] = -1;
            }
            unimem::launch_config cfg = unimem::grid_for(n);
            if (on_side) cfg = cfg.on(side);
            auto launch_with = [&](auto&& ax, auto&& bx) {
              if (tc == 0) unimem::launch(migration_combine, cfg, ax, bx, c, n);
              if (tc == 1) unimem::launch(migration_combine, cfg, ax, bx, unimem::out(c), n);
              if (tc == 2) unimem::launch(migration_combine, cfg, ax, bx, unimem::inout(c), n);
            };
            if (ta == 0 && tb == 0) launch_with(a, b);
            if (ta == 0 && tb == 1) launch_with(a, unimem::inout(b));
            if (ta == 1 && tb == 0) launch_with(unimem::in(a), b);
            if (ta == 1 && tb == 1) launch_with(unimem::in(a), unimem::inout(b));
            cfg.stream.synchronize();
            if (tc != 0) {  // out and inout: prefetched (the CPU wrote c since: faults)
              EXPECT_EQ(unimem::last_prefetch_location(c), location::device(0));
            }
            std::size_t wrong = 0;
            for (std::size_t i = 0; i < n; ++i) {
              const int ai = static_cast<int>(i) + combination;
              const int bi = 2 * static_cast<int>(i) - cycle;
              wrong += c[i] != ai + bi || b[i] != bi + 1 || a[i] != ai;
            }
            ASSERT_EQ(wrong, 0u) << "cycle " << cycle;
          }
        }
      }
    }
  }
}

TEST(PlacementGpu, TagsOnSubRangesPrefetchOnlyThem) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<int> b(8 * mib, -1);
  auto tail = b.view().subview(b.size() - 1000);
  unimem::launch(migration_fill, unimem::grid_for(tail.size()), unimem::out(tail), 100);
  unimem::synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(tail), location::device(0));
  EXPECT_FALSE(unimem::last_prefetch_location(b.view().subview(0, 1000)).has_value());
  EXPECT_EQ(b[0], -1);
  EXPECT_EQ(b[b.size() - 1000], 100);
  EXPECT_EQ(b[b.size() - 1], 100 + 999);
}

TEST(PlacementGpu, UnsupportedPolicyIsHonoured) {
  UNIMEM_REQUIRE_GPU();
  policy_restorer restore;
  unimem::managed_buffer<int> b(1 << 20, 4);
  {
  const unimem_test::pretend_no_migration no(0);
  EXPECT_FALSE(unimem::migrates_on_demand(location::device(0)));

  EXPECT_EQ(unimem::prefetch(b, location::device(0)), unimem::hint_status::unsupported);
  EXPECT_EQ(unimem::advise(b, unimem::advice::read_mostly), unimem::hint_status::unsupported);
  EXPECT_EQ(unimem::advise(b, unimem::advice::preferred_location, location::device(0)),
            unimem::hint_status::unsupported);
  unimem::synchronize();
  EXPECT_FALSE(unimem::last_prefetch_location(b).has_value()) << "an ignored prefetch moved data";
  EXPECT_FALSE(unimem::is_read_mostly(b)) << "ignored advice was applied";
  // Tagged launches still run; they only skip the prefetch.
  unimem::launch(migration_fill, unimem::grid_for(b.size()), unimem::out(b), 1);
  EXPECT_EQ(unimem::ready_for_host(b), unimem::hint_status::unsupported);
  EXPECT_EQ(b[1000], 1001);
  EXPECT_FALSE(unimem::last_prefetch_location(b).has_value());

  unimem::set_unsupported_policy(unimem::unsupported_policy::throw_error);
  try {
    unimem::prefetch(b, location::device(0));
    FAIL() << "prefetch did not throw under throw_error";
  } catch (const unimem::error& e) {
    EXPECT_EQ(e.code(), unimem::detail::backend::error_not_supported);
    EXPECT_NE(std::string(e.what()).find("cannot migrate"), std::string::npos) << e.what();
  }
  EXPECT_THROW(unimem::advise(b, unimem::advice::accessed_by, location::device(0)), unimem::error);
  EXPECT_THROW(unimem::launch(migration_fill, unimem::grid_for(b.size()), unimem::inout(b), 1),
               unimem::error);
  EXPECT_EQ(unimem::prefetch(unimem::managed_buffer<int>(), location::device(0)),
            unimem::hint_status::empty);  // empty stays a no-op under any policy

  }  // the real answer again
  EXPECT_TRUE(unimem::migrates_on_demand(location::device(0)) ==
              unimem::device(0).migrates_on_demand());
}

// An APU (memory_regime::apu: MI300A, Jetson) has one memory: prefetch, preferred_location and
// read_mostly advice, set_intent and ready_for_host's prefetch answer not_needed and give the
// runtime nothing, under either policy, and tagged launches compute as anywhere. Pretended here
// on whatever GPU runs it (the H200 for the first run): the runtime's own records show that
// nothing was prefetched or advised. accessed_by advice is passed on.
TEST(PlacementGpu, OnAnApuHintsAreNotNeededAndLaunchesStillCompute) {
  UNIMEM_REQUIRE_GPU();
  policy_restorer restore;
  const std::size_t n = std::size_t{1} << 20;
  const unimem::memory_regime real = unimem::device(0).regime();
  unimem::managed_buffer<int> a(n, unimem::uninitialized), b(n, unimem::uninitialized),
      c(n, unimem::uninitialized);
  for (std::size_t i = 0; i < n; ++i) {  // on the host: no prefetch
    a[i] = static_cast<int>(i);
    b[i] = 10;
  }
  ASSERT_FALSE(unimem::last_prefetch_location(c).has_value());
  {
    const unimem_test::pretend_regime apu(0, unimem::memory_regime::apu);
    EXPECT_EQ(unimem::detail::device_regime(0, unimem::call_site::current()),
              unimem::memory_regime::apu);
    EXPECT_EQ(unimem::device(0).regime(), real) << "the pretence changed the device's properties";
    int round = 0;
    for (const unimem::unsupported_policy policy :
         {unimem::unsupported_policy::ignore, unimem::unsupported_policy::throw_error}) {
      SCOPED_TRACE(policy == unimem::unsupported_policy::ignore ? "ignore" : "throw_error");
      unimem::set_unsupported_policy(policy);
      const auto not_needed = unimem::hint_status::not_needed;
      EXPECT_EQ(unimem::prefetch(a, location::device(0)), not_needed);
      EXPECT_EQ(unimem::prefetch(a, location::host()), not_needed);
      EXPECT_EQ(unimem::prefetch(a.view().subview(0, 1000), location::device(0)), not_needed);
      EXPECT_EQ(unimem::advise(a, unimem::advice::read_mostly), not_needed);
      EXPECT_EQ(unimem::unadvise(a, unimem::advice::read_mostly), not_needed);
      using unimem::advice;
      EXPECT_EQ(unimem::advise(a, advice::preferred_location, location::device(0)), not_needed);
      EXPECT_EQ(unimem::advise(a, advice::preferred_location, location::host()), not_needed);
      EXPECT_EQ(unimem::unadvise(a, advice::preferred_location, location::device(0)), not_needed);
      EXPECT_EQ(unimem::set_intent(a, unimem::intent::map, location::device(0)), not_needed);
      EXPECT_EQ(unimem::set_intent(a.view(), unimem::intent::move), not_needed);
      // Tagged launches, moved and mapped, place nothing and still compute.
      unimem::launch(migration_combine, unimem::grid_for(n), unimem::in(a),
                     unimem::inout(b, unimem::intent::map), unimem::out(c), n);
      EXPECT_EQ(unimem::ready_for_host(c), not_needed);
      EXPECT_EQ(c[0], 10 + round);
      EXPECT_EQ(c[n - 1], static_cast<int>(n - 1) + 10 + round);
      EXPECT_EQ(b[n - 1], 11 + round);
      ++round;
      unimem::stream s;
      unimem::launch(migration_fill, unimem::grid_for(n).on(s), unimem::out(c), 3);
      EXPECT_EQ(unimem::ready_for_host(c, s), not_needed);
      EXPECT_EQ(c[n - 1], 3 + static_cast<int>(n - 1));
    }
    // The runtime was given nothing: no prefetch, no advice, no intent.
    EXPECT_FALSE(unimem::last_prefetch_location(a).has_value());
    EXPECT_FALSE(unimem::last_prefetch_location(b).has_value());
    EXPECT_FALSE(unimem::last_prefetch_location(c).has_value());
    EXPECT_FALSE(unimem::preferred_location(b).has_value()) << "a mapped tag gave advice";
    EXPECT_FALSE(unimem::is_read_mostly(a));
    EXPECT_FALSE(unimem::preferred_location(a).has_value());
    EXPECT_EQ(unimem::get_intent(a), unimem::intent::move);
    // accessed_by sets up mappings, which an APU has too: passed on.
    unimem::set_unsupported_policy(unimem::unsupported_policy::ignore);
    const unimem::hint_status by =
        unimem::advise(a, unimem::advice::accessed_by, location::device(0));
    EXPECT_EQ(by, unimem::device(0).migrates_on_demand() ? unimem::hint_status::applied
                                                         : unimem::hint_status::unsupported);
    if (by == unimem::hint_status::applied) {
      EXPECT_TRUE(unimem_test::lists(unimem::accessed_by(a), location::device(0)));
      EXPECT_EQ(unimem::unadvise(a, unimem::advice::accessed_by, location::device(0)),
                unimem::hint_status::applied);
    }
  }
  // The pretence is forgotten: the real regime decides again.
  EXPECT_EQ(unimem::detail::device_regime(0, unimem::call_site::current()), real);
  if (real != unimem::memory_regime::apu && unimem::device(0).migrates_on_demand()) {
    EXPECT_EQ(unimem::prefetch(c, location::device(0)), unimem::hint_status::applied);
    unimem::synchronize();
    EXPECT_EQ(unimem::last_prefetch_location(c), location::device(0));
  }
  // A pretended no_migration gives unsupported (the hook also decides migrates_on_demand).
  {
    const unimem_test::pretend_regime none(0, unimem::memory_regime::no_migration);
    EXPECT_FALSE(unimem::migrates_on_demand(location::device(0)));
    EXPECT_EQ(unimem::prefetch(c, location::host()), unimem::hint_status::unsupported);
  }
  EXPECT_EQ(unimem::migrates_on_demand(location::device(0)),
            unimem::device(0).migrates_on_demand());
}

/// Three managed buffers of n ints (a = 1, b = c = 0) and a stream, with the tagged launch of
/// migration_combine over them (in(a), inout(b), out(c)): after k launches b and c are k.
struct combined {
  explicit combined(std::size_t count)
      : n(count), a(n, 1), b(n, 0), c(n, 0), cfg(unimem::grid_for(n).on(s)) {}
  void launch() {
    unimem::launch(migration_combine, cfg, unimem::in(a), unimem::inout(b), unimem::out(c), n);
  }
  /// Moves [p, p + bytes) to the host behind unimem's back (no CPU touch) and waits.
  void raw_prefetch_to_host(const void* p, std::size_t bytes) {
    const unimem::detail::backend::native_location host{true, -1};
    unimem::detail::check(unimem::detail::backend::prefetch(p, bytes, host, s.get()),
                          {__FILE__, __LINE__});
    s.synchronize();
  }
  /// The elements that are not what `launches` launches leave (the host reads them all).
  std::size_t wrong(int launches) {
    s.synchronize();
    std::size_t w = 0;
    for (std::size_t i = 0; i < n; ++i) w += a[i] != 1 || b[i] != launches || c[i] != launches;
    return w;
  }
  std::size_t n;
  unimem::managed_buffer<int> a, b, c;
  unimem::stream s;
  unimem::launch_config cfg;
};

TEST(PlacementGpu, TaggedLaunchOverResidentDataPlacesNothingUntilTheHostTouchesIt) {
  UNIMEM_REQUIRE_GPU();
  combined x(4 * mib);
  unimem::managed_buffer<int>&a = x.a, &b = x.b, &c = x.c;
  const std::size_t n = x.n;
  x.launch();
  x.s.synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(a), location::device(0));
  // Behind unimem's back (no CPU touch): a's pages go to the host. A launch that still placed
  // its ranges would prefetch a again; one that trusts the record leaves it alone.
  const bool skipped = unimem_test::in_a_quiet_run([&] {
    x.launch();
    x.s.synchronize();
    x.raw_prefetch_to_host(a.data(), a.size_bytes());
    x.launch();
    x.s.synchronize();
    return unimem::last_prefetch_location(a) == location::host();
  });
  EXPECT_TRUE(skipped) << "a tagged launch over resident data placed it again";
  // Every way the host can touch a buffer's GPU pages moves them back at the next tagged
  // launch, even when the kernel itself touches nothing (migration_nothing): afterwards the CPU
  // holds none of c's pages (mincore).
  const long resident_at_start = unimem_test::cpu_resident_pages(c.data(), c.size_bytes());
  if (resident_at_start < 0) GTEST_SKIP() << "no mincore here";
  EXPECT_EQ(resident_at_start, 0) << "the tagged launch left pages of c on the host";
  auto moved_back_after = [&](const char* how, auto&& touch) {
    SCOPED_TRACE(how);
    touch();
    EXPECT_GT(unimem_test::cpu_resident_pages(c.data(), c.size_bytes()), 0)
        << "the touch took no page to the host";
    unimem::launch(migration_nothing, x.cfg, unimem::in(a), unimem::inout(b), unimem::out(c), n);
    x.s.synchronize();
    unimem::synchronize();  // the moves run beside the kernel, on this thread's stream
    EXPECT_EQ(unimem_test::cpu_resident_pages(c.data(), c.size_bytes()), 0)
        << "the tagged launch left what the host took where it was";
  };
  moved_back_after("a CPU write through operator[]", [&] { c[n / 2] = 5; });
  moved_back_after("a CPU read through a raw pointer", [&] {
    const volatile int* raw = c.data();
    (void)raw[n - 1];
  });
  moved_back_after("writes from another thread, in two places", [&] {
    std::thread t([&] {
      c[3] = 5;
      c[n - 3] = 5;
    });
    t.join();
  });
  // What unimem cannot see (pages moved without a CPU fault) is said with host_touched, or is
  // unimem's own move of a view: the next launch places the buffer again, whole.
  auto placed_again_after = [&](const char* how, auto&& touch) {
    SCOPED_TRACE(how);
    x.launch();
    x.s.synchronize();
    x.raw_prefetch_to_host(a.data(), a.size_bytes());
    touch();
    x.launch();
    x.s.synchronize();
    EXPECT_EQ(unimem::last_prefetch_location(a), location::device(0));
  };
  placed_again_after("host_touched(a)", [&] { unimem::host_touched(a); });
  placed_again_after("host_touched(view of a)", [&] { unimem::host_touched(a.view()); });
  placed_again_after("ready_for_host of a view of a (pages moved with no record)",
                     [&] { (void)unimem::ready_for_host(a.view().subview(0, 1000), x.s); });
  placed_again_after("prefetch of a to the host through unimem",
                     [&] { (void)unimem::prefetch(a, location::host(), x.s); });
  // And the data is right throughout: 1 + b's count of launches.
  const int launches = b[0];
  EXPECT_EQ(x.wrong(launches), 0u);
  EXPECT_GE(launches, 7);
}

TEST(PlacementGpu, HostFaultsOnOtherMemoryLeaveRecordsHolding) {
  UNIMEM_REQUIRE_GPU();
  if (!unimem_test::host_access_is_exact()) {
    GTEST_SKIP() << "host touches are learnt from the process's page-fault count here (no UVM "
                    "driver events): any fault makes every record stop holding";
  }
  combined x(4 * mib);
  auto trusted_after = [&](const char* how, auto&& work) {
    SCOPED_TRACE(how);
    x.launch();
    x.s.synchronize();
    // a's pages to the host behind unimem's back: only a launch that trusts a's record leaves
    // them there.
    x.raw_prefetch_to_host(x.a.data(), x.a.size_bytes());
    work();
    x.launch();
    x.s.synchronize();
    EXPECT_EQ(unimem::last_prefetch_location(x.a), location::host())
        << "a's record stopped holding";
  };
  trusted_after("one fresh page of ordinary memory",
                [] { (void)unimem_test::fault_fresh_memory(1); });
  trusted_after("a second thread allocating and touching 64 MiB", [] {
    std::thread t([] {
      for (int k = 0; k < 64; ++k) {
        (void)unimem_test::fault_fresh_memory(256);  // 1 MiB, every page a fault
      }
    });
    t.join();
  });
  trusted_after("a CPU write to another buffer's GPU pages", [&] { x.c[x.n / 2] = 5; });
  trusted_after("a std::vector of 32 MiB", [] {
    std::vector<int> v(8 * mib, 3);
    EXPECT_EQ(v[v.size() - 1], 3);
  });
  EXPECT_EQ(x.wrong(x.b[0]), 0u);
}

TEST(PlacementGpu, ExplicitPrefetchOfAPlacedBufferIsFreeAndFirstTouchRecords) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;
  const unimem::detail::backend::native_location host{true, -1};
  unimem::managed_buffer<float> f(mib, unimem::first_touch(location::device(0), s));
  const bool first_touch_recorded = unimem_test::in_a_quiet_run([&] {
    unimem::detail::check(
        unimem::detail::backend::prefetch(f.data(), f.size_bytes(), host, s.get()),
        {__FILE__, __LINE__});
    s.synchronize();
    // The record from first touch holds: nothing moves.
    (void)unimem::prefetch(f, location::device(0), s);
    s.synchronize();
    const bool skipped = unimem::last_prefetch_location(f) == location::host();
    unimem::host_touched(f);
    (void)unimem::prefetch(f, location::device(0), s);
    s.synchronize();
    return skipped && unimem::last_prefetch_location(f) == location::device(0);
  });
  EXPECT_TRUE(first_touch_recorded);
  // A view's prefetch never trusts a record (it has none).
  (void)unimem::prefetch(f.view(), location::device(0), s);
  s.synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(f), location::device(0));
}

TEST(IntentGpu, MappedTagsKeepDataOnTheHostAndAdviseOnce) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = (4 << 20) + 3;
  // Zeroed by the CPU: the test asks whether a tag prefetched the ranges, so the constructor
  // must not have (managed_buffer(n) places arrays this large on the GPU).
  const auto on_host = unimem::first_touch(location::host());
  unimem::managed_buffer<int> a(n, on_host), b(n, on_host), c(n, on_host);
  unimem::stream s;
  auto launch = [&] {
    unimem::launch(migration_combine, unimem::grid_for(n).on(s), unimem::in(a, unimem::intent::map),
                   unimem::inout(b, unimem::intent::map), unimem::out(c, unimem::intent::map), n);
  };
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<int>(i) + round;
      b[i] = 7 * round;
    }
    launch();
    EXPECT_EQ(unimem::ready_for_host(c, s), unimem::hint_status::applied);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      wrong += c[i] != static_cast<int>(i) + round + 7 * round || b[i] != 7 * round + 1;
    }
    ASSERT_EQ(wrong, 0u) << "round " << round;
    for (auto* buf : {&a, &b, &c}) {
      EXPECT_EQ(unimem::get_intent(*buf), unimem::intent::map);
      EXPECT_EQ(unimem::preferred_location(*buf), location::host());
      EXPECT_TRUE(unimem_test::lists(unimem::accessed_by(*buf), location::device(0)));
      EXPECT_FALSE(unimem::last_prefetch_location(*buf).has_value())
          << "a mapped range was prefetched (to the GPU, or back by ready_for_host)";
    }
  }
  // Given once, then trusted: advice withdrawn behind unimem's back (no fault) stays withdrawn
  // by the next mapped launch, which makes no runtime call for a range its record describes.
  const bool trusted = unimem_test::in_a_quiet_run([&] {
    launch();
    s.synchronize();
    unimem::detail::check(
        unimem::detail::backend::advise(a.data(), a.size_bytes(),
                                        unimem::detail::backend::mem_advice::unset_accessed_by,
                                        {false, 0}),
        {__FILE__, __LINE__});
    launch();
    s.synchronize();
    return !unimem_test::lists(unimem::accessed_by(a), location::device(0));
  });
  EXPECT_TRUE(trusted);
  // Once unimem is told (or a fault happens), the tag makes the range mapped again.
  unimem::host_touched(a);
  launch();
  s.synchronize();
  EXPECT_TRUE(unimem_test::lists(unimem::accessed_by(a), location::device(0)));
  // Advice withdrawn through unimem: its record forgets, and the next mapped tag restores it.
  unimem::unadvise(a, unimem::advice::accessed_by, location::device(0));
  launch();
  s.synchronize();
  EXPECT_TRUE(unimem_test::lists(unimem::accessed_by(a), location::device(0)));
}

TEST(IntentGpu, MovedUndoesMappingAndPlainTagsFollowTheIntent) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 2 * mib;
  unimem::managed_buffer<int> a(n, 1), b(n, 0), c(n, 0);
  unimem::stream s;
  ASSERT_EQ(unimem::set_intent(a, unimem::intent::map), unimem::hint_status::applied);
  EXPECT_EQ(unimem::get_intent(a), unimem::intent::map);
  EXPECT_EQ(unimem::preferred_location(a), location::host());
  // Plain tags follow the intent: a is mapped, not moved; b (no intent) moves.
  unimem::launch(migration_combine, unimem::grid_for(n).on(s), unimem::in(a), unimem::inout(b),
                 unimem::out(c), n);
  s.synchronize();
  EXPECT_FALSE(unimem::last_prefetch_location(a).has_value());
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(0));
  EXPECT_EQ(c[n - 1], 1);
  // A moved tag switches it back: the advice is withdrawn and the range is prefetched.
  unimem::launch(migration_combine, unimem::grid_for(n).on(s), unimem::in(a, unimem::intent::move),
                 unimem::inout(b), unimem::out(c), n);
  s.synchronize();
  EXPECT_EQ(unimem::get_intent(a), unimem::intent::move);
  EXPECT_FALSE(unimem::preferred_location(a).has_value());
  EXPECT_TRUE(unimem::accessed_by(a).empty());
  EXPECT_EQ(unimem::last_prefetch_location(a), location::device(0));
  EXPECT_EQ(c[0], 2);
  // The intent is the runtime's advice, however it was given: advise() counts too.
  unimem::advise(a, unimem::advice::preferred_location, location::host());
  unimem::advise(a, unimem::advice::accessed_by, location::device(0));
  EXPECT_EQ(unimem::get_intent(a), unimem::intent::map);
}

TEST(IntentGpu, AViewMappedInsideABufferIsSeenByTheBuffersNextLaunch) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 4 * mib;
  unimem::managed_buffer<int> a(n, -1);
  unimem::stream s;
  auto head = a.view().subview(0, n / 2);
  unimem::launch(migration_fill, unimem::grid_for(n).on(s), unimem::out(a), 10);
  s.synchronize();
  ASSERT_EQ(unimem::set_intent(head, unimem::intent::map), unimem::hint_status::applied);
  EXPECT_EQ(unimem::get_intent(head), unimem::intent::map);
  EXPECT_EQ(unimem::get_intent(a), unimem::intent::move) << "only half of it is mapped";
  // The view's new intent stops a's record from holding (set_intent over a view takes a fault
  // on purpose): the buffer's next launch asks the runtime, finds the buffer not all mapped, and
  // moves all of it (intents are per whole range: a partly mapped range moves).
  unimem::launch(migration_fill, unimem::grid_for(n).on(s), unimem::out(a), 20);
  s.synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(a), location::device(0));
  EXPECT_EQ(unimem::ready_for_host(a), unimem::hint_status::applied);
  for (std::size_t i : {std::size_t{0}, n / 2 - 1, n / 2, n - 1}) {
    EXPECT_EQ(a[i], 20 + static_cast<int>(i));
  }
  // Undoing a part leaves the rest mapped, page by page, as the runtime keeps it.
  EXPECT_EQ(unimem::set_intent(head.subview(0, 1024), unimem::intent::move),
            unimem::hint_status::applied);
  EXPECT_EQ(unimem::get_intent(head.subview(0, 1024)), unimem::intent::move);
  EXPECT_EQ(unimem::get_intent(head.subview(16 * 1024)), unimem::intent::map);
  EXPECT_FALSE(unimem::preferred_location(head.subview(0, 1024)).has_value());
  EXPECT_EQ(unimem::preferred_location(head.subview(1024)), location::host());
}

TEST(IntentGpu, FreedMemoryKeepsNoIntentAndBadRequestsThrow) {
  UNIMEM_REQUIRE_GPU();
  policy_restorer restore;
  for (int round = 0; round < 4; ++round) {  // the runtime often hands the same address back
    unimem::managed_buffer<float> x(mib);
    unimem::managed_vector<float> y(mib);
    EXPECT_EQ(unimem::get_intent(x), unimem::intent::move) << "round " << round;
    EXPECT_EQ(unimem::get_intent(y), unimem::intent::move) << "round " << round;
    ASSERT_EQ(unimem::set_intent(x, unimem::intent::map), unimem::hint_status::applied);
    ASSERT_EQ(unimem::set_intent(y, unimem::intent::map), unimem::hint_status::applied);
    EXPECT_EQ(unimem::get_intent(x), unimem::intent::map);
    EXPECT_EQ(unimem::get_intent(y), unimem::intent::map);
    EXPECT_THROW(unimem::set_intent(x, unimem::intent::map, location::host()),
                 unimem::argument_error);
    EXPECT_THROW(
        unimem::set_intent(x, unimem::intent::map, location::device(unimem::device_count())),
        unimem::error);
  }
  // A device that cannot migrate: nothing to change, and said so (or thrown, by policy).
  unimem::managed_buffer<int> z(1000, 3);
  const unimem_test::pretend_no_migration no(0);
  EXPECT_EQ(unimem::set_intent(z, unimem::intent::map, location::device(0)),
            unimem::hint_status::unsupported);
  EXPECT_EQ(unimem::get_intent(z), unimem::intent::move);
  unimem::launch(migration_fill, unimem::grid_for(z.size()), unimem::out(z, unimem::intent::map),
                 5);
  EXPECT_EQ(unimem::ready_for_host(z), unimem::hint_status::unsupported);
  EXPECT_EQ(z[999], 5 + 999);
  unimem::set_unsupported_policy(unimem::unsupported_policy::throw_error);
  EXPECT_THROW(unimem::set_intent(z, unimem::intent::map, location::device(0)), unimem::error);
}

TEST(PlacementGpu, AttachToAStream) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;
  unimem::managed_buffer<int> b(1 << 16, 0);
  unimem::attach(b, s, unimem::attach_mode::single);
  unimem::launch(migration_fill, unimem::grid_for(b.size()).on(s), b, 9);
  s.synchronize();  // with single attachment the host may touch b once s is idle
  EXPECT_EQ(b[10], 19);
  unimem::attach(b, s, unimem::attach_mode::host);
  s.synchronize();
  b[0] = 1;
  unimem::attach(b, s, unimem::attach_mode::global);
  s.synchronize();
  unimem::launch(migration_fill, unimem::grid_for(b.size()), b, 0);
  unimem::synchronize();
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[65535], 65535);
}

// The same placement calls, spelled the same, over a managed_buffer and a pool_buffer of n ints
// on the GPU of stream s. takes_advice: false for memory the runtime takes no advice for (CUDA
// 13's managed pools answer "not supported": the calls say unsupported, as on a device that
// cannot migrate).
template <class B>
void expect_placement_calls(B& b, unimem::stream& s, bool takes_advice) {
  using unimem::advice;
  using unimem::hint_status;
  const location gpu = location::device(s.device_id());
  EXPECT_EQ(unimem::prefetch(b, gpu, s), hint_status::applied);
  EXPECT_EQ(unimem::ready_for_host(b, s), hint_status::applied);
  EXPECT_EQ(unimem::last_prefetch_location(b), location::host());
  EXPECT_EQ(unimem::prefetch(b, gpu, s), hint_status::applied);
  s.synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(b), gpu);
  const hint_status advised = takes_advice ? hint_status::applied : hint_status::unsupported;
  EXPECT_EQ(unimem::advise(b, advice::read_mostly), advised);
  EXPECT_EQ(unimem::is_read_mostly(b), takes_advice);
  EXPECT_EQ(unimem::unadvise(b, advice::read_mostly), advised);
  EXPECT_FALSE(unimem::is_read_mostly(b));
  EXPECT_EQ(unimem::advise(b, advice::preferred_location, gpu), advised);
  EXPECT_EQ(unimem::preferred_location(b).has_value(), takes_advice);
  EXPECT_EQ(unimem::unadvise(b, advice::preferred_location, gpu), advised);
  EXPECT_FALSE(unimem::preferred_location(b).has_value());
  EXPECT_EQ(unimem::advise(b, advice::accessed_by, gpu), advised);
  EXPECT_EQ(unimem_test::lists(unimem::accessed_by(b), gpu), takes_advice);
  EXPECT_EQ(unimem::unadvise(b, advice::accessed_by, gpu), advised);
  EXPECT_TRUE(unimem::accessed_by(b).empty());
  // An intent is advice: where the runtime takes none, map is unsupported (moved instead).
  EXPECT_EQ(unimem::set_intent(b, unimem::intent::map, gpu), advised);
  EXPECT_EQ(unimem::get_intent(b), takes_advice ? unimem::intent::map : unimem::intent::move);
  EXPECT_EQ(unimem::set_intent(b, unimem::intent::move, gpu), hint_status::applied);
  EXPECT_EQ(unimem::get_intent(b), unimem::intent::move);
  unimem::host_touched(b);
  unimem::launch(migration_fill, unimem::grid_for(b.size()).on(s), unimem::out(b), 3);
  EXPECT_EQ(unimem::ready_for_host(b, s), hint_status::applied);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < b.size(); ++i) wrong += b[i] != 3 + static_cast<int>(i);
  EXPECT_EQ(wrong, 0u);
  // A map tag where no advice is taken: the launch moves the pages instead, and runs.
  unimem::launch(migration_fill, unimem::grid_for(b.size()).on(s),
                 unimem::out(b, unimem::intent::map), 5);
  EXPECT_EQ(unimem::ready_for_host(b, s), hint_status::applied);
  wrong = 0;
  for (std::size_t i = 0; i < b.size(); ++i) wrong += b[i] != 5 + static_cast<int>(i);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(unimem::get_intent(b), takes_advice ? unimem::intent::map : unimem::intent::move);
  if (!takes_advice) {  // and the throwing policy says so
    const unimem::unsupported_policy before = unimem::get_unsupported_policy();
    unimem::set_unsupported_policy(unimem::unsupported_policy::throw_error);
    EXPECT_THROW(unimem::set_intent(b, unimem::intent::map, gpu), unimem::error);
    unimem::set_unsupported_policy(before);
  }
}

TEST(PlacementGpu, PoolBuffersTakeTheSamePlacementCallsAsManagedBuffers) {
  UNIMEM_REQUIRE_GPU();
  if (!unimem::migrates_on_demand(location::device(0)) ||
      unimem::device(0).regime() == unimem::memory_regime::apu) {
    GTEST_SKIP() << "device 0 places no pages (it cannot migrate, or it is an APU)";
  }
  const std::size_t n = mib;  // 4 MiB of ints
  unimem::stream s;           // before the buffers: pool memory is given back on it
  {
    SCOPED_TRACE("managed_buffer");
    unimem::managed_buffer<int> m(n, unimem::uninitialized);
    expect_placement_calls(m, s, true);
  }
  unimem::managed_pool_options caching;
  caching.use_runtime_pool = false;
  for (const unimem::managed_pool_options& o : {unimem::managed_pool_options(), caching}) {
    unimem::managed_pool pool(o);
    SCOPED_TRACE(pool.implementation_name());
    unimem::pool_buffer<int> p(n, pool, s);
    expect_placement_calls(p, s, !pool.uses_runtime_pool());
  }
}

TEST(StreamGpu, OwnsAndMoves) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream a(unimem::stream::blocking_mode::non_blocking);
  EXPECT_TRUE(static_cast<bool>(a));
  const auto handle = a.get();
  unimem::stream b(std::move(a));
  EXPECT_FALSE(static_cast<bool>(a));  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.get(), handle);
  EXPECT_TRUE(b.ready());
  unimem::stream c;
  c = std::move(b);
  EXPECT_EQ(c.get(), handle);
  EXPECT_EQ(unimem::stream_ref(c), unimem::stream_ref(handle));
  c.synchronize();
}

TEST(StreamGpu, KnowsItsDevice) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;  // on the current device
  EXPECT_EQ(s.device_id(), unimem::device::current().device_id());
  EXPECT_EQ(unimem::stream_ref(s).device_id(), s.device_id());
  unimem::stream on0(unimem::device(0));
  EXPECT_EQ(on0.ref().device_id(), 0);
  // A native handle does not carry its device; the runtime is asked where it can tell.
  const unimem::stream_ref native(on0.get());
  EXPECT_EQ(native.device_id(), unimem::no_device);
  EXPECT_FALSE(native.knows_device());
  EXPECT_EQ(native, on0.ref());
  const std::optional<int> asked = unimem::detail::stream_device(native, unimem::call_site::current());
  if (asked) EXPECT_EQ(*asked, 0);
  EXPECT_FALSE(unimem::stream_ref().knows_device());  // the default stream follows
  EXPECT_EQ(unimem::detail::stream_device(unimem::stream_ref(), unimem::call_site::current()),
            unimem::no_device);
  unimem::stream moved(std::move(on0));
  EXPECT_EQ(moved.device_id(), 0);
  EXPECT_EQ(on0.device_id(), unimem::no_device);  // NOLINT(bugprone-use-after-move)
}

TEST(StreamGpu, LaunchOnAStreamWithItsOwnDeviceNamedWorks) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;
  unimem::managed_buffer<int> b(4096, 1);
  unimem::launch(migration_fill, unimem::grid_for(b.size()).on(s).on_device(s.device_id()),
                 unimem::inout(b), 0);
  s.synchronize();
  EXPECT_EQ(b[4095], 4095);
}

TEST(DeviceGpu, SynchronizeAllDevicesWaitsAndKeepsTheCurrentDevice) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<int> b(1 << 20, unimem::uninitialized);
  // not ordered with the default stream
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  unimem::launch(migration_fill, unimem::grid_for(b.size()).on(s), b, 0);
  const int before = unimem::device::current().device_id();
  unimem::synchronize_all_devices();
  EXPECT_TRUE(s.ready());
  EXPECT_EQ(unimem::device::current().device_id(), before);
  EXPECT_EQ(b[(1 << 20) - 1], (1 << 20) - 1);
}
