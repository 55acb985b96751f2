// managed_pool over a fake runtime (tests/support/fake_pool_runtime.hpp; issue 54): the pool's
// policies, templates over a runtime table, given one whose streams are host threads and which
// keeps the programming guide's rules (an event recorded on another device's stream fails, the
// default stream is the current device's, HIP's rule for events recorded again), so that what
// the pool asks of the runtime, and when, is tested without a GPU: the stream order of reuse, the
// device of a default stream, what the pool's end returns, what its statistics say, its
// thread-safety contract, and a stress test with injected failures and pools closed under load.
// Every allocation the test receives is a generation of its memory; work of a generation that
// begins before an earlier generation's work has ended is an overlap, the race a pool must never
// make. Host code only: also built by tsan.host_tests (tests/tsan/sources.cmake).
#include "test_support.hpp"

#include "support/fake_pool_runtime.hpp"

#include <unimem/pool/managed_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace ud = unimem::detail;
namespace ub = unimem::detail::backend;
using fake_gpu::call;
using unimem::managed_pool;
using unimem::pool_buffer;

using fake_gpu::expect_clean;
using fake_gpu::make_pool;
using fake_gpu::make_state;
using fake_gpu::name_of;
using fake_gpu::no_limit;
using fake_gpu::policy;
using fake_gpu::pool_over;

// ---- the defects of issue 54, each a test that failed before its fix ----

// 1. A pool on device 0; a pool_buffer on the default stream, its kernel still queued there, is
// destroyed while device 1 is current. Its free must be ordered on device 0's default stream:
// recorded on device 1's (the current device's), the event's recording fails, and a wait for
// device 1's default stream, idle, said the block was free at once; an allocation on another
// stream of device 0 got it while device 0's kernel had not run yet.
TEST(PoolOverAFakeRuntime, AFreeOnTheDefaultStreamWhileAnotherGpuIsCurrentIsOrderedOnThePoolsGpu) {
  for (const policy kind : {policy::caching, policy::runtime}) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind);
    const ub::stream_handle t = gpu->make_stream(0);
    const fake_gpu::gate_ptr busy = gpu->hold(nullptr);  // device 0's default stream
    void* first = nullptr;
    {
      pool_buffer<int> b(256, pool);  // on the default stream, device 0 current
      first = b.data();
      gpu->launch(nullptr, b.data(), 1024, gpu->own(b.data()));  // behind the gate
      fake_gpu::world::current_device() = 1;
    }  // freed with device 1 current
    fake_gpu::world::current_device() = 0;
    gpu->settle();
    void* q = pool.allocate(1024, t);
    gpu->launch(t, q, 1024, gpu->own(q));
    gpu->settle();
    EXPECT_EQ(gpu->seen().overlaps, 0)
        << (q == first ? "the block went to stream t while device 0's kernel still had it" : "");
    EXPECT_NE(q, first);
    gpu->open(busy);
    gpu->drain();
    pool.deallocate(q, 1024, t);
  }
}

// 2. HIP: free on s, reuse on s at once, free again on s while the first free is still pending.
// HIP leaves recording an event again while its last recording is pending undefined; the fake
// lets the older recording answer (the worst it allows), and another stream then got the block
// as soon as the first free completed, while the second owner's kernel was still queued.
TEST(PoolOverAFakeRuntime, AnEventIsRecordedAgainOnlyOnceItsLastRecordingHasCompletedOnHip) {
  for (const bool hip : {true, false}) {
    SCOPED_TRACE(hip ? "HIP's rules" : "CUDA's rules");
    fake_gpu::session gpu(hip);
    managed_pool pool = hip ? make_pool<true>(policy::caching) : make_pool<false>(policy::caching);
    const ub::stream_handle s = gpu->make_stream(0), t = gpu->make_stream(0);
    const fake_gpu::gate_ptr first_gate = gpu->hold(s);
    void* p = pool.allocate(1000, s);
    gpu->launch(s, p, 1000, gpu->own(p));
    pool.deallocate(p, 1000, s);  // behind the gate: pending
    void* q = pool.allocate(1000, s);
    ASSERT_EQ(q, p) << "a block freed on s is reused on s at once";
    const fake_gpu::gate_ptr second_gate = gpu->hold(s);
    gpu->launch(s, q, 1000, gpu->own(q));
    pool.deallocate(q, 1000, s);  // the first free still pending
    gpu->open(first_gate);
    gpu->settle();  // the first free has completed, the second waits at the second gate
    void* r = pool.allocate(1000, t);
    gpu->launch(t, r, 1000, gpu->own(r));
    gpu->settle();
    const fake_gpu::findings f = gpu->seen();
    EXPECT_EQ(f.rerecords, 0);
    EXPECT_EQ(f.overlaps, 0);
    EXPECT_NE(r, p) << "the block's second free has not completed";
    gpu->open(second_gate);
    gpu->drain();
    pool.deallocate(r, 1000, t);
  }
}

