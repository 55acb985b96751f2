// The UVM driver's tools interface under the host-access log (placement/detail/uvm/,
// host_access/tracker.hpp), against a fake module written from the driver's source
// (fake_uvm_module.hpp), no GPU: every layout at every row boundary of the table, drops on every
// branch, versions not read (a self-check proves or refuses their layout), version-1 queues,
// 64 KiB pages, entries published before they are written (aarch64), corrupt shared memory, a
// tracker that lost the runtime's UVM file, a duplicate that could not be made, passing and
// final errors, UVM files a child inherited, descriptors lowest first, and now() beside
// check_tracker() (tsan.host_tests runs these under ThreadSanitizer).
#include "fake_uvm_module.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <fcntl.h>
#include <sys/stat.h>
#endif

#if defined(__linux__)
namespace {
namespace ha = unimem::detail::host_access;
namespace uvm = unimem::detail::uvm;
using fake_uvm::module;
using fake_uvm::module_as_at;
constexpr std::uintptr_t block = ha::block_bytes;
constexpr std::uintptr_t base = std::uintptr_t{1} << 40;

std::string why(const ha::region* r) {
  return std::string(ha::to_string(static_cast<ha::reason>(r->why.load()))) + "; " +
         ha::to_string(static_cast<ha::proof>(r->proof_of_layout.load()));
}
bool on_events(const ha::region* r) {
  return r->source.load() == static_cast<int>(ha::signal::uvm_events);
}
bool all_closed(const module& m) {
  for (const module::tracker& t : m.trackers) {
    if (t.open) return false;
  }
  return true;
}
}  // namespace

// What each module version is talked to in: read, or not read (the newest layout read at or
// before it, to be proven), or no version at all.
TEST(UvmDriver, EveryVersionReadHasItsLayoutAndEveryOtherAwaitsItsSelfCheck) {
  EXPECT_EQ(uvm::parse_version("580.142\n"), uvm::version(580, 142));
  EXPECT_EQ(uvm::parse_version("550.40.07"), uvm::version(550, 40, 7));
  EXPECT_GT(uvm::parse_version("550.54.14"), uvm::parse_version("550.40.53"));
  for (const char* bad : {"", "\n", "580", "580.", ".142", "580.142.", "580.142a", "580.142.1.2",
                          "580.70000", "9999999.1", "-580.142", "580,142"}) {
    EXPECT_EQ(uvm::parse_version(bad), 0u) << bad;
    EXPECT_EQ(uvm::find_layout(uvm::parse_version(bad)).how, uvm::match::unparseable) << bad;
  }
  struct row {
    const char* version;
    uvm::match::how_kind how;
    const char* first;  // of the layout found
  };
  const row rows[] = {
      {"515.43.04", uvm::match::read, "515.43.04"},   {"525.147.05", uvm::match::read, "525.47.04"},
      {"545.29.06", uvm::match::read, "545.23.06"},   {"550.40.07", uvm::match::read, "550.40.07"},
      {"550.40.53", uvm::match::read, "550.40.53"},   {"550.163.01", uvm::match::read, "550.40.53"},
      {"555.42.02", uvm::match::read, "555.42.02"},   {"560.35.03", uvm::match::read, "560.28.03"},
      {"565.57.01", uvm::match::read, "565.57.01"},   {"595.45.04", uvm::match::read, "595.44.02"},
      {"580.159", uvm::match::unread, "580.65.06"},   // a later point release
      {"550.40.30", uvm::match::unread, "550.40.07"},  // between two layouts of one branch
      {"545.29.99", uvm::match::unread, "545.23.06"},  // the branch before 550's change
      {"600.10", uvm::match::unread, "595.44.02"},     // a branch newer than the source read
      {"510.108.03", uvm::match::unread, "515.43.04"},  // older than every tag read
  };
  for (const row& r : rows) {
    SCOPED_TRACE(r.version);
    const uvm::match m = uvm::find_layout(uvm::parse_version(r.version));
    EXPECT_EQ(m.how, r.how);
    ASSERT_NE(m.found, nullptr);
    EXPECT_EQ(m.found->first, uvm::parse_version(r.first));
  }
}

