// unimem (internal, runtime-free): the host-access log's memory, one per process. A memfd that
// every copy of unimem in the process finds in /proc/self/fd (named and stamped with the
// process's id) holds the log's state and entries (`region`), then the UVM driver's control
// page and queue, each followed by a guard page. A copy that finds the memfd maps it only once it
// is sized and sealed, and waits for its maker a bounded time (a maker that failed leaves a
// memfd that is abandoned, not spun on). Off Linux, no log.
#pragma once

#include "../../../core/config.hpp"
#include "../../../core/detail/atomic.hpp"
#include "../../../core/detail/spin_guard.hpp"
#include "../uvm/driver.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__linux__)
#include <cstdio>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
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

/// Why the signal is what it is. Passing reasons are tried again (backing off, a bounded number
/// of times); the others are final.
enum class reason : int {
  undecided = 0,
  tracker = 1,              // uvm_events: a tracker in a layout read or proven
  disabled = 2,             // UNIMEM_HOST_ACCESS=page-faults
  compiled_out = 3,         // UNIMEM_NO_PRIVATE_DRIVER_INTERFACE, or not Linux
  no_module = 4,            // passing: no NVIDIA UVM module loaded (yet)
  version_unparseable = 5,  // the module's version text is not a version
  no_tools = 6,             // no /dev/nvidia-uvm-tools, or not permitted to open it
  no_uvm_fd_yet = 7,        // passing: the runtime has not opened /dev/nvidia-uvm (of its own) yet
  refused = 8,              // the driver refused a tracker in its version's layout
  private_log = 9,          // no shared memfd could be made: a private log, on page faults
  tracker_lost = 10,        // passing: the runtime closed the UVM file the tracker watched
  log_corrupt = 11,         // the shared log's queue fields were out of range
  tools_busy = 12,          // passing: the tools device could not be opened for now (errno)
  self_check_failed = 13,   // a layout not read at this version failed its self-check (proof)
};

inline const char* to_string(signal s) noexcept {
  return s == signal::uvm_events    ? "uvm-events"
         : s == signal::page_faults ? "page-faults"
                                    : "undecided";
}

inline const char* to_string(reason w) noexcept {
  switch (w) {
    case reason::tracker: return "a tracker in a layout read at this version or proven on it";
    case reason::disabled: return "UNIMEM_HOST_ACCESS=page-faults";
    case reason::compiled_out: return "built without the driver interface";
    case reason::no_module: return "no NVIDIA UVM module loaded";
    case reason::version_unparseable: return "the UVM module's version text is not a version";
    case reason::no_tools: return "no usable UVM tools device";
    case reason::no_uvm_fd_yet: return "the GPU runtime has not opened /dev/nvidia-uvm yet";
    case reason::refused: return "the driver refused a tracker";
    case reason::private_log: return "no shared log could be made";
    case reason::tracker_lost: return "the runtime closed the UVM file the tracker watched";
    case reason::log_corrupt: return "the shared log's queue fields were out of range";
    case reason::tools_busy: return "the UVM tools device could not be opened for now";
    case reason::self_check_failed: return "the driver failed the layout's self-check";
    case reason::undecided: break;
  }
  return "decided at the first placement";
}

