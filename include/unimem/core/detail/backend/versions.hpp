// unimem (internal): the runtime's and driver's versions, and the headers', for report().
// Over the table backend.hpp writes every call once with; this folder alone names hip*/cuda*.
#pragma once

#include "backend.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
/// A version number as text, e.g. "13.0" or "6.2.41133".
using version_text = fixed_text<48>;
/// What report() puts before the runtime's version: the runtime underneath, if not its own.
inline const char* runtime_label() noexcept { return UNIMEM_DETAIL_RT_UNDERNEATH; }
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

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
