// The managed pool's GPU budget (issue 51, item 2) over the fake runtime
// (tests/support/fake_pool_runtime.hpp, which keeps each allocation's advice, refuses advice on a
// runtime pool's memory as CUDA 13 does, and reports each device's free memory as the test sets
// it): the allocation that crosses the budget goes to the host and those that fit stay on the
// GPU, the measured budget and its margin, blocks reused in their regime (and one on the host
// taken back to the GPU where there is room), free GPU blocks given back to make room, the
// statistics per regime back to 0, placement stamps, refused advice, threads, and the pool's end.
// Both policies: the caching allocator, and the runtime's pool, whose blocks past the budget come
// from a caching allocator of blocks on the host. Host code only: also built by tsan.host_tests
// (tests/tsan/sources.cmake).
#include "test_support.hpp"

#include "support/fake_pool_runtime.hpp"

#include <unimem/placement/detail/stamp.hpp>
#include <unimem/pool/managed_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace pool_budget_tests {
namespace {

namespace ud = unimem::detail;
namespace ub = unimem::detail::backend;
using fake_gpu::call;
using unimem::managed_pool;
using unimem::managed_pool_options;
using unimem::pool_buffer;
using unimem::pool_statistics;

constexpr std::size_t mib = std::size_t{1} << 20;
using R = fake_gpu::runtime<false>;
using fake_gpu::expect_clean;
using fake_gpu::name_of;
using fake_gpu::policy;
constexpr policy both[] = {policy::caching, policy::runtime};

/// A pool of `kind` on `device` with a GPU budget of `budget` bytes over the fake runtime.
managed_pool make_pool(policy kind, std::size_t budget, int device = 0) {
  return fake_gpu::make_pool(kind, device, fake_gpu::no_limit, budget);
}

/// Whether p carries the budget's advice for the host (preferred location host, accessed by
/// device d), or none at all.
bool on_host(const fake_gpu::session& gpu, const void* p, int d = 0) {
  return gpu->advice_of(p).on_host_for(d);
}
bool ordinary(const fake_gpu::session& gpu, const void* p) { return gpu->advice_of(p).ordinary(); }

// The allocation that would take the pool's GPU blocks past the budget is placed on the host
// (preferred location host, accessed by the pool's GPU); those that fit stay ordinary managed
// memory, also after the budget was crossed once; the statistics say how many bytes are where.
TEST(PoolBudget, TheAllocationThatCrossesTheBudgetGoesToTheHostAndThoseThatFitStay) {
  for (const policy kind : both) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind, 4 * mib);
    const ub::stream_handle s = gpu->make_stream(0);
    void* a = pool.allocate(2 * mib, s);
    void* b = pool.allocate(1 * mib, s);
    void* c = pool.allocate(2 * mib, s);  // 5 MiB: past the budget
    void* d = pool.allocate(1 * mib, s);  // 4 MiB: exactly the budget, on the GPU
    void* e = pool.allocate(256, s);      // past it again
    for (void* p : {a, b, d}) EXPECT_TRUE(ordinary(gpu, p));
    for (void* p : {c, e}) EXPECT_TRUE(on_host(gpu, p));
    pool_statistics st = pool.statistics();
    EXPECT_TRUE(st.has_gpu_budget);
    EXPECT_EQ(st.gpu_budget, 4 * mib);
    EXPECT_EQ(st.bytes_in_use, 6 * mib + 256);
    EXPECT_EQ(st.host_bytes_in_use, 2 * mib + 256);
    EXPECT_EQ(st.gpu_bytes_in_use(), 4 * mib);
    EXPECT_EQ(st.host_bytes_held, 2 * mib + 256);
    EXPECT_EQ(st.gpu_bytes_held(), 4 * mib);
    EXPECT_EQ(st.allocations, 5u);
    for (void* p : {a, b, c, d, e}) pool.deallocate(p, 0, s);
    gpu->drain();
  }
}

