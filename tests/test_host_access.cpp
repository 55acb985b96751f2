// The host-access log (placement/detail/host_access.hpp): the log's spans, one log per process
// shared by every copy of unimem, retries, the memfd found before it is sized or sealed or
// never filled in, fork() (with another thread inside the locks), and on a GPU the tracker on
// the real driver: the self-check, a device reset, a forked child. The UVM driver's interface
// against a fake module: test_uvm_driver.cpp (UvmDriver.*).
#include "fake_uvm_module.hpp"

#include <unimem/placement/detail/uvm_counters.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace {
namespace ha = unimem::detail::host_access;
namespace uvm = unimem::detail::uvm;
constexpr std::uintptr_t blk = ha::block_bytes;
}  // namespace


TEST(HostAccess, TheLogGivesTheTouchedBlocksOfARangeMergedAcrossSmallGaps) {
  auto r = std::make_unique<ha::region>();
  const std::uintptr_t base = std::uintptr_t{1} << 40;  // a buffer of 64 blocks at base
  const std::uintptr_t lo = base + 100, hi = base + 64 * blk - 100;
  ha::span out[4];
  EXPECT_EQ(ha::touched_in(r.get(), 0, 0, lo, hi, 0, out, 4), 0) << "an empty log";
  // Touches of one block in one look at the driver's events make one entry; in two looks, two
  // (a record may remember the first).
  ha::append(r.get(), base + 3 * blk, base + 4 * blk, false, 0);
  ha::append(r.get(), base + 3 * blk, base + 4 * blk, false, 0);
  EXPECT_EQ(r->newest.load(), 1u);
  ha::append(r.get(), base + 3 * blk, base + 4 * blk, false, 1);
  EXPECT_EQ(r->newest.load(), 2u);
  ha::append(r.get(), base + 4 * blk, base + 5 * blk, false);
  ha::append(r.get(), base + 40 * blk, base + 41 * blk, false);
  ha::append(r.get(), base + 200 * blk, base + 201 * blk, false);  // another buffer's block
  ha::append(r.get(), base - blk, base, false);                    // the block before it
  ha::append(r.get(), base, base + blk, false);                    // its first block
  const std::uint64_t now = r->newest.load();
  ASSERT_EQ(now, 7u);
  // No gap merged: three spans, clipped to the range, sorted.
  ASSERT_EQ(ha::touched_in(r.get(), 0, now, lo, hi, 0, out, 4), 3);
  EXPECT_EQ(out[0].lo, lo);
  EXPECT_EQ(out[0].hi, base + blk);
  EXPECT_EQ(out[1].lo, base + 3 * blk);
  EXPECT_EQ(out[1].hi, base + 5 * blk);
  EXPECT_EQ(out[2].lo, base + 40 * blk);
  EXPECT_EQ(out[2].hi, base + 41 * blk);
  // Gaps of up to 2 blocks merged: the first two spans become one.
  ASSERT_EQ(ha::touched_in(r.get(), 0, now, lo, hi, 2 * blk, out, 4), 2);
  EXPECT_EQ(out[0].lo, lo);
  EXPECT_EQ(out[0].hi, base + 5 * blk);
  // Gaps of up to 64 blocks merged: one span.
  ASSERT_EQ(ha::touched_in(r.get(), 0, now, lo, hi, 64 * blk, out, 4), 1);
  EXPECT_EQ(out[0].hi, base + 41 * blk);
  // Only what came after `since` counts.
  EXPECT_EQ(ha::touched_in(r.get(), 6, now, lo, hi, 0, out, 4), 1);
  EXPECT_EQ(ha::touched_in(r.get(), 3, 6, lo, hi, 0, out, 4), 1);
  EXPECT_EQ(ha::touched_in(r.get(), 4, 6, lo, hi, 0, out, 4), 0)
      << "only another buffer's block and the block before the range";
  // Too many spans for the caller: the whole range.
  EXPECT_EQ(ha::touched_in(r.get(), 0, now, lo, hi, 0, out, 2), -1);
  // An announcement or an entry covering everything leaves nothing known.
  ha::append(r.get(), base + 10 * blk, base + 10 * blk + 8, true);
  EXPECT_EQ(ha::touched_in(r.get(), now, now + 1, lo, hi, 0, out, 4), -1);
  EXPECT_EQ(ha::touched_in(r.get(), now, now + 1, base + 11 * blk, hi, 0, out, 4), 0)
      << "an announcement meets only its own span";
  ha::append(r.get(), 0, ha::everywhere, false);
  EXPECT_EQ(ha::touched_in(r.get(), now + 1, now + 2, base + 11 * blk, hi, 0, out, 4), -1);
  // A record older than the log reaches: the whole range.
  for (std::uint32_t k = 0; k < ha::log_capacity; ++k) {
    ha::append(r.get(), base + 300 * blk + k * blk, base + 301 * blk + k * blk, false);
  }
  const std::uint64_t later = r->newest.load();
  EXPECT_EQ(ha::touched_in(r.get(), now, later, lo, hi, 0, out, 4), -1);
  EXPECT_EQ(ha::touched_in(r.get(), later - 10, later, lo, hi, 0, out, 4), 0);
}

