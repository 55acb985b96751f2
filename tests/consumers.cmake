# Consumer projects (included by tests/CMakeLists.txt with UNIMEM_TEST_CONSUMERS, ON by
# default): projects that take unimem as users do (a plain C++ compiler, installation, README's
# project through add_subdirectory and find_package, FetchContent, the build tree, a Makefile
# with pkg-config, the .deb, the Python package through pip), built and run by ctest with this
# build's compilers. They test unimem's CMake, install and packaging files more than a compiler:
# the test command runs them on this machine's toolchains and in the chroot whose CMake is newest
# (experimental, CMake 4.x), not in every chroot (CMakePresets.json). Each has the labels
# toolchain and consumer.

# A plain C++ translation unit (g++/clang++) using managed_buffer and the device API through
# the target alone: built here at build time, run by ctest.
if(UNIMEM_PLAIN_CXX)
  include(ExternalProject)
  unimem_plain_project_args(_args ${UNIMEM_PLAIN_CXX} Release)
  list(APPEND _args -DUNIMEM_HIP_ARCHITECTURES=${_hip_archs} -DUNIMEM_CUDA_ARCHITECTURES=${_cuda_archs})
  ExternalProject_Add(plain_cxx_consumer
    SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/plain_cxx
    BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR}/plain_cxx
    CMAKE_ARGS ${_args}
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON)
  add_test(NAME consumer.plain_cxx COMMAND ${CMAKE_CURRENT_BINARY_DIR}/plain_cxx/plain_cxx_consumer)
  set_tests_properties(consumer.plain_cxx PROPERTIES PASS_REGULAR_EXPRESSION "^.*\nOK: ")
endif()

# The consumers test how unimem is taken (CMake, install, packaging), not a GPU's code: they
# build for the first GPU target of this build only (hip-amd's gfx90a, not gfx1030 too).
set(_consumer_hip_archs ${UNIMEM_HIP_ARCHITECTURES_RESOLVED})
set(_consumer_cuda_archs ${UNIMEM_CUDA_ARCHITECTURES_RESOLVED})
if(_consumer_hip_archs)
  list(GET _consumer_hip_archs 0 _consumer_hip_archs)
endif()
if(_consumer_cuda_archs)
  list(GET _consumer_cuda_archs 0 _consumer_cuda_archs)
endif()

# Consumer projects, built and run by ctest with this build's compilers. They need the
# toolchain at test time (label: toolchain). The backend is detected there as users get it.
# A Release build without the optimizer: what a consumer tests is found in configuring, compiling
# and linking it, and the test programs run the optimizers of every toolchain that builds Release;
# at -O3 they were most of the consumers' time. nvcc's -O is its host compiler's: with none, the
# host code is not optimized and the device code is as always.
set(_consumer_options -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER} "-DCMAKE_CXX_FLAGS=${CMAKE_CXX_FLAGS}"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG"
    "-DCMAKE_CUDA_FLAGS_RELEASE=-DNDEBUG" "-DCMAKE_HIP_FLAGS_RELEASE=-O0 -DNDEBUG")
if(CMAKE_LIBRARY_ARCHITECTURE)
  list(APPEND _consumer_options -DCMAKE_LIBRARY_ARCHITECTURE=${CMAKE_LIBRARY_ARCHITECTURE})
endif()
if(UNIMEM_KERNEL_LANGUAGE STREQUAL "CUDA")
  list(APPEND _consumer_options -DCMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER}
       "-DUNIMEM_CUDA_ARCHITECTURES=${_consumer_cuda_archs}")
  if(CMAKE_CUDA_HOST_COMPILER)
    list(APPEND _consumer_options -DCMAKE_CUDA_HOST_COMPILER=${CMAKE_CUDA_HOST_COMPILER})
  endif()
elseif(UNIMEM_KERNEL_LANGUAGE STREQUAL "HIP")
  list(APPEND _consumer_options -DUNIMEM_BACKEND=HIP -DCMAKE_HIP_COMPILER=${CMAKE_HIP_COMPILER}
       "-DUNIMEM_HIP_ARCHITECTURES=${_consumer_hip_archs}")