// No budget (the default): no advice at all, and the statistics say so.
TEST(PoolBudget, WithoutABudgetNothingIsAdvised) {
  for (const policy kind : both) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind, ud::no_gpu_budget);
    const ub::stream_handle s = gpu->make_stream(0);
    std::vector<void*> all;
    for (int i = 0; i < 8; ++i) all.push_back(pool.allocate(4 * mib, s));
    const pool_statistics st = pool.statistics();
    EXPECT_FALSE(st.has_gpu_budget);
    EXPECT_EQ(st.gpu_budget, 0u);
    EXPECT_EQ(st.host_bytes_in_use, 0u);
    EXPECT_EQ(st.host_bytes_held, 0u);
    EXPECT_EQ(gpu->calls(call::advise), 0);
    for (void* p : all) pool.deallocate(p, 0, s);
  }
}

// The measured budget: the pool's device's free memory, read once, less the margin (by default
// default_reserve() of its memory); an explicit one is taken as given. The margin keeps an
// allocation that the free memory alone would have taken off the GPU.
TEST(PoolBudget, AMeasuredBudgetIsThePoolsGpusFreeMemoryLessTheMargin) {
  fake_gpu::session gpu;
  gpu->set_memory(0, 1000 * mib, 4096 * mib);
  gpu->set_memory(1, 10 * mib, std::size_t{64} << 30);
  const auto where = unimem::call_site::current();
  constexpr std::size_t measure = managed_pool_options::gpu_free_memory;
  EXPECT_EQ(ud::measured_gpu_budget<R>(1, measure, 3 * mib, where), 7 * mib);
  EXPECT_EQ(fake_gpu::world::current_device(), 0) << "the device current before, again";
  EXPECT_EQ(ud::measured_gpu_budget<R>(1, measure, 11 * mib, where), 0u) << "nothing to spare";
  EXPECT_EQ(ud::measured_gpu_budget<R>(0, measure, managed_pool_options::default_margin, where),
            1000 * mib - unimem::default_reserve(4096 * mib));
  EXPECT_EQ(ud::measured_gpu_budget<R>(1, measure, managed_pool_options::default_margin, where),
            0u) << "1/64 of 64 GiB is more than 10 MiB";
  EXPECT_EQ(ud::measured_gpu_budget<R>(0, 5 * mib, 3 * mib, where), 5 * mib);
  EXPECT_EQ(ud::measured_gpu_budget<R>(0, 0, 3 * mib, where), ud::no_gpu_budget);
  gpu->fail_next(call::mem_get_info);
  EXPECT_THROW((void)ud::measured_gpu_budget<R>(1, measure, 0, where), unimem::error);
  EXPECT_EQ(fake_gpu::world::current_device(), 0);

  // A pool on GPU 1 with 10 MiB free and a margin of 3 MiB: 4 MiB fit, 4 more do not (they
  // would without the margin).
  for (const policy kind : both) {
    SCOPED_TRACE(name_of(kind));
    managed_pool pool = make_pool(kind, ud::measured_gpu_budget<R>(1, measure, 3 * mib, where), 1);
    const ub::stream_handle s = gpu->make_stream(1);
    void* a = pool.allocate(4 * mib, s);
    void* b = pool.allocate(4 * mib, s);
    EXPECT_TRUE(ordinary(gpu, a));
    EXPECT_TRUE(on_host(gpu, b, 1)) << "accessed by the pool's GPU, 1";
    EXPECT_EQ(pool.statistics().gpu_budget, 7 * mib);
    pool.deallocate(a, 0, s);
    pool.deallocate(b, 0, s);
    gpu->drain();
  }
}

