// unimem: the HIP backend (AMD ROCm, or HIP on NVIDIA over the CUDA runtime).
// Every hip* name unimem uses is here; the rest of the library calls these wrappers.
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

#include <cstdint>
#include <new>
#include <type_traits>

#include "common.hpp"

#if defined(UNIMEM_DETAIL_HIP_NVIDIA)
#include "cuda_driver.hpp"
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {

using status = hipError_t;
using result = basic_result<status>;
static_assert(std::is_same<stream_handle, hipStream_t>::value &&
                  std::is_same<event_handle, hipEvent_t>::value,
              "unimem: handles.hpp no longer matches HIP's handle types");

constexpr status success = hipSuccess;
constexpr status error_invalid_device = hipErrorInvalidDevice;
constexpr status error_invalid_value = hipErrorInvalidValue;
constexpr status error_not_supported = hipErrorNotSupported;
constexpr status error_out_of_memory = hipErrorOutOfMemory;
constexpr status error_not_ready = hipErrorNotReady;
constexpr status error_unknown = hipErrorUnknown;

#if defined(UNIMEM_DETAIL_HIP_AMD)
inline const char* name() noexcept { return "HIP (AMD)"; }
inline const char* runtime_label() noexcept { return ""; }
#else
inline const char* name() noexcept { return "HIP (NVIDIA)"; }
/// HIP on NVIDIA runs over the CUDA runtime: its version is the one report() shows.
inline const char* runtime_label() noexcept { return "CUDA "; }
#endif

inline const char* error_name(status s) noexcept { return hipGetErrorName(s); }
inline const char* error_string(status s) noexcept { return hipGetErrorString(s); }
/// Reads and resets the runtime's last error (a sticky error stays).
inline status take_last_error() noexcept { return hipGetLastError(); }
/// Reads the runtime's last error without resetting it.
inline status peek_last_error() noexcept { return hipPeekAtLastError(); }
/// Clears the last error when it is `s`, the status a call of ours just returned: never an
/// error the caller's own calls left pending.
inline void forget_if_last(status s) noexcept {
  if (s != success && peek_last_error() == s) (void)take_last_error();
}
/// True for the statuses that mean "this machine has no usable GPU" rather than a fault.
inline bool means_no_gpu(status s) noexcept {
  return s == hipErrorNoDevice || s == hipErrorInsufficientDriver;
}

/// True for the errors that leave the GPU context unusable ("sticky"): every later call
/// returns them again, and only a new process recovers.
inline bool is_sticky(status s) noexcept {
  return s == hipErrorIllegalAddress || s == hipErrorLaunchFailure || s == hipErrorAssert ||
         s == hipErrorLaunchTimeOut;
}

inline result device_count(int* n) noexcept { return UNIMEM_DETAIL_NATIVE(hipGetDeviceCount(n)); }
inline result set_device(int id) noexcept { return UNIMEM_DETAIL_NATIVE(hipSetDevice(id)); }
inline result get_device(int* id) noexcept { return UNIMEM_DETAIL_NATIVE(hipGetDevice(id)); }
inline result device_synchronize() noexcept {
  return UNIMEM_DETAIL_NATIVE(hipDeviceSynchronize());
}
inline result mem_get_info(std::size_t* free, std::size_t* total) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipMemGetInfo(free, total));
}

