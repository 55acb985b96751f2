// unimem: the few CUDA driver functions unimem needs (NVIDIA only), by the runtime's entry-point
// query: nothing links libcuda, so a machine without a driver loads the program, and every
// function here answers "unknown" when the driver cannot be reached.
#pragma once

#include <cuda_runtime_api.h>

#include "common.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
namespace cuda_driver {
// Driver signatures in plain types, without cuda.h: CUresult int (0: success), CUdevice int.
using primary_ctx_get_state_fn = int (*)(int, unsigned*, int*);
using stream_get_ctx_fn = int (*)(cudaStream_t, void**);
using ctx_push_fn = int (*)(void*);
using ctx_pop_fn = int (*)(void**);
using ctx_get_device_fn = int (*)(int*);
/// Clears the runtime's last error if it is `r`, our call's status (backend::forget_if_last).
inline void forget_if_last(cudaError_t r) noexcept {
  if (r != cudaSuccess && cudaPeekAtLastError() == r) (void)cudaGetLastError();
}
/// The driver function `name` in its CUDA 11.8 ABI (later runtimes may hand out a newer one),
/// or null.
template <class Fn>
Fn entry(const char* name) noexcept {
  void* p = nullptr;
#if CUDART_VERSION >= 12050
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t r =
      cudaGetDriverEntryPointByVersion(name, &p, 11080, cudaEnableDefault, &found);
  const bool ok = r == cudaSuccess && found == cudaDriverEntryPointSuccess;
#elif CUDART_VERSION >= 12000
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t r = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &found);
  const bool ok = r == cudaSuccess && found == cudaDriverEntryPointSuccess;
#else
  const cudaError_t r = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault);
  const bool ok = r == cudaSuccess;
#endif
  forget_if_last(r);
  return ok ? reinterpret_cast<Fn>(p) : nullptr;
}
/// 1 when device `id` has an active primary context, 0 when not (nothing can run there), -1
/// when the driver cannot tell.
inline int primary_context_active(int id) noexcept {
  static const auto get_state = entry<primary_ctx_get_state_fn>("cuDevicePrimaryCtxGetState");
  if (get_state == nullptr) return -1;
  unsigned flags = 0;
  int active = 0;
  if (get_state(id, &flags, &active) != 0) return -1;
  return active != 0 ? 1 : 0;
}
/// The device of a (non-special) stream handle through its context; false when unknown.
UNIMEM_DETAIL_OUTLINE bool stream_device(cudaStream_t s, int* id) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  static const auto get_ctx = entry<stream_get_ctx_fn>("cuStreamGetCtx");
  static const auto push = entry<ctx_push_fn>("cuCtxPushCurrent");
  static const auto pop = entry<ctx_pop_fn>("cuCtxPopCurrent");
  static const auto get_device = entry<ctx_get_device_fn>("cuCtxGetDevice");
  if (get_ctx == nullptr || push == nullptr || pop == nullptr || get_device == nullptr) {
    return false;
  }
  void* ctx = nullptr;
  if (get_ctx(s, &ctx) != 0 || ctx == nullptr || push(ctx) != 0) return false;
  int d = -1;
  const int r = get_device(&d);
  void* popped = nullptr;
  (void)pop(&popped);
  if (r != 0 || d < 0) return false;
  *id = d;
  return true;
}
#else
    ;
#endif
/// cuMemsetD16Async / cuMemsetD32Async by sizeof(Word): 1 done, 0 refused, -1 unreachable.
template <class Word>
int memset_async(void* p, Word value, std::size_t count, cudaStream_t s) noexcept {
  using fn_type = int (*)(unsigned long long, Word, std::size_t, cudaStream_t);
  static const auto fn =
      entry<fn_type>(sizeof(Word) == 2 ? "cuMemsetD16Async" : "cuMemsetD32Async");
  if (fn == nullptr) return -1;
  return fn(reinterpret_cast<unsigned long long>(p), value, count, s) == 0 ? 1 : 0;
}
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
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
