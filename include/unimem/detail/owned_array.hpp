// unimem: the ownership core shared by the buffer types (not a public header).
#pragma once

#include "../error.hpp"
#include "backend.hpp"

#include <cstddef>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

/// @brief Tag: construct a buffer whose elements are left uninitialised.
struct uninitialized_t {
  explicit uninitialized_t() = default;
};
/// @brief Tag value for constructing a buffer without initialising its elements.
inline constexpr uninitialized_t uninitialized{};

namespace detail {

/// Owns `size` elements of T in the memory kind described by Memory, which provides
///   static constexpr const char* name;                         // for messages
///   static backend::result allocate(void** p, std::size_t bytes) noexcept;
///   static void deallocate(void* p) noexcept;
/// Move-only; a moved-from array is empty. Elements are never constructed or destroyed here
/// (T is trivially copyable).
template <class T, class Memory>
class owned_array {
  static_assert(std::is_trivially_copyable<T>::value,
                "unimem buffers hold trivially copyable types only: the runtime copies and "
                "migrates them bit by bit");
  static_assert(!std::is_const<T>::value && !std::is_volatile<T>::value,
                "unimem buffers hold non-const, non-volatile element types");
  static_assert(alignof(T) <= 256,
                "unimem buffers guarantee 256-byte alignment; this type needs more");

 public:
  /// The largest element count whose byte size and iterator distance can be represented.
  static constexpr std::size_t max_size() noexcept {
    return static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) / sizeof(T);
  }

  owned_array() noexcept = default;

  /// @throws std::length_error when n * sizeof(T) overflows (before any runtime call).
  /// @throws unimem::error when the runtime cannot allocate.
  explicit owned_array(std::size_t n) : size_(n) {
    if (n > max_size()) {
      throw std::length_error(std::string("unimem::") + Memory::name + ": " + std::to_string(n) +
                              " elements of " + std::to_string(sizeof(T)) +
                              " bytes exceed max_size() = " + std::to_string(max_size()));
    }
    if (n == 0) return;
    void* p = nullptr;
    const backend::result r = Memory::allocate(&p, n * sizeof(T));
    if (r.code != backend::success || p == nullptr) {
      throw_error(r.code != backend::success ? r : backend::result{backend::error_invalid_value, r.call},
                  __FILE__, __LINE__,
                  std::string(Memory::name) + " of " + std::to_string(n) + " elements, " +
                      std::to_string(n * sizeof(T)) + " bytes");
    }
    data_ = static_cast<T*>(p);
  }

  owned_array(const owned_array&) = delete;
  owned_array& operator=(const owned_array&) = delete;
  owned_array(owned_array&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  owned_array& operator=(owned_array&& other) noexcept {
    owned_array(std::move(other)).swap(*this);
    return *this;
  }
  ~owned_array() {
    if (data_ != nullptr) Memory::deallocate(data_);
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