// Blocks keep their regime while listed: an allocation takes a free block on the GPU before one
// on the host, a block on the host is handed out again as such while the budget has no room, and
// goes back to the GPU (its advice withdrawn) once it has.
TEST(PoolBudget, TheCachingAllocatorReusesBlocksInTheirRegime) {
  fake_gpu::session gpu;
  managed_pool pool = make_pool(policy::caching, 2 * mib);
  const ub::stream_handle s = gpu->make_stream(0);
  void* a = pool.allocate(2 * mib, s);
  void* b = pool.allocate(2 * mib, s);
  ASSERT_TRUE(ordinary(gpu, a));
  ASSERT_TRUE(on_host(gpu, b));
  pool.deallocate(b, 0, s);
  void* again = pool.allocate(2 * mib, s);  // a still in use: no room
  EXPECT_EQ(again, b);
  EXPECT_TRUE(on_host(gpu, again));
  EXPECT_EQ(pool.statistics().host_bytes_in_use, 2 * mib);
  pool.deallocate(again, 0, s);
  pool.deallocate(a, 0, s);
  void* first = pool.allocate(2 * mib, s);  // both listed: the GPU's first
  EXPECT_EQ(first, a);
  EXPECT_TRUE(ordinary(gpu, first));
  void* second = pool.allocate(2 * mib, s);
  EXPECT_EQ(second, b);
  EXPECT_TRUE(on_host(gpu, second));
  pool.deallocate(first, 0, s);
  pool.deallocate(second, 0, s);
  gpu->settle();
  pool.trim_to(2 * mib);  // the smaller classes first, the GPU's before the host's: a goes
  pool_statistics st = pool.statistics();
  EXPECT_EQ(st.bytes_held, 2 * mib);
  EXPECT_EQ(st.host_bytes_held, 2 * mib);
  void* back = pool.allocate(2 * mib, s);  // the budget has room: b back on the GPU
  EXPECT_EQ(back, b);
  EXPECT_TRUE(ordinary(gpu, back));
  st = pool.statistics();
  EXPECT_EQ(st.host_bytes_held, 0u);
  EXPECT_EQ(st.host_bytes_in_use, 0u);
  EXPECT_EQ(st.gpu_bytes_held(), 2 * mib);
  void* past = pool.allocate(2 * mib, s);
  EXPECT_TRUE(on_host(gpu, past)) << "b counts against the budget again";
  pool.deallocate(back, 0, s);
  pool.deallocate(past, 0, s);
}

// The runtime's pool counts the bytes in use from it: one freed makes room for the next, which
// comes from the runtime's pool again, while the blocks on the host are reused by the host's pool.
TEST(PoolBudget, TheRuntimesPoolPlacesEachAllocationByTheBytesInUse) {
  fake_gpu::session gpu;
  managed_pool pool = make_pool(policy::runtime, 2 * mib);
  const ub::stream_handle s = gpu->make_stream(0);
  void* a = pool.allocate(2 * mib, s);
  void* b = pool.allocate(2 * mib, s);
  ASSERT_TRUE(ordinary(gpu, a));
  ASSERT_TRUE(on_host(gpu, b));
  pool.deallocate(a, 0, s);
  void* c = pool.allocate(2 * mib, s);  // room again: the runtime's pool
  EXPECT_TRUE(ordinary(gpu, c));
  pool.deallocate(b, 0, s);
  void* d = pool.allocate(2 * mib, s);  // c in use: the host's pool, its block again
  EXPECT_EQ(d, b);
  EXPECT_TRUE(on_host(gpu, d));
  pool.deallocate(c, 0, s);
  pool.deallocate(d, 0, s);
  gpu->settle();
  pool.trim();
  EXPECT_EQ(pool.statistics().bytes_held, 0u);
  EXPECT_EQ(pool.statistics().host_bytes_held, 0u);
}

