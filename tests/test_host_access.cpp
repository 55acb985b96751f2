// The host-access log (detail/host_access.hpp) and the UVM driver's tools interface under it
// (detail/uvm/): the log's spans, one log per process shared by every copy of unimem, retries,
// and a fake UVM module that answers as each driver version whose source was read would
// (UvmDriver.*): layouts, queue versions, drops, migrations to the CPU, corrupt shared memory,
// memfds found before they are sized, fork(), a tracker that lost the runtime's UVM file. Only
// HostAccess.ATrackerAttachedByALaterTrySeesTheHostTakeManagedPages needs a GPU.
#include "test_support.hpp"

#include <unimem/placement/detail/host_access.hpp>
#include <unimem/placement/detail/uvm_counters.hpp>

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
    r->tracker_fd = attach_answer;
    r->queue_version = 1;
    r->dropped_at = 16;
  }
  return attach_answer;
}
ha::region* fresh_shared_log() {  // as make_region() leaves the memfd it makes
  ha::region* r = ha::map_region(-1, ha::region_bytes());
  return r != nullptr ? ha::fill_region(r, ha::system_page(), 1) : nullptr;
}
}  // namespace
#endif

// A look before the GPU runtime opened /dev/nvidia-uvm (a run that starts with HostAccess.*)
// finds no UVM descriptor: the process takes the page-fault signal, and tries the tracker again
// once the faults of a runtime's start were taken, not before; a final answer (no tools
// device, every descriptor refused, UNIMEM_HOST_ACCESS=page-faults) is not tried again.
TEST(HostAccess, ALookBeforeTheRuntimeStartedTriesTheTrackerAgainLater) {
#if defined(__linux__)
  for (int later : {7, ha::no_tools, ha::refused}) {  // what the later try finds
    SCOPED_TRACE(later);
    ha::region* r = fresh_shared_log();
    ASSERT_NE(r, nullptr);
    attach_calls = 0;
    attach_answer = ha::no_uvm_fd_yet;
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
    EXPECT_EQ(attach_calls, 2) << "tried again after a final answer";
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
  ha::fill_region(a, ha::system_page(), 1);
  attach_calls = 0;
  attach_answer = ha::no_uvm_fd_yet;
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
  EXPECT_EQ(b->tracker_fd, 7);
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
  if (!no_uvm_fd_yet) return ha::attach_uvm_events(r);
  no_uvm_fd_yet = false;
  return ha::no_uvm_fd_yet;
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
  ASSERT_GE(r->tracker_fd, 0);
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
  close(r->tracker_fd);
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


// ---- A fake UVM module (UvmDriver.*) ----
//
// Each fake plays one module version as its source declares it, written here from the driver's
// own uvm_ioctl.h, uvm_types.h and uvm_tools.c (github NVIDIA/open-gpu-kernel-modules, at the
// tag named), not from unimem's table: the parameter block it copies in and out (its size, where
// it reads the requested queue version and writes rmStatus and grantedVersion), the ioctls it
// has, the control page of each queue version, and how it queues an event (enqueue_event():
// indices masked, one slot kept free, dropped[type] counted when full).
#if defined(__linux__)
namespace {
constexpr std::uint32_t nv_ok = 0, nv_err_invalid_argument = 0x1f;

struct fake_module {
  std::string version_text;        // /sys/module/nvidia_uvm/version ("": no module)
  std::size_t params_bytes = 56;   // sizeof(UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS)
  std::size_t status_at = 48;      // rmStatus
  int version_in_at = -1;          // requestedVersion (550, 555) or version (560)
  int granted_at = -1;             // grantedVersion (550, 555)
  bool init_v2_ioctl = false;      // UVM_TOOLS_INIT_EVENT_TRACKER_V2 (76), from 565
  bool has_v2 = false;             // a version-2 queue at all (550.40.53 on)
  std::size_t v2_dropped_at = 16;  // UvmToolsEventControlData(_V2)'s dropped[] for version 2
  std::size_t writes_past = 0;     // a module that copies out more than its declared block
  bool refuse_v2 = false;          // (a module that refuses version-2 queues)
  bool refuse = false;             // (a module that refuses every tracker)
  bool tools_device = true;
  std::vector<int> uvm_fds{5};
  std::size_t page = 4096;
  bool same_file = true;           // the runtime's UVM file is still the one watched

  struct tracker {
    int fd;
    unsigned char* queue;
    std::uint32_t entries;
    unsigned char* control;
    int version;
    std::uint64_t events = 0;
    bool open = true;
  };
  std::vector<tracker> trackers;
  std::vector<std::string> problems;  // what the kernel would have refused or broken
  int calls = 0;                      // ioctls and opens of the tools device
  int next_fd = 100;

  tracker* find(int fd) {
    for (tracker& t : trackers) {
      if (t.fd == fd && t.open) return &t;
    }
    return nullptr;
  }
  tracker* queue_tracker() {
    for (tracker& t : trackers) {
      if (t.open && t.queue != nullptr && t.events != 0) return &t;
    }
    return nullptr;
  }

  int ioctl(int fd, unsigned long request, uvm::arg_block* arg) {
    ++calls;
    tracker* t = find(fd);
    if (t == nullptr) return -1;  // EBADF-like: not a tools descriptor
    unsigned char p[uvm::arg_bytes] = {};
    std::memcpy(p, arg->bytes, request == 58 || request == 60 ? 16 : params_bytes);  // copy in
    std::uint32_t status = nv_ok;
    auto get64 = [&](std::size_t at) { std::uint64_t v; std::memcpy(&v, p + at, 8); return v; };
    auto get32 = [&](std::size_t at) { std::uint32_t v; std::memcpy(&v, p + at, 4); return v; };
    auto put32 = [&](std::size_t at, std::uint32_t v) { std::memcpy(p + at, &v, 4); };
    if (request == 56 || (request == 76 && init_v2_ioctl)) {
      int v = request == 76 ? 2 : 1;
      if (version_in_at >= 0) {
        const std::uint32_t asked = get32(static_cast<std::size_t>(version_in_at));
        if (asked != 1 && asked != 2) status = nv_err_invalid_argument;
        v = static_cast<int>(asked);
      }
      if ((v == 2 && (!has_v2 || refuse_v2)) || refuse) status = nv_err_invalid_argument;
      const std::uint64_t queue = get64(0), entries = get64(8), control = get64(16);
      if (status == nv_ok && entries != 0 &&
          (entries > 0xffffffffu || entries < 2 || (entries & (entries - 1)) != 0)) {
        status = nv_err_invalid_argument;  // queue_buffer_count: a power of 2, at least 2
      }
      if (status == nv_ok && ((entries != 0 && queue % page != 0) || control % page != 0)) {
        status = nv_err_invalid_argument;  // map_user_pages(): uvm_api_range_invalid()
      }
      if (status == nv_ok && get32(44) != static_cast<std::uint32_t>(uvm_fds.front())) {
        status = nv_err_invalid_argument;  // not a UVM va-space descriptor
      }
      if (status == nv_ok) {
        t->queue = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(queue));
        t->entries = static_cast<std::uint32_t>(entries);
        t->control = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(control));
        t->version = v;
        if (granted_at >= 0) put32(static_cast<std::size_t>(granted_at), static_cast<std::uint32_t>(v));
      }
      put32(status_at, status);
      std::memcpy(arg->bytes, p, params_bytes + writes_past);  // copy out
      if (writes_past != 0) std::memset(arg->bytes + params_bytes, 0x5a, writes_past);
      return 0;
    }
    if (request == 58 || request == 60) {  // enable events (a queue) / counters (none)
      const std::uint64_t flags = get64(0);
      if ((request == 58) != (t->entries != 0) || flags == 0 ||
          (request == 58 && (flags & ~std::uint64_t{0x7ffe}) != 0)) {
        status = nv_err_invalid_argument;  // mask_contains_invalid_events(): types 1..14
      } else {
        t->events |= flags;
      }
      put32(8, status);
      std::memcpy(arg->bytes, p, 16);
      return 0;
    }
    return -1;  // ENOTTY
  }

  std::size_t entry_bytes(const tracker& t) const { return t.version == 2 ? 72 : 64; }
  std::size_t dropped_at(const tracker& t) const { return t.version == 2 ? v2_dropped_at : 16; }

  /// The kernel's enqueue_event(): false when the event was dropped (or not asked for).
  bool enqueue(const unsigned char* entry, unsigned char type) {
    tracker* t = queue_tracker();
    if (t == nullptr || (t->events & (std::uint64_t{1} << type)) == 0) return false;
    auto* ctrl = reinterpret_cast<std::uint32_t*>(t->control);
    const std::uint32_t size = t->entries, mask = size - 1;
    const std::uint32_t get_behind = __atomic_load_n(&ctrl[1], __ATOMIC_RELAXED) & mask;
    const std::uint32_t put_behind = __atomic_load_n(&ctrl[3], __ATOMIC_RELAXED) & mask;
    if (((size + get_behind - put_behind) & mask) == 1) {
      auto* dropped = reinterpret_cast<std::uint64_t*>(t->control + dropped_at(*t));
      __atomic_fetch_add(&dropped[type], 1, __ATOMIC_RELAXED);
      return false;
    }
    std::memcpy(t->queue + std::size_t{put_behind} * entry_bytes(*t), entry, entry_bytes(*t));
    __atomic_store_n(&ctrl[2], (put_behind + 1) & mask, __ATOMIC_RELEASE);
    __atomic_store_n(&ctrl[3], (put_behind + 1) & mask, __ATOMIC_RELEASE);
    return true;
  }
  bool cpu_fault(std::uint64_t address) {  // UvmEventCpuFaultInfo(_V2): address at 8
    unsigned char e[72] = {};
    e[0] = 1;
    e[1] = 2;  // a write
    std::memcpy(e + 8, &address, 8);
    return enqueue(e, 1);
  }
  /// UvmEventMigrationInfo(_V1 | _V2) from processor src to dst (0: the CPU).
  bool migration(unsigned src, unsigned dst, std::uint64_t address, std::uint64_t bytes,
                 unsigned char cause) {
    tracker* t = queue_tracker();
    unsigned char e[72] = {};
    e[0] = 2;
    if (t != nullptr && t->version == 2) {
      e[4] = static_cast<unsigned char>(src);
      e[6] = static_cast<unsigned char>(dst);
      std::memcpy(e + 16, &address, 8);
      std::memcpy(e + 24, &bytes, 8);
      e[56] = cause;
    } else {
      e[1] = cause;
      e[2] = static_cast<unsigned char>(src);
      e[3] = static_cast<unsigned char>(dst);
      std::memcpy(e + 8, &address, 8);
      std::memcpy(e + 16, &bytes, 8);
    }
    return enqueue(e, 2);
  }
  std::uint64_t dropped(unsigned char type) {
    tracker* t = queue_tracker();
    return reinterpret_cast<std::uint64_t*>(t->control + dropped_at(*t))[type];
  }
};

fake_module* the_fake = nullptr;

const uvm::driver& fake_driver() {
  static constexpr uvm::driver d{
      [](char* out, std::size_t size) noexcept {
        if (the_fake->version_text.empty()) return false;
        std::snprintf(out, size, "%s\n", the_fake->version_text.c_str());
        return true;
      },
      [](int* out, int max) noexcept {
        int n = 0;
        for (int fd : the_fake->uvm_fds) {
          if (n < max) out[n++] = fd;
        }
        return n;
      },
      []() noexcept {
        ++the_fake->calls;
        if (!the_fake->tools_device) return -1;
        the_fake->trackers.push_back({the_fake->next_fd, nullptr, 0, nullptr, 0});
        return the_fake->next_fd++;
      },
      [](int fd, unsigned long request, uvm::arg_block* block) noexcept {
        return the_fake->ioctl(fd, request, block);
      },
      [](int fd) noexcept {
        if (fake_module::tracker* t = the_fake->find(fd)) t->open = false;
      },
      [](int, int) noexcept { return the_fake->same_file; },
      [](int) noexcept { return the_fake->next_fd++; },
      []() noexcept { return the_fake->page; }};
  return d;
}

int attach_to_fake(ha::region* r) noexcept { return ha::attach_with(r, fake_driver()); }

/// A log laid out for the fake's page size (aligned to it: a 64 KiB page too), as make_region()
/// leaves a shared one.
struct fake_log {
  explicit fake_log(std::size_t page)
      : page_(page), bytes_(ha::offsets_for(page).bytes + page) {
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) base_ = nullptr;
    if (base_ != nullptr) {
      const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(base_);
      r = ha::fill_region(reinterpret_cast<ha::region*>((b + page - 1) / page * page), page, 1);
    }
  }
  ~fake_log() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  fake_log(const fake_log&) = delete;
  fake_log& operator=(const fake_log&) = delete;
  std::uint64_t now() { return ha::now(r, attach_to_fake, page_); }
  /// The spans of [lo, hi) logged in (since, upto] (-1: the whole range).
  int touched(std::uint64_t since, std::uint64_t upto, std::uintptr_t lo, std::uintptr_t hi,
              ha::span* out, int max = 4) {
    return ha::touched_in(r, since, upto, lo, hi, 0, out, max);
  }
  ha::region* r = nullptr;

 private:
  std::size_t page_, bytes_;
  void* base_ = nullptr;
};

