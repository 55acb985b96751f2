# ctest tsan.host_tests: runs unimem_tsan_tests (TESTS, the program) under ThreadSanitizer; a data
# race, a lock-order inversion or a failed test fails. -DMISSING=<why> fails at once: the
# sanitize build could not make the program.
if(MISSING)
  message(FATAL_ERROR "tsan: ${MISSING}")
endif()
set(ENV{TSAN_OPTIONS} "halt_on_error=1:exitcode=66:second_deadlock_stack=1")
execute_process(COMMAND "${TESTS}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
message("${_out}")
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "tsan: FAILED (exit ${_rc}; 66: a ThreadSanitizer report above)")
endif()
string(REGEX MATCH "\\[  PASSED  \\] ([0-9]+) test" _passed "${_out}")
message("tsan: clean: ${CMAKE_MATCH_1} tests passed")
