// unimem: where managed data lives. Prefetch, advice and their queries over views, the policy
// for devices that cannot migrate pages, and readiness for CPU access.
#pragma once

#include "detail/backend.hpp"
#include "device.hpp"
#include "error.hpp"
#include "location.hpp"
#include "stream_ref.hpp"
#include "view.hpp"

#include <atomic>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

UNIMEM_BEGIN_NAMESPACE

/// @brief What a placement call (prefetch, advice) did.
enum class hint_status {
  /// The runtime took the hint (asynchronously, for prefetch).
  applied,
  /// The range is empty: nothing to do.
  empty,
  /// The device cannot migrate managed pages, and the policy said to ignore the hint.
  unsupported,
};

/// @brief What placement calls do on a device that cannot migrate managed pages (CUDA without
/// concurrent managed access; AMD without XNACK).
enum class unsupported_policy {
  /// Do nothing and return hint_status::unsupported (the default).
  ignore,
  /// Throw unimem::error with the native "not supported" status.
  throw_error,
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
  /// Accessible from the host; kernels on the stream may not touch it.
  host,
  /// Associated with one stream: the host may access it whenever that stream is idle, even
  /// while kernels run on other streams (matters on devices without concurrent managed access).
  single,
};

/// @brief Where a new buffer's pages are first touched, and on which stream that happens.
/// Made by first_touch(); a temporary unimem::stream is refused (see stream).
struct first_touch_t {
  location where;
  stream_ref stream;
};
/// @brief Places a new buffer's pages at `where` during construction (see managed_buffer).
inline first_touch_t first_touch(location where, stream_ref s = {}) noexcept { return {where, s}; }

namespace detail {

inline std::atomic<int>& unsupported_policy_state() noexcept {
  static std::atomic<int> state{static_cast<int>(unsupported_policy::ignore)};
  return state;
}

/// Per-device cache of migrates_on_demand: 0 unknown, 1 no, 2 yes. Lock-free; filled on first use.
constexpr int capability_cache_size = 64;
inline std::atomic<signed char>* migration_capability_cache() noexcept {
  static std::atomic<signed char> cache[capability_cache_size] = {};
  return cache;
}

/// For tests: pretend device `id` can (1) or cannot (0) migrate; -1 forgets the pretence.
inline void set_migration_capability_for_testing(int id, int value) noexcept {
  if (id >= 0 && id < capability_cache_size) {
    migration_capability_cache()[id].store(static_cast<signed char>(value < 0 ? 0 : value + 1));
  }
}

inline bool device_migrates(int id) {
  if (id >= 0 && id < capability_cache_size) {
    const signed char v = migration_capability_cache()[id].load(std::memory_order_relaxed);
    if (v != 0) return v == 2;
  }
  const bool m = device(id).migrates_on_demand();
  if (id >= 0 && id < capability_cache_size) {
    migration_capability_cache()[id].store(m ? 2 : 1, std::memory_order_relaxed);
  }
  return m;
}

inline int current_device_id() {
  int id = 0;
  UNIMEM_DETAIL_CHECK(backend::get_device(&id));
  return id;
}

/// Throws unimem::error (invalid device) for a device location that names no GPU.
inline void check_location(location l, const char* what) {
  if (l.is_device()) require_device(l.device_id(), std::string(what) + "(" + l.to_string() + ")");
}

/// Applies the unsupported_policy for a hint that needs device `id` to migrate pages.
inline hint_status gate(int id, const char* what) {
  if (device_migrates(id)) return hint_status::applied;
  if (unsupported_policy_state().load(std::memory_order_relaxed) ==
      static_cast<int>(unsupported_policy::throw_error)) {
    throw error(backend::error_not_supported, what, __FILE__, __LINE__,
                "device " + std::to_string(id) +
                    " cannot migrate managed memory (migrates_on_demand() is false), and "
                    "unimem::unsupported_policy::throw_error is set");
  }
  return hint_status::unsupported;
}

/// The device whose capability decides a hint for location l.
inline int capability_device(location l) {
  return l.is_host() ? current_device_id() : l.device_id();
}

inline hint_status prefetch_bytes(const void* p, std::size_t bytes, location l, stream_ref s) {
  if (bytes == 0) return hint_status::empty;
  check_location(l, "unimem::prefetch");
  if (gate(capability_device(l), "unimem::prefetch") == hint_status::unsupported) {
    return hint_status::unsupported;
  }
  UNIMEM_DETAIL_CHECK(backend::prefetch(p, bytes, l.native(), s.get()));
  return hint_status::applied;
}

inline hint_status advise_bytes(const void* p, std::size_t bytes, advice a, location l,
                                bool set) {
  if (bytes == 0) return hint_status::empty;
  check_location(l, set ? "unimem::advise" : "unimem::unadvise");
  const int cap = a == advice::read_mostly ? current_device_id() : capability_device(l);
  if (gate(cap, set ? "unimem::advise" : "unimem::unadvise") == hint_status::unsupported) {
    return hint_status::unsupported;
  }
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
  UNIMEM_DETAIL_CHECK(backend::advise(p, bytes, native, l.native()));
  return hint_status::applied;
}

/// Advice given without a location must be read_mostly, the one kind that takes none.
inline advice needs_no_location(advice a, const char* what) {
  if (a != advice::read_mostly) {
    throw std::invalid_argument(std::string(what) +
                                ": preferred_location and accessed_by need a location");
  }
  return a;
}

inline std::optional<location> location_from_id(int id) noexcept {
  if (id == backend::host_location_id) return location::host();
  if (id >= 0) return location::device(id);
  return std::nullopt;  // none, or not the same for the whole range
}

inline int range_int(backend::range_attribute a, const void* p, std::size_t bytes) {
  int v = backend::no_location_id;
  UNIMEM_DETAIL_CHECK(backend::range_attribute_ints(&v, 1, a, p, bytes));
  return v;
}

}  // namespace detail

