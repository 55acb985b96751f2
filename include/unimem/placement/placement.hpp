/// @file
/// @brief Where managed data lives: prefetch(), advise()/unadvise() and their queries,
/// set_intent()/get_intent(), ready_for_host(), host_touched(), attach(), each over any range;
/// first_touch() for a new buffer. One path: docs/architecture.md, "One placement path".
/// @code
///   unimem::prefetch(buf, unimem::location::device(0), s);
///   unimem::ready_for_host(buf, s);  // pages to the host, s waited for
/// @endcode
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/argument_error.hpp"
#include "../core/config.hpp"
#include "../core/detail/backend/backend.hpp"
#include "../core/detail/backend/placement.hpp"
#include "../core/detail/placement_record.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../core/kernel_argument.hpp"
#include "location.hpp"
#include "policy.hpp"
#include "../core/stream.hpp"
#include "../core/stream_ref.hpp"
#include "../core/view.hpp"
#include "detail/host_access.hpp"
#include "detail/ledger.hpp"
#include "detail/stamp.hpp"
#include "intent.hpp"

UNIMEM_BEGIN_NAMESPACE

/// @brief "host" or "device 3".
inline std::string to_string(location l) {
  return l.is_host() ? std::string("host") : "device " + std::to_string(l.device_id());
}

/// @brief The locations accessed_by() reports, in the runtime's order (a device, or the host).
using location_list = std::vector<location>;

/// @brief Advice for a range of managed memory.
enum class advice {
  /// Mostly read: devices that read it may keep read-only copies (the location is ignored).
  read_mostly,
  /// Keep the pages at a location; others access them remotely or fault them over.
  preferred_location,
  /// Map the pages for a device so that it accesses them without faults, wherever they are.
  accessed_by,
};

/// @brief How a managed allocation is attached to a stream (attach()).
enum class attach_mode {
  /// Accessible from every stream and the host (the state after allocation).
  global,
  /// Accessible from the host; kernels may not touch it.
  host,
  /// One stream's: the host may access it while that stream is idle, even with kernels running
  /// on others (matters without concurrent managed access).
  single,
};

struct first_touch_t;
namespace detail {
inline void first_touch_bytes(void* p, std::size_t bytes, const first_touch_t& ft, bool zero,
                              placement_record* record, call_site where);
}  // namespace detail

/// @brief Where and on which stream a new buffer is first touched (a temporary stream refused).
struct first_touch_t {
  /// Marks the type for managed_buffer's first-touch constructors (core/managed_buffer.hpp).
  static constexpr bool first_touch = true;
  /// @brief No location, the default stream.
  constexpr first_touch_t() noexcept : location() {}
  /// @brief Location l (none: the device of s), stream s.
  constexpr first_touch_t(optional_location l, stream_ref s) noexcept : location(l), stream(s) {}

  /// @brief Where the pages go; none: the device of `stream`.
  optional_location location;
  /// @brief The stream the placement is ordered on (the constructor waits for it).
  stream_ref stream;

  /// First touch of a new buffer's memory (managed_buffer's constructors find it by ADL).
  friend void unimem_first_touch(void* p, std::size_t bytes, const first_touch_t& ft, bool zero,
                                 detail::placement_record* record, call_site where) {
    detail::first_touch_bytes(p, bytes, ft, zero, record, where);
  }
};
/// @brief A new buffer's pages at l, on stream s (of l's device, else unimem::error).
inline first_touch_t first_touch(location l, stream_ref s = {}) noexcept { return {l, s}; }
/// @brief A new buffer's pages on stream s's device, on s (which must know it, else
/// unimem::error: a unimem::stream does, the default stream does not).
inline first_touch_t first_touch(stream_ref s) noexcept { return {optional_location(), s}; }