TEST(HostAccess, OneLogForTheProcessThatAnnouncementsReach) {
  ha::region* r = ha::the_region();
  ASSERT_NE(r, nullptr);
  const std::uint64_t e0 = ha::now();
  int probe = 0;
  ha::announce(&probe, sizeof probe);
  const std::uint64_t announced = r->newest.load();  // (a fault since may add an entry)
  const std::uint64_t e1 = ha::now();
  EXPECT_GT(e1, e0);
  ha::span out[1];
  const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(&probe);
  EXPECT_EQ(ha::touched_since(e0, e1, p, p + 1, 0, out, 1), -1) << "an announcement is news";
#if defined(__linux__)
  // Every copy of unimem in the process (another shared library, a Python module) finds the
  // same log: a memfd, which a second mapping shows with the announcement in it.
  EXPECT_EQ(r->shared, 1);
  const int fd = ha::find_region_fd();
  ASSERT_GE(fd, 0);
  ha::region* again = ha::map_region(fd, ha::region_bytes());
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again, r);
  EXPECT_EQ(again->newest.load(), r->newest.load());
  EXPECT_EQ(again->log[announced % ha::log_capacity].lo, p);
  EXPECT_EQ(again->pid, static_cast<std::int64_t>(getpid()));
  munmap(again, ha::region_bytes());
#endif
}

#if defined(__linux__)
namespace {
int attach_calls = 0;
int attach_answer = 0;  // what the fake attach() finds: a tracker (>= 0) or why none
int fake_attach(ha::region* r) noexcept {  // a tracker whose queue stays empty
  ++attach_calls;
  if (attach_answer >= 0) {
    r->tracker_fd.store(attach_answer);
    r->queue_version.store(1);
    r->dropped_at.store(16);
  }
  return attach_answer;
}
ha::region* fresh_shared_log() {  // as make_region() leaves the memfd it makes
  ha::region* r = ha::map_region(-1, ha::region_bytes());
  return r != nullptr && ha::fill_region(r, ha::system_page(), 1) ? r : nullptr;
}
}  // namespace
#endif

