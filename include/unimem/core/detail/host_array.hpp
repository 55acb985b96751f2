// unimem: host_array, the container interface of managed, pinned and pool buffers (not public).
#pragma once

#include "../argument_error.hpp"
#include "../config.hpp"
#include "owned_array.hpp"

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_out_of_range(
    const char* buffer, std::size_t i, std::size_t size)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  throw_refused<out_of_range>(refusal("unimem::").append(buffer).append("::at(").append(i)
      .append("): out of range, size is ").append(size));
}
#else
    ;
#endif

/// array_base plus element access, iterators and host-side constructors, for CPU-accessible kinds.
template <class T, class Kind>
class host_array : public array_base<T, Kind> {
  using storage = owned_array<T, Kind>;
  using base = array_base<T, Kind>;

 public:
  using typename base::size_type;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using base::data;
  using base::size;

  host_array() noexcept = default;
  host_array(size_type n, call_site where) : base(n, where) { value_initialize_on_cpu(); }
  host_array(size_type n, uninitialized_t, call_site where) : base(n, where) {}
  host_array(storage&& s) noexcept : base(std::move(s)) {}
  host_array(size_type n, const T& value, call_site where) : base(n, where) {
    for (T* p = begin(); p != end(); ++p) ::new (static_cast<void*>(p)) T(value);
  }
  host_array(std::initializer_list<T> values, call_site where) : base(values.size(), where) {
    if (values.size() != 0) std::memcpy(data(), values.begin(), values.size() * sizeof(T));
  }
  /// [first, last): random-access iterators written in place; others gathered first.
  template <class It, std::enable_if_t<is_iterator_v<It>, int> = 0>
  host_array(It first, It last, call_site where) {
    if constexpr (has_distance<It>::value) {
      storage(range_length(first, last, Kind::buffer_name), Kind::buffer_name, where)
          .swap(this->storage_);
      for (T* p = begin(); first != last; ++first, ++p) ::new (static_cast<void*>(p)) T(*first);
    } else {
      const gathered<T> values(first, last, Kind::buffer_name);
      storage(values.size(), Kind::buffer_name, where).swap(this->storage_);
      if (values.size() != 0) std::memcpy(data(), values.data(), this->size_bytes());
    }
  }
  /// @brief Unchecked host access. Wait for kernels that write the buffer first.
  T& operator[](size_type i) noexcept { return data()[i]; }
  const T& operator[](size_type i) const noexcept { return data()[i]; }
  /// @brief Checked host access. @throws unimem::out_of_range outside the buffer
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

 protected:
  /// Value-initialises every element on the CPU (a memset for trivially constructible T).
  void value_initialize_on_cpu() noexcept(std::is_nothrow_default_constructible<T>::value) {
    static_assert(std::is_default_constructible<T>::value,
                  "buffer(n) value-initialises: T needs a default constructor; use "
                  "buffer(n, unimem::uninitialized) or buffer(n, value)");
    if constexpr (std::is_trivially_default_constructible<T>::value) {
      if (!this->empty()) std::memset(static_cast<void*>(data()), 0, this->size_bytes());
    } else {
      for (T* p = begin(); p != end(); ++p) ::new (static_cast<void*>(p)) T();
    }
  }

 private:
  size_type checked(size_type i) const {
    if (i >= size()) throw_out_of_range(Kind::buffer_name, i, size());
    return i;
  }
};

}  // namespace detail
UNIMEM_END_NAMESPACE
