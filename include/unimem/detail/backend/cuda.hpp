// unimem: the native CUDA backend (nvcc, no HIP needed).
// Every cuda* name unimem uses is here; the rest of the library calls these wrappers.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#include <cuda_runtime_api.h>
#endif

#include <type_traits>

#include "common.hpp"

#include "cuda_driver.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {

using status = cudaError_t;
using result = basic_result<status>;
static_assert(std::is_same<stream_handle, cudaStream_t>::value &&
                  std::is_same<event_handle, cudaEvent_t>::value,
              "unimem: handles.hpp no longer matches the CUDA runtime's handle types");

constexpr status success = cudaSuccess;
constexpr status error_invalid_device = cudaErrorInvalidDevice;
constexpr status error_invalid_value = cudaErrorInvalidValue;
constexpr status error_not_supported = cudaErrorNotSupported;
constexpr status error_out_of_memory = cudaErrorMemoryAllocation;
constexpr status error_not_ready = cudaErrorNotReady;
constexpr status error_unknown = cudaErrorUnknown;

inline const char* name() noexcept { return "CUDA"; }
/// What report() puts before the runtime's version: the runtime underneath, where it is not the
/// backend's own.
inline const char* runtime_label() noexcept { return ""; }

inline const char* error_name(status s) noexcept { return cudaGetErrorName(s); }
inline const char* error_string(status s) noexcept { return cudaGetErrorString(s); }
/// Reads and resets the runtime's last error (a sticky error stays).
inline status take_last_error() noexcept { return cudaGetLastError(); }
/// Reads the runtime's last error without resetting it.
inline status peek_last_error() noexcept { return cudaPeekAtLastError(); }
/// Clears the last error when it is `s`, the status a call of ours just returned (see
/// cuda_driver::forget_if_last): never an error the caller's own calls left pending.
inline void forget_if_last(status s) noexcept { cuda_driver::forget_if_last(s); }
/// True for the statuses that mean "this machine has no usable GPU" rather than a fault.
inline bool means_no_gpu(status s) noexcept {
  return s == cudaErrorNoDevice || s == cudaErrorInsufficientDriver;
}

/// True for the errors that leave the GPU context unusable ("sticky"): every later call
/// returns them again, and only a new process recovers.
inline bool is_sticky(status s) noexcept {
  return s == cudaErrorIllegalAddress || s == cudaErrorLaunchFailure || s == cudaErrorAssert ||
         s == cudaErrorHardwareStackError || s == cudaErrorIllegalInstruction ||
         s == cudaErrorMisalignedAddress || s == cudaErrorInvalidAddressSpace ||
         s == cudaErrorInvalidPc ||
         s == cudaErrorLaunchTimeout;
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
    case device_attribute::max_grid_dim_y: native = cudaDevAttrMaxGridDimY; break;
    case device_attribute::max_grid_dim_z: native = cudaDevAttrMaxGridDimZ; break;
    case device_attribute::max_block_dim_x: native = cudaDevAttrMaxBlockDimX; break;
    case device_attribute::max_block_dim_y: native = cudaDevAttrMaxBlockDimY; break;
    case device_attribute::max_block_dim_z: native = cudaDevAttrMaxBlockDimZ; break;
    case device_attribute::managed_memory: native = cudaDevAttrManagedMemory; break;
    case device_attribute::concurrent_managed_access:
      native = cudaDevAttrConcurrentManagedAccess;
      break;
    case device_attribute::pageable_memory_access:
      native = cudaDevAttrPageableMemoryAccess;
      break;
    // Both in every CUDA unimem supports (11.8 to 13.0).
    case device_attribute::pageable_memory_access_uses_host_page_tables:
      native = cudaDevAttrPageableMemoryAccessUsesHostPageTables;
      break;
    case device_attribute::integrated: native = cudaDevAttrIntegrated; break;
    case device_attribute::compute_mode: native = cudaDevAttrComputeMode; break;
    // Attributes, not cudaDeviceProp fields: CUDA 13 removed cudaDeviceProp::memoryClockRate.
    case device_attribute::memory_clock_khz: native = cudaDevAttrMemoryClockRate; break;
    case device_attribute::memory_bus_width_bits: native = cudaDevAttrGlobalMemoryBusWidth; break;
  }
  return UNIMEM_DETAIL_NATIVE(cudaDeviceGetAttribute(value, native, id));
}

