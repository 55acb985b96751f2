// unimem: what the host has done to managed memory since a given moment, so that a buffer's
// placement record (placement_record.hpp) stops holding only for the parts the host really took.
// Not a public header; runtime-free (Linux system calls, no hip*/cuda* names).
//
// The process keeps one log of numbered entries, each a span of addresses the host may have
// taken from the GPUs since the entry before. A record remembers the number of the newest entry
// when it was made; a tagged launch asks which spans of its buffer entered the log since, and
// moves those back only (nothing, when none did). Two sources feed the log:
//
// - uvm_events: the NVIDIA UVM driver's tools interface (/dev/nvidia-uvm-tools, the one CUPTI
//   uses; private, layout read in the open kernel module's uvm_ioctl.h and uvm_types.h). The
//   driver writes one event for every CPU fault on managed memory, with its address, into a
//   queue in this process's memory, inside the fault handler, before the faulting access
//   completes. Faults on ordinary memory (a fresh page, another thread's heap) make none.
//   Measured on the H200 (scripts/probes/uvm_tools.cu): checking the queue costs 0.5 ns
//   (getrusage 421 ns); a CPU fault costs the same with the tracker as without. Each event
//   adds its 2 MiB block (the driver's VA block: a CPU fault moves pages within one block only).
// - page_faults, where the driver interface is missing (AMD, other drivers, no /proc), refused,
//   or turned off (UNIMEM_HOST_ACCESS=page-faults): the process's page-fault count (getrusage,
//   every thread). Every CPU access that takes a managed page back from a GPU is a fault, so
//   any change of the count adds an entry covering every address (what unimem did before).
//
// unimem adds entries itself for what it moves or re-advises without a record (a view
// prefetched to the host or to one GPU of several, advice over a view, host_touched(view)):
// announce(). Such an entry says more than "touched": a record that meets one places its whole
// buffer again (its mapping may have changed).
//
// The log lives in shared memory (a memfd) that every copy of unimem in the process finds
// (shared libraries built with hidden visibility, Python modules): one tracker, one log, and an
// announcement made by one copy is seen by all. Where no memfd can be made, the log is private
// and an announcement also takes a page fault on purpose, which copies on the page_faults
// signal see. A wrong belief costs speed, never data: managed memory stays coherent wherever
// its pages are, and a page the log misses comes back by a GPU fault.
#pragma once

#include "../config.hpp"
#include "atomic.hpp"

#include <cstddef>
#include <cstdint>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <sys/resource.h>
#define UNIMEM_DETAIL_FAULT_COUNT 1
#endif
#if defined(__linux__)
#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#define UNIMEM_DETAIL_HOST_ACCESS_LOG 1
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// The page faults the process has taken, minor and major, in every thread (getrusage). Where
/// the operating system has no such count, a number that changes at every call.
inline std::uint64_t host_faults() noexcept {
#if defined(UNIMEM_DETAIL_FAULT_COUNT)
  rusage r{};
  (void)getrusage(RUSAGE_SELF, &r);  // cannot fail for RUSAGE_SELF and a valid pointer
  return static_cast<std::uint64_t>(r.ru_minflt) + static_cast<std::uint64_t>(r.ru_majflt);
#else
  static atomic_cell<std::uint64_t> calls{0};  // no count: every call is news
  return calls.fetch_add(1) + 1;
#endif
}

/// Takes one page fault on purpose (a page of this library's, given back to the system and
/// written again), which every copy of unimem on the page_faults signal sees. About 2 us.
inline void fault_on_purpose() noexcept {
#if defined(UNIMEM_DETAIL_FAULT_COUNT)
  // 64 KiB: at least one page on every system; madvise rounds its length up to the page.
  constexpr std::size_t span = std::size_t{64} << 10;
  static char* const page = [] {
    void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }();
  if (page == nullptr) return;  // no page: records are then only as good as the count
  madvise(page, 1, MADV_DONTNEED);         // the first page goes back to the system
  *static_cast<volatile char*>(page) = 1;  // and comes back zero-filled: one minor fault
#endif
}

