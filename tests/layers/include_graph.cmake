# The include graph of unimem's headers keeps its layers, which are its folders
# (docs/architecture.md, "Layers"):
#   0 core         core/ and core.hpp, which gathers it (core/detail/backend/: the only files
#                  that name hip*/cuda* calls or include a runtime header); within it the
#                  vocabulary (runtime-free value types) includes only vocabulary
#   1 placement    placement/
#   2 pool         pool/
#   3 interop      interop/, and mpi/ beside it (neither includes the other)
#   4 diagnostics  diagnostics/
#   entry points   the files at the top of include/unimem (unimem.hpp, mpi.hpp,
#                  compiled.hpp, the 0.2 paths that forward): they include any layer, and no
#                  layer includes them
# Fails, naming the file and the include, on an include that runs back up or sideways, on a
# runtime header or call outside the backend, or on a header over 700 lines.
# Compile time (docs/architecture.md, "Compile time"): a header may include only the light
# standard headers below (cuda_runtime.h brings most of them anyway); the heavy ones each cost a
# small CUDA translation unit 5-50 % more compile time and are allowed only where named here,
# and the umbrella header reaches none of them but <string> and <vector>, which the translation
# units users have include anyway (issue 25; allocator.hpp and memory_resource.hpp, which need
# the pmr headers, are left out of it).
# Usage: cmake -DINCLUDE_DIR=<repo>/include -P include_graph.cmake
cmake_minimum_required(VERSION 3.16)
set(_vocabulary core/config.hpp core/version.hpp core/argument_error.hpp core/view.hpp
    core/capabilities.hpp core/stream_ref.hpp core/launch_config.hpp core/kernel_argument.hpp
    core/detail/backend/handles.hpp core/detail/fixed_text.hpp core/detail/atomic.hpp
    core/detail/placement_record.hpp placement/location.hpp placement/intent.hpp)