UNIMEM_DETAIL_OUTLINE result get_properties(native_properties& out, int id)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  cudaDeviceProp p{};
  const result r = UNIMEM_DETAIL_NATIVE(cudaGetDeviceProperties(&p, id));
  if (r.code != success) return r;
  copy_name(out.name, p.name);
  sm_name(out.architecture, p.major, p.minor);
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

/// Whether managed pages migrate only with XNACK: never on CUDA, where pages migrate exactly
/// where concurrentManagedAccess is 1 (Pascal and later, on Linux).
constexpr bool migration_needs_xnack = false;
/// Whether XNACK is on: an AMD notion, false on CUDA.
inline bool xnack_enabled(const native_properties&) noexcept { return false; }

inline result runtime_version(int* v) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaRuntimeGetVersion(v));
}
inline result driver_version(int* v) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaDriverGetVersion(v));
}
/// Formats a version number as the runtime reports it: major * 1000 + minor * 10.
inline version_text version_string(int v) noexcept { return cuda_version_string(v); }
/// The version of the headers this translation unit was compiled against.
inline version_text compiled_version() noexcept { return version_string(CUDART_VERSION); }
/// The runtime library's version as this build links it, for when the runtime cannot be asked
/// (CUDA 11 answers cudaRuntimeGetVersion only with a driver and a GPU).
inline int linked_runtime_version() noexcept { return CUDART_VERSION; }

inline result malloc_managed(void** p, std::size_t bytes, bool host_attached = false) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(
      cudaMallocManaged(p, bytes, host_attached ? cudaMemAttachHost : cudaMemAttachGlobal));
  UNIMEM_DETAIL_LEDGER(r.code == success && *p != nullptr, device_memory, 1);
  return r;
}
inline result free(void* p) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(p != nullptr, device_memory, cudaFree(p));
}

inline result launch_kernel(const void* kernel, extent3 grid, extent3 block, void** args,
                            std::size_t shared_bytes, stream_handle stream) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaLaunchKernel(kernel, dim3(grid.x, grid.y, grid.z),
                                               dim3(block.x, block.y, block.z), args,
                                               shared_bytes, stream));
}

/// The runtime's occupancy calculator for `kernel` (a __global__ function pointer) on the
/// current device: the block size of the highest occupancy (at most block_limit threads; 0: no
/// limit) with shared_bytes of dynamic shared memory per block, and the fewest blocks that
/// reach it on every multiprocessor. cudaOccupancyMaxPotentialBlockSize is a template of
/// cuda_runtime.h, which only translation units compiled as CUDA include.
template <class Kernel>
result max_potential_block_size(int* min_grid, int* block, Kernel kernel,
                                std::size_t shared_bytes, int block_limit) noexcept {
#if defined(__CUDACC__)
  return UNIMEM_DETAIL_NATIVE(
      cudaOccupancyMaxPotentialBlockSize(min_grid, block, kernel, shared_bytes, block_limit));
#else
  static_assert(sizeof(Kernel) == 0,
                "unimem::max_potential_block_size needs the CUDA compiler: compile this file as "
                "CUDA (nvcc; unimem_gpu_target() in CMake)");
  (void)min_grid, (void)block, (void)kernel, (void)shared_bytes, (void)block_limit;
  return {cudaErrorNotSupported, "cudaOccupancyMaxPotentialBlockSize"};
#endif
}

/// The calling thread's default stream (cudaStreamPerThread): ordered with the legacy default
/// stream only, never with other threads' streams.
inline stream_handle per_thread_stream() noexcept { return cudaStreamPerThread; }

inline result stream_synchronize(stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaStreamSynchronize(s));
}