elseif(UNIMEM_HIP_PLATFORM STREQUAL "amd")
  list(APPEND _consumer_options "-DUNIMEM_HIP_ARCHITECTURES=${_consumer_hip_archs}")
else()
  list(APPEND _consumer_options "-DUNIMEM_CUDA_ARCHITECTURES=${_consumer_cuda_archs}")
endif()
if(GTest_DIR)
  list(APPEND _consumer_options -DGTest_DIR=${GTest_DIR})
endif()
set(_prefix ${CMAKE_CURRENT_BINARY_DIR}/consumer-install)

add_test(NAME consumer.install
         COMMAND ${CMAKE_COMMAND} --install ${PROJECT_BINARY_DIR} --prefix ${_prefix})
set_tests_properties(consumer.install PROPERTIES FIXTURES_SETUP unimem_installed LABELS "toolchain;consumer")

# README.md's project, exactly as README shows it, through add_subdirectory and find_package.
foreach(_mode add_subdirectory find_package)
  set(_options ${_consumer_options})
  if(_mode STREQUAL "find_package")
    list(APPEND _options -DCMAKE_PREFIX_PATH=${_prefix})
  endif()
  list(JOIN _options "\n" _lines)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/consumer-${_mode}.options "${_lines}\n")
  set(_requires "")
  if(_mode STREQUAL "find_package")
    set(_requires REQUIRES unimem_installed)
  endif()
  unimem_consumer_test(consumer.readme.${_mode} ${CMAKE_CURRENT_SOURCE_DIR}/consumer/readme_snippet.cmake
    ARGS -DREADME=${PROJECT_SOURCE_DIR}/README.md
         -DMAIN=${CMAKE_CURRENT_SOURCE_DIR}/consumer/main.cpp
         -DWORK=${CMAKE_CURRENT_BINARY_DIR}/consumer-${_mode} -DMODE=${_mode}
         -DUNIMEM_SOURCE_DIR=${PROJECT_SOURCE_DIR}
         -DOPTIONS_FILE=${CMAKE_CURRENT_BINARY_DIR}/consumer-${_mode}.options
         -DGENERATOR=${CMAKE_GENERATOR}
    ${_requires})
endforeach()

# ---- issue 27: FetchContent, the build-tree export, a Makefile with pkg-config, the .deb ----
# Consumers as HPC codes take libraries, each built with this toolchain (_consumer_options
# above) and run where there is a GPU: consumer.fetchcontent, consumer.build_tree,
# consumer.makefile, package.deb.

# A parent project that takes unimem with FetchContent (SOURCE_DIR, offline), with
# BUILD_TESTING=ON and its own GoogleTest; it fails to configure if unimem's tests, examples,
# benchmark or global settings reach it, and to generate if it cannot export() and
# install(EXPORT) its library that links unimem::unimem (tests/fetchcontent).
set(_options ${_consumer_options} -DUNIMEM_SOURCE_DIR=${PROJECT_SOURCE_DIR})
list(JOIN _options "\n" _lines)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/consumer-fetchcontent.options "${_lines}\n")
unimem_consumer_test(consumer.fetchcontent
  ${CMAKE_CURRENT_SOURCE_DIR}/fetchcontent/fresh_build_and_test.cmake
  ARGS -DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/fetchcontent
       -DBINARY=${CMAKE_CURRENT_BINARY_DIR}/consumer-fetchcontent
       -DGENERATOR=${CMAKE_GENERATOR}
       -DOPTIONS_FILE=${CMAKE_CURRENT_BINARY_DIR}/consumer-fetchcontent.options)
# find_package(unimem) from this build folder, nothing installed (tests/build_tree).
set(_options ${_consumer_options} -Dunimem_DIR=${PROJECT_BINARY_DIR}
    -DEXPECTED_CONFIG_DIR=${PROJECT_BINARY_DIR} -DEXPECTED_INCLUDE_DIR=${PROJECT_SOURCE_DIR}/include)