namespace detail {
/// One range for place(). `how`: a tag's intent, or plain (the range moves, its intent stays).
/// `record`: that of the buffer the range is all of, or null (a view).
struct placement_range {
  const void* ptr;
  std::size_t bytes;
  intent_choice how;
  placement_record* record;
};
/// Range r's bytes (through to_view()) and its buffer's placement record, if it keeps one.
template <class R>
placement_range range_of(const R& r, intent_choice how = intent_choice::plain) noexcept {
  const auto v = to_view(r);
  return {v.data(), v.size_bytes(), how, record_of(r)};
}

inline void check_location(location l, const char* what, call_site where) {
  if (l.is_device()) require_device(l.device_id(), what, where, "device ");
}
/// The device whose capability decides a hint for location l.
inline int capability_device(location l, call_site where) {
  return l.is_host() ? current_device_id(where) : l.device_id();
}

inline int range_int(backend::range_attribute a, const void* p, std::size_t bytes,
                     call_site where) {
  int v = backend::no_location_id;
  check(backend::range_attribute_ints(&v, 1, a, p, bytes), where);
  return v;
}
/// A location attribute of the whole range; none when empty (no call), unset or mixed.
inline optional_location location_attribute(backend::range_attribute a, const placement_range& r,
                                            call_site where) {
  const int id = r.bytes == 0 ? backend::no_location_id : range_int(a, r.ptr, r.bytes, where);
  if (id == backend::host_location_id) return location::host();
  if (id >= 0) return location::device(id);
  return optional_location();
}
/// f(id) for each device (or host_location_id) with accessed-by advice on the whole range.
template <class F>
void for_each_accessor(const void* p, std::size_t bytes, call_site where, F&& f) {
  const std::size_t slots = static_cast<std::size_t>(device_count(where)) + 1;  // and the host
  std::vector<int> ids(slots, backend::no_location_id);
  check(backend::range_attribute_ints(ids.data(), slots, backend::range_attribute::accessed_by, p,
                                      bytes),
        where);
  for (const int id : ids) {
    if (id >= 0 || id == backend::host_location_id) f(id);
  }
}

// ---- intents: the runtime's own advice is their record (no table) ----

/// Whether the whole range is mapped: its preferred location is the host.
inline bool is_mapped(const void* p, std::size_t bytes, call_site where) {
  return range_int(backend::range_attribute::preferred_location, p, bytes, where) ==
         backend::host_location_id;
}
/// Gives device d accessed-by advice for the range, unless the runtime says it has it.
inline void add_accessor(const void* p, std::size_t bytes, int d, call_site where) {
  bool has_d = false;
  for_each_accessor(p, bytes, where, [&](int id) { has_d = has_d || id == d; });
  if (!has_d) {
    check(backend::advise(p, bytes, backend::mem_advice::set_accessed_by, {false, d}), where);
  }
}
/// Whether the runtime refused advice as not supported for this memory (CUDA 13's pools of
/// managed memory, H200, driver 580), the unsupported_policy applied (it may throw); else checks r.
inline bool refuses_advice(const backend::result& r, const char* what, call_site where) {
  if (r.code != backend::error_not_supported) {
    check(r, where);
    return false;
  }
  backend::forget_if_last(r.code);
  (void)refused_hint(what, where, "the runtime takes no advice for this memory");
  return true;
}
/// Maps the range for d (preferred location host, accessed-by d), giving only missing advice;
/// false (nothing mapped) where the runtime takes no advice for this memory.
inline bool map_range(const void* p, std::size_t bytes, int d, const char* what,
                      call_site where) {
  if (!is_mapped(p, bytes, where) &&
      refuses_advice(backend::advise(p, bytes, backend::mem_advice::set_preferred_location,
                                     {true, -1}),
                     what, where)) {
    return false;
  }
  add_accessor(p, bytes, d, where);
  return true;
}
/// Undoes a mapping: withdraws preferred location host and every device's accessed-by advice.
inline void unmap_range(const void* p, std::size_t bytes, call_site where) {
  if (!is_mapped(p, bytes, where)) return;
  check(backend::advise(p, bytes, backend::mem_advice::unset_preferred_location, {true, -1}),
        where);
  for_each_accessor(p, bytes, where, [&](int id) {
    check(backend::advise(p, bytes, backend::mem_advice::unset_accessed_by, {id < 0, id}), where);
  });
}

/// Touched blocks closer than this move back in one prefetch, resident blocks between included:
/// on the H200 a call that moves pages costs 15-90 us, a resident 2 MiB block about 1.2 us.
constexpr std::uintptr_t touched_merge_gap = std::uintptr_t{32} << 20;
/// More separate touched spans than this in one range: the range is placed whole.
constexpr int touched_spans_max = 16;

/// The touched spans a launch moves back. Up to `blocks_max` 2 MiB blocks move after the launch
/// (move()), overlapping the kernel: a fault on a few pages costs about a prefetch call (H200: +1
/// to +60 us a page, 15-20 us a call). More move before it (164 pages of 64 MiB: 2.8-3.8 ms by
/// faults, 0.7-1.1 ms by one prefetch first). scripts/probes/uvm_tools.cu.
struct touched_later {
  static constexpr std::size_t blocks_max = 16;
  static constexpr int capacity = 8;
  host_access::span spans[capacity];
  int count = 0;
  std::size_t blocks = 0;
  int device = no_device;

