// unimem: the container interface shared by the host-accessible buffers (managed_buffer,
// pinned_buffer). Not a public header.
#pragma once

#include "../config.hpp"
#include "../view.hpp"
#include "owned_array.hpp"

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

template <class It>
using iterator_category_t = typename std::iterator_traits<It>::iterator_category;

/// An owned array of T in memory kind Kind that the CPU can read and write directly.
/// Move-only. A kernel argument and access-tag target through unimem_view.
template <class T, class Kind>
class host_array {
  using storage = owned_array<T, Kind>;

 public:
  using memory_kind = Kind;
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  host_array() noexcept = default;
  host_array(size_type n, call_site where) : storage_(n, Kind::buffer_name, where) {
    static_assert(std::is_default_constructible<T>::value,
                  "buffer(n) value-initialises: T needs a default constructor; use "
                  "buffer(n, unimem::uninitialized) or buffer(n, value)");
    std::uninitialized_value_construct(begin(), end());
  }
  host_array(size_type n, uninitialized_t, call_site where) : storage_(n, Kind::buffer_name, where) {}
  host_array(storage&& s) noexcept : storage_(std::move(s)) {}
  host_array(size_type n, const T& value, call_site where) : storage_(n, Kind::buffer_name, where) {
    std::uninitialized_fill(begin(), end(), value);
  }
  host_array(std::initializer_list<T> values, call_site where)
      : storage_(values.size(), Kind::buffer_name, where) {
    std::uninitialized_copy(values.begin(), values.end(), data());
  }
  template <class InputIt, class = iterator_category_t<InputIt>>
  host_array(InputIt first, InputIt last, call_site where)
      : host_array(first, last, where, iterator_category_t<InputIt>{}) {}

  [[nodiscard]] size_type size() const noexcept { return storage_.size(); }
  [[nodiscard]] size_type bytes() const noexcept { return size() * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] static constexpr size_type max_size() noexcept { return max_elements<T>(); }

  [[nodiscard]] T* data() noexcept { return storage_.data(); }
  [[nodiscard]] const T* data() const noexcept { return storage_.data(); }

  /// @brief Unchecked host access. Wait for kernels that write the buffer first.
  T& operator[](size_type i) noexcept { return data()[i]; }
  const T& operator[](size_type i) const noexcept { return data()[i]; }
  /// @brief Checked host access. @throws std::out_of_range
  T& at(size_type i) { return data()[checked(i)]; }
  const T& at(size_type i) const { return data()[checked(i)]; }
  T& front() noexcept { return data()[0]; }
  const T& front() const noexcept { return data()[0]; }
  T& back() noexcept { return data()[size() - 1]; }
  const T& back() const noexcept { return data()[size() - 1]; }

  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size(); }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size(); }
  const_iterator cbegin() const noexcept { return data(); }
  const_iterator cend() const noexcept { return data() + size(); }

  /// @brief A view for kernels and free functions.
  [[nodiscard]] unimem::view<T> view() noexcept { return {data(), size()}; }
  [[nodiscard]] unimem::view<const T> view() const noexcept { return {data(), size()}; }
  [[nodiscard]] unimem::view<const T> cview() const noexcept { return {data(), size()}; }

  void swap(host_array& other) noexcept { storage_.swap(other.storage_); }

  /// The kernel-argument hook (kernel_argument.hpp).
  friend unimem::view<T> unimem_view(host_array& a) noexcept { return a.view(); }
  friend unimem::view<const T> unimem_view(const host_array& a) noexcept { return a.view(); }

 private:
  template <class It>
  host_array(It first, It last, call_site where, std::forward_iterator_tag)
      : storage_(static_cast<size_type>(std::distance(first, last)), Kind::buffer_name, where) {
    std::uninitialized_copy(first, last, data());
  }
  template <class It>
  host_array(It first, It last, call_site where, std::input_iterator_tag)
      : host_array(std::vector<T>(first, last), where) {}
  host_array(std::vector<T>&& values, call_site where)
      : host_array(values.begin(), values.end(), where, std::forward_iterator_tag{}) {}

  size_type checked(size_type i) const {
    if (i >= size()) {
      throw std::out_of_range(std::string("unimem::") + Kind::buffer_name + "::at(" +
                              std::to_string(i) + "): size is " + std::to_string(size()));
    }
    return i;
  }

  storage storage_;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