/// The device a stream belongs to. The default streams (null, legacy, per-thread) belong to the
/// current device. error_not_supported (no runtime call left behind) when the runtime and
/// driver cannot say.
inline result stream_device(stream_handle s, int* id) noexcept {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return get_device(id);
#if CUDART_VERSION >= 12080
  const result r = UNIMEM_DETAIL_NATIVE(cudaStreamGetDevice(s, id));
  if (r.code != cudaErrorCallRequiresNewerDriver && r.code != cudaErrorNotSupported) return r;
  forget_if_last(r.code);
#endif
  UNIMEM_DETAIL_INJECTION_POINT("cuStreamGetCtx + cuCtxGetDevice");
  if (cuda_driver::stream_device(s, id)) return {cudaSuccess, "cuStreamGetCtx + cuCtxGetDevice"};
  return {cudaErrorNotSupported, "cudaStreamGetDevice (not in this runtime or driver)"};
}

/// 1 when device `id` has a context (it may be running work), 0 when it has none, -1 unknown.
inline int context_active(int id) noexcept {
  if (UNIMEM_DETAIL_FAULT_FIRES("cuDevicePrimaryCtxGetState")) return -1;  // "unknown"
  return cuda_driver::primary_context_active(id);
}
inline result stream_query(stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaStreamQuery(s));
}

// ---- data placement (managed memory) ----
// CUDA < 12.2 takes an int device (cudaCpuDeviceId for the host); 12.2 to 12.9 add the *_v2
// calls with cudaMemLocation; CUDA 13 keeps only the cudaMemLocation form. Chosen here, once.
#if CUDART_VERSION >= 12020
inline cudaMemLocation to_native(native_location l) noexcept {
  cudaMemLocation n{};
  n.type = l.host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  n.id = l.host ? cudaCpuDeviceId : l.id;
  return n;
}
#else
inline int to_native(native_location l) noexcept { return l.host ? cudaCpuDeviceId : l.id; }
#endif

/// The form of the placement calls this build uses, for reports.
inline const char* placement_api() noexcept {
#if CUDART_VERSION >= 13000
  return "cudaMemPrefetchAsync/cudaMemAdvise (cudaMemLocation)";
#elif CUDART_VERSION >= 12020
  return "cudaMemPrefetchAsync_v2/cudaMemAdvise_v2 (cudaMemLocation)";
#else
  return "cudaMemPrefetchAsync/cudaMemAdvise (int device, cudaCpuDeviceId)";
#endif
}

inline result prefetch(const void* p, std::size_t bytes, native_location l,
                       stream_handle s) noexcept {
#if CUDART_VERSION >= 13000
  return UNIMEM_DETAIL_NATIVE(cudaMemPrefetchAsync(p, bytes, to_native(l), 0, s));
#elif CUDART_VERSION >= 12020
  return UNIMEM_DETAIL_NATIVE(cudaMemPrefetchAsync_v2(p, bytes, to_native(l), 0, s));
#else
  return UNIMEM_DETAIL_NATIVE(cudaMemPrefetchAsync(p, bytes, to_native(l), s));
#endif
}

inline result advise(const void* p, std::size_t bytes, mem_advice a, native_location l) noexcept {
  cudaMemoryAdvise native = cudaMemAdviseSetReadMostly;
  switch (a) {
    case mem_advice::set_read_mostly: native = cudaMemAdviseSetReadMostly; break;
    case mem_advice::unset_read_mostly: native = cudaMemAdviseUnsetReadMostly; break;
    case mem_advice::set_preferred_location: native = cudaMemAdviseSetPreferredLocation; break;
    case mem_advice::unset_preferred_location: native = cudaMemAdviseUnsetPreferredLocation; break;
    case mem_advice::set_accessed_by: native = cudaMemAdviseSetAccessedBy; break;
    case mem_advice::unset_accessed_by: native = cudaMemAdviseUnsetAccessedBy; break;
  }
#if CUDART_VERSION >= 13000
  return UNIMEM_DETAIL_NATIVE(cudaMemAdvise(p, bytes, native, to_native(l)));
#elif CUDART_VERSION >= 12020
  return UNIMEM_DETAIL_NATIVE(cudaMemAdvise_v2(p, bytes, native, to_native(l)));
#else
  result r = UNIMEM_DETAIL_NATIVE(cudaMemAdvise(p, bytes, native, to_native(l)));
  // CUDA 11 runtimes: cudaMemAdvise as the first call on a device whose context is not made yet
  // fails with cudaErrorContextIsDestroyed (seen with 11.8, driver 580): make it and advise again.
  if (r.code == cudaErrorContextIsDestroyed) {
    forget_if_last(r.code);
    forget_if_last(cudaFree(nullptr));
    r = UNIMEM_DETAIL_NATIVE(cudaMemAdvise(p, bytes, native, to_native(l)));
  }
  return r;
#endif
}

