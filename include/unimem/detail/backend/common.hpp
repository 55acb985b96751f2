// unimem: backend-neutral vocabulary shared by hip.hpp and cuda.hpp (results, attributes,
// locations, the native-call macro). Not a public header.
#pragma once

#include <cstddef>
#include <cstring>

#include "../fixed_text.hpp"
#include "fault.hpp"
#include "handles.hpp"

#if !defined(UNIMEM_FAULT_INJECTION)
/// Wraps one native call into a backend::result that remembers the call's text.
#define UNIMEM_DETAIL_NATIVE(...) \
  ::unimem::detail::backend::result { (__VA_ARGS__), #__VA_ARGS__ }
/// The same for a call that releases what the process holds (a free, a destroy).
#define UNIMEM_DETAIL_NATIVE_RELEASE(held, kind, ...) UNIMEM_DETAIL_NATIVE(__VA_ARGS__)
/// Where a runtime call is made outside UNIMEM_DETAIL_NATIVE: nothing in users' builds.
#define UNIMEM_DETAIL_INJECTION_POINT(call) ((void)0)
#else
// Test builds (fault.hpp): the call is counted, and the N-th one fails without being made.
#define UNIMEM_DETAIL_INJECTED(call)                                                        \
  ::unimem::detail::backend::result {                                                       \
    static_cast<::unimem::detail::backend::status>(::unimem::detail::fault::status()), call \
  }
#define UNIMEM_DETAIL_NATIVE(...)               \
  (::unimem::detail::fault::fires(#__VA_ARGS__) \
       ? UNIMEM_DETAIL_INJECTED(#__VA_ARGS__)   \
       : ::unimem::detail::backend::result{(__VA_ARGS__), #__VA_ARGS__})
// A release is always made (the runtime then holds nothing) and may then report the failure.
#define UNIMEM_DETAIL_NATIVE_RELEASE(held, kind, ...)                         \
  ::unimem::detail::backend::released(                                        \
      ::unimem::detail::backend::result{(__VA_ARGS__), #__VA_ARGS__}, (held), \
      ::unimem::detail::fault::resource::kind)
#define UNIMEM_DETAIL_INJECTION_POINT(call)                                        \
  do {                                                                             \
    if (::unimem::detail::fault::fires(call)) return UNIMEM_DETAIL_INJECTED(call); \
  } while (0)
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {

/// The outcome of one runtime call: its native status and the call's source text.
template <class Status>
struct basic_result {
  Status code;
  const char* call;
};

/// Device attributes unimem reads; each backend maps them onto its own enumeration.
enum class device_attribute {
  warp_size,
  multiprocessors,
  max_threads_per_block,
  max_shared_memory_per_block,
  max_grid_dim_x,
  max_grid_dim_y,
  max_grid_dim_z,
  max_block_dim_x,
  max_block_dim_y,
  max_block_dim_z,
  managed_memory,
  concurrent_managed_access,
  pageable_memory_access,
  pageable_memory_access_uses_host_page_tables,  // ATS: through the host's page tables
  integrated,                                    // one physical memory with the host (APU)
  compute_mode,  // 0 default, 1 exclusive (thread), 2 prohibited, 3 exclusive process
  memory_clock_khz,       // the peak memory clock in kHz
  memory_bus_width_bits,  // the global memory bus width in bits
};

/// What one properties query returns.
struct native_properties {
  char name[256] = {};          // NUL-terminated (the runtimes' own field is 256 characters)
  char architecture[256] = {};  // sm_90, gfx90a:sramecc+:xnack-
  std::size_t total_memory = 0;
  int major = 0;
  int minor = 0;
  int pci_domain = 0;
  int pci_bus = 0;
  int pci_device = 0;
};

/// Copies the C string s into the array `out`, cutting it to fit.
template <std::size_t N>
inline void copy_name(char (&out)[N], const char* s) noexcept {
  std::size_t i = 0;
  for (; s != nullptr && s[i] != '\0' && i + 1 < N; ++i) out[i] = s[i];
  out[i] = '\0';
}
/// "sm_<major><minor>", the NVIDIA architecture name.
template <std::size_t N>
inline void sm_name(char (&out)[N], int major, int minor) noexcept {
  fixed_text<N> t;
  t.append("sm_").append(major).append(minor);
  copy_name(out, t.c_str());
}
/// A version number as text, e.g. "13.0" or "6.2.41133" (no allocation).
using version_text = fixed_text<48>;
/// Formats a version number: "major.minor" from CUDA's major * 1000 + minor * 10.
inline version_text cuda_version_string(int v) noexcept {
  version_text t;
  t.append(v / 1000).append(".").append(v % 1000 / 10);
  return t;
}

/// A three-component extent in the layout of the runtimes' dim3.
struct extent3 {
  unsigned x, y, z;
};

/// Where managed pages should live: the host, or a device ordinal.
struct native_location {
  bool host;
  int id;
};

/// The id the range-attribute queries report for "no single location".
constexpr int no_location_id = -2;
/// The id the range-attribute queries report for the host.
constexpr int host_location_id = -1;

/// Memory advice, mapped onto each runtime's enumeration.
enum class mem_advice {
  set_read_mostly,
  unset_read_mostly,
  set_preferred_location,
  unset_preferred_location,
  set_accessed_by,
  unset_accessed_by,
};

/// Range attributes that answer with one int (or an int array for accessed_by).
enum class range_attribute { read_mostly, preferred_location, accessed_by, last_prefetch_location };

/// Stream attachment of managed memory.
enum class attach_kind { global, host, single };

/// Direction of a copy; `infer` lets the runtime read it from the pointers (unified addressing).
enum class copy_kind { host_to_host, host_to_device, device_to_host, device_to_device, infer };

/// A host function queued on a stream (runs on a runtime thread when the stream reaches it).
using host_function = void (*)(void*);

/// Where a pointer's memory is, as the runtime says.
enum class pointer_residence { host, device, unknown };

/// What kind of memory a pointer points to, as the runtime says: pageable host memory (not
/// known to the runtime), pinned host memory, device memory, managed memory, or unknown.
enum class pointer_memory { pageable, pinned, device, managed, unknown };

#if defined(UNIMEM_FAULT_INJECTION)
/// Test builds: the ledger forgets what a release gave back, and the plan may fail it.
template <class Result>
Result released(Result r, bool held, fault::resource kind) noexcept {
  if (held && static_cast<int>(r.code) == 0) fault::count(kind, -1);
  if (fault::fires(r.call)) r.code = static_cast<decltype(r.code)>(fault::status());
  return r;
}
#endif

/// Converts to whatever pointer type a runtime's parameter has (void*, hipDeviceptr_t*, ...).
struct any_pointer {
  void* p;
  template <class T>
  operator T*() const noexcept {  // NOLINT: implicit on purpose
    return static_cast<T*>(p);
  }
};

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
