# ctest mpi.host, mpi.gpu and example.mpi_jacobi: runs the job given after `--` (mpiexec -n 2 ...)
# and passes only where it exits 0 and prints PASS (the verdict rank 0 writes for the whole job).
# A regular expression alone (ctest's PASS_REGULAR_EXPRESSION) ignores the exit status: the
# sanitize build passed with a rank killed by LeakSanitizer at its exit whenever rank 0's verdict
# reached mpiexec before the abort did, and failed at random when it did not (CI, 2026-12-05).
# The tests' SKIP_REGULAR_EXPRESSION still applies to the output printed here.
set(_job "")
set(_after_dashes FALSE)
math(EXPR _last "${CMAKE_ARGC} - 1")
foreach(_i RANGE 0 ${_last})
  if(_after_dashes)
    list(APPEND _job "${CMAKE_ARGV${_i}}")
  elseif("${CMAKE_ARGV${_i}}" STREQUAL "--")
    set(_after_dashes TRUE)
  endif()
endforeach()
if(NOT _job OR NOT DEFINED PASS)
  message(FATAL_ERROR "usage: cmake -DPASS=<regex> -P run.cmake -- <mpiexec> -n 2 <program> [args]")
endif()
execute_process(COMMAND ${_job} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
message("${_out}")
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "mpi: the job exited with ${_rc}, not 0 (a rank failed, or was killed: "
                      "a sanitizer's report or mpiexec's account is above)")
endif()
if(NOT _out MATCHES "${PASS}")
  message(FATAL_ERROR "mpi: the job exited 0 without its verdict (\"${PASS}\")")
endif()