// Every row boundary of the table (the first and last tag of each branch, and 550.40.53), against
// a fake of that version: a tracker attaches in the version's layout with a version-2 queue
// where the module has one, and the log takes in a CPU fault (its 2 MiB block) and a migration
// from a GPU to the CPU (its blocks), not a migration to a GPU; the module found the queue and
// control page page-aligned, writable and of its own sizes, and the events asked for valid. A
// row whose first version or block were wrong fails here (on 99b7c03's 56-byte block with the
// status at 48 the 550 fake wrote its grantedVersion past the block, and the 560 fake's refusal
// read as success).
TEST(UvmDriver, EveryRowBoundaryAttachesInItsLayoutAndItsEventsReachTheLog) {
  for (const std::string& v : fake_uvm::every_row_boundary()) {
    SCOPED_TRACE(v);
    module m = module_as_at(v);
    fake_uvm::use in(m);
    fake_uvm::log log(m.page);
    ASSERT_NE(log.r, nullptr);
    const std::uint64_t e0 = log.now();
    ASSERT_TRUE(on_events(log.r)) << why(log.r);
    EXPECT_EQ(log.r->proof_of_layout.load(), static_cast<int>(ha::proof::read));
    EXPECT_EQ(log.r->queue_version.load(), m.has_v2 ? 2 : 1);
    EXPECT_EQ(log.r->module_version.load(), uvm::parse_version(v.c_str()));
    EXPECT_EQ(log.r->uvm_fd.load(), 5) << "the va space's descriptor";
    ASSERT_NE(m.queue_tracker(), nullptr);
    EXPECT_EQ(m.queue_tracker()->entries, ha::queue_capacity);
    EXPECT_EQ(m.queue_tracker()->events, ha::cpu_fault_events | ha::migration_events);
    EXPECT_EQ(log.now(), e0) << "no event, yet news";

    ASSERT_TRUE(m.cpu_fault(base + 5 * block + 4096));
    const std::uint64_t e1 = log.now();
    EXPECT_GT(e1, e0);
    ha::span out[4];
    ASSERT_EQ(log.touched(e0, e1, base, base + 64 * block, out), 1);
    EXPECT_EQ(out[0].lo, base + 5 * block);
    EXPECT_EQ(out[0].hi, base + 6 * block);

    ASSERT_TRUE(m.migration(0, 1, base + 9 * block, 4 * block, 3));         // to GPU 1
    ASSERT_TRUE(m.migration(1, 0, base + 20 * block + 100, 2 * block, 4));  // evicted to the CPU
    const std::uint64_t e2 = log.now();
    ASSERT_EQ(log.touched(e1, e2, base, base + 64 * block, out), 1);
    EXPECT_EQ(out[0].lo, base + 20 * block) << "the migration to the CPU was not logged";
    EXPECT_EQ(out[0].hi, base + 23 * block);
    EXPECT_TRUE(m.problems.empty()) << m.problems.front();
  }
}

// A full queue drops events, on every branch: the log covers everything before the next now()
// returns, on the look that drains the queue and on the fast path (a drop counted while the
// queue looks empty: 99b7c03's fast path compared only the queue's indices). A wrong dropped[]
// offset for any branch (550's version-2 control page has it at 24, every other at 16) fails.
TEST(UvmDriver, DroppedEventsLeaveNothingKnownOnEveryBranch) {
  for (const std::string& v : fake_uvm::every_row_boundary()) {
    SCOPED_TRACE(v);
    module m = module_as_at(v);
    fake_uvm::use in(m);
    fake_uvm::log log(m.page);
    const std::uint64_t e0 = log.now();
    ASSERT_TRUE(on_events(log.r)) << why(log.r);
    const std::uintptr_t far = base + (std::uintptr_t{1} << 38);
    std::uint32_t queued = 0;  // one block (one log entry) until the queue is full
    while (m.cpu_fault(base + 4096 * (queued % 32))) ++queued;
    EXPECT_EQ(queued, ha::queue_capacity - 1) << "the kernel keeps one slot free";
    EXPECT_EQ(m.dropped(1), 1u);
    const std::uint64_t e1 = log.now();
    ha::span out[4];
    EXPECT_EQ(log.touched(e0, e1, far, far + block, out), -1)
        << "events were dropped, yet a block nobody logged is still known";
    EXPECT_EQ(log.touched(e1, log.now(), far, far + block, out), 0);
    // A drop the fast path must see: the queue is empty, only the count moved.
    const std::uint64_t e2 = log.now();
    auto* dropped = reinterpret_cast<std::uint64_t*>(m.queue_tracker()->control +
                                                     m.dropped_at(*m.queue_tracker()));
    __atomic_fetch_add(&dropped[2], 1, __ATOMIC_RELEASE);  // a migration dropped
    const std::uint64_t e3 = log.now();
    EXPECT_GT(e3, e2) << "a dropped event, and the fast path said nothing happened";
    EXPECT_EQ(log.touched(e2, e3, far, far + block, out), -1);
  }
}

