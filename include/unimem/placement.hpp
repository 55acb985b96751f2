// unimem: where managed data lives. Prefetch, advice and their queries over views and
// containers, first touch, stream attachment and readiness for CPU access, all through one
// placement path (detail::place), which checks the location, applies the capability policy
// (placement_policy.hpp) once and queues the runtime's calls in stream order.
/// @file
/// @brief Where managed data lives: prefetch(), advise() and unadvise() with their queries,
/// first_touch(), attach() and ready_for_host(), over views and containers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "access.hpp"
#include "argument_error.hpp"
#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/mapped_ranges.hpp"
#include "detail/transfer.hpp"
#include "device.hpp"
#include "error.hpp"
#include "kernel_argument.hpp"
#include "location.hpp"
#include "placement_policy.hpp"
#include "stream.hpp"
#include "stream_ref.hpp"
#include "text.hpp"
#include "view.hpp"

UNIMEM_BEGIN_NAMESPACE

/// @brief "host" or "device 3".
inline text to_string(location l) {
  return l.is_host() ? text("host") : text("device ").append(l.device_id());
}

/// @brief The locations accessed_by() reports, in the runtime's order.
class location_list {
 public:
  /// @brief No location.
  location_list() noexcept = default;
  /// @brief The locations of n ids: a device ordinal, or a negative id for the host.
  location_list(const int* ids, std::size_t n) : location_list(n) {
    for (std::size_t i = 0; i < n; ++i) ids_[i] = ids[i] < 0 ? -1 : ids[i];
  }
  /// @brief A copy.
  location_list(const location_list& other) : location_list(other.size_) {
    for (std::size_t i = 0; i < size_; ++i) ids_[i] = other.ids_[i];
  }
  /// @brief Takes other's locations; other is left empty.
  location_list(location_list&& other) noexcept : ids_(other.ids_), size_(other.size_) {
    other.ids_ = nullptr;
    other.size_ = 0;
  }
  /// @brief Copy assignment.
  location_list& operator=(const location_list& other) {
    if (this != &other) location_list(other).swap(*this);
    return *this;
  }
  /// @brief Move assignment.
  location_list& operator=(location_list&& other) noexcept {
    location_list(static_cast<location_list&&>(other)).swap(*this);
    return *this;
  }
  /// @brief Frees the list.
  ~location_list() { delete[] ids_; }

  /// @brief The number of locations.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// @brief True when there is none.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// @brief Location i (unchecked).
  [[nodiscard]] location operator[](std::size_t i) const noexcept { return from_id(ids_[i]); }
  /// @brief True when l is in the list.
  [[nodiscard]] bool contains(location l) const noexcept {
    for (std::size_t i = 0; i < size_; ++i) {
      if ((*this)[i] == l) return true;
    }
    return false;
  }

  /// @brief Walks the locations.
  class iterator {
   public:
    /// @brief The location here.
    location operator*() const noexcept { return from_id(*id_); }
    /// @brief The next location.
    iterator& operator++() noexcept {
      ++id_;
      return *this;
    }
    /// @brief Same position.
    friend bool operator==(iterator a, iterator b) noexcept { return a.id_ == b.id_; }
    /// @brief Different positions.
    friend bool operator!=(iterator a, iterator b) noexcept { return a.id_ != b.id_; }

   private:
    friend class location_list;
    explicit iterator(const int* id) noexcept : id_(id) {}
    const int* id_;
  };
  /// @brief The first location.
  [[nodiscard]] iterator begin() const noexcept { return iterator(ids_); }
  /// @brief Past the last location.
  [[nodiscard]] iterator end() const noexcept { return iterator(ids_ + size_); }

  /// @brief Swaps two lists.
  void swap(location_list& other) noexcept {
    int* ids = ids_;
    ids_ = other.ids_;
    other.ids_ = ids;
    const std::size_t n = size_;
    size_ = other.size_;
    other.size_ = n;
  }