/// The fake as the module of that version is, read at its tag.
fake_module module_as_at(const std::string& version) {
  fake_module m;
  m.version_text = version;
  const unsigned branch = static_cast<unsigned>(std::stoul(version));
  if (version == "550.40.07" || branch < 550) return m;  // 56 bytes, version 1 only
  m.has_v2 = true;
  if (branch == 550 || branch == 555) {  // requestedVersion 52 (in), grantedVersion 56 (out)
    m.params_bytes = 64;
    m.version_in_at = 52;
    m.granted_at = 56;
    m.v2_dropped_at = branch == 550 ? 24 : 16;  // 550: UvmToolsEventControlData_V2
  } else if (branch == 560) {  // version 48 (in), rmStatus 52
    m.version_in_at = 48;
    m.status_at = 52;
  } else {  // 565 on: version 2 by its own ioctl
    m.init_v2_ioctl = true;
  }
  return m;
}

struct with_fake {
  explicit with_fake(fake_module& m) { the_fake = &m; }
  ~with_fake() { the_fake = nullptr; }
};
}  // namespace

// What each module version is talked to in: read, a later release of a read branch, refused.
TEST(UvmDriver, EveryVersionReadHasItsLayoutAndEveryOtherIsRefused) {
  EXPECT_EQ(uvm::parse_version("580.142\n"), uvm::version(580, 142));
  EXPECT_EQ(uvm::parse_version("550.40.07"), uvm::version(550, 40, 7));
  EXPECT_GT(uvm::parse_version("550.54.14"), uvm::parse_version("550.40.53"));
  for (const char* bad : {"", "\n", "580", "580.", ".142", "580.142.", "580.142a", "580.142.1.2",
                          "580.70000", "9999999.1", "-580.142", "580,142"}) {
    EXPECT_EQ(uvm::parse_version(bad), 0u) << bad;
  }
  struct row {
    const char* version;
    uvm::match::how_kind how;
    std::size_t params_bytes, status_at;
    unsigned long v2;  // the ioctl of a version-2 queue (0: none)
  };
  const row rows[] = {
      {"515.43.04", uvm::match::read, 56, 48, 0},    {"525.147.05", uvm::match::read, 56, 48, 0},
      {"535.288.01", uvm::match::read, 56, 48, 0},   {"550.40.07", uvm::match::read, 56, 48, 0},
      {"550.54.14", uvm::match::read, 64, 48, 56},   {"550.163.01", uvm::match::read, 64, 48, 56},
      {"555.58.02", uvm::match::read, 64, 48, 56},   {"560.35.03", uvm::match::read, 56, 52, 56},
      {"565.57.01", uvm::match::read, 56, 48, 76},   {"570.211.01", uvm::match::read, 56, 48, 76},
      {"580.142", uvm::match::read, 56, 48, 76},     {"595.45.04", uvm::match::read, 56, 48, 76},
      {"580.159", uvm::match::later_release, 56, 48, 76},
      {"550.170", uvm::match::later_release, 64, 48, 56},
      {"550.40.30", uvm::match::refused, 0, 0, 0},   // between two layouts of one branch
      {"515.1", uvm::match::refused, 0, 0, 0},       // before a branch's first tag read
      {"510.108.03", uvm::match::refused, 0, 0, 0},  // a branch not read (not open source)
      {"600.10", uvm::match::refused, 0, 0, 0},      // a branch newer than the source read
      {"", uvm::match::unreadable, 0, 0, 0},
  };
  for (const row& r : rows) {
    SCOPED_TRACE(r.version);
    const uvm::match m = uvm::find_layout(uvm::parse_version(r.version));
    EXPECT_EQ(m.how, r.how);
    ASSERT_EQ(m.found != nullptr, r.params_bytes != 0);
    if (m.found == nullptr) continue;
    EXPECT_EQ(m.found->params_bytes, r.params_bytes);
    EXPECT_EQ(m.found->status_at, r.status_at);
    EXPECT_EQ(m.found->v2_request, r.v2);
    EXPECT_LE(m.found->params_bytes, uvm::arg_bytes);
  }
}