namespace host_access {

/// Where the log learns what the host touched.
enum class signal : int {
  undecided = 0,    // not looked yet (the first placement decides)
  uvm_events = 1,   // the UVM driver's CPU-fault events: exact, per 2 MiB block
  page_faults = 2,  // the process's page-fault count: any fault may have touched anything
};

/// "uvm-events", "page-faults" or "undecided".
inline const char* to_string(signal s) noexcept {
  return s == signal::uvm_events    ? "uvm-events"
         : s == signal::page_faults ? "page-faults"
                                    : "undecided";
}

/// The unit a host touch is logged in: the UVM driver's VA block, aligned in the address space.
constexpr unsigned block_shift = 21;
constexpr std::uintptr_t block_bytes = std::uintptr_t{1} << block_shift;

/// A span of addresses [lo, hi). `announced`: unimem moved or re-advised it without a record
/// (a record meeting it places its whole buffer again); else the host touched it.
struct span {
  std::uintptr_t lo;
  std::uintptr_t hi;
  std::uintptr_t announced;
};
constexpr std::uintptr_t everywhere = ~std::uintptr_t{0};

constexpr std::uint32_t log_capacity = 4096;    // entries kept (a power of two)
constexpr std::uint32_t queue_capacity = 4096;  // driver events between two looks (a power of two)
constexpr std::size_t page = 4096;
constexpr std::uint64_t layout_id = 0x756e696d656d0001;  // "unimem", layout 1

/// The driver's control page of an event queue (uvm_types.h: UvmToolsEventControlData).
struct uvm_control {
  volatile std::uint32_t get_ahead, get_behind, put_ahead, put_behind;
  volatile std::uint64_t dropped[64];
};

/// The process's log, in one mapping: this header, the log, the driver's control page, the queue.
struct region {
  atomic_cell<std::uint64_t> layout;  // layout_id once made (0 while the maker fills it in)
  atomic_cell<int> lock;
  atomic_cell<int> source;            // a signal
  atomic_cell<std::uint64_t> newest;  // the number of the newest entry (0: none)
  atomic_cell<std::uint64_t> faults_seen;   // page_faults: the count at the last look
  atomic_cell<std::uint32_t> queue_get;     // uvm_events: the next queue entry to read
  std::uint64_t dropped_seen;               // uvm_events: the driver's dropped count so far
  std::uint32_t entry_size;                 // uvm_events: 72 (queue version 2) or 64
  int tracker_fd;                           // uvm_events: the tracker (open for the process)
  int shared;                               // 1: the memfd every copy finds
  span log[log_capacity];                   // entry k at log[k % log_capacity]
};
constexpr std::size_t control_offset = (sizeof(region) + page - 1) / page * page;
constexpr std::size_t queue_offset = control_offset + page;
constexpr std::size_t queue_entry_max = 72;
constexpr std::size_t region_bytes =
    queue_offset + (queue_capacity * queue_entry_max + page - 1) / page * page;
static_assert(sizeof(uvm_control) <= page, "the driver's control page fits one page");

inline uvm_control* control_of(region* r) noexcept {
  return reinterpret_cast<uvm_control*>(reinterpret_cast<char*>(r) + control_offset);
}
inline const char* queue_of(region* r) noexcept {
  return reinterpret_cast<const char*>(r) + queue_offset;
}

/// Appends [lo, hi) as the newest entry (the caller holds the lock). A touch of what entry
/// `merge_after` or a later one already covers adds nothing; `merge_after` is the newest entry
/// when the caller took the lock (a record may remember any entry a caller returned, so only
/// entries added under the same lock may absorb a new one).
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

#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)

/// Calls f(fd, target) for each open descriptor of the process (/proc/self/fd); false where
/// /proc cannot be read.
template <class F>
bool for_each_fd(F&& f) noexcept {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return false;
  const int own = dirfd(d);
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    char link[32] = "/proc/self/fd/";  // + the name, a number of at most 16 digits
    constexpr std::size_t prefix = 14;
    const std::size_t digits = static_cast<std::size_t>(end - e->d_name);
    if (digits > sizeof link - prefix - 1) continue;
    std::memcpy(link + prefix, e->d_name, digits + 1);
    char target[96];
    const ssize_t len = readlink(link, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    f(static_cast<int>(fd), static_cast<const char*>(target));
  }
  closedir(d);
  return true;
}

constexpr const char* memfd_name = "unimem-host-access-1";
constexpr const char* memfd_link = "/memfd:unimem-host-access-1 (deleted)";

/// The lowest descriptor of the process's log memfd, or -1.
inline int find_region_fd() noexcept {
  int found = -1;
  (void)for_each_fd([&](int fd, const char* target) {
    if (std::strcmp(target, memfd_link) == 0 && (found < 0 || fd < found)) found = fd;
  });
  return found;
}

inline region* map_region(int fd) noexcept {
  void* p = mmap(nullptr, region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<region*>(p);
}

/// The region every copy of unimem in the process shares, made by the first to look (a memfd
/// that stays open for the life of the process). Two copies making it at the same instant may
/// each make one: then each keeps its own log, which costs what a private log costs.
UNIMEM_DETAIL_OUTLINE region* make_region() noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  int fd = find_region_fd();
  bool made = false;
#if defined(SYS_memfd_create)
  if (fd < 0) {
    fd = static_cast<int>(syscall(SYS_memfd_create, memfd_name, 1u /* MFD_CLOEXEC */));
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(region_bytes)) != 0) {
      close(fd);
      fd = -1;
    }
    if (fd >= 0) {
      const int first = find_region_fd();  // another copy's, made meanwhile, wins
      if (first >= 0 && first != fd) {
        close(fd);
        fd = first;
      } else {
        made = true;
      }
    }
  }
