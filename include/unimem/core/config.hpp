/// @file
/// @brief Configuration, the bottom layer (includes nothing): the backend (docs/building.md, "How
/// the backend is chosen"), the ABI namespace, UNIMEM_HOST_DEVICE and call_site.
#pragma once

#if defined(_MSVC_LANG)
#define UNIMEM_DETAIL_CPLUSPLUS _MSVC_LANG
#else
#define UNIMEM_DETAIL_CPLUSPLUS __cplusplus
#endif
#if UNIMEM_DETAIL_CPLUSPLUS < 201703L
#error "unimem needs C++17 or later: compile with -std=c++17 (hipcc 5.x and older nvcc default \
to an earlier standard; the CMake target unimem::unimem asks for C++17 itself)."
// A missing header is fatal: stop before template errors bury the line above.
#include <unimem_needs_cxx17_see_the_error_above>
#endif

#if defined(UNIMEM_BACKEND_HIP) && defined(UNIMEM_BACKEND_CUDA)
#error "unimem: both UNIMEM_BACKEND_HIP and UNIMEM_BACKEND_CUDA are defined; define one of them."
#endif

#if !defined(UNIMEM_BACKEND_HIP) && !defined(UNIMEM_BACKEND_CUDA)
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_NVIDIA__) || \
    defined(__HIP_PLATFORM_HCC__) || defined(__HIP_PLATFORM_NVCC__)
#define UNIMEM_BACKEND_HIP 1
#elif defined(__CUDACC__)
#define UNIMEM_BACKEND_CUDA 1
#else
#error "unimem: no GPU backend. Compile with hipcc (AMD; HIP_PLATFORM=nvidia for NVIDIA) or nvcc, \
or link the CMake target unimem::unimem, which selects the backend for plain C++ files too. \
By hand: -DUNIMEM_BACKEND_HIP -D__HIP_PLATFORM_AMD__ (or -D__HIP_PLATFORM_NVIDIA__), \
or -DUNIMEM_BACKEND_CUDA, plus the runtime's include directory and library."
#endif
#endif

// Under HIP: AMD where clang (__HIP__) or the AMD platform macro says so, else NVIDIA.
#if defined(UNIMEM_BACKEND_HIP)
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__) || \
    (defined(__HIP__) && !defined(__HIP_PLATFORM_NVIDIA__) && !defined(__HIP_PLATFORM_NVCC__))
#define UNIMEM_DETAIL_HIP_AMD 1
#define UNIMEM_DETAIL_ABI_NAMESPACE v0_hip_amd
#else
#define UNIMEM_DETAIL_HIP_NVIDIA 1
#define UNIMEM_DETAIL_ABI_NAMESPACE v0_hip_nvidia
#endif
#else
#define UNIMEM_DETAIL_CUDA 1
#define UNIMEM_DETAIL_ABI_NAMESPACE v0_cuda
#endif

// The inline namespace per backend (see namespace unimem below).
#define UNIMEM_BEGIN_NAMESPACE \
  namespace unimem {           \
  inline namespace UNIMEM_DETAIL_ABI_NAMESPACE {
#define UNIMEM_END_NAMESPACE \
  }                          \
  }

// Cold paths (building and throwing errors) and large once-per-program functions (report())
// stay out of line: inlined they would multiply the host compiler's work in every user's TU.
#if defined(__GNUC__) || defined(__clang__)
#define UNIMEM_DETAIL_NOINLINE __attribute__((noinline))
#define UNIMEM_DETAIL_COLD __attribute__((noinline, cold))
#elif defined(_MSC_VER)
#define UNIMEM_DETAIL_NOINLINE __declspec(noinline)
#define UNIMEM_DETAIL_COLD __declspec(noinline)
#else
#define UNIMEM_DETAIL_NOINLINE
#define UNIMEM_DETAIL_COLD
#endif

// Functions every TU would compile again: `UNIMEM_DETAIL_OUTLINE f(args)`, `{ body }` under `#if
// UNIMEM_DETAIL_DEFINE_OUTLINE`, else `;` (docs/architecture.md#separate-compilation).
#define UNIMEM_DETAIL_CONFIG_INCLUDED 1
#if defined(UNIMEM_SEPARATE_COMPILATION)
#define UNIMEM_DETAIL_OUTLINE
#if defined(UNIMEM_DETAIL_COMPILING_OUTLINE)
#define UNIMEM_DETAIL_DEFINE_OUTLINE 1
#else
#define UNIMEM_DETAIL_DEFINE_OUTLINE 0
#endif
#else
#define UNIMEM_DETAIL_OUTLINE inline
#define UNIMEM_DETAIL_DEFINE_OUTLINE 1
#endif

/// @def UNIMEM_HOST_DEVICE
/// @brief `__host__ __device__` under a device compiler (nvcc, hipcc, clang for HIP), else empty.
/// @def UNIMEM_DEVICE_COMPILER
/// @brief Defined (1) under a device compiler; only then do the device-only functions exist.
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define UNIMEM_HOST_DEVICE __host__ __device__
#define UNIMEM_DEVICE_COMPILER 1
#else
#define UNIMEM_HOST_DEVICE
#endif

/// @namespace unimem
/// @brief Everything unimem offers, in an inline namespace per backend (v0_cuda, v0_hip_amd,
/// v0_hip_nvidia) so that TUs of different backends fail to link; name them as unimem::name.
///
/// Errors: a function whose last parameter is `call_site where` (never pass it) throws
/// unimem::error naming your line when a runtime call fails (unimem::runtime_error, or
/// unimem::out_of_memory, a std::bad_alloc). Arguments unimem refuses (a size beyond
/// max_size(), at() outside a buffer) throw unimem::argument_error, the std::logic_error that
/// fits, before any runtime call. Destructors never throw.
UNIMEM_BEGIN_NAMESPACE
/// @brief Where a public unimem call was made, so that errors name the user's line: a defaulted
/// last parameter that the compiler fills at the caller (`__builtin_FILE()`, `__builtin_LINE()`).
struct call_site {
  const char* file;  ///< The caller's source file, as __builtin_FILE() names it.
  int line;          ///< The caller's source line.
  /// @brief The caller's file and line when used as a default argument.
  static constexpr call_site current(const char* file = __builtin_FILE(),
                                     int line = __builtin_LINE()) noexcept {
    return {file, line};
  }
};
/// @brief The device id that names no device (of the host, an unknown or moved-from stream, a
/// launch_config naming none). Not -1, so that -1 (the runtimes' id of the CPU) is refused.
inline constexpr int no_device = -2147483647 - 1;

UNIMEM_END_NAMESPACE
