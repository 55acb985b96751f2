/// @file
/// @brief copy(), copy_async(), fill() and fill_async() over managed, device and pinned buffers,
/// views and host ranges; the direction of a copy comes from the ranges' memory kinds.
#pragma once

#include "argument_error.hpp"
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

/// data() and size() of a contiguous range or an array (not std::data: <iterator> costs a small
/// translation unit more compile time than all of unimem's own code).
template <class R>
constexpr auto range_data(R& r) noexcept(noexcept(r.data())) -> decltype(r.data()) {
  return r.data();
}
template <class T, std::size_t N>
constexpr T* range_data(T (&a)[N]) noexcept {
  return a;
}
template <class R>
constexpr auto range_size(const R& r) noexcept(noexcept(r.size())) -> decltype(r.size()) {
  return r.size();
}
template <class T, std::size_t N>
constexpr std::size_t range_size(const T (&)[N]) noexcept {
  return N;
}

template <class R>
using range_value_t = std::remove_pointer_t<decltype(range_data(std::declval<R&>()))>;

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

[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_size_mismatch(const char* what,
                                                                               std::size_t dn,
                                                                               std::size_t sn)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  throw_refused<invalid_argument>(refusal(what)
      .append(": the destination has ")
      .append(dn)
      .append(" elements and the source ")
      .append(sn));
}
#else
    ;
#endif

template <class Dst, class Src>
std::size_t copy_bytes(const Dst& dst, const Src& src, const char* what) {
  const std::size_t dn = range_size(dst), sn = range_size(src);
  if (dn != sn) throw_size_mismatch(what, dn, sn);
  return dn * sizeof(range_value_t<Dst>);
}

template <class Dst, class Src>
void queue_copy(Dst& dst, const Src& src, stream_ref s, const char* what, call_site where) {
  using D = std::remove_cv_t<Dst>;
  check_copy_types<D, Src>();
  const std::size_t bytes = copy_bytes(dst, src, what);
  if (bytes == 0) return;
  check(backend::memcpy_async(range_data(dst), range_data(src), bytes,
                              direction(residence_of<D>(), residence_of<Src>()), s.get()),
        where);
}

/// Writes one copy of `pattern` (`size` bytes) at p in stream order, with the runtime's
/// 32-bit memset per word where the size and the address allow it, else its byte memset.
inline void write_pattern(unsigned char* p, const unsigned char* pattern, std::size_t size,
                          backend::stream_handle s, call_site where) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::size_t i = 0;
  if (size % 4 == 0 && address % 4 == 0) {
    for (; i < size; i += 4) {
      std::uint32_t w;
      std::memcpy(&w, pattern + i, 4);
      const backend::result r = backend::memset32_async(p + i, w, 1, s);
      if (r.code == backend::error_not_supported) break;  // no 32-bit memset here: bytes below
      check(r, where);
    }
  }
  for (; i < size; ++i) check(backend::memset_async(p + i, pattern[i], 1, s), where);
}

/// Fills n elements from the first by doubling: copy(done, chunk) copies [0, chunk) to done;
/// log2(n) calls, n elements moved in total.
template <class CopyPrefix>
void double_prefix(std::size_t n, CopyPrefix&& copy) {
  for (std::size_t done = 1; done < n;) {
    const std::size_t chunk = done < n - done ? done : n - done;
    copy(done, chunk);
    done += chunk;
  }
}

/// A fill of host-resident memory, done by the CPU on a runtime thread in stream order.
template <class T>
struct host_fill {
  T* p;
  std::size_t n;
  T value;
  /// Writes the value once, then doubles what is written; frees itself.
  static void run(void* data) noexcept {
    host_fill* f = static_cast<host_fill*>(data);
    std::memcpy(f->p, &f->value, sizeof(T));
    double_prefix(f->n, [f](std::size_t done, std::size_t chunk) {
      std::memcpy(f->p + done, f->p, chunk * sizeof(T));
    });
    delete f;
  }
};

/// fill_async() of [p, p + n) (no kernel of unimem's own: plain C++ code can fill); host memory
/// (pinned or pageable) is found through `where_it_is`, or the runtime when that is unknown.
template <class T>
void fill_bytes(T* p, std::size_t n, const T& value, backend::stream_handle s,
                range_residence where_it_is, call_site where) {
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
  bool on_host = where_it_is == range_residence::host;
  if (where_it_is == range_residence::unknown) {
    on_host = backend::residence(p) == backend::pointer_residence::host;
  }
  if (on_host) {
    auto* f = new host_fill<T>{p, n, value};
    const backend::result r = backend::launch_host_function(s, &host_fill<T>::run, f);
    if (r.code != backend::success) {
      delete f;
      throw_error(r, where, "fill_async of host memory");
    }
    return;
  }
  write_pattern(reinterpret_cast<unsigned char*>(p), bytes, sizeof(T), s, where);
  double_prefix(n, [&](std::size_t done, std::size_t chunk) {
    check(backend::memcpy_async(p + done, p, chunk * sizeof(T), backend::copy_kind::infer, s),
          where);
  });
}

}  // namespace detail

/// @brief Copies src into dst and waits. Each is a unimem buffer, managed_vector, view or
/// contiguous host range (std::vector, ...), of the same element type and size.
/// @throws unimem::invalid_argument when the sizes differ (before any runtime call).
/// @throws unimem::error when the runtime fails.
template <class Dst, class Src>
void copy(Dst&& dst, const Src& src, call_site where = call_site::current()) {
  detail::queue_copy(dst, src, stream_ref{}, "unimem::copy", where);
  if (detail::range_size(src) != 0) default_stream.synchronize(where);
}

/// @brief Queues a copy of src into dst on stream s. Host ranges must stay alive and unchanged
/// until s has done it; pinned memory makes the copy truly asynchronous.
/// @throws unimem::invalid_argument when the sizes differ (before any runtime call).
template <class Dst, class Src>
void copy_async(Dst&& dst, const Src& src, stream_ref s, call_site where = call_site::current()) {
  detail::queue_copy(dst, src, s, "unimem::copy_async", where);
}

/// @brief Queues on s the filling of a device-accessible range with copies of value; never blocks
/// the host, launches no kernel: a memset (one repeated byte, or 2- and 4-byte values), else word
/// memsets of the first element doubled by device-to-device copies; in host memory the CPU
/// writes it in a host function queued on s (copies between host buffers would block).
template <class Range, class T>
void fill_async(Range&& r, const T& value, stream_ref s, call_site where = call_site::current()) {
  using V = detail::range_value_t<std::remove_reference_t<Range>>;
  static_assert(!std::is_const<V>::value, "unimem::fill: the range is const");
  detail::fill_bytes(detail::range_data(r), detail::range_size(r), static_cast<V>(value), s.get(),
                     detail::residence_of<std::remove_cv_t<std::remove_reference_t<Range>>>(),
                     where);
}

/// @brief Fills a device-accessible range with copies of value on the device, and waits.
template <class Range, class T>
void fill(Range&& r, const T& value, call_site where = call_site::current()) {
  if (detail::range_size(r) == 0) return;  // nothing to do, no runtime call
  fill_async(std::forward<Range>(r), value, stream_ref{}, where);
  default_stream.synchronize(where);
}

UNIMEM_END_NAMESPACE
