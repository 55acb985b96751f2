// unimem: copy and fill between managed, device and pinned buffers, views and host ranges.
#pragma once

#include "allocator.hpp"
#include "detail/backend.hpp"
#include "device_buffer.hpp"
#include "error.hpp"
#include "managed_buffer.hpp"
#include "pinned_buffer.hpp"
#include "stream_ref.hpp"
#include "view.hpp"

#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

/// What kind of memory a range lives in, as far as its type tells.
enum class memory_kind { host, pinned, device, managed, unknown };

template <class R, class = void>
struct range_memory {
  static constexpr memory_kind value = memory_kind::host;  // a contiguous host range
};
template <class T>
struct range_memory<managed_buffer<T>> {
  static constexpr memory_kind value = memory_kind::managed;
};
template <class T>
struct range_memory<pinned_buffer<T>> {
  static constexpr memory_kind value = memory_kind::pinned;
};
template <class T>
struct range_memory<device_buffer<T>> {
  static constexpr memory_kind value = memory_kind::device;
};
template <class T>
struct range_memory<std::vector<T, managed_allocator<T>>> {
  static constexpr memory_kind value = memory_kind::managed;
};
template <class T>
struct range_memory<view<T>> {
  static constexpr memory_kind value = memory_kind::unknown;  // the runtime reads the pointer
};

template <class R>
using range_value_t = std::remove_pointer_t<decltype(std::data(std::declval<R&>()))>;

constexpr bool on_host(memory_kind k) { return k == memory_kind::host || k == memory_kind::pinned; }

/// The direction, derived from the two ranges' types; the runtime infers it (unified
/// addressing) where a type does not say: views and managed memory.
constexpr backend::copy_kind direction(memory_kind dst, memory_kind src) {
  if (dst == memory_kind::unknown || src == memory_kind::unknown ||
      dst == memory_kind::managed || src == memory_kind::managed) {
    return backend::copy_kind::infer;
  }
  if (on_host(src)) return on_host(dst) ? backend::copy_kind::host_to_host : backend::copy_kind::host_to_device;
  return on_host(dst) ? backend::copy_kind::device_to_host : backend::copy_kind::device_to_device;
}

template <class Dst, class Src>
constexpr void check_copy_types() {
  using d = range_value_t<Dst>;
  using s = range_value_t<Src>;
  static_assert(!std::is_const<d>::value, "unimem::copy: the destination is const");
  static_assert(std::is_same<std::remove_cv_t<d>, std::remove_cv_t<s>>::value,
                "unimem::copy: source and destination element types differ");
  static_assert(std::is_trivially_copyable<std::remove_cv_t<d>>::value,
                "unimem::copy: elements must be trivially copyable");
}

template <class Dst, class Src>
std::size_t checked_bytes(const Dst& dst, const Src& src, const char* what) {
  const std::size_t dn = std::size(dst), sn = std::size(src);
  if (dn != sn) {
    throw std::invalid_argument(std::string(what) + ": the destination has " + std::to_string(dn) +
                                " elements and the source " + std::to_string(sn));
  }
  return dn * sizeof(range_value_t<Dst>);
}

}  // namespace detail

/// @brief Copies src into dst and waits for the copy. Both are any of managed_buffer,
/// device_buffer, pinned_buffer, view, or a contiguous host range (std::vector, std::array,
/// ...), with the same element type and size. The direction comes from the types.
/// @throws std::invalid_argument when the sizes differ (before any runtime call).
/// @throws unimem::error when the runtime fails.
template <class Dst, class Src>
void copy(Dst&& dst, const Src& src) {
  using D = std::remove_cv_t<std::remove_reference_t<Dst>>;
  detail::check_copy_types<D, Src>();
  const std::size_t bytes = detail::checked_bytes(dst, src, "unimem::copy");
  if (bytes == 0) return;
  UNIMEM_DETAIL_CHECK(detail::backend::memcpy_async(
      std::data(dst), std::data(src), bytes,
      detail::direction(detail::range_memory<D>::value, detail::range_memory<Src>::value),
      nullptr));
  UNIMEM_DETAIL_CHECK(detail::backend::stream_synchronize(nullptr));
}

/// @brief Queues a copy of src into dst on stream s and returns. Host ranges must stay alive
/// and unchanged until s has done the copy; pinned memory makes the copy truly asynchronous.
/// @throws std::invalid_argument when the sizes differ (before any runtime call).
template <class Dst, class Src>
void copy_async(Dst&& dst, const Src& src, stream_ref s) {
  using D = std::remove_cv_t<std::remove_reference_t<Dst>>;
  detail::check_copy_types<D, Src>();
  const std::size_t bytes = detail::checked_bytes(dst, src, "unimem::copy_async");
  if (bytes == 0) return;
  UNIMEM_DETAIL_CHECK(detail::backend::memcpy_async(
      std::data(dst), std::data(src), bytes,
      detail::direction(detail::range_memory<D>::value, detail::range_memory<Src>::value),
      s.get()));
}

/// @brief Queues, on stream s, the filling of a device-accessible range (device, managed or
/// pinned memory) with copies of value, done by the GPU's copy engines.
template <class Range, class T>
void fill_async(Range&& r, const T& value, stream_ref s) {
  using V = detail::range_value_t<std::remove_reference_t<Range>>;
  static_assert(!std::is_const<V>::value, "unimem::fill: the range is const");
  detail::fill_bytes(std::data(r), std::size(r), static_cast<V>(value), s.get());
}

/// @brief Fills a device-accessible range with copies of value on the device, and waits.
template <class Range, class T>
void fill(Range&& r, const T& value) {
  if (std::size(r) == 0) return;  // nothing to do, no runtime call
  fill_async(std::forward<Range>(r), value, stream_ref{});
  UNIMEM_DETAIL_CHECK(detail::backend::stream_synchronize(nullptr));
}

UNIMEM_END_NAMESPACE
