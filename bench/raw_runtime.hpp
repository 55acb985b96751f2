// The raw baseline of unimem-bench: the runtime called directly, the way code without unimem
// does it, including the per-version forms of prefetch and advice that unimem hides.
#pragma once

#include <unimem/core/detail/backend/backend.hpp>  // the runtime header of the chosen backend

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

#if defined(UNIMEM_BACKEND_HIP)
#define RAW(name) hip##name
#define RAW_SUCCESS hipSuccess
using raw_stream_t = hipStream_t;
using raw_event_t = hipEvent_t;
#define RAW_CPU_DEVICE hipCpuDeviceId
#define RAW_ATTACH_GLOBAL hipMemAttachGlobal
#define RAW_ADVISE_PREFERRED hipMemAdviseSetPreferredLocation
#define RAW_ADVISE_ACCESSED_BY hipMemAdviseSetAccessedBy
#define RAW_ADVISE_UNSET_PREFERRED hipMemAdviseUnsetPreferredLocation
#define RAW_ADVISE_UNSET_ACCESSED_BY hipMemAdviseUnsetAccessedBy
#define RAW_H2D hipMemcpyHostToDevice
#define RAW_D2H hipMemcpyDeviceToHost
#else
#define RAW(name) cuda##name
#define RAW_SUCCESS cudaSuccess
using raw_stream_t = cudaStream_t;
using raw_event_t = cudaEvent_t;
#define RAW_CPU_DEVICE cudaCpuDeviceId
#define RAW_ATTACH_GLOBAL cudaMemAttachGlobal
#define RAW_ADVISE_PREFERRED cudaMemAdviseSetPreferredLocation
#define RAW_ADVISE_ACCESSED_BY cudaMemAdviseSetAccessedBy
#define RAW_ADVISE_UNSET_PREFERRED cudaMemAdviseUnsetPreferredLocation
#define RAW_ADVISE_UNSET_ACCESSED_BY cudaMemAdviseUnsetAccessedBy
#define RAW_H2D cudaMemcpyHostToDevice
#define RAW_D2H cudaMemcpyDeviceToHost
#endif

#define RAW_CHECK(call)                                                              \
  do {                                                                               \
    auto raw_status_ = (call);                                                       \
    if (raw_status_ != RAW_SUCCESS) {                                                \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,      \
                   RAW(GetErrorString)(raw_status_));                                \
      std::exit(3);                                                                  \
    }                                                                                \
  } while (0)

/// n floats of managed memory, attached globally.
inline float* raw_managed_floats(std::size_t n) {
  float* p = nullptr;
  RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&p), n * sizeof(float), RAW_ATTACH_GLOBAL));
  return p;
}

/// n elements of T in the current device's memory (any trivially copyable T).
template <class T>
T* raw_device_array(std::size_t n) {
  T* p = nullptr;
  RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&p), n * sizeof(T)));
  return p;
}

/// n elements of T in pinned (page-locked) host memory.
template <class T>
T* raw_pinned_array(std::size_t n) {
  T* p = nullptr;
#if defined(UNIMEM_BACKEND_HIP)
  RAW_CHECK(hipHostMalloc(reinterpret_cast<void**>(&p), n * sizeof(T), 0));
#else
  RAW_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p), n * sizeof(T)));
#endif
  return p;
}

/// Frees managed or device memory of any element type.
inline void raw_free_device(void* p) { RAW_CHECK(RAW(Free)(p)); }

/// Frees pinned host memory of any element type.
inline void raw_free_host(void* p) {
#if defined(UNIMEM_BACKEND_HIP)
  RAW_CHECK(hipHostFree(p));
#else
  RAW_CHECK(cudaFreeHost(p));
#endif
}

/// n floats of the current device's memory.
inline float* raw_device_floats(std::size_t n) { return raw_device_array<float>(n); }