inline result get_attribute(int* value, device_attribute a, int id) noexcept {
  hipDeviceAttribute_t native = hipDeviceAttributeWarpSize;
  switch (a) {
    case device_attribute::warp_size: native = hipDeviceAttributeWarpSize; break;
    case device_attribute::multiprocessors: native = hipDeviceAttributeMultiprocessorCount; break;
    case device_attribute::max_threads_per_block:
      native = hipDeviceAttributeMaxThreadsPerBlock;
      break;
    case device_attribute::max_shared_memory_per_block:
      native = hipDeviceAttributeMaxSharedMemoryPerBlock;
      break;
    case device_attribute::max_grid_dim_x: native = hipDeviceAttributeMaxGridDimX; break;
    case device_attribute::max_grid_dim_y: native = hipDeviceAttributeMaxGridDimY; break;
    case device_attribute::max_grid_dim_z: native = hipDeviceAttributeMaxGridDimZ; break;
    case device_attribute::max_block_dim_x: native = hipDeviceAttributeMaxBlockDimX; break;
    case device_attribute::max_block_dim_y: native = hipDeviceAttributeMaxBlockDimY; break;
    case device_attribute::max_block_dim_z: native = hipDeviceAttributeMaxBlockDimZ; break;
    case device_attribute::managed_memory: native = hipDeviceAttributeManagedMemory; break;
    case device_attribute::concurrent_managed_access:
      native = hipDeviceAttributeConcurrentManagedAccess;
      break;
    case device_attribute::pageable_memory_access:
      native = hipDeviceAttributePageableMemoryAccess;
      break;
    // Both in every HIP unimem supports (checked in the headers of 5.2, 5.7.1, 6.4.3 and
    // 7.2.4). On AMD the runtime answers them from hipDeviceProp_t's integrated and
    // pageableMemoryAccessUsesHostPageTables (not yet run on an AMD GPU); on NVIDIA HIP maps
    // them onto cudaDevAttrIntegrated and cudaDevAttrPageableMemoryAccessUsesHostPageTables.
    case device_attribute::pageable_memory_access_uses_host_page_tables:
      native = hipDeviceAttributePageableMemoryAccessUsesHostPageTables;
      break;
    case device_attribute::integrated: native = hipDeviceAttributeIntegrated; break;
    case device_attribute::compute_mode: native = hipDeviceAttributeComputeMode; break;
    case device_attribute::memory_clock_khz: native = hipDeviceAttributeMemoryClockRate; break;
    case device_attribute::memory_bus_width_bits: native = hipDeviceAttributeMemoryBusWidth; break;
  }
  return UNIMEM_DETAIL_NATIVE(hipDeviceGetAttribute(value, native, id));
}

UNIMEM_DETAIL_OUTLINE result get_properties(native_properties& out, int id)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  hipDeviceProp_t p{};
  const result r = UNIMEM_DETAIL_NATIVE(hipGetDeviceProperties(&p, id));
  if (r.code != success) return r;
  copy_name(out.name, p.name);
#if defined(UNIMEM_DETAIL_HIP_AMD)
  copy_name(out.architecture, p.gcnArchName);
#else
  sm_name(out.architecture, p.major, p.minor);
#endif
  out.total_memory = p.totalGlobalMem;
  out.major = p.major;
  out.minor = p.minor;
  out.pci_domain = p.pciDomainID;
  out.pci_bus = p.pciBusID;
  out.pci_device = p.pciDeviceID;
  return r;
}
#else
    ;
#endif

/// Whether managed pages migrate only with XNACK (page-fault retry). On AMD,
/// concurrentManagedAccess reads 1 even where pages never migrate: migration needs XNACK,
/// visible as xnack+ in the architecture or as pageable memory access (regime_attributes).
/// HIP on NVIDIA: concurrentManagedAccess, as in CUDA.
#if defined(UNIMEM_DETAIL_HIP_AMD)
constexpr bool migration_needs_xnack = true;
#else
constexpr bool migration_needs_xnack = false;
#endif
/// Whether XNACK is on: xnack+ in the AMD target (e.g. gfx90a:sramecc+:xnack+, under
/// HSA_XNACK=1); false on NVIDIA.
inline bool xnack_enabled(const native_properties& p) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return std::strstr(p.architecture, "xnack+") != nullptr;
#else
  (void)p;
  return false;
#endif
}