 private:
  explicit location_list(std::size_t n) : ids_(n != 0 ? new int[n] : nullptr), size_(n) {}
  static location from_id(int id) noexcept {
    return id < 0 ? location::host() : location::device(id);
  }
  int* ids_ = nullptr;  // -1: the host
  std::size_t size_ = 0;
};

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
  /// Associated with one stream: the host may access it whenever that stream is idle, even
  /// while kernels run on other streams (matters on devices without concurrent managed access).
  single,
};

/// @brief Where a new buffer's pages are first touched, and on which stream that happens.
/// Made by first_touch(); a temporary unimem::stream is refused (see stream).
struct first_touch_t {
  /// Where the pages go; none: the device of `stream`.
  optional_location where;
  /// The stream the placement is ordered on (the constructor waits for it).
  stream_ref stream;
};
/// @brief Places a new buffer's pages at `where` during construction (see managed_buffer), on
/// stream s. A stream of another device than `where` is refused with unimem::error.
inline first_touch_t first_touch(location where, stream_ref s = {}) noexcept { return {where, s}; }
/// @brief Places a new buffer's pages on the device of stream s, on s. The stream must know its
/// device (a unimem::stream, or a native handle the runtime can place), else the constructor
/// throws unimem::error.
inline first_touch_t first_touch(stream_ref s) noexcept { return {optional_location(), s}; }

