// unimem: the buffers' ownership core (not public): an array of T in a memory kind; the size rule.
#pragma once

#include "../argument_error.hpp"
#include "../config.hpp"
#include "../view.hpp"

#include <cstddef>
#include <cstring>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

/// @brief Tag type: construct a buffer whose elements are left uninitialised.
struct uninitialized_t {
  explicit uninitialized_t() = default;
};
/// @brief Tag value for constructing a buffer without initialising its elements.
inline constexpr uninitialized_t uninitialized{};

/// @brief The most elements of T any unimem allocation holds (bytes fit in std::ptrdiff_t).
template <class T>
constexpr std::size_t max_elements() noexcept {
  return static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(T);
}

namespace detail {
inline constexpr std::size_t max_bytes = max_elements<unsigned char>();  // PTRDIFF_MAX
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_length_error(
    std::size_t n, std::size_t element_size, const char* what)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  throw_refused<length_error>(refusal("unimem::").append(what).append(": ").append(n)
      .append(" elements of ").append(element_size).append(" bytes exceed ").append(max_bytes)
      .append(" bytes (max_size() = ").append(max_bytes / element_size).append(")"));
}
#else
    ;
#endif

/// The overflow rule of every unimem allocation: n elements of `element_size` bytes fit in
/// std::ptrdiff_t, else unimem::length_error naming `what`, before any runtime call.
inline std::size_t checked_bytes(std::size_t n, std::size_t element_size, const char* what) {
  if (element_size != 0 && n > max_bytes / element_size) throw_length_error(n, element_size, what);
  return n * element_size;
}

/// Owns `size` elements of T (trivially copyable: never constructed or destroyed) in Kind.
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
  /// @throws unimem::length_error when n elements do not fit; unimem::error from the runtime.
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
    if (data_ != nullptr) Kind::deallocate(data_, size_ * sizeof(T));
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

/// The interface of every unimem buffer over its owned_array: sizes, data(), views, swap() and
/// the kernel-argument hook; the host-accessible buffers add element access through host_array.
template <class T, class Kind>
class array_base {
 public:
  using memory_kind = Kind;
  using value_type = T;
  using size_type = std::size_t;

  [[nodiscard]] size_type size() const noexcept { return storage_.size(); }
  /// size() * sizeof(T), as std::span::size_bytes().
  [[nodiscard]] size_type size_bytes() const noexcept { return size() * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] static constexpr size_type max_size() noexcept { return max_elements<T>(); }
  [[nodiscard]] T* data() noexcept { return storage_.data(); }
  [[nodiscard]] const T* data() const noexcept { return storage_.data(); }
  /// A view for kernels and free functions; a const buffer gives a view of const elements.
  [[nodiscard]] unimem::view<T> view() noexcept { return {data(), size()}; }
  [[nodiscard]] unimem::view<const T> view() const noexcept { return {data(), size()}; }
  void swap(array_base& other) noexcept { storage_.swap(other.storage_); }

  friend unimem::view<T> unimem_view(array_base& a) noexcept { return a.view(); }
  friend unimem::view<const T> unimem_view(const array_base& a) noexcept { return a.view(); }

 protected:
  array_base() noexcept = default;
  array_base(owned_array<T, Kind>&& s) noexcept : storage_(std::move(s)) {}
  array_base(std::size_t n, call_site where) : storage_(n, Kind::buffer_name, where) {}

  owned_array<T, Kind> storage_;
};

/// Iterators of a [first, last) constructor; not integers (buffer(n, value) is the count form).
template <class It, class = void>
struct is_iterator : std::false_type {};
template <class It>
struct is_iterator<It, std::void_t<decltype(*std::declval<It&>()), decltype(++std::declval<It&>()),
                                   decltype(std::declval<It&>() != std::declval<It&>())>>
    : std::bool_constant<!std::is_integral<It>::value> {};
template <class It>
constexpr bool is_iterator_v = is_iterator<It>::value;

/// Whether last - first gives the length of [first, last) (pointers, random-access iterators).
template <class It, class = void>
struct has_distance : std::false_type {};
template <class It>
struct has_distance<It, std::void_t<decltype(std::declval<const It&>() - std::declval<const It&>())>>
    : std::is_integral<decltype(std::declval<const It&>() - std::declval<const It&>())> {};

/// The length of [first, last) (has_distance); last before first is refused naming `what`.
template <class It>
std::size_t range_length(const It& first, const It& last, const char* what) {
  const auto n = last - first;
  if (n < 0) {
    throw_refused<invalid_argument>(
        refusal("unimem::").append(what).append(": last comes before first"));
  }
  return static_cast<std::size_t>(n);
}

/// [first, last) read once into host memory: for single-pass iterators and device buffers.
template <class T>
class gathered {
  struct alignas(T) slot {
    unsigned char bytes[sizeof(T)];
  };

 public:
  template <class It>
  gathered(It first, It last, const char* what) {
    if constexpr (has_distance<It>::value) {
      reserve(range_length(first, last, what), what);
    }
    for (; first != last; ++first) {
      if (size_ == capacity_) reserve(capacity_ < 16 ? 16 : capacity_ * 2, what);
      const T value = static_cast<T>(*first);
      std::memcpy(&slots_[size_++], &value, sizeof(T));
    }
  }
  gathered(const gathered&) = delete;
  gathered& operator=(const gathered&) = delete;
  ~gathered() { delete[] slots_; }

  const T* data() const noexcept { return reinterpret_cast<const T*>(slots_); }
  std::size_t size() const noexcept { return size_; }

 private:
  void reserve(std::size_t n, const char* what) {
    if (n <= capacity_) return;
    (void)checked_bytes(n, sizeof(T), what);
    slot* fresh = new slot[n];
    if (size_ != 0) std::memcpy(fresh, slots_, size_ * sizeof(T));
    delete[] slots_;
    slots_ = fresh;
    capacity_ = n;
  }

  slot* slots_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