// A new block past the budget first makes room by giving back free blocks on the GPU (the smaller
// classes first; frees still queued waited for, as the runtime's free waits for the device); only
// where those are too few does it go on the host.
TEST(PoolBudget, FreeGpuBlocksGoBackToMakeRoomBeforeANewBlockGoesToTheHost) {
  fake_gpu::session gpu;
  managed_pool pool = make_pool(policy::caching, 4 * mib);
  const ub::stream_handle s = gpu->make_stream(0), t = gpu->make_stream(0);
  std::vector<void*> small;
  for (int i = 0; i < 4; ++i) small.push_back(pool.allocate(1 * mib, s));
  for (void* p : small) pool.deallocate(p, 0, s);
  gpu->settle();
  void* big = pool.allocate(2 * mib, t);
  EXPECT_TRUE(ordinary(gpu, big)) << "two free 1 MiB blocks went back";
  pool_statistics st = pool.statistics();
  EXPECT_EQ(st.bytes_held, 4 * mib);
  EXPECT_EQ(st.host_bytes_held, 0u);
  // The two 1 MiB blocks left, their frees queued behind a busy stream: waited for.
  const fake_gpu::gate_ptr busy = gpu->hold(s);
  void* x = pool.allocate(1 * mib, s);
  void* y = pool.allocate(1 * mib, s);
  gpu->launch(s, x, 64, gpu->own(x));
  pool.deallocate(x, 0, s);
  pool.deallocate(y, 0, s);
  std::atomic<bool> returned{false};
  void* other = nullptr;
  std::thread allocating([&] {
    other = pool.allocate(2 * mib, t);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "a block given back while its free was still queued";
  gpu->open(busy);
  allocating.join();
  EXPECT_TRUE(ordinary(gpu, other));
  EXPECT_EQ(pool.statistics().bytes_held, 4 * mib);
  // Too few to give back (2 MiB free, 4 needed): on the host, nothing given back.
  pool.deallocate(other, 0, t);
  void* more = pool.allocate(2 * mib, t);  // the block `other` had
  EXPECT_EQ(more, other);
  void* huge = pool.allocate(4 * mib, t);
  EXPECT_TRUE(on_host(gpu, huge));
  st = pool.statistics();
  EXPECT_EQ(st.gpu_bytes_held(), 4 * mib);
  EXPECT_EQ(st.host_bytes_held, 4 * mib);
  for (void* p : {big, more, huge}) pool.deallocate(p, 0, t);
  gpu->drain();
  EXPECT_EQ(gpu->seen().overlaps, 0);
}

// Everything back: the statistics per regime return to 0, in use and (after trim) held, and the
// pool's end returns every block; pool_buffers and raw allocations, on both sides of the budget.
TEST(PoolBudget, StatisticsPerRegimeGoBackToZero) {
  for (const policy kind : both) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    {
      managed_pool pool = make_pool(kind, 3 * mib);
      const ub::stream_handle s = gpu->make_stream(0);
      std::vector<void*> raw;
      std::vector<pool_buffer<char>> buffers;
      for (int i = 0; i < 6; ++i) {
        raw.push_back(pool.allocate(mib / 2 + 1000 * static_cast<std::size_t>(i), s));
        buffers.emplace_back(mib / 4 * static_cast<std::size_t>(i + 1), pool, s);
        gpu->launch(s, buffers.back().data(), 64, gpu->own(buffers.back().data()));
      }
      pool_statistics st = pool.statistics();
      EXPECT_GT(st.host_bytes_in_use, 0u);
      EXPECT_GT(st.gpu_bytes_in_use(), 0u);
      EXPECT_LE(st.gpu_bytes_in_use(), 3 * mib);
      EXPECT_GE(st.host_bytes_held, st.host_bytes_in_use);
      for (void* p : raw) pool.deallocate(p, 0, s);
      buffers.clear();
      gpu->drain();
      st = pool.statistics();
      EXPECT_EQ(st.bytes_in_use, 0u);
      EXPECT_EQ(st.host_bytes_in_use, 0u);
      EXPECT_EQ(st.allocations, 0u);
      pool.trim();
      st = pool.statistics();
      EXPECT_EQ(st.bytes_held, 0u);
      EXPECT_EQ(st.host_bytes_held, 0u);
      // And the pool's end with blocks on both sides still out: a raw allocation goes with the
      // pool, a buffer when it goes.
      void* left = pool.allocate(4 * mib, s);  // past the budget
      (void)left;
      buffers.emplace_back(4 * mib, pool, s);
      EXPECT_TRUE(on_host(gpu, buffers.back().data()));
      { managed_pool gone(std::move(pool)); }
      buffers.clear();
    }
    expect_clean(gpu);
  }
}

// A placement record never says a block on the host was moved to a GPU: the next owner of such a
// block receives its last owner's stamp only where that says mapped (as the block is), and a
// block taken back to the GPU receives none.
TEST(PoolBudget, AHostBlocksRecordNeverSaysItWasMovedToTheGpu) {
  using stamp = unimem::detail::placement_stamp;
  const std::uint64_t moved = stamp::make(0, false, 5), mapped = stamp::make(0, true, 5);
  for (const policy kind : both) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind, 4 * mib);
    const ub::stream_handle s = gpu->make_stream(0);
    void* on_gpu = pool.allocate(4 * mib, s);  // the budget, all of it
    void* first = nullptr;
    {
      pool_buffer<char> a(1000, pool, s);
      first = a.data();
      ASSERT_TRUE(on_host(gpu, first));
      unimem_detail_placement_record(a)->set(moved);  // as a prefetch to GPU 0 would leave it
    }
    {
      pool_buffer<char> b(1000, pool, s);
      ASSERT_EQ(static_cast<void*>(b.data()), first);
      EXPECT_EQ(unimem_detail_placement_record(b)->stamp(), 0u) << "the block is on the host";
      unimem_detail_placement_record(b)->set(mapped);
    }
    {
      pool_buffer<char> c(1000, pool, s);
      ASSERT_EQ(static_cast<void*>(c.data()), first);
      EXPECT_EQ(unimem_detail_placement_record(c)->stamp(), mapped);
    }
    pool.deallocate(on_gpu, 0, s);
    if (kind == policy::caching) {  // room once the GPU block went back: the block goes back to
      gpu->settle();                // the GPU, its stamp not
      pool.trim_to(1024);
      pool_buffer<char> d(1000, pool, s);
      ASSERT_EQ(static_cast<void*>(d.data()), first);
      EXPECT_TRUE(ordinary(gpu, d.data()));
      EXPECT_EQ(unimem_detail_placement_record(d)->stamp(), 0u);
    }
    gpu->drain();
  }
}