namespace detail {

/// A heap array for a call's scratch space; freed on every exit.
template <class T>
struct scratch {
  explicit scratch(std::size_t n) : p(new T[n]) {}
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  ~scratch() { delete[] p; }
  T* p;
};

/// One range for the placement path. `discard`: its old contents are not needed. `how`: plain
/// for the placement calls (the whole range moves, its intent is left alone); a tag's choice
/// otherwise (follow the range's intent, or set it to move or map: access.hpp).
struct placement_range {
  const void* ptr;
  std::size_t bytes;
  bool discard;
  intent_choice how;
};

/// Throws unimem::error (invalid device) for a device location that names no GPU.
inline void check_location(location l, const char* what, call_site where) {
  if (l.is_device()) require_device(l.device_id(), what, where, "device ");
}

/// The device whose capability decides a hint for location l.
inline int capability_device(location l, call_site where) {
  return l.is_host() ? current_device_id(where) : l.device_id();
}

/// Whether the runtime can discard stale pages while placing them at l on stream s (CUDA >= 12.8,
/// towards a device, off the legacy default stream).
inline bool discard_possible(location l, stream_ref s) noexcept {
  return backend::has_discard_prefetch && l.is_device() &&
         !backend::is_legacy_default_stream(s.get());
}

// ---- intents: the mapped-range table (detail/mapped_ranges.hpp) and the advice behind it ----

/// Whether the advice of device d is remembered in a piece's device set (devices 63 and up share
/// one bit that remembers nothing: their advice is given at every use).
constexpr bool remembered(std::uint64_t devices, int d) noexcept {
  return d >= 0 && d < 63 && (devices & device_bit(d)) != 0;
}

/// Calls f(piece) for each piece of [p, p + bytes) by the mapped-range table, in address order,
/// outside the table's lock.
template <class F>
void for_each_piece(const void* p, std::size_t bytes, F&& f) {
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  constexpr std::size_t on_stack = 8;
  range_piece small[on_stack];
  std::size_t n = mapped_table().pieces(b, b + bytes, small, on_stack);
  if (n <= on_stack) {
    for (std::size_t i = 0; i < n; ++i) f(small[i]);
    return;
  }
  for (;;) {  // more pieces than fit on the stack; the table may change meanwhile: ask again
    scratch<range_piece> large(n);
    const std::size_t m = mapped_table().pieces(b, b + bytes, large.p, n);
    if (m <= n) {
      for (std::size_t i = 0; i < m; ++i) f(large.p[i]);
      return;
    }
    n = m;
  }
}

inline const void* piece_ptr(const range_piece& x) noexcept {
  return reinterpret_cast<const void*>(x.begin);
}

/// Maps [p, p + bytes) for device d: the parts not yet mapped get preferred location host, and
/// every part not yet mapped for d gets accessed-by d; the table remembers it. With
/// `only_mapped_parts` (a tag that follows the range's intent) the parts that are not mapped
/// are left alone. Advice is not stream-ordered: it applies at once.
inline void map_range(const void* p, std::size_t bytes, int d, bool only_mapped_parts,
                      call_site where) {
  for_each_piece(p, bytes, [&](const range_piece& x) {
    if ((only_mapped_parts && !x.mapped) || (x.mapped && remembered(x.devices, d))) return;
    if (!x.mapped) {
      check(backend::advise(piece_ptr(x), x.end - x.begin,
                            backend::mem_advice::set_preferred_location, {true, -1}),
            where);
    }
    check(backend::advise(piece_ptr(x), x.end - x.begin, backend::mem_advice::set_accessed_by,
                          {false, d}),
          where);
    // Recorded piece by piece, as soon as its advice is given: an exception later leaves the
    // table true to the runtime.
    mapped_table().add(x.begin, x.end, device_bit(d));
  });
}

/// Undoes the mapping of the mapped parts of [p, p + bytes): their preferred location and the
/// accessed-by advice of their devices are withdrawn, and the table forgets them.
inline void unmap_range(const void* p, std::size_t bytes, call_site where) {
  if (mapped_table().empty()) return;
  for_each_piece(p, bytes, [&](const range_piece& x) {
    if (!x.mapped) return;
    const std::size_t n = x.end - x.begin;
    check(
        backend::advise(piece_ptr(x), n, backend::mem_advice::unset_preferred_location, {true, -1}),
        where);
    const int devices = device_count(where);
    for (int d = 0; d < devices; ++d) {
      if ((x.devices & device_bit(d)) == 0) continue;
      check(backend::advise(piece_ptr(x), n, backend::mem_advice::unset_accessed_by, {false, d}),
            where);
    }
    mapped_table().remove(x.begin, x.end);
  });
}

/// Queues the prefetch of [p, p + bytes) to l on s through the transfer engine
/// (detail/transfer.hpp): chunks over the pool of streams of s's device, forked from s and
/// joined back into it, when the range is large, bound for a GPU and last prefetched to another
/// GPU, and s's device is known (a unimem::stream, or the default stream of the current
/// device); one call otherwise.
inline void prefetch_range(const void* p, std::size_t bytes, location l,
                           backend::native_location native, stream_ref s, call_site where) {
  if (l.is_device() && bytes >= transfer_settings::min_split_bytes &&
      (s.is_default() || s.knows_device())) {
    int last = backend::no_location_id;
    const backend::result q = backend::range_attribute_ints(
        &last, 1, backend::range_attribute::last_prefetch_location, p, bytes);
    if (q.code != backend::success) {
      backend::forget_if_last(q.code);
    } else if (last >= 0 && last != l.device_id()) {
      const int current = current_device_id(where);
      const int owner = s.knows_device() ? s.device_id() : current;
      device_restore restore;  // the pool and the events belong to s's device: made current
      if (owner != current) {
        check(backend::set_device(owner), where);
        restore.arm(current);
      }
      backend::result failed{backend::success, ""};
      if (split_prefetch(p, bytes, native, owner, s.get(), &failed)) {
        check(failed, where);
        return;
      }
    }
  }
  check(backend::prefetch(p, bytes, native, s.get()), where);
}

/// Whether any part of r is mapped: one lock-free load while nothing is mapped, else one
/// binary search of the table.
inline bool overlaps_mapped(const placement_range& r) noexcept {
  const auto b = reinterpret_cast<std::uintptr_t>(r.ptr);
  return mapped_table().overlaps(b, b + r.bytes);
}

/// The one placement path. On stream s, in order: the intents of tagged ranges first (advice,
/// which can throw, before anything is queued), then the prefetch of every range to l that
/// moves (through the transfer engine, prefetch_range; the discarding prefetch, last and in one
/// batch, for ranges marked discard where the runtime has it; elsewhere a plain prefetch). A range
/// that is mapped (intent map, or a range that follows an intent map) does not move: the GPU maps
/// it, and towards the host it is there already. Empty ranges are skipped; the location and the
/// capability policy are checked once. Returns empty when every range is empty.
inline hint_status place(const placement_range* ranges, std::size_t count, location l,
                         stream_ref s, const char* what, call_site where,
                         bool location_known_valid = false) {
  bool any = false;
  for (std::size_t i = 0; i < count && !any; ++i) any = ranges[i].bytes != 0;
  if (!any) return hint_status::empty;
  if (!location_known_valid) check_location(l, what, where);
  if (gate(capability_device(l, where), what, where) == hint_status::unsupported) {
    return hint_status::unsupported;
  }
  const backend::native_location native{l.is_host(), l.device_id()};
  // 1. Intents. Tags place towards a device; towards the host (ready_for_host) nothing is set.
  for (std::size_t i = 0; i < count && l.is_device(); ++i) {
    const placement_range& r = ranges[i];
    if (r.bytes == 0) continue;
    if (r.how == intent_choice::map) map_range(r.ptr, r.bytes, l.device_id(), false, where);
    if (r.how == intent_choice::move) unmap_range(r.ptr, r.bytes, where);
    if (r.how == intent_choice::follow && overlaps_mapped(r)) {
      map_range(r.ptr, r.bytes, l.device_id(), true, where);  // mapped parts: this GPU too
    }
  }
  // 2. Prefetches; the discarding ones are collected for step 3.
  constexpr std::size_t on_stack = 16;  // launches have a handful of arguments: no allocation
  void* ptrs_small[on_stack];
  std::size_t sizes_small[on_stack];
  scratch<void*> ptrs_large(count > on_stack ? count : 0);
  scratch<std::size_t> sizes_large(count > on_stack ? count : 0);
  void** ptrs = count > on_stack ? ptrs_large.p : ptrs_small;
  std::size_t* sizes = count > on_stack ? sizes_large.p : sizes_small;
  std::size_t discards = 0;
  const bool can_discard = discard_possible(l, s);
  for (std::size_t i = 0; i < count; ++i) {
    const placement_range& r = ranges[i];
    if (r.bytes == 0 || (r.how == intent_choice::map && l.is_device())) continue;
    if (r.how == intent_choice::follow && overlaps_mapped(r)) {
      // Part of it is mapped: only the other parts move, none is discarded.
      for_each_piece(r.ptr, r.bytes, [&](const range_piece& x) {
        if (!x.mapped) prefetch_range(piece_ptr(x), x.end - x.begin, l, native, s, where);
      });
      continue;
    }
    // Never a range that may have read-mostly advice: the CUDA 13 driver (580) then keeps the
    // host's read-only duplicates of pages a discarding prefetch placed on the GPU, and the
    // host reads stale data after the kernel wrote them (found by ModelGpu, seeds 4 and 98).
    if (r.discard && can_discard &&
        !read_mostly_table().overlaps(reinterpret_cast<std::uintptr_t>(r.ptr),
                                      reinterpret_cast<std::uintptr_t>(r.ptr) + r.bytes)) {
      ptrs[discards] = const_cast<void*>(r.ptr);
      sizes[discards++] = r.bytes;
      continue;
    }
    prefetch_range(r.ptr, r.bytes, l, native, s, where);
  }
  if (discards == 0) return hint_status::applied;
  // 3. The discarding prefetches go last, in one batch: everything that can throw came first.
  const backend::result r = backend::discard_and_prefetch(ptrs, sizes, discards, native, s.get());
  if (r.code != backend::success) {  // not available in this driver: move the data instead
    backend::forget_if_last(r.code);
    for (std::size_t i = 0; i < discards; ++i) {
      check(backend::prefetch(ptrs[i], sizes[i], native, s.get()), where);
    }
  }
  return hint_status::applied;
}

inline hint_status advise_bytes(const void* p, std::size_t bytes, advice a, location l, bool set,
                                call_site where) {
  if (bytes == 0) return hint_status::empty;
  const char* what = set ? "unimem::advise" : "unimem::unadvise";
  check_location(l, what, where);
  const int cap = a == advice::read_mostly ? current_device_id(where) : capability_device(l, where);
  if (gate(cap, what, where) == hint_status::unsupported) return hint_status::unsupported;
  backend::mem_advice native = backend::mem_advice::set_read_mostly;
  switch (a) {
    case advice::read_mostly:
      native = set ? backend::mem_advice::set_read_mostly : backend::mem_advice::unset_read_mostly;
      break;
    case advice::preferred_location:
      native = set ? backend::mem_advice::set_preferred_location
                   : backend::mem_advice::unset_preferred_location;
      break;
    case advice::accessed_by:
      native = set ? backend::mem_advice::set_accessed_by : backend::mem_advice::unset_accessed_by;
      break;
  }
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  if (a == advice::read_mostly && set) note_read_mostly(b, b + bytes, true);  // before: may apply
  check(backend::advise(p, bytes, native, {l.is_host(), l.device_id()}), where);
  if (a == advice::read_mostly && !set) note_read_mostly(b, b + bytes, false);
  return hint_status::applied;
}

/// Advice given without a location must be read_mostly, the one kind that takes none.
inline advice needs_no_location(advice a, const char* what) {
  if (a != advice::read_mostly) {
    throw argument_error(what).append(": preferred_location and accessed_by need a location");
  }
  return a;
}

inline optional_location location_from_id(int id) noexcept {
  if (id == backend::host_location_id) return location::host();
  if (id >= 0) return location::device(id);
  return optional_location();  // none, or not the same for the whole range
}

inline int range_int(backend::range_attribute a, const void* p, std::size_t bytes,
                     call_site where) {
  int v = backend::no_location_id;
  check(backend::range_attribute_ints(&v, 1, a, p, bytes), where);
  return v;
}

/// First touch of a new allocation: its pages go to ft's location (the policy applies),
/// optionally zeroed there, and the constructor waits for ft.stream.
inline void first_touch_bytes(void* p, std::size_t bytes, first_touch_t ft, bool zero,
                              call_site where) {
  if (bytes == 0) return;
  optional_location l = ft.where;
  const int asked = l && l->is_device() ? l->device_id() : unspecified_device;
  if (!l || l->is_device()) {
    const int d =
        device_for(asked, ft.stream, "unimem::first_touch", "first_touch(location)", where);
    if (d == unspecified_device) {
      fail(backend::error_invalid_value, "unimem::first_touch", where,
           "first_touch(stream) needs a stream that knows its device (a unimem::stream); the "
           "default stream and this native handle do not: pass a location");
    }
    l = location::device(d);
  }
  const placement_range r{p, bytes, false, intent_choice::plain};
  if (l->is_host()) {
    (void)place(&r, 1, *l, ft.stream, "unimem::first_touch", where);
    ft.stream.synchronize(where);
    return;
  }
  device_guard g(l->device_id(), where);  // the default stream and the memset of that device
  (void)place(&r, 1, *l, ft.stream, "unimem::first_touch", where);
  if (zero) check(backend::memset_async(p, 0, bytes, ft.stream.get()), where);
  ft.stream.synchronize(where);
}

}  // namespace detail

