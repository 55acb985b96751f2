# unimem's packages (CPack): `cpack -G TGZ` and `cpack -G DEB` in a configured build folder
# (both: plain `cpack`). What they hold is what `cmake --install` installs: the headers, the
# CMake package configuration, the pkg-config files, LICENSE and CHANGELOG.md; nothing compiled,
# so one package serves every backend and architecture. Included by unimem's CMakeLists.txt
# when unimem is the top-level project and installs.
#
# The .deb is libunimem-dev (Debian's name for a library's headers), Architecture: all. It
# Depends on nothing: the headers need a C++17 compiler and one GPU toolchain, and Debian has
# several (Debian's HIP, Debian's CUDA, AMD's and NVIDIA's own repositories, whose package names
# are not Debian's). A Depends or Recommends on one of them would make apt install a second GPU
# toolkit next to the one the user has (apt installs Recommends by default). They are Suggests,
# with CMake and pkg-config (the two ways to consume it; neither is needed to compile) and MPI
# (for <unimem/mpi.hpp> only).

set(CPACK_PACKAGE_NAME unimem)
set(CPACK_PACKAGE_VENDOR "The unimem authors")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(UNIMEM_PACKAGE_CONTACT "The unimem authors" CACHE STRING
    "Maintainer field of unimem's .deb (Name <email>)")
set(CPACK_PACKAGE_CONTACT "${UNIMEM_PACKAGE_CONTACT}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_GENERATOR TGZ DEB)
# Header-only: the same files for every system and processor.
set(CPACK_PACKAGE_FILE_NAME "unimem-${PROJECT_VERSION}-noarch")
# Source packages (`cpack --config CPackSourceConfig.cmake`) leave out build folders and git.
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/[.]git/" "/build/" "/[.]cache/")

set(CPACK_DEBIAN_PACKAGE_NAME libunimem-dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # libunimem-dev_<version>_all.deb
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "hipcc, libamdhip64-dev, nvidia-cuda-toolkit, cmake (>= 3.21), pkgconf | pkg-config, mpi-default-dev")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
# The synopsis is CPACK_PACKAGE_DESCRIPTION_SUMMARY; CPack indents these lines and marks the
# empty one.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "unimem is a header-only C++17 library over HIP and CUDA managed memory: typed,
RAII managed buffers that the CPU and the GPU share with no copies, and a
type-checked kernel launch. One source compiles with hipcc (AMD), with
HIP_PLATFORM=nvidia hipcc, and with nvcc.

This package holds the headers, the CMake package (find_package(unimem)) and
pkg-config files (unimem-cuda, unimem-hip, unimem-hip-nvidia, unimem-mpi).
Install one GPU toolchain with it: hipcc and libamdhip64-dev, or CUDA.")

include(CPack)