list(JOIN _options "\n" _lines)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/consumer-build-tree.options "${_lines}\n")
unimem_consumer_test(consumer.build_tree
  ${CMAKE_CURRENT_SOURCE_DIR}/fetchcontent/fresh_build_and_test.cmake
  ARGS -DSOURCE=${CMAKE_CURRENT_SOURCE_DIR}/build_tree
       -DBINARY=${CMAKE_CURRENT_BINARY_DIR}/consumer-build-tree
       -DGENERATOR=${CMAKE_GENERATOR}
       -DOPTIONS_FILE=${CMAKE_CURRENT_BINARY_DIR}/consumer-build-tree.options)

# examples/vector_add (this toolchain's GPU compiler) and examples/unimem-info (the plain C++
# compiler: every flag of the .pc file is needed there) built by tests/makefile/Makefile with
# the installed unimem-*.pc files (the consumer.install prefix), -Wall -Wextra -Werror.
find_program(UNIMEM_MAKE NAMES make gmake DOC "make, for the Makefile consumer test")
find_program(UNIMEM_PKG_CONFIG NAMES pkg-config pkgconf DOC "pkg-config, for the Makefile consumer test")
set(_makefile_settings "")
set(_hostflags -Wall -Wextra -Werror)
if(UNIMEM_BACKEND_RESOLVED STREQUAL "CUDA" AND CMAKE_CUDA_COMPILER)
  set(_module unimem-cuda)
  set(_gpucxx ${CMAKE_CUDA_COMPILER})
  separate_arguments(_gpuflags UNIX_COMMAND "-x cu ${CMAKE_CUDA_FLAGS}")
  if(CMAKE_CUDA_HOST_COMPILER)
    list(APPEND _gpuflags -ccbin ${CMAKE_CUDA_HOST_COMPILER})
  endif()
  set(_archs ${_consumer_cuda_archs})
  list(APPEND _gpuflags -Xcompiler=-Wall,-Wextra,-Werror -Werror=all-warnings)
  set(_environment "")
  # A plain C++ compiler needs the toolkit's folders where they are not the system's.
  if(CUDAToolkit_INCLUDE_DIRS)
    list(GET CUDAToolkit_INCLUDE_DIRS 0 _cuda_include)
    set(_cuda_lib_dir "${CUDAToolkit_LIBRARY_DIR}")
  else()
    set(_cuda_include "${UNIMEM_CUDA_INCLUDE_DIR}")
    get_filename_component(_cuda_lib_dir "${UNIMEM_CUDART_LIBRARY}" DIRECTORY)
  endif()
  if(_cuda_include AND NOT _cuda_include MATCHES "^/usr/include/?$")
    list(APPEND _hostflags -isystem ${_cuda_include})
  endif()
  if(_cuda_lib_dir AND NOT _cuda_lib_dir MATCHES "^/usr/lib(/${CMAKE_LIBRARY_ARCHITECTURE})?/?$")
    list(APPEND _hostflags -L${_cuda_lib_dir})
  endif()
elseif(UNIMEM_BACKEND_RESOLVED STREQUAL "HIP" AND UNIMEM_KERNEL_LANGUAGE STREQUAL "CXX")  # hipcc
  set(_gpucxx ${CMAKE_CXX_COMPILER})
  separate_arguments(_gpuflags UNIX_COMMAND "${CMAKE_CXX_FLAGS}")
  set(_environment HIP_PLATFORM=${UNIMEM_HIP_PLATFORM})
  if(UNIMEM_HIP_PLATFORM STREQUAL "nvidia")
    set(_module unimem-hip-nvidia)
    set(_archs ${_consumer_cuda_archs})
    list(APPEND _gpuflags -Xcompiler=-Wall,-Wextra,-Werror)
  else()
    set(_module unimem-hip)
    foreach(_arch IN LISTS _consumer_hip_archs)
      list(APPEND _gpuflags --offload-arch=${_arch})
    endforeach()
    set(_archs "")
    list(APPEND _gpuflags -Wall -Wextra -Werror)
  endif()
