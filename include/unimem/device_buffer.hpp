// unimem: device_buffer<T>, memory of one GPU (not accessible from the CPU).
#pragma once

#include "detail/backend.hpp"
#include "detail/kernel_args.hpp"
#include "detail/owned_array.hpp"
#include "error.hpp"
#include "view.hpp"

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

UNIMEM_BEGIN_NAMESPACE

namespace detail {
struct device_memory {
  static constexpr const char* name = "device_buffer";
  static backend::result allocate(void** p, std::size_t bytes) noexcept {
    return backend::malloc_device(p, bytes);
  }
  static void deallocate(void* p) noexcept { (void)backend::free(p); }
};

/// Fills [p, p + n) with copies of value, all in stream order on s: a memset where the value
/// is one repeated byte, else the value is written once and doubled by device-to-device
/// copies (log2(n) copies, n elements moved in total; no kernel, so plain C++ code can fill).
template <class T>
void fill_bytes(T* p, std::size_t n, const T& value, backend::stream_handle s) {
  if (n == 0) return;
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  bool uniform = true;
  for (std::size_t i = 1; i < sizeof(T); ++i) uniform = uniform && bytes[i] == bytes[0];
  if (uniform) {
    UNIMEM_DETAIL_CHECK(backend::memset_async(p, bytes[0], n * sizeof(T), s));
    return;
  }
  // The seed comes from the stack: make it synchronous with respect to the host.
  UNIMEM_DETAIL_CHECK(backend::stream_synchronize(s));
  UNIMEM_DETAIL_CHECK(backend::memcpy(p, &value, sizeof(T), backend::copy_kind::infer));
  for (std::size_t done = 1; done < n;) {
    const std::size_t chunk = done < n - done ? done : n - done;
    UNIMEM_DETAIL_CHECK(backend::memcpy_async(p + done, p, chunk * sizeof(T),
                                              backend::copy_kind::infer, s));
    done += chunk;
  }
}
}  // namespace detail

/// @brief An array of T in the memory of the current GPU: the explicit path, for data that
/// stays on the GPU or moves by copy() (see copy.hpp). The CPU cannot touch its elements.
///
/// Move-only; a moved-from buffer is empty. Constructors that initialise finish before they
/// return.
template <class T>
class device_buffer {
  using storage = detail::owned_array<T, detail::device_memory>;

 public:
  using value_type = T;
  using size_type = std::size_t;

  device_buffer() noexcept = default;
  /// @brief n value-initialised elements (filled on the device).
  /// @throws std::length_error when n * sizeof(T) overflows, unimem::error when allocation fails.
  explicit device_buffer(size_type n) : storage_(n) {
    static_assert(std::is_default_constructible<T>::value,
                  "device_buffer(n) value-initialises: T needs a default constructor");
    fill_now(T{});
  }
  /// @brief n elements, left uninitialised.
  device_buffer(size_type n, uninitialized_t) : storage_(n) {}
  /// @brief n copies of value (filled on the device).
  device_buffer(size_type n, const T& value) : storage_(n) { fill_now(value); }
  /// @brief A copy of the list.
  device_buffer(std::initializer_list<T> values) : storage_(values.size()) {
    upload(values.begin());
  }
  /// @brief A copy of [first, last).
  template <class InputIt, class = typename std::iterator_traits<InputIt>::iterator_category>
  device_buffer(InputIt first, InputIt last) : device_buffer(std::vector<T>(first, last)) {}

  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&&) noexcept = default;
  device_buffer& operator=(device_buffer&&) noexcept = default;
  ~device_buffer() = default;

  [[nodiscard]] size_type size() const noexcept { return storage_.size(); }
  [[nodiscard]] size_type bytes() const noexcept { return size() * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] static constexpr size_type max_size() noexcept { return storage::max_size(); }
  /// @brief The device pointer (not dereferenceable on the CPU).
  [[nodiscard]] T* data() noexcept { return storage_.data(); }
  [[nodiscard]] const T* data() const noexcept { return storage_.data(); }
  [[nodiscard]] unimem::view<T> view() noexcept { return {data(), size()}; }
  [[nodiscard]] unimem::view<const T> view() const noexcept { return {data(), size()}; }
  [[nodiscard]] unimem::view<const T> cview() const noexcept { return {data(), size()}; }

  /// @brief A host copy of the contents.
  [[nodiscard]] std::vector<T> to_vector() const {
    std::vector<T> out(size());
    if (!empty()) {
      UNIMEM_DETAIL_CHECK(
          detail::backend::memcpy(out.data(), data(), bytes(), detail::backend::copy_kind::device_to_host));
    }
    return out;
  }

  /// @brief Gives up ownership; free the pointer with the runtime's free call.
  [[nodiscard]] T* release() noexcept { return storage_.release(); }
  void swap(device_buffer& other) noexcept { storage_.swap(other.storage_); }
  friend void swap(device_buffer& a, device_buffer& b) noexcept { a.swap(b); }

 private:
  explicit device_buffer(std::vector<T>&& values) : storage_(values.size()) {
    upload(values.data());
  }
  void upload(const T* host) {
    if (empty()) return;
    UNIMEM_DETAIL_CHECK(
        detail::backend::memcpy(data(), host, bytes(), detail::backend::copy_kind::host_to_device));
  }
  void fill_now(const T& value) {
    detail::fill_bytes(data(), size(), value, nullptr);
    UNIMEM_DETAIL_CHECK(detail::backend::stream_synchronize(nullptr));
  }

  storage storage_;
};

namespace detail {
template <class T>
struct kernel_arg_traits<device_buffer<T>> : owner_arg_traits {};
}  // namespace detail

UNIMEM_END_NAMESPACE
