/// @file
/// @brief The memory kinds managed_memory, device_memory and pinned_memory, which the buffers,
/// managed_allocator, the pmr resources and copy() read: names for messages, the constants of
/// detail::memory_kind_traits, allocate() (throws unimem::error, never returns null) and
/// deallocate() (never throws; given the size allocate() was asked for).
#pragma once

#include <cstddef>

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "error.hpp"

UNIMEM_BEGIN_NAMESPACE

/// @brief Where a memory kind keeps its bytes.
enum class memory_residence {
  host,       ///< CPU memory (pinned memory is also mapped for the GPU).
  device,     ///< GPU memory.
  migrating,  ///< Wherever the pages were last placed (managed memory).
};

namespace detail {
/// Cold path of allocate_or_throw (a null pointer with success counts as an invalid value).
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_allocation_error(
    backend::result r, std::size_t bytes, const char* what, call_site where)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  throw_error(
      r.code != backend::success ? r : backend::result{backend::error_invalid_value, r.call}, where,
      fixed_text<128>(what).append(": ").append(bytes).append(" bytes").c_str());
}
#else
    ;
#endif

/// Allocates by a backend call; a failure (or null) throws unimem::error naming `what` and size.
template <class AllocateFn>
void* allocate_or_throw(AllocateFn&& allocate, std::size_t bytes, const char* what,
                        call_site where) {
  void* p = nullptr;
  const backend::result r = allocate(&p, bytes);
  if (r.code != backend::success || p == nullptr) throw_allocation_error(r, bytes, what, where);
  return p;
}

/// The constants of a memory kind.
template <bool Host, bool Device, bool Migrates, memory_residence Residence>
struct memory_kind_traits {
  static constexpr bool host_accessible = Host;      ///< The CPU may dereference its pointers.
  static constexpr bool device_accessible = Device;  ///< Kernels may dereference its pointers.
  /// Pages move between CPU and GPUs, so placement calls and access tags apply; memory that never
  /// moves passes the tags through (device) or is refused (pinned).
  static constexpr bool migrates = Migrates;
  /// Where the bytes are, for the direction of copies (migrating: the runtime infers it).
  static constexpr memory_residence residence = Residence;
};
}  // namespace detail

/// @brief Managed (unified) memory: one pointer valid on the CPU and every GPU; pages migrate
/// to the processor that touches them where the device can (see device::migrates_on_demand).
struct managed_memory
    : detail::memory_kind_traits<true, true, true, memory_residence::migrating> {
  static constexpr const char* name = "managed";                ///< For messages.
  static constexpr const char* buffer_name = "managed_buffer";  ///< For messages.
  /// @brief hipMallocManaged / cudaMallocManaged, attached globally.
  /// @throws unimem::error, naming `what`, the bytes and `where`, if it cannot; never returns null.
  static void* allocate(std::size_t bytes, const char* what, call_site where) {
    return detail::allocate_or_throw(
        [](void** p, std::size_t b) { return detail::backend::malloc_managed(p, b); }, bytes, what,
        where);
  }
  /// @brief The same, attached to the host (cudaMemAttachHost; see host_attached_t).
  /// @throws unimem::error as allocate().
  static void* allocate_host_attached(std::size_t bytes, const char* what, call_site where) {
    return detail::allocate_or_throw(
        [](void** p, std::size_t b) { return detail::backend::malloc_managed(p, b, true); },
        bytes, what, where);
  }
  /// @brief Frees the `bytes` allocated at p. Never throws.
  static void deallocate(void* p, std::size_t /*bytes*/) noexcept { (void)detail::backend::free(p); }
};

/// @brief Memory of the current GPU: kernels and copies only, the CPU cannot touch it.
struct device_memory : detail::memory_kind_traits<false, true, false, memory_residence::device> {
  static constexpr const char* name = "device";                ///< For messages.
  static constexpr const char* buffer_name = "device_buffer";  ///< For messages.
  /// @brief hipMalloc / cudaMalloc on the current device.
  /// @throws unimem::error as managed_memory::allocate().
  static void* allocate(std::size_t bytes, const char* what, call_site where) {
    return detail::allocate_or_throw(&detail::backend::malloc_device, bytes, what, where);
  }
  /// @brief Frees; never throws.
  static void deallocate(void* p, std::size_t /*bytes*/) noexcept { (void)detail::backend::free(p); }
};

/// @brief Page-locked (pinned) host memory: the CPU uses it as any memory, copies run at full
/// bus speed and asynchronously, kernels may read it over the bus.
struct pinned_memory : detail::memory_kind_traits<true, true, false, memory_residence::host> {
  static constexpr const char* name = "pinned";                ///< For messages.
  static constexpr const char* buffer_name = "pinned_buffer";  ///< For messages.
  /// @brief cudaMallocHost; hipHostMalloc before HIP 6.4, hipHostAlloc from 6.4 on.
  /// @throws unimem::error as managed_memory::allocate().
  static void* allocate(std::size_t bytes, const char* what, call_site where) {
    return detail::allocate_or_throw(&detail::backend::malloc_pinned, bytes, what, where);
  }
  /// @brief Frees; never throws.
  static void deallocate(void* p, std::size_t /*bytes*/) noexcept {
    (void)detail::backend::free_pinned(p);
  }
};

UNIMEM_END_NAMESPACE
