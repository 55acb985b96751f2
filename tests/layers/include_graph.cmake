# The include graph of unimem's headers keeps its layers (docs/architecture.md):
#   0 vocabulary  runtime-free value types and the config; include only layer 0
#   1 backend     detail/backend/*: the only files that call hip*/cuda* functions
#   2 helpers     detail/*.hpp: include layers 0-2, never a runtime-level public header
#   3 runtime     every other public header
# Fails, naming the file and the include, when an include runs back up a layer, or when a file
# outside the backend calls a hip*/cuda* runtime function.
# Compile time (docs/architecture.md, "Compile time"): a header may include only the light
# standard headers below (cuda_runtime.h brings most of them anyway); the heavy ones each cost a
# small CUDA translation unit 5-50 % more compile time and are allowed only where named here,
# and the umbrella header reaches none of them but <string> and <vector>, which the translation
# units users have include anyway (issue 25; allocator.hpp and memory_resource.hpp, which need
# the pmr headers, are left out of it).
# Usage: cmake -DINCLUDE_DIR=<repo>/include -P include_graph.cmake
cmake_minimum_required(VERSION 3.16)
set(_vocabulary config.hpp version.hpp argument_error.hpp view.hpp location.hpp stream_ref.hpp
    launch_config.hpp kernel_argument.hpp access.hpp detail/backend/handles.hpp
    detail/fixed_text.hpp)

function(_layer rel out)
  if(rel IN_LIST _vocabulary)
    set(${out} 0 PARENT_SCOPE)
  elseif(rel MATCHES "^detail/backend/")
    set(${out} 1 PARENT_SCOPE)
  elseif(rel MATCHES "^detail/")
    set(${out} 2 PARENT_SCOPE)
  else()
    set(${out} 3 PARENT_SCOPE)
  endif()
endfunction()

set(_light cstddef cstdint cstring cstdio cstdlib exception new type_traits utility limits
           initializer_list)
set(_allowed_allocator.hpp vector)                              # managed_vector
set(_allowed_memory_resource.hpp memory_resource mutex unordered_map)  # the pmr resources
# managed_pool (issue 28): its bookkeeping, and the pmr resource over it; not in the umbrella
set(_allowed_managed_pool.hpp map memory vector)
set(_allowed_managed_pool_resource.hpp map memory_resource)
set(_allowed_detail/atomic.hpp atomic)     # only for compilers without the __atomic builtins
set(_allowed_detail/backend/fault.hpp atomic)  # only in unimem's fault-injection test build
# Standard types at the edges (issue 25): report() and the versions are std::string,
# to_string(location) too; devices() and accessed_by() are std::vector.
set(_allowed_device.hpp string vector)
set(_allowed_placement.hpp string vector)
set(_allowed_dlpack.hpp complex memory)  # std::complex element types, std::shared_ptr owners
set(_allowed_placement_policy.hpp string)  # to_string(hint_status), a std::string (issue 25)
# Errors in the standard hierarchy (issue 25): std::runtime_error, std::length_error, ...
set(_allowed_error.hpp stdexcept)
set(_allowed_argument_error.hpp stdexcept)
set(_allowed_mpi/error.hpp stdexcept)  # mpi::error, a std::runtime_error
set(_allowed_mpi/path.hpp string)      # mpi::to_string(path|memory), std::string
set(_allowed_mpi/staging.hpp memory)   # std::allocator: such containers are pageable, known
                                       # at compile time (no pointer query per message)
set(_allowed_mpi/deferred.hpp mutex)   # the deferred sends, posted from any thread
set(_umbrella_may_reach ${_light} string vector stdexcept)

