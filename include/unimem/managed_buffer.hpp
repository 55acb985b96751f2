// unimem: managed_buffer<T>, typed RAII over managed (unified) memory.
#pragma once

#include "detail/backend.hpp"
#include "detail/kernel_args.hpp"
#include "detail/owned_array.hpp"
#include "device.hpp"
#include "error.hpp"
#include "location.hpp"
#include "migration.hpp"
#include "stream_ref.hpp"
#include "view.hpp"

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

UNIMEM_BEGIN_NAMESPACE

namespace detail {
struct managed_memory {
  static constexpr const char* name = "managed_buffer";
  static backend::result allocate(void** p, std::size_t bytes) noexcept {
    return backend::malloc_managed(p, bytes);
  }
  static void deallocate(void* p) noexcept { (void)backend::free(p); }
};

template <class It>
using iterator_category_t = typename std::iterator_traits<It>::iterator_category;
}  // namespace detail

/// @brief An array of T in managed memory, usable from the CPU and every GPU with no copies.
///
/// Move-only; a moved-from buffer is empty. Allocation is hipMallocManaged/cudaMallocManaged
/// with global attachment; destruction frees it (never throws). Pages start where they are
/// first touched: the value-initialising constructors write them on the CPU.
/// @code
///   unimem::managed_buffer<float> a(n);          // n zeros, CPU-accessible
///   a[0] = 1.0f;                                 // CPU write
///   unimem::launch(kernel, unimem::grid_for(n), a, n);  // kernel gets a float*
///   unimem::synchronize();
///   float x = a[0];                              // CPU read, no copy call
/// @endcode
template <class T>
class managed_buffer {
  using storage = detail::owned_array<T, detail::managed_memory>;

 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  /// @brief An empty buffer; allocates nothing.
  managed_buffer() noexcept = default;

  /// @brief n value-initialised elements (written on the CPU).
  /// @throws std::length_error when n * sizeof(T) overflows, unimem::error when allocation fails.
  explicit managed_buffer(size_type n) : storage_(n) {
    static_assert(std::is_default_constructible<T>::value,
                  "managed_buffer(n) value-initialises: T needs a default constructor; "
                  "use managed_buffer(n, unimem::uninitialized) or managed_buffer(n, value)");
    std::uninitialized_value_construct(begin(), end());
  }
  /// @brief n elements left uninitialised: no page is touched until first use.
  managed_buffer(size_type n, uninitialized_t) : storage_(n) {}
  /// @brief n copies of value (written on the CPU).
  managed_buffer(size_type n, const T& value) : storage_(n) {
    std::uninitialized_fill(begin(), end(), value);
  }
  /// @brief n zero-initialised elements whose pages start at ft.where: on a device, the
  /// pages are prefetched there and zeroed there (never touched by the CPU), in the order of
  /// ft.stream; the constructor waits for ft.stream. On the host, as managed_buffer(n).
  /// @code
  ///   unimem::managed_buffer<float> a(n, unimem::first_touch(unimem::location::device(0)));
  /// @endcode
  managed_buffer(size_type n, first_touch_t ft) : storage_(n) {
    static_assert(std::is_trivially_default_constructible<T>::value,
                  "managed_buffer(n, first_touch(...)) zero-fills on the device, which is "
                  "value-initialisation only for trivially default constructible T; use "
                  "managed_buffer(n, first_touch(...), unimem::uninitialized) and a kernel");
    if (ft.where.is_host()) {
      std::uninitialized_value_construct(begin(), end());
    } else {
      place(ft, true);
    }
  }
  /// @brief n uninitialised elements whose pages start at ft.where (prefetched there, in the
  /// order of ft.stream, which the constructor waits for); initialise them there, e.g. with a
  /// kernel.
  managed_buffer(size_type n, first_touch_t ft, uninitialized_t) : storage_(n) {
    place(ft, false);
  }
  /// @brief A copy of the list.
  managed_buffer(std::initializer_list<T> values) : storage_(values.size()) {
    std::uninitialized_copy(values.begin(), values.end(), data());
  }
  /// @brief A copy of [first, last); input iterators are read once.
  template <class InputIt, class = detail::iterator_category_t<InputIt>>
  managed_buffer(InputIt first, InputIt last)
      : managed_buffer(first, last, detail::iterator_category_t<InputIt>{}) {}

