/// @file
/// @brief Access tags in(), out(), inout(): how a kernel uses a range. launch() takes them
/// through its customization point (unimem_launch_argument): the tagged ranges of one launch are
/// placed on its device together, before the kernel is queued (docs/architecture.md, "Placement
/// records").
#pragma once

#include "../core/config.hpp"
#include "../core/detail/backend/pointers.hpp"
#include "../core/detail/backend/backend.hpp"
#include "../core/kernel_argument.hpp"
#include "../core/launch.hpp"
#include "../core/view.hpp"
#include "intent.hpp"
#include "location.hpp"
#include "placement.hpp"

#include <cstddef>
#include <type_traits>

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

namespace detail {
class tag_session;
/// A tagged range as launch() sees it: the kernel's view, and what placing it takes.
template <class T>
struct tag_argument {
  using launch_session = tag_session;
  view<T> range;
  placement_range placed;
  [[nodiscard]] constexpr view<T> kernel_value() const noexcept { return range; }
};
}  // namespace detail

/// @brief A range with its access mode; made by in(), out() and inout().
template <class T, access_mode Mode>
struct access_tag {
  view<T> range;  ///< the tagged elements
  /// follow: the range's current intent; else the intent the tag sets
  detail::intent_choice how = detail::intent_choice::follow;
  /// the placement record of the buffer the range is all of (null for views)
  detail::placement_record* record = nullptr;

  /// @brief What launch() makes of the tag (its customization point).
  friend detail::tag_argument<T> unimem_launch_argument(const access_tag& t) noexcept {
    return {t.range, {t.range.data(), t.range.size_bytes(), t.how, t.record}};
  }
};

namespace detail {
/// The launch session of the access tags: every tagged range of one launch placed at once on the
/// launching device (one look at the host-access log, one capability check), a range tagged
/// twice once with the first intent; the few touched pages moved beside the kernel after it is
/// queued (touched_later).
class tag_session {
 public:
  explicit tag_session(const launch_context& c) noexcept : ctx_(c) {}
  template <class T>
  void add(const tag_argument<T>& a) {
    for (std::size_t j = 0; j < count_; ++j) {  // tagged twice: once, with the first intent
      if (ranges_[j].ptr == a.placed.ptr && ranges_[j].bytes == a.placed.bytes) {
        if (ranges_[j].how == intent_choice::follow) ranges_[j].how = a.placed.how;
        return;
      }
    }
    // A view over device memory places nothing (one pointer query, beside a view tag's prefetch).
    if (a.placed.record == nullptr && a.placed.bytes != 0 &&
        backend::memory_of(a.placed.ptr) == backend::pointer_memory::device) {
      return;
    }
    if (count_ == capacity) place_now();  // more tags than a launch has: place these first
    ranges_[count_++] = a.placed;
  }
  void before_launch() { place_now(); }
  void after_launch() {
    if (later_.count != 0) later_.move(ctx_.where);  // the few pages the host touched
  }

 private:
  void place_now() {
    (void)place(ranges_, count_, {location::device(ctx_.device_id), ctx_.stream,
                                  "unimem::launch (access tags)", ctx_.where, true, &later_});
    count_ = 0;
  }
  static constexpr std::size_t capacity = 32;
  launch_context ctx_;
  placement_range ranges_[capacity];
  std::size_t count_ = 0;
  touched_later later_;
};

/// The tag of mode M over r with intent `how`; for memory that stays on a GPU, the bare view.
template <access_mode M, class R>
auto tag(std::remove_reference_t<R>& r, intent_choice how) noexcept {
  using C = std::remove_cv_t<std::remove_reference_t<R>>;
  using K = declared_memory_kind_t<C>;
  static_assert(is_borrowed_range<C>::value || std::is_lvalue_reference<R>::value,
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