// Every layout read, against a fake of that version: a tracker attaches with a version-2 queue
// where the module has one, and the log takes in a CPU fault (its 2 MiB block) and a migration
// from a GPU to the CPU (its blocks), not a migration to a GPU; the module found the queue and
// control page page-aligned and the events asked for valid. The parameter block unimem handed is
// the module's own size (550/555: 64 bytes, a version granted at 56; 560: the version at 48, the
// status at 52): on 99b7c03's 56-byte block with the status at 48 the 550 fake wrote its
// grantedVersion past the block (ASan: stack-buffer-overflow), the 560 fake's refusal
// (status at 52) read as success, and no migration reached the log (CPU faults only).
TEST(UvmDriver, EachLayoutReadAttachesAndItsEventsReachTheLog) {
  for (const char* v : {"525.147.05", "535.288.01", "550.40.07", "550.54.14", "550.163.01",
                        "555.58.02", "560.35.03", "565.77", "570.211.01", "580.142", "580.159",
                        "595.45.04"}) {
    SCOPED_TRACE(v);
    fake_module m = module_as_at(v);
    with_fake use(m);
    fake_log log(m.page);
    ASSERT_NE(log.r, nullptr);
    const std::uint64_t e0 = log.now();
    ASSERT_EQ(log.r->source.load(), static_cast<int>(ha::signal::uvm_events)) << ha::to_string(
        static_cast<ha::reason>(log.r->why.load()));
    EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::tracker));
    EXPECT_EQ(log.r->queue_version, m.has_v2 ? 2 : 1);
    EXPECT_EQ(log.r->module_version, uvm::parse_version(v));
    ASSERT_NE(m.queue_tracker(), nullptr);
    EXPECT_EQ(m.queue_tracker()->entries, ha::queue_capacity);
    EXPECT_EQ(m.queue_tracker()->events, ha::cpu_fault_events | ha::migration_events);
    EXPECT_EQ(log.now(), e0) << "no event, yet news";

    const std::uintptr_t base = std::uintptr_t{1} << 40;
    ASSERT_TRUE(m.cpu_fault(base + 5 * blk + 4096 + 12));
    const std::uint64_t e1 = log.now();
    EXPECT_GT(e1, e0);
    ha::span out[4];
    ASSERT_EQ(log.touched(e0, e1, base, base + 64 * blk, out), 1);
    EXPECT_EQ(out[0].lo, base + 5 * blk);
    EXPECT_EQ(out[0].hi, base + 6 * blk);

    ASSERT_TRUE(m.migration(0, 1, base + 9 * blk, 4 * blk, 3));  // to GPU 1 (a prefetch)
    ASSERT_TRUE(m.migration(1, 0, base + 20 * blk + 100, 2 * blk, 4));  // evicted to the CPU
    const std::uint64_t e2 = log.now();
    ASSERT_EQ(log.touched(e1, e2, base, base + 64 * blk, out), 1);
    EXPECT_EQ(out[0].lo, base + 20 * blk) << "the migration to the CPU was not logged";
    EXPECT_EQ(out[0].hi, base + 23 * blk);
    EXPECT_TRUE(m.problems.empty()) << m.problems.front();
  }
}

