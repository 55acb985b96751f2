/// @file
/// @brief The memory kinds managed_memory, device_memory and pinned_memory: the one description of
/// each kind that the buffers, managed_allocator, the pmr resources and copy() read.
///
/// A memory kind is a type with: `name` ("managed", "device", "pinned") and `buffer_name` (the
/// unimem buffer of this kind, for messages); `host_accessible` / `device_accessible` (the
/// CPU / kernels may dereference its pointers); `migrates` (pages move between CPU and GPUs:
/// placement and access tags apply); `residence` (where the bytes are, for copy directions);
/// `static void* allocate(std::size_t bytes, const char* what, call_site where)`, which throws
/// unimem::error and never returns null; and `static void deallocate(void* p, std::size_t
/// bytes) noexcept`, given what allocate was asked for.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/owned_array.hpp"
#include "error.hpp"

UNIMEM_BEGIN_NAMESPACE

/// @brief Where a memory kind keeps its bytes.
enum class memory_residence {
  /// CPU memory (pinned memory is also mapped for the GPU).
  host,
  /// GPU memory.
  device,
  /// Wherever the pages were last placed (managed memory).
  migrating,
};

namespace detail {
/// The cold path of allocate_or_throw: unimem::error naming `what` and the size (a null pointer
/// with success from the runtime counts as an invalid value).
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_allocation_error(backend::result r,
                                                                                  std::size_t bytes,
                                                                                  const char* what,
                                                                                  call_site where)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  throw_error(
      r.code != backend::success ? r : backend::result{backend::error_invalid_value, r.call}, where,
      fixed_text<128>(what).append(": ").append(bytes).append(" bytes").c_str());
}
#else
    ;
#endif

/// Allocates through a backend call and turns a failure (or a null pointer) into unimem::error
/// naming `what` and the size.
template <class AllocateFn>
void* allocate_or_throw(AllocateFn&& allocate, std::size_t bytes, const char* what,
                        call_site where) {
  void* p = nullptr;
  const backend::result r = allocate(&p, bytes);
  if (r.code != backend::success || p == nullptr) throw_allocation_error(r, bytes, what, where);
  return p;
}
}  // namespace detail

namespace detail {
/// The constants of a memory kind (see the file's description), shared by the three kinds.
template <bool Host, bool Device, bool Migrates, memory_residence Residence>
struct memory_kind_traits {
  /// True when the CPU may dereference its pointers.
  static constexpr bool host_accessible = Host;
  /// True when kernels may dereference its pointers.
  static constexpr bool device_accessible = Device;
  /// True when pages move between the CPU and the GPUs, so placement calls and access tags
  /// apply; memory that never moves passes the tags through (device) or is refused (pinned).
  static constexpr bool migrates = Migrates;
  /// Where the bytes are, for the direction of copies (migrating: the runtime infers it).
  static constexpr memory_residence residence = Residence;
};
}  // namespace detail

/// @brief Managed (unified) memory: one pointer valid on the CPU and every GPU; pages migrate
/// to the processor that touches them where the device can (see device::migrates_on_demand).
struct managed_memory
    : detail::memory_kind_traits<true, true, true, memory_residence::migrating> {
  /// @brief "managed", for messages.
  static constexpr const char* name = "managed";
  /// @brief "managed_buffer", for messages.
  static constexpr const char* buffer_name = "managed_buffer";
  /// @brief hipMallocManaged / cudaMallocManaged, attached globally.
  /// @throws unimem::error when the runtime cannot allocate, naming `what`, the size in bytes
  /// and `where`; never returns null.
  static void* allocate(std::size_t bytes, const char* what, call_site where) {
    return detail::allocate_or_throw(
        [](void** p, std::size_t b) { return detail::backend::malloc_managed(p, b); }, bytes, what,
        where);
  }
  /// @brief The same, attached to the host (cudaMemAttachHost): kernels may not touch it until it
  /// is attached to a stream or globally (attach()); on devices without concurrent managed
  /// access, the CPU may use it while kernels run.
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
  /// @brief "device", for messages.
  static constexpr const char* name = "device";
  /// @brief "device_buffer", for messages.
  static constexpr const char* buffer_name = "device_buffer";
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
  /// @brief "pinned", for messages.
  static constexpr const char* name = "pinned";
  /// @brief "pinned_buffer", for messages.
  static constexpr const char* buffer_name = "pinned_buffer";
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
