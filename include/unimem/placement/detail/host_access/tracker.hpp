// unimem (internal, runtime-free): the UVM driver's queue of CPU-fault and migration events in the
// process's log (region.hpp), through the seam of uvm/driver.hpp: attached in the layout of the
// module's version where it was read at that version's tag, else only once a self-check proved
// that layout on this driver; read into the log's entries, each entry checked written (the
// driver publishes an entry with no write barrier: on aarch64 its index can be seen first); and
// checked to still watch the runtime's UVM file.
#pragma once

#include "fork.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace host_access {
/// The events unimem asks for: CPU faults, and migrations (it logs those to the CPU).
constexpr std::uint64_t cpu_fault_events = std::uint64_t{1} << uvm::cpu_fault_event;
constexpr std::uint64_t migration_events = std::uint64_t{1} << uvm::migration_event;

/// What attach() answers besides a tracker: refused for good, or for now (tried again later,
/// backing off, a bounded number of times).
constexpr int refused = -1, try_again = -2;

#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
/// The driver's control page of a queue: its indices and dropped counts, read and written as
/// the driver does (atomically; acquire and release where unimem reads what it wrote).
struct control_page {
  unsigned char* base;
  int dropped_at;
  std::uint32_t* index(int i) const noexcept {
    return reinterpret_cast<std::uint32_t*>(base + 4 * i);  // get_ahead, get_behind, put_ahead, put_behind
  }
  std::uint32_t put() const noexcept {
    return __atomic_load_n(index(3), __ATOMIC_ACQUIRE) & queue_mask;
  }
  /// Hands entries before `get` back to the driver (get_ahead, get_behind).
  void give_back(std::uint32_t get) const noexcept {
    __atomic_store_n(index(0), get, __ATOMIC_RELEASE);
    __atomic_store_n(index(1), get, __ATOMIC_RELEASE);
  }
  /// Sets every index, before the driver writes: the self-check's full and empty queues.
  void set(std::uint32_t put, std::uint32_t get) const noexcept {
    __atomic_store_n(index(2), put, __ATOMIC_RELEASE);
    __atomic_store_n(index(3), put, __ATOMIC_RELEASE);
    give_back(get);
  }
  std::uint64_t dropped(unsigned char type) const noexcept {
    return __atomic_load_n(reinterpret_cast<std::uint64_t*>(base + dropped_at) + type,
                           __ATOMIC_ACQUIRE);
  }
  /// Events of the kinds unimem asked for that the driver dropped (a full queue).
  std::uint64_t dropped() const noexcept {
    return dropped(uvm::cpu_fault_event) + dropped(uvm::migration_event);
  }
};

/// This copy's view of r's queue, from what it checks itself (false: r holds no queue it reads).
inline bool queue_view(region* r, std::size_t page, control_page* c, int* version) noexcept {
  const int v = r->queue_version.load(), at = r->dropped_at.load();
  if ((v != 1 && v != 2) || (at != 16 && at != 24)) return false;
  *c = control_page{control_of(r, page), at};
  *version = v;
  return true;
}

/// What a slot holds until the driver writes it: unimem fills each slot with it before handing
/// it to the driver, and no field it reads is all ones in an entry written (a type, an address,
/// a size, a processor index).
constexpr unsigned char unwritten = 0xff;

/// Copies the entry at `slot` (64 or 72 bytes, 8-aligned) into e word by word, as the driver's
/// writes may still land; true once every field span_of() reads is written, looking again a
/// few times (an aarch64 reader may see the driver's index before its entry).
inline bool read_entry(const unsigned char* slot, unsigned char* e, int queue_version) noexcept {
  const std::size_t bytes = uvm::entry_bytes(queue_version);
  for (int look = 0; look < 64; ++look) {
    for (std::size_t i = 0; i < bytes; i += 8) {
      const std::uint64_t w =
          __atomic_load_n(reinterpret_cast<const std::uint64_t*>(slot + i), __ATOMIC_RELAXED);
      std::memcpy(e + i, &w, sizeof w);
    }
    bool written = e[0] != unwritten;
    if (e[0] == uvm::cpu_fault_event) {
      written = written && uvm::get64(e, 8) != ~std::uint64_t{0};
    } else if (e[0] == uvm::migration_event) {
      const std::size_t at = queue_version == 2 ? 16 : 8;
      written = written && uvm::get64(e, at) != ~std::uint64_t{0} &&
                uvm::get64(e, at + 8) != ~std::uint64_t{0} &&
                (queue_version == 2 ? uvm::get32(e, 4) != 0xffffffffu
                                    : e[2] != unwritten && e[3] != unwritten);
    }
    if (written) return true;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
  }
  return false;
}

