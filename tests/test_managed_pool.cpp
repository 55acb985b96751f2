// managed_pool, pool_buffer and managed_pool_resource (issue 28): stream-ordered allocation of
// managed memory. Host tests run everywhere; the GPU tests skip without a GPU and run each case
// for every implementation this machine has: the runtime's pool of managed memory (CUDA 13)
// where the runtime makes one, and unimem's caching allocator always (forced with
// managed_pool_options::use_runtime_pool = false where the runtime's pool would serve).
// Nothing here is timed: the speed is unimem-bench's (--only pool).
#include "test_support.hpp"

#include <unimem/managed_pool.hpp>
#include <unimem/managed_pool_resource.hpp>
#include <unimem/memory_resource.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

__global__ void pool_write(int* p, std::size_t n, int base) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = base ^ static_cast<int>(i);
}
// Counts the elements that differ from base ^ i.
__global__ void pool_check(const int* p, std::size_t n, int base, unsigned* wrong) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n && p[i] != (base ^ static_cast<int>(i))) atomicAdd(wrong, 1u);
}
// One block: every thread spins for `cycles`, then the block writes `value` everywhere.
__global__ void pool_spin_then_fill(int* p, std::size_t n, int value, std::uint64_t cycles) {
  const long long start = clock64();
  while (static_cast<std::uint64_t>(clock64() - start) < cycles) {
  }
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) p[i] = value;
}
__global__ void pool_set(int* p, std::size_t n, int value) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = value;
}
__global__ void pool_copy(int* dst, const int* src, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
__global__ void pool_update(int* p, std::size_t n, int add) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = static_cast<int>(static_cast<unsigned>(p[i]) * 3u + static_cast<unsigned>(add));
}
__global__ void pool_sum(const int* p, std::size_t n, unsigned long long* sum) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) atomicAdd(sum, static_cast<unsigned long long>(p[i]));
}

// ---- what holds without a GPU ----

static_assert(std::is_same<unimem::pool_buffer<float>::memory_kind, unimem::managed_memory>::value,
              "a pool_buffer is managed memory for copy() and the access tags");
static_assert(std::is_same<unimem::detail::declared_memory_kind_t<unimem::pool_buffer<int>>,
                           unimem::managed_memory>::value,
              "");
static_assert(!std::is_copy_constructible<unimem::pool_buffer<float>>::value, "");
static_assert(!std::is_copy_assignable<unimem::pool_buffer<float>>::value, "");
static_assert(std::is_nothrow_move_constructible<unimem::pool_buffer<float>>::value, "");
static_assert(std::is_nothrow_move_assignable<unimem::pool_buffer<float>>::value, "");
static_assert(std::is_nothrow_destructible<unimem::pool_buffer<float>>::value, "");
static_assert(!std::is_copy_constructible<unimem::managed_pool>::value, "");
static_assert(std::is_nothrow_move_constructible<unimem::managed_pool>::value, "");
static_assert(std::is_nothrow_move_assignable<unimem::managed_pool>::value, "");
static_assert(std::is_nothrow_destructible<unimem::managed_pool>::value, "");

namespace {

using unimem::location;
using unimem::managed_pool;
using unimem::pool_buffer;

TEST(ManagedPool, SizeClassesRoundUpByAtMostAQuarter) {
  using unimem::detail::pool_block_bytes;
  EXPECT_EQ(pool_block_bytes(1), 256u);
  EXPECT_EQ(pool_block_bytes(256), 256u);
  EXPECT_EQ(pool_block_bytes(257), 320u);
  EXPECT_EQ(pool_block_bytes(1000), 1024u);
  EXPECT_EQ(pool_block_bytes(4096), 4096u);
  EXPECT_EQ(pool_block_bytes(4097), 5120u);
  EXPECT_EQ(pool_block_bytes(std::size_t{1} << 20), std::size_t{1} << 20);
  EXPECT_EQ(pool_block_bytes(std::size_t{64} << 20), std::size_t{64} << 20);
  EXPECT_EQ(pool_block_bytes(std::size_t{1} << 30), std::size_t{1} << 30);
  EXPECT_EQ(pool_block_bytes((std::size_t{1} << 30) + 1), (std::size_t{5} << 30) / 4);
  const std::size_t largest = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  EXPECT_EQ(pool_block_bytes(largest), largest + 1);  // 2^63: no overflow
  std::size_t previous = 0;
  for (std::size_t b = 1; b < (std::size_t{1} << 22); b += b / 7 + 1) {
    const std::size_t c = pool_block_bytes(b);
    EXPECT_GE(c, b);
    EXPECT_GE(c, previous) << b;
    EXPECT_LE(c, b <= 256 ? 256 : b + b / 4) << b;
    EXPECT_EQ(c % 64, 0u) << b;  // every class keeps the 256-byte alignment of its block start
    EXPECT_EQ(pool_block_bytes(c), c) << b;  // a class is its own class
    previous = c;
  }
}

TEST(ManagedPool, AnEmptyPoolBufferNeedsNoPool) {
  pool_buffer<int> b;
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.stream(), unimem::default_stream);
  pool_buffer<int> c(std::move(b));
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(unimem::to_view(c).size(), 0u);
  EXPECT_EQ(unimem::ready_for_host(c), unimem::hint_status::empty);  // no runtime call
}

TEST(NoGpu, ManagedPoolThrowsNoGpuFound) {
  UNIMEM_REQUIRE_NO_GPU();
  try {
    managed_pool pool;
    FAIL() << "constructing a managed_pool without a GPU did not throw";
  } catch (const unimem::error& e) {
    EXPECT_TRUE(e.no_gpu()) << e.what();
    EXPECT_NE(std::string(e.what()).find("no GPU was found"), std::string::npos) << e.what();
  }
  unimem::managed_pool_options caching;
  caching.use_runtime_pool = false;
  EXPECT_THROW((void)managed_pool(caching), unimem::error);
}

// ---- the caching allocator's free list (bookkeeping only: no GPU) ----

namespace ud = unimem::detail;

static_assert(noexcept(std::declval<ud::free_list&>().push(std::declval<ud::block_node>())) &&
                  noexcept(std::declval<ud::free_list&>().take(0, nullptr, false, nullptr)),
              "the free list's steps under the pool's lock cannot fail");
static_assert(!std::is_copy_constructible<ud::free_list>::value, "a block is listed once");

ud::backend::stream_handle stream_no(std::uintptr_t i) {
  return reinterpret_cast<ud::backend::stream_handle>(i * 16);
}
ud::backend::event_handle event_no(std::uintptr_t i) {
  return reinterpret_cast<ud::backend::event_handle>(i * 16);
}
/// A freed block `name` (its address, and its event's) of class `size`, freed on stream_no(s).
ud::block_node freed(std::uintptr_t name, std::size_t size, std::uintptr_t s, bool done) {
  ud::pool_block b;
  b.p = reinterpret_cast<void*>(name * 4096);
  b.size_class = size;
  b.event = event_no(name);
  b.stream = stream_no(s);
  b.done = done;
  return ud::make_node<ud::live_blocks>(ud::address_key(b.p), b);
}
/// The name freed() gave the block in n (0 for none).
std::uintptr_t name_of(const ud::block_node& n) {
  return n.empty() ? 0 : reinterpret_cast<std::uintptr_t>(n.mapped().p) / 4096;
}

TEST(PoolFreeList, TheDeviceTakesTheLastFreedOnItsStreamElseTheOldestCompleted) {
  ud::free_list l;
  l.push(freed(1, 1024, 1, true));
  l.push(freed(2, 1024, 2, false));
  l.push(freed(3, 1024, 1, false));
  l.push(freed(4, 1024, 2, true));
  l.push(freed(5, 2048, 3, true));
  EXPECT_EQ(l.size(), 5u);
  EXPECT_EQ(l.pending(), 2u);
  EXPECT_EQ(l.bytes(), 4 * 1024u + 2048u);
  EXPECT_EQ(name_of(l.take(1024, stream_no(1), false, nullptr)), 3u) << "pending, but on s";
  EXPECT_EQ(name_of(l.take(1024, stream_no(2), false, nullptr)), 2u) << "pending, but on s";
  EXPECT_EQ(name_of(l.take(1024, stream_no(3), false, nullptr)), 1u) << "the oldest completed";
  EXPECT_EQ(name_of(l.take(1024, stream_no(3), false, nullptr)), 4u);
  EXPECT_TRUE(l.take(1024, stream_no(3), false, nullptr).empty()) << "none left";
  EXPECT_TRUE(l.take(4096, stream_no(3), false, nullptr).empty()) << "no block of that class";
  EXPECT_EQ(name_of(l.take(2048, stream_no(9), false, nullptr)), 5u);
  EXPECT_EQ(l.size(), 0u);
  EXPECT_EQ(l.bytes(), 0u);
  l.push(freed(6, 1024, 2, false));
  EXPECT_TRUE(l.take(1024, stream_no(3), false, nullptr).empty()) << "6 is pending on another";
}