// A look before the GPU runtime opened /dev/nvidia-uvm (a run that starts with HostAccess.*)
// finds no UVM descriptor: the process takes the page-fault signal, and tries the tracker again
// once the faults of a runtime's start were taken, not before; a final answer (no tools
// device, every descriptor refused, UNIMEM_HOST_ACCESS=page-faults) is not tried again, a
// passing one again later, after twice as many faults.
TEST(HostAccess, ALookBeforeTheRuntimeStartedTriesTheTrackerAgainLater) {
#if defined(__linux__)
  for (int later : {7, ha::refused, ha::try_again}) {  // what the later try finds
    SCOPED_TRACE(later);
    ha::region* r = fresh_shared_log();
    ASSERT_NE(r, nullptr);
    attach_calls = 0;
    attach_answer = ha::try_again;
    const std::uint64_t e0 = ha::now(r, fake_attach);
    EXPECT_EQ(attach_calls, 1);
    EXPECT_EQ(r->source.load(), static_cast<int>(ha::signal::page_faults));
    (void)unimem_test::fault_fresh_memory(16);
    (void)ha::now(r, fake_attach);
    EXPECT_EQ(attach_calls, 1) << "tried again after a few faults";
    attach_answer = later;
    (void)unimem_test::fault_fresh_memory(ha::retry_faults);  // as a runtime's start
    const std::uint64_t e1 = ha::now(r, fake_attach);
    EXPECT_EQ(attach_calls, 2) << "the tracker was not tried again: page faults for good";
    EXPECT_GT(e1, e0);
    if (later >= 0) {
      EXPECT_EQ(r->source.load(), static_cast<int>(ha::signal::uvm_events));
      (void)unimem_test::fault_fresh_memory(16);
      EXPECT_EQ(ha::now(r, fake_attach), e1) << "on the UVM signal an ordinary fault is news";
    } else {
      EXPECT_EQ(r->source.load(), static_cast<int>(ha::signal::page_faults));
    }
    (void)unimem_test::fault_fresh_memory(4 * ha::retry_faults);
    (void)ha::now(r, fake_attach);
    if (later == ha::try_again) {
      EXPECT_EQ(attach_calls, 3) << "a passing answer was not tried again";
    } else {
      EXPECT_EQ(attach_calls, 2) << "tried again after a final answer";
    }
    munmap(r, ha::region_bytes());
  }
  const char* setting = std::getenv("UNIMEM_HOST_ACCESS");
  const std::string saved = setting != nullptr ? setting : "";
  setenv("UNIMEM_HOST_ACCESS", "page-faults", 1);
  ha::region* r = fresh_shared_log();
  ASSERT_NE(r, nullptr);
  attach_calls = 0;
  (void)ha::now(r, fake_attach);
  EXPECT_EQ(attach_calls, 0) << "UNIMEM_HOST_ACCESS=page-faults, yet the tracker was tried";
  EXPECT_EQ(r->source.load(), static_cast<int>(ha::signal::page_faults));
  munmap(r, ha::region_bytes());
  if (setting != nullptr) {
    setenv("UNIMEM_HOST_ACCESS", saved.c_str(), 1);
  } else {
    unsetenv("UNIMEM_HOST_ACCESS");
  }
#else
  GTEST_SKIP() << "the host-access log is Linux's";
#endif
}

// Copies of unimem in one process share the log and so its retries (two mappings of one memfd),
// and threads looking at once try the tracker once.
TEST(HostAccess, CopiesAndThreadsSharingTheLogTryTheTrackerOnce) {
#if defined(__linux__)
  const int fd = static_cast<int>(syscall(SYS_memfd_create, "unimem-test-log", 1u));
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(ha::region_bytes())), 0);
  ha::region* a = ha::map_region(fd, ha::region_bytes());
  ha::region* b = ha::map_region(fd, ha::region_bytes());
  close(fd);
  ASSERT_TRUE(a != nullptr && b != nullptr);
  ASSERT_TRUE(ha::fill_region(a, ha::system_page(), 1));
  attach_calls = 0;
  attach_answer = ha::try_again;
  (void)ha::now(a, fake_attach);
  (void)ha::now(b, fake_attach);
  EXPECT_EQ(attach_calls, 1) << "the other copy tried again at once";
  attach_answer = 7;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 64; ++i) {
        (void)unimem_test::fault_fresh_memory(64);
        (void)ha::now(t % 2 == 0 ? a : b, fake_attach);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(attach_calls, 2) << "not tried again once, after the faults of 4 x 64 x 64 pages";
  EXPECT_EQ(b->source.load(), static_cast<int>(ha::signal::uvm_events));
  EXPECT_EQ(b->tracker_fd.load(), 7);
  munmap(a, ha::region_bytes());
  munmap(b, ha::region_bytes());
#else
  GTEST_SKIP() << "the host-access log is Linux's";
#endif
}