  /// Keeps the spans to move after the launch; false (nothing kept) where too many.
  bool keep(const host_access::span* parts, int n, int d) noexcept {
    std::size_t more = 0;
    for (int k = 0; k < n; ++k) {
      more += (parts[k].hi - parts[k].lo + host_access::block_bytes - 1) / host_access::block_bytes;
    }
    if (count + n > capacity || blocks + more > blocks_max || (device != no_device && device != d)) {
      return false;
    }
    for (int k = 0; k < n; ++k) spans[count++] = parts[k];
    blocks += more;
    device = d;
    return true;
  }
  /// Prefetches the kept spans to their device on the calling thread's per-thread stream.
  void move(call_site where) {
    const backend::native_location to{false, device};
    for (int k = 0; k < count; ++k) {
      check(backend::prefetch(reinterpret_cast<const void*>(spans[k].lo),
                              spans[k].hi - spans[k].lo, to, backend::per_thread_stream()),
            where);
      ledger::moved(device, spans[k].hi - spans[k].lo, true);
    }
    count = 0;
    blocks = 0;
  }
};

/// What r still needs towards d by its record and the log: 0 nothing; n > 0 the n `parts` the
/// host touched since; -1 all (no record there, one `how` does not accept, or an unknowable log
/// entry). A mapped range stays put whatever the host touches: only an announcement meets it.
inline int still_needed(const placement_range& r, int d, std::uint64_t now,
                        host_access::span* parts) noexcept {
  if (r.record == nullptr) return -1;
  const std::uint64_t w = r.record->stamp();
  if (w == 0 || placement_stamp::device_of(w) != d) return -1;
  const bool mapped = placement_stamp::mapped_of(w);
  const bool accepted = mapped ? (r.how == intent_choice::follow || r.how == intent_choice::map)
                               : r.how != intent_choice::map;
  if (!accepted) return -1;
  const std::uint64_t since = placement_stamp::entry_of(w);
  if (since == placement_stamp::entry_of(now)) return 0;
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(r.ptr);
  const int n = host_access::touched_since(since, now, lo, lo + r.bytes, touched_merge_gap,
                                           parts, touched_spans_max);
  return mapped && n > 0 ? 0 : n;
}

/// How place() is asked: the ranges' destination and stream, who asks (for errors), whether the
/// caller checked the location already (a launch's device), and for a tagged launch the few
/// touched spans it moves after the kernel is queued.
struct place_options {
  location to;
  stream_ref stream;
  const char* what;
  call_site where;
  bool location_checked = false;
  touched_later* later = nullptr;
};

/// Step 1, once for all ranges: the location's device and what it can do, asked once. applied
/// (go on), not_needed (an APU) or unsupported (the policy said to ignore the hint).
inline hint_status may_place(const place_options& o) {
  if (!o.location_checked) check_location(o.to, o.what, o.where);
  const int cap = capability_device(o.to, o.where);
  const cached_device& device = cached_entry(cap, o.where);
  if (device.placement.regime == memory_regime::apu) return hint_status::not_needed;
  return device.placement.migrates ? hint_status::applied : refused_migration(cap, o.what, o.where);
}

/// Step 2, a range towards GPU d whose record holds there: nothing moves but the spans the host
/// touched since (for tags: on the per-thread stream, a few kept for after the launch), and the
/// record takes the log's newest entry. False where the record does not hold (step 3 places it).
inline bool place_by_record(const placement_range& r, int d, std::uint64_t now,
                            const place_options& o) {
  host_access::span parts[touched_spans_max];
  const int n = still_needed(r, d, now, parts);
  if (n < 0) return false;
  if (n > 0 && (o.later == nullptr || !o.later->keep(parts, n, d))) {
    const backend::stream_handle on =
        o.later != nullptr ? backend::per_thread_stream() : o.stream.get();
    for (int k = 0; k < n; ++k) {
      check(backend::prefetch(reinterpret_cast<const void*>(parts[k].lo),
                              parts[k].hi - parts[k].lo, {false, d}, on),
            o.where);
      ledger::moved(d, parts[k].hi - parts[k].lo, true);
    }
  }
  const std::uint64_t w = r.record->stamp();
  if (placement_stamp::entry_of(w) != placement_stamp::entry_of(now)) {
    r.record->set(placement_stamp::make(d, placement_stamp::mapped_of(w), now));
  }
  return true;
}

/// The ledger's note of a large range placed on GPU d (ledger.hpp): the GPU's free memory, read
/// where d is current (a launch's device, usually), else not noted; a failed query notes nothing.
inline void note_large_range(int d, std::size_t bytes, call_site where) noexcept {
  try {
    if (bytes < ledger::noted_min_bytes ||
        bytes < cached_entry(d, where).properties.total_memory / 16) {
      return;
    }
  } catch (...) {
    return;
  }
  int current = no_device;
  std::size_t free = 0, total = 0;
  backend::result r = backend::get_device(&current);
  if (r.code == backend::success && current == d) r = backend::mem_get_info(&free, &total);
  if (r.code != backend::success) {
    backend::forget_if_last(r.code);
  } else if (current == d) {
    ledger::placed_range(d, bytes, free);
  }
}

/// Step 3, a whole range: its intent (map adds advice, move withdraws a mapping, follow maps it
/// for this GPU too where it is mapped), a prefetch unless mapped, then the record remembers a
/// GPU placement and forgets a host one; pages moved without a record to the host, or to one GPU
/// of several, are announced to the log (another record may hold them). Whether pages moved.
inline bool place_whole(const placement_range& r, int d, std::uint64_t now,
                        const place_options& o) {
  bool mapped = false;
  if (r.how == intent_choice::map && d >= 0) {
    mapped = map_range(r.ptr, r.bytes, d, o.what, o.where);  // else moved: no advice taken
  } else if (r.how == intent_choice::move && d >= 0) {
    unmap_range(r.ptr, r.bytes, o.where);
  } else if (r.how == intent_choice::follow) {
    mapped = is_mapped(r.ptr, r.bytes, o.where);
    if (mapped && d >= 0) add_accessor(r.ptr, r.bytes, d, o.where);  // this GPU maps it too
  }
  if (!mapped) {
    if (d >= 0) note_large_range(d, r.bytes, o.where);  // before the move changes free memory
    check(backend::prefetch(r.ptr, r.bytes, {o.to.is_host(), o.to.device_id()}, o.stream.get()),
          o.where);
    const int from = r.record != nullptr ? placement_stamp::device_of(r.record->stamp()) : d;
    ledger::moved(d >= 0 ? d : from, r.bytes, d >= 0);  // to the host: from where its record says
  }
  if (r.record == nullptr) {
    if (!mapped && (d < 0 || device_count(o.where) > 1)) host_access::announce(r.ptr, r.bytes);
  } else if (d >= 0) {
    r.record->set(placement_stamp::make(d, mapped, now));
  } else {
    r.record->forget();
  }
  return !mapped;
}

/// The one placement path: every range to o.to, in order on o.stream. The device is asked once
/// (step 1) and the host-access log read once; then each range by its record (step 2) or whole
/// (step 3). A placement that moved pages checks that the tracker still watches the runtime's
/// UVM file (host_access::check_after_move()).
inline hint_status place(const placement_range* ranges, std::size_t count,
                         const place_options& o) {
  bool any = false;
  for (std::size_t i = 0; i < count && !any; ++i) any = ranges[i].bytes != 0;
  if (!any) return hint_status::empty;
  const hint_status allowed = may_place(o);
  if (allowed != hint_status::applied) return allowed;
  const int d = o.to.is_device() ? o.to.device_id() : no_device;
  const std::uint64_t now = host_access::now();
  bool moved = false;
  for (std::size_t i = 0; i < count; ++i) {
    const placement_range& r = ranges[i];
    if (r.bytes == 0 || (d >= 0 && place_by_record(r, d, now, o))) continue;
    moved = place_whole(r, d, now, o) || moved;
  }
  if (moved) host_access::check_after_move();
  return hint_status::applied;
}

/// Advice given without a location must be read_mostly, the one kind that takes none.
inline advice needs_no_location(advice a, const char* what) {
  if (a != advice::read_mostly) {
    throw_refused<invalid_argument>(
        refusal(what).append(": preferred_location and accessed_by need a location"));
  }
  return a;
}

/// advise() and unadvise(). A buffer's record forgets; mapping advice over a view is announced
/// to the host-access log, so every record meeting the range places its buffer again.
inline hint_status advise_range(const placement_range& r, advice a, location l, bool set,
                                call_site where) {
  if (r.bytes == 0) return hint_status::empty;
  const char* what = set ? "unimem::advise" : "unimem::unadvise";
  check_location(l, what, where);
  const int cap = a == advice::read_mostly ? current_device_id(where) : capability_device(l, where);
  // On an APU only accessed_by (mappings) is passed on: the rest would move nothing.
  if (a != advice::accessed_by && hint_not_needed(cap, where)) return hint_status::not_needed;
  if (gate(cap, what, where) == hint_status::unsupported) return hint_status::unsupported;
  using m = backend::mem_advice;
  const m native = a == advice::read_mostly ? (set ? m::set_read_mostly : m::unset_read_mostly)
                   : a == advice::preferred_location
                       ? (set ? m::set_preferred_location : m::unset_preferred_location)
                       : (set ? m::set_accessed_by : m::unset_accessed_by);
  if (refuses_advice(backend::advise(r.ptr, r.bytes, native, {l.is_host(), l.device_id()}), what,
                     where)) {
    return hint_status::unsupported;
  }
  if (r.record != nullptr) {
    r.record->forget();
  } else if (a != advice::read_mostly) {
    host_access::announce(r.ptr, r.bytes);
  }
  return hint_status::applied;
}

inline hint_status set_intent_range(const placement_range& r, intent i, location gpu,
                                    call_site where) {
  if (r.bytes == 0) return hint_status::empty;
  const char* what = "unimem::set_intent";
  if (i == intent::map && gpu.is_host()) {
    throw_refused<invalid_argument>(refusal(what).append(
        ": intent map needs the GPU that maps the range, not the host"));
  }
  check_location(gpu, what, where);
  if (hint_not_needed(gpu.device_id(), where)) return hint_status::not_needed;
  if (gate(gpu.device_id(), what, where) == hint_status::unsupported) {
    return hint_status::unsupported;
  }
  if (i == intent::map) {
    if (!map_range(r.ptr, r.bytes, gpu.device_id(), what, where)) return hint_status::unsupported;
  } else {
    unmap_range(r.ptr, r.bytes, where);
  }
  if (r.record == nullptr) {
    host_access::announce(r.ptr, r.bytes);
  } else if (i == intent::map) {
    r.record->set(placement_stamp::make(gpu.device_id(), true, host_access::now()));
  } else {
    r.record->forget();
  }
  return hint_status::applied;
}

inline hint_status ready_range(placement_range r, stream_ref s, call_site where) {
  if (r.bytes == 0) return hint_status::empty;
  if (s.is_default()) synchronize_all_devices(where);
  r.how = intent_choice::follow;
  const hint_status st = place(&r, 1, {location::host(), s, "unimem::ready_for_host", where});
  if (st == hint_status::unsupported) {
    if (!s.is_default()) synchronize_all_devices(where);
  } else {
    s.synchronize(where);
  }
  return st;
}

/// First touch: the pages go to ft's location (policy applies), optionally zeroed there; waits
/// for ft.stream. The record then says where they are.
inline void first_touch_bytes(void* p, std::size_t bytes, const first_touch_t& ft, bool zero,
                              placement_record* record, call_site where) {
  if (bytes == 0) return;
  const char* what = "unimem::first_touch";
  const placement_range r{p, bytes, intent_choice::plain, record};
  if (ft.location && ft.location->is_host()) {
    (void)place(&r, 1, {location::host(), ft.stream, what, where});
    ft.stream.synchronize(where);
    return;
  }
  const int d = device_for(ft.location ? ft.location->device_id() : no_device, ft.stream, what,
                           "first_touch(location)", where);
  if (d == no_device) {
    fail(backend::error_invalid_value, what, where,
         "first_touch(stream) needs a stream that knows its device (a unimem::stream); the "
         "default stream and this native handle do not: pass a location");
  }
  device_guard g(d, where);  // the default stream and the memset of that device
  (void)place(&r, 1, {location::device(d), ft.stream, what, where});
  if (zero) check(backend::memset_async(p, 0, bytes, ft.stream.get()), where);
  ft.stream.synchronize(where);
}
}  // namespace detail