TEST(PoolFreeList, TheHostTakesTheOldestCompletedElseTheLastFreedOnItsStream) {
  ud::free_list l;
  l.push(freed(1, 1024, 1, false));
  l.push(freed(2, 1024, 1, true));
  l.push(freed(3, 1024, 1, false));
  EXPECT_EQ(name_of(l.take(1024, stream_no(1), true, nullptr)), 2u);
  EXPECT_EQ(name_of(l.take(1024, stream_no(1), true, nullptr)), 3u) << "the last freed on s";
  EXPECT_TRUE(l.take(1024, stream_no(2), true, nullptr).empty());
  EXPECT_EQ(name_of(l.take(1024, stream_no(1), true, nullptr)), 1u);
}

// Frees on one stream complete in order: of each stream's group of pending frees of a class only
// the first is asked about, so a completed free is found behind any number of pending ones of
// another stream (issue 54: the first eight of the class were asked, the others never). With
// more groups than one allocation asks about, the next goes on where the last stopped.
TEST(PoolFreeList, TheFirstPendingFreeOfEachStreamIsAskedAbout) {
  for (const bool for_host : {false, true}) {
    ud::free_list l;
    for (std::uintptr_t i = 1; i <= 9; ++i) l.push(freed(i, 512, 1, false));
    l.push(freed(10, 512, 2, false));
    ud::free_list::questions q;
    EXPECT_TRUE(l.take(512, stream_no(3), for_host, &q).empty()) << "asks first";
    ASSERT_EQ(q.count, 2u);
    EXPECT_EQ(q.free[0].event, event_no(1)) << "stream 1's first";
    EXPECT_EQ(q.free[1].event, event_no(10)) << "stream 2's first";
    q.free[1].completed = true;
    l.note(q.free, q.count);
    EXPECT_EQ(l.pending(), 9u);
    EXPECT_EQ(name_of(l.take(512, stream_no(3), for_host, nullptr)), 10u);
    // A known completed free first: nothing to ask.
    l.push(freed(12, 256, 1, true));
    l.push(freed(13, 256, 1, false));
    ud::free_list::questions none;
    EXPECT_EQ(name_of(l.take(256, stream_no(3), for_host, &none)), 12u);
    EXPECT_EQ(none.count, 0u);
  }
  ud::free_list many;
  for (std::uintptr_t s = 1; s <= 12; ++s) many.push(freed(100 + s, 256, s, false));
  ud::free_list::questions first, second;
  EXPECT_TRUE(many.take(256, stream_no(20), false, &first).empty());
  ASSERT_EQ(first.count, ud::free_list::max_questions);
  EXPECT_EQ(first.free[0].event, event_no(101));
  EXPECT_TRUE(many.take(256, stream_no(20), false, &second).empty());
  ASSERT_EQ(second.count, ud::free_list::max_questions);
  EXPECT_EQ(second.free[0].event, event_no(109)) << "where the last stopped";
  EXPECT_EQ(second.free[4].event, event_no(101)) << "then from the first again";
  // Every class's groups, a few at a time (making room under the release threshold).
  ud::block_key from{};
  ud::pending_free out[5];
  EXPECT_EQ(many.first_pending(from, out, 5), 5u);
  EXPECT_EQ(out[4].event, event_no(105));
  EXPECT_EQ(many.first_pending(from, out, 5), 5u);
  EXPECT_EQ(many.first_pending(from, out, 5), 2u);
  EXPECT_EQ(out[1].event, event_no(112));
  EXPECT_EQ(many.first_pending(from, out, 5), 0u);
}

// The answers about pending frees come in the order they were asked, which goes round the
// streams (each allocation asks from where the last stopped): a block whose free is found
// completed is listed by its free's age all the same, so the oldest completed free is taken
// first. Listed in the order of the answers, the GPU run of 2026-12-05 (H100 and H200) handed
// out the block freed second (ManagedPoolGpu.NoReuseOnAnotherStream...: z != x).
TEST(PoolFreeList, ABlockFoundCompletedIsListedByItsFreesAge) {
  ud::free_list l;
  l.push(freed(1, 1024, 1, false));  // the older free, on stream 1
  l.push(freed(2, 1024, 2, false));  // the newer, on stream 2
  ud::free_list::questions q;
  EXPECT_TRUE(l.take(1024, stream_no(3), false, &q).empty());
  ASSERT_EQ(q.count, 2u);
  std::swap(q.free[0], q.free[1]);  // stream 2's answer first, as a later round would ask
  q.free[0].completed = q.free[1].completed = true;
  l.note(q.free, q.count);
  EXPECT_EQ(l.pending(), 0u);
  l.push(freed(3, 1024, 1, true));  // completed when freed: the newest of all
  EXPECT_EQ(name_of(l.take(1024, stream_no(3), false, nullptr)), 1u) << "the oldest free";
  EXPECT_EQ(name_of(l.take(1024, stream_no(3), false, nullptr)), 2u);
  EXPECT_EQ(name_of(l.take(1024, stream_no(3), true, nullptr)), 3u);
  EXPECT_EQ(l.size(), 0u);
}

// An answer is noted only where the block is still listed under the free it was asked about:
// taken and freed again meanwhile (its event recorded anew), it stays of unknown outcome.
TEST(PoolFreeList, AnAnswerAboutAnEarlierFreeOfTheBlockIsIgnored) {
  ud::free_list l;
  l.push(freed(1, 1024, 1, false));
  ud::free_list::questions q;
  EXPECT_TRUE(l.take(1024, stream_no(2), false, &q).empty());
  ASSERT_EQ(q.count, 1u);
  ud::block_node n = l.take(1024, stream_no(1), false, nullptr);  // another thread, meanwhile
  ASSERT_EQ(name_of(n), 1u);
  l.push(std::move(n));  // freed again
  q.free[0].completed = true;  // the answer about the first free
  l.note(q.free, q.count);
  EXPECT_TRUE(l.take(1024, stream_no(2), false, nullptr).empty()) << "the new free is unknown";
  ud::free_list::questions again;
  EXPECT_TRUE(l.take(1024, stream_no(2), false, &again).empty());
  ASSERT_EQ(again.count, 1u);
  EXPECT_NE(again.free[0].free_id, q.free[0].free_id);
  again.free[0].completed = true;
  l.note(again.free, again.count);
  EXPECT_EQ(name_of(l.take(1024, stream_no(2), false, nullptr)), 1u);
}

// Every block moved out (the pool giving all back while another thread asks about a free):
// the frees listed after are numbered on, so the answer about the earlier one does not apply.
TEST(PoolFreeList, AnAnswerAboutAFreeMovedOutIsNotTakenForALaterOne) {
  ud::free_list l, gone;
  l.push(freed(1, 1024, 1, false));
  ud::free_list::questions q;
  EXPECT_TRUE(l.take(1024, stream_no(2), false, &q).empty());
  ASSERT_EQ(q.count, 1u);
  l.move_all_to(gone);
  EXPECT_EQ(l.size(), 0u);
  EXPECT_EQ(l.bytes(), 0u);
  EXPECT_EQ(gone.bytes(), 1024u);
  l.push(freed(2, 1024, 1, false));
  q.free[0].completed = true;
  l.note(q.free, q.count);
  EXPECT_EQ(l.pending(), 1u) << "block 2's free is still of unknown outcome";
  EXPECT_TRUE(l.take(1024, stream_no(2), false, nullptr).empty());
  EXPECT_EQ(name_of(gone.take_first()), 1u);
}

TEST(PoolFreeList, MoveToTakesTheOldestOfEachClassSmallerClassesFirstUntilEnough) {
  ud::free_list l, out;
  l.push(freed(1, 4096, 1, true));
  l.push(freed(2, 1024, 1, false));
  l.push(freed(3, 1024, 1, true));
  l.push(freed(4, 4096, 1, true));
  l.move_to(out, 1500, true);  // completed only: 3 (1024), then 1 (4096)
  EXPECT_EQ(out.bytes(), 1024u + 4096u);
  std::vector<std::uintptr_t> order;
  out.for_each([&order](ud::pool_block& b) { order.push_back(reinterpret_cast<std::uintptr_t>(b.p) / 4096); });
  EXPECT_EQ(order, (std::vector<std::uintptr_t>{3, 1}));
  EXPECT_EQ(l.bytes(), 1024u + 4096u);
  l.move_to(out, 1, false);  // any, the completed first: 4
  EXPECT_EQ(l.pending(), 1u);
  l.move_to(out, 1, false);  // then the pending: 2
  EXPECT_EQ(name_of(out.take(1024, stream_no(1), false, nullptr)), 2u);
  EXPECT_EQ(l.pending(), 0u);
  EXPECT_EQ(l.size(), 0u);
  l.move_to(out, std::size_t{1} << 40, false);
  EXPECT_EQ(l.size(), 0u);
  EXPECT_EQ(l.bytes(), 0u);
  EXPECT_EQ(out.size(), 3u);
}

