// unimem: every runtime call, once, over the table (cuda.hpp, hip.hpp) config.hpp chose; its
// #ifs are what really differs between the runtimes. This folder alone names hip*/cuda* calls.
// UNIMEM_DETAIL_CALL(Free, p) calls cudaFree or hipFree; an error names it "cudaFree(p)".
#pragma once

#include "../../config.hpp"

#if defined(UNIMEM_BACKEND_HIP)
#include "hip.hpp"
#else
#include "cuda.hpp"
#endif
#include "common.hpp"
#if !defined(UNIMEM_DETAIL_HIP_AMD)  // NVIDIA: the CUDA runtime and driver underneath
#include "cuda_driver.hpp"
#endif

#include <cstdint>
#include <new>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
using status = UNIMEM_DETAIL_RT(Error_t);
/// The outcome of one runtime call: its native status and the call's source text.
struct result {
  status code;
  const char* call;
};
using native_device_properties = UNIMEM_DETAIL_RT_DEVICE_PROPERTIES;
using native_device_attribute = decltype(UNIMEM_DETAIL_ATTR(WarpSize));
static_assert(std::is_same<stream_handle, UNIMEM_DETAIL_RT(Stream_t)>::value &&
                  std::is_same<event_handle, UNIMEM_DETAIL_RT(Event_t)>::value,
              "unimem: handles.hpp no longer matches the runtime's handle types");

constexpr status success = UNIMEM_DETAIL_RT(Success);
constexpr status error_invalid_device = UNIMEM_DETAIL_RT(ErrorInvalidDevice);
constexpr status error_invalid_value = UNIMEM_DETAIL_RT(ErrorInvalidValue);
constexpr status error_not_supported = UNIMEM_DETAIL_RT(ErrorNotSupported);
constexpr status error_not_ready = UNIMEM_DETAIL_RT(ErrorNotReady);
constexpr status error_unknown = UNIMEM_DETAIL_RT(ErrorUnknown);
constexpr status error_out_of_memory = UNIMEM_DETAIL_RT_OUT_OF_MEMORY;

