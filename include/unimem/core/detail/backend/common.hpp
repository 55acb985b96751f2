// unimem: the backend's neutral vocabulary and the macros that make and count runtime calls.
#pragma once

#include <cstddef>

#include "../fixed_text.hpp"
#include "handles.hpp"

#if defined(UNIMEM_FAULT_INJECTION)
// unimem's own fault-injection build (unimem_fault_tests): every call counted, the N-th failed.
#include <unimem_fault_injection.hpp>  // tests/support/, on that program's include path only
#else
/// Wraps one native call into a backend::result that remembers `text`, the call's source text.
#define UNIMEM_DETAIL_NATIVE_TEXT(text, ...) \
  ::unimem::detail::backend::result { (__VA_ARGS__), text }
/// The same for a call that releases what the process holds (a free, a destroy).
#define UNIMEM_DETAIL_RELEASE_TEXT(held, kind, text, ...) \
  UNIMEM_DETAIL_NATIVE_TEXT(text, __VA_ARGS__)
/// Marks a runtime call made outside UNIMEM_DETAIL_NATIVE: nothing in users' builds.
#define UNIMEM_DETAIL_INJECTION_POINT(call) ((void)0)
/// A call that made `*out` (memory, a stream, an event): counted in the fault-injection build.
#define UNIMEM_DETAIL_MADE(r, out, kind) (r)
/// Whether the fault-injection build fails this call (never here).
#define UNIMEM_DETAIL_FAULT_FIRES(call) false
#endif
/// Wraps one native call, written out, into a backend::result (UNIMEM_CHECK's calls).
#define UNIMEM_DETAIL_NATIVE(...) UNIMEM_DETAIL_NATIVE_TEXT(#__VA_ARGS__, __VA_ARGS__)
// Calls without the runtime's prefix: UNIMEM_DETAIL_CALL(Malloc, p, bytes) calls cudaMalloc or
// hipMalloc, its text "cudaMalloc(p, bytes)". The name is expanded first (a table's macro may
// give it), the arguments' text never. No arguments: CALL(name, ).
/// The runtime's name of `name` as text: "cuda<name>" or "hip<name>".
#define UNIMEM_DETAIL_RT_NAME(name) UNIMEM_DETAIL_RT_NAME_(name)
#define UNIMEM_DETAIL_RT_NAME_(name) UNIMEM_DETAIL_RT_PREFIX #name
/// One counted runtime call (UNIMEM_DETAIL_NATIVE_TEXT).
#define UNIMEM_DETAIL_CALL(name, ...) UNIMEM_DETAIL_CALL_(name, #__VA_ARGS__, __VA_ARGS__)
#define UNIMEM_DETAIL_CALL_(name, args, ...)                           \
  UNIMEM_DETAIL_NATIVE_TEXT(UNIMEM_DETAIL_RT_NAME_(name) "(" args ")", \
                            UNIMEM_DETAIL_RT(name)(__VA_ARGS__))
/// One runtime call that releases (UNIMEM_DETAIL_RELEASE_TEXT).
#define UNIMEM_DETAIL_CALL_RELEASE(held, kind, name, ...) \
  UNIMEM_DETAIL_CALL_RELEASE_(held, kind, name, #__VA_ARGS__, __VA_ARGS__)
#define UNIMEM_DETAIL_CALL_RELEASE_(held, kind, name, args, ...)                    \
  UNIMEM_DETAIL_RELEASE_TEXT(held, kind, UNIMEM_DETAIL_RT_NAME_(name) "(" args ")", \
                             UNIMEM_DETAIL_RT(name)(__VA_ARGS__))

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
/// What one properties query returns.
struct native_properties {
  char name[256] = {};          // NUL-terminated (the runtimes' own field is 256 characters)
  char architecture[256] = {};  // sm_90, gfx90a:sramecc+:xnack-
  std::size_t total_memory = 0;
  int major = 0;
  int minor = 0;
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
/// A three-component extent in the layout of the runtimes' dim3.
struct extent3 {
  unsigned x, y, z;
};
/// Where managed pages should live: the host, or a device ordinal.
struct native_location {
  bool host;
  int id;
};
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