set(_root "${INCLUDE_DIR}/unimem")
file(GLOB_RECURSE _headers RELATIVE "${_root}" "${_root}/*.hpp")
set(_problems "")
set(_edges 0)
foreach(_h IN LISTS _headers)
  _layer("${_h}" _from)
  file(STRINGS "${_root}/${_h}" _lines)
  get_filename_component(_dir "${_h}" DIRECTORY)
  set(_depth 0)  # of #if blocks: an include inside one is compiler-specific (detail/atomic.hpp)
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^#if")
      math(EXPR _depth "${_depth} + 1")
    elseif(_line MATCHES "^#endif" AND _depth GREATER 0)
      math(EXPR _depth "${_depth} - 1")
    endif()
    if(_line MATCHES "^#include \"([^\"]+)\"")
      set(_target "${CMAKE_MATCH_1}")
      if(_dir)
        set(_target "${_dir}/${_target}")
      endif()
      get_filename_component(_target "${_root}/${_target}" ABSOLUTE)
      file(RELATIVE_PATH _target "${_root}" "${_target}")
      if(NOT EXISTS "${_root}/${_target}")
        list(APPEND _problems "${_h}: includes ${_target}, which does not exist")
        continue()
      endif()
      _layer("${_target}" _to)
      list(APPEND "_unimem_includes_${_h}" "${_target}")
      math(EXPR _edges "${_edges} + 1")
      if(_to GREATER _from)
        list(APPEND _problems "${_h} (layer ${_from}) includes ${_target} (layer ${_to}): an include that runs back up")
      endif()
    elseif(_line MATCHES "^#include <(hip|cuda)")
      if(NOT _h MATCHES "^detail/backend/")
        list(APPEND _problems "${_h}: includes a runtime header (${_line}) outside detail/backend/")
      endif()
    elseif(_line MATCHES "^#include <([a-z_]+)>")
      set(_std "${CMAKE_MATCH_1}")
      if(NOT _std MATCHES "^unimem_")  # config.hpp's stop below C++17
        if(_depth EQUAL 0)
          list(APPEND "_std_includes_${_h}" "${_std}")
        endif()
        if(NOT _std IN_LIST _light AND NOT _std IN_LIST "_allowed_${_h}")
          list(APPEND _problems "${_h}: includes <${_std}>, which is not one of the light standard headers (tests/layers/include_graph.cmake, docs/architecture.md: Compile time)")
        endif()
      endif()
    endif()
    # Runtime calls outside the backend (comments are prose and may name them).
    string(REGEX REPLACE "//.*$" "" _code "${_line}")
    if(NOT _h MATCHES "^detail/backend/" AND _code MATCHES "[^A-Za-z_](hip|cuda)[A-Z][A-Za-z0-9_]*\\(")
      list(APPEND _problems "${_h}: calls the runtime outside detail/backend/: ${_line}")
    endif()
  endforeach()
endforeach()
# What the umbrella header reaches, through unimem's own unconditional includes.
set(_todo unimem.hpp)
set(_seen "")
set(_reached_std "")
while(_todo)
  list(POP_FRONT _todo _h)
  if(_h IN_LIST _seen)
    continue()
  endif()
  list(APPEND _seen "${_h}")
  list(APPEND _reached_std ${_std_includes_${_h}})
  list(APPEND _todo ${_unimem_includes_${_h}})
endwhile()
list(REMOVE_DUPLICATES _reached_std)
foreach(_std IN LISTS _reached_std)
  if(NOT _std IN_LIST _umbrella_may_reach)
    list(APPEND _problems "unimem.hpp reaches <${_std}>: the umbrella header must stay light (leave the header that needs it out, as memory_resource.hpp)")
  endif()
endforeach()

list(LENGTH _headers _n)
if(_problems)
  list(JOIN _problems "\n  " _text)
  message(FATAL_ERROR "unimem layers: ${_n} headers, problems:\n  ${_text}")
endif()
list(JOIN _reached_std " " _reached_text)
message("unimem layers: ${_n} headers, ${_edges} includes, every include points down a layer or within it; standard headers the umbrella reaches: ${_reached_text}")
