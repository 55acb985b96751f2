// unimem (internal, runtime-free): a log of numbered spans the host may have taken from the GPUs,
// so a placement record (placement_record.hpp) keeps the newest number and a tagged launch moves
// back only its buffer's spans logged since. Signals: uvm_events, where the NVIDIA UVM driver
// queues an event in our memory for each CPU fault on managed memory before the access completes
// (logged as its 2 MiB VA block, the unit a CPU fault moves) and for each migration to the CPU
// (eviction, another library's prefetch: logged as the span it moved); talked to only in the
// layout the module's version declares (uvm/layout.hpp, behind the seam of uvm/driver.hpp); else
// page_faults (AMD, an unknown driver, refused, UNIMEM_HOST_ACCESS=page-faults, or built with
// UNIMEM_NO_PRIVATE_DRIVER_INTERFACE): any change of the process's fault count logs everything.
// The log is a memfd named with the process's id that every copy of unimem in the process finds
// in /proc/self/fd; a child after fork() makes its own. A wrong belief costs speed, never data:
// a page the log misses comes back by a GPU fault. Off Linux, no log.
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/atomic.hpp"
#include "../../core/detail/spin_guard.hpp"
#include "uvm/driver.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <cstdio>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#define UNIMEM_DETAIL_HOST_ACCESS_LOG 1
#if !defined(F_ADD_SEALS)  // glibc before 2.27 (the kernel's values since Linux 3.17)
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SEAL 1
#define F_SEAL_SHRINK 2
#define F_SEAL_GROW 4
#endif
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// The process's page faults, minor and major (getrusage); elsewhere a number that changes at
/// every call.
inline std::uint64_t host_faults() noexcept {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  rusage r{};
  (void)getrusage(RUSAGE_SELF, &r);  // cannot fail for RUSAGE_SELF and a valid pointer
  return static_cast<std::uint64_t>(r.ru_minflt) + static_cast<std::uint64_t>(r.ru_majflt);
#else
  static atomic_cell<std::uint64_t> calls{0};  // no count: every call is news
  return calls.fetch_add(1) + 1;
#endif
}

