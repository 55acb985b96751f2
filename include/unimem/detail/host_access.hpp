// unimem (internal, runtime-free): a log of numbered spans the host may have taken from the GPUs,
// so a placement record (placement_record.hpp) keeps the newest number and a tagged launch moves
// back only its buffer's spans logged since. Signals: uvm_events, where the NVIDIA UVM driver
// queues an event in our memory for each CPU fault on managed memory before the access completes
// (logged as its 2 MiB VA block, the unit a CPU fault moves; on the H200 a queue check costs
// 0.5 ns, getrusage 421 ns, a CPU fault no more: scripts/probes/uvm_tools.cu); else page_faults
// (AMD, refused, or UNIMEM_HOST_ACCESS=page-faults): any change of the process's fault count logs
// everything. The log is a memfd every copy of unimem finds in /proc/self/fd. A wrong belief costs
// speed, never data: a page the log misses comes back by a GPU fault. Off Linux, no log.
#pragma once

#include "../config.hpp"
#include "atomic.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#define UNIMEM_DETAIL_HOST_ACCESS_LOG 1
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
  uvm_events = 1,   // the UVM driver's CPU-fault events: exact, per 2 MiB block
  page_faults = 2,  // the process's page-fault count: any fault may have touched anything
};

inline const char* to_string(signal s) noexcept {
  return s == signal::uvm_events    ? "uvm-events"
         : s == signal::page_faults ? "page-faults"
                                    : "undecided";
}

/// The unit a host touch is logged in: the UVM driver's (aligned) VA block.
constexpr std::uintptr_t block_bytes = std::uintptr_t{1} << 21;

/// A span of addresses [lo, hi). `announced`: unimem moved or re-advised it without a record
/// (a record meeting it places its whole buffer again); else the host touched it.
struct span { std::uintptr_t lo, hi, announced; };
constexpr std::uintptr_t everywhere = ~std::uintptr_t{0};

constexpr std::uint32_t log_capacity = 4096;    // entries kept (a power of two)
constexpr std::uint32_t queue_capacity = 4096;  // driver events between two looks (a power of two)
constexpr std::uint64_t layout_id = 0x756e696d656d0002;  // "unimem", layout 2
constexpr std::uint64_t retry_faults = 1024;             // see decide()

struct uvm_control {  // the driver's queue control page (uvm_types.h: UvmToolsEventControlData)
  volatile std::uint32_t get_ahead, get_behind, put_ahead, put_behind;
  volatile std::uint64_t dropped[64];
};

/// The process's log in one mapping, then the driver's control page and queue (page-aligned).
struct region {
  atomic_cell<std::uint64_t> layout;  // layout_id once made (0 while the maker fills it in)
  atomic_cell<int> lock;
  atomic_cell<int> source;                 // a signal
  atomic_cell<std::uint64_t> newest;       // the number of the newest entry (0: none)
  atomic_cell<std::uint64_t> faults_seen;  // the page-fault count at the last look
  atomic_cell<std::uint32_t> queue_get;    // uvm_events: the next queue entry to read
  std::uint64_t retry_at;      // the fault count from which to try the tracker (0: never)
  std::uint64_t dropped_seen;  // uvm_events: the driver's dropped count so far
  std::uint32_t entry_size;    // uvm_events: 72 (queue version 2) or 64
  int tracker_fd;              // uvm_events: the tracker (open for the process)
  int shared;                  // 1: the memfd every copy finds
  span log[log_capacity];      // entry k at log[k % log_capacity]
  alignas(4096) uvm_control control;
  alignas(4096) char queue[queue_capacity * 72];  // entries of 72 bytes (queue version 2) or 64
};

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

/// Why attach_uvm_events() gave no tracker: no usable /dev/nvidia-uvm-tools; no /dev/nvidia-uvm
/// descriptor yet (the runtime opens one at start); every one refused.
constexpr int no_tools = -1, no_uvm_fd_yet = -2, refused = -3;

#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
/// Up to `max` of the process's descriptors linked to `target`, lowest first; returns how many.
inline int fds_to(const char* target, int* out, int max) noexcept {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  int n = 0;
  while (const dirent* e = readdir(d)) {
    char link[96];  // ".", ".." and the directory's own descriptor link to no target
    const ssize_t len = n < max ? readlinkat(dirfd(d), e->d_name, link, sizeof link - 1) : 0;
    if (len <= 0) continue;
    link[len] = '\0';
    if (std::strcmp(link, target) == 0) out[n++] = std::atoi(e->d_name);
  }
  closedir(d);
  return n;
}