// A module that refuses version-2 queues: a version-1 queue, read as 64-byte entries (a 64-byte
// queue read as 72-byte entries puts the second event's address in the middle of another).
TEST(UvmDriver, VersionOneQueuesAreReadAsSixtyFourByteEntries) {
  for (const char* v : {"550.54.14", "560.35.03", "580.142"}) {
    SCOPED_TRACE(v);
    fake_module m = module_as_at(v);
    m.refuse_v2 = true;
    with_fake use(m);
    fake_log log(m.page);
    const std::uint64_t e0 = log.now();
    ASSERT_EQ(log.r->queue_version, 1);
    const std::uintptr_t base = std::uintptr_t{1} << 40;
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(m.cpu_fault(base + std::uintptr_t(10 * k) * blk));
    const std::uint64_t e1 = log.now();
    ha::span out[8];
    ASSERT_EQ(log.touched(e0, e1, base, base + 64 * blk, out, 8), 5);
    for (int k = 0; k < 5; ++k) EXPECT_EQ(out[k].lo, base + std::uintptr_t(10 * k) * blk);
  }
}

// Versions whose layout unimem has not read: no ioctl at all (99b7c03 issued its one layout to
// every module), and report()'s reason says why.
TEST(UvmDriver, AVersionNotReadGetsNoIoctlAndThePageFaultSignal) {
  for (const char* v : {"600.10", "550.40.30", "510.108.03", ""}) {
    SCOPED_TRACE(v);
    fake_module m = module_as_at(std::string(v).empty() ? "580.142" : v);
    m.version_text = v;
    with_fake use(m);
    fake_log log(m.page);
    (void)log.now();
    EXPECT_EQ(m.calls, 0) << "the tools device was opened or an ioctl issued";
    EXPECT_EQ(log.r->source.load(), static_cast<int>(ha::signal::page_faults));
    EXPECT_EQ(log.r->why.load(), static_cast<int>(std::string(v).empty()
                                                       ? ha::reason::no_module
                                                       : ha::reason::version_refused));
    EXPECT_EQ(log.r->retry_at, 0u) << "a final answer is tried again";
  }
}

