/// @file
/// @brief Access tags in(), out(), inout(): how a kernel uses a range, which launch() places on
/// its device first. Runtime-free: a tag only records; launch() acts.
#pragma once

#include "config.hpp"
#include "kernel_argument.hpp"
#include "view.hpp"

#include <type_traits>

// The hidden-friend hook through which managed_buffer and pool_buffer hand their placement
// record to tags and placement calls (null otherwise); outside unimem so that ADL alone finds it.
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
  /// Every element is overwritten. Placed as inout: no discarding prefetch, since no query tells
  /// whether part of a range is read-mostly, where CUDA 13 loses the kernel's writes after one.
  out,
  /// Read and written: prefetched.
  inout,
};

/// @brief Where a range's pages are while GPUs use it (in(), out(), inout(), set_intent()).
enum class intent {
  /// The pages move to the GPU that runs the kernel (prefetched before it, in stream order):
  /// best when the kernel touches the data more than once, or it stays on the GPU.
  move,
  /// The pages stay in host memory, the GPU accesses them over the bus: best for data a kernel
  /// streams through once and the CPU writes or reads. Undone by intent::move (tag, set_intent).
  map,
};

namespace detail {
/// A tag follows the range's intent (move when none set) or switches it; plain (prefetch(),
/// first touch) moves the whole range and leaves its intent alone.
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
  /// the placement record of the buffer the range is all of (null for views)
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

/// Enables a tag or a placement call for R: a view, or an opted-in container.
template <class R>
using if_range = std::enable_if_t<viewable_v<std::remove_reference_t<R>>, int>;

/// Whether memory kind K (void: none declared) can move, or stays on a GPU (device memory).
template <class K>
inline constexpr bool kind_migrates = K::migrates;
template <>
inline constexpr bool kind_migrates<void> = true;
template <class K>
inline constexpr bool stays_on_gpu = !K::migrates && K::device_accessible && !K::host_accessible;
template <>
inline constexpr bool stays_on_gpu<void> = false;

/// The tag of mode M over r with intent `how`; for memory that stays on a GPU, the bare view.
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

/// @brief Tags a range the kernel only reads: a view, or a named container (a temporary is
/// refused: freed before the kernel runs). Over device memory (device_buffer) the tag is the
/// view, no runtime call; pinned memory is refused at compile time (pass it untagged).
/// @code
///   unimem::launch(triad, cfg, unimem::out(a), unimem::in(b), unimem::in(c), scalar, n);
/// @endcode
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
/// @brief out(r), with the range's intent set to i (see intent). out(c, intent::map): the
/// kernel writes results straight into host memory, read by the CPU with no migration back.
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