// 3. Nine frees pending on a busy stream a, then allocations on c, each freed on b and its free
// completed: every allocation should find a completed free. Only the first eight frees of a
// class were asked about, all a's: each allocation took new memory (held 9 KiB -> 29 KiB).
TEST(PoolOverAFakeRuntime, CompletedFreesAreFoundBehindAnyNumberOfPendingOnes) {
  fake_gpu::session gpu;
  managed_pool pool = make_pool(policy::caching);
  const ub::stream_handle a = gpu->make_stream(0), b = gpu->make_stream(0),
                          c = gpu->make_stream(0);
  const fake_gpu::gate_ptr busy = gpu->hold(a);
  std::vector<void*> on_a;
  for (int i = 0; i < 9; ++i) on_a.push_back(pool.allocate(1000, a));
  for (void* p : on_a) pool.deallocate(p, 1000, a);
  const std::size_t before = pool.statistics().bytes_held;
  EXPECT_EQ(before, 9 * 1024u);
  for (int round = 0; round < 20; ++round) {
    void* p = pool.allocate(1000, c);
    pool.deallocate(p, 1000, b);
    gpu->settle();  // b's free has completed
  }
  EXPECT_LE(pool.statistics().bytes_held, before + 1024) << "new memory for each allocation";
  gpu->open(busy);
  gpu->drain();
}

