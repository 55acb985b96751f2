# ctest python.pip_install: pip builds unimem's Python package from python/ (setup.py, which runs
# CMake with this build's compilers) and installs it into a folder (--target: no environment is
# changed, and Debian's pip allows it); test_package.py then runs against that install.
# Usage: cmake -DPYTHON= -DSOURCE=<repo>/python -DWORK=<folder> -DOPTIONS=<file: CMake options,
#        one a line> [-DENVIRONMENT=NAME=VALUE;...] -DTEST=<test_package.py> -P pip_install.cmake
cmake_minimum_required(VERSION 3.21)
set(_target "${WORK}/site")
set(_log "${WORK}/pip.log")
file(REMOVE_RECURSE "${_target}")
file(MAKE_DIRECTORY "${WORK}")
string(TIMESTAMP _start "%s")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env ${ENVIRONMENT} "UNIMEM_PYTHON_BUILD_DIR=${WORK}/build"
          "UNIMEM_CMAKE_ARGS_FILE=${OPTIONS}" "PIP_NO_INPUT=1"
          "${PYTHON}" -m pip install --no-build-isolation --no-deps --no-index --no-cache-dir
          --disable-pip-version-check --target "${_target}" "${SOURCE}"
  RESULT_VARIABLE _rc OUTPUT_FILE "${_log}" ERROR_FILE "${_log}.err")
string(TIMESTAMP _end "%s")
math(EXPR _seconds "${_end} - ${_start}")
if(NOT _rc EQUAL 0)
  file(READ "${_log}" _out)
  file(READ "${_log}.err" _err)
  message(FATAL_ERROR "pip_install: pip failed (${_rc}) after ${_seconds} s:\n${_out}\n${_err}")
endif()
message(STATUS "pip_install: built and installed in ${_seconds} s into ${_target}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env "PYTHONPATH=${_target}" "${PYTHON}" "${TEST}"
                WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                ERROR_VARIABLE _out)
message("${_out}")
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "pip_install: test_package.py failed against the installed package (${_rc})")
endif()
message(STATUS "pip_install: the installed package passed test_package.py")