/// Takes one page fault on purpose (a few microseconds), which every copy on page_faults sees.
inline void fault_on_purpose() noexcept {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  void* p = mmap(nullptr, 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;  // no page: records are then only as good as the count
  *static_cast<volatile char*>(p) = 1;
  munmap(p, 1);
#endif
}

namespace host_access {
enum class signal : int {  // where the log learns what the host touched
  undecided = 0,    // not looked yet (the first placement decides)
  uvm_events = 1,   // the UVM driver's CPU-fault and migration events: exact, per 2 MiB block
  page_faults = 2,  // the process's page-fault count: any fault may have touched anything
};

/// Why the signal is what it is.
enum class reason : int {
  undecided = 0,
  tracker = 1,          // uvm_events: a tracker in the layout of the module's version
  disabled = 2,         // UNIMEM_HOST_ACCESS=page-faults
  compiled_out = 3,     // UNIMEM_NO_PRIVATE_DRIVER_INTERFACE, or not Linux
  no_module = 4,        // no NVIDIA UVM module (/sys/module/nvidia_uvm/version)
  version_refused = 5,  // a module version whose layout unimem has not read
  no_tools = 6,         // no usable /dev/nvidia-uvm-tools
  no_uvm_fd_yet = 7,    // the runtime has not opened /dev/nvidia-uvm yet: tried again later
  refused = 8,          // the driver refused a tracker on every UVM descriptor
  private_log = 9,      // no shared memfd could be made: a private log, on page faults
  tracker_lost = 10,    // the runtime closed the UVM file the tracker watched: tried again
  log_corrupt = 11,     // the shared log's queue fields were out of range
};

inline const char* to_string(signal s) noexcept {
  return s == signal::uvm_events    ? "uvm-events"
         : s == signal::page_faults ? "page-faults"
                                    : "undecided";
}

inline const char* to_string(reason w) noexcept {
  switch (w) {
    case reason::tracker: return "a tracker in the layout of the module's version";
    case reason::disabled: return "UNIMEM_HOST_ACCESS=page-faults";
    case reason::compiled_out: return "built without the driver interface";
    case reason::no_module: return "no NVIDIA UVM module";
    case reason::version_refused: return "a UVM module version whose layout unimem has not read";
    case reason::no_tools: return "no usable UVM tools device";
    case reason::no_uvm_fd_yet: return "the GPU runtime has not opened /dev/nvidia-uvm yet";
    case reason::refused: return "the driver refused a tracker";
    case reason::private_log: return "no shared log could be made";
    case reason::tracker_lost: return "the runtime closed the UVM file the tracker watched";
    case reason::log_corrupt: return "the shared log's queue fields were out of range";
    case reason::undecided: break;
  }
  return "decided at the first placement";
}

/// The unit a host touch is logged in: the UVM driver's (aligned) VA block.
constexpr std::uintptr_t block_bytes = std::uintptr_t{1} << 21;

/// A span of addresses [lo, hi). `announced`: unimem moved or re-advised it without a record
/// (a record meeting it places its whole buffer again); else the host touched it.
struct span { std::uintptr_t lo, hi, announced; };
constexpr std::uintptr_t everywhere = ~std::uintptr_t{0};

constexpr std::uint32_t log_capacity = 4096;     // entries kept (a power of two)
constexpr std::uint32_t queue_capacity = 16384;  // driver events between two looks (a power of 2)
constexpr std::uint32_t queue_mask = queue_capacity - 1;
constexpr std::uint64_t layout_id = 0x756e696d656d0003;  // "unimem", layout 3
constexpr std::uint64_t retry_faults = 1024;             // see decide()
/// The events unimem asks for: CPU faults, and migrations (it logs those to the CPU).
constexpr std::uint64_t cpu_fault_events = std::uint64_t{1} << uvm::cpu_fault_event;
constexpr std::uint64_t migration_events = std::uint64_t{1} << uvm::migration_event;

/// The process's log: this header, then (at page-aligned offsets every copy computes from its own
/// page size, never from the shared memory: offsets()) the driver's control page and queue.
struct region {
  atomic_cell<std::uint64_t> layout;  // layout_id once made (0 while the maker fills it in)
  std::int64_t pid;                   // the process that made it
  std::uint64_t page, bytes;          // the page size it was laid out for; its size
  atomic_cell<int> lock;
  atomic_cell<int> source;                  // a signal
  atomic_cell<int> why;                     // a reason
  atomic_cell<std::uint64_t> newest;        // the number of the newest entry (0: none)
  atomic_cell<std::uint64_t> faults_seen;   // the page-fault count at the last look
  atomic_cell<std::uint32_t> queue_get;     // uvm_events: the next entry to read (masked on use)
  atomic_cell<std::uint64_t> dropped_seen;  // uvm_events: the driver's dropped events so far
  std::uint64_t retry_at;        // the fault count from which to try the tracker (0: never)
  std::uint64_t module_version;  // uvm::version() of the module looked at (0: none)
  int queue_version;             // uvm_events: 1 or 2 (anything else: no queue is read)
  int dropped_at;                // uvm_events: dropped[]'s offset in the control page, 16 or 24
  int tracker_fd;                // uvm_events: the tracker (open for the process)
  int uvm_fd, uvm_dup;           // the runtime's UVM descriptor it watches, and a duplicate
  int shared;                    // 1: the memfd every copy finds
  span log[log_capacity];        // entry k at log[k % log_capacity]
};

/// Where the control page and the queue are, and the mapping's size, for page size `page`.
struct offsets {
  std::size_t control, queue, bytes;
};
constexpr std::size_t round_up(std::size_t n, std::size_t to) noexcept {
  return (n + to - 1) / to * to;
}
constexpr offsets offsets_for(std::size_t page) noexcept {
  return {round_up(sizeof(region), page),
          round_up(sizeof(region), page) + round_up(uvm::control_bytes, page),
          round_up(sizeof(region), page) + round_up(uvm::control_bytes, page) +
              round_up(std::size_t{queue_capacity} * uvm::max_entry_bytes, page)};
}
inline unsigned char* control_of(region* r, std::size_t page) noexcept {
  return reinterpret_cast<unsigned char*>(r) + offsets_for(page).control;
}
inline unsigned char* queue_of(region* r, std::size_t page) noexcept {
  return reinterpret_cast<unsigned char*>(r) + offsets_for(page).queue;
}

/// Appends [lo, hi) as the newest entry (under the lock), unless a touch after entry
/// `merge_after` (the newest when the caller locked: records may hold older ones) covers it.
inline void append(region* r, std::uintptr_t lo, std::uintptr_t hi, bool announced,
                   std::uint64_t merge_after = ~std::uint64_t{0}) noexcept {
  const std::uint64_t n = r->newest.load();
  if (n > merge_after && !announced) {
    const span& last = r->log[n % log_capacity];
    if (last.announced == 0 && last.lo <= lo && hi <= last.hi) return;
  }
  r->log[(n + 1) % log_capacity] = span{lo, hi, announced ? std::uintptr_t{1} : 0};
  r->newest.store(n + 1);
}

/// Why attach() gave no tracker: final answers (not tried again) and no_uvm_fd_yet.
constexpr int no_tools = -1, no_uvm_fd_yet = -2, refused = -3;

/// Uses signal s from now on, as if nothing were known of the past (under the lock).
inline void switch_to(region* r, signal s) noexcept {
  r->faults_seen.store(host_faults());
  append(r, 0, everywhere, false);
  r->source.store(static_cast<int>(s));
}

#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
/// The driver's control page of a queue: its indices and dropped counts, read and written as
/// the driver does (atomically; acquire and release where unimem reads what it wrote).
struct control_page {
  unsigned char* base;
  int dropped_at;
  std::uint32_t put() const noexcept {
    return __atomic_load_n(reinterpret_cast<std::uint32_t*>(base + 12), __ATOMIC_ACQUIRE) &
           queue_mask;
  }
  /// Hands entries before `get` back to the driver (get_ahead, get_behind).
  void give_back(std::uint32_t get) const noexcept {
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(base + 0), get, __ATOMIC_RELEASE);
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(base + 4), get, __ATOMIC_RELEASE);
  }
  /// Events of the kinds unimem asked for that the driver dropped (a full queue).
  std::uint64_t dropped() const noexcept {
    const auto* d = reinterpret_cast<std::uint64_t*>(base + dropped_at);
    return __atomic_load_n(d + uvm::cpu_fault_event, __ATOMIC_ACQUIRE) +
           __atomic_load_n(d + uvm::migration_event, __ATOMIC_ACQUIRE);
  }
};

