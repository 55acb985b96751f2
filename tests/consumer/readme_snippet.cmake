# Builds and runs the consumer project of README.md, exactly as README shows it: the cmake
# block under "## Use it in your project" becomes the project's CMakeLists.txt, next to
# tests/consumer/main.cpp, and is configured, built and run with the toolchain's options.
#   cmake -DREADME=... -DMAIN=... -DWORK=<dir> -DMODE=add_subdirectory|find_package
#         -DUNIMEM_SOURCE_DIR=... -DOPTIONS_FILE=<one configure option per line>
#         -DGENERATOR=... [-DSTEP=build|run] -P readme_snippet.cmake
# STEP=build configures and builds, STEP=run runs what a build step made; neither: both.
# find_package mode uses the alternative the snippet names in its comment on the
# add_subdirectory line ("or: find_package(...)"), nothing else changes.
cmake_minimum_required(VERSION 3.21)

function(run_app)
  execute_process(COMMAND "${WORK}/build/app" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _out)
  message(STATUS "app: ${_out}")
  if(NOT _rc EQUAL 0 OR NOT _out MATCHES "consumer: OK")
    message(FATAL_ERROR "README.md's app failed (exit ${_rc})")
  endif()
endfunction()
if(STEP STREQUAL "run")
  run_app()
  message(STATUS "README.md's project: ran (${MODE})")
  return()
endif()

file(READ "${README}" _readme)
string(FIND "${_readme}" "## Use it in your project" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "README.md has no '## Use it in your project' section")
endif()
string(SUBSTRING "${_readme}" ${_at} -1 _section)
string(FIND "${_section}" "```cmake\n" _begin)
if(_begin EQUAL -1)
  message(FATAL_ERROR "README.md: no ```cmake block under '## Use it in your project'")
endif()
math(EXPR _begin "${_begin} + 9")
string(SUBSTRING "${_section}" ${_begin} -1 _section)
string(FIND "${_section}" "```" _end)
string(SUBSTRING "${_section}" 0 ${_end} _snippet)

if(MODE STREQUAL "find_package")
  string(REGEX MATCH "add_subdirectory\\(unimem\\)[^\n]*or: (find_package\\([^)]*\\))" _m "${_snippet}")
  if(NOT _m)
    message(FATAL_ERROR "README.md's snippet names no find_package alternative on its add_subdirectory line")
  endif()
  set(_find "${CMAKE_MATCH_1}")
  string(REGEX REPLACE "add_subdirectory\\(unimem\\)[^\n]*" "${_find}" _snippet "${_snippet}")
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/src")
file(WRITE "${WORK}/src/CMakeLists.txt" "${_snippet}")
configure_file("${MAIN}" "${WORK}/src/main.cpp" COPYONLY)
if(MODE STREQUAL "add_subdirectory")
  file(CREATE_LINK "${UNIMEM_SOURCE_DIR}" "${WORK}/src/unimem" SYMBOLIC)
endif()
message(STATUS "README.md's project (${MODE}):\n${_snippet}")

file(STRINGS "${OPTIONS_FILE}" _options)
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${WORK}/src" -B "${WORK}/build" -G "${GENERATOR}"
                        ${_options}
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "configuring README.md's project failed")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK}/build" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "building README.md's project failed")
endif()
if(STEP STREQUAL "build")
  message(STATUS "README.md's project: configured and built (${MODE})")
  return()
endif()
run_app()
message(STATUS "README.md's project: configured, built and ran (${MODE})")
