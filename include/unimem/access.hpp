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

// The record hook is called from outside unimem, where argument-dependent lookup alone finds
// it (as for unimem_view, kernel_argument.hpp). managed_buffer defines it as a hidden friend.
namespace unimem_detail_adl {
template <class C>
constexpr auto record_hook(const C& c) noexcept -> decltype(unimem_detail_placement_record(c)) {
  return unimem_detail_placement_record(c);
}
}  // namespace unimem_detail_adl

UNIMEM_BEGIN_NAMESPACE

/// @brief How a kernel uses a tagged buffer.
enum class access_mode {
  /// Read only: prefetched; reaches the kernel as const T* or view<const T>.
  in,
  /// Every element is overwritten and the old contents are not needed. Placed as inout is:
  /// the discarding prefetch that once populated out() ranges on the GPU without moving their
  /// data is not used, since no runtime query can tell whether part of a range has read-mostly
  /// advice, where the CUDA 13 driver loses the kernel's writes after a discard
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
}  // namespace detail

namespace detail {
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
template <class C, class = void>
struct has_record_hook : std::false_type {};
template <class C>
struct has_record_hook<C, std::void_t<decltype(::unimem_detail_adl::record_hook(
                              std::declval<const C&>()))>> : std::true_type {};

/// The placement record of a container that keeps one (managed_buffer), else null.
template <class C>
placement_record* record_of(const C& c) noexcept {
  if constexpr (has_record_hook<std::remove_cv_t<C>>::value) {
    return ::unimem_detail_adl::record_hook(c);
  } else {
    (void)c;
    return nullptr;
  }
}

template <class T>
struct is_access_tag : std::false_type {};
template <class T, access_mode M>
struct is_access_tag<access_tag<T, M>> : std::true_type {};

/// Whether container C declares memory that stays on a GPU (device memory: kernels reach it,
/// the CPU does not, and it never moves): a tag over it has nothing to place.
template <class C>
constexpr bool stays_on_gpu() {
  using kind = declared_memory_kind_t<C>;
  if constexpr (std::is_void<kind>::value) {
    return false;
  } else {
    return !kind::migrates && kind::device_accessible && !kind::host_accessible;
  }
}

/// What a tag may name: a view, or an lvalue container that opted in (kernel_argument.hpp)
/// whose memory can move (managed memory, or a kind it does not declare) or stays on a GPU.
template <class C>
constexpr bool taggable() {
  using kind = declared_memory_kind_t<C>;
  if constexpr (!std::is_void<kind>::value) {
    static_assert(kind::migrates || stays_on_gpu<C>(),
                  "unimem::in/out/inout: access tags place managed memory (and pass device "
                  "memory through); this container's memory (pinned host memory) never moves: "
                  "pass it untagged");
  }
  return viewable_v<C>;
}

/// The tag of container c over its elements v: an access_tag carrying c's placement record; for
/// memory that stays on a GPU (a device_buffer) the view itself, which launch() passes as it
/// passes the untagged buffer: nothing to place, no runtime call, no record.
template <class T, access_mode Mode, class C>
auto tag_of(const C& c, view<T> v) noexcept {
  if constexpr (stays_on_gpu<C>()) {
    (void)c;
    return v;
  } else {
    return access_tag<T, Mode>{v, intent_choice::follow, record_of(c)};
  }
}

/// Tag t with its intent set to i; a tag over device memory (a view) has no intent to set.
template <class Tag>
Tag with_intent(Tag t, intent i) noexcept {
  if constexpr (is_access_tag<Tag>::value) {
    t.how = choice(i);
  } else {
    (void)i;
  }
  return t;
}
}  // namespace detail