inline const char* name() noexcept { return UNIMEM_DETAIL_RT_BACKEND; }
/// What report() puts before the runtime's version: the runtime underneath, if not its own.
inline const char* runtime_label() noexcept { return UNIMEM_DETAIL_RT_UNDERNEATH; }
/// Device attributes unimem reads (each enumerator holds the runtime's value, as below).
enum class device_attribute : int {
  warp_size = UNIMEM_DETAIL_ATTR(WarpSize),
  multiprocessors = UNIMEM_DETAIL_ATTR_MULTIPROCESSORS,
  max_threads_per_block = UNIMEM_DETAIL_ATTR(MaxThreadsPerBlock),
  max_shared_memory_per_block = UNIMEM_DETAIL_ATTR(MaxSharedMemoryPerBlock),
  max_grid_dim_x = UNIMEM_DETAIL_ATTR(MaxGridDimX),
  max_grid_dim_y = UNIMEM_DETAIL_ATTR(MaxGridDimY),
  max_grid_dim_z = UNIMEM_DETAIL_ATTR(MaxGridDimZ),
  max_block_dim_x = UNIMEM_DETAIL_ATTR(MaxBlockDimX),
  max_block_dim_y = UNIMEM_DETAIL_ATTR(MaxBlockDimY),
  max_block_dim_z = UNIMEM_DETAIL_ATTR(MaxBlockDimZ),
  managed_memory = UNIMEM_DETAIL_ATTR(ManagedMemory),
  concurrent_managed_access = UNIMEM_DETAIL_ATTR(ConcurrentManagedAccess),
  pageable_memory_access = UNIMEM_DETAIL_ATTR(PageableMemoryAccess),
  // ATS (host page tables) and an APU: in every CUDA (11.8-13.0) and HIP (5.2-7.2) unimem
  // supports; AMD answers from hipDeviceProp_t (not yet run on an AMD GPU).
  pageable_memory_access_uses_host_page_tables =
      UNIMEM_DETAIL_ATTR(PageableMemoryAccessUsesHostPageTables),
  integrated = UNIMEM_DETAIL_ATTR(Integrated),
  // 0 default, 1 exclusive (thread), 2 prohibited, 3 exclusive process
  compute_mode = UNIMEM_DETAIL_ATTR(ComputeMode),
  // Attributes, not device properties: CUDA 13 removed cudaDeviceProp::memoryClockRate.
  memory_clock_khz = UNIMEM_DETAIL_ATTR(MemoryClockRate),  // the peak memory clock
  memory_bus_width_bits = UNIMEM_DETAIL_ATTR_MEMORY_BUS_WIDTH,
};
/// Memory advice.
enum class mem_advice : int {
  set_read_mostly = UNIMEM_DETAIL_RT(MemAdviseSetReadMostly),
  unset_read_mostly = UNIMEM_DETAIL_RT(MemAdviseUnsetReadMostly),
  set_preferred_location = UNIMEM_DETAIL_RT(MemAdviseSetPreferredLocation),
  unset_preferred_location = UNIMEM_DETAIL_RT(MemAdviseUnsetPreferredLocation),
  set_accessed_by = UNIMEM_DETAIL_RT(MemAdviseSetAccessedBy),
  unset_accessed_by = UNIMEM_DETAIL_RT(MemAdviseUnsetAccessedBy),
};
/// Range attributes that answer with one int (or an int array for accessed_by).
enum class range_attribute : int {
  read_mostly = UNIMEM_DETAIL_RT(MemRangeAttributeReadMostly),
  preferred_location = UNIMEM_DETAIL_RT(MemRangeAttributePreferredLocation),
  accessed_by = UNIMEM_DETAIL_RT(MemRangeAttributeAccessedBy),
  last_prefetch_location = UNIMEM_DETAIL_RT(MemRangeAttributeLastPrefetchLocation),
};
/// Stream attachment of managed memory.
enum class attach_kind : unsigned {
  global = UNIMEM_DETAIL_RT(MemAttachGlobal),
  host = UNIMEM_DETAIL_RT(MemAttachHost),
  single = UNIMEM_DETAIL_RT(MemAttachSingle),
};
/// Direction of a copy; `infer` lets the runtime read it from the pointers (unified addressing).
enum class copy_kind : int {
  host_to_host = UNIMEM_DETAIL_RT(MemcpyHostToHost),
  host_to_device = UNIMEM_DETAIL_RT(MemcpyHostToDevice),
  device_to_host = UNIMEM_DETAIL_RT(MemcpyDeviceToHost),
  device_to_device = UNIMEM_DETAIL_RT(MemcpyDeviceToDevice),
  infer = UNIMEM_DETAIL_RT(MemcpyDefault),
};

inline const char* error_name(status s) noexcept { return UNIMEM_DETAIL_RT(GetErrorName)(s); }
inline const char* error_string(status s) noexcept { return UNIMEM_DETAIL_RT(GetErrorString)(s); }
/// Reads and resets the runtime's last error (a sticky error stays).
inline status take_last_error() noexcept { return UNIMEM_DETAIL_RT(GetLastError)(); }
/// Reads the runtime's last error without resetting it.
inline status peek_last_error() noexcept { return UNIMEM_DETAIL_RT(PeekAtLastError)(); }
/// Clears the last error if it is `s`, our call's status, not one the caller's calls left.
inline void forget_if_last(status s) noexcept {
  if (s != success && peek_last_error() == s) (void)take_last_error();
}
/// True for the statuses that mean "this machine has no usable GPU" rather than a fault.
inline bool means_no_gpu(status s) noexcept {
  return s == UNIMEM_DETAIL_RT(ErrorNoDevice) || s == UNIMEM_DETAIL_RT(ErrorInsufficientDriver);
}
/// True for the "sticky" errors: every later call returns them; only a new process recovers.
inline bool is_sticky(status s) noexcept {
#if defined(UNIMEM_DETAIL_CUDA)  // statuses HIP does not have
  if (s == cudaErrorHardwareStackError || s == cudaErrorIllegalInstruction ||
      s == cudaErrorMisalignedAddress || s == cudaErrorInvalidAddressSpace ||
      s == cudaErrorInvalidPc) {
    return true;
  }
#endif
  return s == UNIMEM_DETAIL_RT(ErrorIllegalAddress) || s == UNIMEM_DETAIL_RT(ErrorLaunchFailure) ||
         s == UNIMEM_DETAIL_RT(ErrorAssert) || s == UNIMEM_DETAIL_RT_LAUNCH_TIMEOUT;
}