/// This copy's view of r's queue, from what it checks itself (false: r holds no queue it reads).
inline bool queue_view(region* r, std::size_t page, control_page* c, std::size_t* entry) noexcept {
  if ((r->queue_version != 1 && r->queue_version != 2) ||
      (r->dropped_at != 16 && r->dropped_at != 24)) {
    return false;
  }
  *c = control_page{control_of(r, page), r->dropped_at};
  *entry = uvm::entry_bytes(r->queue_version);
  return true;
}

/// The span an event logs: a CPU fault's 2 MiB block; a migration from a GPU to the CPU, the
/// blocks it moved; {0, 0}: nothing (another migration); {0, everywhere}: an unknown event.
inline span span_of(const unsigned char* e, int queue_version) noexcept {
  std::uint64_t address = 0, bytes = 0;
  if (e[0] == uvm::cpu_fault_event) {
    std::memcpy(&address, e + 8, sizeof address);
    bytes = 1;
  } else if (e[0] == uvm::migration_event) {
    std::uint32_t src = e[2], dst = e[3];  // version 1: NvU8 indices, address at 8
    std::size_t at = 8;
    if (queue_version == 2) {  // NvU16 indices at 4 and 6, address at 16
      src = static_cast<std::uint32_t>(e[4] | (e[5] << 8));
      dst = static_cast<std::uint32_t>(e[6] | (e[7] << 8));
      at = 16;
    }
    if (dst != 0 || src == 0) return {0, 0, 0};  // towards a GPU, or between CPU nodes
    std::memcpy(&address, e + at, sizeof address);
    std::memcpy(&bytes, e + at + 8, sizeof bytes);
  }
  const std::uint64_t lo = address & ~std::uint64_t{block_bytes - 1};
  const std::uint64_t end = address + bytes;  // both from the driver: bounded all the same
  if (address == 0 || bytes == 0 || end < address || end > ~std::uint64_t{0} - block_bytes ||
      end > std::uint64_t{everywhere} - block_bytes) {
    return {0, everywhere, 0};
  }
  return {static_cast<std::uintptr_t>(lo),
          static_cast<std::uintptr_t>(round_up(static_cast<std::size_t>(end), block_bytes)), 0};
}