/// @brief Whether prefetch and advice towards l can move pages (migrates_on_demand() of l's
/// device, the current one for the host); else placement calls return unsupported or throw.
/// @throws unimem::error for a device that does not exist.
[[nodiscard]] inline bool migrates_on_demand(location l, call_site where = call_site::current()) {
  detail::check_location(l, "unimem::migrates_on_demand", where);
  return detail::device_migrates(detail::capability_device(l, where), where);
}

/// @brief Queues a migration of the range's pages to l on stream s; of a buffer unimem placed at
/// l only the 2 MiB blocks the host touched since move (docs/architecture.md, Placement records).
/// @return applied; empty; not_needed on an APU (no runtime call); unsupported where the device
/// cannot migrate and the policy is ignore.
/// @throws unimem::error for an invalid device, memory that is not managed, or (policy
/// throw_error) a device that cannot migrate.
template <class R, detail::if_range<R> = 0>
hint_status prefetch(const R& r, location l, stream_ref s = {},
                     call_site where = call_site::current()) {
  const detail::placement_range pr = detail::range_of(r);
  return detail::place(&pr, 1, {l, s, "unimem::prefetch", where});
}

/// @brief Gives advice (`l` ignored for read_mostly); it moves no data, lasts until unadvise. On
/// an APU only accessed_by (mappings) reaches the runtime, the rest is not_needed. Memory that
/// takes no advice (CUDA 13's managed pools) counts as a device that cannot migrate.
template <class R, detail::if_range<R> = 0>
hint_status advise(const R& r, advice a, location l, call_site where = call_site::current()) {
  return detail::advise_range(detail::range_of(r), a, l, true, where);
}
/// @brief Withdraws advice given with advise().
template <class R, detail::if_range<R> = 0>
hint_status unadvise(const R& r, advice a, location l, call_site where = call_site::current()) {
  return detail::advise_range(detail::range_of(r), a, l, false, where);
}
/// @brief advise(r, advice::read_mostly); other advice needs a location.
/// @throws unimem::invalid_argument for preferred_location or accessed_by without a location.
template <class R, detail::if_range<R> = 0>
hint_status advise(const R& r, advice a, call_site where = call_site::current()) {
  return advise(r, detail::needs_no_location(a, "unimem::advise"), location::host(), where);
}
/// @brief unadvise(r, advice::read_mostly).
/// @throws unimem::invalid_argument for preferred_location or accessed_by without a location.
template <class R, detail::if_range<R> = 0>
hint_status unadvise(const R& r, advice a, call_site where = call_site::current()) {
  return unadvise(r, detail::needs_no_location(a, "unimem::unadvise"), location::host(), where);
}