// The parameter block after the layout's bytes is a canary: a module that writes there is not the
// version read (here a 580.159 whose block grew to 64 bytes) and is refused.
TEST(UvmDriver, AModuleWritingPastItsLayoutIsRefused) {
  fake_module m = module_as_at("580.159");
  m.writes_past = 8;
  with_fake use(m);
  fake_log log(m.page);
  (void)log.now();
  EXPECT_EQ(log.r->source.load(), static_cast<int>(ha::signal::page_faults));
  EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::refused));
  for (const fake_module::tracker& t : m.trackers) EXPECT_FALSE(t.open) << "a tracker left open";
}

// 64 KiB pages (aarch64 kernels, Grace): the control page and queue are aligned to the system's
// page (99b7c03 aligned them to 4 KiB, which such a module refuses).
TEST(UvmDriver, ControlPageAndQueueAreAlignedToTheSystemPage) {
  fake_module m = module_as_at("580.142");
  m.page = 65536;
  with_fake use(m);
  fake_log log(m.page);
  (void)log.now();
  EXPECT_EQ(log.r->source.load(), static_cast<int>(ha::signal::uvm_events))
      << ha::to_string(static_cast<ha::reason>(log.r->why.load()));
  const ha::offsets o = ha::offsets_for(65536);
  EXPECT_EQ(o.control % 65536, 0u);
  EXPECT_EQ(o.queue % 65536, 0u);
  EXPECT_GE(o.bytes - o.queue, std::size_t{ha::queue_capacity} * uvm::max_entry_bytes);
}