#if defined(__linux__)
namespace {
bool no_uvm_fd_yet = true;  // the first try finds none, as before the runtime started
int first_none_then_the_driver(ha::region* r) noexcept {
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  if (!no_uvm_fd_yet) return ha::attach_with(r, uvm::real_driver());
#endif
  no_uvm_fd_yet = false;
  return ha::try_again;
}
/// Closes what attach_with() opened for a test's own log.
void close_tracker(ha::region* r) {
  if (r->tracker_fd.load() >= 0) close(r->tracker_fd.load());
  if (r->uvm_dup.load() >= 0) close(r->uvm_dup.load());
}
}  // namespace
#endif

// The same on the driver. Where it takes trackers, the process is on its events once the runtime
// started, even after a look before (a run of HostAccess.* alone: HostAccess.OneLog... looks
// first). And a tracker attached by a later try sees the host take a managed page back from
// the GPU (its 2 MiB block), and nothing of ordinary memory.
TEST(HostAccess, ATrackerAttachedByALaterTrySeesTheHostTakeManagedPages) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = (std::size_t{4} << 20) / sizeof(int);
  unimem::managed_buffer<int> b(n, 0);
  ASSERT_EQ(unimem::prefetch(b, unimem::location::device(0)), unimem::hint_status::applied);
  unimem::synchronize();
  if (!unimem_test::host_access_is_exact()) {
    if (unimem::detail::uvm_counters().available()) {
      FAIL() << "the UVM driver takes trackers, yet the process learns host touches from its "
                "page faults (it looked before the runtime started and never tried again)";
    }
    GTEST_SKIP() << "no UVM driver events here (not NVIDIA, or the tools device refused)";
  }
#if defined(__linux__)
  ha::region* r = fresh_shared_log();
  ASSERT_NE(r, nullptr);
  no_uvm_fd_yet = true;
  (void)ha::now(r, first_none_then_the_driver);
  ASSERT_EQ(r->source.load(), static_cast<int>(ha::signal::page_faults));
  (void)unimem_test::fault_fresh_memory(ha::retry_faults);
  const std::uint64_t e1 = ha::now(r, first_none_then_the_driver);
  ASSERT_EQ(r->source.load(), static_cast<int>(ha::signal::uvm_events))
      << "the later try attached no tracker";
  ASSERT_GE(r->tracker_fd.load(), 0);
  (void)unimem_test::fault_fresh_memory(16);
  EXPECT_EQ(ha::now(r, first_none_then_the_driver), e1) << "an ordinary fault is news";
  int* touched = b.data() + n / 2;
  *static_cast<volatile int*>(touched) = 1;  // a CPU fault on a GPU-resident managed page
  const std::uint64_t e2 = ha::now(r, first_none_then_the_driver);
  EXPECT_GT(e2, e1) << "the host took a managed page back, and the log has no entry";
  ha::span out[2];
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(b.data());
  ASSERT_EQ(ha::touched_in(r, e1, e2, lo, lo + b.size_bytes(), 0, out, 2), 1);
  EXPECT_LE(out[0].lo, reinterpret_cast<std::uintptr_t>(touched));
  EXPECT_GT(out[0].hi, reinterpret_cast<std::uintptr_t>(touched));
  close_tracker(r);
  munmap(r, ha::region_bytes());
#endif
}

TEST(HostAccess, OnThePageFaultSignalAnyFaultLeavesNothingKnown) {
  const bool exact = unimem_test::host_access_is_exact();
  ASSERT_TRUE(ha::use_signal_for_testing(ha::signal::page_faults));
  EXPECT_EQ(ha::source(), ha::signal::page_faults);
  const std::uint64_t e0 = ha::now();
  (void)unimem_test::fault_fresh_memory(1);
  const std::uint64_t e1 = ha::now();
  EXPECT_GT(e1, e0) << "a page fault added no entry";
  int x = 0;
  const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(&x);
  ha::span out[1];
  EXPECT_EQ(ha::touched_since(e0, e1, p, p + 4, 0, out, 1), -1);
  EXPECT_EQ(ha::now(), ha::now()) << "no fault, no entry";
  if (exact) {
    ASSERT_TRUE(ha::use_signal_for_testing(ha::signal::uvm_events));
    const std::uint64_t e2 = ha::now();
    (void)unimem_test::fault_fresh_memory(1);
    EXPECT_EQ(ha::now(), e2) << "on the UVM signal a fault on ordinary memory is no news";
  } else {
    EXPECT_FALSE(ha::use_signal_for_testing(ha::signal::uvm_events))
        << "no UVM tracker here, yet the uvm_events signal was accepted";
  }
}