inline result runtime_version(int* v) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipRuntimeGetVersion(v));
}
inline result driver_version(int* v) noexcept { return UNIMEM_DETAIL_NATIVE(hipDriverGetVersion(v)); }
/// Formats a version number as the runtime reports it.
inline version_text version_string(int v) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  // HIP_VERSION layout: major * 10'000'000 + minor * 100'000 + patch.
  version_text t;
  t.append(v / 10000000).append(".").append(v / 100000 % 100).append(".").append(v % 100000);
  return t;
#else
  // On NVIDIA the CUDA layout: major * 1000 + minor * 10.
  return cuda_version_string(v);
#endif
}
/// The version of the headers this translation unit was compiled against.
inline version_text compiled_version() noexcept {
  version_text t;
  t.append(HIP_VERSION_MAJOR).append(".").append(HIP_VERSION_MINOR).append(".").append(
      HIP_VERSION_PATCH);
  return t;
}
/// The runtime library's version as this build links it, for when the runtime cannot be asked
/// (on NVIDIA the CUDA runtime underneath, which answers only with a driver and a GPU).
inline int linked_runtime_version() noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return HIP_VERSION;
#else
  return CUDART_VERSION;
#endif
}

inline result malloc_managed(void** p, std::size_t bytes, bool host_attached = false) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(
      hipMallocManaged(p, bytes, host_attached ? hipMemAttachHost : hipMemAttachGlobal));
  UNIMEM_DETAIL_LEDGER(r.code == success && *p != nullptr, device_memory, 1);
  return r;
}
inline result free(void* p) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(p != nullptr, device_memory, hipFree(p));
}

inline result launch_kernel(const void* kernel, extent3 grid, extent3 block, void** args,
                            std::size_t shared_bytes, stream_handle stream) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  // An AMD dispatch packet counts work-items, not blocks, in 32 bits per dimension.
  constexpr std::uint64_t max_items = 0xffffffffu;
  if (std::uint64_t{grid.x} * block.x > max_items || std::uint64_t{grid.y} * block.y > max_items ||
      std::uint64_t{grid.z} * block.z > max_items) {
    return {hipErrorInvalidConfiguration,
            "hipLaunchKernel: grid * block exceeds 2^32 - 1 work-items in one dimension, the "
            "AMD limit; use a grid-stride loop"};
  }
#endif
  return UNIMEM_DETAIL_NATIVE(hipLaunchKernel(kernel, dim3(grid.x, grid.y, grid.z),
                                              dim3(block.x, block.y, block.z), args, shared_bytes,
                                              stream));
}

/// The runtime's occupancy calculator for `kernel` (a __global__ function pointer) on the
/// current device: the block size of the highest occupancy (at most block_limit threads; 0: no
/// limit) with shared_bytes of dynamic shared memory per block, and the fewest blocks that
/// reach it on every multiprocessor. On AMD the runtime's own function (what hipcc's template
/// calls); on NVIDIA the template over cudaOccupancyMaxPotentialBlockSize, which only
/// translation units compiled as HIP/CUDA have.
template <class Kernel>
result max_potential_block_size(int* min_grid, int* block, Kernel kernel,
                                std::size_t shared_bytes, int block_limit) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return UNIMEM_DETAIL_NATIVE(hipOccupancyMaxPotentialBlockSize(
      min_grid, block, reinterpret_cast<const void*>(kernel), shared_bytes, block_limit));
#elif defined(__CUDACC__)
  return UNIMEM_DETAIL_NATIVE(
      hipOccupancyMaxPotentialBlockSize(min_grid, block, kernel, shared_bytes, block_limit));
#else
  static_assert(sizeof(Kernel) == 0,
                "unimem::max_potential_block_size needs the kernel compiler on NVIDIA: compile "
                "this file with hipcc (unimem_gpu_target() in CMake)");
  (void)min_grid, (void)block, (void)kernel, (void)shared_bytes, (void)block_limit;
  return {hipErrorNotSupported, "hipOccupancyMaxPotentialBlockSize"};