// A full queue drops events: the log covers everything before the next now() returns, on the
// look that drains the queue and on the fast path (a drop counted while the queue looks empty:
// 99b7c03's fast path compared only the queue's indices and said nothing happened).
TEST(UvmDriver, DroppedEventsLeaveNothingKnownBeforeTheNextLookReturns) {
  for (const char* v : {"550.54.14", "580.142"}) {  // dropped[] at 24 and at 16
    SCOPED_TRACE(v);
    fake_module m = module_as_at(v);
    with_fake use(m);
    fake_log log(m.page);
    const std::uint64_t e0 = log.now();
    const std::uintptr_t base = std::uintptr_t{1} << 40, far = base + (std::uintptr_t{1} << 38);
    std::uint32_t queued = 0;  // one block (one log entry) until the queue is full
    while (m.cpu_fault(base + 4096 * (queued % 32))) ++queued;
    EXPECT_EQ(queued, ha::queue_capacity - 1) << "the kernel keeps one slot free";
    EXPECT_EQ(m.dropped(1), 1u);
    const std::uint64_t e1 = log.now();
    ha::span out[4];
    EXPECT_EQ(log.touched(e0, e1, far, far + blk, out), -1)
        << "events were dropped, yet a block nobody logged is still known";
    EXPECT_EQ(log.touched(e1, log.now(), far, far + blk, out), 0);
    // A drop the fast path must see: the queue is empty, only the count moved.
    const std::uint64_t e2 = log.now();
    auto* dropped = reinterpret_cast<std::uint64_t*>(m.queue_tracker()->control +
                                                     m.dropped_at(*m.queue_tracker()));
    __atomic_fetch_add(&dropped[2], 1, __ATOMIC_RELEASE);  // a migration dropped
    const std::uint64_t e3 = log.now();
    EXPECT_GT(e3, e2) << "a dropped event, and the fast path said nothing happened";
    EXPECT_EQ(log.touched(e2, e3, far, far + blk, out), -1);
  }
}