/// @brief Tags a range (a view, a buffer, managed_vector or an opted-in container) the kernel
/// only reads.
///
/// A tag over device memory (a device_buffer) places nothing, since that memory never moves:
/// it is the buffer's view, passed as the untagged buffer would be, with no runtime call. So
/// one launch line serves a build over managed_buffer and one over device_buffer:
/// @code
///   unimem::launch(triad, cfg, unimem::out(a), unimem::in(b), unimem::in(c), scalar, n);
/// @endcode
/// Pinned memory (pinned_buffer) is refused at compile time: pass it untagged.
template <class C, std::enable_if_t<detail::taggable<const C>(), int> = 0>
auto in(const C& c) noexcept {
  using V = decltype(to_view(c));
  return detail::tag_of<const typename V::value_type, access_mode::in>(c, to_view(c));
}
/// @brief Tags a range whose every element the kernel overwrites (see access_mode::out).
template <class C, std::enable_if_t<detail::taggable<C>(), int> = 0>
auto out(C& c) noexcept {
  using V = decltype(to_view(c));
  static_assert(!std::is_const<typename V::element_type>::value,
                "unimem::out: the kernel writes this range; it cannot be const");
  return detail::tag_of<typename V::element_type, access_mode::out>(c, to_view(c));
}
/// @brief Tags a range the kernel reads and writes.
template <class C, std::enable_if_t<detail::taggable<C>(), int> = 0>
auto inout(C& c) noexcept {
  using V = decltype(to_view(c));
  static_assert(!std::is_const<typename V::element_type>::value,
                "unimem::inout: the kernel writes this range; it cannot be const");
  return detail::tag_of<typename V::element_type, access_mode::inout>(c, to_view(c));
}
/// @brief in(c), with the range's intent set to i for this launch and after it (see intent).
template <class C, std::enable_if_t<detail::taggable<const C>(), int> = 0>
auto in(const C& c, intent i) noexcept {
  return detail::with_intent(in(c), i);
}
/// @brief out(c), with the range's intent set to i for this launch and after it (see intent).
/// out(c, intent::map): the kernel writes the results straight into host memory, where the CPU reads
/// them with no migration back.
template <class C, std::enable_if_t<detail::taggable<C>(), int> = 0>
auto out(C& c, intent i) noexcept {
  return detail::with_intent(out(c), i);
}
/// @brief inout(c), with the range's intent set to i for this launch and after it (see intent).
template <class C, std::enable_if_t<detail::taggable<C>(), int> = 0>
auto inout(C& c, intent i) noexcept {
  return detail::with_intent(inout(c), i);
}
/// @brief Tags a view the kernel only reads. Views are tagged by value (a temporary view is
/// fine: it owns nothing).
template <class T>
access_tag<const T, access_mode::in> in(view<T> v) noexcept {
  return {v, detail::intent_choice::follow, nullptr};
}
/// @brief Tags a view whose every element the kernel overwrites (see access_mode::out).
template <class T>
access_tag<T, access_mode::out> out(view<T> v) noexcept {
  static_assert(!std::is_const<T>::value, "unimem::out: the kernel writes this range; it cannot be const");
  return {v, detail::intent_choice::follow, nullptr};
}
/// @brief Tags a view the kernel reads and writes.
template <class T>
access_tag<T, access_mode::inout> inout(view<T> v) noexcept {
  static_assert(!std::is_const<T>::value, "unimem::inout: the kernel writes this range; it cannot be const");
  return {v, detail::intent_choice::follow, nullptr};
}
/// @brief in(v), with the range's intent set to i (see intent).
template <class T>
access_tag<const T, access_mode::in> in(view<T> v, intent i) noexcept {
  return {v, detail::choice(i), nullptr};
}
/// @brief out(v), with the range's intent set to i (see intent).
template <class T>
access_tag<T, access_mode::out> out(view<T> v, intent i) noexcept {
  static_assert(!std::is_const<T>::value,
                "unimem::out: the kernel writes this range; it cannot be const");
  return {v, detail::choice(i), nullptr};
}
/// @brief inout(v), with the range's intent set to i (see intent).
template <class T>
access_tag<T, access_mode::inout> inout(view<T> v, intent i) noexcept {
  static_assert(!std::is_const<T>::value,
                "unimem::inout: the kernel writes this range; it cannot be const");
  return {v, detail::choice(i), nullptr};
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