// A module that refuses version-2 queues: a version-1 queue, read as 64-byte entries (a 64-byte
// queue read as 72-byte entries puts the second event's address in the middle of another).
TEST(UvmDriver, VersionOneQueuesAreReadAsSixtyFourByteEntries) {
  for (const char* v : {"550.54.14", "555.58.02", "560.35.03", "580.142"}) {
    SCOPED_TRACE(v);
    module m = module_as_at(v);
    m.refuse_v2 = true;
    fake_uvm::use in(m);
    fake_uvm::log log(m.page);
    const std::uint64_t e0 = log.now();
    ASSERT_EQ(log.r->queue_version.load(), 1) << why(log.r);
    for (int k = 0; k < 5; ++k) ASSERT_TRUE(m.cpu_fault(base + std::uintptr_t(10 * k) * block));
    const std::uint64_t e1 = log.now();
    ha::span out[8];
    ASSERT_EQ(log.touched(e0, e1, base, base + 64 * block, out, 8), 5);
    for (int k = 0; k < 5; ++k) EXPECT_EQ(out[k].lo, base + std::uintptr_t(10 * k) * block);
  }
}

// A version not read (a later point release, a branch newer than the source read) whose layout
// is the one unimem would talk in: the self-check proves it on the first look (two CPU touches
// of unimem's own managed memory, one dropped from a full queue, one queued), and the tracker
// then serves; report() says so.
TEST(UvmDriver, AVersionNotReadIsUsedOnceTheSelfCheckProvedItsLayout) {
  for (const char* v : {"580.159", "600.10", "550.170", "555.99.01", "560.40"}) {
    SCOPED_TRACE(v);
    module m = module_as_at(v);
    fake_uvm::use in(m);
    fake_uvm::log log(m.page);
    const std::uint64_t e0 = log.now();
    ASSERT_TRUE(on_events(log.r)) << why(log.r);
    EXPECT_EQ(log.r->proof_of_layout.load(), static_cast<int>(ha::proof::checked));
    EXPECT_TRUE(m.memory.empty()) << "the self-check's managed memory was not freed";
    EXPECT_EQ(m.queue_tracker()->events, ha::cpu_fault_events | ha::migration_events);
    EXPECT_EQ(log.now(), e0) << "the self-check's own events reached the log";
    ASSERT_TRUE(m.cpu_fault(base + 3 * block));
    ASSERT_TRUE(m.migration(1, 0, base + 30 * block, block, 4));
    const std::uint64_t e1 = log.now();
    ha::span out[4];
    ASSERT_EQ(log.touched(e0, e1, base, base + 64 * block, out), 2);
    EXPECT_EQ(out[0].lo, base + 3 * block);
    EXPECT_EQ(out[1].lo, base + 30 * block);
    EXPECT_TRUE(m.problems.empty()) << m.problems.front();
  }
}

