// unimem: device_buffer<T>, memory of one GPU (not accessible from the CPU).
/// @file
/// @brief device_buffer, an array in the memory of one GPU (not accessible from the CPU).
#pragma once

#include "config.hpp"
#include "copy.hpp"
#include "detail/backend/backend.hpp"
#include "detail/owned_array.hpp"
#include "error.hpp"
#include "memory_kind.hpp"
#include "view.hpp"

#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

/// @brief An array of T in the memory of the current GPU: the explicit path, for data that
/// stays on the GPU or moves by copy() (see copy.hpp). The CPU cannot touch its elements.
///
/// Move-only; a moved-from buffer is empty. Constructors that initialise finish before they
/// return.
template <class T>
class device_buffer {
  using storage = detail::owned_array<T, device_memory>;

 public:
  /// @brief The element type.
  using value_type = T;
  /// @brief The type of sizes and indices.
  using size_type = std::size_t;
  /// @brief Its memory kind (copy directions, access tags).
  using memory_kind = device_memory;

  /// @brief An empty buffer; allocates nothing.
  device_buffer() noexcept = default;
  /// @brief n value-initialised elements (filled on the device).
  /// @throws unimem::length_error when n > max_size() (n * sizeof(T) bytes exceed PTRDIFF_MAX).
  /// @throws unimem::error when the runtime cannot allocate.
  explicit device_buffer(size_type n, call_site where = call_site::current())
      : storage_(n, device_memory::buffer_name, where) {
    static_assert(std::is_default_constructible<T>::value,
                  "device_buffer(n) value-initialises: T needs a default constructor");
    fill_now(T{}, where);
  }
  /// @brief n elements, left uninitialised.
  device_buffer(size_type n, uninitialized_t, call_site where = call_site::current())
      : storage_(n, device_memory::buffer_name, where) {}
  /// @brief n copies of value (filled on the device).
  device_buffer(size_type n, const T& value, call_site where = call_site::current())
      : storage_(n, device_memory::buffer_name, where) {
    fill_now(value, where);
  }
  /// @brief A copy of the list.
  device_buffer(std::initializer_list<T> values, call_site where = call_site::current())
      : storage_(values.size(), device_memory::buffer_name, where) {
    upload(values.begin(), where);
  }
  /// @brief A copy of [first, last) (read once into host memory, then copied).
  template <class InputIt, std::enable_if_t<detail::is_iterator_v<InputIt>, int> = 0>
  device_buffer(InputIt first, InputIt last, call_site where = call_site::current())
      : device_buffer(detail::gathered<T>(first, last, device_memory::buffer_name), where) {}

  /// @brief Not copyable: a buffer owns its memory.
  device_buffer(const device_buffer&) = delete;
  /// @brief Not copyable: a buffer owns its memory.
  device_buffer& operator=(const device_buffer&) = delete;
  /// @brief Takes the other buffer's memory; the other is left empty.
  device_buffer(device_buffer&&) noexcept = default;
  /// @brief Frees this buffer's memory and takes the other's.
  device_buffer& operator=(device_buffer&&) noexcept = default;
  /// @brief Frees the memory, if any; never throws.
  ~device_buffer() = default;

  /// @brief The number of elements.
  [[nodiscard]] size_type size() const noexcept { return storage_.size(); }
  /// @brief size() * sizeof(T), as std::span::size_bytes().
  [[nodiscard]] size_type size_bytes() const noexcept { return size() * sizeof(T); }
  /// @brief size_bytes().
  /// @deprecated Use size_bytes() (std::span's name, and view's).
  [[deprecated("use size_bytes()")]] [[nodiscard]] size_type bytes() const noexcept {
    return size_bytes();
  }
  /// @brief True when the buffer has no elements.
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  /// @brief The most elements a buffer of T can hold.
  [[nodiscard]] static constexpr size_type max_size() noexcept { return max_elements<T>(); }
  /// @brief The device pointer (not dereferenceable on the CPU).
  [[nodiscard]] T* data() noexcept { return storage_.data(); }
  /// @brief The device pointer (not dereferenceable on the CPU).
  [[nodiscard]] const T* data() const noexcept { return storage_.data(); }
  /// @brief A view for kernels.
  [[nodiscard]] unimem::view<T> view() noexcept { return {data(), size()}; }
  /// @brief A view of const elements for kernels.
  [[nodiscard]] unimem::view<const T> view() const noexcept { return {data(), size()}; }
  /// @brief A view of const elements for kernels.
  /// @deprecated Use std::as_const(b).view() (or view() of a const buffer).
  [[deprecated("use std::as_const(b).view()")]] [[nodiscard]] unimem::view<const T> cview()
      const noexcept {
    return view();
  }

  /// @brief A host copy of the contents in a contiguous container made from a size, e.g.
  /// `auto h = d.to<std::vector<float>>();` (unimem's headers do not include `<vector>`).
  template <class Container>
  [[nodiscard]] Container to(call_site where = call_site::current()) const {
    Container out(size());
    copy(out, *this, where);
    return out;
  }

  /// @brief Gives up ownership; free the pointer with the runtime's free call.
  [[nodiscard]] T* release() noexcept { return storage_.release(); }
  /// @brief Exchanges the two buffers.
  void swap(device_buffer& other) noexcept { storage_.swap(other.storage_); }
  /// @brief Exchanges the two buffers.
  friend void swap(device_buffer& a, device_buffer& b) noexcept { a.swap(b); }

  /// @brief The kernel-argument hook (kernel_argument.hpp): launch() takes the buffer as its
  /// view.
  friend unimem::view<T> unimem_view(device_buffer& b) noexcept { return b.view(); }
  /// @brief The kernel-argument hook for a const buffer: a view of const elements.
  friend unimem::view<const T> unimem_view(const device_buffer& b) noexcept { return b.view(); }

 private:
  device_buffer(const detail::gathered<T>& values, call_site where)
      : storage_(values.size(), device_memory::buffer_name, where) {
    upload(values.data(), where);
  }
  void upload(const T* host, call_site where) {
    if (empty()) return;
    copy(view(), unimem::view<const T>(host, size()), where);
  }
  void fill_now(const T& value, call_site where) {
    fill(view(), value, where);
  }

  storage storage_;
};

UNIMEM_END_NAMESPACE