// A block's record is one map node for its whole life: listed, taken and listed again, it is
// moved, never copied or made anew (so nothing under the pool's lock allocates).
TEST(PoolFreeList, ABlocksRecordMovesBetweenTheMapsAsOneNode) {
  ud::free_list l;
  ud::block_node n = freed(1, 1024, 1, true);
  const ud::pool_block* record = &n.mapped();
  l.push(std::move(n));
  ud::live_blocks live;
  ud::block_node taken = l.take(1024, stream_no(1), false, nullptr);
  EXPECT_EQ(&taken.mapped(), record);
  taken.key() = ud::address_key(taken.mapped().p);
  live.insert(std::move(taken));
  ud::block_node back = live.extract(live.begin());
  EXPECT_EQ(&back.mapped(), record);
  l.push(std::move(back));
  EXPECT_EQ(&l.take_first().mapped(), record);
  EXPECT_TRUE(l.take_first().empty());
}

// ---- ownership: pools and buffers share the pool's state (std::shared_ptr); no GPU ----

/// A pool_core over host memory that counts what reaches it.
class host_core final : public ud::pool_core {
 public:
  struct counts {
    int closes = 0, deallocations = 0, destroyed = 0;
  };
  explicit host_core(counts& c) noexcept
      : pool_core(0, std::numeric_limits<std::size_t>::max(), unimem::native_status{}), c_(c) {}
  ~host_core() override { ++c_.destroyed; }
  void deallocate(void* p, ud::backend::stream_handle, std::uint64_t) noexcept override {
    ud::block_node n;
    {
      ud::spin_guard lock(lock_);
      n = untrack(p);
    }
    if (n.empty()) return;
    ++c_.deallocations;
    std::free(p);
  }
  void trim_to(std::size_t, unimem::call_site) override {}
  void close() noexcept override { ++c_.closes; }
  void* allocate(std::size_t bytes, ud::backend::stream_handle, bool, unimem::call_site,
                 std::uint64_t* stamp) override {
    ud::block_node n = ud::make_node<ud::live_blocks>(ud::block_key{}, ud::pool_block{});
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    n.mapped().p = p;
    ud::spin_guard lock(lock_);
    track(std::move(n), bytes, stamp != nullptr);
    return p;
  }

 private:
  counts& c_;
};

/// A managed_pool over a host_core.
struct host_pool : managed_pool {
  explicit host_pool(std::shared_ptr<ud::pool_core> core) : managed_pool(std::move(core)) {}
};

// The pool and three buffers from it (one empty) go in each of the 24 orders: the pool's state
// lives until the last of them, the pool's end closes it once, each buffer's memory goes back.
TEST(ManagedPoolOwnership, ThePoolAndItsBuffersGoInAnyOrder) {
  int order[] = {0, 1, 2, 3};  // 0: the pool, 1-3: buffers of 100, 7 and 0 ints
  int orders = 0;
  do {
    host_core::counts c;
    auto core = std::make_shared<host_core>(c);
    const std::weak_ptr<ud::pool_core> state = core;
    std::optional<host_pool> pool(std::in_place, std::move(core));
    std::optional<pool_buffer<int>> bufs[3];
    bufs[0].emplace(100, *pool);
    bufs[1].emplace(7, *pool);
    bufs[2].emplace(0, *pool);
    for (int i = 0; i < 100; ++i) (*bufs[0])[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(pool->statistics().allocations, 2u);
    int left = 4;
    for (const int who : order) {
      if (who == 0) {
        pool.reset();
        EXPECT_EQ(c.closes, 1);
      } else {
        bufs[who - 1].reset();
      }
      EXPECT_EQ(state.expired(), --left == 0) << "the state outlives none and nothing";
    }
    EXPECT_EQ(c.closes, 1);
    EXPECT_EQ(c.deallocations, 2);
    EXPECT_EQ(c.destroyed, 1);
    ++orders;
  } while (std::next_permutation(std::begin(order), std::end(order)));
  EXPECT_EQ(orders, 24);
}

// Moves and swaps hand the state on; a moved-from pool closes nothing and refuses to allocate.
TEST(ManagedPoolOwnership, MovesAndSwapsHandTheStateOn) {
  host_core::counts c1, c2;
  auto first = std::make_shared<host_core>(c1);
  const std::weak_ptr<ud::pool_core> state1 = first;
  host_pool a(std::move(first));
  host_pool b(std::make_shared<host_core>(c2));
  pool_buffer<int> x(10, a);
  {
    managed_pool moved(std::move(a));
    EXPECT_FALSE(static_cast<bool>(a));
    EXPECT_THROW((void)a.allocate(64), unimem::invalid_argument);
    EXPECT_THROW((void)pool_buffer<int>(10, a), unimem::invalid_argument);
    a.deallocate(x.data(), 40);  // a moved-from pool ignores it
    EXPECT_EQ(c1.deallocations, 0);
    moved.swap(b);  // moved: c2's state; b: c1's
    EXPECT_EQ(c1.closes + c2.closes, 0);
  }
  EXPECT_EQ(c2.closes, 1);
  EXPECT_EQ(c2.destroyed, 1) << "no buffer of its own";
  pool_buffer<int> y(std::move(x));
  EXPECT_TRUE(x.empty());
  b = host_pool(std::make_shared<host_core>(c2));  // c1's pool closes; y keeps its state
  EXPECT_EQ(c1.closes, 1);
  EXPECT_FALSE(state1.expired());
  pool_buffer<int> z;
  swap(y, z);
  y = pool_buffer<int>();
  EXPECT_FALSE(state1.expired());
  z = pool_buffer<int>(3, b);  // gives c1's memory back, the last owner of its state
  EXPECT_EQ(c1.deallocations, 1);
  EXPECT_TRUE(state1.expired());
  EXPECT_EQ(c1.destroyed, 1);
}

TEST(ManagedPoolOwnership, StatisticsCountTheLiveAllocations) {
  host_core::counts c;
  host_pool pool(std::make_shared<host_core>(c));
  EXPECT_EQ(pool.allocate(0), nullptr);
  void* a = pool.allocate(1000);
  void* b = pool.allocate_for_host(24);
  unimem::pool_statistics st = pool.statistics();
  EXPECT_EQ(st.bytes_in_use, 1024u);
  EXPECT_EQ(st.peak_bytes_in_use, 1024u);
  EXPECT_EQ(st.allocations, 2u);
  int unknown = 0;
  pool.deallocate(&unknown, sizeof unknown);  // not the pool's: ignored
  pool.deallocate(a, 1000);
  pool.deallocate(a, 1000);  // no longer live: ignored
  st = pool.statistics();
  EXPECT_EQ(st.bytes_in_use, 24u);
  EXPECT_EQ(st.peak_bytes_in_use, 1024u);
  EXPECT_EQ(st.allocations, 1u);
  pool.reset_peak();
  EXPECT_EQ(pool.statistics().peak_bytes_in_use, 24u);
  pool.deallocate(b, 24);
  EXPECT_EQ(c.deallocations, 2);
  EXPECT_EQ(pool.statistics().allocations, 0u);
}

TEST(ManagedPoolOwnership, ThePmrResourceGivesEveryAllocationBack) {
  host_core::counts c;
  host_pool pool(std::make_shared<host_core>(c));
  {
    unimem::managed_pool_resource resource(pool);
    std::pmr::vector<int> v(&resource);
    for (int i = 0; i < 1000; ++i) v.push_back(i);
    EXPECT_EQ(v[999], 999);
    void* aligned = resource.allocate(10000, 4096);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 4096, 0u);
    static_cast<char*>(aligned)[9999] = 1;
    EXPECT_EQ(pool.statistics().allocations, 2u);
    int unknown = 0;
    resource.deallocate(&unknown, sizeof unknown, 4096);  // not the resource's: ignored
    resource.deallocate(aligned, 10000, 4096);
  }
  EXPECT_EQ(pool.statistics().allocations, 0u);
  EXPECT_EQ(pool.statistics().bytes_in_use, 0u);
}

// ---- with a GPU: every case for every implementation ----

