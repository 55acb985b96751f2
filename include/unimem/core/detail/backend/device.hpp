// unimem (internal): the calls of the device and stream objects (core/device.hpp,
// core/stream.hpp): a device's synchronisation, free memory and context, streams made and
// destroyed. This folder alone names hip*/cuda*.
#pragma once

#include "backend.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
/// The runtime's name for report() and DLPack's messages: "CUDA", "HIP (AMD)", "HIP (NVIDIA)".
inline const char* name() noexcept { return UNIMEM_DETAIL_RT_BACKEND; }
/// The legacy default stream's handle (AMD has none but the null stream: nullptr).
inline stream_handle legacy_stream() noexcept { return UNIMEM_DETAIL_RT_LEGACY_STREAM; }
#if !defined(UNIMEM_DETAIL_HIP_AMD)
namespace cuda_driver {
using primary_ctx_get_state_fn = int (*)(int, unsigned*, int*);
/// 1 when device `id` has an active primary context, 0 when not (nothing can run there), -1
/// when the driver cannot tell.
inline int primary_context_active(int id) noexcept {
  static const auto get_state = entry<primary_ctx_get_state_fn>("cuDevicePrimaryCtxGetState");
  if (get_state == nullptr) return -1;
  unsigned flags = 0;
  int active = 0;
  if (get_state(id, &flags, &active) != 0) return -1;
  return active != 0 ? 1 : 0;
}
}  // namespace cuda_driver
#endif
inline result device_synchronize() noexcept { return UNIMEM_DETAIL_CALL(DeviceSynchronize, ); }
inline result mem_get_info(std::size_t* free, std::size_t* total) noexcept {
  return UNIMEM_DETAIL_CALL(MemGetInfo, free, total);
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

inline result stream_create(stream_handle* s, bool non_blocking) noexcept {
  const unsigned flags =
      non_blocking ? UNIMEM_DETAIL_RT(StreamNonBlocking) : UNIMEM_DETAIL_RT(StreamDefault);
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(StreamCreateWithFlags, s, flags), s, stream);
}
inline result stream_destroy(stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(s != nullptr, stream, StreamDestroy, s);
}

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