inline result device_count(int* n) noexcept { return UNIMEM_DETAIL_CALL(GetDeviceCount, n); }
inline result set_device(int id) noexcept { return UNIMEM_DETAIL_CALL(SetDevice, id); }
inline result get_device(int* id) noexcept { return UNIMEM_DETAIL_CALL(GetDevice, id); }
inline result device_synchronize() noexcept { return UNIMEM_DETAIL_CALL(DeviceSynchronize, ); }
inline result mem_get_info(std::size_t* free, std::size_t* total) noexcept {
  return UNIMEM_DETAIL_CALL(MemGetInfo, free, total);
}

inline result get_attribute(int* value, device_attribute a, int id) noexcept {
  const auto native = static_cast<native_device_attribute>(a);
  return UNIMEM_DETAIL_CALL(DeviceGetAttribute, value, native, id);
}

UNIMEM_DETAIL_OUTLINE result get_properties(native_properties& out, int id)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  native_device_properties p{};
  const result r = UNIMEM_DETAIL_CALL(GetDeviceProperties, &p, id);
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
/// Whether managed pages migrate only with XNACK. AMD reads concurrentManagedAccess 1 even where
/// pages never migrate: that needs XNACK (xnack+ in the architecture, or pageable memory
/// access). NVIDIA migrates exactly where concurrentManagedAccess is 1.
#if defined(UNIMEM_DETAIL_HIP_AMD)
constexpr bool migration_needs_xnack = true;
#else
constexpr bool migration_needs_xnack = false;
#endif
/// Whether XNACK is on: xnack+ in the AMD target (gfx90a:sramecc+:xnack+); false on NVIDIA.
inline bool xnack_enabled(const native_properties& p) noexcept {
  return std::strstr(p.architecture, "xnack+") != nullptr;
}

inline result runtime_version(int* v) noexcept { return UNIMEM_DETAIL_CALL(RuntimeGetVersion, v); }
inline result driver_version(int* v) noexcept { return UNIMEM_DETAIL_CALL(DriverGetVersion, v); }
/// Formats a version number as the runtime reports it.
inline version_text version_string(int v) noexcept {
  version_text t;
#if defined(UNIMEM_DETAIL_HIP_AMD)  // HIP_VERSION: major * 10'000'000 + minor * 100'000 + patch
  t.append(v / 10000000).append(".").append(v / 100000 % 100).append(".").append(v % 100000);
#else  // the CUDA runtime's (also under HIP on NVIDIA): major * 1000 + minor * 10
  t.append(v / 1000).append(".").append(v % 1000 / 10);
#endif
  return t;
}
/// The version of the headers this translation unit was compiled against.
inline version_text compiled_version() noexcept {
#if defined(UNIMEM_BACKEND_HIP)
  version_text t;
  t.append(HIP_VERSION_MAJOR).append(".").append(HIP_VERSION_MINOR);
  return t.append(".").append(HIP_VERSION_PATCH);
#else
  return version_string(CUDART_VERSION);
#endif
}
/// The linked runtime's version, for when it cannot be asked (CUDA 11 needs a driver and GPU).
inline int linked_runtime_version() noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return HIP_VERSION;
#else
  return CUDART_VERSION;
#endif
}

inline result malloc_managed(void** p, std::size_t bytes, bool host_attached = false) noexcept {
  const unsigned attach =
      host_attached ? UNIMEM_DETAIL_RT(MemAttachHost) : UNIMEM_DETAIL_RT(MemAttachGlobal);
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(MallocManaged, p, bytes, attach), p, device_memory);
}
inline result free(void* p) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(p != nullptr, device_memory, Free, p);
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
  return UNIMEM_DETAIL_CALL(LaunchKernel, kernel, dim3(grid.x, grid.y, grid.z),
                            dim3(block.x, block.y, block.z), args, shared_bytes, stream);
}
/// The occupancy calculator for `kernel` on the current device: the block size of the highest
/// occupancy (block_limit 0: no limit) and the fewest blocks reaching it everywhere. On NVIDIA a
/// template of cuda_runtime.h, which only code compiled as CUDA includes.
template <class Kernel>
result max_potential_block_size(int* min_grid, int* block, Kernel kernel, std::size_t shared_bytes,
                                int block_limit) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return UNIMEM_DETAIL_CALL(OccupancyMaxPotentialBlockSize, min_grid, block,
                            reinterpret_cast<const void*>(kernel), shared_bytes, block_limit);
