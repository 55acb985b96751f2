# unimem: choose the GPU backend and describe it on an INTERFACE target: `unimem` in the build
# tree, the imported `unimem::unimem` when found through find_package (unimem-config.cmake).
# Detection runs in the consumer's configure step, with the consumer's compilers.
#
# Detection (UNIMEM_BACKEND empty): CXX=hipcc gives HIP, for AMD or NVIDIA as HIP_PLATFORM (or
# `hipconfig --platform`) says; otherwise CUDA when a CUDA compiler is found.
# Force it with -DUNIMEM_BACKEND=HIP or -DUNIMEM_BACKEND=CUDA.
#
# Sets UNIMEM_BACKEND_RESOLVED (HIP|CUDA), UNIMEM_HIP_PLATFORM (amd|nvidia) and
# UNIMEM_CXX_IS_HIPCC, and defines unimem_gpu_target() for targets that hold kernels.

if(NOT _unimem_target)
  set(_unimem_target unimem)
endif()

set(UNIMEM_BACKEND "" CACHE STRING
    "GPU backend: HIP or CUDA; empty detects it (CXX=hipcc gives HIP, else CUDA if nvcc is found)")
set_property(CACHE UNIMEM_BACKEND PROPERTY STRINGS "" HIP CUDA)
set(UNIMEM_HIP_ARCHITECTURES "gfx90a;gfx1030" CACHE STRING
    "AMD GPU targets of HIP builds for AMD (wave64 gfx90a, wave32 gfx1030 by default)")
set(UNIMEM_CUDA_ARCHITECTURES "80;90" CACHE STRING
    "NVIDIA architectures of CUDA and HIP-on-NVIDIA builds (PTX of the last is embedded too)")

get_filename_component(_unimem_cxx_name "${CMAKE_CXX_COMPILER}" NAME)
if(_unimem_cxx_name MATCHES "^hipcc")
  set(UNIMEM_CXX_IS_HIPCC TRUE)
else()
  set(UNIMEM_CXX_IS_HIPCC FALSE)
endif()

string(TOUPPER "${UNIMEM_BACKEND}" _unimem_backend)
if(_unimem_backend STREQUAL "")
  if(UNIMEM_CXX_IS_HIPCC)
    set(_unimem_backend HIP)
  else()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      set(_unimem_backend CUDA)
    else()
      message(FATAL_ERROR
        "unimem: no GPU compiler found. Configure with CXX=hipcc (AMD; add HIP_PLATFORM=nvidia "
        "for NVIDIA), or install CUDA so that nvcc is found (or pass -DCMAKE_CUDA_COMPILER=), "
        "or force the backend with -DUNIMEM_BACKEND=HIP|CUDA.")
    endif()
  endif()
elseif(NOT _unimem_backend MATCHES "^(HIP|CUDA)$")
  message(FATAL_ERROR "unimem: UNIMEM_BACKEND must be HIP or CUDA, not '${UNIMEM_BACKEND}'")
endif()
# Cache (internal) so that unimem_gpu_target() sees them in every directory of the project.
set(UNIMEM_BACKEND_RESOLVED ${_unimem_backend} CACHE INTERNAL "unimem's backend: HIP or CUDA")

target_compile_features(${_unimem_target} INTERFACE cxx_std_17)

