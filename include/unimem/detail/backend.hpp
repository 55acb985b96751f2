// unimem: the one place where the GPU backend is chosen.
//
// HIP   when UNIMEM_BACKEND_HIP is defined, or when a HIP compiler or HIP header has announced
//       itself (__HIP__ from hipcc/clang on AMD, __HIP_PLATFORM_AMD__ / __HIP_PLATFORM_NVIDIA__).
// CUDA  when UNIMEM_BACKEND_CUDA is defined, or when nvcc compiles without any HIP macro.
//
// hipcc on NVIDIA (HIP 5.x) runs nvcc and defines no macro of its own before the first HIP
// header, so such a translation unit selects HIP only if it includes <hip/hip_runtime.h> first
// or gets -DUNIMEM_BACKEND_HIP (the CMake target unimem::unimem passes it). Otherwise it uses
// the CUDA backend, which behaves the same on an NVIDIA GPU.
//
// hip*/cuda* runtime names appear only in this file and in backend_hip.hpp / backend_cuda.hpp.
#pragma once

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

// Every unimem entity lives in an inline namespace named after the backend, so that two
// translation units that selected different backends fail to link instead of silently
// violating the one-definition rule.
#define UNIMEM_BEGIN_NAMESPACE \
  namespace unimem {           \
  inline namespace UNIMEM_DETAIL_ABI_NAMESPACE {
#define UNIMEM_END_NAMESPACE \
  }                          \
  }

#if defined(UNIMEM_BACKEND_HIP)
#include "backend_hip.hpp"
#else
#include "backend_cuda.hpp"
#endif

// Functions callable from host and device code (views, intrinsics).
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define UNIMEM_HOST_DEVICE __host__ __device__
#define UNIMEM_DEVICE_COMPILER 1
#else
#define UNIMEM_HOST_DEVICE
#endif
