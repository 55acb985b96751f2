// unimem: copy and fill between managed, device and pinned buffers, views and host ranges. The
// direction of a copy comes from the ranges' memory kinds (memory_kind.hpp); this header knows
// no buffer type.
/// @file
/// @brief copy(), copy_async(), fill() and fill_async() between managed, device and pinned buffers,
/// views and host ranges; the direction of a copy comes from the ranges' memory kinds.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "error.hpp"
#include "kernel_argument.hpp"
#include "memory_kind.hpp"
#include "stream.hpp"
#include "stream_ref.hpp"
#include "view.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

/// Where a range's bytes are, as far as its type tells: its declared memory kind's residence; a
/// view says nothing (the runtime reads the pointer); any other contiguous range is host memory.
enum class range_residence { host, device, migrating, unknown };

template <class R>
constexpr range_residence residence_of() {
  using kind = declared_memory_kind_t<R>;
  if constexpr (is_view<std::remove_cv_t<R>>::value) {
    return range_residence::unknown;
  } else if constexpr (std::is_void<kind>::value) {
    return range_residence::host;
  } else if constexpr (kind::residence == memory_residence::host) {
    return range_residence::host;
  } else if constexpr (kind::residence == memory_residence::device) {
    return range_residence::device;
  } else {
    return range_residence::migrating;
  }
}

template <class R>
using range_value_t = std::remove_pointer_t<decltype(std::data(std::declval<R&>()))>;

/// The direction for the runtime; it infers the direction (unified addressing) where a type
/// does not say: views and managed memory.
constexpr backend::copy_kind direction(range_residence dst, range_residence src) {
  if (dst == range_residence::unknown || src == range_residence::unknown ||
      dst == range_residence::migrating || src == range_residence::migrating) {
    return backend::copy_kind::infer;
  }
  if (src == range_residence::host) {
    return dst == range_residence::host ? backend::copy_kind::host_to_host
                                        : backend::copy_kind::host_to_device;
  }
  return dst == range_residence::host ? backend::copy_kind::device_to_host
                                      : backend::copy_kind::device_to_device;
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
std::size_t copy_bytes(const Dst& dst, const Src& src, const char* what) {
  const std::size_t dn = std::size(dst), sn = std::size(src);
  if (dn != sn) {
    throw std::invalid_argument(std::string(what) + ": the destination has " + std::to_string(dn) +
                                " elements and the source " + std::to_string(sn));
  }
  return dn * sizeof(range_value_t<Dst>);
}

template <class Dst, class Src>
void queue_copy(Dst& dst, const Src& src, stream_ref s, const char* what, call_site where) {
  using D = std::remove_cv_t<Dst>;
  check_copy_types<D, Src>();
  const std::size_t bytes = copy_bytes(dst, src, what);
  if (bytes == 0) return;
  check(backend::memcpy_async(std::data(dst), std::data(src), bytes,
                              direction(residence_of<D>(), residence_of<Src>()), s.get()),
        where);
}

/// Writes copy i of `pattern` (`size` bytes) at p + i * size for i < n, in stream order, with
/// strided memsets: one 32-bit 2-D memset per word where the size and the address allow it and
/// the runtime has one, else one 8-bit 2-D memset per byte. The memsets are device work on
/// every kind of memory (copies between host-resident buffers would block the host).
inline void write_strided(unsigned char* p, std::size_t n, const unsigned char* pattern,
                          std::size_t size, backend::stream_handle s, call_site where) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::size_t i = 0;
  if (size % 4 == 0 && address % 4 == 0) {
    for (; i < size; i += 4) {
      std::uint32_t w;
      std::memcpy(&w, pattern + i, 4);
      const backend::result r = backend::memset2d32_async(p + i, size, w, n, s);
      if (r.code == backend::error_not_supported) break;  // bytes below
      check(r, where);
    }
  }
  for (; i < size; ++i) check(backend::memset2d_async(p + i, size, pattern[i], n, s), where);
}

/// Fills [p, p + n) with copies of value, all in stream order on s, never blocking the host and
/// launching no kernel of unimem's own (plain C++ code can fill): one memset where the value
/// is one repeated byte; the runtime's 16- or 32-bit memset for 2- and 4-byte values; strided
/// 2-D memsets, one per word of the value, otherwise.
template <class T>
void fill_bytes(T* p, std::size_t n, const T& value, backend::stream_handle s, call_site where) {
  if (n == 0) return;
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  bool uniform = true;
  for (std::size_t i = 1; i < sizeof(T); ++i) uniform = uniform && bytes[i] == bytes[0];
  if (uniform) {
    check(backend::memset_async(p, bytes[0], n * sizeof(T), s), where);
    return;
  }
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  if constexpr (sizeof(T) == 2) {
    if (address % 2 == 0) {
      std::uint16_t w;
      std::memcpy(&w, bytes, 2);
      const backend::result r = backend::memset16_async(p, w, n, s);
      if (r.code != backend::error_not_supported) return check(r, where);
    }
  } else if constexpr (sizeof(T) == 4) {
    if (address % 4 == 0) {
      std::uint32_t w;
      std::memcpy(&w, bytes, 4);
      const backend::result r = backend::memset32_async(p, w, n, s);
      if (r.code != backend::error_not_supported) return check(r, where);
    }
  }
  write_strided(reinterpret_cast<unsigned char*>(p), n, bytes, sizeof(T), s, where);
}

}  // namespace detail

/// @brief Copies src into dst and waits for the copy. Both are any of managed_buffer,
/// device_buffer, pinned_buffer, managed_vector, view, or a contiguous host range (std::vector,
/// std::array, ...), with the same element type and size. The direction comes from the types.
/// @throws std::invalid_argument when the sizes differ (before any runtime call).
/// @throws unimem::error when the runtime fails.
template <class Dst, class Src>
void copy(Dst&& dst, const Src& src, call_site where = call_site::current()) {
  detail::queue_copy(dst, src, stream_ref{}, "unimem::copy", where);
  if (std::size(src) != 0) default_stream.synchronize(where);
}

/// @brief Queues a copy of src into dst on stream s and returns. Host ranges must stay alive
/// and unchanged until s has done the copy; pinned memory makes the copy truly asynchronous.
/// @throws std::invalid_argument when the sizes differ (before any runtime call).
template <class Dst, class Src>
void copy_async(Dst&& dst, const Src& src, stream_ref s, call_site where = call_site::current()) {
  detail::queue_copy(dst, src, s, "unimem::copy_async", where);
}

/// @brief Queues, on stream s, the filling of a device-accessible range (device, managed or
/// pinned memory) with copies of value, done by the runtime's memset and device-to-device
/// copy calls (no kernel). Never blocks the host.
template <class Range, class T>
void fill_async(Range&& r, const T& value, stream_ref s, call_site where = call_site::current()) {
  using V = detail::range_value_t<std::remove_reference_t<Range>>;
  static_assert(!std::is_const<V>::value, "unimem::fill: the range is const");
  detail::fill_bytes(std::data(r), std::size(r), static_cast<V>(value), s.get(), where);
}

/// @brief Fills a device-accessible range with copies of value on the device, and waits.
template <class Range, class T>
void fill(Range&& r, const T& value, call_site where = call_site::current()) {
  if (std::size(r) == 0) return;  // nothing to do, no runtime call
  fill_async(std::forward<Range>(r), value, stream_ref{}, where);
  default_stream.synchronize(where);
}

UNIMEM_END_NAMESPACE