else()
  set(_module "")
  message(STATUS "unimem: consumer.makefile covers nvcc and hipcc, not kernels compiled as ${UNIMEM_KERNEL_LANGUAGE}")
endif()
if(_module AND UNIMEM_INSTALL AND UNIMEM_MAKE AND UNIMEM_PKG_CONFIG AND UNIMEM_PLAIN_CXX)
  foreach(_arch IN LISTS _archs)  # NVIDIA: as the CMake target compiles, the PTX of the last too
    list(APPEND _gpuflags -gencode=arch=compute_${_arch},code=sm_${_arch})
  endforeach()
  if(_archs)
    list(GET _archs -1 _arch)
    list(APPEND _gpuflags -gencode=arch=compute_${_arch},code=compute_${_arch})
  endif()
  list(JOIN _gpuflags " " _gpuflags)
  list(JOIN _hostflags " " _hostflags)
  set(_makefile_settings ${CMAKE_CURRENT_BINARY_DIR}/consumer-makefile.settings.cmake)
  file(WRITE ${_makefile_settings}
    "set(MAKE [=[${UNIMEM_MAKE}]=])\nset(PKG_CONFIG [=[${UNIMEM_PKG_CONFIG}]=])\n"
    "set(MODULE ${_module})\nset(GPUCXX [=[${_gpucxx}]=])\nset(GPUFLAGS [=[${_gpuflags}]=])\n"
    "set(HOSTCXX [=[${UNIMEM_PLAIN_CXX}]=])\nset(HOSTFLAGS [=[${_hostflags}]=])\n"
    "set(ENVIRONMENT ${_environment})\nset(EXAMPLES [=[${PROJECT_SOURCE_DIR}/examples]=])\n")
  unimem_consumer_test(consumer.makefile ${CMAKE_CURRENT_SOURCE_DIR}/makefile/run.cmake
    ARGS -DSETTINGS=${_makefile_settings}
         -DPKG_CONFIG_PATH=${_prefix}/${UNIMEM_PKGCONFIG_DIR}
         -DWORK=${CMAKE_CURRENT_BINARY_DIR}/consumer-makefile
    REQUIRES unimem_installed)
  set_tests_properties(consumer.makefile.build consumer.makefile PROPERTIES
                       PASS_REGULAR_EXPRESSION "makefile: vector_add and unimem-info built with ${_module}")
elseif(_module)
  message(STATUS "unimem: no make, pkg-config or plain C++ compiler here (or UNIMEM_INSTALL is OFF): no consumer.makefile")
endif()

# The .deb (and .tar.gz) from CPack, unpacked with dpkg -x, serving README's project through
# find_package and vector_add through the Makefile and pkg-config (tests/package).
find_program(UNIMEM_DPKG dpkg DOC "dpkg, for the package test")
find_program(UNIMEM_DPKG_DEB dpkg-deb DOC "dpkg-deb, for the package test")
# The packages hold nothing compiled, so one toolchain per vendor is enough (the consumers it
# builds are the ones above): added with -DUNIMEM_TEST_PACKAGE=ON.
option(UNIMEM_TEST_PACKAGE "ctest package.deb: build the .deb and .tar.gz, unpack the .deb, build two consumers against it" OFF)
if(UNIMEM_TEST_PACKAGE AND _makefile_settings AND PROJECT_IS_TOP_LEVEL AND UNIMEM_DPKG AND UNIMEM_DPKG_DEB)
  list(JOIN _consumer_options "\n" _lines)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/consumer-package.options "${_lines}\n")
  unimem_consumer_test(package.deb ${CMAKE_CURRENT_SOURCE_DIR}/package/check_deb.cmake
    ARGS -DBUILD_DIR=${PROJECT_BINARY_DIR}
         -DWORK=${CMAKE_CURRENT_BINARY_DIR}/package -DVERSION=${PROJECT_VERSION}
         -DREADME=${PROJECT_SOURCE_DIR}/README.md
         -DMAIN=${CMAKE_CURRENT_SOURCE_DIR}/consumer/main.cpp
         -DREADME_SCRIPT=${CMAKE_CURRENT_SOURCE_DIR}/consumer/readme_snippet.cmake
         -DOPTIONS_FILE=${CMAKE_CURRENT_BINARY_DIR}/consumer-package.options
         -DGENERATOR=${CMAKE_GENERATOR}
         -DMAKEFILE_SCRIPT=${CMAKE_CURRENT_SOURCE_DIR}/makefile/run.cmake
         -DMAKEFILE_SETTINGS=${_makefile_settings}
         -DDPKG=${UNIMEM_DPKG} -DDPKG_DEB=${UNIMEM_DPKG_DEB})
  set_tests_properties(package.deb PROPERTIES
    PASS_REGULAR_EXPRESSION "package: the unpacked .deb served find_package and pkg-config")
