/// @file
/// @brief pinned_buffer, page-locked host memory for fast and asynchronous copies.
#pragma once

#include "config.hpp"
#include "detail/host_array.hpp"
#include "detail/owned_array.hpp"
#include "memory_kind.hpp"

#include <initializer_list>

UNIMEM_BEGIN_NAMESPACE

/// @brief An array of T in page-locked (pinned) host memory: the CPU uses it like any array,
/// copies to and from the GPU run at full bus speed and may be asynchronous, kernels may read it
/// over the bus. Pinning is expensive (milliseconds per GiB): allocate once (see pinned_memory).
///
/// Move-only, with managed_buffer's constructors and container interface (from a shared base the
/// reference omits). launch(), copy() and fill() take it; the access tags refuse it (no moves).
template <class T>
class pinned_buffer : public detail::host_array<T, pinned_memory> {
  using base = detail::host_array<T, pinned_memory>;

 public:
  using typename base::size_type;
  pinned_buffer() noexcept = default;  ///< An empty buffer; allocates nothing.
  /// @brief n value-initialised elements.
  /// @throws unimem::length_error when n > max_size().
  /// @throws unimem::error when the runtime cannot allocate.
  explicit pinned_buffer(size_type n, call_site where = call_site::current()) : base(n, where) {}
  /// @brief n elements, left uninitialised.
  pinned_buffer(size_type n, uninitialized_t u, call_site where = call_site::current())
      : base(n, u, where) {}
  /// @brief n copies of value.
  pinned_buffer(size_type n, const T& value, call_site where = call_site::current())
      : base(n, value, where) {}
  /// @brief A copy of the list.
  pinned_buffer(std::initializer_list<T> values, call_site where = call_site::current())
      : base(values, where) {}
  /// @brief A copy of [first, last).
  template <class InputIt, std::enable_if_t<detail::is_iterator_v<InputIt>, int> = 0>
  pinned_buffer(InputIt first, InputIt last, call_site where = call_site::current())
      : base(first, last, where) {}
  /// @brief Exchanges the two buffers.
  friend void swap(pinned_buffer& a, pinned_buffer& b) noexcept { a.swap(b); }
};

UNIMEM_END_NAMESPACE
