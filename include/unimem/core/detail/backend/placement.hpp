// unimem (internal): the placement calls of managed memory: advice, range attributes, stream attachment.
// Over the table backend.hpp writes every call once with; this folder alone names hip*/cuda*.
#pragma once

#include "backend.hpp"
#include "pointers.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
/// The ids range-attribute queries report for "no single location" and for the host.
constexpr int no_location_id = -2;
constexpr int host_location_id = -1;
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
/// For a scope, this thread may make calls a stream capture forbids (the self-check's allocation
/// and free), so that a capture in progress goes on instead of being invalidated.
class relaxed_capture {
#if defined(UNIMEM_DETAIL_HIP_NVIDIA)  // HIP 5 on NVIDIA has no wrapper: the CUDA runtime's
  using mode_type = cudaStreamCaptureMode;
  static void exchange(mode_type* m) noexcept { (void)cudaThreadExchangeStreamCaptureMode(m); }
  mode_type mode_ = cudaStreamCaptureModeRelaxed;
#else
  using mode_type = UNIMEM_DETAIL_RT(StreamCaptureMode);
  static void exchange(mode_type* m) noexcept {
    (void)UNIMEM_DETAIL_RT(ThreadExchangeStreamCaptureMode)(m);
  }
  mode_type mode_ = UNIMEM_DETAIL_RT(StreamCaptureModeRelaxed);
#endif
 public:
  relaxed_capture() noexcept { exchange(&mode_); }
  ~relaxed_capture() { exchange(&mode_); }
  relaxed_capture(const relaxed_capture&) = delete;
  relaxed_capture& operator=(const relaxed_capture&) = delete;
};
/// Managed memory for the UVM tracker's self-check (placement/detail/uvm/kernel.hpp), made and
/// freed outside unimem's counted calls (a one-time probe, not a placement), the runtime's last
/// error left as the caller's calls left it: null where none could be made.
inline void* probe_managed(std::size_t bytes) noexcept {
  const relaxed_capture relaxed;
  void* p = nullptr;
  const status s = UNIMEM_DETAIL_RT(MallocManaged)(&p, bytes, UNIMEM_DETAIL_RT(MemAttachGlobal));
  forget_if_last(s);
  return s == success ? p : nullptr;
}
inline void probe_free(void* p) noexcept {
  const relaxed_capture relaxed;
  forget_if_last(UNIMEM_DETAIL_RT(Free)(p));
}

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