/// n floats of pinned (page-locked) host memory.
inline float* raw_pinned_floats(std::size_t n) { return raw_pinned_array<float>(n); }

/// Frees managed or device memory.
inline void raw_free(std::initializer_list<float*> ps) {
  for (float* p : ps) raw_free_device(p);
}

/// Frees pinned host memory.
inline void raw_free_pinned(std::initializer_list<float*> ps) {
  for (float* p : ps) raw_free_host(p);
}

/// Prefetch with the form this runtime version has (device -1: the host).
inline void raw_prefetch(const void* p, std::size_t bytes, int device, raw_stream_t s) {
#if defined(UNIMEM_BACKEND_HIP)
#if HIP_VERSION_MAJOR > 7 || (HIP_VERSION_MAJOR == 7 && HIP_VERSION_MINOR >= 1)
  hipMemLocation loc{};
  loc.type = device < 0 ? hipMemLocationTypeHost : hipMemLocationTypeDevice;
  loc.id = device;
  RAW_CHECK(hipMemPrefetchAsync_v2(p, bytes, loc, 0, s));
#else
  RAW_CHECK(hipMemPrefetchAsync(p, bytes, device < 0 ? hipCpuDeviceId : device, s));
#endif
#else
#if CUDART_VERSION >= 12020
  cudaMemLocation loc{};
  loc.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  loc.id = device < 0 ? cudaCpuDeviceId : device;
#if CUDART_VERSION >= 13000
  RAW_CHECK(cudaMemPrefetchAsync(p, bytes, loc, 0, s));
#else
  RAW_CHECK(cudaMemPrefetchAsync_v2(p, bytes, loc, 0, s));
#endif
#else
  RAW_CHECK(cudaMemPrefetchAsync(p, bytes, device < 0 ? cudaCpuDeviceId : device, s));
#endif
#endif
}

/// Advice with the form this runtime version has.
template <class Advice>
inline void raw_advise(const void* p, std::size_t bytes, Advice a, int device) {
#if defined(UNIMEM_BACKEND_HIP)
#if HIP_VERSION_MAJOR > 7 || (HIP_VERSION_MAJOR == 7 && HIP_VERSION_MINOR >= 1)
  hipMemLocation loc{};
  loc.type = device < 0 ? hipMemLocationTypeHost : hipMemLocationTypeDevice;
  loc.id = device;
  RAW_CHECK(hipMemAdvise_v2(p, bytes, a, loc));
#else
  RAW_CHECK(hipMemAdvise(p, bytes, a, device < 0 ? hipCpuDeviceId : device));
#endif
#else
#if CUDART_VERSION >= 12020
  cudaMemLocation loc{};
  loc.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  loc.id = device < 0 ? cudaCpuDeviceId : device;
#if CUDART_VERSION >= 13000
  RAW_CHECK(cudaMemAdvise(p, bytes, a, loc));
#else
  RAW_CHECK(cudaMemAdvise_v2(p, bytes, a, loc));
#endif
#else
  RAW_CHECK(cudaMemAdvise(p, bytes, a, device < 0 ? cudaCpuDeviceId : device));
#endif
#endif
}

/// Whether the contexts of GPU `device` are shared through NVIDIA's Multi-Process Service:
/// 1 on, 0 off, -1 not known (HIP, CUDA before 12.4, or the runtime did not answer). Without
/// MPS, processes that share a GPU time-share it context by context, which changes what MPI
/// ranks on one GPU measure (scripts/probes/halo_mpi.cu).
inline int raw_mps_enabled(int device) {
#if !defined(UNIMEM_BACKEND_HIP) && defined(CUDART_VERSION) && CUDART_VERSION >= 12040
  int on = 0;
  if (cudaDeviceGetAttribute(&on, cudaDevAttrMpsEnabled, device) == cudaSuccess) return on != 0;
  (void)cudaGetLastError();
#else
  (void)device;
#endif
  return -1;
}