// A refused advice: a new block on the host is given back and the allocation throws, the pool as
// it was (either step of the advice); a block that cannot go back to the GPU stays on the host,
// its advice whole, and is handed out (either step refused).
TEST(PoolBudget, ARefusedAdviceLeavesThePoolAsItWasOrTheBlockOnTheHost) {
  for (const policy kind : both) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind, 1 * mib);
    const ub::stream_handle s = gpu->make_stream(0);
    void* a = pool.allocate(1 * mib, s);
    const long memory = gpu->seen().memory;
    for (const long after : {0L, 1L}) {  // preferred location refused; then accessed-by
      SCOPED_TRACE(after);
      gpu->fail_next(call::advise, 1, after);
      EXPECT_THROW((void)pool.allocate(1 * mib, s), unimem::error);
      const pool_statistics st = pool.statistics();
      EXPECT_EQ(st.bytes_in_use, 1 * mib);
      EXPECT_EQ(st.allocations, 1u);
      EXPECT_EQ(st.host_bytes_in_use, 0u);
      EXPECT_EQ(st.host_bytes_held, 0u);
      EXPECT_EQ(st.bytes_held, 1 * mib);
      EXPECT_EQ(gpu->seen().memory, memory) << "the refused block went back";
    }
    void* b = pool.allocate(1 * mib, s);
    EXPECT_TRUE(on_host(gpu, b));
    EXPECT_EQ(pool.statistics().host_bytes_in_use, 1 * mib);
    if (kind == policy::caching) {  // taking a block back to the GPU, refused
      pool.deallocate(b, 0, s);
      pool.deallocate(a, 0, s);
      gpu->settle();
      pool.trim_to(1 * mib);  // a goes back to the runtime: room for b
      for (const long after : {0L, 1L}) {
        SCOPED_TRACE(after);
        gpu->fail_next(call::advise, 1, after);
        void* c = pool.allocate(1 * mib, s);
        EXPECT_EQ(c, b);
        EXPECT_TRUE(on_host(gpu, c)) << "its advice whole";
        const pool_statistics st = pool.statistics();
        EXPECT_EQ(st.host_bytes_in_use, 1 * mib);
        EXPECT_EQ(st.host_bytes_held, 1 * mib);
        pool.deallocate(c, 0, s);
        gpu->settle();
      }
    } else {
      pool.deallocate(a, 0, s);
      pool.deallocate(b, 0, s);
    }
    gpu->drain();
  }
}