// 4. Two threads set the release threshold; the first one's runtime call lands, then the second
// one's, then the first stores its value: the pool said 1 while the runtime held 2.
TEST(PoolOverAFakeRuntime, TheReleaseThresholdIsTheOneTheRuntimeHolds) {
  fake_gpu::session gpu;
  managed_pool pool = make_pool(policy::runtime);
  const fake_gpu::pool_state* held = gpu->last_pool();
  std::atomic<int> landed{0};
  gpu->on_threshold([&landed](std::size_t bytes) {
    ++landed;
    if (bytes != 1) return;
    // The first setter stays in the runtime until the second one's value has landed there too
    // (where the second cannot come in meanwhile, it gives up after a while).
    for (int i = 0; i < 300 && landed.load() < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::thread first([&pool] { pool.set_release_threshold(1); });
  while (landed.load() < 1) std::this_thread::yield();
  std::thread second([&pool] { pool.set_release_threshold(2); });
  first.join();
  second.join();
  EXPECT_EQ(pool.release_threshold(), gpu->threshold_of(held));
  gpu->on_threshold(nullptr);
  std::vector<std::thread> team;
  for (std::size_t t = 0; t < 4; ++t) {
    team.emplace_back([&pool, t] {
      for (std::size_t i = 0; i < 200; ++i) pool.set_release_threshold(t * 1000 + i);
    });
  }
  for (std::thread& th : team) th.join();
  EXPECT_EQ(pool.release_threshold(), gpu->threshold_of(held));
}

// 5. The pool's end returns everything to the runtime but a pool_buffer's memory (the buffer
// gives it back when it goes): memory of allocate() still out leaked with its event, and kept
// the runtime's pool from ever being released. And the runtime's pool is destroyed only once the
// last buffer's memory has gone back into it, never with memory out (the GPU run of 2026-12-05,
// CUDA 13: the stress test that ends pools under load crashed on an H100 and hung on an H200;
// whatever the cause, the pool's end no longer leans on the runtime's rarer paths, such as
// frees into a destroyed pool from any thread).
TEST(PoolOverAFakeRuntime, ThePoolsEndReturnsItsRawAllocationsAndTheRuntimesPool) {
  for (const policy kind : {policy::caching, policy::runtime}) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    const ub::stream_handle s = gpu->make_stream(0);
    std::optional<pool_buffer<int>> buffer;
    {
      managed_pool pool = make_pool(kind);
      void* raw = pool.allocate(5000, s);
      gpu->launch(s, raw, 5000, gpu->own(raw));  // still queued: the end waits for it
      void* back = pool.allocate(300, s);
      pool.deallocate(back, 300, s);
      buffer.emplace(100, pool, s);
      gpu->launch(s, buffer->data(), 400, gpu->own(buffer->data()));
    }
    gpu->collect();
    if (kind == policy::caching) {
      EXPECT_EQ(gpu->seen().memory, 1) << "the buffer's memory only";
    } else {  // the runtime's pool stays while the buffer's memory is out
      EXPECT_EQ(gpu->seen().pools, 1);
      EXPECT_EQ(gpu->calls(call::pool_destroy), 0) << "a buffer's memory is still out";
    }
    gpu->launch(s, buffer->data(), 400, gpu->own(buffer->data()));  // still valid
    buffer.reset();
    if (kind == policy::runtime) {
      EXPECT_EQ(gpu->calls(call::pool_destroy), 1) << "with the last buffer, the state and its pool";
    }
    expect_clean(gpu);
  }
}

// The caching allocator's memory goes back to the runtime after the work queued with it, waited
// for by the pool (a buffer freed after its pool waits for its stream; the end waits for the
// pending frees and, for memory of allocate() still out, for the device), not on cudaFree's
// implicit wait, which the driver's reference says it only "may" do (the GPU run of 2026-12-05:
// the pool's end no longer leans on the runtime's rarer paths, above).
TEST(PoolOverAFakeRuntime, TheCachingAllocatorsEndWaitsForTheWorkBeforeFreeingTheMemory) {
  fake_gpu::session gpu;
  const ub::stream_handle s = gpu->make_stream(0);
  std::optional<pool_buffer<int>> buffer;
  {
    managed_pool pool = make_pool(policy::caching);
    void* raw = pool.allocate(5000, s);  // out at the end: the device is waited for
    gpu->launch(s, raw, 5000, gpu->own(raw));
    void* back = pool.allocate(300, s);  // free, its free pending: its event is waited for
    gpu->launch(s, back, 300, gpu->own(back));
    pool.deallocate(back, 300, s);
    buffer.emplace(100, pool, s);
    const long events = gpu->calls(call::event_synchronize);
    const long devices = gpu->calls(call::device_synchronize);
    { managed_pool ending(std::move(pool)); }
    EXPECT_EQ(gpu->calls(call::device_synchronize), devices + 1) << "for the memory still out";
    EXPECT_EQ(gpu->calls(call::event_synchronize), events + 1) << "for the pending free";
  }
  gpu->launch(s, buffer->data(), 400, gpu->own(buffer->data()));
  const long streams = gpu->calls(call::stream_synchronize);
  buffer.reset();  // after its pool: its stream is waited for, then the memory goes
  EXPECT_EQ(gpu->calls(call::stream_synchronize), streams + 1);
  expect_clean(gpu);
}

// Only the runtime's answer to the pool itself may select the caching allocator (it refuses
// managed pools before CUDA 13): a failure to make the pool's device current is thrown with its
// status. It was taken for the runtime refusing its pool, and the pool went on silently with the
// caching allocator (the fault sweep on the H100, 2026-12-05: cudaGetDevice failing).
TEST(PoolOverAFakeRuntime, AFailureToMakeThePoolsDeviceCurrentIsThrownNotTakenForARefusal) {
  fake_gpu::session gpu;
  gpu->fail_with(ub::error_invalid_value);  // the status a refused pool answers with
  gpu->fail_next(call::set_device);          // the pool is on device 1, device 0 is current
  try {
    (void)make_state(policy::runtime, 1);
    ADD_FAILURE() << "no exception";
  } catch (const unimem::error& e) {
    EXPECT_NE(std::string(e.what()).find("making the pool's device current"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(gpu->calls(call::pool_create), 0);
  gpu->fail_with(ub::error_unknown);
  std::shared_ptr<ud::pool_core> state = make_state(policy::runtime, 1);  // and it works again
  ASSERT_NE(state, nullptr);
  { pool_over pool(state); }
  state.reset();
  expect_clean(gpu);
}

// 6. The pool's thread-safety contract excludes its end (or a move assignment) beside its other
// calls; an allocation that reaches the pool's state afterwards is refused. It took memory from
// the closed state, which nothing then returned.
TEST(PoolOverAFakeRuntime, AnAllocationThatReachesAPoolsStateAfterItsEndIsRefused) {
  for (const policy kind : {policy::caching, policy::runtime}) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    std::shared_ptr<ud::pool_core> state = make_state(kind);
    { pool_over pool(state); }  // the end closes the state
    EXPECT_THROW((void)state->allocate(1000, nullptr, false, unimem::call_site::current(), nullptr),
                 unimem::invalid_argument);
    EXPECT_EQ(state->statistics(unimem::call_site::current()).allocations, 0u);
    state.reset();
    expect_clean(gpu);
  }
}

// 7. A block's placement record goes to its next owner only where that owner asks for no more
// bytes than the last one (the record covers what it placed): a 257-byte buffer's record went
// to a 320-byte buffer of the caching allocator's same block.
TEST(PoolOverAFakeRuntime, AReusedBlocksPlacementRecordGoesOnlyToABufferNoLargerThanItsLastOwner) {
  for (const policy kind : {policy::caching, policy::runtime}) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind);
    const ub::stream_handle s = gpu->make_stream(0);
    void* first = nullptr;
    {
      pool_buffer<char> a(257, pool, s);
      first = a.data();
      unimem_detail_placement_record(a)->set(42);
    }
    {
      pool_buffer<char> b(320, pool, s);
      ASSERT_EQ(static_cast<void*>(b.data()), first) << "the same block";
      EXPECT_EQ(unimem_detail_placement_record(b)->stamp(), 0u) << "a record of 257 bytes";
      unimem_detail_placement_record(b)->set(43);
    }
    pool_buffer<char> c(300, pool, s);
    ASSERT_EQ(static_cast<void*>(c.data()), first);
    EXPECT_EQ(unimem_detail_placement_record(c)->stamp(), 43u) << "a record of 320 bytes";
  }
}

// 7. trim() returns every free block ("kept until trim()"): it was trim_to(release_threshold()),
// nothing with the default options.
TEST(PoolOverAFakeRuntime, TrimReturnsEveryFreeBlock) {
  for (const policy kind : {policy::caching, policy::runtime}) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind);
    const ub::stream_handle s = gpu->make_stream(0);
    void* a = pool.allocate(4096, s);
    void* b = pool.allocate(1000, s);
    pool.deallocate(a, 4096, s);
    gpu->settle();
    pool.trim();
    EXPECT_EQ(pool.statistics().bytes_held, 1024u) << "the allocation in use only";
    pool.deallocate(b, 1000, s);
    gpu->settle();
    pool.trim();
    EXPECT_EQ(pool.statistics().bytes_held, 0u);
  }
}