elseif(UNIMEM_TEST_PACKAGE)
  message(STATUS "unimem: package.deb needs dpkg, dpkg-deb, make, pkg-config and UNIMEM_INSTALL: not added")
endif()
# ---- end of issue 27's consumer tests ----

# The Python package (python/) as pip builds it, where its targets are built here.
if(TARGET unimem_python_allocator AND UNIMEM_PYTHON_EXECUTABLE)
  # python.pip_install: pip builds the package from python/ with this build's compilers and
  # installs it into a folder, and python.package runs against that install. With the .deb's
  # test (UNIMEM_TEST_PACKAGE: one toolchain per vendor), where pip and setuptools (with wheel,
  # before setuptools 70.1) are found for this Python.
  execute_process(COMMAND ${UNIMEM_PYTHON_EXECUTABLE} -c
                          "import importlib.util as u, setuptools; assert u.find_spec('pip'); v = tuple(map(int, setuptools.__version__.split('.')[:2])); v >= (70, 1) or __import__('wheel')"
                  RESULT_VARIABLE _pip_rc OUTPUT_QUIET ERROR_QUIET)
  if(UNIMEM_TEST_PACKAGE AND _pip_rc EQUAL 0)
    set(_pip_options ${_consumer_options} -DUNIMEM_WERROR=${UNIMEM_WERROR}
        -DUNIMEM_PYTHON_REQUIRE_BUFFERS=$<IF:$<TARGET_EXISTS:unimem_python_buffers>,ON,OFF>)
    if(CMAKE_GENERATOR MATCHES "Ninja")
      list(APPEND _pip_options -GNinja)
    endif()
    list(JOIN _pip_options "\n" _lines)
    file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/python-pip.options CONTENT "${_lines}\n")
    set(_pip_environment "")
    if(UNIMEM_BACKEND_RESOLVED STREQUAL "HIP")
      list(APPEND _pip_environment HIP_PLATFORM=${UNIMEM_HIP_PLATFORM})
    endif()
    if(DEFINED ENV{CUDA_PATH})
      list(APPEND _pip_environment "CUDA_PATH=$ENV{CUDA_PATH}")
    endif()
    add_test(NAME python.pip_install
             COMMAND ${CMAKE_COMMAND} -DPYTHON=${UNIMEM_PYTHON_EXECUTABLE}
                     -DSOURCE=${PROJECT_SOURCE_DIR}/python -DWORK=${CMAKE_CURRENT_BINARY_DIR}/python-pip
                     -DOPTIONS=${CMAKE_CURRENT_BINARY_DIR}/python-pip.options
                     "-DENVIRONMENT=${_pip_environment}"
                     -DTEST=${CMAKE_CURRENT_SOURCE_DIR}/python/test_package.py
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/python/pip_install.cmake)
    set_tests_properties(python.pip_install PROPERTIES
      ENVIRONMENT "UNIMEM_SOURCE_DIR=${PROJECT_SOURCE_DIR}" LABELS "toolchain;consumer;python" TIMEOUT 1200
      PASS_REGULAR_EXPRESSION "pip_install: the installed package passed")
  elseif(UNIMEM_TEST_PACKAGE)
    message(STATUS "unimem: no pip with setuptools (and wheel) for ${UNIMEM_PYTHON_EXECUTABLE}: no python.pip_install")
  endif()
endif()
