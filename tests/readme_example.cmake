# Runs the program built from README.md's C++ example: with a GPU it must succeed; without one
# it must say so on stderr and exit 2 (not crash or call std::terminate).
# Usage: cmake -DPROGRAM=<path> -P readme_example.cmake
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(_rc EQUAL 0)
  message("README example: exit 0 (the GPU computed the sum)")
elseif(_rc EQUAL 2 AND _err MATCHES "unimem: no GPU was found")
  message("README example: exit 2 with the message: ${_err}")
else()
  message(FATAL_ERROR "README example: exit ${_rc}\nstdout: ${_out}\nstderr: ${_err}")
endif()
