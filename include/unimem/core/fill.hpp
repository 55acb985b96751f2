/// @file
/// @brief fill() and fill_async() over managed, device and pinned buffers, views and host
/// ranges: memsets where the value allows, no kernel of unimem's own.
#pragma once

#include "config.hpp"
#include "copy.hpp"
#include "detail/backend/backend.hpp"
#include "detail/backend/fill.hpp"
#include "detail/fill_device.hpp"
#include "error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

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
    for (std::size_t done = 1; done < f->n; done *= 2) {
      std::memcpy(f->p + done, f->p, (done < f->n - done ? done : f->n - done) * sizeof(T));
    }
    delete f;
  }
};

/// fill_async() of [p, p + n) (no kernel of unimem's own: plain C++ code can fill); host memory
/// (pinned or pageable) is found through `where_it_is`, or the runtime when that is unknown.
template <class T>
void fill_bytes(T* p, std::size_t n, const T& value, backend::stream_handle s,
                range_residence where_it_is, call_site where) {
  if (n == 0 || one_byte_repeated(value)) return fill_device(p, n, value, s, where);  // memset
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
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
  // The first element by 32-bit words where it can (a quarter of the calls bytes take), doubled.
  std::size_t written = 0;
  for (; sizeof(T) % 4 == 0 && address % 4 == 0 && written < sizeof(T); written += 4) {
    std::uint32_t w;
    std::memcpy(&w, bytes + written, 4);
    unsigned char* word = reinterpret_cast<unsigned char*>(p) + written;
    const backend::result r = backend::memset32_async(word, w, 1, s);
    if (r.code == backend::error_not_supported) break;  // bytes, below
    check(r, where);
  }
  fill_device(p, n, value, s, where, written);
}

}  // namespace detail

/// @brief Queues on s the filling of a device-accessible range with copies of value; never blocks
/// the host, launches no kernel: a memset (one repeated byte, or 2- and 4-byte values), else the
/// first element doubled by device-to-device copies; in host memory the CPU writes it in a host
/// function queued on s (copies between host buffers would block).
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