/// The runtime's name of a range attribute.
inline cudaMemRangeAttribute native_range_attribute(range_attribute a) noexcept {
  switch (a) {
    case range_attribute::read_mostly: return cudaMemRangeAttributeReadMostly;
    case range_attribute::preferred_location: return cudaMemRangeAttributePreferredLocation;
    case range_attribute::accessed_by: return cudaMemRangeAttributeAccessedBy;
    case range_attribute::last_prefetch_location: return cudaMemRangeAttributeLastPrefetchLocation;
  }
  return cudaMemRangeAttributeReadMostly;
}

/// Reads an int attribute (an array of `count` ints for accessed_by) of [p, p + bytes).
inline result range_attribute_ints(int* out, std::size_t count, range_attribute a, const void* p,
                                   std::size_t bytes) noexcept {
  return UNIMEM_DETAIL_NATIVE(
      cudaMemRangeGetAttribute(out, count * sizeof(int), native_range_attribute(a), p, bytes));
}

/// Reads two int attributes of [p, p + bytes) in one runtime call (a query costs about 0.2 us,
/// which unimem::mpi pays per managed message).
inline result range_attribute_int_pair(int* a_out, range_attribute a, int* b_out,
                                       range_attribute b, const void* p,
                                       std::size_t bytes) noexcept {
  void* data[2] = {a_out, b_out};
  std::size_t sizes[2] = {sizeof(int), sizeof(int)};
  cudaMemRangeAttribute natives[2] = {native_range_attribute(a), native_range_attribute(b)};
  return UNIMEM_DETAIL_NATIVE(cudaMemRangeGetAttributes(data, sizes, natives, 2, p, bytes));
}

/// Attaches a managed allocation to a stream: bytes is 0 or the whole allocation (the runtime
/// refuses a part of one).
inline result stream_attach(stream_handle s, void* p, std::size_t bytes, attach_kind k) noexcept {
  const unsigned flags = k == attach_kind::global ? cudaMemAttachGlobal
                         : k == attach_kind::host ? cudaMemAttachHost
                                                  : cudaMemAttachSingle;
  return UNIMEM_DETAIL_NATIVE(cudaStreamAttachMemAsync(s, p, bytes, flags));
}

inline result memset_async(void* p, int value, std::size_t bytes, stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaMemsetAsync(p, value, bytes, s));
}
/// `count` 16-bit words at p (2-byte aligned) set to value, in stream order; error_not_supported
/// (nothing queued) where the driver's memset cannot be reached.
inline result memset16_async(void* p, unsigned short value, std::size_t count,
                             stream_handle s) noexcept {
  UNIMEM_DETAIL_INJECTION_POINT("cuMemsetD16Async");
  return cuda_driver::word_memset_result(cuda_driver::memset_d16_async(p, value, count, s), 16,
                                         cudaSuccess, cudaErrorInvalidValue, cudaErrorNotSupported);
}
/// Queues fn(data) on stream s: it runs on a runtime thread once the work before it is done,
/// and the work after it waits for it. fn must not call the runtime.
inline result launch_host_function(stream_handle s, host_function fn, void* data) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaLaunchHostFunc(s, fn, data));
}
/// Whether p points to host memory (pageable or pinned) or device-accessible memory (device,
/// managed); unknown when the runtime cannot say (nothing left behind).
inline pointer_residence residence(const void* p) noexcept {
  if (UNIMEM_DETAIL_FAULT_FIRES("cudaPointerGetAttributes")) return pointer_residence::unknown;
  return cuda_driver::residence(p);
}
/// The kind of memory p points to; unknown when the runtime cannot say (nothing left behind).
inline pointer_memory memory_of(const void* p) noexcept {
  if (UNIMEM_DETAIL_FAULT_FIRES("cudaPointerGetAttributes")) return pointer_memory::unknown;
  return cuda_driver::memory_of(p);
}
/// `count` 32-bit words at p (4-byte aligned) set to value, in stream order.
inline result memset32_async(void* p, unsigned value, std::size_t count,
                             stream_handle s) noexcept {
  UNIMEM_DETAIL_INJECTION_POINT("cuMemsetD32Async");
  return cuda_driver::word_memset_result(cuda_driver::memset_d32_async(p, value, count, s), 32,
                                         cudaSuccess, cudaErrorInvalidValue, cudaErrorNotSupported);
}