// What the memfd shares is trusted for nothing that indexes memory: a queue version, a dropped[]
// offset or a read index out of range (another process's memfd of the same name, memory gone
// wrong) neither reads outside the queue nor logs garbage (ASan in the sanitize toolchain; on
// 99b7c03 entry_size came from the memfd and queue_get indexed the queue unmasked).
TEST(UvmDriver, CorruptSharedIndicesNeverReadOutsideTheQueue) {
  fake_module m = module_as_at("580.142");
  with_fake use(m);
  fake_log log(m.page);
  const std::uint64_t e0 = log.now();
  ASSERT_EQ(log.r->queue_version, 2);
  const std::uintptr_t base = std::uintptr_t{1} << 40;
  ASSERT_TRUE(m.cpu_fault(base + 3 * blk));
  log.r->queue_get.store(0xfffffff0u);  // masked: entry 0xfffffff0 % 16384 = 16368 on
  const std::uint64_t e1 = log.now();
  EXPECT_GT(e1, e0);
  EXPECT_EQ(log.r->queue_get.load() & ha::queue_mask, 1u) << "the read index is not masked";
  // A queue version or dropped[] offset out of range: nothing read; the page-fault signal.
  for (int field : {0, 1}) {
    for (int bad : {0, 3, 72, -1, 1 << 22}) {
      SCOPED_TRACE(std::to_string(field) + ": " + std::to_string(bad));
      fake_module fresh = module_as_at("580.142");
      with_fake again(fresh);
      fake_log corrupt(fresh.page);
      const std::uint64_t c0 = corrupt.now();
      ASSERT_EQ(corrupt.r->source.load(), static_cast<int>(ha::signal::uvm_events));
      ASSERT_TRUE(fresh.cpu_fault(base + 7 * blk));
      (field == 0 ? corrupt.r->queue_version : corrupt.r->dropped_at) = bad;
      const std::uint64_t c1 = corrupt.now();
      EXPECT_GT(c1, c0);
      EXPECT_EQ(corrupt.r->source.load(), static_cast<int>(ha::signal::page_faults));
      EXPECT_EQ(corrupt.r->why.load(), static_cast<int>(ha::reason::log_corrupt));
      ha::span out[4];
      EXPECT_EQ(corrupt.touched(c0, c1, base + 40 * blk, base + 41 * blk, out), -1);
    }
  }
}

