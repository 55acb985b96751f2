# unimem: choose the GPU backend and describe it on an INTERFACE target: `unimem` in the build
# tree, the imported `unimem::unimem` when found through find_package (unimem-config.cmake).
# Detection runs in the consumer's configure step, with the consumer's compilers.
#
# Backend and the language kernels are compiled as (UNIMEM_BACKEND empty), first match wins:
#   1. the project enabled CMake's HIP language      -> HIP, kernels compiled as HIP
#   2. the project enabled CMake's CUDA language     -> CUDA
#   3. CXX is hipcc                                  -> HIP (AMD, or NVIDIA as HIP_PLATFORM or
#                                                       `hipconfig --platform` says), as C++
#   4. a CUDA compiler is found (check_language)     -> CUDA
#   5. a HIP compiler is found (check_language)      -> HIP, kernels compiled as HIP
# -DUNIMEM_BACKEND=HIP or CUDA forces the backend (HIP then uses hipcc as CXX if it is, else
# CMake's HIP language). unimem_gpu_target(<target>) compiles a target's C++ sources as the
# kernel language and enables that language if the project has not: the same CMakeLists.txt
# works for every toolchain.
#
# GPU targets: UNIMEM_HIP_ARCHITECTURES / UNIMEM_CUDA_ARCHITECTURES when set; else the GPUs of
# this machine; else a default set (AMD: the CDNA2/3 and RDNA2/3/4 targets the compiler
# accepts; NVIDIA: 80;90 with PTX of the last). The configure output says which and why.
#
# Sets (cache, internal): UNIMEM_BACKEND_RESOLVED (HIP|CUDA), UNIMEM_HIP_PLATFORM (amd|nvidia),
# UNIMEM_KERNEL_LANGUAGE (CXX|HIP|CUDA|NONE), UNIMEM_HIP_ARCHITECTURES_RESOLVED,
# UNIMEM_CUDA_ARCHITECTURES_RESOLVED; UNIMEM_CXX_IS_HIPCC.

if(NOT _unimem_target)
  set(_unimem_target unimem)
endif()

# The toolchain's usage requirements (the backend macro, the runtime's headers and library, the
# GPU targets) go on the target through _unimem_interface(<target_command> <items>...). On
# unimem's own target they are $<BUILD_INTERFACE:...>, so that its export set
# (unimem-targets.cmake, installed and packaged) names no toolchain: an installed unimem gets
# them from this file, run again in the consumer's configure step (unimem-config.cmake).
function(_unimem_interface command)
  set(_items ${ARGN})
  get_target_property(_imported ${_unimem_target} IMPORTED)
  if(NOT _imported)
    list(TRANSFORM _items PREPEND "$<BUILD_INTERFACE:")
    list(TRANSFORM _items APPEND ">")
  endif()
  if(command STREQUAL "system_include_directories")
    target_include_directories(${_unimem_target} SYSTEM INTERFACE ${_items})
  else()
    cmake_language(CALL target_${command} ${_unimem_target} INTERFACE ${_items})
  endif()
endfunction()

set(UNIMEM_BACKEND "" CACHE STRING
    "GPU backend: HIP or CUDA; empty detects it (see cmake/unimem-backend.cmake)")
set_property(CACHE UNIMEM_BACKEND PROPERTY STRINGS "" HIP CUDA)
set(UNIMEM_HIP_ARCHITECTURES "" CACHE STRING
    "AMD GPU targets (e.g. gfx90a;gfx1100); empty: this machine's AMD GPUs, else the CDNA2/3 and RDNA2/3/4 targets the compiler accepts")
set(UNIMEM_CUDA_ARCHITECTURES "" CACHE STRING
    "NVIDIA architectures (e.g. 80;90; PTX of the last is embedded too); empty: this machine's GPUs, else 80;90")

