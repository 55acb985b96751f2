// unimem: the few CUDA driver functions unimem needs (NVIDIA only), by the runtime's entry-point
// query: nothing links libcuda; without a driver, every function here answers "unknown".
#pragma once

#include <cuda_runtime_api.h>

#include "common.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
namespace cuda_driver {
/// Clears the runtime's last error if it is `r`, our call's status (backend::forget_if_last).
inline void forget_if_last(cudaError_t r) noexcept {
  if (r != cudaSuccess && cudaPeekAtLastError() == r) (void)cudaGetLastError();
}
/// The driver function `name` in its CUDA 11.8 ABI (a later runtime's may differ), or null.
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
/// The device of a (non-special) stream handle through its context; false when unknown.
UNIMEM_DETAIL_OUTLINE bool stream_device(cudaStream_t s, int* id) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  // Driver signatures in plain types, without cuda.h: CUresult int (0: success), CUdevice int.
  static const auto get_ctx = entry<int (*)(cudaStream_t, void**)>("cuStreamGetCtx");
  static const auto push = entry<int (*)(void*)>("cuCtxPushCurrent");
  static const auto pop = entry<int (*)(void**)>("cuCtxPopCurrent");
  static const auto get_device = entry<int (*)(int*)>("cuCtxGetDevice");
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
}  // namespace cuda_driver
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
