/// @file
/// @brief device_buffer, an array in the memory of one GPU (not accessible from the CPU).
#pragma once

#include "config.hpp"
#include "copy.hpp"
#include "detail/fill_device.hpp"
#include "detail/stream_calls.hpp"
#include "detail/owned_array.hpp"
#include "memory_kind.hpp"
#include "view.hpp"

#include <initializer_list>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE

/// @brief An array of T in the memory of the current GPU, for data that stays there or moves by
/// copy(); the CPU cannot touch its elements (data() is a device pointer). Move-only; a moved-from
/// buffer is empty; initialising constructors finish before they return. size(), size_bytes(),
/// empty(), max_size(), data(), view(), swap() come from a shared base the reference omits.
template <class T>
class device_buffer : public detail::array_base<T, device_memory> {
  using base = detail::array_base<T, device_memory>;

 public:
  using typename base::size_type;
  using base::view;

  device_buffer() noexcept = default;  ///< An empty buffer; allocates nothing.
  /// @brief n value-initialised elements (filled on the device).
  /// @throws unimem::length_error when n > max_size() (n * sizeof(T) bytes exceed PTRDIFF_MAX).
  /// @throws unimem::error when the runtime cannot allocate.
  explicit device_buffer(size_type n, call_site where = call_site::current())
      : device_buffer(n, T{}, where) {}
  /// @brief n elements, left uninitialised.
  device_buffer(size_type n, uninitialized_t, call_site where = call_site::current())
      : base(n, where) {}
  /// @brief n copies of value (a memset, else the first element doubled by copies; waited for).
  device_buffer(size_type n, const T& value, call_site where = call_site::current())
      : base(n, where) {
    detail::fill_device(this->data(), n, value, nullptr, where);
    if (n != 0) default_stream.synchronize(where);
  }
  /// @brief A copy of the list.
  device_buffer(std::initializer_list<T> values, call_site where = call_site::current())
      : base(values.size(), where) {
    upload(values.begin(), where);
  }
  /// @brief A copy of [first, last) (read once into host memory, then copied).
  template <class InputIt, std::enable_if_t<detail::is_iterator_v<InputIt>, int> = 0>
  device_buffer(InputIt first, InputIt last, call_site where = call_site::current())
      : device_buffer(detail::gathered<T>(first, last, device_memory::buffer_name), where) {}
  /// @brief A host copy in a contiguous container made from a size: `d.to<std::vector<float>>()`.
  template <class Container>
  [[nodiscard]] Container to(call_site where = call_site::current()) const {
    Container out(this->size());
    copy(out, *this, where);
    return out;
  }
  /// @brief Gives up ownership; free the pointer with the runtime's free call.
  [[nodiscard]] T* release() noexcept { return this->storage_.release(); }
  /// @brief Exchanges the two buffers.
  friend void swap(device_buffer& a, device_buffer& b) noexcept { a.swap(b); }

 private:
  device_buffer(const detail::gathered<T>& values, call_site where) : base(values.size(), where) {
    upload(values.data(), where);
  }
  void upload(const T* host, call_site where) {
    if (!this->empty()) copy(view(), unimem::view<const T>(host, this->size()), where);
  }
};

UNIMEM_END_NAMESPACE