/// The span an event logs: a CPU fault's 2 MiB block; a migration from a GPU to the CPU, the
/// blocks it moved; {0, 0}: nothing (another migration); {0, everywhere}: an unknown event.
inline span span_of(const unsigned char* e, int queue_version) noexcept {
  std::uint64_t address = 0, bytes = 0;
  if (e[0] == uvm::cpu_fault_event) {
    address = uvm::get64(e, 8);
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
    address = uvm::get64(e, at);
    bytes = uvm::get64(e, at + 8);
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

/// Looks in a row that may find the next entry unwritten before the queue is taken for corrupt
/// (a driver's entry is visible nanoseconds after its index; an index that names no entry is not
/// the driver's).
constexpr int max_stalls = 64;

/// Reads the driver's new events into the log (under the lock), filling each slot read with
/// `unwritten` before handing it back. Drops are seen before anything is handed back: the entry
/// covering everything is in the log before another thread's fast path can find the queue empty
/// and the drops seen. An entry not written yet covers everything, and is read again at the next
/// look (never handed back unread); max_stalls looks in a row: the page-fault signal.
inline void drain(region* r, std::size_t page) noexcept {
  control_page c{};
  int version = 0;
  if (!queue_view(r, page, &c, &version)) return;
  const std::uint64_t dropped = c.dropped();
  const std::uint32_t put = c.put();
  const std::uint64_t before = r->newest.load();
  const std::size_t entry = uvm::entry_bytes(version);
  unsigned char* q = queue_of(r, page, version);
  std::uint32_t get = r->queue_get.load() & queue_mask;
  for (; get != put; get = (get + 1) & queue_mask) {
    unsigned char* slot = q + std::size_t{get} * entry;
    unsigned char e[uvm::max_entry_bytes];
    if (!read_entry(slot, e, version)) {
      append(r, 0, everywhere, false, before);
      if (get == (r->queue_get.load() & queue_mask) && r->stalls.fetch_add(1) + 1 >= max_stalls) {
        switch_to(r, signal::page_faults);
        r->why.store(static_cast<int>(reason::log_corrupt));
        r->retry_at.store(0);
        return;
      }
      break;
    }
    r->stalls.store(0);
    const span s = span_of(e, version);
    if (s.hi != 0) append(r, s.lo, s.hi, false, before);
    std::memset(slot, unwritten, entry);
  }
  if (dropped != r->dropped_seen.load()) append(r, 0, everywhere, false, before);
  r->dropped_seen.store(dropped);
  c.give_back(get);
  r->queue_get.store(get);
}

/// Hands every entry queued so far back to the driver unread (each slot unwritten again); the
/// driver's put index, the next entry to read.
inline std::uint32_t skip_to_put(const control_page& c, unsigned char* q, std::size_t entry) noexcept {
  const std::uint32_t put = c.put();
  for (std::uint32_t k = __atomic_load_n(c.index(1), __ATOMIC_ACQUIRE) & queue_mask; k != put;
       k = (k + 1) & queue_mask) {
    std::memset(q + std::size_t{k} * entry, unwritten, entry);
  }
  c.give_back(put);
  return put;
}

/// Whether every byte of [p, p + n) is b.
inline bool all_bytes(const unsigned char* p, std::size_t n, unsigned char b) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != b) return false;
  }
  return true;
}