# The layer of a header (entry points: 9, above every layer); `sibling` names its side of a
# layer shared by two folders.
function(_layer rel out sibling)
  set(${sibling} "" PARENT_SCOPE)
  if(rel MATCHES "^core/" OR rel STREQUAL "core.hpp")  # core.hpp: the core's own umbrella
    set(${out} 0 PARENT_SCOPE)
  elseif(rel MATCHES "^placement/")
    set(${out} 1 PARENT_SCOPE)
  elseif(rel MATCHES "^pool/")
    set(${out} 2 PARENT_SCOPE)
  elseif(rel MATCHES "^(interop|mpi)/")
    set(${out} 3 PARENT_SCOPE)
    set(${sibling} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(rel MATCHES "^diagnostics/")
    set(${out} 4 PARENT_SCOPE)
  else()
    set(${out} 9 PARENT_SCOPE)
  endif()
endfunction()

set(_light cstddef cstdint cstring cstdio cstdlib exception new type_traits utility limits
           initializer_list)
set(_allowed_core/allocator.hpp vector)                              # managed_vector
set(_allowed_core/memory_resource.hpp memory_resource mutex unordered_map)  # the pmr resources
# the managed pool (issue 28, its rooms issue 54): its bookkeeping and ownership (std::map nodes
# moved under its lock, std::shared_ptr state), and the pmr resource over it; not in the umbrella
set(_allowed_pool/detail/pool_block.hpp map)
set(_allowed_pool/detail/runtime_pool.hpp memory)
set(_allowed_pool/managed_pool.hpp memory)
set(_allowed_pool/pool_buffer.hpp memory)
set(_allowed_pool/managed_pool_resource.hpp map memory memory_resource)
set(_allowed_core/detail/atomic.hpp atomic)  # only for compilers without the __atomic builtins
# Standard types at the edges (issue 25): report() and the versions are std::string,
# to_string(location) too; devices() and accessed_by() are std::vector.
set(_allowed_core/devices.hpp vector)
set(_allowed_diagnostics/report.hpp string)
set(_allowed_diagnostics/regime.hpp string)
set(_allowed_placement/placement.hpp string vector)
# windows (issue 51): the walk's ranges, their windows' records, the schedule's operations, the
# streams and events it owns; not in the umbrella
set(_allowed_placement/window.hpp vector)
set(_allowed_placement/detail/window_plan.hpp vector)
set(_allowed_placement/detail/window_state.hpp vector)
set(_allowed_placement/detail/window_runtime.hpp vector)
set(_allowed_interop/dlpack.hpp complex memory)  # std::complex element types, shared_ptr owners
set(_allowed_placement/policy.hpp string)  # to_string(hint_status), a std::string (issue 25)
# Errors in the standard hierarchy (issue 25): std::runtime_error, std::length_error, ...
set(_allowed_core/error.hpp stdexcept)
set(_allowed_core/argument_error.hpp stdexcept)
set(_allowed_mpi/error.hpp stdexcept)  # mpi::error, a std::runtime_error
set(_allowed_mpi/path.hpp string)      # mpi::to_string(path|memory), std::string
set(_allowed_mpi/staging.hpp memory)   # std::allocator: such containers are pageable, known
                                       # at compile time (no pointer query per message)
set(_allowed_mpi/deferred.hpp mutex)   # the deferred sends, posted from any thread
set(_umbrella_may_reach ${_light} string vector stdexcept)
# Each header is one concept in at most 700 lines (issue 50 split the host-access log into its
# rooms); the two older headers above it may not grow until they are split too.
set(_max_lines 700)
set(_lines_allowed_interop/dlpack.hpp 817)
set(_lines_allowed_pool/managed_pool.hpp 934)

set(_root "${INCLUDE_DIR}/unimem")
file(GLOB_RECURSE _headers RELATIVE "${_root}" "${_root}/*.hpp")
set(_problems "")
set(_edges 0)
foreach(_h IN LISTS _headers)
  _layer("${_h}" _from _from_side)
  file(READ "${_root}/${_h}" _raw)
  string(REGEX MATCHALL "\n" _newlines "${_raw}")
  list(LENGTH _newlines _count)
  set(_cap ${_max_lines})
  if(DEFINED "_lines_allowed_${_h}")
    set(_cap ${_lines_allowed_${_h}})
  endif()
  if(_count GREATER _cap)
    list(APPEND _problems "${_h}: ${_count} lines, over ${_cap} (one concept a header: split it by job)")
  endif()
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
      _layer("${_target}" _to _to_side)
      list(APPEND "_unimem_includes_${_h}" "${_target}")
      math(EXPR _edges "${_edges} + 1")
      if(_to EQUAL 9 AND _from LESS 9)
        list(APPEND _problems "${_h} includes ${_target}, an entry point: a layer includes layers, not the files that gather them")
      elseif(_to GREATER _from)
        list(APPEND _problems "${_h} (layer ${_from}) includes ${_target} (layer ${_to}): an include that runs back up")
      elseif(_to EQUAL _from AND NOT _from_side STREQUAL _to_side)
        list(APPEND _problems "${_h} (${_from_side}) includes ${_target} (${_to_side}): an include sideways")
      elseif(_h IN_LIST _vocabulary AND NOT _target IN_LIST _vocabulary)
        list(APPEND _problems "${_h} (vocabulary, runtime-free) includes ${_target}, which is not")
      endif()
    elseif(_line MATCHES "^#include <(hip|cuda)")
      if(NOT _h MATCHES "^core/detail/backend/")
        list(APPEND _problems "${_h}: includes a runtime header (${_line}) outside core/detail/backend/")
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
    if(NOT _h MATCHES "^core/detail/backend/" AND _code MATCHES "[^A-Za-z_](hip|cuda)[A-Z][A-Za-z0-9_]*\\(")
      list(APPEND _problems "${_h}: calls the runtime outside core/detail/backend/: ${_line}")
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
message("unimem layers: ${_n} headers, ${_edges} includes, every include points down a layer or within it, none sideways; standard headers the umbrella reaches: ${_reached_text}")
