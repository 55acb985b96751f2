// unimem: HIP's table for backend.hpp (AMD ROCm, or HIP on NVIDIA over the CUDA runtime): its
// header, its prefix, and the names whose shape differs from CUDA's (below).
#pragma once

#if !defined(__HIP__) && !defined(__NVCC__) && !defined(__HIP_PLATFORM_AMD__) && \
    !defined(__HIP_PLATFORM_NVIDIA__) && !defined(__HIP_PLATFORM_HCC__) &&      \
    !defined(__HIP_PLATFORM_NVCC__)
#error "unimem: the HIP backend needs a HIP platform: define __HIP_PLATFORM_AMD__ or \
__HIP_PLATFORM_NVIDIA__ (hipcc does this for AMD; the CMake target unimem::unimem does it for \
plain C++ files)."
#endif

#if defined(__HIP__) || defined(__HIPCC__) || defined(__CUDACC__)
#include <hip/hip_runtime.h>
#else
#include <hip/hip_runtime_api.h>
#endif
#include <hip/hip_version.h>

/// The runtime's entity `name` (call, type, enumerator): UNIMEM_DETAIL_RT(Malloc) is hipMalloc.
#define UNIMEM_DETAIL_RT(name) hip##name
#define UNIMEM_DETAIL_RT_PREFIX "hip"
/// A device attribute: hipDeviceAttribute<name>.
#define UNIMEM_DETAIL_ATTR(name) hipDeviceAttribute##name

#if defined(UNIMEM_DETAIL_HIP_AMD)
#define UNIMEM_DETAIL_RT_BACKEND "HIP (AMD)"
#define UNIMEM_DETAIL_RT_UNDERNEATH ""
#define UNIMEM_DETAIL_RT_LEGACY_STREAM nullptr  // AMD has none but the null stream
#else
#define UNIMEM_DETAIL_RT_BACKEND "HIP (NVIDIA)"
#define UNIMEM_DETAIL_RT_UNDERNEATH "CUDA "  // the CUDA runtime, whose version report() shows
#define UNIMEM_DETAIL_RT_LEGACY_STREAM cudaStreamLegacy
#endif
#define UNIMEM_DETAIL_RT_DEVICE_PROPERTIES hipDeviceProp_t
#define UNIMEM_DETAIL_RT_OUT_OF_MEMORY hipErrorOutOfMemory
#define UNIMEM_DETAIL_RT_LAUNCH_TIMEOUT hipErrorLaunchTimeOut
#define UNIMEM_DETAIL_ATTR_MULTIPROCESSORS hipDeviceAttributeMultiprocessorCount
#define UNIMEM_DETAIL_ATTR_MEMORY_BUS_WIDTH hipDeviceAttributeMemoryBusWidth
// Calls, without the prefix: HIP 6.4 deprecates hipHostMalloc, older HIP hipHostAlloc.
#if HIP_VERSION_MAJOR > 6 || (HIP_VERSION_MAJOR == 6 && HIP_VERSION_MINOR >= 4)
#define UNIMEM_DETAIL_RT_HOST_ALLOC HostAlloc
#else
#define UNIMEM_DETAIL_RT_HOST_ALLOC HostMalloc
#endif
#define UNIMEM_DETAIL_RT_HOST_FREE HostFree
// The placement calls (prefetch, advise): HIP < 7.1 takes an int device (hipCpuDeviceId for the
// host); HIP >= 7.1 adds *_v2 calls that take a hipMemLocation, which unimem uses there.
#if HIP_VERSION_MAJOR > 7 || (HIP_VERSION_MAJOR == 7 && HIP_VERSION_MINOR >= 1)
#define UNIMEM_DETAIL_MEM_LOCATION 1
#define UNIMEM_DETAIL_PLACEMENT(name) name##_v2
#else
#define UNIMEM_DETAIL_MEM_LOCATION 0
#define UNIMEM_DETAIL_PLACEMENT(name) name
#endif