/// The self-check of a layout not read at this module's version, on a tracker `tools` just made
/// in it (queue version `version`, nothing enabled, its control page zero and its queue
/// unwritten), with two CPU touches of a managed allocation of unimem's own (two 2 MiB blocks,
/// so that each touch faults):
///  1. a full queue (put at slot 1, get at 2): the first touch's event must be dropped and
///     counted at dropped[CPU fault] where the layout says, nothing else in the page changed;
///  2. an empty queue at slot 1: the second touch's event must be in slot 1 (slot 1's offset is
///     the entry size), a CPU fault of this process and thread at the address touched, slots 0
///     and 2 still unwritten (an entry of another size lands elsewhere; a larger one, or a
///     larger control page, could not even be pinned: the guard pages).
/// Only CPU faults are enabled meanwhile; another thread's may come too (same process, other
/// thread: skipped).
inline proof self_check(region* r, const uvm::driver& d, std::size_t page, int tools, int version,
                        int dropped_at) noexcept {
  unsigned char* probe = static_cast<unsigned char*>(d.map_managed(2 * block_bytes));
  if (probe == nullptr) return proof::no_probe;
  const control_page c{control_of(r, page), dropped_at};
  const std::size_t entry = uvm::entry_bytes(version);
  unsigned char* q = queue_of(r, page, version);
  proof verdict = proof::checked;
  c.set(1, 2);
  if (!uvm::enable(d, tools, true, cpu_fault_events)) verdict = proof::block_refused;
  if (verdict == proof::checked) {
    d.touch(probe);
    const std::uint64_t drops = c.dropped(uvm::cpu_fault_event);
    bool elsewhere = c.put() != 1;
    for (std::size_t at = 16; at < page; at += 8) {
      const std::uint64_t w = __atomic_load_n(
          reinterpret_cast<const std::uint64_t*>(c.base + at), __ATOMIC_ACQUIRE);
      if (at != dropped_at + 8u * uvm::cpu_fault_event && w != 0) elsewhere = true;
    }
    if (elsewhere) verdict = proof::drop_elsewhere;
    else if (drops == 0) verdict = proof::no_event;
  }
  if (verdict == proof::checked) {
    c.set(1, 1);
    d.touch(probe + block_bytes);
    const std::uint32_t put = c.put();
    const auto address = reinterpret_cast<std::uintptr_t>(probe + block_bytes);
    const auto pid = static_cast<std::uint32_t>(getpid());
    const auto thread = static_cast<std::uint32_t>(syscall(SYS_gettid));
    bool ours = false;
    for (std::uint32_t k = 1; k != put && !ours && verdict == proof::checked;
         k = (k + 1) & queue_mask) {
      unsigned char e[uvm::max_entry_bytes];
      if (!read_entry(q + std::size_t{k} * entry, e, version) || e[0] != uvm::cpu_fault_event ||
          uvm::get32(e, uvm::cpu_fault_pid_at) != pid) {
        verdict = proof::event_elsewhere;
      }
      ours = uvm::get64(e, 8) == address && uvm::get32(e, uvm::cpu_fault_thread_at) == thread;
    }
    if (verdict == proof::checked && put == 1 && all_bytes(q, 3 * entry, unwritten)) {
      verdict = proof::no_event;
    } else if (!ours || !all_bytes(q, entry, unwritten) ||
               !all_bytes(q + std::size_t{put} * entry, entry, unwritten)) {
      verdict = proof::event_elsewhere;
    }
    (void)skip_to_put(c, q, entry);
  }
  d.unmap_managed(probe);
  return verdict;
}

