# unimem's pkg-config files, for builds without CMake (Makefiles): one per backend,
# unimem-cuda.pc, unimem-hip.pc (HIP on AMD), unimem-hip-nvidia.pc (HIP on NVIDIA), and
# unimem-mpi.pc. Each gives the include folder, the backend macro, -std=c++17 and the GPU runtime
# library. They do not depend on the toolchain unimem was configured with: one installation (or
# the .deb) serves every backend. Installed into <datadir>/pkgconfig (architecture-independent)
# with a prefix relative to the file itself (${pcfiledir}), so that an installed tree can be
# moved or unpacked anywhere (dpkg -x). Included by unimem's CMakeLists.txt where it installs.

# The prefix seen from <datadir>/pkgconfig: ${pcfiledir}/../.. for share/pkgconfig.
set(UNIMEM_PKGCONFIG_DIR "${CMAKE_INSTALL_DATADIR}/pkgconfig")
if(IS_ABSOLUTE "${UNIMEM_PKGCONFIG_DIR}")
  set(UNIMEM_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _unimem_up "/prefix/${UNIMEM_PKGCONFIG_DIR}" "/prefix")
  string(REGEX REPLACE "/$" "" _unimem_up "${_unimem_up}")
  set(UNIMEM_PC_PREFIX "\${pcfiledir}/${_unimem_up}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(UNIMEM_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(UNIMEM_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()

# MPI's own pkg-config module, which unimem-mpi.pc requires: Debian's mpi-c (whichever MPI the
# system's alternatives choose), else Open MPI's ompi-c, else MPICH's mpich; the first that
# pkg-config knows here, or the one named. Empty where there is none (Cray MPICH and other
# wrappers-only MPIs): then unimem-mpi.pc gives the macros only, and MPI comes from the MPI
# compiler wrapper (mpicxx --showme:compile / -show).
if(NOT DEFINED UNIMEM_PKGCONFIG_MPI)
  set(_unimem_mpi_pc "")
  find_program(UNIMEM_PKG_CONFIG NAMES pkg-config pkgconf DOC "pkg-config, to find MPI's module")
  if(UNIMEM_PKG_CONFIG)
    foreach(_m mpi-c ompi-c mpich)
      execute_process(COMMAND "${UNIMEM_PKG_CONFIG}" --exists ${_m} RESULT_VARIABLE _rc)
      if(_rc EQUAL 0)
        set(_unimem_mpi_pc ${_m})
        break()
      endif()
    endforeach()
  endif()
  set(UNIMEM_PKGCONFIG_MPI "${_unimem_mpi_pc}" CACHE STRING
      "MPI's pkg-config module that unimem-mpi.pc requires (mpi-c, ompi-c, mpich, ...); empty: none")
endif()
if(UNIMEM_PKGCONFIG_MPI)
  set(UNIMEM_PC_MPI_REQUIRES "Requires: ${UNIMEM_PKGCONFIG_MPI}")
  set(UNIMEM_PC_MPI_NOTE "MPI's flags come from its module, ${UNIMEM_PKGCONFIG_MPI}.")
else()
  set(UNIMEM_PC_MPI_REQUIRES "")
  set(UNIMEM_PC_MPI_NOTE "No MPI module was known when this file was made: add MPI's flags (mpicxx --showme:compile, or -show).")
endif()

foreach(_unimem_pc unimem-cuda unimem-hip unimem-hip-nvidia unimem-mpi)
  configure_file("${CMAKE_CURRENT_LIST_DIR}/pkgconfig/${_unimem_pc}.pc.in"
                 "${PROJECT_BINARY_DIR}/pkgconfig/${_unimem_pc}.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/pkgconfig/${_unimem_pc}.pc"
          DESTINATION "${UNIMEM_PKGCONFIG_DIR}")
endforeach()