#endif
  region* r = nullptr;
  if (fd >= 0) {
    r = map_region(fd);
    if (r != nullptr && made) {
      r->shared = 1;
      r->tracker_fd = -1;
      r->layout.store(layout_id);
    } else if (r != nullptr) {
      for (int spin = 0; r->layout.load() == 0 && spin < (1 << 24); ++spin) {
      }
      if (r->layout.load() != layout_id) {  // another layout, or never filled in
        munmap(r, region_bytes);
        r = nullptr;
      }
    }
  }
  if (r == nullptr) {  // a private log
    void* p = mmap(nullptr, region_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) return nullptr;
    r = static_cast<region*>(p);
    r->shared = 0;
    r->tracker_fd = -1;
    r->layout.store(layout_id);
  }
  return r;
}
#else
    ;
#endif

/// The UVM tools interface, as far as unimem uses it (uvm_ioctl.h, uvm_types.h).
namespace uvm {
struct init_params {  // UVM_TOOLS_INIT_EVENT_TRACKER(_V2)_PARAMS
  std::uint64_t queue_buffer;
  std::uint64_t queue_buffer_size;  // entries, a power of two
  std::uint64_t control_buffer;
  unsigned char processor[16];
  std::uint32_t all_processors;
  std::uint32_t uvm_fd;
  std::uint32_t status;  // NV_STATUS, 0: NV_OK
};
struct flags_params {  // UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS
  std::uint64_t flags;
  std::uint32_t status;
};
constexpr unsigned long init_v1 = 56, enable_events = 58, init_v2 = 76;
constexpr unsigned char cpu_fault = 1;  // UvmEventTypeCpuFault; its address at offset 8
}  // namespace uvm