#if defined(__linux__)
namespace {
/// Runs f in a child process, which SIGALRM ends after `seconds` (a child that hangs fails); its
/// exit status (0: passed), or -1 if it died of a signal.
template <class F>
int in_a_child(F&& f, unsigned seconds = 20) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(seconds);
    _exit(f());
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -2;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// in_a_child(f), forked while another thread holds this copy's `making` lock and the log's.
template <class F>
int in_a_child_while_the_locks_are_held(F&& f) {
  ha::region* parents = ha::the_region();
  std::atomic<int> stage{0};
  std::thread holder([&] {
    ha::making_guard making(ha::this_copy().making);
    unimem::detail::spin_guard log(parents->lock);
    stage.store(1);
    while (stage.load() != 2) std::this_thread::yield();
  });
  while (stage.load() != 1) std::this_thread::yield();
  const int result = in_a_child(f);
  stage.store(2);
  holder.join();
  return result;
}
}  // namespace

// fork(): the child makes its own log (named and stamped with its own pid), never writes the
// parent's, and closes what the parent's copy opened for it (99b7c03's child kept the parent's
// region, lock, and signal).
TEST(HostAccess, AChildAfterForkHasItsOwnLog) {
  ha::region* parents = ha::the_region();
  ASSERT_NE(parents, nullptr);
  (void)ha::now();
  const std::uint64_t parent_newest = parents->newest.load();
  const int result = in_a_child([&] {
    ha::region* mine = ha::the_region();  // (may be mapped where the parent's was)
    if (mine == nullptr) return 1;
    if (mine->pid != static_cast<std::int64_t>(getpid())) return 2;
    int x = 0;
    ha::announce(&x, sizeof x);
    (void)ha::now();
    if (ha::find_region_fd() < 0) return 3;
    return 0;
  });
  EXPECT_EQ(result, 0) << "1: no log; 2: another process's (the parent's); 3: no memfd of its own";
  EXPECT_EQ(parents->newest.load(), parent_newest) << "the child wrote into the parent's log";
}

// fork() while another thread holds the locks the log is made and read under (this copy's
// `making`, the log's own): the child, which has only the forking thread, proceeds (before: the
// fork handler did not release `making`, and the child spun on it for ever; SIGALRM ends it).
TEST(HostAccess, AChildForkedWhileAnotherThreadHoldsTheLocksProceeds) {
  ASSERT_NE(ha::the_region(), nullptr);
  const int result = in_a_child_while_the_locks_are_held([] {
    ha::region* mine = ha::the_region();
    if (mine == nullptr) return 1;
    int x = 0;
    ha::announce(&x, sizeof x);
    (void)ha::now();
    return mine->pid == static_cast<std::int64_t>(getpid()) ? 0 : 2;
  });
  EXPECT_EQ(result, 0) << "-1: the child hung on a lock its parent's thread held (SIGALRM)";
}

// A memfd of this process's name found before its maker sized it (another copy between
// memfd_create and ftruncate): not mapped until it is sized and sealed (99b7c03 mapped it at
// once: SIGBUS reading its layout); never sized, a private log.
TEST(HostAccess, ALogFoundBeforeItIsSizedIsNotMapped) {
  const int result = in_a_child([] {
    char name[64], link[96];
    ha::region_name(name, sizeof name, link, sizeof link);
    const int early = static_cast<int>(syscall(SYS_memfd_create, name, 3u));  // 0 bytes
    if (early < 0) return 10;
    int memfd = -1;
    ha::region* r = ha::make_region(ha::system_page(), &memfd);
    if (r == nullptr) return 1;
    return r->shared == 0 && r->why.load() == static_cast<int>(ha::reason::private_log) ? 0 : 2;
  });
  EXPECT_EQ(result, 0) << "-1: died of a signal (SIGBUS); 2: shared a log never sized";
}

