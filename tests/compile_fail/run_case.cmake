# One compile-fail case (tests/compile_checks.cmake): runs the compile command CMake wrote for
# the case's target in compile_commands.json, so that the cases run side by side (a
# `cmake --build` of the one build tree cannot: two build tools at once would write its logs
# and dependency files together). The compiler's output goes to ctest, whose pass and fail
# expressions judge it; a compile that fails is a nonzero exit here.
#   cmake -DCOMMANDS=<build>/compile_commands.json -DTARGET=compile_fail_<file>_<n> -P run_case.cmake
if(NOT EXISTS "${COMMANDS}")
  message(FATAL_ERROR "run_case: no ${COMMANDS} (the build tree was not generated)")
endif()
file(READ "${COMMANDS}" _json)
string(JSON _count LENGTH "${_json}")
set(_command "")
if(_count GREATER 0)
  math(EXPR _last "${_count} - 1")
  foreach(_i RANGE ${_last})
    string(JSON _c GET "${_json}" ${_i} command)
    string(FIND "${_c}" "/${TARGET}.dir/" _at)
    if(_at GREATER -1)
      set(_command "${_c}")
      string(JSON _directory GET "${_json}" ${_i} directory)
      break()
    endif()
  endforeach()
endif()
if(_command STREQUAL "")
  message(FATAL_ERROR "run_case: ${TARGET} has no compile command in ${COMMANDS}")
endif()
separate_arguments(_args UNIX_COMMAND "${_command}")
# Without optimization: a case passes or fails in the compiler's front end (the message, the
# overloads it tried), and a control compiles all the same at -O0; the optimizer at -O3 was
# two thirds of a control's time. Every -O of the command goes and one -O0 ends it (hipcc
# adds -O3 where a command has none; nvcc's -O is the host compiler's, its device code is
# optimized as always).
list(FILTER _args EXCLUDE REGEX "^-O([0-9sgz]|fast)?$")
list(APPEND _args -O0)
# The generator makes the object's folder when it builds the target; this build does not.
list(FIND _args "-o" _o)
if(_o GREATER -1)
  math(EXPR _o "${_o} + 1")
  list(GET _args ${_o} _object)
  get_filename_component(_folder "${_object}" DIRECTORY)
  file(MAKE_DIRECTORY "${_directory}/${_folder}")
endif()
execute_process(COMMAND ${_args} WORKING_DIRECTORY "${_directory}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "run_case: ${TARGET} did not compile (${_rc})")
endif()