/// Reads the driver's new events into the log (under the lock). Drops are seen before anything
/// is handed back: the entry covering everything is in the log before another thread's fast path
/// can find the queue empty and the drops seen.
inline void drain(region* r, std::size_t page) noexcept {
  control_page c{};
  std::size_t entry = 0;
  if (!queue_view(r, page, &c, &entry)) return;
  const std::uint64_t dropped = c.dropped();
  const std::uint32_t put = c.put();
  const std::uint64_t before = r->newest.load();
  const unsigned char* q = queue_of(r, page);
  std::uint32_t get = r->queue_get.load() & queue_mask;
  for (; get != put; get = (get + 1) & queue_mask) {
    const span s = span_of(q + std::size_t{get} * entry, r->queue_version);
    if (s.hi != 0) append(r, s.lo, s.hi, false, before);
  }
  if (dropped != r->dropped_seen.load()) append(r, 0, everywhere, false, before);
  r->dropped_seen.store(dropped);
  c.give_back(get);
  r->queue_get.store(get);
}

/// What each copy of unimem keeps for itself: its mapping of the log, and the descriptors it
/// made (which a child after fork() closes: every copy registers one fork handler).
struct copy_state {
  atomic_cell<region*> log;
  atomic_cell<int> making;
  region* parents = nullptr;  // in a child after fork(): the parent's log, to unmap
  std::size_t page = 0;       // the system's page size, as the log was laid out for it
  int memfd = -1, tracker = -1, uvm_dup = -1;
  bool fork_handler = false;
};
inline copy_state& this_copy() noexcept {
  static copy_state c;
  return c;
}

/// In the child of a fork(): forget the parent's log (its memory is still shared with the
/// parent: never written here) and close what this copy opened for it. Async-signal-safe.
inline void after_fork_in_child() noexcept {
  copy_state& c = this_copy();
  region* r = c.log.load();
  c.parents = r;
  c.log.store(nullptr);
  // Only what the parent's log still names (another copy may have replaced the tracker; a
  // descriptor both copies close is closed once, the other close fails harmlessly).
  if (r != nullptr && c.tracker >= 0 && c.tracker == r->tracker_fd) close(c.tracker);
  if (r != nullptr && c.uvm_dup >= 0 && c.uvm_dup == r->uvm_dup) close(c.uvm_dup);
  if (c.memfd >= 0) close(c.memfd);
  c.memfd = c.tracker = c.uvm_dup = -1;
}

/// The name of this process's log, and how /proc/self/fd shows it.
inline void region_name(char* name, std::size_t size, char* link, std::size_t link_size) noexcept {
  std::snprintf(name, size, "unimem-host-access-3-%ld", static_cast<long>(getpid()));
  std::snprintf(link, link_size, "/memfd:%s (deleted)", name);
}

/// This process's log's descriptor in this copy's descriptor table, or -1.
inline int find_region_fd() noexcept {
  char name[64], link[96];
  region_name(name, sizeof name, link, sizeof link);
  int fd = -1;
  return uvm::fds_linked_to(link, &fd, 1) == 1 ? fd : -1;
}

/// The system's page size, and a log's size for it.
inline std::size_t system_page() noexcept {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<std::size_t>(p) : 4096;
}
inline std::size_t region_bytes() noexcept { return offsets_for(system_page()).bytes; }

/// Whether fd is a log of the size `bytes`, already sized and sealed (a copy may find the memfd
/// between another copy's memfd_create and its ftruncate: mapping it then would fault past the
/// end of the file). Waits a little for the maker.
inline bool sized_and_sealed(int fd, std::size_t bytes) noexcept {
  for (int tries = 0; tries < 4096; ++tries) {
    struct stat st {};
    const int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) == bytes && seals >= 0 &&
        (seals & F_SEAL_SHRINK) != 0) {
      return true;
    }
    if (st.st_size != 0 || seals < 0) return false;  // another size, or not sealable: not ours
    sched_yield();
  }
  return false;
}