// 7. An allocation whose ordering after the block's last free fails throws and leaves the pool
// as it was: the peak had been raised by the allocation that never was.
TEST(PoolOverAFakeRuntime, AFailedOrderingLeavesThePoolAsItWas) {
  for (const policy kind : {policy::caching, policy::runtime}) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind);
    const ub::stream_handle s = gpu->make_stream(0);
    const fake_gpu::gate_ptr busy = gpu->hold(s);
    void* p = pool.allocate(1000, s);
    pool.deallocate(p, 1000, s);  // pending behind the gate
    pool.reset_peak();
    // The caching allocator: s waits for the free's event; the runtime's pool: the host waits.
    gpu->fail_next(kind == policy::caching ? call::stream_wait_event : call::stream_synchronize);
    EXPECT_THROW((void)(kind == policy::caching ? pool.allocate(1000, s)
                                                : pool.allocate_for_host(1000, s)),
                 unimem::error);
    const unimem::pool_statistics st = pool.statistics();
    EXPECT_EQ(st.bytes_in_use, 0u);
    EXPECT_EQ(st.allocations, 0u);
    EXPECT_EQ(st.peak_bytes_in_use, 0u) << "an allocation that never was";
    gpu->open(busy);
    gpu->drain();
    void* q = pool.allocate(1000, s);
    if (kind == policy::caching) {
      EXPECT_EQ(q, p) << "the block went back to its list";
    }
    pool.deallocate(q, 1000, s);
  }
}

