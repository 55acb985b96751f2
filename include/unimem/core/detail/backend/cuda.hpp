// unimem: the CUDA runtime's table for backend.hpp: its header, prefix, and names unlike HIP's.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#include <cuda_runtime_api.h>
#endif
/// The runtime's entity `name` (call, type, enumerator): UNIMEM_DETAIL_RT(Malloc) is cudaMalloc.
#define UNIMEM_DETAIL_RT(name) cuda##name
#define UNIMEM_DETAIL_RT_PREFIX "cuda"
/// A device attribute: cudaDevAttr<name>.
#define UNIMEM_DETAIL_ATTR(name) cudaDevAttr##name

#define UNIMEM_DETAIL_RT_BACKEND "CUDA"
#define UNIMEM_DETAIL_RT_UNDERNEATH ""  // no other runtime underneath
#define UNIMEM_DETAIL_RT_DEVICE_PROPERTIES cudaDeviceProp
#define UNIMEM_DETAIL_RT_OUT_OF_MEMORY cudaErrorMemoryAllocation
#define UNIMEM_DETAIL_RT_LAUNCH_TIMEOUT cudaErrorLaunchTimeout
#define UNIMEM_DETAIL_ATTR_MULTIPROCESSORS cudaDevAttrMultiProcessorCount
#define UNIMEM_DETAIL_ATTR_MEMORY_BUS_WIDTH cudaDevAttrGlobalMemoryBusWidth
#define UNIMEM_DETAIL_RT_LEGACY_STREAM cudaStreamLegacy
// Calls, without the prefix: cudaHostAlloc(p, bytes, 0) is cudaMallocHost(p, bytes).
#define UNIMEM_DETAIL_RT_HOST_ALLOC HostAlloc
#define UNIMEM_DETAIL_RT_HOST_FREE FreeHost
// Prefetch and advise: CUDA < 12.2 take an int device (cudaCpuDeviceId: the host); 12.2 to 12.9
// add *_v2 calls taking a cudaMemLocation; CUDA 13 keeps only that form, under the plain names.
#if CUDART_VERSION >= 12020
#define UNIMEM_DETAIL_MEM_LOCATION 1
#else
#define UNIMEM_DETAIL_MEM_LOCATION 0
#endif
#if CUDART_VERSION >= 12020 && CUDART_VERSION < 13000
#define UNIMEM_DETAIL_PLACEMENT(name) name##_v2
#else
#define UNIMEM_DETAIL_PLACEMENT(name) name
#endif
