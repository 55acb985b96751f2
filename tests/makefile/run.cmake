# Builds examples/vector_add.cpp (GPU compiler) and examples/unimem-info.cpp (plain C++ compiler)
# with tests/makefile/Makefile, unimem's flags from pkg-config, and runs both: with a GPU
# vector_add must compute the sum right; without one it must say so (exit 2), having been built,
# linked and started, as README's consumer projects do; unimem-info must exit 0 either way.
#   cmake -DSETTINGS=<file of set() lines: MAKE PKG_CONFIG MODULE GPUCXX GPUFLAGS HOSTCXX
#                     HOSTFLAGS ENVIRONMENT EXAMPLES>
#         -DPKG_CONFIG_PATH=<folder of unimem's .pc files> -DWORK=<folder> [-DSTEP=build|run]
#         -P run.cmake
# STEP=build builds both, STEP=run runs what a build step made; neither: both.
cmake_minimum_required(VERSION 3.21)
include("${SETTINGS}")

# Runs both programs a build made.
function(run_programs)
  execute_process(COMMAND "${WORK}/unimem-info" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _out)
  message(STATUS "unimem-info (exit ${_rc}): ${_out}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "unimem-info, built by ${HOSTCXX} with ${MODULE}'s flags, failed (exit ${_rc})")
  endif()
  execute_process(COMMAND "${WORK}/vector_add" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _out)
  message(STATUS "vector_add (exit ${_rc}): ${_out}")
  if(_rc EQUAL 0 AND _out MATCHES "vector_add: all [0-9]+ elements correct")
    message(STATUS "makefile: vector_add and unimem-info built with ${MODULE}; vector_add verified on the GPU")
  elseif(_rc EQUAL 2 AND _out MATCHES "no GPU was found")
    message(STATUS "makefile: vector_add and unimem-info built with ${MODULE}, linked and ran (no GPU here)")
  else()
    message(FATAL_ERROR "vector_add failed (exit ${_rc})")
  endif()
endfunction()
if(STEP STREQUAL "run")
  run_programs()
  return()
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(_env "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${PKG_CONFIG_PATH}" ${ENVIRONMENT})

# The module must be the one in PKG_CONFIG_PATH, not one installed elsewhere on this machine.
execute_process(COMMAND ${_env} "${PKG_CONFIG}" --variable=pcfiledir ${MODULE}
                OUTPUT_VARIABLE _dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
file(REAL_PATH "${PKG_CONFIG_PATH}" _want)
if(NOT _rc EQUAL 0 OR NOT EXISTS "${_dir}")
  message(FATAL_ERROR "pkg-config finds no ${MODULE} in ${PKG_CONFIG_PATH}")
endif()
file(REAL_PATH "${_dir}" _dir)
if(NOT _dir STREQUAL _want)
  message(FATAL_ERROR "pkg-config takes ${MODULE} from ${_dir}, not from ${_want}")
endif()
execute_process(COMMAND ${_env} "${PKG_CONFIG}" --cflags --libs ${MODULE} OUTPUT_VARIABLE _flags)
message(STATUS "pkg-config --cflags --libs ${MODULE}: ${_flags}")

execute_process(COMMAND ${_env} "${MAKE}" -C "${WORK}" -f "${CMAKE_CURRENT_LIST_DIR}/Makefile"
                        "UNIMEM=${MODULE}" "GPUCXX=${GPUCXX}" "GPUFLAGS=${GPUFLAGS}"
                        "CXX=${HOSTCXX}" "HOSTFLAGS=${HOSTFLAGS}" "EXAMPLES=${EXAMPLES}"
                        "PKG_CONFIG=${PKG_CONFIG}"
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "make failed (exit ${_rc})")
endif()

if(STEP STREQUAL "build")
  message(STATUS "makefile: vector_add and unimem-info built with ${MODULE}")
  return()
endif()
run_programs()
