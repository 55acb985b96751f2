# Configures, builds and tests a consumer project in an empty folder, every time: a cache kept
# from an earlier run would hide what a changed default does to a fresh configure (an option
# cached OFF stays OFF). Used by consumer.fetchcontent and consumer.build_tree.
#   cmake -DSOURCE=<project> -DBINARY=<folder, emptied> -DGENERATOR=...
#         -DOPTIONS_FILE=<one configure option per line> [-DSTEP=build|run]
#         -P fresh_build_and_test.cmake
# STEP=build configures and builds, STEP=run runs the project's tests in what a build step
# made; neither: both.
cmake_minimum_required(VERSION 3.21)
get_filename_component(_bin "${CMAKE_COMMAND}" DIRECTORY)
if(STEP STREQUAL "run")
  execute_process(COMMAND "${_bin}/ctest" --output-on-failure WORKING_DIRECTORY "${BINARY}"
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE}: its tests failed (exit ${_rc})")
  endif()
  message(STATUS "${SOURCE}: tested")
  return()
endif()
file(REMOVE_RECURSE "${BINARY}")
file(STRINGS "${OPTIONS_FILE}" _options)
# The project's tests run in the same call unless this is the build step alone.
set(_test --test-command "${_bin}/ctest" --output-on-failure)
set(_what "configure, build or test")
set(_done "configured, built and tested")
if(STEP STREQUAL "build")
  set(_test "")
  set(_what "configure or build")
  set(_done "configured and built")
endif()
execute_process(COMMAND "${_bin}/ctest" --build-and-test "${SOURCE}" "${BINARY}"
                        --build-generator "${GENERATOR}" --build-noclean
                        --build-options ${_options} ${_test}
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE}: ${_what} failed (exit ${_rc})")
endif()
message(STATUS "${SOURCE}: ${_done}")