/// Attaches a queue of CPU-fault and migration events to the process's UVM va space (under the
/// lock) through `d`, in layout l (`read`: at this module's version; else proven first by
/// self_check()), on the first of the process's UVM descriptors that is not one of the
/// `inherited` (-1 of them: every one). The tracker's descriptor, or refused / try_again
/// (r->why says why, r->proof_of_layout how the layout stands). The queue and control page are
/// r's, laid out for d's page size.
inline int attach_in(region* r, const uvm::driver& d, const uvm::layout& l, bool read,
                     bool migrations, const int* inherited, int inherited_count) noexcept {
  auto say = [r](reason w, int answer) {
    r->why.store(static_cast<int>(w));
    return answer;
  };
  r->proof_of_layout.store(static_cast<int>(read ? proof::read : proof::none));
  const std::size_t page = d.page_size();
  if (!queue_fits(page)) return say(reason::refused, refused);
  int fds[8];
  int n = 0;
  const int found = d.uvm_fds(fds, 8);
  for (int i = 0; i < found && inherited_count >= 0; ++i) {
    bool theirs = false;
    for (int k = 0; k < inherited_count; ++k) theirs = theirs || inherited[k] == fds[i];
    if (!theirs) fds[n++] = fds[i];
  }
  if (n == 0) return say(reason::no_uvm_fd_yet, try_again);
  unsigned char* control = control_of(r, page);
  const offsets o = offsets_for(page);
  for (int i = 0; i < n; ++i) {
    for (std::size_t at = 0; at < page; at += 8) {  // nothing queued, nothing dropped
      __atomic_store_n(reinterpret_cast<std::uint64_t*>(control + at), 0, __ATOMIC_RELAXED);
    }
    std::memset(reinterpret_cast<unsigned char*>(r) + o.control_guard + page, unwritten,
                o.queue_end - o.control_guard - page);
    const uvm::queue_spec spec{{queue_of(r, page, 1), queue_of(r, page, 2)}, queue_capacity,
                               control};
    int version = 0, error = 0;
    const int tools = uvm::open_tracker(d, l, static_cast<std::uint32_t>(fds[i]), spec,
                                        &version, &error);
    if (tools == uvm::no_tools_device) return say(reason::no_tools, refused);
    if (tools == uvm::tools_busy) {
      r->error.store(error);
      return say(reason::tools_busy, try_again);
    }
    if (tools < 0) continue;  // refused: this descriptor is not a va space's, or the block
    const int dropped_at = version == 2 ? l.v2_dropped_at : 16;
    const std::uint64_t events = cpu_fault_events | (migrations ? migration_events : 0);
    if (!read) {
      const proof p = self_check(r, d, page, tools, version, dropped_at);
      if (p != proof::checked) {
        d.close(tools);
        r->proof_of_layout.store(static_cast<int>(p));
        return p == proof::no_probe ? say(reason::self_check_failed, try_again)
                                    : say(reason::self_check_failed, refused);
      }
      r->proof_of_layout.store(static_cast<int>(proof::checked));
    }
    if (!uvm::enable(d, tools, true, events)) {
      d.close(tools);
      continue;
    }
    uvm::file_id id{};
    (void)d.identity(fds[i], &id);
    r->tracker_fd.store(tools);
    r->uvm_fd.store(fds[i]);
    r->uvm_dup.store(d.dup(fds[i]));
    r->uvm_dev.store(id.dev);
    r->uvm_ino.store(id.ino);
    r->queue_version.store(version);
    r->dropped_at.store(dropped_at);
    const control_page c{control, dropped_at};  // what came before is covered by switch_to()
    r->dropped_seen.store(c.dropped());
    r->queue_get.store(skip_to_put(c, queue_of(r, page, version), uvm::entry_bytes(version)));
    return say(reason::tracker, tools);
  }
  if (!read) r->proof_of_layout.store(static_cast<int>(proof::block_refused));
  return say(read ? reason::refused : reason::self_check_failed, refused);
}

/// attach_in() in the layout of the module's version (read at its tag, or the newest read at or
/// before it, to be proven); no module yet: try_again; a version text that is no version: refused.
inline int attach_with(region* r, const uvm::driver& d, bool migrations = true,
                       const int* inherited = nullptr, int inherited_count = 0) noexcept {
  std::uint64_t v = 0;
  const uvm::match m = uvm::module_layout(d, &v);
  r->module_version.store(v);
  if (m.how == uvm::match::unreadable || m.how == uvm::match::unparseable) {
    r->why.store(static_cast<int>(m.how == uvm::match::unreadable ? reason::no_module
                                                                  : reason::version_unparseable));
    return m.how == uvm::match::unreadable ? try_again : refused;
  }
  return attach_in(r, d, *m.found, m.how == uvm::match::read, migrations, inherited,
                   inherited_count);
}

/// Whether the tracker still watches the runtime's UVM file (under the lock): after the runtime
/// closed it (cudaDeviceReset) the tracker sees nothing more; it is closed, the page-fault
/// signal serves, and the tracker is tried again at the next fault. Where no duplicate could be
/// made, the file's identity decides (and a duplicate is tried again): a healthy tracker stays.
inline void check_tracker(region* r, const uvm::driver& d) noexcept {
  if (r->source.load() != static_cast<int>(signal::uvm_events) || r->tracker_fd.load() < 0) return;
  const int fd = r->uvm_fd.load(), dup = r->uvm_dup.load();
  bool same = false;
  if (dup >= 0) {
    same = d.same_file(fd, dup);
  } else {
    uvm::file_id id{};
    same = d.identity(fd, &id) && id.dev == r->uvm_dev.load() && id.ino == r->uvm_ino.load();
    if (same) r->uvm_dup.store(d.dup(fd));
  }
  if (same) return;
  d.close(r->tracker_fd.load());
  if (dup >= 0) d.close(dup);
  r->tracker_fd.store(-1);
  r->uvm_dup.store(-1);
  r->queue_version.store(0);
  switch_to(r, signal::page_faults);
  r->why.store(static_cast<int>(reason::tracker_lost));
  r->tries.store(0);
  r->retry_at.store(r->faults_seen.load() + 1);
}
#endif  // UNIMEM_DETAIL_HOST_ACCESS_LOG
}  // namespace host_access
}  // namespace detail
UNIMEM_END_NAMESPACE