// 7. statistics() is one moment's: bytes held is never below bytes in use. The runtime pool's
// count was read after the counts, in another step: memory freed and trimmed meanwhile showed
// 1,000 bytes in use and none held.
TEST(PoolOverAFakeRuntime, StatisticsAreOneMomentsCounts) {
  fake_gpu::session gpu;
  managed_pool pool = make_pool(policy::runtime);
  const ub::stream_handle s = gpu->make_stream(0);
  void* p = pool.allocate(1000, s);
  std::atomic<int> step{0};
  gpu->before_reserved([&step] {
    int expected = 0;
    if (!step.compare_exchange_strong(expected, 1)) return;  // the first read only
    while (step.load() != 2) std::this_thread::yield();
  });
  unimem::pool_statistics st;
  std::thread reader([&] { st = pool.statistics(); });
  while (step.load() != 1) std::this_thread::yield();
  pool.deallocate(p, 1000, s);
  gpu->settle();
  pool.trim_to(0);
  step = 2;
  reader.join();
  EXPECT_GE(st.bytes_held, st.bytes_in_use);
  // And the caching allocator's, read beside allocations, frees and trims on other threads.
  managed_pool caching = make_pool(policy::caching);
  std::atomic<bool> stop{false};
  std::atomic<long> below{0};
  std::thread watch([&] {
    while (!stop.load()) {
      const unimem::pool_statistics now = caching.statistics();
      if (now.bytes_held < now.bytes_in_use) ++below;
    }
  });
  std::vector<std::thread> team;
  for (int t = 0; t < 2; ++t) {
    team.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        void* q = caching.allocate(1000, s);
        caching.deallocate(q, 1000, s);
        caching.trim_to(0);
      }
    });
  }
  for (std::thread& th : team) th.join();
  stop = true;
  watch.join();
  EXPECT_EQ(below.load(), 0);
}

// ---- the thread-safety contract: each "may" of managed_pool's documentation ----

// allocate, allocate_for_host and deallocate may run on any threads at once, and a deallocate may
// come from another thread than its allocate, on another stream (its work ordered before).
TEST(ManagedPoolContract, AllocationsAndFreesMayRunOnAnyThreadsAtOnce) {
  for (const policy kind : {policy::caching, policy::runtime}) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind);
    struct handed {
      void* p;
      std::size_t bytes;
      ub::stream_handle s;
    };
    std::mutex m;
    std::vector<handed> exchange;  // allocated by one thread, freed by another
    std::vector<std::thread> team;
    for (int t = 0; t < 4; ++t) {
      const ub::stream_handle own = gpu->make_stream(0);
      team.emplace_back([&, t, own] {
        using R = fake_gpu::runtime<false>;
        ub::event_handle e = nullptr;
        (void)R::event_create(&e);
        for (int i = 0; i < 300; ++i) {
          const std::size_t bytes = 100 + static_cast<std::size_t>((i * 37 + t * 11) % 5000);
          const bool host = i % 3 == 0;
          void* p = host ? pool.allocate_for_host(bytes, own) : pool.allocate(bytes, own);
          const std::uint64_t gen = gpu->own(p);
          if (host) gpu->host_use(p, bytes, gen);
          gpu->launch(own, p, bytes, gen);
          (void)R::event_record(e, own);  // its work, ordered before any stream's free
          handed h{p, bytes, own};
          {
            std::lock_guard<std::mutex> l(m);
            exchange.push_back(h);
            if (exchange.size() < 3) continue;
            h = exchange.front();
            exchange.erase(exchange.begin());
          }
          (void)R::stream_wait_event(own, e);
          (void)R::stream_synchronize(h.s);  // the other thread's work is done: free it here
          pool.deallocate(h.p, h.bytes, own);
        }
        (void)R::stream_synchronize(own);
        (void)R::event_destroy(e);
      });
    }
    for (std::thread& th : team) th.join();
    for (const handed& h : exchange) pool.deallocate(h.p, h.bytes, h.s);
    gpu->drain();
    EXPECT_EQ(pool.statistics().allocations, 0u);
    EXPECT_EQ(pool.statistics().bytes_in_use, 0u);
    EXPECT_EQ(gpu->seen().overlaps, 0);
    { managed_pool gone(std::move(pool)); }  // the pool ends: everything back
    expect_clean(gpu);
  }
}

