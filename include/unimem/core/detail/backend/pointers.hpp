// unimem (internal): what the runtime knows of a pointer: its memory kind, device and residence
// (the placement tags, DLPack, MPI, fill()); any_pointer, for the runtimes' pointer parameters.
// This folder alone names hip*/cuda*.
#pragma once

#include "backend.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
/// Converts to whatever pointer type a runtime's parameter has (void*, hipDeviceptr_t*, ...).
struct any_pointer {
  void* p;
  template <class T>
  operator T*() const noexcept {  // NOLINT: implicit on purpose
    return static_cast<T*>(p);
  }
};
/// Where a pointer's memory is, as the runtime says.
enum class pointer_residence { host, device, unknown };
/// What kind of memory a pointer points to, as the runtime says (pageable: unknown to it).
enum class pointer_memory { pageable, pinned, device, managed, unknown };
#if !defined(UNIMEM_DETAIL_HIP_AMD)
namespace cuda_driver {
/// The kind of memory p points to, as the CUDA runtime says (nothing left behind).
inline pointer_memory memory_of(const void* p) noexcept {
  cudaPointerAttributes a{};
  const cudaError_t r = cudaPointerGetAttributes(&a, p);
  if (r != cudaSuccess) {
    forget_if_last(r);
    return pointer_memory::unknown;
  }
  switch (a.type) {
    case cudaMemoryTypeUnregistered: return pointer_memory::pageable;
    case cudaMemoryTypeHost: return pointer_memory::pinned;
    case cudaMemoryTypeDevice: return pointer_memory::device;
    case cudaMemoryTypeManaged: return pointer_memory::managed;
  }
  return pointer_memory::unknown;
}
/// The device of p's memory, as the CUDA runtime says; false, nothing left behind, when unknown.
inline bool pointer_device(const void* p, int* id) noexcept {
  cudaPointerAttributes a{};
  const cudaError_t r = cudaPointerGetAttributes(&a, p);
  forget_if_last(r);
  if (r != cudaSuccess || a.type == cudaMemoryTypeUnregistered) return false;
  *id = a.device;
  return true;
}
}  // namespace cuda_driver
#endif
/// The kind of memory p points to; unknown when the runtime cannot say (nothing left behind).
/// AMD: hipPointerGetAttribute, stable across ROCm 5 to 7 (the struct form is not); HIP
/// refuses the pointers it does not know, pageable memory.
inline pointer_memory memory_of(const void* p) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  if (p == nullptr) return pointer_memory::unknown;
  int managed = 0;
  void* const ptr = const_cast<void*>(p);
  const result m =
      UNIMEM_DETAIL_CALL(PointerGetAttribute, &managed, HIP_POINTER_ATTRIBUTE_IS_MANAGED, ptr);
  if (m.code != success) {
    forget_if_last(m.code);
    return m.code == hipErrorInvalidValue ? pointer_memory::pageable : pointer_memory::unknown;
  }
  if (managed != 0) return pointer_memory::managed;
  unsigned int type = 0;
  const result t =
      UNIMEM_DETAIL_CALL(PointerGetAttribute, &type, HIP_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
  if (t.code != success) {
    forget_if_last(t.code);
    return pointer_memory::unknown;
  }
  if (type == static_cast<unsigned int>(hipMemoryTypeDevice)) return pointer_memory::device;
  if (type == static_cast<unsigned int>(hipMemoryTypeHost)) return pointer_memory::pinned;
#if HIP_VERSION_MAJOR >= 6  // ROCm 6 names pageable memory instead of refusing it
  if (type == static_cast<unsigned int>(hipMemoryTypeUnregistered)) return pointer_memory::pageable;
#endif
  return pointer_memory::unknown;
#else
  if (UNIMEM_DETAIL_FAULT_FIRES("cudaPointerGetAttributes")) return pointer_memory::unknown;
  return cuda_driver::memory_of(p);
#endif
}
/// The device whose memory p is, or against which it was allocated (managed memory); an error,
/// nothing left behind, when the runtime does not know the pointer.
inline result pointer_device(const void* p, int* id) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  const result r = UNIMEM_DETAIL_CALL(PointerGetAttribute, id, HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      const_cast<void*>(p));
  forget_if_last(r.code);
  return r;
#else
  if (cuda_driver::pointer_device(p, id)) return {success, "cudaPointerGetAttributes"};
  return {error_invalid_value, "cudaPointerGetAttributes (not memory of the runtime)"};
#endif
}
/// Whether p points to host (pageable, pinned) or device (device, managed) memory; unknown when
/// the runtime cannot say, and on AMD (the layout changed between ROCm 5 and 6).
inline pointer_residence residence(const void* p) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  (void)p;
  return pointer_residence::unknown;
#else
  switch (memory_of(p)) {
    case pointer_memory::device:
    case pointer_memory::managed: return pointer_residence::device;
    case pointer_memory::pageable:
    case pointer_memory::pinned: return pointer_residence::host;
    case pointer_memory::unknown: break;
  }
  return pointer_residence::unknown;
#endif
}

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