// A version not read whose layout changed (as 550.40.07 -> 550.40.53 did inside one branch)
// fails the self-check and is refused for good, each way a layout can move, with the tracker
// closed and report()'s reason saying how: a larger parameter block (the guard page after the
// block: EFAULT), larger or smaller entries (a larger queue reaches the guard page; a smaller
// entry lands its event elsewhere), a control page larger than a page or with dropped[]
// elsewhere, a CPU fault's fields moved, a module that makes no event for the touch. (Before:
// a later release got its branch's newest layout unread: each of these was used as if read.)
TEST(UvmDriver, AVersionNotReadWhoseLayoutChangedFailsTheSelfCheck) {
  struct change {
    const char* what;
    const char* version;
    void (*apply)(module&);
    ha::proof expected;
  };
  const change changes[] = {
      {"a 64-byte block (550.40.53's) where 545's has 56", "545.29.99",
       [](module& m) {
         m = module_as_at("550.40.53");
         m.version_text = "545.29.99";
       },
       ha::proof::block_refused},
      {"a 72-byte block", "580.159", [](module& m) { m.params_bytes = 72; },
       ha::proof::block_refused},
      {"larger entries (80 and 88 bytes)", "580.159",
       [](module& m) {
         m.entry_v1 = 80;
         m.entry_v2 = 88;
       },
       ha::proof::block_refused},
      {"64-byte version-2 entries", "580.159", [](module& m) { m.entry_v2 = 64; },
       ha::proof::event_elsewhere},
      {"a control page of more than a page", "580.159",
       [](module& m) { m.control_v1 = m.control_v2 = 4096 + 8; }, ha::proof::block_refused},
      {"dropped[] at 24 (550's version-2 page) in 555", "555.60",
       [](module& m) {
         m.v2_dropped_at = 24;
         m.control_v2 = 536;
       },
       ha::proof::drop_elsewhere},
      {"dropped[] at 16 where 550 has 24", "550.170", [](module& m) { m.v2_dropped_at = 16; },
       ha::proof::drop_elsewhere},
      {"a CPU fault's address at 40", "600.10", [](module& m) { m.cpu_fault_address_at = 40; },
       ha::proof::event_elsewhere},
      {"a CPU fault's pid at 40", "600.10", [](module& m) { m.cpu_fault_pid_at = 40; },
       ha::proof::event_elsewhere},
  };
  for (const change& c : changes) {
    SCOPED_TRACE(c.what);
    module m = module_as_at(c.version);
    c.apply(m);
    fake_uvm::use in(m);
    fake_uvm::log log(m.page);
    (void)log.now();
    EXPECT_FALSE(on_events(log.r)) << "a layout that moved was used";
    EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::self_check_failed)) << why(log.r);
    EXPECT_EQ(log.r->proof_of_layout.load(), static_cast<int>(c.expected)) << why(log.r);
    EXPECT_EQ(log.r->retry_at.load(), 0u) << "a failed self-check is tried again";
    EXPECT_TRUE(all_closed(m)) << "a tracker left open";
    EXPECT_TRUE(m.memory.empty()) << "the self-check's managed memory was not freed";
  }
  // No managed memory to check with: tried again later (passing), nothing left open.
  module m = module_as_at("580.159");
  fake_uvm::use in(m);
  fake_uvm::log log(m.page);
  uvm::driver no_managed = fake_uvm::fake_driver();
  no_managed.map_managed = [](std::size_t) noexcept -> void* { return nullptr; };
  EXPECT_EQ(ha::attach_with(log.r, no_managed), ha::try_again);
  EXPECT_EQ(log.r->proof_of_layout.load(), static_cast<int>(ha::proof::no_probe));
  EXPECT_TRUE(all_closed(m));
}

// The parameter block ends where a guard page begins: a module whose block is larger than the
// layout's faults in its copy-in and is refused, with nothing written (before: a 128-byte block
// whose zero tail was a canary, which a driver reading more than it writes passed).
TEST(UvmDriver, AModuleWithALargerBlockFaultsOnTheGuardPage) {
  module m = module_as_at("580.142");
  m.params_bytes = 64;
  fake_uvm::use in(m);
  fake_uvm::log log(m.page);
  (void)log.now();
  EXPECT_FALSE(on_events(log.r));
  EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::refused));
  EXPECT_TRUE(all_closed(m));
  uvm::guarded_block b;
  ASSERT_TRUE(static_cast<bool>(b));
  const auto p = reinterpret_cast<std::uintptr_t>(b.last(56));
  EXPECT_TRUE(fake_uvm::writable(p, 56));
  EXPECT_FALSE(fake_uvm::writable(p, 57)) << "no guard page after the block";
  // A layout whose fields lie outside its own block is refused before any call.
  uvm::layout outside = *uvm::find_layout(uvm::version(580, 142)).found;
  outside.status_at = 56;
  const int calls = m.calls;
  int version = 0;
  EXPECT_EQ(uvm::open_tracker(fake_uvm::fake_driver(), outside, 5, {{nullptr, nullptr}, 0, nullptr},
                              &version),
            uvm::refused_by_driver);
  EXPECT_EQ(m.calls, calls);
}

// 64 KiB pages (aarch64 kernels, Grace): the control page and queue are aligned to the system's
// page (99b7c03 aligned them to 4 KiB, which such a module refuses), and the guard pages too.
TEST(UvmDriver, ControlPageAndQueueAreAlignedToTheSystemPage) {
  for (const char* v : {"580.142", "580.159"}) {
    SCOPED_TRACE(v);
    module m = module_as_at(v);
    m.page = 65536;
    fake_uvm::use in(m);
    fake_uvm::log log(m.page);
    (void)log.now();
    EXPECT_TRUE(on_events(log.r)) << why(log.r);
    const ha::offsets o = ha::offsets_for(65536);
    EXPECT_EQ(o.control % 65536, 0u);
    EXPECT_EQ(o.queue_end % 65536, 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ha::queue_of(log.r, 65536, 1)) % 65536, 0u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ha::queue_of(log.r, 65536, 2)) % 65536, 0u);
  }
}

