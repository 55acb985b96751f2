// unimem: the ownership core of the buffers (not a public header): an array of T in a memory
// kind (memory_kind.hpp), and the one rule for allocation sizes.
#pragma once

#include "../config.hpp"

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

/// @brief Tag: construct a buffer whose elements are left uninitialised (as the runtimes'
/// allocation calls leave them).
struct uninitialized_t {
  explicit uninitialized_t() = default;
};
/// @brief Tag value for constructing a buffer without initialising its elements.
inline constexpr uninitialized_t uninitialized{};

/// @brief The most elements of T any unimem allocation holds: byte sizes and iterator
/// distances must fit in std::ptrdiff_t.
template <class T>
constexpr std::size_t max_elements() noexcept {
  return static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) / sizeof(T);
}

namespace detail {

[[noreturn]] inline void throw_length_error(std::size_t n, std::size_t element_size,
                                           const char* what) {
  const std::size_t max = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  throw std::length_error(std::string("unimem::") + what + ": " + std::to_string(n) +
                          " elements of " + std::to_string(element_size) + " bytes exceed " +
                          std::to_string(max) + " bytes (max_size() = " +
                          std::to_string(max / element_size) + ")");
}

/// The one overflow rule of every unimem allocation (buffers, managed_allocator, pmr
/// resources): n elements of `element_size` bytes must fit in std::ptrdiff_t, else
/// std::length_error naming `what`, before any runtime call.
inline std::size_t checked_bytes(std::size_t n, std::size_t element_size, const char* what) {
  const std::size_t max = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  if (element_size != 0 && n > max / element_size) throw_length_error(n, element_size, what);
  return n * element_size;
}

/// Owns `size` elements of T in memory kind Kind. Move-only; a moved-from array is empty.
/// Elements are never constructed or destroyed here (T is trivially copyable).
template <class T, class Kind>
class owned_array {
  static_assert(std::is_trivially_copyable<T>::value,
                "unimem buffers hold trivially copyable types only: the runtime copies and "
                "migrates them bit by bit");
  static_assert(!std::is_const<T>::value && !std::is_volatile<T>::value,
                "unimem buffers hold non-const, non-volatile element types");
  static_assert(alignof(T) <= 256,
                "unimem buffers guarantee 256-byte alignment; this type needs more");

 public:
  owned_array() noexcept = default;

  /// @throws std::length_error when n elements do not fit (before any runtime call).
  /// @throws unimem::error when the runtime cannot allocate.
  template <class Allocate>
  owned_array(std::size_t n, const char* what, call_site where, Allocate&& allocate) {
    const std::size_t bytes = checked_bytes(n, sizeof(T), what);
    if (n == 0) return;
    data_ = static_cast<T*>(allocate(bytes, what, where));
    size_ = n;
  }
  owned_array(std::size_t n, const char* what, call_site where)
      : owned_array(n, what, where, &Kind::allocate) {}

  owned_array(const owned_array&) = delete;
  owned_array& operator=(const owned_array&) = delete;
  owned_array(owned_array&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  owned_array& operator=(owned_array&& other) noexcept {
    owned_array(std::move(other)).swap(*this);
    return *this;
  }
  ~owned_array() {
    if (data_ != nullptr) Kind::deallocate(data_);
  }

  void swap(owned_array& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

  /// Gives up ownership; the caller frees the pointer with the matching runtime call.
  T* release() noexcept {
    size_ = 0;
    return std::exchange(data_, nullptr);
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