inline int find_region_fd() noexcept {
  int fd = -1;
  return fds_to("/memfd:unimem-host-access-2 (deleted)", &fd, 1) == 1 ? fd : -1;
}

/// Maps the memfd `fd`, or zero-filled private memory where fd < 0. Null on failure.
inline region* map_region(int fd) noexcept {
  void* p = mmap(nullptr, sizeof(region), PROT_READ | PROT_WRITE,
                 fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<region*>(p);
}

/// The region every copy of unimem shares, made by the first to look (two making one at once
/// both keep the lowest memfd), else a private one.
UNIMEM_DETAIL_OUTLINE region* make_region() noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  int fd = find_region_fd();
  bool made = false;
  if (fd < 0) {
    const int mine =  // named as find_region_fd() reads it; 1: MFD_CLOEXEC
        static_cast<int>(syscall(SYS_memfd_create, "unimem-host-access-2", 1u));
    if (mine >= 0 && ftruncate(mine, static_cast<off_t>(sizeof(region))) == 0) {
      fd = find_region_fd();
      made = fd == mine;
    }
    if (mine >= 0 && !made) close(mine);
  }
  region* r = fd >= 0 ? map_region(fd) : nullptr;
  if (r != nullptr && !made) {  // another copy's: wait until it is filled in
    for (int spin = 0; r->layout.load() == 0 && spin < (1 << 24); ++spin) {
    }
    if (r->layout.load() == layout_id) return r;
    munmap(r, sizeof(region));  // another layout, or never filled in
    r = nullptr;
  }
  const int shared = r != nullptr ? 1 : 0;
  if (r == nullptr && (r = map_region(-1)) == nullptr) return nullptr;
  r->shared = shared;
  r->retry_at = static_cast<std::uint64_t>(shared);  // 1: at the first look (private: never)
  r->tracker_fd = -1;
  r->layout.store(layout_id);
  return r;
}
#else
    ;
#endif

/// /dev/nvidia-uvm-tools, as CUPTI uses it (private: the open kernel module's uvm_ioctl.h and
/// uvm_types.h declare the ioctls and layouts).
namespace uvm {
struct init_params {  // UVM_TOOLS_INIT_EVENT_TRACKER(_V2)_PARAMS
  std::uint64_t queue_buffer, queue_buffer_size, control_buffer;  // size: entries, a power of 2
  unsigned char processor[16];
  std::uint32_t all_processors, uvm_fd;
  std::uint32_t status;  // NV_STATUS, 0: NV_OK
};
// UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS, UVM_TOOLS_ENABLE_COUNTERS_PARAMS
struct flags_params { std::uint64_t flags; std::uint32_t status; };
constexpr unsigned long init_v1 = 56, enable_events = 58, enable_counters = 60, init_v2 = 76;
constexpr unsigned char cpu_fault = 1;  // UvmEventTypeCpuFault: entry type at byte 0, address at 8

template <class P>
bool call(int tools, unsigned long request, P& params) noexcept {
  return ioctl(tools, request, &params) == 0 && params.status == 0;
}

/// Tries init(tools, uvm_fd) with a fresh tools descriptor per /dev/nvidia-uvm descriptor (the
/// driver accepts the runtime's va-space one, refuses its mm one): the first accepted, or why none.
template <class F>
int open_tools(F&& init) noexcept {
  int uvm_fds[8];
  const int n = fds_to("/dev/nvidia-uvm", uvm_fds, 8);
  int tools = open("/dev/nvidia-uvm-tools", O_RDWR | O_CLOEXEC);
  for (int i = 0; i < n && tools >= 0; ++i) {
    if (init(tools, static_cast<std::uint32_t>(uvm_fds[i]))) return tools;
    close(tools);
    tools = open("/dev/nvidia-uvm-tools", O_RDWR | O_CLOEXEC);
  }
  if (tools < 0) return no_tools;
  close(tools);
  return n == 0 ? no_uvm_fd_yet : refused;
}
}  // namespace uvm

