// unimem (internal): device-accessible memory filled with copies of a value in stream order, no
// kernel, no host memory the stream must outlive: device_buffer's constructors, fill()'s last step.
#pragma once

#include "../config.hpp"
#include "../error.hpp"
#include "backend/backend.hpp"

#include <cstddef>
#include <cstring>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// Whether value's bytes are all one (a memset writes it).
template <class T>
bool one_byte_repeated(const T& value) noexcept {
  const auto* b = reinterpret_cast<const unsigned char*>(&value);
  return std::memcmp(b, b + 1, sizeof(T) - 1) == 0;  // each byte equals the next
}
/// A memset where value's bytes are all one; else the first element's bytes from `written` on
/// written one at a time (fill.hpp writes words first), doubled by device-to-device copies.
template <class T>
void fill_device(T* p, std::size_t n, const T& value, backend::stream_handle s, call_site where,
                 std::size_t written = 0) {
  if (n == 0) return;  // no runtime call (p may be null)
  const auto* b = reinterpret_cast<const unsigned char*>(&value);
  if (one_byte_repeated(value)) return check(backend::memset_async(p, *b, n * sizeof(T), s), where);
  for (std::size_t i = written; i < sizeof(T); ++i) {
    check(backend::memset_async(reinterpret_cast<unsigned char*>(p) + i, b[i], 1, s), where);
  }
  for (std::size_t done = 1; done < n; done *= 2) {
    const std::size_t chunk = done < n - done ? done : n - done;
    check(backend::memcpy_async(p + done, p, chunk * sizeof(T), backend::copy_kind::infer, s),
          where);
  }
}
}  // namespace detail
UNIMEM_END_NAMESPACE