#endif
}

/// The calling thread's default stream (hipStreamPerThread; cudaStreamPerThread over CUDA):
/// ordered with the legacy default stream only, never with other threads' streams.
inline stream_handle per_thread_stream() noexcept {
#if defined(UNIMEM_DETAIL_HIP_NVIDIA)
  return cudaStreamPerThread;
#else
  return hipStreamPerThread;
#endif
}

inline result stream_synchronize(stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipStreamSynchronize(s));
}

/// The device a stream belongs to; the null stream belongs to the current device.
/// error_not_supported (no runtime call left behind) when this HIP cannot say.
inline result stream_device(stream_handle s, int* id) noexcept {
  if (s == nullptr) return get_device(id);
#if defined(UNIMEM_DETAIL_HIP_NVIDIA)
  if (s == cudaStreamLegacy || s == cudaStreamPerThread) return get_device(id);
  UNIMEM_DETAIL_INJECTION_POINT("cuStreamGetCtx + cuCtxGetDevice");
  if (cuda_driver::stream_device(s, id)) return {hipSuccess, "cuStreamGetCtx + cuCtxGetDevice"};
  return {hipErrorNotSupported, "the device of a stream (driver entry points not available)"};
#elif HIP_VERSION >= 50600000  // hipStreamGetDevice arrived in ROCm 5.6
  if (s == hipStreamPerThread) return get_device(id);
  hipDevice_t d = 0;  // on AMD the device handle is the ordinal
  const result r = UNIMEM_DETAIL_NATIVE(hipStreamGetDevice(s, &d));
  if (r.code == success) *id = static_cast<int>(d);
  return r;
#else
  (void)id;
  return {hipErrorNotSupported, "hipStreamGetDevice (needs ROCm 5.6)"};
#endif
}

/// 1 when device `id` has a context (it may be running work), 0 when it has none, -1 unknown.
/// On AMD every device is initialised with the runtime, so synchronising one is cheap: -1.
inline int context_active(int id) noexcept {
#if defined(UNIMEM_DETAIL_HIP_NVIDIA)
  if (UNIMEM_DETAIL_FAULT_FIRES("cuDevicePrimaryCtxGetState")) return -1;  // "unknown"
  return cuda_driver::primary_context_active(id);
#else
  (void)id;
  return -1;
#endif
}
inline result stream_query(stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipStreamQuery(s));
}

// ---- data placement (managed memory) ----
// HIP < 7.1 takes an int device (hipCpuDeviceId for the host); HIP >= 7.1 adds the *_v2 calls
// with hipMemLocation, which unimem uses there. Chosen here, once.
#if HIP_VERSION_MAJOR > 7 || (HIP_VERSION_MAJOR == 7 && HIP_VERSION_MINOR >= 1)
#define UNIMEM_DETAIL_HIP_MEM_LOCATION 1
inline hipMemLocation to_native(native_location l) noexcept {
  hipMemLocation n{};
  n.type = l.host ? hipMemLocationTypeHost : hipMemLocationTypeDevice;
  n.id = l.host ? hipCpuDeviceId : l.id;
  return n;
}
#else
inline int to_native(native_location l) noexcept { return l.host ? hipCpuDeviceId : l.id; }
#endif

/// The form of the placement calls this build uses, for reports.
inline const char* placement_api() noexcept {
#if defined(UNIMEM_DETAIL_HIP_MEM_LOCATION)
  return "hipMemPrefetchAsync_v2/hipMemAdvise_v2 (hipMemLocation)";
#else
  return "hipMemPrefetchAsync/hipMemAdvise (int device, hipCpuDeviceId)";
#endif
}

inline result prefetch(const void* p, std::size_t bytes, native_location l,
                       stream_handle s) noexcept {
#if defined(UNIMEM_DETAIL_HIP_MEM_LOCATION)
  return UNIMEM_DETAIL_NATIVE(hipMemPrefetchAsync_v2(p, bytes, to_native(l), 0, s));
#else
  return UNIMEM_DETAIL_NATIVE(hipMemPrefetchAsync(p, bytes, to_native(l), s));
#endif
}