// A memfd found between its maker's ftruncate and F_ADD_SEALS (sized, not sealed yet): waited
// for, then shared (before: taken for another file at once, and the copy kept a private log, on
// page faults, for good).
TEST(HostAccess, ALogFoundBetweenItsSizeAndItsSealsIsShared) {
  const int result = in_a_child([] {
    char name[64], link[96];
    ha::region_name(name, sizeof name, link, sizeof link);
    const std::size_t page = ha::system_page(), bytes = ha::offsets_for(page).bytes;
    const int maker = static_cast<int>(syscall(SYS_memfd_create, name, 3u));
    if (maker < 0 || ftruncate(maker, static_cast<off_t>(bytes)) != 0) return 10;
    std::thread finishing([&] {  // the maker, a moment later: seals, maps, fills in
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (fcntl(maker, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) return;
      if (ha::region* m = ha::map_region(maker, bytes)) (void)ha::fill_region(m, page, 1);
    });
    int memfd = -1;
    ha::region* r = ha::make_region(page, &memfd);
    finishing.join();
    if (r == nullptr) return 1;
    return r->shared == 1 && memfd == -1 ? 0 : 2;
  });
  EXPECT_EQ(result, 0) << "2: a private log where the maker's was about to be sealed";
}

// A maker that failed leaves no log to wait for: its memfd is closed when it cannot map it
// (before: left open and unfilled), and a sized, sealed memfd never filled in is abandoned by
// the first copy that waited for it, for every later copy at once (before: each spun on it).
TEST(HostAccess, ALogWhoseMakerFailedIsAbandonedNotSpunOn) {
  const int failed_map = in_a_child([] {
    int memfd = -1;
    ha::region* r = ha::make_region(ha::system_page(), &memfd,
                                    [](int fd, std::size_t bytes) noexcept -> ha::region* {
                                      return fd >= 0 ? nullptr : ha::map_region(fd, bytes);
                                    });
    if (r == nullptr || r->shared != 0 || memfd != -1) return 1;
    return ha::find_region_fd() < 0 ? 0 : 2;
  });
  EXPECT_EQ(failed_map, 0) << "2: the memfd its maker could not map is still there";
  const int never_filled = in_a_child([] {
    char name[64], link[96];
    ha::region_name(name, sizeof name, link, sizeof link);
    const std::size_t page = ha::system_page(), bytes = ha::offsets_for(page).bytes;
    const int maker = static_cast<int>(syscall(SYS_memfd_create, name, 3u));
    if (maker < 0 || ftruncate(maker, static_cast<off_t>(bytes)) != 0 ||
        fcntl(maker, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      return 10;
    }
    int memfd = -1;
    ha::region* first = ha::make_region(page, &memfd);  // waits up to maker_wait_ns
    if (first == nullptr || first->shared != 0) return 1;
    ha::region* seen = ha::map_region(maker, bytes);
    if (seen == nullptr || seen->layout.load() != ha::abandoned_id) return 2;
    ha::region* second = ha::make_region(page, &memfd);
    return second != nullptr && second->shared == 0 ? 0 : 3;
  });
  EXPECT_EQ(never_filled, 0) << "1: shared an empty log; 2: not marked abandoned";
}

// ---- on the GPU (the real driver) ----

#if defined(UNIMEM_BACKEND_HIP)
#define HOST_ACCESS_RT(name) hip##name
#else
#define HOST_ACCESS_RT(name) cuda##name
#endif

namespace {
/// The runtime started (its UVM descriptors open) and the UVM driver's tools interface here;
/// false (with why) where there is none.
bool uvm_driver_here(std::string* why_not) {
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  unimem::managed_buffer<int> b(1024, 0);
  (void)unimem::prefetch(b, unimem::location::device(0));
  unimem::synchronize();
  const uvm::match m = uvm::module_layout(uvm::real_driver());
  if (m.found == nullptr) *why_not = "no NVIDIA UVM module (not NVIDIA)";
  int fds[8];
  if (m.found != nullptr && uvm::real_driver().uvm_fds(fds, 8) == 0) {
    *why_not = "the runtime opened no /dev/nvidia-uvm";
  }
  return why_not->empty();
#else
  *why_not = "built without the driver interface";
  return false;
#endif
}
}  // namespace

// The self-check on this machine's driver: the layout unimem talks to it in passes (whether it
// was read at this version or not), and layouts that differ from it where a later release could
// differ fail, each the way it should (the driver's block larger than the layout's: it faults on
// the guard page; dropped[] moved: the drop seen elsewhere). This is what a driver unimem has not
// read goes through at its first placement.
TEST(HostAccess, TheSelfCheckProvesThisDriversLayoutAndRefusesAWrongOne) {
  UNIMEM_REQUIRE_GPU();
  std::string why_not;
  if (!uvm_driver_here(&why_not)) GTEST_SKIP() << why_not;
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  const uvm::driver& d = uvm::real_driver();
  std::uint64_t v = 0;
  const uvm::match m = uvm::module_layout(d, &v);
  auto attempt = [&](const uvm::layout& l, ha::proof* verdict) {
    ha::region* r = fresh_shared_log();
    if (r == nullptr) return -100;
    const int t = ha::attach_in(r, d, l, false, true, nullptr, 0);
    *verdict = static_cast<ha::proof>(r->proof_of_layout.load());
    close_tracker(r);
    munmap(r, ha::region_bytes());
    return t;
  };
  ha::proof verdict = ha::proof::none;
  const int t = attempt(*m.found, &verdict);
  if (verdict == ha::proof::block_refused) {
    GTEST_SKIP() << "the driver takes no tracker here (permissions?): " << ha::to_string(verdict);
  }
  EXPECT_GE(t, 0) << "module " << v << ": " << ha::to_string(verdict);
  EXPECT_EQ(verdict, ha::proof::checked) << ha::to_string(verdict);
  ha::description module{};
  ha::append_version(module, v);  // as report() writes it: 580.159.04, not 580.159.4
  std::printf("  self-check of module %s in its layout: %s\n", module.text, ha::to_string(verdict));
  {  // during a stream capture (a first placement may come in one): the capture goes on
    unimem::stream s;
    ASSERT_EQ(HOST_ACCESS_RT(StreamBeginCapture)(s.get(), HOST_ACCESS_RT(StreamCaptureModeGlobal)),
              unimem::detail::backend::success);
    const int in_capture = attempt(*m.found, &verdict);
    HOST_ACCESS_RT(Graph_t) graph{};
    const auto ended = HOST_ACCESS_RT(StreamEndCapture)(s.get(), &graph);
    EXPECT_EQ(ended, unimem::detail::backend::success) << "the self-check broke the capture";
    if (ended == unimem::detail::backend::success) (void)HOST_ACCESS_RT(GraphDestroy)(graph);
    EXPECT_GE(in_capture, 0);
    EXPECT_EQ(verdict, ha::proof::checked) << "in a capture: " << ha::to_string(verdict);
  }

  uvm::layout smaller = *m.found;  // a block 4 bytes smaller than the driver's: it faults
  smaller.params_bytes = static_cast<unsigned char>(smaller.params_bytes - 4);
  smaller.status_at = static_cast<unsigned char>(smaller.params_bytes - 4);
  if (smaller.granted_at + 4u > smaller.params_bytes) smaller.granted_at = 0;
  if (smaller.version_at + 4u > smaller.params_bytes) smaller.version_at = 0;
  EXPECT_EQ(attempt(smaller, &verdict), ha::refused);
  EXPECT_EQ(verdict, ha::proof::block_refused) << ha::to_string(verdict);

  uvm::layout moved = *m.found;  // dropped[] of a version-2 queue where the driver has it not
  if (moved.v2_request != 0) {
    moved.v2_dropped_at = static_cast<unsigned char>(moved.v2_dropped_at == 16 ? 24 : 16);
    EXPECT_EQ(attempt(moved, &verdict), ha::refused);
    EXPECT_EQ(verdict, ha::proof::drop_elsewhere) << ha::to_string(verdict);
  }
  const ha::description text = ha::describe();
  std::printf("%s", text.text);
#endif
}

// cudaDeviceReset closes the runtime's UVM file; the next placement that moves pages finds the
// tracker watching a file that is gone, the page-fault signal serves, and a tracker on the
// runtime's new file is attached at a later look: the host's touch of a page of a buffer made
// after the reset is in the log.
TEST(HostAccess, TheTrackerFollowsTheRuntimeAcrossADeviceReset) {
  UNIMEM_REQUIRE_GPU();
  if (!unimem_test::host_access_is_exact()) {
    GTEST_SKIP() << "host touches are learnt from the process's page-fault count here";
  }
  ha::region* r = ha::the_region();
  const int before = r->uvm_fd.load();
  ASSERT_EQ(HOST_ACCESS_RT(DeviceReset)(), unimem::detail::backend::success);
  const std::size_t n = (std::size_t{8} << 20) / sizeof(int);
  unimem::managed_buffer<int> b(n, 0);
  for (int look = 0; look < 8 && !(ha::source() == ha::signal::uvm_events &&
                                   r->why.load() == static_cast<int>(ha::reason::tracker) &&
                                   r->uvm_fd.load() != before);
       ++look) {
    ASSERT_EQ(unimem::prefetch(b, unimem::location::device(0)), unimem::hint_status::applied);
    unimem::synchronize();
    (void)unimem_test::fault_fresh_memory(ha::retry_faults + 16);
    (void)ha::now();
  }
  ASSERT_EQ(ha::source(), ha::signal::uvm_events)
      << ha::to_string(ha::why()) << ": no tracker after the reset";
  std::printf("  UVM descriptor watched: %d before the reset, %d after\n", before,
              r->uvm_fd.load());
  ASSERT_EQ(unimem::prefetch(b, unimem::location::device(0)), unimem::hint_status::applied);
  unimem::synchronize();
  const std::uint64_t e0 = ha::now();
  int* touched = b.data() + n / 2;
  *static_cast<volatile int*>(touched) = 1;  // a CPU fault on a GPU-resident page
  const std::uint64_t e1 = ha::now();
  ha::span out[2];
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(b.data());
  ASSERT_EQ(ha::touched_since(e0, e1, lo, lo + b.size_bytes(), 0, out, 2), 1)
      << "the tracker after the reset does not see the host's touch";
  EXPECT_LE(out[0].lo, reinterpret_cast<std::uintptr_t>(touched));
  EXPECT_GT(out[0].hi, reinterpret_cast<std::uintptr_t>(touched));
}

// A child forked by a process whose runtime and tracker run, while another thread holds the
// locks: it proceeds, makes its own log, and attaches no tracker to the UVM files it inherited
// (its parent's va space: the driver would have taken it).
TEST(HostAccess, AChildOfAGpuProcessProceedsAndWatchesNoInheritedFile) {
  UNIMEM_REQUIRE_GPU();
  std::string why_not;
  if (!uvm_driver_here(&why_not)) GTEST_SKIP() << why_not;
  (void)unimem_test::host_access_is_exact();  // decided, in the parent
  const int result = in_a_child_while_the_locks_are_held([] {
    ha::region* mine = ha::the_region();
    if (mine == nullptr) return 1;
    (void)ha::now();
    (void)unimem_test::fault_fresh_memory(ha::retry_faults + 16);
    (void)ha::now();
    if (ha::this_copy().inherited_count == 0) return 2;
    if (mine->why.load() == static_cast<int>(ha::reason::tracker)) return 3;
    return 0;
  });
  EXPECT_EQ(result, 0) << "-1: hung (SIGALRM); 2: no inherited UVM file noted; 3: a tracker on "
                          "the parent's va space";
}
#endif  // __linux__