/// Maps the memfd `fd`, or zero-filled private memory where fd < 0. Null on failure.
inline region* map_region(int fd, std::size_t bytes) noexcept {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<region*>(p);
}

/// Fills in a log this copy made (layout last).
inline region* fill_region(region* r, std::size_t page, int shared) noexcept {
  r->pid = static_cast<std::int64_t>(getpid());
  r->page = page;
  r->bytes = offsets_for(page).bytes;
  r->shared = shared;
  r->retry_at = static_cast<std::uint64_t>(shared);  // 1: at the first look (private: never)
  r->tracker_fd = r->uvm_fd = r->uvm_dup = -1;
  r->why.store(static_cast<int>(shared != 0 ? reason::undecided : reason::private_log));
  r->layout.store(layout_id);
  return r;
}

/// The log every copy of unimem in this process shares, made by the first to look (two making
/// one at once both keep the lowest memfd), else a private one. A memfd of another process
/// (inherited across fork(), or passed in) has another name, and is checked all the same.
UNIMEM_DETAIL_OUTLINE region* make_region(copy_state& c, std::size_t page) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  const std::size_t bytes = offsets_for(page).bytes;
  char name[64], link[96];
  region_name(name, sizeof name, link, sizeof link);
  int fd = find_region_fd();
  bool made = false;
  if (fd < 0) {
    const int mine = static_cast<int>(  // MFD_CLOEXEC | MFD_ALLOW_SEALING
        syscall(SYS_memfd_create, name, 3u));
    if (mine >= 0 && ftruncate(mine, static_cast<off_t>(bytes)) == 0 &&
        fcntl(mine, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0 &&
        uvm::fds_linked_to(link, &fd, 1) == 1) {
      made = fd == mine;
    }
    if (mine >= 0 && !made) close(mine);
  }
  region* r = fd >= 0 && (made || sized_and_sealed(fd, bytes)) ? map_region(fd, bytes) : nullptr;
  if (r != nullptr && !made) {  // another copy's: wait until it is filled in, then check it
    for (int spin = 0; r->layout.load() == 0 && spin < (1 << 24); ++spin) {
      if ((spin & 1023) == 1023) sched_yield();
    }
    if (r->layout.load() == layout_id && r->pid == static_cast<std::int64_t>(getpid()) &&
        r->page == page && r->bytes == bytes) {
      return r;
    }
    munmap(r, bytes);  // another layout or process, or never filled in
    r = nullptr;
  }
  if (r != nullptr) {
    c.memfd = fd;
    return fill_region(r, page, 1);
  }
  r = map_region(-1, bytes);
  return r != nullptr ? fill_region(r, page, 0) : nullptr;
}
#else
    ;
#endif

/// This copy's log, made at its first use (and again in a child after fork()).
UNIMEM_DETAIL_OUTLINE region* this_copys_region() noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  copy_state& c = this_copy();
  spin_guard g(c.making);
  if (region* r = c.log.load()) return r;
  if (!c.fork_handler) c.fork_handler = pthread_atfork(nullptr, nullptr, after_fork_in_child) == 0;
  const std::size_t page = system_page();
  c.page = page;
  if (c.parents != nullptr) munmap(c.parents, offsets_for(page).bytes);
  c.parents = nullptr;
  region* r = make_region(c, page);
  c.log.store(r);
  return r;
}
#else
    ;
#endif