/// @brief Whether the whole range carries read_mostly advice (false for an empty range).
template <class R, detail::if_range<R> = 0>
[[nodiscard]] bool is_read_mostly(const R& r, call_site where = call_site::current()) {
  const detail::placement_range pr = detail::range_of(r);
  return pr.bytes != 0 &&
         detail::range_int(detail::backend::range_attribute::read_mostly, pr.ptr, pr.bytes,
                           where) != 0;
}
/// @brief The whole range's preferred location; none where unset or its pages disagree.
template <class R, detail::if_range<R> = 0>
[[nodiscard]] optional_location preferred_location(const R& r,
                                                   call_site where = call_site::current()) {
  return detail::location_attribute(detail::backend::range_attribute::preferred_location,
                                    detail::range_of(r), where);
}
/// @brief Where the whole range was last prefetched to; none if never, or its pages disagree.
template <class R, detail::if_range<R> = 0>
[[nodiscard]] optional_location last_prefetch_location(const R& r,
                                                       call_site where = call_site::current()) {
  return detail::location_attribute(detail::backend::range_attribute::last_prefetch_location,
                                    detail::range_of(r), where);
}
/// @brief The locations that have accessed_by advice for the whole range.
template <class R, detail::if_range<R> = 0>
[[nodiscard]] location_list accessed_by(const R& r, call_site where = call_site::current()) {
  location_list by;
  const detail::placement_range pr = detail::range_of(r);
  if (pr.bytes == 0) return by;
  detail::for_each_accessor(pr.ptr, pr.bytes, where, [&](int id) {
    by.push_back(id < 0 ? location::host() : location::device(id));
  });
  return by;
}

