/// @file
/// @brief fill() and fill_async() over managed, device and pinned buffers, views and host
/// ranges: memsets where the value allows, no kernel of unimem's own.
#pragma once

#include "config.hpp"
#include "copy.hpp"
#include "detail/backend/backend.hpp"
#include "detail/backend/fill.hpp"
#include "error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

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