/// @brief Whether prefetch and advice towards l can move pages: the device's
/// migrates_on_demand() (for the host: the current device's).
/// @throws unimem::error for a device that does not exist.
[[nodiscard]] inline bool migration_supported(location l, call_site where = call_site::current()) {
  detail::check_location(l, "unimem::migration_supported", where);
  return detail::device_migrates(detail::capability_device(l, where), where);
}

/// @brief Queues a migration of the range's pages to l on stream s (stream-ordered, asynchronous).
/// @return applied; empty for an empty range; unsupported where the device cannot migrate and
/// the policy is ignore.
/// @throws unimem::error for an invalid device, memory that is not managed, or (policy
/// throw_error) a device that cannot migrate.
template <class T>
hint_status prefetch(view<T> v, location l, stream_ref s = {},
                     call_site where = call_site::current()) {
  const detail::placement_range r{v.data(), v.size_bytes(), false, detail::intent_choice::plain};
  return detail::place(&r, 1, l, s, "unimem::prefetch", where);
}

/// @brief Gives advice for the range. `l` is ignored for advice::read_mostly.
/// Advice moves no data by itself; it survives prefetches until unadvise.
template <class T>
hint_status advise(view<T> v, advice a, location l, call_site where = call_site::current()) {
  return detail::advise_bytes(v.data(), v.size_bytes(), a, l, true, where);
}
/// @brief advise(v, advice::read_mostly); other advice needs a location.
/// @throws unimem::argument_error for preferred_location or accessed_by without a location.
template <class T>
hint_status advise(view<T> v, advice a, call_site where = call_site::current()) {
  return advise(v, detail::needs_no_location(a, "unimem::advise"), location::host(), where);
}
/// @brief Withdraws advice given with advise().
template <class T>
hint_status unadvise(view<T> v, advice a, location l, call_site where = call_site::current()) {
  return detail::advise_bytes(v.data(), v.size_bytes(), a, l, false, where);
}
/// @brief unadvise(v, advice::read_mostly).
/// @throws unimem::argument_error for preferred_location or accessed_by without a location.
template <class T>
hint_status unadvise(view<T> v, advice a, call_site where = call_site::current()) {
  return unadvise(v, detail::needs_no_location(a, "unimem::unadvise"), location::host(), where);
}