inline result advise(const void* p, std::size_t bytes, mem_advice a, native_location l) noexcept {
  hipMemoryAdvise native = hipMemAdviseSetReadMostly;
  switch (a) {
    case mem_advice::set_read_mostly: native = hipMemAdviseSetReadMostly; break;
    case mem_advice::unset_read_mostly: native = hipMemAdviseUnsetReadMostly; break;
    case mem_advice::set_preferred_location: native = hipMemAdviseSetPreferredLocation; break;
    case mem_advice::unset_preferred_location: native = hipMemAdviseUnsetPreferredLocation; break;
    case mem_advice::set_accessed_by: native = hipMemAdviseSetAccessedBy; break;
    case mem_advice::unset_accessed_by: native = hipMemAdviseUnsetAccessedBy; break;
  }
  auto call = [&] {
#if defined(UNIMEM_DETAIL_HIP_MEM_LOCATION)
    return UNIMEM_DETAIL_NATIVE(hipMemAdvise_v2(p, bytes, native, to_native(l)));
#else
    return UNIMEM_DETAIL_NATIVE(hipMemAdvise(p, bytes, native, to_native(l)));
#endif
  };
  result r = call();
#if defined(UNIMEM_DETAIL_HIP_NVIDIA) && CUDART_VERSION < 12000
  // CUDA 11 runtimes (11.8 on driver 580, two H200s, 2026-12-01): cudaMemAdvise as the first
  // call on a device made current by cudaSetDevice, whose context the runtime has not made yet,
  // fails with cudaErrorContextIsDestroyed. Make the context (hipFree(nullptr), the usual way)
  // and advise again; the failed call's status is not left for the caller to find.
  if (r.code == hipErrorContextIsDestroyed) {
    forget_if_last(r.code);
    forget_if_last(hipFree(nullptr));
    r = call();
  }
#endif
  return r;
}

/// The runtime's name of a range attribute.
inline hipMemRangeAttribute native_range_attribute(range_attribute a) noexcept {
  switch (a) {
    case range_attribute::read_mostly: return hipMemRangeAttributeReadMostly;
    case range_attribute::preferred_location: return hipMemRangeAttributePreferredLocation;
    case range_attribute::accessed_by: return hipMemRangeAttributeAccessedBy;
    case range_attribute::last_prefetch_location: return hipMemRangeAttributeLastPrefetchLocation;
  }
  return hipMemRangeAttributeReadMostly;
}

/// Reads an int attribute (an array of `count` ints for accessed_by) of [p, p + bytes).
inline result range_attribute_ints(int* out, std::size_t count, range_attribute a, const void* p,
                                   std::size_t bytes) noexcept {
  return UNIMEM_DETAIL_NATIVE(
      hipMemRangeGetAttribute(out, count * sizeof(int), native_range_attribute(a), p, bytes));
}

/// Reads two int attributes of [p, p + bytes) in one runtime call (a query costs about 0.2 us,
/// which unimem::mpi pays per managed message).
inline result range_attribute_int_pair(int* a_out, range_attribute a, int* b_out,
                                       range_attribute b, const void* p,
                                       std::size_t bytes) noexcept {
  void* data[2] = {a_out, b_out};
  std::size_t sizes[2] = {sizeof(int), sizeof(int)};
  hipMemRangeAttribute natives[2] = {native_range_attribute(a), native_range_attribute(b)};
  return UNIMEM_DETAIL_NATIVE(hipMemRangeGetAttributes(data, sizes, natives, 2, p, bytes));
}