/// The options of each implementation this machine has: the runtime's pool first where the
/// runtime makes one, and the caching allocator.
std::vector<unimem::managed_pool_options> implementations() {
  unimem::managed_pool_options caching;
  caching.use_runtime_pool = false;
  std::vector<unimem::managed_pool_options> out;
  if (managed_pool(unimem::managed_pool_options()).uses_runtime_pool()) {
    out.push_back(unimem::managed_pool_options());
  }
  out.push_back(caching);
  return out;
}

template <class Range>
bool all_are(const Range& r, int v) {
  for (const auto& x : r)
    if (x != v) return false;
  return true;
}
template <class Range>
bool pattern_is(const Range& r, int base) {
  std::size_t i = 0;
  for (const auto& x : r)
    if (x != (base ^ static_cast<int>(i++))) return false;
  return true;
}

TEST(ManagedPoolGpu, AllocationsAreManagedMemoryUsedInStreamOrder) {
  UNIMEM_REQUIRE_GPU();
  for (const auto& options : implementations()) {
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    EXPECT_EQ(pool.device_id(), unimem::device::current().device_id());
    EXPECT_EQ(pool.uses_runtime_pool(), pool.runtime_pool_status() == unimem::native_status{});
    unimem::stream s;
    const std::size_t n = 100000;
    pool_buffer<int> b(n, pool, s);
    ASSERT_EQ(b.size(), n);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 256, 0u);
    EXPECT_EQ(b.stream(), s.ref());
    unimem::launch(pool_write, unimem::grid_for(n).on(s), b, n, 42);  // the buffer as int*
    s.synchronize();
    EXPECT_TRUE(pattern_is(b, 42));
    // What the runtime says of the pointer: managed memory, as cudaMallocManaged's.
    const auto kind = unimem::detail::backend::memory_of(b.data());
    if (kind != unimem::detail::backend::pointer_memory::unknown) {
      EXPECT_EQ(kind, unimem::detail::backend::pointer_memory::managed);
    }
    // Raw allocations, the empty one, and the size rule before any runtime call.
    EXPECT_EQ(pool.allocate(0, s), nullptr);
    void* raw = pool.allocate(3000, s);
    ASSERT_NE(raw, nullptr);
    pool.deallocate(raw, 3000, s);
    pool.deallocate(nullptr, 0, s);
    int unknown = 0;
    pool.deallocate(&unknown, sizeof unknown, s);  // not the pool's: ignored
    const std::size_t too_many = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) + 1;
    EXPECT_THROW((void)pool.allocate(too_many, s), unimem::length_error);
    EXPECT_THROW((void)pool_buffer<double>(too_many / 4, pool, s), unimem::length_error);
    pool_buffer<int> empty(0, pool, s);
    EXPECT_TRUE(empty.empty());
    s.synchronize();
  }
}

TEST(ManagedPoolGpu, ViewsTagsPlacementAndCopiesWorkAsOnManagedMemory) {
  UNIMEM_REQUIRE_GPU();
  for (const auto& options : implementations()) {
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    unimem::stream s, t;  // before the buffers: their memory is freed on them
    const std::size_t n = 1 << 18;  // 1 MiB of ints
    pool_buffer<int> a(n, pool, s), c(n, pool, s);
    unimem::launch(pool_write, unimem::grid_for(n).on(s), unimem::out(a), n, 7);
    unimem::launch(pool_copy, unimem::grid_for(n).on(s), unimem::out(c), unimem::in(a), n);
    unimem::launch(pool_update, unimem::grid_for(n).on(s), unimem::inout(c), n, 1);
    const unimem::hint_status h = unimem::ready_for_host(c, s);
    EXPECT_NE(h, unimem::hint_status::empty);
    bool ok = true;
    for (std::size_t i = 0; i < n && ok; ++i) {
      ok = c[i] == static_cast<int>(static_cast<unsigned>(7 ^ static_cast<int>(i)) * 3u + 1u);
    }
    EXPECT_TRUE(ok) << "tagged launches over pool buffers";
    // Placement over the buffer and over a part of it, prefetch to the GPU and back.
    (void)unimem::prefetch(a, location::device(pool.device_id()), s);
    (void)unimem::prefetch(unimem::to_view(a).subview(1000, 5000), location::host(), s);
    // CUDA 13's managed pools take no advice (cudaErrorNotSupported, measured on the H200 with
    // driver 580): a hint the runtime cannot apply is unsupported, as on a device that cannot
    // migrate; memory of cudaMallocManaged takes it.
    const unimem::hint_status advised =
        pool.uses_runtime_pool() ? unimem::hint_status::unsupported : unimem::hint_status::applied;
    EXPECT_EQ(unimem::advise(a, unimem::advice::read_mostly, location::host()), advised);
    EXPECT_EQ(unimem::unadvise(a, unimem::advice::read_mostly, location::host()), advised);
    EXPECT_EQ(unimem::ready_for_host(a, s), h);
    EXPECT_TRUE(pattern_is(a, 7));
    // Copies and fills, between pool memory, managed_buffer and host ranges.
    unimem::managed_buffer<int> m(n, 5);
    unimem::copy(a, m);
    EXPECT_TRUE(all_are(a, 5));
    unimem::fill_async(c, 9, s);
    s.synchronize();
    EXPECT_TRUE(all_are(c, 9));
    std::vector<int> host(n, 0);
    unimem::copy(host, c);
    EXPECT_TRUE(all_are(host, 9));
    // Move, swap and set_stream keep the memory and hand it on.
    pool_buffer<int> moved(std::move(a));
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(moved.size(), n);
    moved.set_stream(t);
    EXPECT_EQ(moved.stream(), t.ref());
    swap(moved, c);
    EXPECT_TRUE(all_are(moved, 9));
    EXPECT_TRUE(all_are(c, 5));
    s.synchronize();
    t.synchronize();
  }
}

// The core of issue 28's promise: a block freed on stream A while A's kernel still uses it is
// not handed to stream B until that kernel is done. A's kernel spins, then writes 7 into the
// block, and A copies the block to a witness before freeing it; B allocates the same size at
// once and writes 9. Were the block B's too early, B's 9s would be overwritten by A's 7s, or A's
// witness would hold 9s.
TEST(ManagedPoolGpu, NoReuseOnAnotherStreamWhileTheFreeingStreamStillUsesTheBlock) {
  UNIMEM_REQUIRE_GPU();
  for (const auto& options : implementations()) {
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    unimem::stream a(unimem::stream::blocking_mode::non_blocking);
    unimem::stream b(unimem::stream::blocking_mode::non_blocking);
    unimem::stream c(unimem::stream::blocking_mode::non_blocking);
    const std::size_t n = 1 << 18, bytes = n * sizeof(int);
    unimem::managed_buffer<int> witness(n, unimem::uninitialized);
    int* x = static_cast<int*>(pool.allocate(bytes, a));
    unimem::launch(pool_spin_then_fill, unimem::launch_config(1, 256).on(a), x, n, 7,
                   std::uint64_t{200'000'000});  // about 0.1 s
    unimem::launch(pool_copy, unimem::grid_for(n).on(a), witness.data(), x, n);
    pool.deallocate(x, bytes, a);
    int* y = static_cast<int*>(pool.allocate(bytes, b));
    const bool a_was_running = !a.ready();
    unimem::launch(pool_set, unimem::grid_for(n).on(b), y, n, 9);
    b.synchronize();
    a.synchronize();
    EXPECT_TRUE(all_are(unimem::view<const int>(y, n), 9)) << "B's block was written by A";
    EXPECT_TRUE(all_are(witness, 7)) << "A's block was written by B";
    if (!pool.uses_runtime_pool()) {
      // The caching allocator never makes B wait for A: B got a block of its own. (The
      // runtime's pool may hand B the same block and make B wait for A's free.)
      if (a_was_running) EXPECT_NE(y, x);
      pool.deallocate(y, bytes, b);
      // Once A's free has completed, the block serves any stream: the oldest free block first.
      int* z = static_cast<int*>(pool.allocate(bytes, c));
      EXPECT_EQ(z, x);
      pool.deallocate(z, bytes, c);
    } else {
      pool.deallocate(y, bytes, b);
    }
    c.synchronize();
    b.synchronize();
  }
}