/// @brief Whether the whole range carries read_mostly advice (false for an empty range).
template <class T>
[[nodiscard]] bool is_read_mostly(view<T> v, call_site where = call_site::current()) {
  if (v.empty()) return false;
  return detail::range_int(detail::backend::range_attribute::read_mostly, v.data(),
                           v.size_bytes(), where) != 0;
}
/// @brief The preferred location of the whole range, or none when there is none (or the
/// range's pages disagree).
template <class T>
[[nodiscard]] optional_location preferred_location(view<T> v,
                                                         call_site where = call_site::current()) {
  if (v.empty()) return optional_location();
  return detail::location_from_id(detail::range_int(
      detail::backend::range_attribute::preferred_location, v.data(), v.size_bytes(), where));
}
/// @brief Where the whole range was last prefetched to, or none (never prefetched, or its
/// pages disagree).
template <class T>
[[nodiscard]] optional_location last_prefetch_location(
    view<T> v, call_site where = call_site::current()) {
  if (v.empty()) return optional_location();
  return detail::location_from_id(detail::range_int(
      detail::backend::range_attribute::last_prefetch_location, v.data(), v.size_bytes(), where));
}
/// @brief The locations that have accessed_by advice for the whole range.
template <class T>
[[nodiscard]] location_list accessed_by(view<T> v, call_site where = call_site::current()) {
  if (v.empty()) return {};
  const std::size_t slots = static_cast<std::size_t>(device_count(where)) + 1;  // and the host
  detail::scratch<int> ids(slots);
  for (std::size_t i = 0; i < slots; ++i) ids.p[i] = detail::backend::no_location_id;
  detail::check(detail::backend::range_attribute_ints(ids.p, slots,
                                                      detail::backend::range_attribute::accessed_by,
                                                      v.data(), v.size_bytes()),
                where);
  std::size_t n = 0;  // keep the ids that name a location, in order
  for (std::size_t i = 0; i < slots; ++i) {
    if (detail::location_from_id(ids.p[i])) ids.p[n++] = ids.p[i];
  }
  return location_list(ids.p, n);
}