/// Attaches a queue of CPU-fault and migration events to the process's UVM va space (under the
/// lock), in the layout of the loaded module's version, through `d`: the tracker's descriptor,
/// or why none (r->why says more). The queue and control page are r's, aligned to d's page size.
inline int attach_with(region* r, const uvm::driver& d, bool migrations = true) noexcept {
  std::uint64_t v = 0;
  const uvm::match m = uvm::module_layout(d, &v);
  r->module_version = v;
  if (m.found == nullptr) {
    r->why.store(static_cast<int>(m.how == uvm::match::unreadable ? reason::no_module
                                                                  : reason::version_refused));
    return refused;
  }
  const std::size_t page = d.page_size();
  int uvm_fds[8];
  const int n = d.uvm_fds(uvm_fds, 8);
  int tools = n == 0 ? no_uvm_fd_yet : refused, version = 0, watched = -1;
  for (int i = 0; i < n && tools < 0; ++i) {
    const int t = uvm::make_tracker(d, *m.found, static_cast<std::uint32_t>(uvm_fds[i]),
                                    queue_of(r, page), queue_capacity, control_of(r, page),
                                    cpu_fault_events | (migrations ? migration_events : 0),
                                    &version);
    tools = t >= 0 ? t : t == uvm::no_tools_device ? no_tools : refused;
    watched = uvm_fds[i];
  }
  if (tools < 0) {
    r->why.store(static_cast<int>(tools == no_tools        ? reason::no_tools
                                  : tools == no_uvm_fd_yet ? reason::no_uvm_fd_yet
                                                           : reason::refused));
    return tools;
  }
  r->tracker_fd = tools;
  r->uvm_fd = watched;
  r->uvm_dup = d.dup(watched);
  r->queue_version = version;
  r->dropped_at = version == 2 ? m.found->v2_dropped_at : 16;
  control_page c{control_of(r, page), r->dropped_at};
  r->queue_get.store(c.put());
  r->dropped_seen.store(c.dropped());
  r->why.store(static_cast<int>(reason::tracker));
  return tools;
}

/// attach_with() on the kernel, as UNIMEM_HOST_ACCESS allows; this copy closes the tracker in a
/// child after fork().
UNIMEM_DETAIL_OUTLINE int attach_uvm_events(region* r) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  const char* setting = std::getenv("UNIMEM_HOST_ACCESS");
  const bool faults_only = setting != nullptr && std::strcmp(setting, "uvm-cpu-faults") == 0;
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  const int tools = attach_with(r, uvm::real_driver(), !faults_only);
  if (tools >= 0) {
    this_copy().tracker = tools;
    this_copy().uvm_dup = r->uvm_dup;
  }
  return tools;
#else
  (void)faults_only;
  r->why.store(static_cast<int>(reason::compiled_out));
  return refused;
#endif
}
#else
    ;
#endif

/// Whether the tracker still watches the runtime's UVM file (under the lock): after the runtime
/// closed it (cudaDeviceReset) the tracker sees nothing more; it is closed, the page-fault
/// signal serves, and the tracker is tried again at the next fault.
inline void check_tracker(region* r, const uvm::driver& d) noexcept {
  if (r->source.load() != static_cast<int>(signal::uvm_events) || r->tracker_fd < 0) return;
  if (r->uvm_dup >= 0 && d.same_file(r->uvm_fd, r->uvm_dup)) return;
  d.close(r->tracker_fd);
  if (r->uvm_dup >= 0) d.close(r->uvm_dup);
  r->tracker_fd = r->uvm_dup = -1;
  r->queue_version = 0;
  switch_to(r, signal::page_faults);
  r->why.store(static_cast<int>(reason::tracker_lost));
  r->retry_at = r->faults_seen.load() + 1;
}
#else
inline region* this_copys_region() noexcept { return nullptr; }  // off Linux: no log
inline int attach_uvm_events(region*) noexcept { return no_tools; }
#endif  // UNIMEM_DETAIL_HOST_ACCESS_LOG

inline region* the_region() noexcept {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  region* r = this_copy().log.load();
  return r != nullptr ? r : this_copys_region();
#else
  return nullptr;
#endif
}

/// Takes in new page faults (under the lock; not on uvm_events). Tries attach() at the first look
/// where the log is shared and UNIMEM_HOST_ACCESS allows; without a UVM descriptor yet, again every
/// retry_faults faults (a runtime start takes thousands; a try costs 200 us to their 3.6 ms).
/// f: the count now() just read (the count only grows: one older than what another thread took
/// in changes nothing).
inline void decide(region* r, int (*attach)(region*), std::uint64_t f) noexcept {
  if (f <= r->faults_seen.load()) return;
  r->faults_seen.store(f);
  append(r, 0, everywhere, false);
  r->source.store(static_cast<int>(signal::page_faults));
  if (r->retry_at == 0 || f < r->retry_at) return;
  const char* setting = std::getenv("UNIMEM_HOST_ACCESS");
  const bool off = setting != nullptr && std::strcmp(setting, "page-faults") == 0;
  const int tracker = off ? no_tools : attach(r);
  if (off) r->why.store(static_cast<int>(reason::disabled));
  r->retry_at = tracker == no_uvm_fd_yet ? f + retry_faults : 0;
  if (tracker >= 0) switch_to(r, signal::uvm_events);
}

