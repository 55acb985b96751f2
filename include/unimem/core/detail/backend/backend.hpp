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
#include <cstring>
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

/// Device attributes unimem reads (each enumerator holds the runtime's value, as below).
enum class device_attribute : int {
  warp_size = UNIMEM_DETAIL_ATTR(WarpSize),
  multiprocessors = UNIMEM_DETAIL_ATTR_MULTIPROCESSORS,
  max_threads_per_block = UNIMEM_DETAIL_ATTR(MaxThreadsPerBlock),
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
/// The calling thread's default stream: ordered with the legacy stream, not other threads'.
inline stream_handle per_thread_stream() noexcept { return UNIMEM_DETAIL_RT(StreamPerThread); }

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
inline result prefetch(const void* p, std::size_t bytes, native_location l,
                       stream_handle s) noexcept {
#if UNIMEM_DETAIL_MEM_LOCATION  // with flags
  return UNIMEM_DETAIL_CALL(UNIMEM_DETAIL_PLACEMENT(MemPrefetchAsync), p, bytes, to_native(l), 0,
                            s);
#else
  return UNIMEM_DETAIL_CALL(MemPrefetchAsync, p, bytes, to_native(l), s);
#endif
}

inline result memset_async(void* p, int value, std::size_t bytes, stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL(MemsetAsync, p, value, bytes, s);
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
inline result memcpy_async(void* dst, const void* src, std::size_t bytes, copy_kind k,
                           stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL(MemcpyAsync, dst, src, bytes, to_native(k), s);
}

inline result stream_wait_event(stream_handle s, event_handle e) noexcept {
  return UNIMEM_DETAIL_CALL(StreamWaitEvent, s, e, 0);
}

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
