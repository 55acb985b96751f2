// unimem: access tags for launch(): in(a), out(b), inout(c) prefetch their buffers to the
// launching device, on the launch stream, before the kernel.
#pragma once

#include "detail/backend.hpp"
#include "detail/kernel_args.hpp"
#include "managed_buffer.hpp"
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
  /// pointer into it), since the kernel may read it there, and when the launch is not known
  /// to be accepted (a refused launch never loses data).
  out,
  /// Read and written: prefetched.
  inout,
};

/// @brief A buffer range with its access mode; made by in(), out() and inout().
template <class T, access_mode Mode>
struct access_tag {
  view<T> range;
};

/// @brief Tags a buffer (or view) the kernel only reads.
template <class T>
access_tag<const T, access_mode::in> in(const managed_buffer<T>& b) noexcept {
  return {b.cview()};
}
template <class T>
access_tag<const T, access_mode::in> in(view<T> v) noexcept {
  return {v};
}
/// @brief Tags a buffer (or view) whose every element the kernel overwrites; the old contents
/// may be discarded.
template <class T>
access_tag<T, access_mode::out> out(managed_buffer<T>& b) noexcept {
  return {b.view()};
}
template <class T>
access_tag<T, access_mode::out> out(view<T> v) noexcept {
  static_assert(!std::is_const<T>::value, "unimem::out: the kernel writes this range; it cannot be const");
  return {v};
}
/// @brief Tags a buffer (or view) the kernel reads and writes.
template <class T>
access_tag<T, access_mode::inout> inout(managed_buffer<T>& b) noexcept {
  return {b.view()};
}
template <class T>
access_tag<T, access_mode::inout> inout(view<T> v) noexcept {
  static_assert(!std::is_const<T>::value, "unimem::inout: the kernel writes this range; it cannot be const");
  return {v};
}
// A temporary buffer would be freed before the kernel runs.
template <class T>
void in(managed_buffer<T>&&) = delete;
template <class T>
void out(managed_buffer<T>&&) = delete;
template <class T>
void inout(managed_buffer<T>&&) = delete;
template <class T>
void out(const managed_buffer<T>&) = delete;
template <class T>
void inout(const managed_buffer<T>&) = delete;

namespace detail {
template <class T, access_mode Mode>
struct kernel_arg_traits<access_tag<T, Mode>> {
  static constexpr bool owner = false;
  static constexpr bool tagged = true;
  static constexpr access_mode mode = Mode;
  static view<T> get(const access_tag<T, Mode>& t) noexcept { return t.range; }
};
}  // namespace detail

UNIMEM_END_NAMESPACE