#elif defined(__CUDACC__)
  return UNIMEM_DETAIL_CALL(OccupancyMaxPotentialBlockSize, min_grid, block, kernel, shared_bytes,
                            block_limit);
#else
  static_assert(sizeof(Kernel) == 0,
                "unimem::max_potential_block_size needs the kernel compiler on NVIDIA: compile "
                "this file as CUDA, with nvcc or hipcc (unimem_gpu_target() in CMake)");
  (void)min_grid, (void)block, (void)kernel, (void)shared_bytes, (void)block_limit;
  return {error_not_supported, UNIMEM_DETAIL_RT_NAME(OccupancyMaxPotentialBlockSize)};
#endif
}
/// The calling thread's default stream: ordered with the legacy stream, not other threads'.
inline stream_handle per_thread_stream() noexcept { return UNIMEM_DETAIL_RT(StreamPerThread); }
/// The legacy default stream's handle (AMD has none but the null stream: nullptr).
inline stream_handle legacy_stream() noexcept { return UNIMEM_DETAIL_RT_LEGACY_STREAM; }

inline result stream_synchronize(stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL(StreamSynchronize, s);
}
inline result stream_query(stream_handle s) noexcept { return UNIMEM_DETAIL_CALL(StreamQuery, s); }
/// The device of a stream (the default streams: the current one); error_not_supported, nothing
/// left behind, when neither runtime nor driver can say.
inline result stream_device(stream_handle s, int* id) noexcept {
  const stream_handle legacy = UNIMEM_DETAIL_RT_LEGACY_STREAM;
  if (s == nullptr || s == legacy || s == per_thread_stream()) return get_device(id);
#if defined(UNIMEM_DETAIL_HIP_AMD) && HIP_VERSION >= 50600000  // hipDevice_t is the ordinal
  return UNIMEM_DETAIL_CALL(StreamGetDevice, s, id);
#elif defined(UNIMEM_DETAIL_HIP_AMD)
  (void)id;
  return {error_not_supported, "hipStreamGetDevice (needs ROCm 5.6)"};
#else
#if defined(UNIMEM_DETAIL_CUDA) && CUDART_VERSION >= 12080  // the runtime's own, else the driver
  const result r = UNIMEM_DETAIL_CALL(StreamGetDevice, s, id);
  if (r.code != cudaErrorCallRequiresNewerDriver && r.code != error_not_supported) return r;
  forget_if_last(r.code);
#endif
  UNIMEM_DETAIL_INJECTION_POINT("cuStreamGetCtx + cuCtxGetDevice");
  if (cuda_driver::stream_device(s, id)) return {success, "cuStreamGetCtx + cuCtxGetDevice"};
  return {error_not_supported, "the device of a stream (no runtime call, no driver entry point)"};
#endif
}
/// 1 when device `id` has a context (it may run work), 0 none, -1 unknown (always on AMD, whose
/// runtime initialises every device, so synchronising one is cheap).
inline int context_active(int id) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  (void)id;
  return -1;
#else
  if (UNIMEM_DETAIL_FAULT_FIRES("cuDevicePrimaryCtxGetState")) return -1;  // "unknown"
  return cuda_driver::primary_context_active(id);
#endif
}

