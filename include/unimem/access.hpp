/// @file
/// @brief Access tags for launch(): in(), out() and inout() say how a kernel uses a range, and
/// launch() places the tagged ranges on the launching device before the kernel. Each is written
/// once over anything that gives a view (kernel_argument.hpp): a view, a unimem buffer,
/// managed_vector or a container that opted in through unimem_view. Runtime-free: a tag only
/// records the range and how the kernel uses it; launch() acts on it.
#pragma once

#include "config.hpp"
#include "kernel_argument.hpp"
#include "view.hpp"

#include <type_traits>

// The hook through which a buffer that keeps a placement record (managed_buffer, pool_buffer)
// hands it to the tags and the placement calls, as a hidden friend; null for other ranges.
// Called from outside unimem, where argument-dependent lookup alone finds it (as unimem_view,
// kernel_argument.hpp).
namespace unimem_detail_adl {
template <class C>
constexpr auto record_hook(const C& c, int) noexcept
    -> decltype(unimem_detail_placement_record(c)) {
  return unimem_detail_placement_record(c);
}
template <class C>
constexpr decltype(nullptr) record_hook(const C&, long) noexcept { return nullptr; }
}  // namespace unimem_detail_adl

UNIMEM_BEGIN_NAMESPACE

/// @brief How a kernel uses a tagged buffer.
enum class access_mode {
  /// Read only: prefetched; reaches the kernel as const T* or view<const T>.
  in,
  /// Every element is overwritten and the old contents are not needed. Placed as inout is: a
  /// discarding prefetch is not used, since no runtime query can tell whether part of a range
  /// has read-mostly advice, where the CUDA 13 driver loses the kernel's writes after a discard
  /// (docs/architecture.md, "Placement records").
  out,
  /// Read and written: prefetched.
  inout,
};

/// @brief Where a range's pages are while GPUs use it: the second argument of in(), out() and
/// inout(), and of set_intent() (placement.hpp).
enum class intent {
  /// The pages move to the GPU that runs the kernel (prefetched before it, in stream order):
  /// best when the kernel touches the data more than once, or when it stays on the GPU.
  move,
  /// The pages stay in host memory (preferred location: the host) and the GPU reads and writes
  /// them there over the bus (accessed-by advice for the launching GPU): nothing is migrated,
  /// neither before the kernel nor back to the CPU afterwards. Best for data the kernel streams
  /// through once and the CPU writes before or reads after. unimem gives the advice where the
  /// runtime says it is missing (a buffer's placement record skips even that once it is given);
  /// tagging the range intent::move, or set_intent(v, intent::move), undoes it.
  map,
};
/// @brief intent::move.
/// @deprecated Use intent::move: in(a, unimem::intent::move).
[[deprecated("use unimem::intent::move")]] inline constexpr intent moved = intent::move;
/// @brief intent::map.
/// @deprecated Use intent::map: in(a, unimem::intent::map), out(c, unimem::intent::map).
[[deprecated("use unimem::intent::map")]] inline constexpr intent mapped = intent::map;

namespace detail {
/// What a tag asks of its range's placement: follow the range's intent (set by an earlier tag or
/// set_intent(); move when none), or switch it to move or map. plain is not a tag's: the
/// placement calls (prefetch(), first touch) move the whole range and leave its intent alone.
enum class intent_choice : unsigned char { follow, move, map, plain };
constexpr intent_choice choice(intent i) noexcept {
  return i == intent::map ? intent_choice::map : intent_choice::move;
}
class placement_record;  // detail/placement_record.hpp
}  // namespace detail

/// @brief A range with its access mode; made by in(), out() and inout().
template <class T, access_mode Mode>
struct access_tag {
  view<T> range;  ///< the tagged elements
  /// follow: the range's current intent; else the intent the tag sets
  detail::intent_choice how = detail::intent_choice::follow;
  /// where the range is all of a buffer that keeps a placement record: the record (its launch
  /// then places the range only where it is not already; null for views)
  detail::placement_record* record = nullptr;
};

