// unimem: view<T>, the non-owning (pointer, size) pair that kernels receive.
#pragma once

#include "detail/backend.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE

/// @brief A non-owning, trivially copyable view of `size()` contiguous elements.
///
/// Buffers hand views to kernels; a view never frees anything. Element access works in host
/// and device code, wherever the memory is accessible.
/// @code
///   __global__ void scale(unimem::view<float> v, float a) {
///     auto i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
///     if (i < v.size()) v[i] *= a;
///   }
/// @endcode
template <class T>
class view {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using pointer = T*;
  using reference = T&;
  using iterator = T*;

  view() = default;
  UNIMEM_HOST_DEVICE constexpr view(T* data, size_type size) noexcept : data_(data), size_(size) {}
  /// view<T> converts to view<const T>, never the other way.
  template <class U, std::enable_if_t<std::is_convertible<U (*)[], T (*)[]>::value, int> = 0>
  UNIMEM_HOST_DEVICE constexpr view(const view<U>& other) noexcept
      : data_(other.data()), size_(other.size()) {}

  UNIMEM_HOST_DEVICE constexpr T* data() const noexcept { return data_; }
  UNIMEM_HOST_DEVICE constexpr size_type size() const noexcept { return size_; }
  UNIMEM_HOST_DEVICE constexpr size_type size_bytes() const noexcept { return size_ * sizeof(T); }
  UNIMEM_HOST_DEVICE constexpr bool empty() const noexcept { return size_ == 0; }
  /// Unchecked element access.
  UNIMEM_HOST_DEVICE constexpr T& operator[](size_type i) const noexcept { return data_[i]; }
  UNIMEM_HOST_DEVICE constexpr T* begin() const noexcept { return data_; }
  UNIMEM_HOST_DEVICE constexpr T* end() const noexcept { return data_ + size_; }

  /// @brief Elements [offset, offset + count) (host only).
  /// @throws std::out_of_range when the range does not lie inside the view.
  view subview(size_type offset, size_type count) const {
    if (offset > size_ || count > size_ - offset) {
      throw std::out_of_range("unimem::view::subview: [" + std::to_string(offset) + ", " +
                              std::to_string(offset) + " + " + std::to_string(count) +
                              ") is outside a view of " + std::to_string(size_) + " elements");
    }
    return view(data_ + offset, count);
  }
  /// @brief Elements [offset, size()) (host only).
  /// @throws std::out_of_range when offset > size().
  view subview(size_type offset) const {
    if (offset > size_) return subview(offset, 0);
    return subview(offset, size_ - offset);
  }

 private:
  T* data_ = nullptr;
  size_type size_ = 0;
};

UNIMEM_END_NAMESPACE
