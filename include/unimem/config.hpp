// unimem: configuration, the bottom layer. Which backend this translation unit uses, the ABI
// namespace that keeps backends apart, and the host/device qualifiers. It includes nothing: no
// GPU runtime header, no standard header; every other unimem header builds on it.
//
// HIP   when UNIMEM_BACKEND_HIP is defined, or when a HIP compiler or HIP header has announced
//       itself (__HIP__ from hipcc/clang on AMD, __HIP_PLATFORM_AMD__ / __HIP_PLATFORM_NVIDIA__).
// CUDA  when UNIMEM_BACKEND_CUDA is defined, or when nvcc compiles without any HIP macro.
//
// hipcc on NVIDIA (HIP 5.x) runs nvcc and defines no macro of its own before the first HIP
// header, so such a translation unit selects HIP only if it includes <hip/hip_runtime.h> first
// or gets -DUNIMEM_BACKEND_HIP (the CMake target unimem::unimem passes it). Otherwise it uses
// the CUDA backend, which behaves the same on an NVIDIA GPU.
/// @file
/// @brief Configuration, the bottom layer: the backend (UNIMEM_BACKEND_HIP or UNIMEM_BACKEND_CUDA,
/// chosen as the comment at the top of this header says), the ABI namespace, UNIMEM_HOST_DEVICE
/// and call_site. Includes nothing.
#pragma once

#if defined(_MSVC_LANG)
#define UNIMEM_DETAIL_CPLUSPLUS _MSVC_LANG
#else
#define UNIMEM_DETAIL_CPLUSPLUS __cplusplus
#endif
#if UNIMEM_DETAIL_CPLUSPLUS < 201703L
#error "unimem needs C++17 or later: compile with -std=c++17 (hipcc 5.x and older nvcc default \
to an earlier standard; the CMake target unimem::unimem asks for C++17 itself)."
// Stop here (a missing header is fatal) instead of burying the line above under template errors.
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

// The platform under HIP: AMD where a HIP compiler for AMD (clang with __HIP__) or the AMD
// platform macro says so, NVIDIA otherwise (hipcc over nvcc, or __HIP_PLATFORM_NVIDIA__).
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

// Every unimem entity lives in an inline namespace named after the backend, so that two
// translation units that selected different backends fail to link instead of silently
// violating the one-definition rule.
#define UNIMEM_BEGIN_NAMESPACE \
  namespace unimem {           \
  inline namespace UNIMEM_DETAIL_ABI_NAMESPACE {
#define UNIMEM_END_NAMESPACE \
  }                          \
  }

// The cold paths (building and throwing errors) and the large once-per-program functions
// (report()) are kept out of line: inlined at every call site they would multiply the host
// compiler's work in each user's translation unit (scripts/compile_time.sh).
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

// Separate compilation (optional; the default is header-only). The functions that every
// translation unit would otherwise compile again (the cold paths that build and throw errors,
// the device-property cache, report(), the stream's-device query) are written
//
//   UNIMEM_DETAIL_OUTLINE void f(args)
//   #if UNIMEM_DETAIL_DEFINE_OUTLINE
//   { body }
//   #else
//       ;
//   #endif
//
// Header-only: `inline`, with its body. With UNIMEM_SEPARATE_COMPILATION defined in every
// translation unit of a program, the headers only declare them, and <unimem/compiled.hpp>,
// included by exactly one translation unit (the CMake target unimem::compiled), defines them
// once. One declaration per translation unit either way, so attributes stay where they are.
// See docs/architecture.md, "Compile time".
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

// Functions callable from host and device code (views, intrinsics).
/// @def UNIMEM_HOST_DEVICE
/// @brief `__host__ __device__` under a device compiler (nvcc, hipcc, clang compiling HIP),
/// empty otherwise: marks functions callable from host and device code.
/// @def UNIMEM_DEVICE_COMPILER
/// @brief Defined (as 1) when a device compiler compiles the translation unit; the device-only
/// functions (warp.hpp, reduce.hpp) exist only then.
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define UNIMEM_HOST_DEVICE __host__ __device__
#define UNIMEM_DEVICE_COMPILER 1
#else
#define UNIMEM_HOST_DEVICE
#endif

/// @namespace unimem
/// @brief Everything unimem offers. Its entities live in an inline namespace named after the
/// backend (v0_cuda, v0_hip_amd, v0_hip_nvidia), so that translation units compiled for
/// different backends fail to link instead of mixing; name them as unimem::name.
///
/// Errors: a function whose last parameter is `call_site where` may call the GPU runtime and
/// throws unimem::error when a call fails, naming your file and line (the compiler fills
/// `where` in: never pass it): as unimem::runtime_error (a std::runtime_error) or, out of
/// memory, unimem::out_of_memory (a std::bad_alloc). Arguments unimem cannot accept (a size
/// beyond max_size(), at() outside a buffer, copies of different sizes, an empty block) throw
/// unimem::argument_error before any runtime call, as the std::logic_error that fits
/// (length_error, out_of_range, invalid_argument). Destructors never throw.
UNIMEM_BEGIN_NAMESPACE

/// @brief Where a public unimem call was made: errors name the user's call site, not unimem's
/// own file. Public functions that can throw take one as a defaulted last parameter, filled by
/// the compiler at the caller (`__builtin_FILE()` / `__builtin_LINE()`, which GCC, Clang, nvcc
/// and hipcc provide in C++17); callers never pass it.
struct call_site {
  /// @brief The caller's source file, as __builtin_FILE() names it.
  const char* file;
  /// @brief The caller's source line.
  int line;
  /// @brief The caller's file and line when used as a default argument.
  static constexpr call_site current(const char* file = __builtin_FILE(),
                                     int line = __builtin_LINE()) noexcept {
    return {file, line};
  }
};

UNIMEM_END_NAMESPACE