/// Attaches a whole managed allocation to a stream (a no-op in HIP on AMD).
inline result stream_attach(stream_handle s, void* p, std::size_t bytes, attach_kind k) noexcept {
  const unsigned flags = k == attach_kind::global ? hipMemAttachGlobal
                         : k == attach_kind::host ? hipMemAttachHost
                                                  : hipMemAttachSingle;
  return UNIMEM_DETAIL_NATIVE(hipStreamAttachMemAsync(s, any_pointer{p}, bytes, flags));
}

inline result memset_async(void* p, int value, std::size_t bytes, stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipMemsetAsync(p, value, bytes, s));
}
/// `count` 16-bit words at p (2-byte aligned) set to value, in stream order; error_not_supported
/// (nothing queued) where the memset cannot be reached.
inline result memset16_async(void* p, unsigned short value, std::size_t count,
                             stream_handle s) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return UNIMEM_DETAIL_NATIVE(hipMemsetD16Async(any_pointer{p}, value, count, s));
#else  // HIP's own wrapper calls cuMemsetD16Async and would make every program link libcuda
  UNIMEM_DETAIL_INJECTION_POINT("cuMemsetD16Async");
  return cuda_driver::word_memset_result(cuda_driver::memset_d16_async(p, value, count, s), 16,
                                         hipSuccess, hipErrorInvalidValue, hipErrorNotSupported);
#endif
}
/// Queues fn(data) on stream s: it runs on a runtime thread once the work before it is done,
/// and the work after it waits for it. fn must not call the runtime.
#if defined(UNIMEM_DETAIL_HIP_AMD) && HIP_VERSION < 50300000
/// HIP before 5.3 declares hipLaunchHostFunc but its library does not define it: a stream
/// callback carries the host function instead.
struct host_call {
  host_function fn;
  void* data;
  static void run(hipStream_t, hipError_t, void* p) noexcept {
    const host_call call = *static_cast<host_call*>(p);
    delete static_cast<host_call*>(p);
    call.fn(call.data);
  }
};
#endif
inline result launch_host_function(stream_handle s, host_function fn, void* data) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD) && HIP_VERSION < 50300000
  host_call* call = new (std::nothrow) host_call{fn, data};
  if (call == nullptr) return {hipErrorOutOfMemory, "hipStreamAddCallback (no memory for the call)"};
  const result r = UNIMEM_DETAIL_NATIVE(hipStreamAddCallback(s, &host_call::run, call, 0));
  if (r.code != success) delete call;
  return r;
#elif defined(UNIMEM_DETAIL_HIP_AMD)
  return UNIMEM_DETAIL_NATIVE(hipLaunchHostFunc(s, fn, data));
#else  // HIP 5 on NVIDIA has no wrapper: the CUDA runtime underneath
  const cudaError_t r = cudaLaunchHostFunc(s, fn, data);
  return {r == cudaSuccess ? hipSuccess : hipErrorInvalidValue, "cudaLaunchHostFunc"};
#endif
}
/// Whether p points to host memory or device-accessible memory; unknown where this HIP cannot
/// say (on AMD the attribute layout changed between ROCm 5 and 6: not read).
inline pointer_residence residence(const void* p) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  (void)p;
  return pointer_residence::unknown;
#else
  if (UNIMEM_DETAIL_FAULT_FIRES("cudaPointerGetAttributes")) return pointer_residence::unknown;
  return cuda_driver::residence(p);