/// @brief Sets the range's intent for GPU `gpu` as a tag would: map gives missing advice; move
/// withdraws it (the range moves at its next tagged launch). No data moves; not stream-ordered.
/// @return applied; empty; not_needed on an APU; unsupported where `gpu` cannot migrate and the
/// policy is ignore (AMD without XNACK: the GPU maps managed memory already).
/// @throws unimem::invalid_argument for map towards the host; unimem::error for an invalid
/// device, memory that is not managed, or (policy throw_error) a device that cannot migrate.
template <class R, detail::if_range<R> = 0>
hint_status set_intent(const R& r, intent i, location gpu, call_site where = call_site::current()) {
  return detail::set_intent_range(detail::range_of(r), i, gpu, where);
}
/// @brief set_intent(r, i, the current device).
template <class R, detail::if_range<R> = 0>
hint_status set_intent(const R& r, intent i, call_site where = call_site::current()) {
  return set_intent(r, i, location::device(detail::current_device_id(where)), where);
}
/// @brief The range's intent: map where all of it prefers the host with accessed-by for a GPU.
/// @throws unimem::error when the runtime cannot answer (memory that is not managed).
template <class R, detail::if_range<R> = 0>
[[nodiscard]] intent get_intent(const R& r, call_site where = call_site::current()) {
  const detail::placement_range pr = detail::range_of(r);
  if (pr.bytes == 0 || !detail::is_mapped(pr.ptr, pr.bytes, where)) return intent::move;
  bool any_gpu = false;
  detail::for_each_accessor(pr.ptr, pr.bytes, where, [&](int id) { any_gpu |= id >= 0; });
  return any_gpu ? intent::map : intent::move;
}

