// unimem: pinned_buffer<T>, page-locked host memory for fast and asynchronous copies.
#pragma once

#include "detail/backend.hpp"
#include "detail/host_array.hpp"
#include "detail/kernel_args.hpp"
#include "detail/owned_array.hpp"

#include <cstddef>
#include <initializer_list>

UNIMEM_BEGIN_NAMESPACE

namespace detail {
struct pinned_memory {
  static constexpr const char* name = "pinned_buffer";
  static backend::result allocate(void** p, std::size_t bytes) noexcept {
    return backend::malloc_pinned(p, bytes);
  }
  static void deallocate(void* p) noexcept { (void)backend::free_pinned(p); }
};
}  // namespace detail

/// @brief An array of T in page-locked (pinned) host memory: the CPU uses it like any array,
/// copies to and from the GPU run at full PCIe/NVLink speed and may be asynchronous, and
/// kernels may read it directly (mapped, over the bus).
///
/// Move-only, with the constructors and accessors of managed_buffer. Allocation is
/// cudaMallocHost; on HIP, hipHostMalloc before HIP 6.4 and hipHostAlloc from 6.4 on (where
/// hipHostMalloc is deprecated). Pinning is expensive (milliseconds per GiB): allocate once.
template <class T>
class pinned_buffer : public detail::host_array<T, detail::pinned_memory> {
  using base = detail::host_array<T, detail::pinned_memory>;

 public:
  using typename base::size_type;
  pinned_buffer() noexcept = default;
  /// @brief n value-initialised elements. @throws std::length_error, unimem::error
  explicit pinned_buffer(size_type n) : base(n) {}
  pinned_buffer(size_type n, uninitialized_t u) : base(n, u) {}
  pinned_buffer(size_type n, const T& value) : base(n, value) {}
  pinned_buffer(std::initializer_list<T> values) : base(values) {}
  template <class InputIt, class = detail::iterator_category_t<InputIt>>
  pinned_buffer(InputIt first, InputIt last) : base(first, last) {}

  friend void swap(pinned_buffer& a, pinned_buffer& b) noexcept { a.swap(b); }
};

namespace detail {
template <class T>
struct kernel_arg_traits<pinned_buffer<T>> : owner_arg_traits {};
}  // namespace detail

UNIMEM_END_NAMESPACE