#endif
}
/// The kind of memory p points to; unknown when the runtime cannot say (nothing left behind).
/// On AMD through hipPointerGetAttribute (HIP >= 5.0), whose attribute values keep their names
/// across ROCm 5 to 7 (hipPointerGetAttributes' struct does not): HIP refuses pointers it does
/// not know, which is pageable host memory.
inline pointer_memory memory_of(const void* p) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  if (p == nullptr) return pointer_memory::unknown;
  int managed = 0;
  void* const ptr = const_cast<void*>(p);
  const result m =
      UNIMEM_DETAIL_NATIVE(hipPointerGetAttribute(&managed, HIP_POINTER_ATTRIBUTE_IS_MANAGED, ptr));
  if (m.code != success) {
    forget_if_last(m.code);
    return m.code == hipErrorInvalidValue ? pointer_memory::pageable : pointer_memory::unknown;
  }
  if (managed != 0) return pointer_memory::managed;
  unsigned int type = 0;
  const result t =
      UNIMEM_DETAIL_NATIVE(hipPointerGetAttribute(&type, HIP_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr));
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
/// `count` 32-bit words at p (4-byte aligned) set to value, in stream order.
inline result memset32_async(void* p, unsigned value, std::size_t count,
                             stream_handle s) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return UNIMEM_DETAIL_NATIVE(hipMemsetD32Async(any_pointer{p}, static_cast<int>(value), count, s));
#else
  UNIMEM_DETAIL_INJECTION_POINT("cuMemsetD32Async");
  return cuda_driver::word_memset_result(cuda_driver::memset_d32_async(p, value, count, s), 32,
                                         hipSuccess, hipErrorInvalidValue, hipErrorNotSupported);
#endif
}

inline result stream_create(stream_handle* s, bool non_blocking) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(
      hipStreamCreateWithFlags(s, non_blocking ? hipStreamNonBlocking : hipStreamDefault));
  UNIMEM_DETAIL_LEDGER(r.code == success && *s != nullptr, stream, 1);
  return r;
}
inline result stream_destroy(stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(s != nullptr, stream, hipStreamDestroy(s));
}

// ---- explicit memory, copies, events ----
inline result malloc_device(void** p, std::size_t bytes) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(hipMalloc(p, bytes));
  UNIMEM_DETAIL_LEDGER(r.code == success && *p != nullptr, device_memory, 1);
  return r;
}
inline result malloc_pinned(void** p, std::size_t bytes) noexcept {
  // hipHostMalloc is deprecated from HIP 6.4 on, where hipHostAlloc (as cudaHostAlloc) is the
  // current name; older HIP deprecates hipHostAlloc instead.
#if HIP_VERSION_MAJOR > 6 || (HIP_VERSION_MAJOR == 6 && HIP_VERSION_MINOR >= 4)
  const result r = UNIMEM_DETAIL_NATIVE(hipHostAlloc(p, bytes, 0));
#else
  const result r = UNIMEM_DETAIL_NATIVE(hipHostMalloc(p, bytes, 0));
#endif
  UNIMEM_DETAIL_LEDGER(r.code == success && *p != nullptr, pinned_memory, 1);
  return r;
}
inline result free_pinned(void* p) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(p != nullptr, pinned_memory, hipHostFree(p));
}

inline hipMemcpyKind to_native(copy_kind k) noexcept {
  switch (k) {
    case copy_kind::host_to_host: return hipMemcpyHostToHost;
    case copy_kind::host_to_device: return hipMemcpyHostToDevice;
    case copy_kind::device_to_host: return hipMemcpyDeviceToHost;
    case copy_kind::device_to_device: return hipMemcpyDeviceToDevice;
    case copy_kind::infer: break;
  }
  return hipMemcpyDefault;
}
inline result memcpy(void* dst, const void* src, std::size_t bytes, copy_kind k) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipMemcpy(dst, src, bytes, to_native(k)));
}
inline result memcpy_async(void* dst, const void* src, std::size_t bytes, copy_kind k,
                           stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipMemcpyAsync(dst, src, bytes, to_native(k), s));
}

inline result event_create(event_handle* e, bool timing) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(
      hipEventCreateWithFlags(e, timing ? hipEventDefault : hipEventDisableTiming));
  UNIMEM_DETAIL_LEDGER(r.code == success && *e != nullptr, event, 1);
  return r;
}
inline result event_destroy(event_handle e) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(e != nullptr, event, hipEventDestroy(e));
}
inline result event_record(event_handle e, stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipEventRecord(e, s));
}
inline result event_synchronize(event_handle e) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipEventSynchronize(e));
}
inline result event_query(event_handle e) noexcept { return UNIMEM_DETAIL_NATIVE(hipEventQuery(e)); }
inline result event_elapsed_ms(float* ms, event_handle start, event_handle end) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipEventElapsedTime(ms, start, end));
}
inline result stream_wait_event(stream_handle s, event_handle e) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipStreamWaitEvent(s, e, 0));
}