/// Attaches a queue of CPU-fault events to the process's UVM va space; false where the driver,
/// its tools device or the process's UVM descriptor is missing or refuses (the caller holds the
/// lock).
UNIMEM_DETAIL_OUTLINE bool attach_uvm_events(region* r) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  int uvm_fds[8];
  int found = 0;
  (void)for_each_fd([&](int fd, const char* target) {
    if (found < 8 && std::strcmp(target, "/dev/nvidia-uvm") == 0) uvm_fds[found++] = fd;
  });
  for (int version = 2; version >= 1; --version) {  // 72-byte entries where the driver has them
    for (int i = 0; i < found; ++i) {
      const int tools = open("/dev/nvidia-uvm-tools", O_RDWR | O_CLOEXEC);
      if (tools < 0) return false;
      uvm::init_params p{};
      p.queue_buffer = reinterpret_cast<std::uintptr_t>(queue_of(r));
      p.queue_buffer_size = queue_capacity;
      p.control_buffer = reinterpret_cast<std::uintptr_t>(control_of(r));
      p.uvm_fd = static_cast<std::uint32_t>(uvm_fds[i]);
      if (ioctl(tools, version == 2 ? uvm::init_v2 : uvm::init_v1, &p) == 0 && p.status == 0) {
        uvm::flags_params e{std::uint64_t{1} << uvm::cpu_fault, 0};
        if (ioctl(tools, uvm::enable_events, &e) == 0 && e.status == 0) {
          r->tracker_fd = tools;
          r->entry_size = version == 2 ? 72 : 64;
          r->queue_get.store(control_of(r)->put_behind);
          r->dropped_seen = control_of(r)->dropped[uvm::cpu_fault];
          return true;
        }
      }
      close(tools);  // the descriptor of the process's mm, not its va space; or refused
    }
  }
  return false;
}
#else
    ;
#endif

/// Reads the driver's new events into the log (the caller holds the lock). An event of an
/// unknown kind, or events the driver dropped (the queue was full), add an entry covering
/// everything.
UNIMEM_DETAIL_OUTLINE void drain(region* r) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  uvm_control* c = control_of(r);
  const std::uint32_t mask = queue_capacity - 1;
  const std::uint32_t put = __atomic_load_n(&c->put_behind, __ATOMIC_ACQUIRE) & mask;
  std::uint32_t get = r->queue_get.load();
  const std::uint64_t before = r->newest.load();
  const char* q = queue_of(r);
  while (get != put) {
    const char* e = q + std::size_t{get} * r->entry_size;
    std::uint64_t address = 0;
    std::memcpy(&address, e + 8, sizeof address);
    if (static_cast<unsigned char>(e[0]) == uvm::cpu_fault && address != 0) {
      const std::uintptr_t lo = static_cast<std::uintptr_t>(address) & ~(block_bytes - 1);
      append(r, lo, lo + block_bytes, false, before);
    } else {
      append(r, 0, everywhere, false, before);
    }
    get = (get + 1) & mask;
  }
  c->get_ahead = get;
  c->get_behind = get;
  r->queue_get.store(get);
  const std::uint64_t dropped = c->dropped[uvm::cpu_fault];
  if (dropped != r->dropped_seen) {
    r->dropped_seen = dropped;
    append(r, 0, everywhere, false, before);
  }
}
#else
    ;
#endif

#endif  // UNIMEM_DETAIL_HOST_ACCESS_LOG