// The driver copies an entry, then sets put_behind, with no write barrier (every version's
// enqueue_event()): an aarch64 reader can see the index before the entry. Each slot is filled
// with `unwritten` before it is handed back: an entry not written yet covers everything, is not
// handed back, and is read once written. (Before: the slot's entry from the previous lap was
// read as the new one: its block logged, the new one missed.)
TEST(UvmDriver, AnEntryPublishedBeforeItIsWrittenIsReadOnceWritten) {
  module m = module_as_at("580.142");
  fake_uvm::use in(m);
  fake_uvm::log log(m.page);
  std::uint64_t e = log.now();
  ASSERT_TRUE(on_events(log.r)) << why(log.r);
  // A lap of the queue, so that the next slot holds an old, complete entry of its own.
  for (std::uint32_t k = 0; k < ha::queue_capacity; ++k) {
    ASSERT_TRUE(m.cpu_fault(base + 40 * block));
    if (k % 1024 == 1023) e = log.now();
  }
  e = log.now();
  const std::uintptr_t far = base + (std::uintptr_t{1} << 38);
  m.publish_before_writing = true;
  ASSERT_TRUE(m.cpu_fault(far));
  const std::uint64_t seen = log.now();
  ha::span out[4];
  EXPECT_EQ(log.touched(e, seen, far, far + block, out), -1)
      << "an entry not written yet, and the block it will name is known untouched";
  const std::uint32_t get = log.r->queue_get.load();
  EXPECT_NE(get, __atomic_load_n(reinterpret_cast<std::uint32_t*>(ha::control_of(log.r, m.page)) + 3,
                                 __ATOMIC_ACQUIRE))
      << "the entry not written yet was handed back";
  m.finish_pending();
  m.publish_before_writing = false;
  const std::uint64_t later = log.now();
  ASSERT_EQ(log.touched(seen, later, far, far + 2 * block, out), 1);
  EXPECT_EQ(out[0].lo, far);
  EXPECT_TRUE(ha::all_bytes(ha::queue_of(log.r, m.page, 2) + std::size_t{get} * 72, 72,
                            ha::unwritten))
      << "a slot read was handed back without being marked unwritten";
}

// What the memfd shares is trusted for nothing that indexes memory: a queue version, a dropped[]
// offset or a read index out of range (another process's memfd of the same name, memory gone
// wrong) neither reads outside the queue nor logs garbage (ASan in the sanitize toolchain; on
// 99b7c03 entry_size came from the memfd and queue_get indexed the queue unmasked); a read index
// that names no entry, look after look, is the page-fault signal.
TEST(UvmDriver, CorruptSharedIndicesNeverReadOutsideTheQueue) {
  module m = module_as_at("580.142");
  fake_uvm::use in(m);
  fake_uvm::log log(m.page);
  const std::uint64_t e0 = log.now();
  ASSERT_EQ(log.r->queue_version.load(), 2);
  ASSERT_TRUE(m.cpu_fault(base + 3 * block));
  log.r->queue_get.store(0xfffffff0u);  // masked: slot 16368, which holds no entry
  const std::uint64_t e1 = log.now();
  EXPECT_GT(e1, e0);
  EXPECT_EQ(log.r->queue_get.load() & ha::queue_mask, 16368u) << "an unwritten slot handed back";
  for (int look = 0; look <= ha::max_stalls && on_events(log.r); ++look) (void)log.now();
  EXPECT_FALSE(on_events(log.r)) << "a read index that names no entry, trusted for ever";
  EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::log_corrupt));
  for (int field : {0, 1}) {
    for (int bad : {0, 3, 72, -1, 1 << 22}) {
      SCOPED_TRACE(std::to_string(field) + ": " + std::to_string(bad));
      module fresh = module_as_at("580.142");
      fake_uvm::use again(fresh);
      fake_uvm::log corrupt(fresh.page);
      const std::uint64_t c0 = corrupt.now();
      ASSERT_TRUE(on_events(corrupt.r));
      ASSERT_TRUE(fresh.cpu_fault(base + 7 * block));
      (field == 0 ? corrupt.r->queue_version : corrupt.r->dropped_at).store(bad);
      const std::uint64_t c1 = corrupt.now();
      EXPECT_GT(c1, c0);
      EXPECT_FALSE(on_events(corrupt.r));
      EXPECT_EQ(corrupt.r->why.load(), static_cast<int>(ha::reason::log_corrupt));
      ha::span out[4];
      EXPECT_EQ(corrupt.touched(c0, c1, base + 40 * block, base + 41 * block, out), -1);
    }
  }
}