// ---- managed memory pools (managed_pool.hpp) ----
// HIP 5.2 to 7.0 (the versions unimem is built with) know pinned pools only
// (hipMemAllocationTypePinned); newer HIP headers declare hipMemAllocationTypeManaged, which no
// AMD GPU has run with unimem yet. So on HIP, on AMD and on NVIDIA, managed_pool uses its
// caching allocator over hipMallocManaged (the calls below whose names say "block" and
// "free_event"); the runtime-pool calls answer error_not_supported without a runtime call.

/// No runtime managed pool on HIP (managed_pool.hpp compiles only its caching allocator).
#define UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL 0

/// No runtime pool is used on HIP: an opaque handle that is never made.
using mem_pool_handle = void*;

/// True for the statuses with which a runtime, driver or device refuses a managed pool.
inline bool refuses_managed_pool(status s) noexcept {
  return s == hipErrorNotSupported || s == hipErrorInvalidValue;
}
inline result managed_pool_create(mem_pool_handle* pool) noexcept {
  *pool = nullptr;
  return {hipErrorNotSupported,
          "hipMemPoolCreate(hipMemAllocationTypeManaged) (not used on HIP: unimem's caching "
          "allocator serves)"};
}
inline result managed_pool_destroy(mem_pool_handle) noexcept {
  return {hipErrorNotSupported, "hipMemPoolDestroy (no managed pool on HIP)"};
}
inline result managed_pool_set_release_threshold(mem_pool_handle, unsigned long long) noexcept {
  return {hipErrorNotSupported, "hipMemPoolSetAttribute (no managed pool on HIP)"};
}
inline result managed_pool_reserved(mem_pool_handle, unsigned long long* bytes) noexcept {
  *bytes = 0;
  return {hipErrorNotSupported, "hipMemPoolGetAttribute (no managed pool on HIP)"};
}
inline result managed_pool_trim(mem_pool_handle, std::size_t) noexcept {
  return {hipErrorNotSupported, "hipMemPoolTrimTo (no managed pool on HIP)"};
}
inline result malloc_from_pool(void** p, std::size_t, mem_pool_handle, stream_handle) noexcept {
  *p = nullptr;
  return {hipErrorNotSupported, "hipMallocFromPoolAsync (no managed pool on HIP)"};
}
inline result free_async(void*, stream_handle) noexcept {
  return {hipErrorNotSupported, "hipFreeAsync (no managed pool on HIP)"};
}
/// A block of the caching allocator: managed memory attached globally.
inline result pool_block_malloc(void** block, std::size_t bytes) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(hipMallocManaged(block, bytes, hipMemAttachGlobal));
  UNIMEM_DETAIL_LEDGER(r.code == success && *block != nullptr, device_memory, 1);
  return r;
}
/// Frees a block of the caching allocator (hipFree waits for the device first).
inline result pool_block_free(void* block) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(block != nullptr, device_memory, hipFree(block));
}
/// The event a block's frees are recorded on (ordering only, no timing).
inline result pool_event_create(event_handle* free_event) noexcept {
  const result r =
      UNIMEM_DETAIL_NATIVE(hipEventCreateWithFlags(free_event, hipEventDisableTiming));
  UNIMEM_DETAIL_LEDGER(r.code == success && *free_event != nullptr, event, 1);
  return r;
}
/// Records the point of a block's free on stream s.
inline result pool_event_record(event_handle free_event, stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(hipEventRecord(free_event, s));
}

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
