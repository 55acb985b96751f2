/// @file
/// @brief managed_buffer, an array in managed (unified) memory, and the host_attached tag.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/host_array.hpp"
#include "detail/owned_array.hpp"
#include "detail/placement_record.hpp"
#include "detail/property_cache.hpp"
#include "device_count.hpp"
#include "error.hpp"
#include "memory_kind.hpp"

#include <cstddef>
#include <initializer_list>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE

/// @brief Tag: allocate managed memory attached to the host (cudaMemAttachHost): kernels may not
/// touch it until attach(); without concurrent managed access the CPU may use it while kernels run.
struct host_attached_t {
  /// @brief Explicit, so that `{}` does not make a tag by accident.
  explicit host_attached_t() = default;
};
/// @brief Tag value for managed_buffer(n, unimem::host_attached).
inline constexpr host_attached_t host_attached{};

/// @brief From this size managed_buffer(n) zeroes on the GPU: below it a CPU memset is cheaper
/// and the CPU, often writing next, finds the pages there (docs/pitfalls.md, section 14).
inline constexpr std::size_t gpu_value_init_min_bytes = std::size_t{1} << 20;

namespace detail {
/// Zeroes managed memory on device d if its pages migrate there (else false, nothing done):
/// prefetched (not on an APU) and set on the calling thread's per-thread stream, waited for.
inline bool zero_on_gpu(void* p, std::size_t bytes, int d, call_site where) {
  const cached_device& device = cached_entry(d, where);
  if (!device.placement.migrates) return false;
  const backend::stream_handle s = backend::per_thread_stream();
  if (device.placement.regime != memory_regime::apu) {
    check(backend::prefetch(p, bytes, {false, d}, s), where);
  }
  check(backend::memset_async(p, 0, bytes, s), where);
  check(backend::stream_synchronize(s), where);
  return true;
}
}  // namespace detail

/// @brief An array of T in managed memory, usable from the CPU and every GPU with no copies.
///
/// Move-only (moved-from: empty); cudaMallocManaged, global attachment. Pages start where first
/// touched: managed_buffer(n) value-initialises (skip with unimem::uninitialized), first_touch()
/// picks the place. From an unlisted base: the standard member types (iterators are pointers),
/// memory_kind, size(), size_bytes(), empty(), max_size(), data(), operator[] (unchecked), at()
/// (throws argument_error), front(), back(), begin(), end(), cbegin(), cend(), view(), swap().
/// @code
///   unimem::managed_buffer<float> a(n);                 // n zeros, CPU-accessible
///   unimem::launch(kernel, unimem::grid_for(n), a, n);  // kernel gets a float*
///   unimem::synchronize();
///   float x = a[0];                                     // CPU read, no copy call
/// @endcode
template <class T>
class managed_buffer : public detail::host_array<T, managed_memory> {
  using base = detail::host_array<T, managed_memory>;

 public:
  using typename base::size_type;

  /// @brief An empty buffer; allocates nothing.
  managed_buffer() noexcept = default;
  /// @brief n value-initialised elements: trivially default constructible T of at least
  /// gpu_value_init_min_bytes are zeroed on a current device that migrates on demand, on the
  /// per-thread default stream (waited for; of other streams only the legacy default stream's
  /// work; the gain: docs/pitfalls.md, section 14), otherwise by the CPU. Choose with
  /// first_touch(), which also records where the pages are (a tagged launch then moves nothing).
  /// @throws unimem::length_error when n > max_size() (n * sizeof(T) bytes exceed PTRDIFF_MAX).
  /// @throws unimem::error when the runtime cannot allocate, or the zeroing on the GPU fails.
  explicit managed_buffer(size_type n, call_site where = call_site::current())
      : base(n, uninitialized, where) {
    if constexpr (std::is_trivially_default_constructible<T>::value) {
      if (this->size_bytes() >= gpu_value_init_min_bytes &&
          detail::zero_on_gpu(this->data(), this->size_bytes(),
                              detail::current_device_id(where), where)) {
        return;
      }
    }
    this->value_initialize_on_cpu();
  }
  /// @brief n elements left uninitialised: no page is touched until first use.
  managed_buffer(size_type n, uninitialized_t u, call_site where = call_site::current())
      : base(n, u, where) {}
  /// @brief n copies of value (written on the CPU).
  managed_buffer(size_type n, const T& value, call_site where = call_site::current())
      : base(n, value, where) {}
  /// @brief A copy of the list (written on the CPU).
  managed_buffer(std::initializer_list<T> values, call_site where = call_site::current())
      : base(values, where) {}
  /// @brief A copy of [first, last); input iterators are read once.
  template <class InputIt, std::enable_if_t<detail::is_iterator_v<InputIt>, int> = 0>
  managed_buffer(InputIt first, InputIt last, call_site where = call_site::current())
      : base(first, last, where) {}
  /// @brief n uninitialised elements attached to the host (see host_attached_t).
  managed_buffer(size_type n, host_attached_t, call_site where = call_site::current())
      : base(detail::owned_array<T, managed_memory>(n, managed_memory::buffer_name, where,
                                                    &managed_memory::allocate_host_attached)) {}

  /// @brief n zero-initialised elements whose pages start at ft's location (first_touch()): on a
  /// device, prefetched and zeroed there in ft.stream's order (waited for); on the host by the CPU.
  /// @throws unimem::error when ft.stream belongs to another device than ft's location.
  template <class FirstTouch, class = decltype(FirstTouch::first_touch)>  // first_touch_t
  managed_buffer(size_type n, FirstTouch ft, call_site where = call_site::current())
      : base(n, uninitialized, where) {
    static_assert(std::is_trivially_default_constructible<T>::value,
                  "managed_buffer(n, first_touch(...)) zero-fills on the device, which is "
                  "value-initialisation only for trivially default constructible T; use "
                  "managed_buffer(n, first_touch(...), unimem::uninitialized) and a kernel");
    if (ft.location && ft.location->is_host()) {
      this->value_initialize_on_cpu();
    } else {
      unimem_first_touch(this->data(), this->size_bytes(), ft, true, &record_, where);
    }
  }
  /// @brief n uninitialised elements prefetched to ft's location on ft.stream (waited for).
  template <class FirstTouch, class = decltype(FirstTouch::first_touch)>  // first_touch_t
  managed_buffer(size_type n, FirstTouch ft, uninitialized_t,
                 call_site where = call_site::current())
      : base(n, uninitialized, where) {
    unimem_first_touch(this->data(), this->size_bytes(), ft, false, &record_, where);
  }

  /// @brief Exchanges the two buffers (their allocations and what unimem knows of their pages).
  void swap(managed_buffer& other) noexcept {
    base::swap(other);
    record_.swap(other.record_);
  }
  /// @brief Exchanges the two buffers.
  friend void swap(managed_buffer& a, managed_buffer& b) noexcept { a.swap(b); }

 private:
  /// The placement-record hook (access.hpp).
  friend detail::placement_record* unimem_detail_placement_record(const managed_buffer& b) noexcept {
    return &b.record_;
  }
  // Where unimem last placed the pages (detail/placement_record.hpp).
  mutable detail::placement_record record_;
};

UNIMEM_END_NAMESPACE