// Where the runtime's UVM file the tracker watched is gone (cudaDeviceReset closes it), the
// tracker is closed, the page-fault signal serves, and a tracker on the new file is attached at
// the next fault.
TEST(UvmDriver, ATrackerThatLostTheRuntimesFileIsReplaced) {
  module m = module_as_at("580.142");
  fake_uvm::use in(m);
  fake_uvm::log log(m.page);
  (void)log.now();
  ASSERT_TRUE(on_events(log.r));
  m.same_file = false;
  {
    unimem::detail::spin_guard g(log.r->lock);
    ha::check_tracker(log.r, fake_uvm::fake_driver());
  }
  EXPECT_FALSE(on_events(log.r));
  EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::tracker_lost));
  EXPECT_TRUE(all_closed(m));
  m.same_file = true;
  m.uvm_fds = {4, 9};  // the runtime's new UVM descriptors
  m.va_spaces = {9};
  (void)unimem_test::fault_fresh_memory(2);
  (void)log.now();
  EXPECT_TRUE(on_events(log.r)) << why(log.r);
  EXPECT_EQ(log.r->uvm_fd.load(), 9);
  const std::uint64_t e0 = log.now();
  ASSERT_TRUE(m.cpu_fault(base));
  EXPECT_GT(log.now(), e0) << "the new tracker's events do not reach the log";
}

// A duplicate of the runtime's UVM file that could not be made (EMFILE) does not close a healthy
// tracker at the next check (before: no duplicate read as "the file is gone", and attach
// churned): the file's identity decides, and a duplicate is tried again.
TEST(UvmDriver, ADuplicateThatCouldNotBeMadeKeepsAHealthyTracker) {
  module m = module_as_at("580.142");
  m.dup_fails = true;
  fake_uvm::use in(m);
  fake_uvm::log log(m.page);
  (void)log.now();
  ASSERT_TRUE(on_events(log.r));
  ASSERT_EQ(log.r->uvm_dup.load(), -1);
  {
    unimem::detail::spin_guard g(log.r->lock);
    ha::check_tracker(log.r, fake_uvm::fake_driver());
  }
  EXPECT_TRUE(on_events(log.r)) << "a healthy tracker was closed: " << why(log.r);
  m.dup_fails = false;
  {
    unimem::detail::spin_guard g(log.r->lock);
    ha::check_tracker(log.r, fake_uvm::fake_driver());
  }
  EXPECT_TRUE(on_events(log.r));
  EXPECT_GE(log.r->uvm_dup.load(), 0) << "the duplicate was not tried again";
  m.uvm_file.ino += 1;  // the runtime's file is another now, and no duplicate says so: identity
  log.r->uvm_dup.store(-1);
  {
    unimem::detail::spin_guard g(log.r->lock);
    ha::check_tracker(log.r, fake_uvm::fake_driver());
  }
  EXPECT_FALSE(on_events(log.r));
  EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::tracker_lost));
}

// The real kernel's identity of files: kcmp where the kernel has it, else fstat's (st_dev,
// st_ino); a descriptor closed and its number reused by another file is not the same file.
TEST(UvmDriver, FilesAreTheSameByTheirIdentity) {
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  const int a = static_cast<int>(syscall(SYS_memfd_create, "unimem-test-a", 1u));
  ASSERT_GE(a, 0);
  const int copy = uvm::real::dup_fd(a);
  ASSERT_GE(copy, 0);
  EXPECT_TRUE(uvm::real::same_file(a, copy));
  EXPECT_TRUE(uvm::real::same_identity(a, copy)) << "without kcmp: one file, two descriptors";
  uvm::file_id ia{}, ic{};
  ASSERT_TRUE(uvm::real::identity(a, &ia));
  ASSERT_TRUE(uvm::real::identity(copy, &ic));
  EXPECT_TRUE(ia.dev == ic.dev && ia.ino == ic.ino);
  close(a);
  EXPECT_FALSE(uvm::real::same_file(a, copy)) << "a closed descriptor";
  const int b = static_cast<int>(syscall(SYS_memfd_create, "unimem-test-b", 1u));  // a's number
  ASSERT_EQ(b, a);
  EXPECT_FALSE(uvm::real::same_file(b, copy)) << "another file at the same number";
  EXPECT_FALSE(uvm::real::same_identity(b, copy)) << "without kcmp: another file, same number";
  uvm::file_id ib{};
  ASSERT_TRUE(uvm::real::identity(b, &ib));
  EXPECT_FALSE(ib.dev == ic.dev && ib.ino == ic.ino);
  close(b);
  close(copy);
#else
  GTEST_SKIP() << "built without the driver interface";
#endif
}

