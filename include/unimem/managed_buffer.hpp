// unimem: managed_buffer<T>, typed RAII over managed (unified) memory.
#pragma once

#include "detail/backend.hpp"
#include "detail/host_array.hpp"
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
class managed_buffer : public detail::host_array<T, detail::managed_memory> {
  using base = detail::host_array<T, detail::managed_memory>;

 public:
  using typename base::size_type;

  /// @brief An empty buffer; allocates nothing.
  managed_buffer() noexcept = default;
  /// @brief n value-initialised elements (written on the CPU).
  /// @throws std::length_error when n * sizeof(T) overflows, unimem::error when allocation fails.
  explicit managed_buffer(size_type n) : base(n) {}
  /// @brief n elements left uninitialised: no page is touched until first use.
  managed_buffer(size_type n, uninitialized_t u) : base(n, u) {}
  /// @brief n copies of value (written on the CPU).
  managed_buffer(size_type n, const T& value) : base(n, value) {}
  /// @brief A copy of the list (written on the CPU).
  managed_buffer(std::initializer_list<T> values) : base(values) {}
  /// @brief A copy of [first, last); input iterators are read once.
  template <class InputIt, class = detail::iterator_category_t<InputIt>>
  managed_buffer(InputIt first, InputIt last) : base(first, last) {}

  /// @brief n zero-initialised elements whose pages start at ft.where: on a device, the
  /// pages are prefetched there and zeroed there (never touched by the CPU), in the order of
  /// ft.stream; the constructor waits for ft.stream. On the host, as managed_buffer(n).
  /// @code
  ///   unimem::managed_buffer<float> a(n, unimem::first_touch(unimem::location::device(0)));
  /// @endcode
  managed_buffer(size_type n, first_touch_t ft) : base(n, uninitialized) {
    static_assert(std::is_trivially_default_constructible<T>::value,
                  "managed_buffer(n, first_touch(...)) zero-fills on the device, which is "
                  "value-initialisation only for trivially default constructible T; use "
                  "managed_buffer(n, first_touch(...), unimem::uninitialized) and a kernel");
    if (ft.where.is_host()) {
      std::uninitialized_value_construct(this->begin(), this->end());
    } else {
      place(ft, true);
    }
  }
  /// @brief n uninitialised elements whose pages start at ft.where (prefetched there, in the
  /// order of ft.stream, which the constructor waits for); initialise them there, e.g. with a
  /// kernel.
  managed_buffer(size_type n, first_touch_t ft, uninitialized_t) : base(n, uninitialized) {
    place(ft, false);
  }

  // ---- placement (see migration.hpp for the free functions over views and sub-ranges) ----

  /// @brief Queues a migration of all pages to l on stream s (asynchronous, stream-ordered).
  hint_status prefetch(location l, stream_ref s = {}) const {
    return unimem::prefetch(this->cview(), l, s);
  }
  /// @brief Advice for the whole buffer (l is ignored for advice::read_mostly).
  hint_status advise(advice a, location l) const { return unimem::advise(this->cview(), a, l); }
  /// @brief advise(advice::read_mostly). @throws std::invalid_argument for other advice.
  hint_status advise(advice a) const { return unimem::advise(this->cview(), a); }
  hint_status unadvise(advice a, location l) const {
    return unimem::unadvise(this->cview(), a, l);
  }
  hint_status unadvise(advice a) const { return unimem::unadvise(this->cview(), a); }
  [[nodiscard]] bool is_read_mostly() const { return unimem::is_read_mostly(this->cview()); }
  [[nodiscard]] std::optional<location> preferred_location() const {
    return unimem::preferred_location(this->cview());
  }
  [[nodiscard]] std::optional<location> last_prefetch_location() const {
    return unimem::last_prefetch_location(this->cview());
  }
  [[nodiscard]] std::vector<location> accessed_by() const {
    return unimem::accessed_by(this->cview());
  }
  /// @brief Makes the buffer ready for the CPU: no GPU still writes it and its pages are on
  /// the host. Without a stream, waits for every GPU with work; with a stream, for that stream
  /// (see unimem::ready_for_host).
  hint_status ready_for_host(stream_ref s = {}) const {
    return unimem::ready_for_host(this->cview(), s);
  }

  /// @brief Attaches the allocation to stream s (hipStreamAttachMemAsync /
  /// cudaStreamAttachMemAsync), asynchronously on s. HIP on AMD documents the call as a no-op.
  void attach(stream_ref s, attach_mode m = attach_mode::single) {
    if (this->empty()) return;
    const detail::backend::attach_kind k =
        m == attach_mode::global ? detail::backend::attach_kind::global
        : m == attach_mode::host ? detail::backend::attach_kind::host
                                 : detail::backend::attach_kind::single;
    UNIMEM_DETAIL_CHECK(detail::backend::stream_attach(s.get(), this->data(), k));
  }

  friend void swap(managed_buffer& a, managed_buffer& b) noexcept { a.swap(b); }

 private:
  // First touch: prefetch to ft.where (the policy applies), optionally zero there, wait.
  void place(first_touch_t ft, bool zero) {
    if (this->empty()) return;
    detail::check_location(ft.where, "unimem::first_touch");
    if (ft.where.is_host()) {
      (void)unimem::prefetch(this->cview(), ft.where, ft.stream);
      ft.stream.synchronize();
      return;
    }
    device_guard g(ft.where.device_id());  // the default stream and the memset of that device
    (void)unimem::prefetch(this->cview(), ft.where, ft.stream);
    if (zero) {
      UNIMEM_DETAIL_CHECK(
          detail::backend::memset_async(this->data(), 0, this->bytes(), ft.stream.get()));
    }
    ft.stream.synchronize();
  }
};

namespace detail {
template <class T>
struct kernel_arg_traits<managed_buffer<T>> : owner_arg_traits {};
}  // namespace detail

UNIMEM_END_NAMESPACE