// ---- data placement (managed memory): the form of the calls is the table's ----
#if UNIMEM_DETAIL_MEM_LOCATION
inline UNIMEM_DETAIL_RT(MemLocation) to_native(native_location l) noexcept {
  UNIMEM_DETAIL_RT(MemLocation) n{};
  n.type = l.host ? UNIMEM_DETAIL_RT(MemLocationTypeHost) : UNIMEM_DETAIL_RT(MemLocationTypeDevice);
  n.id = l.host ? UNIMEM_DETAIL_RT(CpuDeviceId) : l.id;
  return n;
}
#else
inline int to_native(native_location l) noexcept {
  return l.host ? UNIMEM_DETAIL_RT(CpuDeviceId) : l.id;
}
#endif
/// The form of the placement calls this build uses, for reports.
inline const char* placement_api() noexcept {
#if UNIMEM_DETAIL_MEM_LOCATION
  return UNIMEM_DETAIL_RT_NAME(UNIMEM_DETAIL_PLACEMENT(MemPrefetchAsync)) "/" UNIMEM_DETAIL_RT_NAME(
      UNIMEM_DETAIL_PLACEMENT(MemAdvise)) " (" UNIMEM_DETAIL_RT_NAME(MemLocation) ")";
#else
  return UNIMEM_DETAIL_RT_NAME(MemPrefetchAsync) "/" UNIMEM_DETAIL_RT_NAME(
      MemAdvise) " (int device, " UNIMEM_DETAIL_RT_NAME(CpuDeviceId) ")";
#endif
}

inline result prefetch(const void* p, std::size_t bytes, native_location l,
                       stream_handle s) noexcept {
#if UNIMEM_DETAIL_MEM_LOCATION  // with flags
  return UNIMEM_DETAIL_CALL(UNIMEM_DETAIL_PLACEMENT(MemPrefetchAsync), p, bytes, to_native(l), 0,
                            s);
#else
  return UNIMEM_DETAIL_CALL(MemPrefetchAsync, p, bytes, to_native(l), s);
#endif
}

inline result advise(const void* p, std::size_t bytes, mem_advice a, native_location l) noexcept {
  const auto native = static_cast<UNIMEM_DETAIL_RT(MemoryAdvise)>(a);
  result r = UNIMEM_DETAIL_CALL(UNIMEM_DETAIL_PLACEMENT(MemAdvise), p, bytes, native, to_native(l));
#if !defined(UNIMEM_DETAIL_HIP_AMD) && CUDART_VERSION < 12020
  // CUDA 11: cudaMemAdvise as the first call on a device whose context the runtime has not made
  // yet fails with cudaErrorContextIsDestroyed: make it (a free of nullptr) and advise again.
  if (r.code == UNIMEM_DETAIL_RT(ErrorContextIsDestroyed)) {
    forget_if_last(r.code);
    forget_if_last(UNIMEM_DETAIL_RT(Free)(nullptr));
    r = UNIMEM_DETAIL_CALL(UNIMEM_DETAIL_PLACEMENT(MemAdvise), p, bytes, native, to_native(l));
  }
#endif
  return r;
}

inline UNIMEM_DETAIL_RT(MemRangeAttribute) to_native(range_attribute a) noexcept {
  return static_cast<UNIMEM_DETAIL_RT(MemRangeAttribute)>(a);
}
/// Reads an int attribute (an array of `count` ints for accessed_by) of [p, p + bytes).
inline result range_attribute_ints(int* out, std::size_t count, range_attribute a, const void* p,
                                   std::size_t bytes) noexcept {
  return UNIMEM_DETAIL_CALL(MemRangeGetAttribute, out, count * sizeof(int), to_native(a), p, bytes);
}
/// Reads two int attributes of [p, p + bytes) in one call (0.2 us a query, per MPI message).
inline result range_attribute_int_pair(int* a_out, range_attribute a, int* b_out, range_attribute b,
                                       const void* p, std::size_t bytes) noexcept {
  void* data[2] = {a_out, b_out};
  std::size_t sizes[2] = {sizeof(int), sizeof(int)};
  UNIMEM_DETAIL_RT(MemRangeAttribute) natives[2] = {to_native(a), to_native(b)};
  return UNIMEM_DETAIL_CALL(MemRangeGetAttributes, data, sizes, natives, 2, p, bytes);
}
/// Attaches a managed allocation (bytes: 0 or all of it) to a stream; a no-op on AMD.
inline result stream_attach(stream_handle s, void* p, std::size_t bytes, attach_kind k) noexcept {
  const auto flags = static_cast<unsigned>(k);
  return UNIMEM_DETAIL_CALL(StreamAttachMemAsync, s, any_pointer{p}, bytes, flags);
}