if(UNIMEM_BACKEND_RESOLVED STREQUAL "HIP")
  if(DEFINED ENV{HIP_PLATFORM} AND NOT "$ENV{HIP_PLATFORM}" STREQUAL "")
    set(_unimem_platform "$ENV{HIP_PLATFORM}")
  else()
    find_program(UNIMEM_HIPCONFIG hipconfig HINTS "$ENV{HIP_PATH}/bin" "$ENV{ROCM_PATH}/bin" /opt/rocm/bin)
    set(_unimem_platform amd)
    if(UNIMEM_HIPCONFIG)
      execute_process(COMMAND "${UNIMEM_HIPCONFIG}" --platform OUTPUT_VARIABLE _unimem_platform
                      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
  endif()
  if(_unimem_platform MATCHES "^(nvidia|nvcc)$")
    set(UNIMEM_HIP_PLATFORM nvidia CACHE INTERNAL "unimem's HIP platform")
  else()
    set(UNIMEM_HIP_PLATFORM amd CACHE INTERNAL "unimem's HIP platform")
  endif()

  find_path(UNIMEM_HIP_INCLUDE_DIR hip/hip_runtime_api.h
            HINTS "$ENV{HIP_PATH}/include" "$ENV{ROCM_PATH}/include" /opt/rocm/include)
  if(NOT UNIMEM_HIP_INCLUDE_DIR)
    message(FATAL_ERROR "unimem: HIP headers (hip/hip_runtime_api.h) not found; set HIP_PATH or ROCM_PATH")
  endif()
  target_compile_definitions(${_unimem_target} INTERFACE UNIMEM_BACKEND_HIP)
  if(NOT UNIMEM_HIP_INCLUDE_DIR MATCHES "^/usr/include/?$")
    target_include_directories(${_unimem_target} SYSTEM INTERFACE "${UNIMEM_HIP_INCLUDE_DIR}")
  endif()

  if(UNIMEM_HIP_PLATFORM STREQUAL "amd")
    if(UNIMEM_CXX_IS_HIPCC)
      # At link time too: without a target hipcc asks rocm_agent_enumerator for the GPUs.
      foreach(_arch IN LISTS UNIMEM_HIP_ARCHITECTURES)
        target_compile_options(${_unimem_target} INTERFACE "--offload-arch=${_arch}")
        target_link_options(${_unimem_target} INTERFACE "--offload-arch=${_arch}")
      endforeach()
    else()
      # A plain C++ compiler: host-side HIP API only.
      target_compile_definitions(${_unimem_target} INTERFACE __HIP_PLATFORM_AMD__=1)
      find_library(UNIMEM_HIP_LIBRARY amdhip64
                   HINTS "$ENV{HIP_PATH}/lib" "$ENV{ROCM_PATH}/lib" /opt/rocm/lib)
      if(NOT UNIMEM_HIP_LIBRARY)
        message(FATAL_ERROR "unimem: libamdhip64 not found; set HIP_PATH or ROCM_PATH")
      endif()
      target_link_libraries(${_unimem_target} INTERFACE "${UNIMEM_HIP_LIBRARY}")
    endif()
  else()
    if(UNIMEM_CXX_IS_HIPCC)
      list(LENGTH UNIMEM_CUDA_ARCHITECTURES _n)
      math(EXPR _last "${_n} - 1")
      foreach(_arch IN LISTS UNIMEM_CUDA_ARCHITECTURES)
        target_compile_options(${_unimem_target} INTERFACE "-gencode=arch=compute_${_arch},code=sm_${_arch}")
      endforeach()
      list(GET UNIMEM_CUDA_ARCHITECTURES ${_last} _arch)
      target_compile_options(${_unimem_target} INTERFACE "-gencode=arch=compute_${_arch},code=compute_${_arch}")
    else()
      target_compile_definitions(${_unimem_target} INTERFACE __HIP_PLATFORM_NVIDIA__=1)
      find_package(CUDAToolkit REQUIRED)
      target_link_libraries(${_unimem_target} INTERFACE CUDA::cudart)
    endif()
  endif()
  message(STATUS "unimem: backend HIP, platform ${UNIMEM_HIP_PLATFORM}, headers in ${UNIMEM_HIP_INCLUDE_DIR}")
else()
  set(UNIMEM_HIP_PLATFORM "" CACHE INTERNAL "unimem's HIP platform")
  target_compile_definitions(${_unimem_target} INTERFACE UNIMEM_BACKEND_CUDA)
  find_package(CUDAToolkit REQUIRED)
  # Link the runtime the way nvcc-compiled targets do, so that a process holds one copy of it.
  if(CMAKE_CUDA_RUNTIME_LIBRARY MATCHES "^[Ss]hared$")
    target_link_libraries(${_unimem_target} INTERFACE CUDA::cudart)
  else()
    target_link_libraries(${_unimem_target} INTERFACE CUDA::cudart_static)
  endif()
  message(STATUS "unimem: backend CUDA ${CUDAToolkit_VERSION}, architectures ${UNIMEM_CUDA_ARCHITECTURES}")
endif()

# unimem_gpu_target(<target>)
# Marks the C++ sources of <target> (.cpp .cc .cxx .cu) as GPU code. With the CUDA backend they
# compile as CUDA for UNIMEM_CUDA_ARCHITECTURES; with HIP, hipcc already compiles them as HIP and
# the targets come from unimem::unimem. The target must link unimem::unimem.
function(unimem_gpu_target target)
  if(UNIMEM_BACKEND_RESOLVED STREQUAL "CUDA")
    get_target_property(_sources ${target} SOURCES)
    set(_gpu_sources "")
    foreach(_s IN LISTS _sources)
      if(_s MATCHES "\\.(cpp|cc|cxx|cu)$")
        list(APPEND _gpu_sources "${_s}")
      endif()
    endforeach()
    if(_gpu_sources)
      set_source_files_properties(${_gpu_sources} TARGET_DIRECTORY ${target}
                                  PROPERTIES LANGUAGE CUDA)
    endif()
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${UNIMEM_CUDA_ARCHITECTURES}"
                                               CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  endif()
endfunction()