namespace detail {
/// The placement record of a range that keeps one (managed_buffer, pool_buffer), else null.
template <class C>
placement_record* record_of(const C& c) noexcept {
  return ::unimem_detail_adl::record_hook(c, 0);
}

template <class T>
struct is_access_tag : std::false_type {};
template <class T, access_mode M>
struct is_access_tag<access_tag<T, M>> : std::true_type {};

/// Enables a tag or a placement call for R: a view, or a container that opted in through
/// unimem_view (kernel_argument.hpp).
template <class R>
using if_range = std::enable_if_t<viewable_v<std::remove_reference_t<R>>, int>;

/// Whether memory kind K (void: the range declares none) can move, or stays on a GPU (device
/// memory: kernels reach it, the CPU does not, it never moves; a tag over it places nothing).
template <class K>
inline constexpr bool kind_migrates = K::migrates;
template <>
inline constexpr bool kind_migrates<void> = true;
template <class K>
inline constexpr bool stays_on_gpu = !K::migrates && K::device_accessible && !K::host_accessible;
template <>
inline constexpr bool stays_on_gpu<void> = false;

/// The tag of mode M over r (R as the caller named it: a view, or an lvalue container) with
/// intent `how`: an access_tag carrying r's placement record; for memory that stays on a GPU
/// (a device_buffer) the view itself, which launch() passes as the untagged buffer: nothing to
/// place, no runtime call, no record.
template <access_mode M, class R>
auto tag(std::remove_reference_t<R>& r, intent_choice how) noexcept {
  using C = std::remove_cv_t<std::remove_reference_t<R>>;
  using K = declared_memory_kind_t<C>;
  static_assert(is_view<C>::value || std::is_lvalue_reference<R>::value,
                "unimem::in/out/inout: a temporary container would be freed before the kernel "
                "runs: tag a named one");
  static_assert(kind_migrates<K> || stays_on_gpu<K>,
                "unimem::in/out/inout: access tags place managed memory (and pass device "
                "memory through); this container's memory (pinned host memory) never moves: "
                "pass it untagged");
  using E = typename decltype(to_view(r))::element_type;
  static_assert(M != access_mode::out || !std::is_const<E>::value,
                "unimem::out: the kernel writes this range; it cannot be const");
  static_assert(M != access_mode::inout || !std::is_const<E>::value,
                "unimem::inout: the kernel writes this range; it cannot be const");
  using T = std::conditional_t<M == access_mode::in, const E, E>;
  if constexpr (stays_on_gpu<K>) {
    (void)how;
    return view<T>(to_view(r));
  } else {
    return access_tag<T, M>{to_view(r), how, record_of(r)};
  }
}
}  // namespace detail

/// @brief Tags a range the kernel only reads: a view (by value: a temporary view owns nothing),
/// or a named buffer, managed_vector or opted-in container (a temporary one is refused at
/// compile time: it would be freed before the kernel runs).
///
/// A tag over device memory (a device_buffer) places nothing, since that memory never moves:
/// it is the buffer's view, passed as the untagged buffer would be, with no runtime call. So
/// one launch line serves a build over managed_buffer and one over device_buffer:
/// @code
///   unimem::launch(triad, cfg, unimem::out(a), unimem::in(b), unimem::in(c), scalar, n);
/// @endcode
/// Pinned memory (pinned_buffer) is refused at compile time: pass it untagged.
template <class R, detail::if_range<R> = 0>
auto in(R&& r) noexcept {
  return detail::tag<access_mode::in, R>(r, detail::intent_choice::follow);
}
/// @brief Tags a range whose every element the kernel overwrites (see access_mode::out).
template <class R, detail::if_range<R> = 0>
auto out(R&& r) noexcept {
  return detail::tag<access_mode::out, R>(r, detail::intent_choice::follow);
}
/// @brief Tags a range the kernel reads and writes.
template <class R, detail::if_range<R> = 0>
auto inout(R&& r) noexcept {
  return detail::tag<access_mode::inout, R>(r, detail::intent_choice::follow);
}
/// @brief in(r), with the range's intent set to i for this launch and after it (see intent).
template <class R, detail::if_range<R> = 0>
auto in(R&& r, intent i) noexcept {
  return detail::tag<access_mode::in, R>(r, detail::choice(i));
}
/// @brief out(r), with the range's intent set to i for this launch and after it (see intent).
/// out(c, intent::map): the kernel writes the results straight into host memory, where the CPU
/// reads them with no migration back.
template <class R, detail::if_range<R> = 0>
auto out(R&& r, intent i) noexcept {
  return detail::tag<access_mode::out, R>(r, detail::choice(i));
}
/// @brief inout(r), with the range's intent set to i for this launch and after it (see intent).
template <class R, detail::if_range<R> = 0>
auto inout(R&& r, intent i) noexcept {
  return detail::tag<access_mode::inout, R>(r, detail::choice(i));
}

UNIMEM_END_NAMESPACE
