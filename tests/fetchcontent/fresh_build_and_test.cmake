# Configures, builds and tests a consumer project in an empty folder, every time: a cache kept
# from an earlier run would hide what a changed default does to a fresh configure (an option
# cached OFF stays OFF). Used by consumer.fetchcontent and consumer.build_tree.
#   cmake -DSOURCE=<project> -DBINARY=<folder, emptied> -DGENERATOR=...
#         -DOPTIONS_FILE=<one configure option per line> -P fresh_build_and_test.cmake
cmake_minimum_required(VERSION 3.21)
file(REMOVE_RECURSE "${BINARY}")
file(STRINGS "${OPTIONS_FILE}" _options)
get_filename_component(_bin "${CMAKE_COMMAND}" DIRECTORY)
execute_process(COMMAND "${_bin}/ctest" --build-and-test "${SOURCE}" "${BINARY}"
                        --build-generator "${GENERATOR}" --build-noclean
                        --build-options ${_options}
                        --test-command "${_bin}/ctest" --output-on-failure
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE}: configure, build or test failed (exit ${_rc})")
endif()
message(STATUS "${SOURCE}: configured, built and tested")
