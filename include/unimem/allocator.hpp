// unimem: managed_allocator<T>, managed memory for standard containers.
#pragma once

#include "detail/backend.hpp"
#include "detail/kernel_args.hpp"
#include "error.hpp"

#include <cstddef>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

UNIMEM_BEGIN_NAMESPACE

/// @brief A standard allocator over managed memory:
/// `std::vector<float, unimem::managed_allocator<float>> v(n);` is usable on the CPU as a vector
/// and from kernels (launch() passes such a vector as a pointer or view, like a buffer).
/// Stateless: all instances are equal.
template <class T>
struct managed_allocator {
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;
  using is_always_equal = std::true_type;

  managed_allocator() noexcept = default;
  template <class U>
  managed_allocator(const managed_allocator<U>&) noexcept {}  // NOLINT: rebinding

  /// @throws std::bad_array_new_length when n * sizeof(T) overflows; unimem::error when the
  /// runtime cannot allocate (no GPU, out of memory).
  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    if (n == 0) return nullptr;
    void* p = nullptr;
    const detail::backend::result r = detail::backend::malloc_managed(&p, n * sizeof(T));
    if (r.code != detail::backend::success) {
      detail::throw_error(r, __FILE__, __LINE__,
                          "managed_allocator: " + std::to_string(n * sizeof(T)) + " bytes");
    }
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept {
    if (p != nullptr) (void)detail::backend::free(p);
  }

  template <class U>
  friend bool operator==(const managed_allocator&, const managed_allocator<U>&) noexcept {
    return true;
  }
  template <class U>
  friend bool operator!=(const managed_allocator&, const managed_allocator<U>&) noexcept {
    return false;
  }
};

/// @brief A std::vector in managed memory.
template <class T>
using managed_vector = std::vector<T, managed_allocator<T>>;

namespace detail {
template <class T>
struct kernel_arg_traits<std::vector<T, managed_allocator<T>>> : owner_arg_traits {};
}  // namespace detail

UNIMEM_END_NAMESPACE