inline result memset_async(void* p, int value, std::size_t bytes, stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL(MemsetAsync, p, value, bytes, s);
}
#if !defined(UNIMEM_DETAIL_HIP_AMD)
/// NVIDIA: cuMemsetD16Async / cuMemsetD32Async by entry point (the CUDA runtime has none;
/// HIP's would make every program link libcuda).
template <class Word>
result driver_memset(void* p, Word value, std::size_t count, stream_handle s) noexcept {
  const bool d16 = sizeof(Word) == 2;
  UNIMEM_DETAIL_INJECTION_POINT(d16 ? "cuMemsetD16Async" : "cuMemsetD32Async");
  const int outcome = cuda_driver::memset_async(p, value, count, s);
  if (outcome < 0) {
    return {error_not_supported, d16 ? "cuMemsetD16Async (driver entry point not available)"
                                     : "cuMemsetD32Async (driver entry point not available)"};
  }
  const char* call = d16 ? "cuMemsetD16Async" : "cuMemsetD32Async";
  return {outcome == 1 ? success : error_invalid_value, call};
}
#endif
/// `count` 16-bit words at p set to value in stream order; error_not_supported if unreachable.
inline result memset16_async(void* p, unsigned short value, std::size_t count,
                             stream_handle s) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return UNIMEM_DETAIL_CALL(MemsetD16Async, any_pointer{p}, value, count, s);
#else
  return driver_memset(p, value, count, s);
#endif
}
/// `count` 32-bit words at p (4-byte aligned) set to value, in stream order.
inline result memset32_async(void* p, unsigned value, std::size_t count, stream_handle s) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return UNIMEM_DETAIL_CALL(MemsetD32Async, any_pointer{p}, static_cast<int>(value), count, s);
#else
  return driver_memset(p, value, count, s);
#endif
}

#if defined(UNIMEM_DETAIL_HIP_AMD) && HIP_VERSION < 50300000
/// HIP < 5.3 declares hipLaunchHostFunc but does not define it: a stream callback runs fn.
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
/// Queues fn(data) on stream s, run on a runtime thread in stream order; fn must not call the
/// runtime.
inline result launch_host_function(stream_handle s, host_function fn, void* data) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD) && HIP_VERSION < 50300000
  host_call* cb = new (std::nothrow) host_call{fn, data};
  if (cb == nullptr) return {error_out_of_memory, "hipStreamAddCallback (no memory for the call)"};
  const result r = UNIMEM_DETAIL_CALL(StreamAddCallback, s, &host_call::run, cb, 0);
  if (r.code != success) delete cb;
  return r;
#elif defined(UNIMEM_DETAIL_HIP_NVIDIA)  // HIP 5 on NVIDIA has no wrapper: the CUDA runtime's
  const cudaError_t r = cudaLaunchHostFunc(s, fn, data);
  return {r == cudaSuccess ? success : error_invalid_value, "cudaLaunchHostFunc"};
#else
  return UNIMEM_DETAIL_CALL(LaunchHostFunc, s, fn, data);
#endif
}
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

inline result stream_create(stream_handle* s, bool non_blocking) noexcept {
  const unsigned flags =
      non_blocking ? UNIMEM_DETAIL_RT(StreamNonBlocking) : UNIMEM_DETAIL_RT(StreamDefault);
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(StreamCreateWithFlags, s, flags), s, stream);
}
inline result stream_destroy(stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(s != nullptr, stream, StreamDestroy, s);
}

// ---- explicit memory, copies, events ----
inline result malloc_device(void** p, std::size_t bytes) noexcept {
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(Malloc, p, bytes), p, device_memory);
}
inline result malloc_pinned(void** p, std::size_t bytes) noexcept {
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(UNIMEM_DETAIL_RT_HOST_ALLOC, p, bytes, 0), p,
                            pinned_memory);
}
inline result free_pinned(void* p) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(p != nullptr, pinned_memory, UNIMEM_DETAIL_RT_HOST_FREE, p);
}