/// @brief Sets what placement calls do on devices that cannot migrate (process-wide).
inline void set_unsupported_policy(unsupported_policy p) noexcept {
  detail::unsupported_policy_state().store(static_cast<int>(p));
}
/// @brief The current unsupported_policy (default: ignore).
[[nodiscard]] inline unsupported_policy get_unsupported_policy() noexcept {
  return static_cast<unsupported_policy>(detail::unsupported_policy_state().load());
}

/// @brief Whether prefetch and advice towards l can move pages: the device's
/// migrates_on_demand() (for the host: the current device's).
/// @throws unimem::error for a device that does not exist.
[[nodiscard]] inline bool migration_supported(location l) {
  detail::check_location(l, "unimem::migration_supported");
  return detail::device_migrates(detail::capability_device(l));
}

/// @brief Queues a migration of the range's pages to l on stream s (stream-ordered, asynchronous).
/// @return applied; empty for an empty range; unsupported where the device cannot migrate and
/// the policy is ignore.
/// @throws unimem::error for an invalid device, memory that is not managed, or (policy
/// throw_error) a device that cannot migrate.
template <class T>
hint_status prefetch(view<T> v, location l, stream_ref s = {}) {
  return detail::prefetch_bytes(v.data(), v.size_bytes(), l, s);
}

/// @brief Gives advice for the range. `l` is ignored for advice::read_mostly.
/// Advice moves no data by itself; it survives prefetches until unadvise.
template <class T>
hint_status advise(view<T> v, advice a, location l) {
  return detail::advise_bytes(v.data(), v.size_bytes(), a, l, true);
}
/// @brief advise(v, advice::read_mostly); other advice needs a location.
/// @throws std::invalid_argument for preferred_location or accessed_by without a location.
template <class T>
hint_status advise(view<T> v, advice a) {
  return advise(v, detail::needs_no_location(a, "unimem::advise"), location::host());
}
/// @brief Withdraws advice given with advise().
template <class T>
hint_status unadvise(view<T> v, advice a, location l) {
  return detail::advise_bytes(v.data(), v.size_bytes(), a, l, false);
}
/// @brief unadvise(v, advice::read_mostly).
/// @throws std::invalid_argument for preferred_location or accessed_by without a location.
template <class T>
hint_status unadvise(view<T> v, advice a) {
  return unadvise(v, detail::needs_no_location(a, "unimem::unadvise"), location::host());
}

/// @brief Whether the whole range carries read_mostly advice (false for an empty range).
template <class T>
[[nodiscard]] bool is_read_mostly(view<T> v) {
  if (v.empty()) return false;
  return detail::range_int(detail::backend::range_attribute::read_mostly, v.data(),
                           v.size_bytes()) != 0;
}
/// @brief The preferred location of the whole range, or nullopt when there is none (or the
/// range's pages disagree).
template <class T>
[[nodiscard]] std::optional<location> preferred_location(view<T> v) {
  if (v.empty()) return std::nullopt;
  return detail::location_from_id(detail::range_int(
      detail::backend::range_attribute::preferred_location, v.data(), v.size_bytes()));
}
/// @brief Where the whole range was last prefetched to, or nullopt (never prefetched, or its
/// pages disagree).
template <class T>
[[nodiscard]] std::optional<location> last_prefetch_location(view<T> v) {
  if (v.empty()) return std::nullopt;
  return detail::location_from_id(detail::range_int(
      detail::backend::range_attribute::last_prefetch_location, v.data(), v.size_bytes()));
}
/// @brief The locations that have accessed_by advice for the whole range.
template <class T>
[[nodiscard]] std::vector<location> accessed_by(view<T> v) {
  std::vector<location> out;
  if (v.empty()) return out;
  std::vector<int> ids(static_cast<std::size_t>(device_count()) + 1,
                       detail::backend::no_location_id);
  UNIMEM_DETAIL_CHECK(detail::backend::range_attribute_ints(
      ids.data(), ids.size(), detail::backend::range_attribute::accessed_by, v.data(),
      v.size_bytes()));
  for (int id : ids) {
    if (auto l = detail::location_from_id(id)) out.push_back(*l);
  }
  return out;
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
/// @throws unimem::error, which carries any asynchronous error of the work waited for.
template <class T>
hint_status ready_for_host(view<T> v, stream_ref s = {}) {
  if (v.empty()) return hint_status::empty;
  if (s.is_default()) synchronize_all_devices();
  const hint_status st = prefetch(v, location::host(), s);
  if (st == hint_status::unsupported) {
    if (!s.is_default()) synchronize_all_devices();
  } else {
    s.synchronize();
  }
  return st;
}

/// @brief "applied", "empty" or "unsupported".
inline const char* to_string(hint_status s) noexcept {
  switch (s) {
    case hint_status::applied: return "applied";
    case hint_status::empty: return "empty";
    case hint_status::unsupported: return "unsupported";
  }
  return "?";
}

UNIMEM_END_NAMESPACE