/// The newest entry's number after taking in the host's doings (what a record made now keeps):
/// a few loads (uvm_events) or one getrusage while nothing happened. Tests may give r, attach()
/// and the page size the queue was laid out for.
inline std::uint64_t now(region* r = the_region(), int (*attach)(region*) = attach_uvm_events,
                         std::size_t page = 0) noexcept {
  if (r == nullptr) return host_faults();
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  if (r->source.load() == static_cast<int>(signal::uvm_events)) {
    if (page == 0) page = this_copy().page;  // this copy's log: laid out for its page size
    if (page == 0) page = system_page();
    control_page c{};
    std::size_t entry = 0;
    if (!queue_view(r, page, &c, &entry)) {  // the shared memory went wrong: trust it no more
      spin_guard g(r->lock);
      if (r->source.load() == static_cast<int>(signal::uvm_events) &&
          !queue_view(r, page, &c, &entry)) {
        switch_to(r, signal::page_faults);
        r->why.store(static_cast<int>(reason::log_corrupt));
        r->retry_at = 0;
      }
    } else if (c.put() != (r->queue_get.load() & queue_mask) ||
               c.dropped() != r->dropped_seen.load()) {
      spin_guard g(r->lock);
      drain(r, page);
    }
    return r->newest.load();
  }
#else
  (void)page;
#endif
  const std::uint64_t f = host_faults();
  if (f != r->faults_seen.load()) {
    spin_guard g(r->lock);
    if (r->source.load() != static_cast<int>(signal::uvm_events)) decide(r, attach, f);
  }
  return r->newest.load();
}

/// The signal the process uses (undecided before its first placement), and why.
inline signal source() noexcept {
  region* r = the_region();
  return r == nullptr ? signal::page_faults : static_cast<signal>(r->source.load());
}
inline reason why() noexcept {
  region* r = the_region();
  return r == nullptr ? reason::compiled_out : static_cast<reason>(r->why.load());
}

/// What report() says of the log: the signal in use and why, and the UVM module's version with
/// the layout unimem talks to it in. Decides nothing and opens no driver (a log not made yet,
/// or not decided yet, is "decided at the first placement").
struct description { char text[512]; };
inline void append_version(char* out, std::size_t size, std::uint64_t v) noexcept {
  const std::size_t used = std::strlen(out);
  const unsigned patch = static_cast<unsigned>(v & 0xffffu);
  std::snprintf(out + used, size - used, patch != 0 ? "%u.%u.%02u" : "%u.%u",
                uvm::branch_of(v), static_cast<unsigned>((v >> 16) & 0xffffu), patch);
}
inline description describe() noexcept {
  description d{};
  char* t = d.text;
  const std::size_t size = sizeof d.text;
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  region* r = this_copy().log.load();
#else
  region* r = nullptr;
#endif
  const signal s = r != nullptr ? static_cast<signal>(r->source.load()) : signal::undecided;
  const reason w = r != nullptr ? static_cast<reason>(r->why.load()) : reason::undecided;
  if (s == signal::undecided) {
    std::snprintf(t, size, "placement records: how host touches are learnt is decided at the "
                           "first placement\n");
  } else {
    std::snprintf(t, size, "placement records: host touches learnt from %s (%s)\n",
                  s == signal::uvm_events
                      ? "the UVM driver's CPU-fault and migration events"
                      : "the process's page-fault count: any fault places tagged buffers again",
                  to_string(w));
  }
  std::strncat(t, "  UVM tools interface: ", size - std::strlen(t) - 1);
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  std::uint64_t v = 0;
  const uvm::match m = uvm::module_layout(uvm::real_driver(), &v);
  if (m.how == uvm::match::unreadable) {
    std::strncat(t, "no NVIDIA UVM module\n", size - std::strlen(t) - 1);
    return d;
  }
  std::strncat(t, "module ", size - std::strlen(t) - 1);
  append_version(t, size, v);
  if (m.found == nullptr) {
    std::strncat(t, ": a version whose layout unimem has not read (not used)\n",
                 size - std::strlen(t) - 1);
    return d;
  }
  std::strncat(t, m.how == uvm::match::read ? ", in the layout read at " :
                  ", a later release of its branch, in the layout of ", size - std::strlen(t) - 1);
  if (m.how == uvm::match::read) {
    append_version(t, size, m.found->first);
    std::strncat(t, " to ", size - std::strlen(t) - 1);
  }
  append_version(t, size, m.found->newest);
  std::strncat(t, "\n", size - std::strlen(t) - 1);
#else
  std::strncat(t, "not built (UNIMEM_NO_PRIVATE_DRIVER_INTERFACE, or not Linux)\n",
               size - std::strlen(t) - 1);
#endif
  return d;
}