// On its own stream a freed block is handed out again at once, and stream order keeps the work
// of its two lives apart.
TEST(ManagedPoolGpu, CachingAllocatorReusesABlockOnItsStreamAtOnce) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_pool_options caching;
  caching.use_runtime_pool = false;
  managed_pool pool(caching);
  EXPECT_FALSE(pool.uses_runtime_pool());
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const std::size_t n = 1 << 18, bytes = n * sizeof(int);
  unimem::managed_buffer<int> witness(n, unimem::uninitialized);
  int* x = static_cast<int*>(pool.allocate(bytes, s));
  unimem::launch(pool_spin_then_fill, unimem::launch_config(1, 256).on(s), x, n, 7,
                 std::uint64_t{100'000'000});
  unimem::launch(pool_copy, unimem::grid_for(n).on(s), witness.data(), x, n);
  pool.deallocate(x, bytes, s);
  const unimem::pool_statistics before = pool.statistics();
  int* y = static_cast<int*>(pool.allocate(bytes - 100, s));  // the same size class
  EXPECT_EQ(y, x) << "a block freed on s is reused on s at once";
  EXPECT_EQ(pool.statistics().bytes_held, before.bytes_held) << "no new memory";
  unimem::launch(pool_set, unimem::grid_for(n).on(s), y, n, 9);
  s.synchronize();
  EXPECT_TRUE(all_are(witness, 7));
  EXPECT_TRUE(all_are(unimem::view<const int>(y, n), 9));
  pool.deallocate(y, bytes - 100, s);
  // A pool_buffer whose stream is set elsewhere gives its block back there.
  unimem::stream t(unimem::stream::blocking_mode::non_blocking);
  void* first = nullptr;
  {
    pool_buffer<int> b(n, pool, s);
    first = b.data();
    b.set_stream(t);
  }
  pool_buffer<int> again(n, pool, t);
  EXPECT_EQ(static_cast<void*>(again.data()), first);
  t.synchronize();
}

// allocate_for_host: memory the host may write at once, also where the pool hands out memory
// whose last user, a kernel queued on the same stream before the free, is still running (the
// pool waits for that free, or for the stream). Without the wait the kernel's 7s would land
// on the host's 9s.
TEST(ManagedPoolGpu, AllocateForHostWaitsForTheMemorysLastUse) {
  UNIMEM_REQUIRE_GPU();
  for (const auto& options : implementations()) {
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    unimem::stream s(unimem::stream::blocking_mode::non_blocking);
    const std::size_t n = 1 << 18, bytes = n * sizeof(int);
    int* x = static_cast<int*>(pool.allocate(bytes, s));
    unimem::launch(pool_spin_then_fill, unimem::launch_config(1, 256).on(s), x, n, 7,
                   std::uint64_t{200'000'000});  // about 0.1 s
    pool.deallocate(x, bytes, s);
    int* y = static_cast<int*>(pool.allocate_for_host(bytes, s));
    ASSERT_NE(y, nullptr);
    // The caching allocator has no completed block of this class: x's, waited for.
    if (!pool.uses_runtime_pool()) EXPECT_EQ(y, x);
    if (y == x) EXPECT_TRUE(s.ready()) << "the kernel that used the memory is done";
    for (std::size_t i = 0; i < n; ++i) y[i] = 9;
    s.synchronize();
    EXPECT_TRUE(all_are(unimem::view<const int>(y, n), 9)) << "the last user wrote after the host";
    pool.deallocate(y, bytes, s);
    EXPECT_EQ(pool.allocate_for_host(0, s), nullptr);
    s.synchronize();
    EXPECT_EQ(pool.statistics().allocations, 0u);
  }
}

TEST(ManagedPoolGpu, StatisticsCountInUsePeakAndHeld) {
  UNIMEM_REQUIRE_GPU();
  for (const auto& options : implementations()) {
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    unimem::stream s;
    const std::size_t mib = std::size_t{1} << 20;
    unimem::pool_statistics st = pool.statistics();
    EXPECT_EQ(st.bytes_in_use, 0u);
    EXPECT_EQ(st.allocations, 0u);
    void* small = pool.allocate(1000, s);
    void* large = pool.allocate(mib, s);
    st = pool.statistics();
    EXPECT_EQ(st.bytes_in_use, 1000 + mib);
    EXPECT_EQ(st.peak_bytes_in_use, 1000 + mib);
    EXPECT_EQ(st.allocations, 2u);
    EXPECT_GE(st.bytes_held, 1024 + mib);
    if (!pool.uses_runtime_pool()) EXPECT_EQ(st.bytes_held, 1024 + mib);  // the size classes
    pool.deallocate(small, 1000, s);
    st = pool.statistics();
    EXPECT_EQ(st.bytes_in_use, mib);
    EXPECT_EQ(st.peak_bytes_in_use, 1000 + mib);
    EXPECT_EQ(st.allocations, 1u);
    if (!pool.uses_runtime_pool()) EXPECT_EQ(st.bytes_held, 1024 + mib) << "kept for reuse";
    pool.reset_peak();
    EXPECT_EQ(pool.statistics().peak_bytes_in_use, mib);
    s.synchronize();
    pool.trim_to(0);
    st = pool.statistics();
    EXPECT_GE(st.bytes_held, mib) << "memory in use stays";
    if (!pool.uses_runtime_pool()) EXPECT_EQ(st.bytes_held, mib);
    pool.deallocate(large, mib, s);
    s.synchronize();
    pool.trim_to(0);
    st = pool.statistics();
    EXPECT_EQ(st.bytes_in_use, 0u);
    EXPECT_EQ(st.allocations, 0u);
    if (!pool.uses_runtime_pool()) EXPECT_EQ(st.bytes_held, 0u);
    std::printf("%s: after trim_to(0), %zu bytes held\n", pool.implementation_name(),
                st.bytes_held);
  }
  // The release threshold of the caching allocator: above it, completed frees go back to the
  // runtime when new memory is needed, and at trim().
  unimem::managed_pool_options caching;
  caching.use_runtime_pool = false;
  caching.release_threshold = 0;
  managed_pool pool(caching);
  EXPECT_EQ(pool.release_threshold(), 0u);
  unimem::stream s;
  const std::size_t mib = std::size_t{1} << 20;
  void* a = pool.allocate(mib, s);
  pool.deallocate(a, mib, s);
  s.synchronize();
  EXPECT_EQ(pool.statistics().bytes_held, mib);
  void* b = pool.allocate(2 * mib, s);  // another class: new memory, the 1 MiB goes back
  EXPECT_EQ(pool.statistics().bytes_held, 2 * mib);
  pool.deallocate(b, 2 * mib, s);
  pool.set_release_threshold(mib);
  EXPECT_EQ(pool.release_threshold(), mib);
  pool.trim();  // waits for the free on s
  EXPECT_EQ(pool.statistics().bytes_held, 0u);
}

TEST(ManagedPoolGpu, PmrResourceServesContainersReadyForTheHost) {
  UNIMEM_REQUIRE_GPU();
  for (const auto& options : implementations()) {
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    unimem::stream s;
    unimem::managed_pool_resource resource(pool, s);
    EXPECT_EQ(&resource.pool(), &pool);
    EXPECT_EQ(resource.stream(), s.ref());
    unimem::managed_buffer<unsigned long long> sum(1);
    for (int round = 0; round < 3; ++round) {
      std::pmr::vector<int> v(&resource);
      for (int i = 0; i < 20000; ++i) v.push_back(i % 100);  // grows: allocate, copy, free
      unimem::launch(pool_sum, unimem::grid_for(v.size()).on(s), v.data(), v.size(), sum.data());
      s.synchronize();
    }  // each vector freed in the order of s, its blocks reused by the next round at once
    EXPECT_EQ(sum[0], 3ull * 200ull * 4950ull);
    void* aligned = resource.allocate(10000, 4096);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 4096, 0u);
    static_cast<char*>(aligned)[9999] = 1;  // ready for the host
    resource.deallocate(aligned, 10000, 4096);
    EXPECT_TRUE(resource.is_equal(resource));
    unimem::managed_pool_resource other(pool, s);
    EXPECT_FALSE(resource.is_equal(other));
    unimem::managed_memory_resource plain;
    EXPECT_FALSE(resource.is_equal(plain));
    s.synchronize();
    EXPECT_EQ(pool.statistics().bytes_in_use, 0u);
  }
}