/// @brief Sets the range's intent (see unimem::intent) for GPU `gpu`, as a tag with that intent
/// would at a launch on it: map gives the parts not yet mapped preferred location host and every
/// part accessed-by advice for `gpu`, once (later tags and calls find it remembered and make no
/// runtime call); move withdraws what mapping gave (the range then moves at its next tagged
/// launch). Advice moves no data and applies at once, not in stream order.
/// @return applied; empty for an empty range; unsupported where `gpu` cannot migrate managed
/// pages and the policy is ignore (on AMD without XNACK managed memory is host memory the GPU
/// maps already: there is nothing to change).
/// @throws unimem::argument_error for map towards the host; unimem::error for an invalid device,
/// memory that is not managed, or (policy throw_error) a device that cannot migrate.
template <class T>
hint_status set_intent(view<T> v, intent i, location gpu, call_site where = call_site::current()) {
  if (v.empty()) return hint_status::empty;
  const char* what = "unimem::set_intent";
  if (i == intent::move) {
    detail::unmap_range(v.data(), v.size_bytes(), where);
    return hint_status::applied;
  }
  if (gpu.is_host()) {
    throw argument_error(what).append(
        ": intent map needs the GPU that maps the range, not the host");
  }
  detail::check_location(gpu, what, where);
  if (detail::gate(gpu.device_id(), what, where) == hint_status::unsupported) {
    return hint_status::unsupported;
  }
  detail::map_range(v.data(), v.size_bytes(), gpu.device_id(), false, where);
  return hint_status::applied;
}
/// @brief set_intent(v, i, the current device).
template <class T>
hint_status set_intent(view<T> v, intent i, call_site where = call_site::current()) {
  return set_intent(v, i, location::device(detail::current_device_id(where)), where);
}
/// @brief The range's intent: map when unimem has mapped every byte of it (for one GPU or
/// more: accessed_by() says which), else move. Answered from unimem's own record, with no
/// runtime call; advice given directly with advise() is not unimem's intent and does not count.
template <class T>
[[nodiscard]] intent intent_of(view<T> v) noexcept {
  if (v.empty() || detail::mapped_table().empty()) return intent::move;
  const auto b = reinterpret_cast<std::uintptr_t>(v.data());
  return detail::mapped_table().covers(b, b + v.size_bytes()) ? intent::map : intent::move;
}