  managed_buffer(const managed_buffer&) = delete;
  managed_buffer& operator=(const managed_buffer&) = delete;
  managed_buffer(managed_buffer&&) noexcept = default;
  managed_buffer& operator=(managed_buffer&&) noexcept = default;
  ~managed_buffer() = default;

  [[nodiscard]] size_type size() const noexcept { return storage_.size(); }
  [[nodiscard]] size_type bytes() const noexcept { return size() * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] static constexpr size_type max_size() noexcept { return storage::max_size(); }

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

  // ---- placement (see migration.hpp for the free functions over views and sub-ranges) ----

  /// @brief Queues a migration of all pages to l on stream s (asynchronous, stream-ordered).
  hint_status prefetch(location l, stream_ref s = {}) const {
    return unimem::prefetch(cview(), l, s);
  }
  /// @brief Advice for the whole buffer (l is ignored for advice::read_mostly).
  hint_status advise(advice a, location l) const { return unimem::advise(cview(), a, l); }
  /// @brief advise(advice::read_mostly). @throws std::invalid_argument for other advice.
  hint_status advise(advice a) const { return unimem::advise(cview(), a); }
  hint_status unadvise(advice a, location l) const { return unimem::unadvise(cview(), a, l); }
  hint_status unadvise(advice a) const { return unimem::unadvise(cview(), a); }
  [[nodiscard]] bool is_read_mostly() const { return unimem::is_read_mostly(cview()); }
  [[nodiscard]] std::optional<location> preferred_location() const {
    return unimem::preferred_location(cview());
  }
  [[nodiscard]] std::optional<location> last_prefetch_location() const {
    return unimem::last_prefetch_location(cview());
  }
  [[nodiscard]] std::vector<location> accessed_by() const { return unimem::accessed_by(cview()); }
  /// @brief Prefetches to the host on s and waits: the CPU may then read without faults.
  hint_status ready_for_host(stream_ref s = {}) const { return unimem::ready_for_host(cview(), s); }

  /// @brief Attaches the allocation to stream s (hipStreamAttachMemAsync /
  /// cudaStreamAttachMemAsync), asynchronously on s. HIP on AMD documents the call as a no-op.
  void attach(stream_ref s, attach_mode m = attach_mode::single) {
    if (empty()) return;
    const detail::backend::attach_kind k = m == attach_mode::global ? detail::backend::attach_kind::global
                                           : m == attach_mode::host ? detail::backend::attach_kind::host
                                                                    : detail::backend::attach_kind::single;
    UNIMEM_DETAIL_CHECK(detail::backend::stream_attach(s.get(), data(), k));
  }

  void swap(managed_buffer& other) noexcept { storage_.swap(other.storage_); }
  friend void swap(managed_buffer& a, managed_buffer& b) noexcept { a.swap(b); }

 private:
  template <class It>
  managed_buffer(It first, It last, std::forward_iterator_tag)
      : storage_(static_cast<size_type>(std::distance(first, last))) {
    std::uninitialized_copy(first, last, data());
  }
  template <class It>
  managed_buffer(It first, It last, std::input_iterator_tag)
      : managed_buffer(std::vector<T>(first, last), std::input_iterator_tag{}) {}
  managed_buffer(std::vector<T>&& values, std::input_iterator_tag)
      : managed_buffer(values.begin(), values.end(), std::forward_iterator_tag{}) {}

  // First touch on a device: prefetch there (the policy applies), optionally zero there, wait.
  void place(first_touch_t ft, bool zero) {
    if (empty()) return;
    detail::check_location(ft.where, "unimem::first_touch");
    if (ft.where.is_host()) {
      (void)unimem::prefetch(cview(), ft.where, ft.stream);
      ft.stream.synchronize();
      return;
    }
    device_guard g(ft.where.device_id());  // the default stream and the memset of that device
    (void)unimem::prefetch(cview(), ft.where, ft.stream);
    if (zero) UNIMEM_DETAIL_CHECK(detail::backend::memset_async(data(), 0, bytes(), ft.stream.get()));
    ft.stream.synchronize();
  }

  size_type checked(size_type i) const {
    if (i >= size()) {
      throw std::out_of_range("unimem::managed_buffer::at(" + std::to_string(i) +
                              "): size is " + std::to_string(size()));
    }
    return i;
  }

  storage storage_;
};

namespace detail {
template <class T>
struct kernel_arg_traits<managed_buffer<T>> {
  static constexpr bool owner = true;
  static constexpr bool tagged = false;
};
}  // namespace detail

UNIMEM_END_NAMESPACE
