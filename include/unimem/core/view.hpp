/// @file
/// @brief view, the non-owning (pointer, size) pair that kernels receive. Runtime-free.
#pragma once

#include "argument_error.hpp"
#include "config.hpp"

#include <cstddef>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE

/// @brief A non-owning, trivially copyable view of `size()` contiguous elements; element access
/// works in host and device code, wherever the memory is accessible.
/// @code
///   __global__ void scale(unimem::view<float> v, float a) {
///     auto i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
///     if (i < v.size()) v[i] *= a;
///   }
/// @endcode
template <class T>
class view {
 public:
  using element_type = T;                  ///< The element type as given, const included.
  using value_type = std::remove_cv_t<T>;  ///< The element type without const and volatile.
  using size_type = std::size_t;           ///< The type of sizes and indices.
  using difference_type = std::ptrdiff_t;  ///< The type of iterator differences.
  using pointer = T*;                      ///< A pointer to an element.
  using reference = T&;                    ///< A reference to an element.
  using iterator = T*;                     ///< A plain pointer: the elements are contiguous.

  /// @brief An empty view.
  view() = default;
  /// @brief The `size` elements starting at `data`.
  UNIMEM_HOST_DEVICE constexpr view(T* data, size_type size) noexcept : data_(data), size_(size) {}
  /// @brief view<T> converts to view<const T>, never the other way.
  template <class U, std::enable_if_t<std::is_convertible<U (*)[], T (*)[]>::value, int> = 0>
  UNIMEM_HOST_DEVICE constexpr view(const view<U>& other) noexcept
      : data_(other.data()), size_(other.size()) {}

  /// @brief The first element.
  UNIMEM_HOST_DEVICE constexpr T* data() const noexcept { return data_; }
  /// @brief The number of elements.
  UNIMEM_HOST_DEVICE constexpr size_type size() const noexcept { return size_; }
  /// @brief size() * sizeof(T).
  UNIMEM_HOST_DEVICE constexpr size_type size_bytes() const noexcept { return size_ * sizeof(T); }
  /// @brief True when the view has no elements.
  UNIMEM_HOST_DEVICE constexpr bool empty() const noexcept { return size_ == 0; }
  /// @brief Unchecked element access.
  UNIMEM_HOST_DEVICE constexpr T& operator[](size_type i) const noexcept { return data_[i]; }
  /// @brief Iterator to the first element.
  UNIMEM_HOST_DEVICE constexpr T* begin() const noexcept { return data_; }
  /// @brief Iterator past the last element.
  UNIMEM_HOST_DEVICE constexpr T* end() const noexcept { return data_ + size_; }

  /// @brief Elements [offset, offset + count) (host only).
  /// @throws unimem::out_of_range when the range does not lie inside the view.
  view subview(size_type offset, size_type count) const {
    if (offset > size_ || count > size_ - offset) {
      detail::throw_refused<out_of_range>(detail::refusal("unimem::view::subview: [")
          .append(offset).append(", ").append(offset).append(" + ").append(count)
          .append(") is outside a view of ").append(size_).append(" elements"));
    }
    return view(data_ + offset, count);
  }
  /// @brief Elements [offset, size()) (host only).
  /// @throws unimem::out_of_range when offset > size().
  view subview(size_type offset) const {
    return subview(offset, offset > size_ ? 0 : size_ - offset);
  }

 private:
  T* data_ = nullptr;
  size_type size_ = 0;
};

UNIMEM_END_NAMESPACE
