// unimem (internal): the runtime calls fill() needs beyond memset: 16- and 32-bit memsets, and
// a host function queued on a stream. This folder alone names hip*/cuda*.
#pragma once

#include "backend.hpp"
#include "pointers.hpp"

#include <new>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
/// A host function queued on a stream.
using host_function = void (*)(void*);
#if !defined(UNIMEM_DETAIL_HIP_AMD)
namespace cuda_driver {
/// cuMemsetD16Async / cuMemsetD32Async by sizeof(Word): 1 done, 0 refused, -1 unreachable.
template <class Word>
int memset_async(void* p, Word value, std::size_t count, cudaStream_t s) noexcept {
  using fn_type = int (*)(unsigned long long, Word, std::size_t, cudaStream_t);
  static const auto fn =
      entry<fn_type>(sizeof(Word) == 2 ? "cuMemsetD16Async" : "cuMemsetD32Async");
  if (fn == nullptr) return -1;
  return fn(reinterpret_cast<unsigned long long>(p), value, count, s) == 0 ? 1 : 0;
}
}  // namespace cuda_driver
#endif
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
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