// The process's descriptors of a file, lowest first, whatever the directory's order (before:
// the first `max` in readdir's order, sorted among themselves), and an entry named as the
// descriptor the scan reads the directory through is one like any other (only /proc/self/fd
// lists that descriptor, and its link is the directory, not the file looked for).
TEST(UvmDriver, DescriptorsAreFoundLowestFirst) {
  char dir[] = "/tmp/unimem-fds-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d = dir;
  const int next = fcntl(0, F_DUPFD_CLOEXEC, 0);  // the number the scan's open() will get
  ASSERT_GE(next, 0);
  close(next);
  // Made in this order; next and next + 2 are the lowest that link to the file.
  const int names[] = {next + 30, next + 1, next + 2, next + 41, next + 7, next, next + 19};
  for (int n : names) {
    const char* to = n == next + 1 ? "/elsewhere" : "/dev/nvidia-uvm";
    ASSERT_EQ(symlink(to, (d + "/" + std::to_string(n)).c_str()), 0);
  }
  int out[3] = {-1, -1, -1};
  ASSERT_EQ(uvm::fds_linked_to("/dev/nvidia-uvm", out, 2, dir), 2);
  EXPECT_EQ(out[0], next);
  EXPECT_EQ(out[1], next + 2);
  ASSERT_EQ(uvm::fds_linked_to("/dev/nvidia-uvm", out, 3, dir), 3);
  EXPECT_EQ(out[2], next + 7);
  EXPECT_EQ(uvm::fds_linked_to("/dev/nvidia-uvm", out, 0, dir), 0);
  EXPECT_EQ(uvm::lowest_fd_linked_to("/dev/nvidia-uvm", dir), next);
  EXPECT_EQ(uvm::lowest_fd_linked_to("/elsewhere", dir), next + 1);
  EXPECT_EQ(uvm::lowest_fd_linked_to("/nowhere", dir), -1);
  for (int n : names) unlink((d + "/" + std::to_string(n)).c_str());
  rmdir(dir);
}

// Why the page-fault signal serves, for report(), and which reasons pass: no tools device node,
// or not permitted (final); the descriptor table full (EMFILE: tried again); no UVM descriptor
// yet (tried again); every descriptor refused (final); a version text that is no version
// (final, and said so, not "no module").
TEST(UvmDriver, EachReasonForThePageFaultSignalAndWhichPass) {
  struct row {
    const char* what;
    void (*apply)(module&);
    ha::reason why;
    bool passing;
  };
  const row rows[] = {
      {"no device node", [](module& m) { m.open_error = ENOENT; }, ha::reason::no_tools, false},
      {"not permitted", [](module& m) { m.open_error = EACCES; }, ha::reason::no_tools, false},
      {"EMFILE", [](module& m) { m.open_error = EMFILE; }, ha::reason::tools_busy, true},
      {"ENFILE", [](module& m) { m.open_error = ENFILE; }, ha::reason::tools_busy, true},
      {"no UVM descriptor yet", [](module& m) { m.uvm_fds.clear(); }, ha::reason::no_uvm_fd_yet,
       true},
      {"refused", [](module& m) { m.refuse = true; }, ha::reason::refused, false},
      {"no module", [](module& m) { m.version_text.clear(); }, ha::reason::no_module, true},
      {"not a version", [](module& m) { m.version_text = "580.142-custom"; },
       ha::reason::version_unparseable, false},
  };
  for (const row& w : rows) {
    SCOPED_TRACE(w.what);
    module m = module_as_at("580.142");
    w.apply(m);
    fake_uvm::use in(m);
    fake_uvm::log log(m.page);
    (void)log.now();
    EXPECT_EQ(log.r->why.load(), static_cast<int>(w.why)) << why(log.r);
    if (w.passing) {
      EXPECT_GT(log.r->retry_at.load(), log.r->faults_seen.load()) << "not tried again";
    } else {
      EXPECT_EQ(log.r->retry_at.load(), 0u) << "a final answer is tried again";
    }
    EXPECT_TRUE(all_closed(m));
  }
}