/// Reads the driver's new events into the log (under the lock); an unknown event, or events
/// dropped (queue full), log everything.
inline void drain(region* r) noexcept {
  uvm_control& c = r->control;
  const std::uint32_t put = __atomic_load_n(&c.put_behind, __ATOMIC_ACQUIRE) % queue_capacity;
  const std::uint64_t before = r->newest.load();
  std::uint32_t get = r->queue_get.load();
  for (; get != put; get = (get + 1) % queue_capacity) {
    const char* e = r->queue + std::size_t{get} * r->entry_size;
    std::uint64_t address = 0;
    std::memcpy(&address, e + 8, sizeof address);
    const std::uintptr_t lo = static_cast<std::uintptr_t>(address) & ~(block_bytes - 1);
    const bool known = static_cast<unsigned char>(e[0]) == uvm::cpu_fault && address != 0;
    append(r, known ? lo : 0, known ? lo + block_bytes : everywhere, false, before);
  }
  c.get_ahead = get;  // two statements: a chained assignment to volatile is deprecated in C++20
  c.get_behind = get;
  r->queue_get.store(get);
  if (c.dropped[uvm::cpu_fault] != r->dropped_seen) {
    r->dropped_seen = c.dropped[uvm::cpu_fault];
    append(r, 0, everywhere, false, before);
  }
}

/// Attaches a CPU-fault event queue to the process's UVM va space (under the lock): the
/// tracker's descriptor, or why none.
UNIMEM_DETAIL_OUTLINE int attach_uvm_events(region* r) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  int tools = refused;
  for (int v = 2; v >= 1 && tools == refused; --v) {  // 72-byte entries where the driver has them
    r->entry_size = v == 2 ? 72 : 64;
    tools = uvm::open_tools([&](int fd, std::uint32_t uvm_fd) {
      uvm::init_params p{reinterpret_cast<std::uintptr_t>(r->queue), queue_capacity,
                         reinterpret_cast<std::uintptr_t>(&r->control), {}, 0, uvm_fd, 0};
      uvm::flags_params e{std::uint64_t{1} << uvm::cpu_fault, 0};
      return uvm::call(fd, v == 2 ? uvm::init_v2 : uvm::init_v1, p) &&
             uvm::call(fd, uvm::enable_events, e);
    });
  }
  if (tools < 0) return tools;
  r->tracker_fd = tools;
  r->queue_get.store(r->control.put_behind);
  r->dropped_seen = r->control.dropped[uvm::cpu_fault];
  return tools;
}
#else
    ;
#endif
#else
inline region* make_region() noexcept { return nullptr; }  // off Linux: no log
inline int attach_uvm_events(region*) noexcept { return no_tools; }
#endif  // UNIMEM_DETAIL_HOST_ACCESS_LOG

inline region* the_region() noexcept {
  static region* const r = make_region();
  return r;
}

/// Uses signal s from now on, as if nothing were known of the past (under the lock).
inline void switch_to(region* r, signal s) noexcept {
  r->faults_seen.store(host_faults());
  append(r, 0, everywhere, false);
  r->source.store(static_cast<int>(s));
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
  r->retry_at = tracker == no_uvm_fd_yet ? f + retry_faults : 0;
  if (tracker >= 0) switch_to(r, signal::uvm_events);
}

/// The newest entry's number after taking in the host's doings (what a record made now keeps):
/// one load (uvm_events) or one getrusage while nothing happened. Tests may give r and attach().
inline std::uint64_t now(region* r = the_region(),
                         int (*attach)(region*) = attach_uvm_events) noexcept {
  if (r == nullptr) return host_faults();
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  if (r->source.load() == static_cast<int>(signal::uvm_events)) {
    if (r->control.put_behind % queue_capacity != r->queue_get.load()) {
      spin_guard g(r->lock);
      drain(r);
    }
    return r->newest.load();
  }
#endif
  const std::uint64_t f = host_faults();
  if (f != r->faults_seen.load()) {
    spin_guard g(r->lock);
    if (r->source.load() != static_cast<int>(signal::uvm_events)) decide(r, attach, f);
  }
  return r->newest.load();
}

/// The signal the process uses (undecided before its first placement).
inline signal source() noexcept {
  region* r = the_region();
  return r == nullptr ? signal::page_faults : static_cast<signal>(r->source.load());
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
