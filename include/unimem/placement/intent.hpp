/// @file
/// @brief intent (where a range's pages stay while GPUs use it), and what every placement call
/// and access tag shares: the range of a buffer, view or container, and its placement record.
/// Runtime-free.
#pragma once

#include "../core/config.hpp"
#include "../core/detail/placement_record.hpp"
#include "../core/kernel_argument.hpp"
#include "../core/view.hpp"

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
}  // namespace detail

namespace detail {
/// The placement record of a range that keeps one (managed_buffer, pool_buffer), else null.
template <class C>
placement_record* record_of(const C& c) noexcept {
  return ::unimem_detail_adl::record_hook(c, 0);
}

/// Whether C is a borrowed range: it refers to memory it does not own (a view, or a type that
/// declares `using unimem_borrowed_range = void;`, as a window's range does), so a temporary of it
/// may be tagged: the memory outlives it.
template <class C, class = void>
struct is_borrowed_range : is_view<C> {};
template <class C>
struct is_borrowed_range<C, std::void_t<typename C::unimem_borrowed_range>> : std::true_type {};

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

}  // namespace detail

UNIMEM_END_NAMESPACE