// Eight threads, three streams each, allocating, using and freeing buffers of several sizes
// from one pool; every buffer is written on its stream and checked there by a kernel (a block
// handed to another stream too early shows as a wrong element), and one in eight crosses to a
// second stream through an event before it is checked and freed there.
TEST(ManagedPoolGpu, EightThreadsManyStreamsAllocateUseAndFree) {
  UNIMEM_REQUIRE_GPU();
  for (const auto& options : implementations()) {
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    constexpr int threads = 8, streams = 3, rounds = 400;
    unimem::managed_buffer<unsigned> wrong(threads);
    std::atomic<int> failures{0};
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t) {
      team.emplace_back([&, t] {
        try {
          std::vector<unimem::stream> own;
          for (int k = 0; k < streams; ++k) {
            own.emplace_back(unimem::stream::blocking_mode::non_blocking);
          }
          unimem::event crossed(unimem::event::timing_mode::disable_timing);
          const std::size_t sizes[] = {1024, 3000, 16384, 1 << 18, 700000};
          for (int r = 0; r < rounds; ++r) {
            const std::size_t n = sizes[(r * 7 + t) % 5];
            const unimem::stream& s = own[static_cast<std::size_t>(r % streams)];
            const int base = t * 100000 + r;
            pool_buffer<int> b(n, pool, s);
            unimem::launch(pool_write, unimem::grid_for(n).on(s), b, n, base);
            if (r % 8 == 3) {  // used on another stream after an event, freed there
              const unimem::stream& u = own[static_cast<std::size_t>((r + 1) % streams)];
              crossed.record(s);
              u.wait(crossed);
              b.set_stream(u);
              unimem::launch(pool_check, unimem::grid_for(n).on(u), b, n, base,
                             wrong.data() + t);
            } else {
              unimem::launch(pool_check, unimem::grid_for(n).on(s), b, n, base,
                             wrong.data() + t);
            }
          }
          for (const unimem::stream& s : own) s.synchronize();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "thread %d: %s\n", t, e.what());
          ++failures;
        }
      });
    }
    for (std::thread& th : team) th.join();
    EXPECT_EQ(failures.load(), 0);
    for (int t = 0; t < threads; ++t) EXPECT_EQ(wrong[static_cast<std::size_t>(t)], 0u) << t;
    const unimem::pool_statistics st = pool.statistics();
    EXPECT_EQ(st.bytes_in_use, 0u);
    EXPECT_EQ(st.allocations, 0u);
    EXPECT_GT(st.peak_bytes_in_use, 0u);
    pool.trim_to(0);
    if (!pool.uses_runtime_pool()) EXPECT_EQ(pool.statistics().bytes_held, 0u);
    std::printf("%s: %d threads x %d streams x %d rounds, peak in use %zu bytes, held %zu\n",
                pool.implementation_name(), threads, streams, rounds, st.peak_bytes_in_use,
                st.bytes_held);
  }
}

// The stress test of test_pool_fake_runtime.cpp (PoolStress.*) on the GPU, without injected
// failures (the fault sweep fails each call in turn): four threads, each with two streams, run
// mixed operations on one pool: allocate (a kernel writes the owner's pattern) and
// allocate_for_host (the host writes it), pool_buffer, frees on the allocating stream, on
// another stream after an event, and, with two GPUs, on the default stream with the other GPU
// current; trim, statistics, threshold changes. Before each free a kernel checks the pattern:
// memory handed to another owner before its last use ended shows as a wrong element. Every other
// round the pool ends half-way while the threads still hold buffers, which they go on checking
// and freeing; in the others everything is freed and the statistics are back to 0. On the GPU
// machine it also runs under compute-sanitizer (racecheck, memcheck): see docs/reliability.md.
TEST(ManagedPoolGpu, StressThreadsStreamsDevicesAndPoolsEndingUnderLoad) {
  UNIMEM_REQUIRE_GPU();
  const bool two_gpus = unimem::device_count() >= 2;
  const int home = unimem::device::current().device_id();
  const int other_gpu = two_gpus ? (home == 0 ? 1 : 0) : home;
  // Where the host may not touch managed memory while kernels run, it writes none.
  const bool host_writes = unimem::device::current().concurrent_managed_access();
  for (const auto& options : implementations()) {
    constexpr int threads = 4, rounds = 4, operations = 300;
    unimem::managed_buffer<unsigned> wrong(threads);
    std::atomic<int> failures{0};
    bool runtime = false;
    for (int round = 0; round < rounds; ++round) {
      const bool end_under_load = round % 2 == 0;
      unimem::managed_pool_options o = options;
      o.release_threshold = round % 3 == 0 ? std::size_t{1} << 20 : o.release_threshold;
      std::optional<managed_pool> pool(std::in_place, o);
      runtime = pool->uses_runtime_pool();
      // Where a run ends in a crash or a hang, the last of these lines says where (stderr is
      // unbuffered; the GPU run of 2026-12-05 lost the stdout that would have said it).
      std::fprintf(stderr, "stress: %s, round %d of %d%s\n", pool->implementation_name(), round + 1,
                   rounds, end_under_load ? ", the pool ends under load" : "");
      std::atomic<int> arrived{0};
      std::atomic<bool> go_on{false};
      std::atomic<long> below{0};
      std::vector<std::thread> team;
      for (int t = 0; t < threads; ++t) {
        team.emplace_back([&, t] {
          bool counted = false;  // arrived at the half-way mark (a failure before it counts too)
          try {
            unimem::device_guard on_home(home);
            std::uint64_t state = static_cast<std::uint64_t>(round * 131 + t + 1) * 0x9e3779b97f4a7c15ull;
            auto next = [&state](std::size_t below_n) {
              state ^= state << 13;
              state ^= state >> 7;
              state ^= state << 17;
              return static_cast<std::size_t>(state % below_n);
            };
            std::vector<unimem::stream> mine;
            for (int k = 0; k < 2; ++k) mine.emplace_back(unimem::stream::blocking_mode::non_blocking);
            unimem::event crossed(unimem::event::timing_mode::disable_timing);
            unsigned* bad = wrong.data() + t;
            struct raw_allocation {
              int* p;
              std::size_t n;
              int base;
              unimem::stream_ref s;
            };
            struct buffer {
              pool_buffer<int> b;
              int base;
            };
            std::vector<raw_allocation> raw;
            std::vector<buffer> buffers;
            // Checks the pattern on s, then frees there, on another stream after an event, or
            // on the default stream with the other GPU current.
            auto check_and_free = [&](int* p, std::size_t n, int base, unimem::stream_ref s,
                                      auto&& release) {
              unimem::launch(pool_check, unimem::grid_for(n).on(s), p, n, base, bad);
              const unimem::stream_ref other = mine[next(2)];
              if (s.is_default() && two_gpus && next(2) == 0) {
                unimem::device_guard away(other_gpu);
                release(unimem::stream_ref{});
              } else if (next(2) == 0) {
                crossed.synchronize();  // recorded again only once done (HIP's rule)
                crossed.record(s);
                other.wait(crossed);
                release(other);
              } else {
                release(s);
              }
            };
            bool ended = false;
            for (int i = 0; i < operations; ++i) {
              if (i == operations / 2) {
                ++arrived;
                counted = true;
                while (!go_on.load()) std::this_thread::yield();
                ended = end_under_load;
              }
              const std::size_t what = next(100);
              const unimem::stream_ref s = next(4) == 0 ? unimem::stream_ref{} : mine[next(2)].ref();
              const std::size_t n = 1 + next(3) * 20000 + next(20000);
              const int base = static_cast<int>(next(1000000));
              if (!ended && what < 20) {
                const bool host = host_writes && what < 6;
                int* p = static_cast<int*>(host ? pool->allocate_for_host(n * sizeof(int), s)
                                                : pool->allocate(n * sizeof(int), s));
                if (host) {
                  for (std::size_t k = 0; k < n; ++k) p[k] = base ^ static_cast<int>(k);
                } else {
                  unimem::launch(pool_write, unimem::grid_for(n).on(s), p, n, base);
                }
                raw.push_back({p, n, base, s});
              } else if (!ended && what < 40) {
                pool_buffer<int> b(n, *pool, s);
                unimem::launch(pool_write, unimem::grid_for(n).on(s), b.data(), n, base);
                buffers.push_back({std::move(b), base});
              } else if (!ended && what < 55 && !raw.empty()) {
                const std::size_t k = next(raw.size());
                const raw_allocation r = raw[k];
                raw.erase(raw.begin() + static_cast<std::ptrdiff_t>(k));
                check_and_free(r.p, r.n, r.base, r.s, [&](unimem::stream_ref on) {
                  pool->deallocate(r.p, r.n * sizeof(int), on);
                });
              } else if (what < 75 && !buffers.empty()) {
                const std::size_t k = next(buffers.size());
                buffer x = std::move(buffers[k]);
                buffers.erase(buffers.begin() + static_cast<std::ptrdiff_t>(k));
                check_and_free(x.b.data(), x.b.size(), x.base, x.b.stream(),
                               [&](unimem::stream_ref on) {
                                 x.b.set_stream(on);
                                 pool_buffer<int> gone(std::move(x.b));
                               });
              } else if (!ended && what < 82) {
                if (next(2) == 0) {
                  pool->trim();
                } else {
                  pool->trim_to(next(4) << 20);
                }
              } else if (!ended && what < 92) {
                const unimem::pool_statistics st = pool->statistics();
                if (st.bytes_held < st.bytes_in_use) ++below;
              } else if (!ended) {
                const std::size_t thresholds[] = {0, std::size_t{1} << 20, std::size_t{64} << 20,
                                                  std::numeric_limits<std::size_t>::max()};
                pool->set_release_threshold(thresholds[next(4)]);
              }
            }
            for (buffer& x : buffers) {
              unimem::launch(pool_check, unimem::grid_for(x.b.size()).on(x.b.stream()), x.b.data(),
                             x.b.size(), x.base, bad);
            }
            buffers.clear();
            if (!ended) {
              for (const raw_allocation& r : raw) {
                unimem::launch(pool_check, unimem::grid_for(r.n).on(r.s), r.p, r.n, r.base, bad);
                pool->deallocate(r.p, r.n * sizeof(int), r.s);
              }
            }  // else left to the pool's end, never used again
            for (unimem::stream& st : mine) st.synchronize();
            unimem::synchronize();  // the default stream's work
          } catch (const std::exception& e) {
            std::fprintf(stderr, "round %d, thread %d: %s\n", round, t, e.what());
            ++failures;
            if (!counted) ++arrived;  // the main thread waits for every thread to arrive
          }
        });
      }
      while (arrived.load() < threads) std::this_thread::yield();
      if (end_under_load) pool.reset();
      go_on = true;
      for (std::thread& th : team) th.join();
      EXPECT_EQ(below.load(), 0) << "statistics with less held than in use";
      if (pool) {
        const unimem::pool_statistics st = pool->statistics();
        EXPECT_EQ(st.bytes_in_use, 0u);
        EXPECT_EQ(st.allocations, 0u);
        pool->trim();
        if (!runtime) EXPECT_EQ(pool->statistics().bytes_held, 0u);
        pool.reset();
      }
    }
    unimem::synchronize();
    EXPECT_EQ(failures.load(), 0);
    for (int t = 0; t < threads; ++t) EXPECT_EQ(wrong[static_cast<std::size_t>(t)], 0u) << t;
    std::printf("%s: %d rounds x %d threads x %d operations%s, no element wrong\n",
                runtime ? "runtime pool" : "caching allocator", rounds, threads, operations,
                two_gpus ? ", frees from the other GPU" : "");
  }
}