/// @brief Makes the range ready for CPU access: once it returns, no GPU is still writing the
/// range and its pages are on the host (where the device can migrate them). The parts mapped
/// by their intent (out(c, mapped), set_intent()) are host memory already and do not move: for
/// results the CPU reads, that is the fastest way back (docs/pitfalls.md).
///
/// - Without a stream (or with the default stream): waits for every GPU that may have work
///   (synchronize_all_devices(): a kernel on another GPU, or on a non-blocking stream, may be
///   writing the range), then prefetches the range to the host and waits for that.
/// - With a stream s: prefetches on s and waits for s. The caller promises that every write
///   to the range is ordered before s (queued on s, or made to precede it with an event);
///   work on other streams is not waited for.
/// - On a device that cannot migrate (policy ignore: returns unsupported): waits for every GPU
///   that may have work, since the CPU may then touch managed memory only while no kernel runs.
/// An empty range returns empty and waits for nothing.
/// @throws unimem::error carrying any asynchronous error of the work waited for.
template <class T>
hint_status ready_for_host(view<T> v, stream_ref s = {}, call_site where = call_site::current()) {
  if (v.empty()) return hint_status::empty;
  if (s.is_default()) synchronize_all_devices(where);
  const detail::placement_range r{v.data(), v.size_bytes(), false, detail::intent_choice::follow};
  const hint_status st = detail::place(&r, 1, location::host(), s, "unimem::ready_for_host", where);
  if (st == hint_status::unsupported) {
    if (!s.is_default()) synchronize_all_devices(where);
  } else {
    s.synchronize(where);
  }
  return st;
}

