# What unimem keeps in static storage, read from a shared library built with
# -fvisibility=hidden (nm): every such object is a copy of this library's own, which another
# library of the same process does not see. None may be a table keyed by address (issue 24:
# the mapped-range and read-mostly tables and the transfer engine's stream pool were, and
# split across libraries). Each object found must be one of these, named with why a private
# copy per library is harmless:
#   property_cache                       per-device properties that cannot change (any copy is right)
#   unsupported_policy_state             the unsupported-hint policy (a setting, per library)
#   this_copy()::c                       where this copy mapped the process's host-access log and
#                                        what it opened for it: every copy finds the same memfd
#                                        (host_access.hpp); a fork handler per copy closes them
#   real_driver()::d                     the UVM driver's functions (constant, the same everywhere)
#   kept_text::keep()::none              an empty error text, for when memory ran out (any copy)
#   cuda_driver::...                     driver entry points looked up once (the same in every copy)
#   ledger::table()::c                   what this copy of unimem moved to each GPU and back, and
#                                        the largest range it placed (counts per copy: report()
#                                        says "this copy of unimem"; nothing keyed by address)
# Usage: cmake -DNM=<nm> -DLIBRARIES=<a.so;b.so> -P static_state.cmake
set(_allowed "property_cache\\(\\)::lists"
             "unsupported_policy_state\\(\\)::state"
             "this_copy\\(\\)::c" "real_driver\\(\\)::d"
             "kept_text::keep\\(char const\\*\\)::none"
             "backend::cuda_driver::" "ledger::table\\(\\)::c")
set(_problems "")
set(_seen 0)
foreach(_lib IN LISTS LIBRARIES)
  execute_process(COMMAND ${NM} -C ${_lib} OUTPUT_VARIABLE _symbols RESULT_VARIABLE _rc
                  ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "nm ${_lib} failed: ${_err}")
  endif()
  string(REPLACE "\n" ";" _lines "${_symbols}")
  foreach(_line IN LISTS _lines)
    # Objects in static storage (bss, data, unique): "ADDR b name", "ADDR d name", "u", "V".
    if(NOT _line MATCHES "^[0-9a-f]* [bBdDuV] (.*unimem::[a-z0-9_]+::.*)$")
      continue()
    endif()
    set(_name "${CMAKE_MATCH_1}")
    if(_name MATCHES "^(guard variable|typeinfo|vtable)")
      continue()  # the guards of the objects below, and the exceptions' type data
    endif()
    math(EXPR _seen "${_seen} + 1")
    set(_ok FALSE)
    foreach(_a IN LISTS _allowed)
      if(_name MATCHES "${_a}")
        set(_ok TRUE)
      endif()
    endforeach()
    if(NOT _ok)
      get_filename_component(_file "${_lib}" NAME)
      list(APPEND _problems "${_file}: ${_name}")
    endif()
  endforeach()
endforeach()
if(_seen EQUAL 0)
  message(FATAL_ERROR "no unimem object in static storage found in ${LIBRARIES}: nm saw nothing (stripped?), the check cannot work")
endif()
if(_problems)
  string(REPLACE ";" "\n  " _list "${_problems}")
  message(FATAL_ERROR "unimem state in static storage that is not on the list (a private copy per shared library):\n  ${_list}\nIf it is not keyed by address and a copy per library is harmless, add it to tests/shared_libs/static_state.cmake with why.")
endif()
message("static state: ${_seen} objects in ${LIBRARIES}, each on the list (no table keyed by address)")