# Either separator: gfx90a;gfx1100 or gfx90a,gfx1100 (handy on command lines and in presets).
string(REPLACE "," ";" UNIMEM_HIP_ARCHITECTURES "${UNIMEM_HIP_ARCHITECTURES}")
string(REPLACE "," ";" UNIMEM_CUDA_ARCHITECTURES "${UNIMEM_CUDA_ARCHITECTURES}")

get_filename_component(_unimem_cxx_name "${CMAKE_CXX_COMPILER}" NAME)
if(_unimem_cxx_name MATCHES "^hipcc")
  set(UNIMEM_CXX_IS_HIPCC TRUE)
else()
  set(UNIMEM_CXX_IS_HIPCC FALSE)
endif()

get_property(_unimem_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
string(TOUPPER "${UNIMEM_BACKEND}" _unimem_backend)
set(_unimem_kernel_language "")
if(_unimem_backend STREQUAL "" OR _unimem_backend STREQUAL "HIP")
  if("HIP" IN_LIST _unimem_languages)
    set(_unimem_backend HIP)
    set(_unimem_kernel_language HIP)
  elseif(_unimem_backend STREQUAL "" AND "CUDA" IN_LIST _unimem_languages)
    set(_unimem_backend CUDA)
  elseif(UNIMEM_CXX_IS_HIPCC)
    set(_unimem_backend HIP)
    set(_unimem_kernel_language CXX)
  endif()
endif()
if(_unimem_backend STREQUAL "")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(_unimem_backend CUDA)
  else()
    check_language(HIP)
    if(CMAKE_HIP_COMPILER)
      set(_unimem_backend HIP)
      set(_unimem_kernel_language HIP)
    else()
      message(FATAL_ERROR
        "unimem: no GPU compiler found. Configure with CXX=hipcc (AMD; add HIP_PLATFORM=nvidia "
        "for NVIDIA), install ROCm or CUDA so that CMake finds a HIP or CUDA compiler (or pass "
        "-DCMAKE_HIP_COMPILER= / -DCMAKE_CUDA_COMPILER=), or force the backend with "
        "-DUNIMEM_BACKEND=HIP|CUDA.")
    endif()
  endif()
elseif(NOT _unimem_backend MATCHES "^(HIP|CUDA)$")
  message(FATAL_ERROR "unimem: UNIMEM_BACKEND must be HIP or CUDA, not '${UNIMEM_BACKEND}'")
endif()
if(_unimem_backend STREQUAL "HIP" AND _unimem_kernel_language STREQUAL "")
  # HIP forced with a plain C++ compiler: kernels through CMake's HIP language where it works
  # (AMD), else host code only (the HIP API from g++/clang++; unimem_gpu_target() refuses).
  if(NOT "$ENV{HIP_PLATFORM}" MATCHES "^(nvidia|nvcc)$")
    include(CheckLanguage)
    check_language(HIP)
  endif()
  if(CMAKE_HIP_COMPILER)
    set(_unimem_kernel_language HIP)
  else()
    set(_unimem_kernel_language NONE)
  endif()
elseif(_unimem_backend STREQUAL "CUDA")
  set(_unimem_kernel_language CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    include(CheckLanguage)
    check_language(CUDA)
  endif()
endif()
# Cache (internal) so that unimem_gpu_target() sees them in every directory of the project.
set(UNIMEM_BACKEND_RESOLVED ${_unimem_backend} CACHE INTERNAL "unimem's backend: HIP or CUDA")
set(UNIMEM_KERNEL_LANGUAGE ${_unimem_kernel_language} CACHE INTERNAL
    "The language unimem_gpu_target() compiles kernels as: CXX (hipcc), HIP, CUDA, or NONE (host code only)")

target_compile_features(${_unimem_target} INTERFACE cxx_std_17)

# ---- GPU targets ----

# AMD targets the compiler accepts, from a candidate list (probed once; results cached).
function(_unimem_hip_accepted out)
  if(UNIMEM_KERNEL_LANGUAGE STREQUAL "HIP")
    set(_cc "${CMAKE_HIP_COMPILER}")
    set(_lang -x hip)
  else()
    set(_cc "${CMAKE_CXX_COMPILER}")
    set(_lang "")
  endif()
  set(_dir "${CMAKE_BINARY_DIR}/CMakeFiles/unimem-arch-probe")
  file(WRITE "${_dir}/probe.hip" "#include <hip/hip_runtime.h>\n__global__ void k(int* p) { p[0] = 1; }\n")
  set(_ok "")
  foreach(_arch IN LISTS ARGN)
    string(MAKE_C_IDENTIFIER "UNIMEM_HIP_ACCEPTS_${_cc}_${_arch}" _var)
    if(NOT DEFINED ${_var})
      execute_process(COMMAND "${_cc}" ${_lang} --offload-arch=${_arch} -c "${_dir}/probe.hip"
                              -o "${_dir}/probe-${_arch}.o"
                      RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 120)
      if(_rc EQUAL 0)
        set(${_var} TRUE CACHE INTERNAL "")
      else()
        set(${_var} FALSE CACHE INTERNAL "")
      endif()
    endif()
    if(${_var})
      list(APPEND _ok ${_arch})
    endif()
  endforeach()
  set(${out} "${_ok}" PARENT_SCOPE)
endfunction()

# In the functions below: sets the caller's <out> to _found and <how> to where it came from.
macro(_unimem_native_result vendor tool)
  set(${out} "${_found}" PARENT_SCOPE)
  if(_found)
    set(${how} "the ${vendor} GPUs of this machine, found by ${tool}" PARENT_SCOPE)
  else()
    set(${how} "${tool} found no ${vendor} GPU here" PARENT_SCOPE)
  endif()
endmacro()

# The AMD GPUs of this machine (gfx names), and which tool said so or why none were found.
function(_unimem_hip_native out how)
  find_program(UNIMEM_AMDGPU_ARCH NAMES amdgpu-arch offload-arch rocm_agent_enumerator
               amdgpu-arch-22 amdgpu-arch-21 amdgpu-arch-20 amdgpu-arch-19 amdgpu-arch-18
               amdgpu-arch-17
               HINTS "$ENV{ROCM_PATH}/bin" "$ENV{ROCM_PATH}/llvm/bin" /opt/rocm/bin /opt/rocm/llvm/bin
               DOC "Lists the AMD GPUs of this machine (amdgpu-arch, offload-arch, rocm_agent_enumerator)")
  if(NOT UNIMEM_AMDGPU_ARCH)
    set(${out} "" PARENT_SCOPE)
    set(${how} "no tool to list AMD GPUs (amdgpu-arch, offload-arch, rocm_agent_enumerator)" PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND "${UNIMEM_AMDGPU_ARCH}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _text
                  ERROR_QUIET TIMEOUT 30)
  string(REGEX MATCHALL "gfx[0-9a-f]+" _found "${_text}")
  list(REMOVE_ITEM _found gfx000)  # rocm_agent_enumerator's CPU agent
  list(REMOVE_DUPLICATES _found)
  get_filename_component(_tool "${UNIMEM_AMDGPU_ARCH}" NAME)
  _unimem_native_result(AMD "${_tool}")
endfunction()

# The NVIDIA GPUs of this machine (compute capabilities as 90, 80, ...).
function(_unimem_cuda_native out how)
  find_program(UNIMEM_NVIDIA_SMI nvidia-smi DOC "Lists the NVIDIA GPUs of this machine")
  if(NOT UNIMEM_NVIDIA_SMI)
    set(${out} "" PARENT_SCOPE)
    set(${how} "no nvidia-smi here" PARENT_SCOPE)
    return()
  endif()
  set(_found "")
  execute_process(COMMAND "${UNIMEM_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _text ERROR_QUIET TIMEOUT 30)
  if(_rc EQUAL 0)
    string(REGEX MATCHALL "[0-9]+\\.[0-9]+" _caps "${_text}")
    foreach(_cap IN LISTS _caps)
      string(REPLACE "." "" _cap "${_cap}")
      list(APPEND _found ${_cap})
    endforeach()
    list(REMOVE_DUPLICATES _found)
  endif()
  _unimem_native_result(NVIDIA nvidia-smi)
endfunction()

# Resolves and reports the NVIDIA architectures (UNIMEM_CUDA_ARCHITECTURES_RESOLVED).
function(_unimem_cuda_architectures out)
  if(UNIMEM_CUDA_ARCHITECTURES)
    set(_archs "${UNIMEM_CUDA_ARCHITECTURES}")
    set(_why "UNIMEM_CUDA_ARCHITECTURES")
  else()
    _unimem_cuda_native(_archs _why)
    if(NOT _archs)
      set(_archs 80 90)
      string(APPEND _why "; the default 80;90, with PTX of 90 for newer GPUs")
    endif()
  endif()
  set(UNIMEM_CUDA_ARCHITECTURES_RESOLVED "${_archs}" CACHE INTERNAL "unimem's NVIDIA architectures")
  message(STATUS "unimem: NVIDIA architectures ${_archs} (${_why})")
  set(${out} "${_archs}" PARENT_SCOPE)
endfunction()

# ---- the backend on the target ----

if(UNIMEM_BACKEND_RESOLVED STREQUAL "HIP")
  if(UNIMEM_KERNEL_LANGUAGE STREQUAL "HIP" AND DEFINED CMAKE_HIP_PLATFORM)
    set(_unimem_platform "${CMAKE_HIP_PLATFORM}")
  elseif(DEFINED ENV{HIP_PLATFORM} AND NOT "$ENV{HIP_PLATFORM}" STREQUAL "")
    set(_unimem_platform "$ENV{HIP_PLATFORM}")
  else()
    find_program(UNIMEM_HIPCONFIG hipconfig HINTS "$ENV{HIP_PATH}/bin" "$ENV{ROCM_PATH}/bin" /opt/rocm/bin)
    set(_unimem_platform amd)
    if(UNIMEM_HIPCONFIG AND NOT UNIMEM_KERNEL_LANGUAGE STREQUAL "HIP")
      execute_process(COMMAND "${UNIMEM_HIPCONFIG}" --platform OUTPUT_VARIABLE _unimem_platform
                      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
  endif()
  if(_unimem_platform MATCHES "^(nvidia|nvcc)$")
    set(UNIMEM_HIP_PLATFORM nvidia CACHE INTERNAL "unimem's HIP platform")
    if(UNIMEM_CXX_IS_HIPCC)
      # hipcc on NVIDIA links through nvcc, which refuses GCC's -Wl,-rpath,DIR: CMake's runtime
      # path for libraries outside the system folders (MPI's, for one) in nvcc's form, here and
      # in try_compile (find_package(MPI) checks MPI that way).
      set(CMAKE_SHARED_LIBRARY_RUNTIME_CXX_FLAG "-Xlinker=-rpath,")
      set(CMAKE_EXECUTABLE_RUNTIME_CXX_FLAG "-Xlinker=-rpath,")
      list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CMAKE_SHARED_LIBRARY_RUNTIME_CXX_FLAG)
      # The same for shared libraries: nvcc refuses GCC's -fPIC, -fvisibility=..., and
      # -Wl,-soname; they go to the host compiler and the linker in nvcc's form.
      set(CMAKE_CXX_COMPILE_OPTIONS_PIC "-Xcompiler=-fPIC")
      set(CMAKE_SHARED_LIBRARY_CXX_FLAGS "-Xcompiler=-fPIC")
      set(CMAKE_CXX_COMPILE_OPTIONS_VISIBILITY "-Xcompiler=-fvisibility=")
      set(CMAKE_CXX_COMPILE_OPTIONS_VISIBILITY_INLINES_HIDDEN "-Xcompiler=-fvisibility-inlines-hidden")
      set(CMAKE_SHARED_LIBRARY_SONAME_CXX_FLAG "-Xlinker=-soname,")
    endif()
  else()
    set(UNIMEM_HIP_PLATFORM amd CACHE INTERNAL "unimem's HIP platform")
  endif()

  find_path(UNIMEM_HIP_INCLUDE_DIR hip/hip_runtime_api.h
            HINTS "$ENV{HIP_PATH}/include" "$ENV{ROCM_PATH}/include" /opt/rocm/include)
  if(NOT UNIMEM_HIP_INCLUDE_DIR)
    message(FATAL_ERROR "unimem: HIP headers (hip/hip_runtime_api.h) not found; set HIP_PATH or ROCM_PATH")
  endif()
  set(_unimem_hip_version "")
  if(EXISTS "${UNIMEM_HIP_INCLUDE_DIR}/hip/hip_version.h")
    file(STRINGS "${UNIMEM_HIP_INCLUDE_DIR}/hip/hip_version.h" _v REGEX "#define HIP_VERSION_(MAJOR|MINOR) ")
    string(REGEX REPLACE ".*HIP_VERSION_MAJOR ([0-9]+).*" "\\1" _major "${_v}")
    string(REGEX REPLACE ".*HIP_VERSION_MINOR ([0-9]+).*" "\\1" _minor "${_v}")
    set(_unimem_hip_version "${_major}.${_minor}")
  endif()
  set(UNIMEM_HIP_VERSION "${_unimem_hip_version}" CACHE INTERNAL "HIP version of the headers (major.minor)")
  _unimem_interface(compile_definitions UNIMEM_BACKEND_HIP)
  if(NOT UNIMEM_HIP_INCLUDE_DIR MATCHES "^/usr/include/?$")
    _unimem_interface(system_include_directories "${UNIMEM_HIP_INCLUDE_DIR}")
  endif()

  if(UNIMEM_HIP_PLATFORM STREQUAL "amd" AND UNIMEM_KERNEL_LANGUAGE STREQUAL "NONE")
    # A plain C++ compiler: host-side HIP API only.
    find_package(hip CONFIG QUIET HINTS "$ENV{ROCM_PATH}" /opt/rocm)
    if(TARGET hip::host)
      _unimem_interface(link_libraries hip::host)
    else()
      _unimem_interface(compile_definitions __HIP_PLATFORM_AMD__=1)
      find_library(UNIMEM_HIP_LIBRARY amdhip64
                   HINTS "$ENV{HIP_PATH}/lib" "$ENV{ROCM_PATH}/lib" /opt/rocm/lib)
      if(NOT UNIMEM_HIP_LIBRARY)
        message(FATAL_ERROR "unimem: libamdhip64 not found; set HIP_PATH or ROCM_PATH")
      endif()
      _unimem_interface(link_libraries "${UNIMEM_HIP_LIBRARY}")
    endif()
  elseif(UNIMEM_HIP_PLATFORM STREQUAL "amd")
    if(UNIMEM_HIP_ARCHITECTURES)
      set(_archs "${UNIMEM_HIP_ARCHITECTURES}")
      set(_why "UNIMEM_HIP_ARCHITECTURES")
    else()
      _unimem_hip_native(_archs _native_how)
      if(_archs)
        set(_why "${_native_how}")
      else()
        # CDNA2, CDNA3 (gfx940 is the early MI300 id older compilers know), RDNA2, RDNA3, RDNA4.
        set(_candidates gfx90a gfx942 gfx940 gfx1030 gfx1100 gfx1201)
        _unimem_hip_accepted(_archs ${_candidates})
        if("gfx942" IN_LIST _archs)
          list(REMOVE_ITEM _archs gfx940)  # one CDNA3 target: the final id where known
        endif()
        set(_refused ${_candidates})
        list(REMOVE_ITEM _refused ${_archs} gfx940)
        set(_why "${_native_how}; the default set for CDNA2/3 and RDNA2/3/4 this compiler accepts")
        if(_refused)
          string(REPLACE ";" ", " _refused "${_refused}")
          string(APPEND _why " (it refuses ${_refused})")
        endif()
        if(NOT _archs)
          message(FATAL_ERROR "unimem: the HIP compiler accepts none of gfx90a, gfx942, gfx940, "
                              "gfx1030, gfx1100, gfx1201; set UNIMEM_HIP_ARCHITECTURES")
        endif()
      endif()
    endif()
    set(UNIMEM_HIP_ARCHITECTURES_RESOLVED "${_archs}" CACHE INTERNAL "unimem's AMD targets")
    message(STATUS "unimem: AMD targets ${_archs} (${_why})")

    if(UNIMEM_KERNEL_LANGUAGE STREQUAL "CXX")
      # hipcc compiles every C++ file as HIP. The targets go to the link too: without one hipcc
      # asks rocm_agent_enumerator for the GPUs.
      foreach(_arch IN LISTS UNIMEM_HIP_ARCHITECTURES_RESOLVED)
        _unimem_interface(compile_options "--offload-arch=${_arch}")
        _unimem_interface(link_options "--offload-arch=${_arch}")
      endforeach()
    else()
      # CMake's HIP language compiles the kernels (and links the runtime); plain C++ files of
      # the same target use the host API through hip::host where the HIP package provides it.
      find_package(hip CONFIG QUIET HINTS "$ENV{ROCM_PATH}" /opt/rocm)
      if(TARGET hip::host)
        _unimem_interface(link_libraries hip::host)
      else()
        _unimem_interface(compile_definitions $<$<COMPILE_LANGUAGE:CXX>:__HIP_PLATFORM_AMD__=1>)
      endif()
    endif()
  else()  # HIP on NVIDIA
    if(UNIMEM_KERNEL_LANGUAGE STREQUAL "HIP")
      message(FATAL_ERROR "unimem: HIP on NVIDIA is built with CXX=hipcc and HIP_PLATFORM=nvidia; "
                          "CMake's HIP language for NVIDIA is not supported by unimem")
    endif()
    find_package(CUDAToolkit QUIET)
    if(_unimem_hip_version VERSION_LESS 6 AND CUDAToolkit_VERSION VERSION_GREATER_EQUAL 12)
      message(FATAL_ERROR
        "unimem: HIP ${_unimem_hip_version}'s headers for NVIDIA do not compile against CUDA "
        "${CUDAToolkit_VERSION} (CUDA 12 removed texture references and changed cudaDeviceProp "
        "and the prefetch/advice signatures those headers use). What works: HIP 5.x with CUDA "
        "11.x (e.g. Debian 12's nvidia-cuda-toolkit 11.8, see docs/building.md), or HIP 6/7 with "
        "CUDA 12/13. Point CUDA_PATH at the CUDA to use.")
    endif()
    if(UNIMEM_KERNEL_LANGUAGE STREQUAL "NONE")
      # A plain C++ compiler: host-side HIP API only, over the CUDA runtime.
      _unimem_interface(compile_definitions __HIP_PLATFORM_NVIDIA__=1)
      if(NOT TARGET CUDA::cudart)
        message(FATAL_ERROR "unimem: HIP on NVIDIA needs the CUDA runtime; FindCUDAToolkit found none")
      endif()
      _unimem_interface(link_libraries CUDA::cudart)
    else()
      _unimem_cuda_architectures(_archs)
      foreach(_arch IN LISTS _archs)
        _unimem_interface(compile_options "-gencode=arch=compute_${_arch},code=sm_${_arch}")
      endforeach()
      list(GET _archs -1 _arch)
      _unimem_interface(compile_options "-gencode=arch=compute_${_arch},code=compute_${_arch}")
    endif()
    if(_unimem_hip_version VERSION_GREATER_EQUAL 6)
      # HIP >= 6 on NVIDIA implements some hip* calls (hipDeviceGetAttribute, ...) with the CUDA
      # driver API: link libcuda too.
      if(NOT TARGET CUDA::cuda_driver)
        message(FATAL_ERROR "unimem: HIP ${_unimem_hip_version} on NVIDIA needs the CUDA driver "
                            "library (libcuda); CMake's FindCUDAToolkit did not find it")
      endif()
      _unimem_interface(link_libraries CUDA::cuda_driver)
    endif()
  endif()
  message(STATUS "unimem: backend HIP ${_unimem_hip_version}, platform ${UNIMEM_HIP_PLATFORM}, "
                 "kernels compiled as ${UNIMEM_KERNEL_LANGUAGE}, headers in ${UNIMEM_HIP_INCLUDE_DIR}")
else()
  set(UNIMEM_HIP_PLATFORM "" CACHE INTERNAL "unimem's HIP platform")
  _unimem_interface(compile_definitions UNIMEM_BACKEND_CUDA)
  if(CMAKE_CUDA_COMPILER AND NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT})
    # The toolkit of the CUDA compiler in use, not another one found first on PATH.
    get_filename_component(_unimem_cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    get_filename_component(CUDAToolkit_ROOT "${_unimem_cuda_bin}" DIRECTORY)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    # Link the runtime the way nvcc-compiled targets do, so that a process holds one copy of it.
    if(CMAKE_CUDA_RUNTIME_LIBRARY MATCHES "^[Ss]hared$")
      _unimem_interface(link_libraries CUDA::cudart)
    else()
      _unimem_interface(link_libraries CUDA::cudart_static)
    endif()
  else()
    # FindCUDAToolkit cannot read some distributions' layouts (Debian's CUDA 12.5 with CMake 4.4:
    # nvcc's TOP is /usr/lib/nvidia-cuda-toolkit, the headers are in /usr/include). unimem needs
    # two pieces, for files a plain C++ compiler builds: the runtime's headers and library.
    find_path(UNIMEM_CUDA_INCLUDE_DIR cuda_runtime_api.h HINTS "${CUDAToolkit_ROOT}/include")
    find_library(UNIMEM_CUDART_LIBRARY NAMES cudart_static cudart
                 HINTS "${CUDAToolkit_ROOT}/lib64" "${CUDAToolkit_ROOT}/lib")
    if(NOT UNIMEM_CUDA_INCLUDE_DIR OR NOT UNIMEM_CUDART_LIBRARY)
      message(FATAL_ERROR "unimem: CMake's FindCUDAToolkit found no usable CUDA toolkit, and "
                          "the CUDA runtime's header and library are not next to the compiler "
                          "either (${CUDAToolkit_ROOT}); pass -DCUDAToolkit_ROOT=")
    endif()
    find_package(Threads REQUIRED)
    if(NOT UNIMEM_CUDA_INCLUDE_DIR MATCHES "^/usr/include/?$")
      _unimem_interface(system_include_directories "${UNIMEM_CUDA_INCLUDE_DIR}")
    endif()
    _unimem_interface(link_libraries "${UNIMEM_CUDART_LIBRARY}" Threads::Threads ${CMAKE_DL_LIBS} rt)
    message(STATUS "unimem: the CUDA runtime from ${UNIMEM_CUDA_INCLUDE_DIR} and ${UNIMEM_CUDART_LIBRARY} "
                   "(FindCUDAToolkit cannot read this toolkit's layout)")
  endif()
  message(STATUS "unimem: backend CUDA ${CUDAToolkit_VERSION}")
  _unimem_cuda_architectures(_archs)
endif()

# unimem_gpu_target(<target>)
# Makes <target>'s kernels compile for the backend: with CUDA, or with CMake's HIP language, its
# C++ sources (.cpp .cc .cxx .cu) compile as that language for the resolved GPU targets, and the
# language is enabled here if the project has not enabled it; with CXX=hipcc nothing is needed
# (hipcc compiles C++ files as HIP, and the targets come from unimem::unimem). .hip files are
# HIP sources in every HIP mode. The target must link unimem::unimem. A macro, so that it can
# enable the language in the caller's directory.
# unimem::compiled: for separate compilation (include/unimem/compiled.hpp). A static library of
# unimem's out-of-line functions (error building, the property cache, report()), compiled once
# as the kernel language; it defines UNIMEM_SEPARATE_COMPILATION for its users and links
# unimem::unimem. Link it instead of unimem::unimem (in every target of the program) to compile
# those functions once instead of in every translation unit. Not built unless linked. Created
# where the kernel language is available: at once for hipcc or a language the project enabled,
# else by the first unimem_gpu_target() (target_link_libraries may name it before that).
macro(_unimem_compiled_target)
  if(NOT TARGET unimem_compiled AND (UNIMEM_KERNEL_LANGUAGE MATCHES "^(CXX|NONE)$" OR
                                     CMAKE_${UNIMEM_KERNEL_LANGUAGE}_COMPILER_LOADED))
    set(_unimem_compiled_source "${CMAKE_BINARY_DIR}/unimem-compiled/compiled.cpp")
    file(CONFIGURE OUTPUT "${_unimem_compiled_source}" CONTENT
         "// unimem::compiled (generated): unimem's out-of-line functions, compiled once.\n#include <unimem/compiled.hpp>\n")
    add_library(unimem_compiled STATIC EXCLUDE_FROM_ALL "${_unimem_compiled_source}")
    add_library(unimem::compiled ALIAS unimem_compiled)
    target_link_libraries(unimem_compiled PUBLIC unimem::unimem)
    target_compile_definitions(unimem_compiled PUBLIC UNIMEM_SEPARATE_COMPILATION)
    _unimem_gpu_target_properties(unimem_compiled)
  endif()
endmacro()

macro(unimem_gpu_target _unimem_gpu_target_name)
  if(UNIMEM_KERNEL_LANGUAGE STREQUAL "NONE")
    message(FATAL_ERROR "unimem_gpu_target(${_unimem_gpu_target_name}): the HIP backend was "
                        "chosen with a plain C++ compiler and no HIP compiler was found, so no "
                        "kernel can be compiled. Configure with CXX=hipcc, or with a HIP compiler "
                        "CMake finds (-DCMAKE_HIP_COMPILER=).")
  endif()
  if(UNIMEM_KERNEL_LANGUAGE MATCHES "^(CUDA|HIP)$" AND NOT CMAKE_${UNIMEM_KERNEL_LANGUAGE}_COMPILER_LOADED)
    enable_language(${UNIMEM_KERNEL_LANGUAGE})
  endif()
  _unimem_gpu_target_properties(${_unimem_gpu_target_name})
  _unimem_compiled_target()
endmacro()

function(_unimem_gpu_target_properties target)
  if(NOT UNIMEM_KERNEL_LANGUAGE MATCHES "^(CUDA|HIP)$")
    return()
  endif()
  get_target_property(_sources ${target} SOURCES)
  set(_gpu_sources "")
  foreach(_s IN LISTS _sources)
    if(_s MATCHES "\\.(cpp|cc|cxx|cu)$" OR (UNIMEM_KERNEL_LANGUAGE STREQUAL "HIP" AND _s MATCHES "\\.hip$"))
      list(APPEND _gpu_sources "${_s}")
    endif()
  endforeach()
  if(_gpu_sources)
    set_source_files_properties(${_gpu_sources} TARGET_DIRECTORY ${target}
                                PROPERTIES LANGUAGE ${UNIMEM_KERNEL_LANGUAGE})
  endif()
  if(UNIMEM_KERNEL_LANGUAGE STREQUAL "CUDA")
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${UNIMEM_CUDA_ARCHITECTURES_RESOLVED}"
                                               CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  else()
    set_target_properties(${target} PROPERTIES HIP_ARCHITECTURES "${UNIMEM_HIP_ARCHITECTURES_RESOLVED}"
                                               HIP_STANDARD 17 HIP_STANDARD_REQUIRED ON)
  endif()
endfunction()

_unimem_compiled_target()