TEST(ManagedPoolGpu, ABufferMayOutliveItsPool) {
  UNIMEM_REQUIRE_GPU();
  for (const auto& options : implementations()) {
    unimem::stream s;
    std::optional<pool_buffer<int>> b;
    bool runtime = false;
    {
      managed_pool pool(options);
      runtime = pool.uses_runtime_pool();
      b.emplace(5000, pool, s);
      unimem::launch(pool_write, unimem::grid_for(5000).on(s), *b, std::size_t{5000}, 3);
      pool_buffer<int> cached(5000, pool, s);  // freed into the pool before it closes
    }
    SCOPED_TRACE(runtime ? "runtime pool" : "caching allocator");
    s.synchronize();
    EXPECT_TRUE(pattern_is(*b, 3));
    b.reset();  // the last allocation: the pool's state goes with it
    s.synchronize();
  }
}

// The pool's state is owned by the pool and by each buffer from it: buffers (moved, swapped,
// empty) that outlive the pool keep their memory valid and give it back in any order.
TEST(ManagedPoolGpu, BuffersOutliveTheirPoolInAnyOrder) {
  UNIMEM_REQUIRE_GPU();
  for (const auto& options : implementations()) {
    unimem::stream s;
    std::optional<pool_buffer<int>> a, b, c;
    {
      managed_pool pool(options);
      a.emplace(3000, pool, s);
      b.emplace(7000, pool, s);
      c.emplace(0, pool, s);
      unimem::launch(pool_write, unimem::grid_for(3000).on(s), *a, std::size_t{3000}, 1);
      unimem::launch(pool_write, unimem::grid_for(7000).on(s), *b, std::size_t{7000}, 2);
      managed_pool moved(std::move(pool));  // the pool's state moves with it
      EXPECT_EQ(moved.statistics().allocations, 2u);
    }
    s.synchronize();
    pool_buffer<int> d(std::move(*a));
    a.reset();
    swap(d, *b);  // d holds the 7000, b the 3000
    EXPECT_TRUE(pattern_is(d, 2));
    EXPECT_TRUE(pattern_is(*b, 1));
    c.reset();
    d = pool_buffer<int>();  // gives the 7000 back
    b.reset();               // the last allocation
    s.synchronize();
  }
}

TEST(ManagedPoolGpu, AMovedFromPoolRefusesToAllocate) {
  UNIMEM_REQUIRE_GPU();
  managed_pool a;
  managed_pool b(std::move(a));
  EXPECT_FALSE(static_cast<bool>(a));
  EXPECT_TRUE(static_cast<bool>(b));
  EXPECT_THROW((void)a.allocate(64), unimem::invalid_argument);
  EXPECT_THROW((void)a.allocate_for_host(64), unimem::invalid_argument);
  EXPECT_THROW((void)a.statistics(), unimem::invalid_argument);
  EXPECT_THROW((void)pool_buffer<int>(10, a), unimem::invalid_argument);
  a.deallocate(nullptr, 0);  // never throws
  void* p = b.allocate(64);
  a = std::move(b);  // a owns the pool now, b is empty
  a.deallocate(p, 64);
  EXPECT_EQ(a.statistics().allocations, 0u);
  unimem::synchronize();
}

// A small model test: random sequences of pool buffers on four streams (allocated, written,
// updated, copied from one another, handed to another stream through an event, freed, checked)
// against host vectors. Every buffer's work runs on its current stream; using it on another
// stream first makes that stream wait for an event recorded on the current one, which then
// becomes the buffer's stream (its free is ordered there). Reuse of a block before its last
// user is done would show as a wrong element at a check.
TEST(ManagedPoolGpu, RandomSequencesMatchAHostModel) {
  UNIMEM_REQUIRE_GPU();
  struct slot {
    std::optional<pool_buffer<int>> buffer;
    std::vector<int> model;
    int stream = 0;
  };
  for (const auto& options : implementations()) {
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      std::uint64_t state = seed * 0x9e3779b97f4a7c15ull;
      auto next = [&state](std::uint32_t below) {  // splitmix64
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return static_cast<std::uint32_t>((z ^ (z >> 31)) % below);
      };
      std::vector<unimem::stream> streams;
      std::vector<unimem::event> events;
      for (int k = 0; k < 4; ++k) {
        streams.emplace_back(unimem::stream::blocking_mode::non_blocking);
        events.emplace_back(unimem::event::timing_mode::disable_timing);
      }
      std::vector<slot> slots(6);
      auto move_to = [&](slot& x, int k) {  // x's work so far is ordered before k's next work
        if (x.stream == k) return;
        events[static_cast<std::size_t>(x.stream)].record(streams[static_cast<std::size_t>(x.stream)]);
        streams[static_cast<std::size_t>(k)].wait(events[static_cast<std::size_t>(x.stream)]);
        x.stream = k;
        x.buffer->set_stream(streams[static_cast<std::size_t>(k)]);
      };
      int checks = 0;
      for (int op = 0; op < 1500; ++op) {
        slot& x = slots[next(6)];
        const int k = static_cast<int>(next(4));
        const unimem::stream& s = streams[static_cast<std::size_t>(k)];
        const std::uint32_t what = next(100);
        if (!x.buffer) {  // allocate and write
          const std::size_t n = 1 + next(3) * 20000 + next(20000);
          x.buffer.emplace(n, pool, s);
          x.stream = k;
          const int base = static_cast<int>(next(1000000));
          unimem::launch(pool_write, unimem::grid_for(n).on(s), *x.buffer, n, base);
          x.model.resize(n);
          for (std::size_t i = 0; i < n; ++i) x.model[i] = base ^ static_cast<int>(i);
        } else if (what < 15) {  // free, in the order of its stream
          x.buffer.reset();
          x.model.clear();
        } else if (what < 45) {  // update on a (maybe other) stream
          move_to(x, k);
          const int add = static_cast<int>(next(1000));
          unimem::launch(pool_update, unimem::grid_for(x.model.size()).on(s), *x.buffer,
                         x.model.size(), add);
          for (int& v : x.model) {
            v = static_cast<int>(static_cast<unsigned>(v) * 3u + static_cast<unsigned>(add));
          }
        } else if (what < 75) {  // copy from another live buffer, on x's stream
          slot& y = slots[next(6)];
          if (&y == &x || !y.buffer) continue;
          move_to(x, k);
          move_to(y, k);
          const std::size_t n = std::min(x.model.size(), y.model.size());
          unimem::launch(pool_copy, unimem::grid_for(n).on(s), x.buffer->data(),
                         y.buffer->data(), n);
          std::copy(y.model.begin(), y.model.begin() + static_cast<std::ptrdiff_t>(n),
                    x.model.begin());
        } else if (what < 85) {  // check on the host (every stream waited for: the host may
                                 // not touch managed memory while kernels run on some GPUs)
          for (unimem::stream& t : streams) t.synchronize();
          ++checks;
          bool same = true;
          for (std::size_t i = 0; i < x.model.size() && same; ++i) {
            same = (*x.buffer)[i] == x.model[i];
          }
          ASSERT_TRUE(same) << "seed " << seed << ", operation " << op;
        }
      }
      for (unimem::stream& s : streams) s.synchronize();
      for (slot& x : slots) {
        if (!x.buffer) continue;
        ++checks;
        bool same = true;
        for (std::size_t i = 0; i < x.model.size() && same; ++i) same = (*x.buffer)[i] == x.model[i];
        EXPECT_TRUE(same) << "seed " << seed << ", at the end";
        x.buffer.reset();
      }
      for (unimem::stream& s : streams) s.synchronize();
      EXPECT_GT(checks, 0);
    }
    EXPECT_EQ(pool.statistics().allocations, 0u);
  }
}