// Where the runtime's UVM file the tracker watched is gone (cudaDeviceReset closes it), the
// tracker is closed, the page-fault signal serves, and a tracker on the new file is attached at
// the next fault.
TEST(UvmDriver, ATrackerThatLostTheRuntimesFileIsReplaced) {
  fake_module m = module_as_at("580.142");
  with_fake use(m);
  fake_log log(m.page);
  (void)log.now();
  ASSERT_EQ(log.r->source.load(), static_cast<int>(ha::signal::uvm_events));
  m.same_file = false;
  {
    unimem::detail::spin_guard g(log.r->lock);
    ha::check_tracker(log.r, fake_driver());
  }
  EXPECT_EQ(log.r->source.load(), static_cast<int>(ha::signal::page_faults));
  EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::tracker_lost));
  for (const fake_module::tracker& t : m.trackers) EXPECT_FALSE(t.open);
  m.same_file = true;
  m.uvm_fds = {9};  // the runtime's new UVM descriptor
  (void)unimem_test::fault_fresh_memory(2);
  (void)log.now();
  EXPECT_EQ(log.r->source.load(), static_cast<int>(ha::signal::uvm_events));
  EXPECT_EQ(log.r->uvm_fd, 9);
  const std::uintptr_t base = std::uintptr_t{1} << 40;
  const std::uint64_t e0 = log.now();
  ASSERT_TRUE(m.cpu_fault(base));
  EXPECT_GT(log.now(), e0) << "the new tracker's events do not reach the log";
}

// No tools device, no UVM descriptor yet (tried again after the runtime's start), every
// descriptor refused: each reason, for report().
TEST(UvmDriver, EachReasonForThePageFaultSignal) {
  fake_module m = module_as_at("580.142");
  with_fake use(m);
  {
    m.tools_device = false;
    fake_log log(m.page);
    (void)log.now();
    EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::no_tools));
  }
  {
    m.tools_device = true;
    m.uvm_fds.clear();
    fake_log log(m.page);
    (void)log.now();
    EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::no_uvm_fd_yet));
    EXPECT_GT(log.r->retry_at, log.r->faults_seen.load());
  }
  {
    m.uvm_fds = {7, 8};
    m.refuse = true;
    fake_log log(m.page);
    (void)log.now();
    EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::refused));
    EXPECT_EQ(log.r->retry_at, 0u);
    for (const fake_module::tracker& t : m.trackers) EXPECT_FALSE(t.open);
  }
}

namespace {
/// Runs f in a child process; its exit status (0: passed), or -1 if it died of a signal.
template <class F>
int in_a_child(F&& f) {
  const pid_t pid = fork();
  if (pid == 0) _exit(f());
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -2;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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

// A memfd of this process's name found before its maker sized it (another copy between
// memfd_create and ftruncate): not mapped until it is sized and sealed (99b7c03 mapped it at
// once: SIGBUS reading its layout); never sized, a private log.
TEST(HostAccess, ALogFoundBeforeItIsSizedIsNotMapped) {
  const int result = in_a_child([] {
    char name[64], link[96];
    ha::region_name(name, sizeof name, link, sizeof link);
    const int early = static_cast<int>(syscall(SYS_memfd_create, name, 3u));  // 0 bytes
    if (early < 0) return 10;
    ha::copy_state c;
    ha::region* r = ha::make_region(c, ha::system_page());
    if (r == nullptr) return 1;
    return r->shared == 0 && r->why.load() == static_cast<int>(ha::reason::private_log) ? 0 : 2;
  });
  EXPECT_EQ(result, 0) << "-1: died of a signal (SIGBUS); 2: shared a log never sized";
}
#endif  // __linux__
