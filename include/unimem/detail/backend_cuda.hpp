// unimem: the native CUDA backend (nvcc, no HIP needed).
// Every cuda* name unimem uses is here; the rest of the library calls these wrappers.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#include <cuda_runtime_api.h>
#endif

#include <string>

#define UNIMEM_DETAIL_CUDA 1
#define UNIMEM_DETAIL_ABI_NAMESPACE v0_cuda

#include "backend_common.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {

using status = cudaError_t;
using stream_handle = cudaStream_t;
using result = basic_result<status>;

constexpr status success = cudaSuccess;
constexpr status error_invalid_device = cudaErrorInvalidDevice;
constexpr status error_invalid_value = cudaErrorInvalidValue;
constexpr status error_not_ready = cudaErrorNotReady;

inline const char* name() noexcept { return "CUDA"; }

inline const char* error_name(status s) noexcept { return cudaGetErrorName(s); }
inline const char* error_string(status s) noexcept { return cudaGetErrorString(s); }
/// Reads and resets the runtime's last error (a sticky error stays).
inline status take_last_error() noexcept { return cudaGetLastError(); }
/// True for the statuses that mean "this machine has no usable GPU" rather than a fault.
inline bool means_no_gpu(status s) noexcept {
  return s == cudaErrorNoDevice || s == cudaErrorInsufficientDriver;
}

inline result device_count(int* n) noexcept { return UNIMEM_DETAIL_NATIVE(cudaGetDeviceCount(n)); }
inline result set_device(int id) noexcept { return UNIMEM_DETAIL_NATIVE(cudaSetDevice(id)); }
inline result get_device(int* id) noexcept { return UNIMEM_DETAIL_NATIVE(cudaGetDevice(id)); }
inline result device_synchronize() noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaDeviceSynchronize());
}
inline result mem_get_info(std::size_t* free, std::size_t* total) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaMemGetInfo(free, total));
}

inline result get_attribute(int* value, device_attribute a, int id) noexcept {
  cudaDeviceAttr native = cudaDevAttrWarpSize;
  switch (a) {
    case device_attribute::warp_size: native = cudaDevAttrWarpSize; break;
    case device_attribute::multiprocessors: native = cudaDevAttrMultiProcessorCount; break;
    case device_attribute::max_threads_per_block: native = cudaDevAttrMaxThreadsPerBlock; break;
    case device_attribute::max_shared_memory_per_block:
      native = cudaDevAttrMaxSharedMemoryPerBlock;
      break;
    case device_attribute::max_grid_dim_x: native = cudaDevAttrMaxGridDimX; break;
    case device_attribute::managed_memory: native = cudaDevAttrManagedMemory; break;
    case device_attribute::concurrent_managed_access:
      native = cudaDevAttrConcurrentManagedAccess;
      break;
    case device_attribute::pageable_memory_access:
      native = cudaDevAttrPageableMemoryAccess;
      break;
  }
  return UNIMEM_DETAIL_NATIVE(cudaDeviceGetAttribute(value, native, id));
}

inline result get_properties(native_properties& out, int id) {
  cudaDeviceProp p{};
  const result r = UNIMEM_DETAIL_NATIVE(cudaGetDeviceProperties(&p, id));
  if (r.code != success) return r;
  out.name = p.name;
  out.architecture = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
  out.total_memory = p.totalGlobalMem;
  out.major = p.major;
  out.minor = p.minor;
  out.pci_domain = p.pciDomainID;
  out.pci_bus = p.pciBusID;
  out.pci_device = p.pciDeviceID;
  return r;
}

/// Whether pages of managed memory move to the GPU that touches them (Pascal and later, on
/// Linux): exactly concurrentManagedAccess on CUDA.
inline bool migrates_on_demand(const native_properties&, bool concurrent_managed,
                               bool) noexcept {
  return concurrent_managed;
}

inline result runtime_version(int* v) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaRuntimeGetVersion(v));
}
inline result driver_version(int* v) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaDriverGetVersion(v));
}
/// Formats a version number as the runtime reports it: major * 1000 + minor * 10.
inline std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}
/// The version of the headers this translation unit was compiled against.
inline std::string compiled_version() { return version_string(CUDART_VERSION); }

inline result malloc_managed(void** p, std::size_t bytes) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaMallocManaged(p, bytes, cudaMemAttachGlobal));
}
inline result free(void* p) noexcept { return UNIMEM_DETAIL_NATIVE(cudaFree(p)); }

inline result launch_kernel(const void* kernel, extent3 grid, extent3 block, void** args,
                            std::size_t shared_bytes, stream_handle stream) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaLaunchKernel(kernel, dim3(grid.x, grid.y, grid.z),
                                               dim3(block.x, block.y, block.z), args,
                                               shared_bytes, stream));
}

inline result stream_synchronize(stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaStreamSynchronize(s));
}
inline result stream_query(stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaStreamQuery(s));
}

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