inline UNIMEM_DETAIL_RT(MemcpyKind) to_native(copy_kind k) noexcept {
  return static_cast<UNIMEM_DETAIL_RT(MemcpyKind)>(k);
}
inline result memcpy(void* dst, const void* src, std::size_t bytes, copy_kind k) noexcept {
  return UNIMEM_DETAIL_CALL(Memcpy, dst, src, bytes, to_native(k));
}
inline result memcpy_async(void* dst, const void* src, std::size_t bytes, copy_kind k,
                           stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL(MemcpyAsync, dst, src, bytes, to_native(k), s);
}

inline result event_create(event_handle* e, bool timing) noexcept {
  const unsigned flags =
      timing ? UNIMEM_DETAIL_RT(EventDefault) : UNIMEM_DETAIL_RT(EventDisableTiming);
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(EventCreateWithFlags, e, flags), e, event);
}
inline result event_destroy(event_handle e) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(e != nullptr, event, EventDestroy, e);
}
inline result event_record(event_handle e, stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL(EventRecord, e, s);
}
inline result event_synchronize(event_handle e) noexcept {
  return UNIMEM_DETAIL_CALL(EventSynchronize, e);
}
inline result event_query(event_handle e) noexcept { return UNIMEM_DETAIL_CALL(EventQuery, e); }
inline result event_elapsed_ms(float* ms, event_handle start, event_handle end) noexcept {
  return UNIMEM_DETAIL_CALL(EventElapsedTime, ms, start, end);
}
inline result stream_wait_event(stream_handle s, event_handle e) noexcept {
  return UNIMEM_DETAIL_CALL(StreamWaitEvent, s, e, 0);
}

#if UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL
// ---- the runtime's stream-ordered pool of managed memory (managed_pool.hpp) ----
/// The runtime's memory-pool handle.
using mem_pool_handle = UNIMEM_DETAIL_RT(MemPool_t);
/// True for the statuses refusing a managed pool: the caching allocator serves instead.
inline bool refuses_managed_pool(status s) noexcept {
  return s == error_not_supported || s == error_invalid_value ||
         s == UNIMEM_DETAIL_RT(ErrorCallRequiresNewerDriver);
}
/// Creates a pool of ordinary managed memory (no preferred location); it releases nothing at
/// synchronisation points until managed_pool sets its threshold.
inline result managed_pool_create(mem_pool_handle* pool) noexcept {
  UNIMEM_DETAIL_RT(MemPoolProps) props{};
  props.allocType = UNIMEM_DETAIL_RT(MemAllocationTypeManaged);
  props.handleTypes = UNIMEM_DETAIL_RT(MemHandleTypeNone);
  props.location.type = UNIMEM_DETAIL_RT(MemLocationTypeNone);
  props.location.id = 0;
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(MemPoolCreate, pool, &props), pool, memory_pool);
}
inline result managed_pool_destroy(mem_pool_handle pool) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(pool != nullptr, memory_pool, MemPoolDestroy, pool);
}
/// The bytes the pool keeps across synchronisation points (its release threshold).
inline result managed_pool_set_release_threshold(mem_pool_handle pool,
                                                 unsigned long long bytes) noexcept {
  const auto threshold = UNIMEM_DETAIL_RT(MemPoolAttrReleaseThreshold);
  return UNIMEM_DETAIL_CALL(MemPoolSetAttribute, pool, threshold, &bytes);
}
/// The bytes the pool holds from the system.
inline result managed_pool_reserved(mem_pool_handle pool, unsigned long long* bytes) noexcept {
  const auto reserved = UNIMEM_DETAIL_RT(MemPoolAttrReservedMemCurrent);
  return UNIMEM_DETAIL_CALL(MemPoolGetAttribute, pool, reserved, bytes);
}
/// Returns the pool's unused memory to the system until it holds at most `keep` bytes.
inline result managed_pool_trim(mem_pool_handle pool, std::size_t keep) noexcept {
  return UNIMEM_DETAIL_CALL(MemPoolTrimTo, pool, keep);
}
/// Allocates from the pool in the order of stream s.
inline result malloc_from_pool(void** p, std::size_t bytes, mem_pool_handle pool,
                               stream_handle s) noexcept {
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(MallocFromPoolAsync, p, bytes, pool, s), p,
                            device_memory);
}
/// Frees a pool allocation in the order of stream s.
inline result free_async(void* p, stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(p != nullptr, device_memory, FreeAsync, p, s);
}
#endif
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
