/// @file
/// @brief managed_allocator and managed_vector: managed memory for standard containers.
#pragma once

#include "config.hpp"
#include "detail/owned_array.hpp"
#include "memory_kind.hpp"
#include "view.hpp"

#include <cstddef>
#include <type_traits>
#include <vector>

UNIMEM_BEGIN_NAMESPACE

/// @brief A stateless standard allocator over managed memory: a
/// `std::vector<float, unimem::managed_allocator<float>>` works on the CPU and in launch().
template <class T>
struct managed_allocator {
  using value_type = T;  ///< The element type.
  using propagate_on_container_move_assignment = std::true_type;  ///< Moves with the memory.
  using is_always_equal = std::true_type;  ///< Any instance frees what another allocated.
  using memory_kind = managed_memory;      ///< For copy directions and access tags.

  managed_allocator() noexcept = default;  ///< A stateless allocator.
  /// @brief Rebinding.
  template <class U>
  managed_allocator(const managed_allocator<U>&) noexcept {}  // NOLINT: rebinding
  /// @brief The most elements one allocation can hold (max_elements<T>()).
  [[nodiscard]] static constexpr std::size_t max_size() noexcept { return max_elements<T>(); }
  /// @brief Managed memory, attached globally, for n elements (not constructed); nullptr for 0.
  /// @throws unimem::length_error when n > max_size(); unimem::out_of_memory (a std::bad_alloc)
  /// when memory runs out; unimem::runtime_error when the runtime fails otherwise (no GPU).
  [[nodiscard]] T* allocate(std::size_t n, call_site where = call_site::current()) {
    const std::size_t bytes = detail::checked_bytes(n, sizeof(T), "managed_allocator");
    if (n == 0) return nullptr;
    return static_cast<T*>(managed_memory::allocate(bytes, "managed_allocator", where));
  }
  /// @brief Frees; never throws.
  void deallocate(T* p, std::size_t n) noexcept {
    if (p != nullptr) managed_memory::deallocate(p, n * sizeof(T));
  }
  /// @brief Always equal.
  template <class U>
  friend bool operator==(const managed_allocator&, const managed_allocator<U>&) noexcept {
    return true;
  }
  /// @brief Never different.
  template <class U>
  friend bool operator!=(const managed_allocator&, const managed_allocator<U>&) noexcept {
    return false;
  }
};

/// @brief A std::vector in managed memory.
template <class T>
using managed_vector = std::vector<T, managed_allocator<T>>;

/// @brief The kernel-argument hook for managed_vector: launch() and access tags take its view.
template <class T>
view<T> unimem_view(std::vector<T, managed_allocator<T>>& v) noexcept {
  return {v.data(), v.size()};
}
/// @brief The kernel-argument hook for a const managed_vector: a view of const elements.
template <class T>
view<const T> unimem_view(const std::vector<T, managed_allocator<T>>& v) noexcept {
  return {v.data(), v.size()};
}

UNIMEM_END_NAMESPACE