/// @brief Attaches managed memory to stream s (hipStreamAttachMemAsync /
/// cudaStreamAttachMemAsync), asynchronously on s: a managed_buffer, a managed_vector, a view of
/// a whole managed allocation (from managed_memory_resource too). The runtime refuses a part of
/// an allocation. HIP on AMD documents the call as a no-op.
/// @throws unimem::error when the runtime refuses.
template <class T>
void attach(view<T> v, stream_ref s, attach_mode m = attach_mode::single,
            call_site where = call_site::current()) {
  if (v.empty()) return;
  const detail::backend::attach_kind k =
      m == attach_mode::global ? detail::backend::attach_kind::global
      : m == attach_mode::host ? detail::backend::attach_kind::host
                               : detail::backend::attach_kind::single;
  detail::check(detail::backend::stream_attach(s.get(), const_cast<std::remove_cv_t<T>*>(v.data()),
                                               v.size_bytes(), k),
                where);
}

// The same calls for containers (a managed_buffer, managed_vector, or a container that opted in
// through unimem_view, see kernel_argument.hpp).

/// @brief prefetch(to_view(c), l, s).
template <class C, std::enable_if_t<!detail::is_view<C>::value && detail::viewable_v<const C>, int> = 0>
hint_status prefetch(const C& c, location l, stream_ref s = {},
                     call_site where = call_site::current()) {
  return prefetch(to_view(c), l, s, where);
}
/// @brief advise(to_view(c), a, l).
template <class C, std::enable_if_t<!detail::is_view<C>::value && detail::viewable_v<const C>, int> = 0>
hint_status advise(const C& c, advice a, location l, call_site where = call_site::current()) {
  return advise(to_view(c), a, l, where);
}
/// @brief set_intent(to_view(c), i, gpu).
template <class C,
          std::enable_if_t<!detail::is_view<C>::value && detail::viewable_v<const C>, int> = 0>
hint_status set_intent(const C& c, intent i, location gpu, call_site where = call_site::current()) {
  return set_intent(to_view(c), i, gpu, where);
}
/// @brief set_intent(to_view(c), i).
template <class C,
          std::enable_if_t<!detail::is_view<C>::value && detail::viewable_v<const C>, int> = 0>
hint_status set_intent(const C& c, intent i, call_site where = call_site::current()) {
  return set_intent(to_view(c), i, where);
}
/// @brief intent_of(to_view(c)).
template <class C,
          std::enable_if_t<!detail::is_view<C>::value && detail::viewable_v<const C>, int> = 0>
[[nodiscard]] intent intent_of(const C& c) noexcept {
  return intent_of(to_view(c));
}
/// @brief ready_for_host(to_view(c), s).
template <class C, std::enable_if_t<!detail::is_view<C>::value && detail::viewable_v<const C>, int> = 0>
hint_status ready_for_host(const C& c, stream_ref s = {}, call_site where = call_site::current()) {
  return ready_for_host(to_view(c), s, where);
}
/// @brief attach(to_view(c), s, m).
template <class C, std::enable_if_t<!detail::is_view<C>::value && detail::viewable_v<const C>, int> = 0>
void attach(const C& c, stream_ref s, attach_mode m = attach_mode::single,
            call_site where = call_site::current()) {
  attach(to_view(c), s, m, where);
}

UNIMEM_END_NAMESPACE
