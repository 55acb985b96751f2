# The checks of what a compiler makes of unimem's headers (included by tests/CMakeLists.txt with
# UNIMEM_TEST_COMPILE_CHECKS, ON by default): every public header alone, and the mistakes that
# must not compile, each with its own message. They depend on the compiler and its standard
# library, not on sanitizers: the test command runs them on every toolchain but sanitize.

# Every public header of the layers compiles on its own (one translation unit each, included
# twice for its guard); the 0.2 paths at the top of include/unimem, which only forward, compile
# together in one more (with the umbrella header and compiled.hpp's mode, on their own).
file(GLOB _unimem_headers RELATIVE ${PROJECT_SOURCE_DIR}/include CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/include/unimem/core/*.hpp ${PROJECT_SOURCE_DIR}/include/unimem/placement/*.hpp
     ${PROJECT_SOURCE_DIR}/include/unimem/pool/*.hpp ${PROJECT_SOURCE_DIR}/include/unimem/interop/*.hpp
     ${PROJECT_SOURCE_DIR}/include/unimem/diagnostics/*.hpp)
list(APPEND _unimem_headers unimem/unimem.hpp unimem/core.hpp unimem/compiled.hpp)
file(GLOB _unimem_forwarders RELATIVE ${PROJECT_SOURCE_DIR}/include CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/include/unimem/*.hpp)
list(REMOVE_ITEM _unimem_forwarders unimem/mpi.hpp unimem/unimem.hpp unimem/core.hpp
     unimem/compiled.hpp)  # mpi.hpp needs MPI: compiled alone in tests/mpi
# unimem_header_sources(out header...): a translation unit per header, including it twice.
function(unimem_header_sources out)
  set(_sources "")
  foreach(_h IN LISTS ARGN)
    string(MAKE_C_IDENTIFIER "${_h}" _id)
    set(_src ${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp)
    set(_prelude "")
    if(_h STREQUAL "unimem/compiled.hpp")
      # The separate-compilation source compiles alone only as it is meant to be used.
      set(_prelude "#define UNIMEM_SEPARATE_COMPILATION 1\n")
    endif()
    file(CONFIGURE OUTPUT ${_src} CONTENT "${_prelude}#include <${_h}>\n#include <${_h}>  // and twice\n")
    list(APPEND _sources ${_src})
  endforeach()
  set(${out} ${_sources} PARENT_SCOPE)
endfunction()
# Compiled as host code, which is what "compiles alone" is about (the includes a header needs);
# its device code is compiled by the tests, which include every header with the device
# compiler. A third of a toolchain's build time before (an nvcc or hipcc pass per header and GPU
# target); hipcc compiles the host side only (--cuda-host-only, clang's flag for HIP too).
# unimem_header_check(target library source...): the sources compiled against the library.
function(unimem_header_check target library)
  add_library(${target} OBJECT ${ARGN})
  target_link_libraries(${target} PRIVATE ${library})
  if(UNIMEM_CXX_IS_HIPCC AND UNIMEM_HIP_PLATFORM STREQUAL "amd")
    target_compile_options(${target} PRIVATE --cuda-host-only)
  endif()
  unimem_internal_warnings(${target})
endfunction()
unimem_header_sources(_header_sources ${_unimem_headers})
set(_forwarding "")
foreach(_h IN LISTS _unimem_forwarders)
  string(APPEND _forwarding "#include <${_h}>\n")
endforeach()
file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/headers/forwarding_paths.cpp CONTENT "${_forwarding}")
list(APPEND _header_sources ${CMAKE_CURRENT_BINARY_DIR}/headers/forwarding_paths.cpp)
find_program(UNIMEM_PLAIN_CXX NAMES g++ c++ clang++ DOC "A plain C++ compiler for the consumer test")
if(UNIMEM_CXX_IS_HIPCC AND UNIMEM_HIP_PLATFORM STREQUAL "nvidia" AND UNIMEM_PLAIN_CXX)
  # HIP 5's hipcc on NVIDIA compiles every C++ file as CUDA (it adds -x cu, which a -x c++ of
  # ours only contradicts): a device pass per header and GPU target, 265 of the toolchain's 716
  # compile seconds. The headers compile alone as host code with the plain C++ compiler and
  # unimem-hip-nvidia.pc's flags, as a host file of a HIP-on-NVIDIA program does.
  separate_arguments(_pc_defines UNIX_COMMAND "${UNIMEM_PC_DEFINES}")  # the build's options
  set(_objects "")
  foreach(_src IN LISTS _header_sources)
    get_filename_component(_name "${_src}" NAME_WE)
    set(_object ${CMAKE_CURRENT_BINARY_DIR}/headers/${_name}.o)
    add_custom_command(OUTPUT ${_object}
      COMMAND ${UNIMEM_PLAIN_CXX} -std=c++17 -O2 -DUNIMEM_BACKEND_HIP -D__HIP_PLATFORM_NVIDIA__=1
              ${_pc_defines} -I${PROJECT_SOURCE_DIR}/include -Wall -Wextra -Werror -MD -MF ${_object}.d
              -c ${_src} -o ${_object}
      DEPENDS ${_src} DEPFILE ${_object}.d
      COMMENT "unimem: ${_name}.cpp compiled alone (${UNIMEM_PLAIN_CXX}, HIP on NVIDIA)" VERBATIM)
    list(APPEND _objects ${_object})
  endforeach()
  add_custom_target(unimem_header_check ALL DEPENDS ${_objects})
else()
  unimem_header_check(unimem_header_check unimem::unimem ${_header_sources})
endif()
list(LENGTH _header_sources _n_headers)
message(STATUS "unimem: ${_n_headers} public headers compiled alone")

# Compile-time checks: each case must fail to compile with its own unimem message (and not
# with a wall of overload errors); case 0 of each file is the control that must compile.
#   launch_arguments: launch() arguments; access_tags: in/out/inout over temporaries, const
#   ranges and pinned memory; stream_lifetime: temporary streams kept as stream_refs;
#   separate_compilation: <unimem/compiled.hpp> used without its macro or after other headers;
#   dlpack: element types DLPack cannot describe, a buffer exported without giving it up;
#   windows: a walk's range without its access tag, a temporary stream.
set(_cases
  "launch_arguments|0|"
  "launch_arguments|1|unimem::launch: argument I does not convert"
  "launch_arguments|2|unimem::launch: argument I does not convert"
  "launch_arguments|3|unimem::launch: a temporary buffer cannot be a kernel argument"
  "launch_arguments|4|unimem::launch: the number of arguments differs"
  "launch_arguments|5|unimem::launch: kernel arguments must be trivially copyable"
  "launch_arguments|6|unimem::launch: argument I does not convert"
  "launch_arguments|7|unimem::launch: argument I does not convert"
  "launch_arguments|8|unimem::launch: argument I is a host container"
  "launch_arguments|9|access tags place managed memory"
  "launch_arguments|10|unimem::launch: argument I does not convert"
  "access_tags|0|"
  "access_tags|1|unimem::in/out/inout: a temporary container would be freed before the kernel"
  "access_tags|2|unimem::in/out/inout: a temporary container would be freed before the kernel"
  "access_tags|3|unimem::out: the kernel writes this range"
  "access_tags|4|unimem::inout: the kernel writes this range"
  "access_tags|5|access tags place managed memory"
  "stream_lifetime|0|"
  "stream_lifetime|1|a temporary stream cannot become a stream_ref"
  "stream_lifetime|2|a temporary stream cannot become a stream_ref"
  "stream_lifetime|3|a temporary stream cannot become a stream_ref"
  "stream_lifetime|4|a temporary stream cannot become a stream_ref"
  "stream_lifetime|5|a temporary stream cannot become a stream_ref"
  "dlpack|0|"
  "dlpack|1|unimem::dlpack::dtype_of: DLPack cannot describe this element type"
  "dlpack|2|unimem::dlpack::dtype_of: DLPack cannot describe this element type"
  "dlpack|3|unimem::dlpack::to_dlpack: the tensor owns the memory: move the buffer in"
  "windows|0|"
  "windows|1|unimem::windows: give each range the loop walks with its access tag"
  "windows|2|unimem::windows: a temporary stream cannot carry a walk"
  "separate_compilation|0|"
  "separate_compilation|1|<unimem/compiled.hpp> is for separate compilation"
  "separate_compilation|2|<unimem/compiled.hpp> must come before every other unimem header")
# warp::static_size where the AMD compiler cannot state the wavefront size at compile time
# (clang >= 22) must not compile; where it can, the same file must compile.
if(UNIMEM_BACKEND_RESOLVED STREQUAL "HIP" AND UNIMEM_HIP_PLATFORM STREQUAL "amd")
  if(UNIMEM_KERNEL_LANGUAGE STREQUAL "HIP")
    set(_cc "${CMAKE_HIP_COMPILER}" -x hip)
  else()
    set(_cc "${CMAKE_CXX_COMPILER}")
  endif()
  list(GET UNIMEM_HIP_ARCHITECTURES_RESOLVED 0 _arch)
  execute_process(COMMAND ${_cc} --offload-arch=${_arch} --cuda-device-only -E -dM
                          ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/warp_static_size.cpp
                          -I${PROJECT_SOURCE_DIR}/include -DUNIMEM_CASE=0
                  OUTPUT_VARIABLE _macros ERROR_QUIET)
  if(_macros MATCHES "#define __AMDGCN_WAVEFRONT_SIZE ")
    list(APPEND _cases "warp_static_size|0|")
    message(STATUS "unimem: this AMD compiler states the wavefront size at compile time")
  else()
    list(APPEND _cases "warp_static_size|1|unimem::warp::static_size: this compiler does not state")
    message(STATUS "unimem: this AMD compiler does not state the wavefront size at compile time: "
                   "warp::static_size must not compile (compile.warp_static_size.1)")
  endif()
endif()
if(TARGET unimem::mpi)  # mpi_requests: temporaries as isend/irecv ranges, allreduce of structs
  list(APPEND _cases
       "mpi_requests|0|"
       "mpi_requests|1|unimem::mpi::isend: a temporary container would be freed"
       "mpi_requests|2|unimem::mpi::irecv: a temporary container would be freed"
       "mpi_requests|3|unimem::mpi::allreduce needs an element type with an MPI predefined datatype")
endif()
# Where the generator writes compile_commands.json (Ninja, Makefiles), each case runs its own
# compile command and the cases run side by side; elsewhere each builds its target, one at a time
# (two builds of one tree at once would write its logs together).
if(CMAKE_GENERATOR STREQUAL "Ninja" OR CMAKE_GENERATOR MATCHES "Makefiles$")
  set(_compile_commands ON)
else()
  set(_compile_commands OFF)
endif()
foreach(_case IN LISTS _cases)
  string(REPLACE "|" ";" _parts "${_case}")
  list(GET _parts 0 _file)
  list(GET _parts 1 _n)
  list(GET _parts 2 _message)
  set(_target compile_fail_${_file}_${_n})
  add_executable(${_target} EXCLUDE_FROM_ALL compile_fail/${_file}.cpp)
  if(_file MATCHES "^mpi_")
    target_link_libraries(${_target} PRIVATE unimem::mpi)
  else()
    target_link_libraries(${_target} PRIVATE unimem::unimem)
  endif()
  target_compile_definitions(${_target} PRIVATE UNIMEM_CASE=${_n})
  unimem_gpu_target(${_target})
  if(_compile_commands)
    # The case's compile command alone, beside the others (tests/compile_fail/run_case.cmake).
    set_target_properties(${_target} PROPERTIES EXPORT_COMPILE_COMMANDS ON)
    add_test(NAME compile.${_file}.${_n}
             COMMAND ${CMAKE_COMMAND} -DCOMMANDS=${CMAKE_BINARY_DIR}/compile_commands.json
                     -DTARGET=${_target} -P ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/run_case.cmake)
    set_tests_properties(compile.${_file}.${_n} PROPERTIES LABELS "toolchain;compile_check")
  else()
    add_test(NAME compile.${_file}.${_n}
             COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ${_target})
    set_tests_properties(compile.${_file}.${_n} PROPERTIES
      RESOURCE_LOCK unimem_build_tree LABELS "toolchain;compile_check")
  endif()
  set_tests_properties(compile.${_file}.${_n} PROPERTIES
    FAIL_REGULAR_EXPRESSION "no matching function|candidate template ignored")
  if(_message)
    set_tests_properties(compile.${_file}.${_n} PROPERTIES
      PASS_REGULAR_EXPRESSION "${_message}")
  endif()
endforeach()