// Passing errors are tried again, backing off, a bounded number of times: the module loaded
// after the first look (it loads on demand, when the runtime starts), the descriptor table full
// for a while; a process that never gets there gives up after max_tries (before: an unreadable
// version and any failed open of the tools device were final: page faults for the process's
// life).
TEST(UvmDriver, PassingErrorsAreTriedAgainBackingOffAndBounded) {
  for (int which : {0, 1}) {
    SCOPED_TRACE(which == 0 ? "module loaded later" : "EMFILE, then a free descriptor");
    module m = module_as_at("580.142");
    if (which == 0) m.version_text.clear();
    if (which == 1) m.open_error = EMFILE, m.open_errors = 1;
    fake_uvm::use in(m);
    fake_uvm::log log(m.page);
    (void)log.now();
    ASSERT_FALSE(on_events(log.r));
    const std::uint64_t first = log.r->retry_at.load() - log.r->faults_seen.load();
    EXPECT_EQ(first, ha::retry_faults);
    if (which == 0) m.version_text = "580.142";
    (void)unimem_test::fault_fresh_memory(ha::retry_faults + 16);
    (void)log.now();
    EXPECT_TRUE(on_events(log.r)) << why(log.r);
  }
  module m = module_as_at("580.142");
  m.open_error = EMFILE;
  fake_uvm::use in(m);
  fake_uvm::log log(m.page);
  std::uint64_t f = log.r->faults_seen.load() + 1, last_gap = 0;
  int tries = 0;
  for (int look = 0; look < 64; ++look) {  // decide() at the fault counts it asks for
    const int opens = m.calls;
    {
      unimem::detail::spin_guard g(log.r->lock);
      ha::decide(log.r, fake_uvm::attach_to_fake, f);
    }
    tries += m.calls != opens;
    const std::uint64_t at = log.r->retry_at.load();
    if (at == 0) break;
    const std::uint64_t gap = at - f;
    EXPECT_GE(gap, last_gap) << "the tries do not back off";
    last_gap = gap;
    {
      unimem::detail::spin_guard g(log.r->lock);
      ha::decide(log.r, fake_uvm::attach_to_fake, at - 1);
    }
    EXPECT_EQ(m.calls, opens + 1) << "tried again before the fault count asked for";
    f = at;
  }
  EXPECT_EQ(log.r->retry_at.load(), 0u) << "tried again without end";
  EXPECT_EQ(tries, ha::max_tries);
  EXPECT_EQ(log.r->error.load(), EMFILE);
  EXPECT_GT(last_gap, ha::retry_faults);
}

// A child after fork() inherits its parent's UVM descriptors, whose va space is the parent's: it
// never attaches there (the driver would take it: it checks only the file's type), only to a UVM
// file it opened itself.
TEST(UvmDriver, AChildNeverAttachesToAUvmFileItInherited) {
  module m = module_as_at("580.142");
  fake_uvm::use in(m);
  fake_uvm::inherited() = {4, 5};
  fake_uvm::log log(m.page);
  (void)log.now();
  EXPECT_FALSE(on_events(log.r));
  EXPECT_EQ(log.r->why.load(), static_cast<int>(ha::reason::no_uvm_fd_yet));
  EXPECT_EQ(m.calls, 0) << "the tools device was opened for an inherited UVM file";
  m.uvm_fds = {4, 5, 11};  // the child's own runtime opened one
  m.va_spaces = {5, 11};
  (void)unimem_test::fault_fresh_memory(ha::retry_faults + 16);
  (void)log.now();
  EXPECT_TRUE(on_events(log.r)) << why(log.r);
  EXPECT_EQ(log.r->uvm_fd.load(), 11);
  fake_uvm::inherited().clear();
  const int all[1] = {0};
  module again = module_as_at("580.142");
  fake_uvm::use in2(again);
  fake_uvm::log none(again.page);
  EXPECT_EQ(ha::attach_with(none.r, fake_uvm::fake_driver(), true, all, -1), ha::try_again)
      << "more UVM files inherited than named: none is the child's own";
  EXPECT_EQ(again.calls, 0);
}

// now()'s lock-free look beside check_tracker() and a new attach under the lock, in other
// threads: every field the look reads is atomic (before: queue_version and dropped_at were
// plain ints written under the lock: a data race, which tsan.host_tests reports).
TEST(UvmDriver, NowBesideCheckTrackerIsRaceFree) {
  module m = module_as_at("580.142");
  fake_uvm::use in(m);
  fake_uvm::log log(m.page);
  (void)log.now();
  ASSERT_TRUE(on_events(log.r));
  std::atomic<bool> done{false};
  std::thread looker([&] {
    while (!done.load()) (void)ha::now(log.r, fake_uvm::attach_to_fake, log.page());
  });
  for (int round = 0; round < 200; ++round) {
    {
      unimem::detail::spin_guard g(log.r->lock);
      m.same_file = false;
      ha::check_tracker(log.r, fake_uvm::fake_driver());
      m.same_file = true;
    }
    (void)unimem_test::fault_fresh_memory(2);
    (void)log.now();  // attaches again
  }
  done.store(true);
  looker.join();
  EXPECT_TRUE(on_events(log.r)) << why(log.r);
}
#endif  // __linux__