inline result stream_create(stream_handle* s, bool non_blocking) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(
      cudaStreamCreateWithFlags(s, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault));
  UNIMEM_DETAIL_LEDGER(r.code == success && *s != nullptr, stream, 1);
  return r;
}
inline result stream_destroy(stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(s != nullptr, stream, cudaStreamDestroy(s));
}

// ---- explicit memory, copies, events ----
inline result malloc_device(void** p, std::size_t bytes) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(cudaMalloc(p, bytes));
  UNIMEM_DETAIL_LEDGER(r.code == success && *p != nullptr, device_memory, 1);
  return r;
}
inline result malloc_pinned(void** p, std::size_t bytes) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(cudaMallocHost(p, bytes));
  UNIMEM_DETAIL_LEDGER(r.code == success && *p != nullptr, pinned_memory, 1);
  return r;
}
inline result free_pinned(void* p) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(p != nullptr, pinned_memory, cudaFreeHost(p));
}

inline cudaMemcpyKind to_native(copy_kind k) noexcept {
  switch (k) {
    case copy_kind::host_to_host: return cudaMemcpyHostToHost;
    case copy_kind::host_to_device: return cudaMemcpyHostToDevice;
    case copy_kind::device_to_host: return cudaMemcpyDeviceToHost;
    case copy_kind::device_to_device: return cudaMemcpyDeviceToDevice;
    case copy_kind::infer: break;
  }
  return cudaMemcpyDefault;
}
inline result memcpy(void* dst, const void* src, std::size_t bytes, copy_kind k) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaMemcpy(dst, src, bytes, to_native(k)));
}
inline result memcpy_async(void* dst, const void* src, std::size_t bytes, copy_kind k,
                           stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaMemcpyAsync(dst, src, bytes, to_native(k), s));
}

inline result event_create(event_handle* e, bool timing) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(
      cudaEventCreateWithFlags(e, timing ? cudaEventDefault : cudaEventDisableTiming));
  UNIMEM_DETAIL_LEDGER(r.code == success && *e != nullptr, event, 1);
  return r;
}
inline result event_destroy(event_handle e) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(e != nullptr, event, cudaEventDestroy(e));
}
inline result event_record(event_handle e, stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaEventRecord(e, s));
}
inline result event_synchronize(event_handle e) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaEventSynchronize(e));
}
inline result event_query(event_handle e) noexcept { return UNIMEM_DETAIL_NATIVE(cudaEventQuery(e)); }
inline result event_elapsed_ms(float* ms, event_handle start, event_handle end) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaEventElapsedTime(ms, start, end));
}
inline result stream_wait_event(stream_handle s, event_handle e) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaStreamWaitEvent(s, e, 0));
}

// ---- managed memory pools (managed_pool.hpp) ----
// The runtime's stream-ordered pool of managed memory: cudaMemPoolCreate with
// cudaMemAllocationTypeManaged, from CUDA 13 (runtime and driver). Older headers have no such
// allocation type: creation answers error_not_supported without a runtime call, and
// managed_pool uses its caching allocator over cudaMallocManaged instead (the calls below whose
// names say "block" and "free_event").

