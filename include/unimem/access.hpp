// unimem: access tags for launch(): in(a), out(b), inout(c) place their ranges on the
// launching device, on the launch stream, before the kernel. Runtime-free: a tag only records
// the range and how the kernel uses it; launch() acts on it.
/// @file
/// @brief Access tags for launch(): in(), out() and inout() say how a kernel uses a range, and
/// launch() places the tagged ranges on the launching device before the kernel. Runtime-free.
#pragma once

#include "config.hpp"
#include "kernel_argument.hpp"
#include "view.hpp"

#include <type_traits>

UNIMEM_BEGIN_NAMESPACE

/// @brief How a kernel uses a tagged buffer.
enum class access_mode {
  /// Read only: prefetched; reaches the kernel as const T* or view<const T>.
  in,
  /// Every element is overwritten and the old contents are not needed: where the runtime can
  /// discard stale pages (CUDA >= 12.8, on a stream other than the legacy default stream) the
  /// pages are populated on the device without moving data; otherwise prefetched.
  /// The old contents are kept (the range is treated as inout) when another argument of the
  /// same launch reaches the range (an in() or inout() tag, an untagged buffer or view, a
  /// pointer into it), since the kernel may read it there, when the launch is not known
  /// to be accepted (a refused launch never loses data), and when the range may have
  /// read-mostly advice given through unimem (the CUDA 13 driver loses kernel writes to
  /// read-duplicated pages after a discard; advice given with raw runtime calls is not seen:
  /// tag such ranges inout).
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
  /// through once and the CPU writes before or reads after. unimem gives the advice once per
  /// range and GPU and remembers it; tagging the range moved, or set_intent(v, moved), undoes it.
  map,
};
/// @brief intent::move, for tags: in(a, unimem::moved).
inline constexpr intent moved = intent::move;
/// @brief intent::map, for tags: in(a, unimem::mapped), out(c, unimem::mapped).
inline constexpr intent mapped = intent::map;

namespace detail {
/// What a tag asks of its range's placement: follow the range's intent (set by an earlier tag or
/// set_intent(); move when none), or switch it to move or map. plain is not a tag's: the
/// placement calls (prefetch(), first touch) move the whole range and leave its intent alone.
enum class intent_choice : unsigned char { follow, move, map, plain };
constexpr intent_choice choice(intent i) noexcept {
  return i == intent::map ? intent_choice::map : intent_choice::move;
}
}  // namespace detail

/// @brief A range with its access mode; made by in(), out() and inout().
template <class T, access_mode Mode>
struct access_tag {
  view<T> range;  ///< the tagged elements
  /// follow: the range's current intent; else the intent the tag sets
  detail::intent_choice how = detail::intent_choice::follow;
};

namespace detail {
template <class T>
struct is_access_tag : std::false_type {};
template <class T, access_mode M>
struct is_access_tag<access_tag<T, M>> : std::true_type {};

/// What a tag may name: a view, or an lvalue container that opted in (kernel_argument.hpp)
/// whose memory can move (managed memory, or a kind it does not declare).
template <class C>
constexpr bool taggable() {
  using kind = declared_memory_kind_t<C>;
  if constexpr (!std::is_void<kind>::value) {
    static_assert(kind::migrates,
                  "unimem::in/out/inout: access tags place managed memory; this container's "
                  "memory (device or pinned) never moves: pass it untagged");
  }
  return viewable_v<C>;
}
}  // namespace detail

