// unimem: where managed data lives. Prefetch, advice and their queries over views and
// containers, first touch, stream attachment and readiness for CPU access, all through one
// placement path (detail::place), which checks the location, applies the capability policy
// (placement_policy.hpp) once and queues the runtime's calls in stream order.
/// @file
/// @brief Where managed data lives: prefetch(), advise() and unadvise() with their queries,
/// first_touch(), attach() and ready_for_host(), over views and containers.
#pragma once

#include "argument_error.hpp"
#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "device.hpp"
#include "error.hpp"
#include "kernel_argument.hpp"
#include "location.hpp"
#include "placement_policy.hpp"
#include "stream.hpp"
#include "stream_ref.hpp"
#include "text.hpp"
#include "view.hpp"

#include <cstddef>

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

/// One range for the placement path; `discard`: its old contents are not needed.
struct placement_range {
  const void* ptr;
  std::size_t bytes;
  bool discard;
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

/// The one placement path. Queues, on stream s and in order, the prefetch of every range to l
/// (the discarding prefetch for ranges marked discard, where the runtime has it; elsewhere a
/// plain prefetch). Empty ranges are skipped; the location and the capability policy are
/// checked once. Returns empty when every range is empty.
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
  const bool can_discard = discard_possible(l, s);
  bool discards = false;
  for (std::size_t i = 0; i < count; ++i) {
    if (ranges[i].bytes == 0) continue;
    if (ranges[i].discard && can_discard) {
      discards = true;
      continue;
    }
    check(backend::prefetch(ranges[i].ptr, ranges[i].bytes, native, s.get()), where);
  }
  if (!discards) return hint_status::applied;
  // The discarding prefetches go last, in one batch: everything that can throw came first.
  constexpr std::size_t on_stack = 16;  // launches have a handful of arguments: no allocation
  void* ptrs_small[on_stack];
  std::size_t sizes_small[on_stack];
  scratch<void*> ptrs_large(count > on_stack ? count : 0);
  scratch<std::size_t> sizes_large(count > on_stack ? count : 0);
  void** ptrs = count > on_stack ? ptrs_large.p : ptrs_small;
  std::size_t* sizes = count > on_stack ? sizes_large.p : sizes_small;
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (ranges[i].bytes == 0 || !ranges[i].discard) continue;
    ptrs[n] = const_cast<void*>(ranges[i].ptr);
    sizes[n++] = ranges[i].bytes;
  }
  const backend::result r = backend::discard_and_prefetch(ptrs, sizes, n, native, s.get());
  if (r.code != backend::success) {  // not available in this driver: move the data instead
    backend::forget_if_last(r.code);
    for (std::size_t i = 0; i < n; ++i) {
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
  check(backend::advise(p, bytes, native, {l.is_host(), l.device_id()}), where);
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
  const placement_range r{p, bytes, false};
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
  const detail::placement_range r{v.data(), v.size_bytes(), false};
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

/// @brief Makes the range ready for CPU access: once it returns, no GPU is still writing the
/// range and its pages are on the host (where the device can migrate them).
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
  const detail::placement_range r{v.data(), v.size_bytes(), false};
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