// trim, trim_to, statistics, reset_peak and the release threshold may run beside allocations and
// frees on other threads.
TEST(ManagedPoolContract, TrimStatisticsAndTheThresholdMayRunBesideAllocations) {
  for (const policy kind : {policy::caching, policy::runtime}) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    managed_pool pool = make_pool(kind);
    std::atomic<bool> stop{false};
    std::atomic<long> wrong{0};
    std::vector<std::thread> team;
    for (int t = 0; t < 2; ++t) {
      const ub::stream_handle own = gpu->make_stream(0);
      team.emplace_back([&, own] {
        for (int i = 0; i < 500; ++i) {
          const std::size_t bytes = 256u << (i % 6);
          void* p = pool.allocate(bytes, own);
          gpu->launch(own, p, bytes, gpu->own(p));
          pool.deallocate(p, bytes, own);
        }
      });
    }
    std::thread maintenance([&] {
      for (std::size_t i = 0; !stop.load(); ++i) {
        if (i % 3 == 0) pool.trim();
        if (i % 3 == 1) pool.trim_to(4096);
        const unimem::pool_statistics st = pool.statistics();
        if (st.bytes_held < st.bytes_in_use || st.peak_bytes_in_use < st.bytes_in_use) ++wrong;
        pool.set_release_threshold(i % 2 == 0 ? 8192 : no_limit);
        if (pool.release_threshold() == 1) ++wrong;  // never set
        pool.reset_peak();
      }
    });
    for (std::thread& th : team) th.join();
    stop = true;
    maintenance.join();
    EXPECT_EQ(wrong.load(), 0);
    gpu->drain();
    pool.trim();
    EXPECT_EQ(pool.statistics().bytes_held, 0u);
    EXPECT_EQ(gpu->seen().overlaps, 0);
  }
}

// pool_buffers may be used, moved, swapped and destroyed on any thread at any time, also while
// their pool is moved or ends on another thread: they share the pool's state.
TEST(ManagedPoolContract, BuffersMayGoOnAnyThreadWhileTheirPoolIsMovedOrEnds) {
  for (const policy kind : {policy::caching, policy::runtime}) {
    SCOPED_TRACE(name_of(kind));
    fake_gpu::session gpu;
    const ub::stream_handle s = gpu->make_stream(0);
    std::optional<managed_pool> pool(make_pool(kind));
    std::vector<pool_buffer<int>> left, right;
    for (int i = 0; i < 40; ++i) {
      (i % 2 == 0 ? left : right).emplace_back(64 + i, *pool, s);
      pool_buffer<int>& b = (i % 2 == 0 ? left : right).back();
      gpu->launch(s, b.data(), b.size() * sizeof(int), gpu->own(b.data()));
    }
    std::atomic<bool> go{false};
    auto churn = [&](std::vector<pool_buffer<int>>& mine) {
      while (!go.load()) std::this_thread::yield();
      for (std::size_t i = 0; i + 1 < mine.size(); i += 2) {
        swap(mine[i], mine[i + 1]);
        pool_buffer<int> moved(std::move(mine[i]));
        moved.set_stream(s);
      }
      mine.clear();
    };
    std::thread a(churn, std::ref(left)), b(churn, std::ref(right));
    go = true;
    managed_pool other(std::move(*pool));  // moved, then ended, while the buffers go
    pool.reset();
    { managed_pool gone(std::move(other)); }
    a.join();
    b.join();
    gpu->drain();
    expect_clean(gpu);
  }
}