/// The process's log (null only where no memory could be mapped for it).
inline region* the_region() noexcept {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  static region* const r = make_region();
  return r;
#elif defined(UNIMEM_DETAIL_FAULT_COUNT)
  static region* const r = [] {
    void* p = mmap(nullptr, sizeof(region), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<region*>(p);
  }();
  return r;
#else
  return nullptr;
#endif
}

/// Chooses the signal once for the process (the caller holds the lock).
inline void decide(region* r) noexcept {
  if (r->source.load() != static_cast<int>(signal::undecided)) return;
  bool events = false;
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  const char* setting = std::getenv("UNIMEM_HOST_ACCESS");
  const bool off = setting != nullptr && std::strcmp(setting, "page-faults") == 0;
  events = r->shared != 0 && !off && attach_uvm_events(r);
#endif
  r->faults_seen.store(host_faults());
  append(r, 0, everywhere, false);  // what happened before is not known
  r->source.store(static_cast<int>(events ? signal::uvm_events : signal::page_faults));
}

/// The number of the newest entry, after taking in what the host did up to now: what a record
/// made now remembers. Costs one load while nothing happened (uvm_events), or one getrusage
/// (page_faults). Where nothing can be logged, a number that changes at every call.
inline std::uint64_t now() noexcept {
  region* r = the_region();
  if (r == nullptr) return host_faults();
  const int source = r->source.load();
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  if (source == static_cast<int>(signal::uvm_events)) {
    uvm_control* c = control_of(r);
    if ((__atomic_load_n(&c->put_behind, __ATOMIC_ACQUIRE) & (queue_capacity - 1)) ==
        r->queue_get.load()) {
      return r->newest.load();
    }
    spin_guard g(r->lock);
    drain(r);
    return r->newest.load();
  }
#endif
  if (source == static_cast<int>(signal::page_faults)) {
    const std::uint64_t f = host_faults();
    if (f == r->faults_seen.load()) return r->newest.load();
    spin_guard g(r->lock);
    if (f != r->faults_seen.load()) {
      r->faults_seen.store(f);
      append(r, 0, everywhere, false);
    }
    return r->newest.load();
  }
  {
    spin_guard g(r->lock);
    decide(r);
  }
  return now();
}

/// The signal the process uses (undecided before its first placement).
inline signal source() noexcept {
  region* r = the_region();
  return r == nullptr ? signal::page_faults : static_cast<signal>(r->source.load());
}

/// Says that unimem moved or re-advised [p, p + bytes) without a record: every record that
/// meets it, in every copy of unimem in the process, places its whole buffer again.
inline void announce(const void* p, std::size_t bytes) noexcept {
  region* r = the_region();
  if (r != nullptr) {
    const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p);
    spin_guard g(r->lock);
    append(r, lo, lo + bytes, true);
  }
  if (r == nullptr || r->shared == 0) fault_on_purpose();
}

/// What of [lo, hi) the log holds since entry `since` (exclusive) up to `upto`, as sorted spans
/// merged across gaps of up to `merge_gap` bytes. Returns the number of spans (0: the host
/// touched nothing there), or -1 when the whole range must be placed again: the log no longer
/// reaches back to `since`, an entry covers everything or was announced, or more than `max`
/// spans remain.
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
    int i = n;  // insertion into the sorted spans, merging neighbours closer than merge_gap
    while (i > 0 && out[i - 1].lo > s.lo) --i;
    if (i > 0 && out[i - 1].hi + merge_gap >= s.lo) {
      if (s.hi > out[i - 1].hi) out[i - 1].hi = s.hi;
      --i;
    } else {
      if (n == max) return -1;
      for (int j = n; j > i; --j) out[j] = out[j - 1];
      out[i] = s;
      ++n;
    }
    while (i + 1 < n && out[i].hi + merge_gap >= out[i + 1].lo) {  // it may reach the next
      if (out[i + 1].hi > out[i].hi) out[i].hi = out[i + 1].hi;
      for (int j = i + 1; j + 1 < n; ++j) out[j] = out[j + 1];
      --n;
    }
  }
  return n;
}
/// touched_in(the process's log, ...).
inline int touched_since(std::uint64_t since, std::uint64_t upto, std::uintptr_t lo,
                         std::uintptr_t hi, std::uintptr_t merge_gap, span* out,
                         int max) noexcept {
  return touched_in(the_region(), since, upto, lo, hi, merge_gap, out, max);
}

/// Test hook: makes the process use signal s from now on (uvm_events only where the tracker is
/// attached; returns whether s is in use), as if nothing were known of the past.
inline bool use_signal_for_testing(signal s) noexcept {
  region* r = the_region();
  if (r == nullptr) return false;
  (void)now();  // decided
  spin_guard g(r->lock);
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  if (s == signal::uvm_events && r->tracker_fd < 0) return false;
  if (s == signal::uvm_events) drain(r);
#endif
  if (s == signal::undecided) return false;
  r->faults_seen.store(host_faults());
  append(r, 0, everywhere, false);
  r->source.store(static_cast<int>(s));
  return true;
}

}  // namespace host_access
}  // namespace detail
UNIMEM_END_NAMESPACE