/// How the layout a tracker is talked to in was trusted, or why not (the self-check's verdict).
enum class proof : int {
  none = 0,            // not looked yet
  read = 1,            // read in the driver's source at this version's tag
  checked = 2,         // not read at this version: proven on this driver by the self-check
  block_refused = 3,   // the driver refused the layout's parameter block (or pinned past it)
  no_event = 4,        // a CPU touch of unimem's own managed page made no event and no drop
  drop_elsewhere = 5,  // a full queue's event was not dropped and counted in dropped[] as laid out
  event_elsewhere = 6, // the event was not where, or not what, the layout says
  no_probe = 7,        // passing: no managed memory to check with
};
inline const char* to_string(proof p) noexcept {
  switch (p) {
    case proof::read: return "read at this version";
    case proof::checked: return "proven on this driver by the self-check";
    case proof::block_refused:
      return "the self-check failed: the driver refused the layout's parameter block or queue";
    case proof::no_event:
      return "the self-check failed: a CPU touch of unimem's managed page made no event";
    case proof::drop_elsewhere:
      return "the self-check failed: a full queue's event was not dropped and counted as the "
             "layout says";
    case proof::event_elsewhere:
      return "the self-check failed: the event was not where or what the layout says";
    case proof::no_probe: return "not checked yet: no managed memory to check with";
    case proof::none: break;
  }
  return "to be proven by a self-check at the first placement";
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
constexpr std::uint64_t layout_id = 0x756e696d656d0004;  // "unimem", layout 4
constexpr std::uint64_t abandoned_id = 0x756e696d656dffff;  // a finder gave up on its maker

/// The process's log: this header, then (at page-aligned offsets every copy computes from its own
/// page size, never from the shared memory: offsets_for()) the driver's control page and queue.
/// Every field read without the lock is atomic, or written once before `layout` published it.
struct region {
  atomic_cell<std::uint64_t> layout;  // layout_id once made (0 while the maker fills it in)
  std::int64_t pid;                   // the process that made it
  std::uint64_t page, bytes;          // the page size it was laid out for; its size
  std::int32_t shared;                // 1: the memfd every copy finds
  atomic_cell<int> lock;
  atomic_cell<int> source;                  // a signal
  atomic_cell<int> why;                     // a reason
  atomic_cell<int> proof_of_layout;         // a proof
  atomic_cell<int> tries;                   // passing reasons met so far (bounded)
  atomic_cell<int> error;                   // the errno of the last tools_busy
  atomic_cell<std::uint64_t> newest;        // the number of the newest entry (0: none)
  atomic_cell<std::uint64_t> faults_seen;   // the page-fault count at the last look
  atomic_cell<std::uint64_t> retry_at;      // the fault count from which to try the tracker
  atomic_cell<std::uint64_t> module_version;  // uvm::version() of the module (0: none)
  atomic_cell<std::uint32_t> queue_get;     // uvm_events: the next entry to read (masked on use)
  atomic_cell<std::uint64_t> dropped_seen;  // uvm_events: the driver's dropped events so far
  atomic_cell<int> stalls;                  // uvm_events: looks that found the next entry unwritten
  atomic_cell<int> queue_version;           // uvm_events: 1 or 2 (anything else: none is read)
  atomic_cell<int> dropped_at;              // uvm_events: dropped[]'s offset, 16 or 24
  atomic_cell<int> tracker_fd;              // uvm_events: the tracker (open for the process)
  atomic_cell<int> uvm_fd, uvm_dup;         // the runtime's UVM descriptor watched, a duplicate
  atomic_cell<std::uint64_t> uvm_dev, uvm_ino;  // and its file's identity
  span log[log_capacity];                   // entry k at log[k % log_capacity]
};

/// Where the control page, its guard, the queue's end and its guard are, and the mapping's size,
/// for page size `page`. A version-2 queue fills [queue_end - capacity * 72, queue_end), a
/// version-1 one ends at queue_end too: an entry larger than the layout's, or a control page
/// larger than one page, reaches a guard, which the driver cannot pin (the attach fails).
struct offsets {
  std::size_t control, control_guard, queue_end, bytes;
};
constexpr std::size_t round_up(std::size_t n, std::size_t to) noexcept {
  return (n + to - 1) / to * to;
}
constexpr offsets offsets_for(std::size_t page) noexcept {
  return {round_up(sizeof(region), page), round_up(sizeof(region), page) + page,
          round_up(sizeof(region), page) + 2 * page +
              round_up(std::size_t{queue_capacity} * uvm::max_entry_bytes, page),
          round_up(sizeof(region), page) + 3 * page +
              round_up(std::size_t{queue_capacity} * uvm::max_entry_bytes, page)};
}
static_assert(uvm::control_bytes <= 4096, "the control page fits one page");
/// Whether queues of both versions end page-aligned at queue_end for this page size (every page
/// size Linux has up to 64 KiB).
constexpr bool queue_fits(std::size_t page) noexcept {
  return page >= 4096 && std::size_t{queue_capacity} * uvm::entry_bytes(1) % page == 0 &&
         std::size_t{queue_capacity} * uvm::entry_bytes(2) % page == 0;
}
static_assert(queue_fits(4096) && queue_fits(16384) && queue_fits(65536), "queue alignment");
inline unsigned char* control_of(region* r, std::size_t page) noexcept {
  return reinterpret_cast<unsigned char*>(r) + offsets_for(page).control;
}
inline unsigned char* queue_of(region* r, std::size_t page, int queue_version) noexcept {
  return reinterpret_cast<unsigned char*>(r) + offsets_for(page).queue_end -
         std::size_t{queue_capacity} * uvm::entry_bytes(queue_version);
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

/// Uses signal s from now on, as if nothing were known of the past (under the lock).
inline void switch_to(region* r, signal s) noexcept {
  r->faults_seen.store(host_faults());
  append(r, 0, everywhere, false);
  r->source.store(static_cast<int>(s));
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

#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
/// The system's page size, and a log's size for it.
inline std::size_t system_page() noexcept {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<std::size_t>(p) : 4096;
}
inline std::size_t region_bytes() noexcept { return offsets_for(system_page()).bytes; }

/// Makes the guard pages of a mapping of r laid out for `page` inaccessible.
inline bool guard(region* r, std::size_t page) noexcept {
  auto* base = reinterpret_cast<unsigned char*>(r);
  const offsets o = offsets_for(page);
  return mprotect(base + o.control_guard, page, PROT_NONE) == 0 &&
         mprotect(base + o.queue_end, page, PROT_NONE) == 0;
}

/// The name of this process's log, and how /proc/self/fd shows it.
inline void region_name(char* name, std::size_t size, char* link, std::size_t link_size) noexcept {
  std::snprintf(name, size, "unimem-host-access-4-%ld", static_cast<long>(getpid()));
  std::snprintf(link, link_size, "/memfd:%s (deleted)", name);
}

/// The lowest of this process's descriptors of its log, or -1.
inline int find_region_fd() noexcept {
  char name[64], link[96];
  region_name(name, sizeof name, link, sizeof link);
  return uvm::lowest_fd_linked_to(link);
}

/// How long a copy that found the log waits for its maker (to size, seal and fill it in, a few
/// microseconds) before it abandons it.
constexpr std::uint64_t maker_wait_ns = 250000000;
inline std::uint64_t monotonic_ns() noexcept {
  timespec t{};
  (void)clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

/// Whether fd is a log of `bytes`, sized and sealed against growing and shrinking, judged from
/// both together (a maker between ftruncate and F_ADD_SEALS is waited for, not taken for another
/// file); waits for the maker until `deadline` (monotonic_ns()).
inline bool sized_and_sealed(int fd, std::size_t bytes, std::uint64_t deadline) noexcept {
  constexpr int sealed = F_SEAL_SHRINK | F_SEAL_GROW;
  for (;;) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return false;
    const int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0) return false;  // not a memfd that takes seals: not ours
    const std::size_t size = static_cast<std::size_t>(st.st_size);
    if (size == bytes && (seals & sealed) == sealed) return true;
    if ((size != 0 && size != bytes) || (seals & F_SEAL_SEAL) != 0) return false;  // another
    if (monotonic_ns() > deadline) return false;
    sched_yield();
  }
}

/// Maps the memfd `fd` (or zero-filled private memory where fd < 0) with its guard pages; null
/// on failure.
inline region* map_region(int fd, std::size_t bytes) noexcept {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return nullptr;
  if (!guard(static_cast<region*>(p), system_page())) {
    munmap(p, bytes);
    return nullptr;
  }
  return static_cast<region*>(p);
}

/// Fills in a log this copy made and publishes it (layout last); false if a finder abandoned it
/// meanwhile.
inline bool fill_region(region* r, std::size_t page, int shared) noexcept {
  r->pid = static_cast<std::int64_t>(getpid());
  r->page = page;
  r->bytes = offsets_for(page).bytes;
  r->shared = shared;
  r->retry_at.store(static_cast<std::uint64_t>(shared));  // 1: at the first look (private: never)
  r->tracker_fd.store(-1);
  r->uvm_fd.store(-1);
  r->uvm_dup.store(-1);
  r->why.store(static_cast<int>(shared != 0 ? reason::undecided : reason::private_log));
  std::uint64_t expected = 0;
  return r->layout.compare_exchange(expected, layout_id);
}

/// The log every copy of unimem in this process shares, made by the first to look (two making
/// one at once both keep the lowest memfd), else a private one; *memfd: the memfd this copy made
/// (-1: none). A memfd of another process (inherited across fork(), or passed in) has another
/// name, and is checked all the same. `map` maps (tests make it fail).
UNIMEM_DETAIL_OUTLINE region* make_region(std::size_t page, int* memfd,
                                          region* (*map)(int, std::size_t) = map_region) noexcept;

/// A private log (page faults only): where no memfd could be shared.
inline region* private_region(std::size_t page) noexcept {
  region* r = map_region(-1, offsets_for(page).bytes);
  return r != nullptr && fill_region(r, page, 0) ? r : nullptr;
}

#if UNIMEM_DETAIL_DEFINE_OUTLINE
UNIMEM_DETAIL_OUTLINE region* make_region(std::size_t page, int* memfd,
                                          region* (*map)(int, std::size_t)) noexcept {
  *memfd = -1;
  const std::size_t bytes = offsets_for(page).bytes;
  const std::uint64_t deadline = monotonic_ns() + maker_wait_ns;
  char name[64], link[96];
  region_name(name, sizeof name, link, sizeof link);
  int fd = find_region_fd();
  if (fd < 0) {  // made sized and sealed, then found by every copy (the lowest, if two made one)
    const int mine = static_cast<int>(syscall(SYS_memfd_create, name, 3u));  // CLOEXEC, SEALING
    if (mine >= 0 && ftruncate(mine, static_cast<off_t>(bytes)) == 0 &&
        fcntl(mine, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0 &&
        (fd = uvm::lowest_fd_linked_to(link)) == mine) {
      region* r = map(mine, bytes);
      if (r != nullptr && fill_region(r, page, 1)) {
        *memfd = mine;
        return r;
      }
      if (r != nullptr) munmap(r, bytes);
      close(mine);  // a log never filled in: gone, so that no copy waits for it
      return private_region(page);
    }
    if (mine >= 0) close(mine);
  }
  region* r = fd >= 0 && sized_and_sealed(fd, bytes, deadline) ? map(fd, bytes) : nullptr;
  if (r != nullptr) {  // another copy's: wait until it is filled in, then check it
    std::uint64_t l = 0;
    for (int spin = 0; (l = r->layout.load()) == 0; ++spin) {
      if ((spin & 255) != 255) continue;
      if (monotonic_ns() > deadline) {  // its maker failed: abandoned, for every copy at once
        std::uint64_t expected = 0;
        (void)r->layout.compare_exchange(expected, abandoned_id);
      }
      sched_yield();
    }
    if (l == layout_id && r->pid == static_cast<std::int64_t>(getpid()) && r->page == page &&
        r->bytes == bytes) {
      return r;
    }
    munmap(r, bytes);  // another layout or process, or abandoned
  }
  return private_region(page);
}
#endif  // UNIMEM_DETAIL_DEFINE_OUTLINE
#endif  // UNIMEM_DETAIL_HOST_ACCESS_LOG
}  // namespace host_access
}  // namespace detail
UNIMEM_END_NAMESPACE