/// 1 where this build has the runtime's managed pool (the calls below); managed_pool.hpp compiles
/// its runtime-pool policy only then.
#if CUDART_VERSION >= 13000
#define UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL 1
#else
#define UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL 0
#endif

/// The runtime's memory-pool handle.
using mem_pool_handle = cudaMemPool_t;

/// True for the statuses with which a runtime, driver or device refuses a managed pool: the
/// caching allocator serves instead.
inline bool refuses_managed_pool(status s) noexcept {
  return s == cudaErrorNotSupported || s == cudaErrorInvalidValue ||
         s == cudaErrorCallRequiresNewerDriver;
}

/// Creates a pool of managed memory with no preferred location (its allocations are ordinary
/// managed memory, as cudaMallocManaged's), releasing nothing at synchronisation points until
/// managed_pool sets its threshold.
inline result managed_pool_create(mem_pool_handle* pool) noexcept {
#if CUDART_VERSION >= 13000
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypeManaged;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeNone;
  props.location.id = 0;
  const result r = UNIMEM_DETAIL_NATIVE(cudaMemPoolCreate(pool, &props));
  UNIMEM_DETAIL_LEDGER(r.code == success && *pool != nullptr, memory_pool, 1);
  return r;
#else
  (void)pool;
  return {cudaErrorNotSupported,
          "cudaMemPoolCreate(cudaMemAllocationTypeManaged) (needs CUDA 13 or later)"};
#endif
}
inline result managed_pool_destroy(mem_pool_handle pool) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(pool != nullptr, memory_pool, cudaMemPoolDestroy(pool));
}
/// The bytes the pool keeps across synchronisation points (cudaMemPoolAttrReleaseThreshold).
inline result managed_pool_set_release_threshold(mem_pool_handle pool,
                                                 unsigned long long bytes) noexcept {
  return UNIMEM_DETAIL_NATIVE(
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes));
}
/// The bytes the pool holds from the system (cudaMemPoolAttrReservedMemCurrent).
inline result managed_pool_reserved(mem_pool_handle pool, unsigned long long* bytes) noexcept {
  return UNIMEM_DETAIL_NATIVE(
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, bytes));
}
/// Returns the pool's unused memory to the system until it holds at most `keep` bytes.
inline result managed_pool_trim(mem_pool_handle pool, std::size_t keep) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaMemPoolTrimTo(pool, keep));
}
/// Allocates from the pool in the order of stream s.
inline result malloc_from_pool(void** p, std::size_t bytes, mem_pool_handle pool,
                               stream_handle s) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(cudaMallocFromPoolAsync(p, bytes, pool, s));
  UNIMEM_DETAIL_LEDGER(r.code == success && *p != nullptr, device_memory, 1);
  return r;
}
/// Frees a pool allocation in the order of stream s.
inline result free_async(void* p, stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(p != nullptr, device_memory, cudaFreeAsync(p, s));
}
/// A block of the caching allocator: managed memory attached globally.
inline result pool_block_malloc(void** block, std::size_t bytes) noexcept {
  const result r = UNIMEM_DETAIL_NATIVE(cudaMallocManaged(block, bytes, cudaMemAttachGlobal));
  UNIMEM_DETAIL_LEDGER(r.code == success && *block != nullptr, device_memory, 1);
  return r;
}
/// Frees a block of the caching allocator (cudaFree waits for the device first).
inline result pool_block_free(void* block) noexcept {
  return UNIMEM_DETAIL_NATIVE_RELEASE(block != nullptr, device_memory, cudaFree(block));
}
/// The event a block's frees are recorded on (ordering only, no timing).
inline result pool_event_create(event_handle* free_event) noexcept {
  const result r =
      UNIMEM_DETAIL_NATIVE(cudaEventCreateWithFlags(free_event, cudaEventDisableTiming));
  UNIMEM_DETAIL_LEDGER(r.code == success && *free_event != nullptr, event, 1);
  return r;
}
/// Records the point of a block's free on stream s.
inline result pool_event_record(event_handle free_event, stream_handle s) noexcept {
  return UNIMEM_DETAIL_NATIVE(cudaEventRecord(free_event, s));
}

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
