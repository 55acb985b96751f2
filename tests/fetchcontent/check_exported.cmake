# The parent project's exports (tests/fetchcontent), checked by its ctest:
#   cmake -DBUILD_TREE=<parent build> -DPREFIX=<install here> -DSOURCE=<downstream project>
#         -DGENERATOR=... -DOPTIONS_FILE=<one configure option per line> -P check_exported.cmake
cmake_minimum_required(VERSION 3.21)

function(expect_link file)
  file(READ "${file}" _text)
  if(NOT _text MATCHES "INTERFACE_LINK_LIBRARIES \"[^\"]*unimem::unimem")
    message(FATAL_ERROR "${file} does not link parent::parent_square to unimem::unimem")
  endif()
  message(STATUS "${file}: parent::parent_square links unimem::unimem")
endfunction()

expect_link("${BUILD_TREE}/parent-targets.cmake")  # export()

file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_TREE}" --prefix "${PREFIX}"
                OUTPUT_QUIET RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "installing the parent project failed")
endif()
expect_link("${PREFIX}/lib/cmake/parent/parent-targets.cmake")  # install(EXPORT)
foreach(_f share/cmake/unimem/unimem-config.cmake share/cmake/unimem/unimem-targets.cmake
           include/unimem/unimem.hpp)
  if(NOT EXISTS "${PREFIX}/${_f}")
    message(FATAL_ERROR "unimem was not installed with the parent: no ${_f}")
  endif()
endforeach()

# A project downstream, through the installed package only: configured and generated, which
# resolves parent::parent_square and, through the parent's find_dependency(unimem), unimem::unimem
# (and checks that their include folders exist). Not built: the parent's own test built that code.
file(STRINGS "${OPTIONS_FILE}" _options)
set(_work "${BUILD_TREE}/downstream")
file(REMOVE_RECURSE "${_work}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${_work}" -G "${GENERATOR}"
                        ${_options} "-DCMAKE_PREFIX_PATH=${PREFIX}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "configuring the downstream project failed")
endif()
file(READ "${_work}/CMakeCache.txt" _cache)
if(NOT _cache MATCHES "\nunimem_DIR:PATH=${PREFIX}/share/cmake/unimem\n")
  message(FATAL_ERROR "the downstream project did not take unimem from the parent's prefix")
endif()
message(STATUS "downstream: configured against the installed parent and unimem")