// Threads allocate and free on their own streams, raw and as buffers, while another reads the
// statistics: the GPU's side never exceeds the budget (held, for the caching allocator; in use,
// for the runtime's pool), every allocation carries its regime's advice, and all comes back.
TEST(PoolBudget, ThreadsShareOneBudget) {
  for (const policy kind : both) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    // Four allocations in a row take 1.25 MiB at least (four of the six sizes): each thread
    // crosses the budget on its own, whether or not the threads run at the same time.
    const std::size_t budget = 1 * mib;
    managed_pool pool = make_pool(kind, budget);
    std::atomic<bool> stop{false};
    std::atomic<long> over{0}, wrong_advice{0}, host_seen{0};
    std::thread watch([&] {
      while (!stop.load()) {
        const pool_statistics st = pool.statistics();
        const std::size_t gpu_side =
            kind == policy::caching ? st.gpu_bytes_held() : st.gpu_bytes_in_use();
        if (gpu_side > budget || st.host_bytes_held < st.host_bytes_in_use) ++over;
      }
    });
    std::vector<std::thread> team;
    for (int t = 0; t < 4; ++t) {
      const ub::stream_handle own = gpu->make_stream(0);
      team.emplace_back([&, t, own] {
        std::vector<std::pair<void*, bool>> mine;  // allocation, on the host
        for (int i = 0; i < 300; ++i) {
          const std::size_t bytes = mib / 8 * static_cast<std::size_t>(1 + (i * 7 + t) % 6);
          void* p = pool.allocate(bytes, own);
          gpu->launch(own, p, 64, gpu->own(p));
          const fake_gpu::advice_state a = gpu->advice_of(p);
          if (!a.ordinary() && !a.on_host_for(0)) ++wrong_advice;
          host_seen += !a.ordinary();
          mine.emplace_back(p, !a.ordinary());
          if (mine.size() > 3) {
            pool.deallocate(mine.front().first, 0, own);
            mine.erase(mine.begin());
          }
          if (i % 50 == 0) pool.trim_to(mib);
        }
        for (const auto& m : mine) pool.deallocate(m.first, 0, own);
      });
    }
    for (std::thread& th : team) th.join();
    stop = true;
    watch.join();
    EXPECT_EQ(over.load(), 0) << "the GPU's side past the budget";
    EXPECT_EQ(wrong_advice.load(), 0);
    EXPECT_GT(host_seen.load(), 0) << "the budget was crossed";
    gpu->drain();
    pool_statistics st = pool.statistics();
    EXPECT_EQ(st.bytes_in_use, 0u);
    EXPECT_EQ(st.host_bytes_in_use, 0u);
    pool.trim();
    st = pool.statistics();
    EXPECT_EQ(st.bytes_held, 0u);
    EXPECT_EQ(st.host_bytes_held, 0u);
    { managed_pool gone(std::move(pool)); }
    expect_clean(gpu);
  }
}

}  // namespace
}  // namespace pool_budget_tests