// ---- the stress test: threads, streams, two devices, injected failures, pools closed ----

// Four threads, each with two streams of the pool's device, run mixed operations on one pool:
// allocate and allocate_for_host (used by the host, then by a stream), pool_buffer, frees on the
// allocating stream, on another stream (its work ordered there by an event), and on the default
// stream with the other device current; trim, statistics, threshold changes; 2 % of all runtime
// calls fail. Half-way through, every other round's pool ends while the threads still hold
// buffers, which they go on using and freeing (and the raw allocations left go with the pool);
// in the other rounds the threads free everything and the statistics must be back to 0. Every
// fourth round, from the second, the pool has a GPU budget of 16 KiB (issue 51): blocks past it
// on the host, their advice among the calls that fail. Nothing may overlap, leak or be misused.
template <bool Hip>
void stress(policy kind, int rounds, int operations) {
  using R = fake_gpu::runtime<Hip>;
  fake_gpu::session gpu(Hip);
  constexpr int threads = 4;
  long failures = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(round);
    const int device = round % 2;  // the pool's device
    const bool end_under_load = round % 2 == 0;
    fake_gpu::world::current_device() = device;
    std::optional<managed_pool> pool(
        make_pool<Hip>(kind, device, round % 3 == 0 ? std::size_t{1} << 14 : no_limit,
                       round % 4 == 1 ? std::size_t{1} << 14 : ud::no_gpu_budget));
    std::vector<ub::stream_handle> streams;
    for (int k = 0; k < threads * 2; ++k) streams.push_back(gpu->make_stream(device));
    gpu->fail_at_rate(20, static_cast<std::uint64_t>(round) + 1);
    std::atomic<int> arrived{0};
    std::atomic<bool> go_on{false};
    std::atomic<long> errors{0}, wrong{0};
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t) {
      team.emplace_back([&, t] {
        fake_gpu::world::current_device() = device;
        std::uint64_t state = static_cast<std::uint64_t>(round * 131 + t + 1) * 0x9e3779b97f4a7c15ull;
        auto next = [&state](std::size_t below) {
          state ^= state << 13;
          state ^= state >> 7;
          state ^= state << 17;
          return static_cast<std::size_t>(state % below);
        };
        const ub::stream_handle mine[2] = {streams[static_cast<std::size_t>(2 * t)],
                                           streams[static_cast<std::size_t>(2 * t + 1)]};
        ub::event_handle e = nullptr;
        const bool have_event = R::event_create(&e).code == ub::success;
        struct raw_allocation {
          void* p;
          std::size_t bytes;
          ub::stream_handle s;
        };
        struct buffer {
          pool_buffer<char> b;
          std::uint64_t gen;
        };
        std::vector<raw_allocation> raw;
        std::vector<buffer> buffers;
        // Frees what ran on s: on `other` after its work (an event s records, `other` waits
        // for), else on s; or, for work on the default stream, on the default stream with the
        // other device current.
        auto free_one = [&](ub::stream_handle s, auto&& release) {
          const ub::stream_handle other = mine[next(2)];
          if (s == nullptr && next(2) == 0) {
            fake_gpu::world::current_device() = 1 - device;
            release(nullptr);
            fake_gpu::world::current_device() = device;
          } else if (have_event && R::event_synchronize(e).code == ub::success &&
                     R::event_record(e, s).code == ub::success &&
                     R::stream_wait_event(other, e).code == ub::success) {
            // (the event recorded again only once its last recording completed: HIP's rule)
            release(other);
          } else {
            release(s);
          }
        };
        bool ended = false;  // the pool: not to be used any more
        for (int i = 0; i < operations; ++i) {
          if (i == operations / 2) {  // where the pool may end
            ++arrived;
            while (!go_on.load()) std::this_thread::yield();
            ended = end_under_load;
          }
          const std::size_t what = next(100);
          const ub::stream_handle s = next(4) == 0 ? nullptr : mine[next(2)];
          const std::size_t bytes = 1 + next(3) * 3000 + next(3000);
          try {
            if (!ended && what < 20) {  // a raw allocation, for the host or a stream
              const bool host = what < 6;
              void* p = host ? pool->allocate_for_host(bytes, s) : pool->allocate(bytes, s);
              const std::uint64_t gen = gpu->own(p);
              if (host) gpu->host_use(p, bytes, gen);
              gpu->launch(s, p, bytes, gen);
              raw.push_back({p, bytes, s});
            } else if (!ended && what < 40) {  // a pool_buffer
              pool_buffer<char> b(bytes, *pool, s);
              const std::uint64_t gen = gpu->own(b.data());
              gpu->launch(s, b.data(), bytes, gen);
              buffers.push_back({std::move(b), gen});
            } else if (!ended && what < 55 && !raw.empty()) {  // a raw free
              const std::size_t k = next(raw.size());
              const raw_allocation r = raw[k];
              raw.erase(raw.begin() + static_cast<std::ptrdiff_t>(k));
              free_one(r.s, [&](ub::stream_handle on) { pool->deallocate(r.p, r.bytes, on); });
            } else if (what < 75 && !buffers.empty()) {  // a buffer used once more, then freed
              const std::size_t k = next(buffers.size());
              buffer x = std::move(buffers[k]);
              buffers.erase(buffers.begin() + static_cast<std::ptrdiff_t>(k));
              const ub::stream_handle was = x.b.stream().get();
              gpu->launch(was, x.b.data(), x.b.size(), x.gen);
              free_one(was, [&](ub::stream_handle on) {
                x.b.set_stream(on);
                pool_buffer<char> gone(std::move(x.b));
              });
            } else if (!ended && what < 82) {
              if (next(2) == 0) {
                pool->trim();
              } else {
                pool->trim_to(next(4) * 4096);
              }
            } else if (!ended && what < 92) {
              const unimem::pool_statistics st = pool->statistics();
              if (st.bytes_held < st.bytes_in_use) ++wrong;
            } else if (!ended) {
              const std::size_t thresholds[] = {0, 4096, std::size_t{1} << 16, no_limit};
              pool->set_release_threshold(thresholds[next(4)]);
            }
          } catch (const unimem::error&) {
            ++errors;  // an injected failure: the pool is as it was
          }
        }
        if (!ended) {  // everything back, on the stream each ran on
          for (const raw_allocation& r : raw) pool->deallocate(r.p, r.bytes, r.s);
        }  // else the raw allocations left went with the pool, never used again
        buffers.clear();
        if (have_event) (void)R::event_destroy(e);
      });
    }
    while (arrived.load() < threads) std::this_thread::yield();
    if (end_under_load) pool.reset();
    go_on = true;
    for (std::thread& th : team) th.join();
    gpu->fail_at_rate(0, 0);
    failures += errors.load();
    EXPECT_EQ(wrong.load(), 0) << "statistics with less held than in use";
    if (pool) {
      gpu->drain();
      const unimem::pool_statistics st = pool->statistics();
      EXPECT_EQ(st.bytes_in_use, 0u);
      EXPECT_EQ(st.host_bytes_in_use, 0u);
      EXPECT_EQ(st.allocations, 0u);
      pool->trim();
      EXPECT_EQ(pool->statistics().bytes_held, 0u);
      EXPECT_EQ(pool->statistics().host_bytes_held, 0u);
      pool.reset();
    }
    EXPECT_EQ(gpu->seen().overlaps, 0);
  }
  fake_gpu::world::current_device() = 0;
  expect_clean(gpu);
  EXPECT_GT(gpu->seen().injected, 0);
  std::printf("%s%s: %d rounds x %d threads x %d operations, %ld failed by injection\n",
              name_of(kind), Hip ? " (HIP's rules)" : "", rounds, threads, operations, failures);
}

TEST(PoolStress, ThreadsStreamsDevicesFailuresAndPoolsClosedUnderLoad) {
  stress<false>(policy::caching, 4, 400);
  stress<true>(policy::caching, 4, 400);
  stress<false>(policy::runtime, 4, 400);
}

}  // namespace