/// @brief Tags a range (a view, a buffer, managed_vector or an opted-in container) the kernel
/// only reads.
template <class C, std::enable_if_t<detail::taggable<const C>(), int> = 0>
auto in(const C& c) noexcept {
  using V = decltype(to_view(c));
  return access_tag<const typename V::value_type, access_mode::in>{to_view(c),
                                                                   detail::intent_choice::follow};
}
/// @brief Tags a range whose every element the kernel overwrites; the old contents may be
/// discarded (see access_mode::out).
template <class C, std::enable_if_t<detail::taggable<C>(), int> = 0>
auto out(C& c) noexcept {
  using V = decltype(to_view(c));
  static_assert(!std::is_const<typename V::element_type>::value,
                "unimem::out: the kernel writes this range; it cannot be const");
  return access_tag<typename V::element_type, access_mode::out>{to_view(c),
                                                                detail::intent_choice::follow};
}
/// @brief Tags a range the kernel reads and writes.
template <class C, std::enable_if_t<detail::taggable<C>(), int> = 0>
auto inout(C& c) noexcept {
  using V = decltype(to_view(c));
  static_assert(!std::is_const<typename V::element_type>::value,
                "unimem::inout: the kernel writes this range; it cannot be const");
  return access_tag<typename V::element_type, access_mode::inout>{to_view(c),
                                                                  detail::intent_choice::follow};
}
/// @brief in(c), with the range's intent set to i for this launch and after it (see intent).
template <class C, std::enable_if_t<detail::taggable<const C>(), int> = 0>
auto in(const C& c, intent i) noexcept {
  auto t = in(c);
  t.how = detail::choice(i);
  return t;
}
/// @brief out(c), with the range's intent set to i for this launch and after it (see intent).
/// out(c, mapped): the kernel writes the results straight into host memory, where the CPU reads
/// them with no migration back.
template <class C, std::enable_if_t<detail::taggable<C>(), int> = 0>
auto out(C& c, intent i) noexcept {
  auto t = out(c);
  t.how = detail::choice(i);
  return t;
}
/// @brief inout(c), with the range's intent set to i for this launch and after it (see intent).
template <class C, std::enable_if_t<detail::taggable<C>(), int> = 0>
auto inout(C& c, intent i) noexcept {
  auto t = inout(c);
  t.how = detail::choice(i);
  return t;
}
/// @brief Tags a view the kernel only reads. Views are tagged by value (a temporary view is
/// fine: it owns nothing).
template <class T>
access_tag<const T, access_mode::in> in(view<T> v) noexcept {
  return {v, detail::intent_choice::follow};
}
/// @brief Tags a view whose every element the kernel overwrites (see access_mode::out).
template <class T>
access_tag<T, access_mode::out> out(view<T> v) noexcept {
  static_assert(!std::is_const<T>::value, "unimem::out: the kernel writes this range; it cannot be const");
  return {v, detail::intent_choice::follow};
}
/// @brief Tags a view the kernel reads and writes.
template <class T>
access_tag<T, access_mode::inout> inout(view<T> v) noexcept {
  static_assert(!std::is_const<T>::value, "unimem::inout: the kernel writes this range; it cannot be const");
  return {v, detail::intent_choice::follow};
}
/// @brief in(v), with the range's intent set to i (see intent).
template <class T>
access_tag<const T, access_mode::in> in(view<T> v, intent i) noexcept {
  return {v, detail::choice(i)};
}
/// @brief out(v), with the range's intent set to i (see intent).
template <class T>
access_tag<T, access_mode::out> out(view<T> v, intent i) noexcept {
  static_assert(!std::is_const<T>::value,
                "unimem::out: the kernel writes this range; it cannot be const");
  return {v, detail::choice(i)};
}
/// @brief inout(v), with the range's intent set to i (see intent).
template <class T>
access_tag<T, access_mode::inout> inout(view<T> v, intent i) noexcept {
  static_assert(!std::is_const<T>::value,
                "unimem::inout: the kernel writes this range; it cannot be const");
  return {v, detail::choice(i)};
}
// A temporary container would be freed before the kernel runs.
/// @brief Refused at compile time: a temporary container would be freed before the kernel
/// runs.
template <class C, std::enable_if_t<!std::is_reference<C>::value && !detail::is_view<C>::value &&
                                        detail::viewable_v<C>,
                                    int> = 0>
void in(C&&) = delete;
/// @brief Refused at compile time: a temporary container would be freed before the kernel
/// runs.
template <class C, std::enable_if_t<!std::is_reference<C>::value && !detail::is_view<C>::value &&
                                        detail::viewable_v<C>,
                                    int> = 0>
void in(C&&, intent) = delete;
/// @brief Refused at compile time: a temporary container would be freed before the kernel
/// runs.
template <class C, std::enable_if_t<!std::is_reference<C>::value && !detail::is_view<C>::value &&
                                        detail::viewable_v<C>,
                                    int> = 0>
void out(C&&) = delete;
/// @brief Refused at compile time: a temporary container would be freed before the kernel
/// runs.
template <class C, std::enable_if_t<!std::is_reference<C>::value && !detail::is_view<C>::value &&
                                        detail::viewable_v<C>,
                                    int> = 0>
void out(C&&, intent) = delete;
/// @brief Refused at compile time: a temporary container would be freed before the kernel
/// runs.
template <class C, std::enable_if_t<!std::is_reference<C>::value && !detail::is_view<C>::value &&
                                        detail::viewable_v<C>,
                                    int> = 0>
void inout(C&&) = delete;
/// @brief Refused at compile time: a temporary container would be freed before the kernel
/// runs.
template <class C, std::enable_if_t<!std::is_reference<C>::value && !detail::is_view<C>::value &&
                                        detail::viewable_v<C>,
                                    int> = 0>
void inout(C&&, intent) = delete;

UNIMEM_END_NAMESPACE