// ---- the GPU budget (issue 51): blocks past it on the host ----

/// A device allocation that leaves about `leave` bytes of device 0 free (none where less is
/// free already): the GPU then has less room than the data.
struct pool_ballast {
  explicit pool_ballast(std::size_t leave) {
    const std::size_t free = unimem::device(0).free_memory();
    if (free > leave) hold = unimem::device_buffer<char>(free - leave, unimem::uninitialized);
  }
  unimem::device_buffer<char> hold;
};

/// Whether the whole buffer carries the budget's advice for the host: preferred location host,
/// accessed by GPU 0.
template <class B>
bool placed_on_host(const B& b) {
  const unimem::optional_location where = unimem::preferred_location(b);
  return where && *where == location::host() &&
         unimem_test::lists(unimem::accessed_by(b), location::device(0));
}

/// Writes base ^ i into every buffer with tagged launches and counts what differs, on the GPU.
unsigned write_and_check(std::vector<pool_buffer<int>>& buffers, int base, unimem::stream& s) {
  unimem::managed_buffer<unsigned> wrong(1, 0u);
  for (pool_buffer<int>& b : buffers) {
    unimem::launch(pool_write, unimem::grid_for(b.size()).on(s), unimem::out(b), b.size(), base);
  }
  for (pool_buffer<int>& b : buffers) {
    unimem::launch(pool_check, unimem::grid_for(b.size()).on(s), unimem::in(b), b.size(), base,
                   wrong.data());
  }
  s.synchronize();
  return wrong[0];
}

// A budget of 64 MiB and six buffers of 16 MiB: four stay ordinary managed memory, the two past
// the budget carry preferred location host and accessed-by the GPU (the runtime says so); tagged
// launches write and read all six, leave the host's where they are (their records say mapped),
// and the statistics count 64 MiB on the GPU's side and 32 MiB on the host.
TEST(ManagedPoolGpu, ABudgetPlacesTheBlocksPastItOnTheHostWhereKernelsUseThem) {
  UNIMEM_REQUIRE_GPU();
  const unimem::memory_regime regime = unimem::device(0).regime();
  const bool budgets = regime != unimem::memory_regime::apu &&
                       regime != unimem::memory_regime::no_migration &&
                       regime != unimem::memory_regime::no_managed_memory;
  const std::size_t mib = std::size_t{1} << 20;
  for (auto options : implementations()) {
    options.gpu_budget = 64 * mib;
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    if (!budgets) {  // nothing migrates: nothing to place
      EXPECT_FALSE(pool.statistics().has_gpu_budget);
      continue;
    }
    unimem::stream s;
    std::vector<pool_buffer<int>> buffers;
    for (int i = 0; i < 6; ++i) buffers.emplace_back(16 * mib / sizeof(int), pool, s);
    unimem::pool_statistics st = pool.statistics();
    EXPECT_TRUE(st.has_gpu_budget);
    EXPECT_EQ(st.gpu_budget, 64 * mib);
    EXPECT_EQ(st.gpu_bytes_in_use(), 64 * mib);
    EXPECT_EQ(st.host_bytes_in_use, 32 * mib);
    EXPECT_GE(st.host_bytes_held, 32 * mib);
    for (int i = 0; i < 6; ++i) {
      SCOPED_TRACE(i);
      if (i < 4) {
        EXPECT_FALSE(unimem::preferred_location(buffers[static_cast<std::size_t>(i)]));
      } else {
        EXPECT_TRUE(placed_on_host(buffers[static_cast<std::size_t>(i)]));
      }
    }
    EXPECT_EQ(write_and_check(buffers, 5, s), 0u);
    for (std::size_t i = 4; i < 6; ++i) {
      EXPECT_TRUE(placed_on_host(buffers[i])) << "a tag with the default intent keeps it there";
      const std::uint64_t w = unimem_detail_placement_record(buffers[i])->stamp();
      EXPECT_TRUE(unimem::detail::placement_stamp::mapped_of(w)) << "its record: mapped";
    }
    EXPECT_TRUE(pattern_is(buffers[5], 5)) << "the host reads what the GPU wrote over the link";
    // Freed and allocated again in the same order: each block in its place again.
    buffers.clear();
    s.synchronize();
    for (int i = 0; i < 6; ++i) buffers.emplace_back(16 * mib / sizeof(int), pool, s);
    EXPECT_EQ(pool.statistics().host_bytes_in_use, 32 * mib);
    EXPECT_TRUE(placed_on_host(buffers[5]));
    EXPECT_EQ(write_and_check(buffers, 9, s), 0u);
    buffers.clear();
    s.synchronize();
    pool.trim();
    st = pool.statistics();
    EXPECT_EQ(st.host_bytes_in_use, 0u);
    EXPECT_EQ(st.host_bytes_held, 0u);
  }
}

// A measured budget at 1.5x: a ballast leaves about 1.25 GiB of the GPU free, a pool measures its
// budget (that, less a margin of 256 MiB) and serves 1.5x the free memory in buffers of 128 MiB,
// which kernels write and check twice: exact, the GPU's side within the budget, the rest (at least
// half the free memory and the margin) on the host.
TEST(ManagedPoolGpu, AMeasuredBudgetServesOneAndAHalfTimesTheGpusFreeMemory) {
  UNIMEM_REQUIRE_GPU();
  if (!unimem::device(0).migrates_on_demand()) GTEST_SKIP() << "device 0 does not migrate pages";
  const std::size_t mib = std::size_t{1} << 20;
  for (auto options : implementations()) {
    pool_ballast ballast(1280 * mib);
    const std::size_t free = unimem::device(0).free_memory();
    options.gpu_budget = unimem::managed_pool_options::gpu_free_memory;
    options.gpu_budget_margin = 256 * mib;
    managed_pool pool(options);
    SCOPED_TRACE(pool.implementation_name());
    const std::size_t budget = pool.statistics().gpu_budget;
    ASSERT_GT(budget, 256 * mib) << "the ballast left too little";
    ASSERT_LT(budget, 1280 * mib);
    unimem::stream s(unimem::stream::blocking_mode::non_blocking);
    std::vector<pool_buffer<int>> buffers;
    const std::size_t each = 128 * mib / sizeof(int);
    while (buffers.size() * 128 * mib < free * 3 / 2) buffers.emplace_back(each, pool, s);
    const unimem::pool_statistics st = pool.statistics();
    // (the runtime's pool counts its bytes in use; what it reserves may be rounded up)
    EXPECT_LE(pool.uses_runtime_pool() ? st.gpu_bytes_in_use() : st.gpu_bytes_held(), budget);
    EXPECT_GE(st.host_bytes_in_use, free / 2);
    std::printf("%s: budget %zu MiB; %zu MiB on the GPU's side, %zu MiB on the host\n",
                pool.implementation_name(), budget / mib, st.gpu_bytes_in_use() / mib,
                st.host_bytes_in_use / mib);
    EXPECT_TRUE(placed_on_host(buffers.back()));
    EXPECT_EQ(write_and_check(buffers, 3, s), 0u);
    EXPECT_EQ(write_and_check(buffers, 11, s), 0u);
    EXPECT_TRUE(pattern_is(buffers.front(), 11));
    EXPECT_TRUE(pattern_is(buffers.back(), 11));
    buffers.clear();
    s.synchronize();
  }
}

}  // namespace
