# unimem's packages as users get them: builds the .deb and the .tar.gz with CPack from the
# configured build folder, checks what they hold (a header package: Architecture all, no
# Depends, nothing compiled), unpacks the .deb with dpkg -x into a folder of its own, and builds
# and runs two consumers against that tree: README's CMake project through find_package, and
# examples/vector_add through the Makefile and pkg-config (the .pc files are relocatable).
#   cmake -DBUILD_DIR=<unimem build> -DWORK=<folder> -DVERSION=<x.y.z> -DREADME=... -DMAIN=...
#         -DREADME_SCRIPT=... -DOPTIONS_FILE=... -DGENERATOR=... -DMAKEFILE_SCRIPT=...
#         -DMAKEFILE_SETTINGS=... -DDPKG=... -DDPKG_DEB=... [-DSTEP=build|run] -P check_deb.cmake
# STEP=build makes, checks and unpacks the packages and builds the two consumers; STEP=run runs
# the consumers a build step made; neither: both.
cmake_minimum_required(VERSION 3.21)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${_rc}):\n${_out}")
  endif()
  set(_out "${_out}" PARENT_SCOPE)
endfunction()

set(_root "${WORK}/root")
# The two consumers against the unpacked .deb, for this step.
function(consumers)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DREADME=${README} -DMAIN=${MAIN}
                          -DWORK=${WORK}/find_package -DMODE=find_package
                          -DOPTIONS_FILE=${WORK}/find_package.options -DGENERATOR=${GENERATOR}
                          -DSTEP=${STEP} -P "${README_SCRIPT}"
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "README's project through find_package against the unpacked .deb failed")
  endif()
  file(READ "${WORK}/find_package/build/CMakeCache.txt" _cache)
  if(NOT _cache MATCHES "\nunimem_DIR:PATH=${_root}/usr/share/cmake/unimem\n")
    message(FATAL_ERROR "README's project did not take unimem from the unpacked .deb")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -DSETTINGS=${MAKEFILE_SETTINGS}
                          -DPKG_CONFIG_PATH=${_root}/usr/share/pkgconfig -DWORK=${WORK}/makefile
                          -DSTEP=${STEP} -P "${MAKEFILE_SCRIPT}"
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "vector_add through the Makefile and pkg-config against the unpacked .deb failed")
  endif()
endfunction()
if(STEP STREQUAL "run")
  consumers()
  message(STATUS "package: the unpacked .deb served find_package and pkg-config")
  return()
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
get_filename_component(_cpack "${CMAKE_COMMAND}" DIRECTORY)
set(_cpack "${_cpack}/cpack")
foreach(_generator DEB TGZ)
  run("cpack -G ${_generator}" "${_cpack}" -G ${_generator} --config "${BUILD_DIR}/CPackConfig.cmake"
      -B "${WORK}/out")
endforeach()

# The .deb: a header package for every architecture, whose toolchains are only suggested.
set(_deb "${WORK}/out/libunimem-dev_${VERSION}_all.deb")
if(NOT EXISTS "${_deb}")
  file(GLOB _made "${WORK}/out/*")
  message(FATAL_ERROR "no ${_deb}; cpack made: ${_made}")
endif()
run("dpkg-deb -f" "${DPKG_DEB}" -f "${_deb}")
set(_control "${_out}")
message(STATUS "control:\n${_control}")
foreach(_want "Package: libunimem-dev\n" "Version: ${VERSION}\n" "Architecture: all\n"
              "Section: libdevel\n" "Suggests: [^\n]*hipcc" "Suggests: [^\n]*nvidia-cuda-toolkit")
  if(NOT _control MATCHES "${_want}")
    message(FATAL_ERROR "the .deb's control has no '${_want}'")
  endif()
endforeach()
if(_control MATCHES "(^|\n)(Pre-)?Depends:")
  message(FATAL_ERROR "a header package depends on nothing: the GPU toolchains are Suggests")
endif()
run("dpkg-deb -c" "${DPKG_DEB}" -c "${_deb}")
set(_listing "${_out}")
foreach(_want ./usr/include/unimem/unimem.hpp ./usr/include/unimem/mpi.hpp
              ./usr/share/cmake/unimem/unimem-config.cmake
              ./usr/share/cmake/unimem/unimem-config-version.cmake
              ./usr/share/cmake/unimem/unimem-backend.cmake
              ./usr/share/cmake/unimem/unimem-targets.cmake
              ./usr/share/pkgconfig/unimem-cuda.pc ./usr/share/pkgconfig/unimem-hip.pc
              ./usr/share/pkgconfig/unimem-hip-nvidia.pc ./usr/share/pkgconfig/unimem-mpi.pc
              ./usr/share/doc/unimem/LICENSE)
  string(FIND "${_listing}" " ${_want}\n" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "the .deb has no ${_want}:\n${_listing}")
  endif()
endforeach()
string(REGEX MATCHALL "[^\n]* \\./usr/[^\n]*[^/]\n" _files "${_listing}")
foreach(_f IN LISTS _files)
  if(NOT _f MATCHES " \\./usr/(include/unimem|share/(cmake/unimem|pkgconfig|doc/unimem))/")
    message(FATAL_ERROR "the .deb holds a file outside unimem's folders: ${_f}")
  endif()
  if(_f MATCHES "^-..x")
    message(FATAL_ERROR "the .deb holds an executable file: ${_f}")
  endif()
endforeach()
list(LENGTH _files _n)
message(STATUS "libunimem-dev_${VERSION}_all.deb: ${_n} files, all headers, CMake and pkg-config files")

# The .tar.gz: the same tree under one folder.
set(_tgz "${WORK}/out/unimem-${VERSION}-noarch.tar.gz")
run("tar -tzf" "${CMAKE_COMMAND}" -E tar tzf "${_tgz}")
if(NOT _out MATCHES "unimem-${VERSION}-noarch/include/unimem/unimem.hpp\n"
   OR NOT _out MATCHES "unimem-${VERSION}-noarch/share/pkgconfig/unimem-cuda.pc\n")
  message(FATAL_ERROR "${_tgz} lacks the headers or the .pc files:\n${_out}")
endif()

# Unpacked anywhere, the tree works through find_package and through pkg-config.
run("dpkg -x" "${DPKG}" -x "${_deb}" "${_root}")
file(STRINGS "${OPTIONS_FILE}" _options)
list(APPEND _options "-DCMAKE_PREFIX_PATH=${_root}/usr")
list(JOIN _options "\n" _lines)
file(WRITE "${WORK}/find_package.options" "${_lines}\n")
consumers()
message(STATUS "package: the unpacked .deb served find_package and pkg-config")