/// After unimem moved data (a prefetch costs microseconds; this, a system call): whether the
/// tracker still watches the runtime's UVM file (see check_tracker()).
inline void check_after_move() noexcept {
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  region* r = the_region();
  if (r == nullptr || r->source.load() != static_cast<int>(signal::uvm_events)) return;
  spin_guard g(r->lock);
  check_tracker(r, uvm::real_driver());
#endif
}

/// Says that unimem moved or re-advised [p, p + bytes) without a record: every record meeting it,
/// in every copy, places its whole buffer again. A private log also faults on purpose.
inline void announce(const void* p, std::size_t bytes) noexcept {
  region* r = the_region();
  if (r != nullptr) {
    const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p);
    spin_guard g(r->lock);
    append(r, lo, lo + bytes, true);
  }
  if (r == nullptr || r->shared == 0) fault_on_purpose();
}

/// What of [lo, hi) the log holds in entries (since, upto], as sorted spans merged across gaps
/// up to `merge_gap`: their number, or -1 to place the whole range again (the log no longer
/// reaches `since`, an entry covers everything or was announced, or over `max` spans remain).
inline int touched_in(region* r, std::uint64_t since, std::uint64_t upto, std::uintptr_t lo,
                      std::uintptr_t hi, std::uintptr_t merge_gap, span* out, int max) noexcept {
  if (r == nullptr || upto < since || upto - since >= log_capacity) return -1;
  int n = 0;
  spin_guard g(r->lock);
  if (r->newest.load() - since >= log_capacity) return -1;  // overwritten meanwhile
  for (std::uint64_t k = since + 1; k <= upto; ++k) {
    const span& e = r->log[k % log_capacity];
    if (e.hi <= lo || hi <= e.lo) continue;
    if (e.announced != 0 || e.hi == everywhere) return -1;
    span s{e.lo < lo ? lo : e.lo, e.hi > hi ? hi : e.hi, 0};
    int i = 0;  // out[i, j) are the spans within merge_gap of s: s takes them in, in their place
    while (i < n && out[i].hi + merge_gap < s.lo) ++i;
    int j = i;
    for (; j < n && out[j].lo <= s.hi + merge_gap; ++j) {
      s = span{out[j].lo < s.lo ? out[j].lo : s.lo, out[j].hi > s.hi ? out[j].hi : s.hi, 0};
    }
    if (i == j && n == max) return -1;
    std::memmove(out + i + 1, out + j, sizeof(span) * static_cast<std::size_t>(n - j));
    out[i] = s;
    n += 1 - (j - i);
  }
  return n;
}
/// touched_in(the process's log, ...).
inline int touched_since(std::uint64_t since, std::uint64_t upto, std::uintptr_t lo,
                         std::uintptr_t hi, std::uintptr_t merge_gap, span* out,
                         int max) noexcept {
  return touched_in(the_region(), since, upto, lo, hi, merge_gap, out, max);
}

/// Test hook: switch_to(s); false for uvm_events without a tracker (page_faults then lasts).
inline bool use_signal_for_testing(signal s) noexcept {
  region* r = the_region();
  if (r == nullptr || s == signal::undecided) return false;
  (void)now();  // decided
  spin_guard g(r->lock);
  if (s == signal::uvm_events && r->tracker_fd < 0) return false;
  switch_to(r, s);
  return true;
}
}  // namespace host_access
}  // namespace detail
UNIMEM_END_NAMESPACE