/// @brief Makes the range ready for CPU access: on return no GPU writes it and its pages are on
/// the host (a mapped range stays: the fastest way back, docs/pitfalls.md). Without a stream (or
/// with the default one) it waits for every GPU that may have work (another GPU or a non-blocking
/// stream may write the range), prefetches, waits; with s, prefetches on s and waits for s (every
/// write must be ordered before s). Cannot migrate (unsupported): waits for every GPU (the CPU
/// may touch managed memory only while no kernel runs). APU: not_needed. Empty: no wait.
/// @throws unimem::error carrying any asynchronous error of the work waited for.
template <class R, detail::if_range<R> = 0>
hint_status ready_for_host(const R& r, stream_ref s = {}, call_site where = call_site::current()) {
  return detail::ready_range(detail::range_of(r), s, where);
}

/// @brief Says the range's pages may have moved unseen (a raw prefetch or kernel): the next
/// tagged launch over a buffer meeting it places that again (CPU accesses are noticed without
/// it). A buffer with a record forgets only its own. No runtime call.
template <class R, detail::if_range<R> = 0>
void host_touched(const R& r) noexcept {
  const detail::placement_range pr = detail::range_of(r);
  if (pr.record != nullptr) {
    pr.record->forget();
  } else if (pr.bytes != 0) {
    detail::host_access::announce(pr.ptr, pr.bytes);
  }
}

/// @brief Attaches a whole managed allocation (managed_buffer, managed_vector, a view of one) to
/// stream s, asynchronously on s; the runtime refuses part of one (a sub-view, a pool_buffer).
/// HIP on AMD documents it as a no-op.
/// @throws unimem::error when the runtime refuses.
template <class R, detail::if_range<R> = 0>
void attach(const R& r, stream_ref s, attach_mode m = attach_mode::single,
            call_site where = call_site::current()) {
  using kind = detail::backend::attach_kind;
  const detail::placement_range pr = detail::range_of(r);
  if (pr.bytes == 0) return;
  const kind k = m == attach_mode::global ? kind::global
                 : m == attach_mode::host ? kind::host
                                          : kind::single;
  detail::check(detail::backend::stream_attach(s.get(), const_cast<void*>(pr.ptr), pr.bytes, k),
                where);
}

UNIMEM_END_NAMESPACE
