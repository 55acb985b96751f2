# unimem::mpi: <unimem/mpi.hpp> (unimem's buffers over MPI), an INTERFACE target over
# unimem::unimem and MPI's C++ target. It exists where find_package(MPI COMPONENTS CXX) finds an
# MPI (Open MPI, MPICH, Cray MPICH, Intel MPI, ...); otherwise it is absent and the configure
# output says why. unimem uses MPI's C API only: the deprecated C++ bindings are kept out.
# Included by unimem's CMakeLists.txt and by its package configuration (find_package(unimem)).
if(NOT TARGET unimem::mpi)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    get_target_property(_unimem_imported unimem::unimem IMPORTED)
    if(_unimem_imported)  # find_package(unimem): an imported target, as unimem::unimem is
      add_library(unimem::mpi INTERFACE IMPORTED)
      set(_unimem_mpi_target unimem::mpi)
      set(_unimem_mpi MPI::MPI_CXX)
    else()
      add_library(unimem_mpi INTERFACE)
      add_library(unimem::mpi ALIAS unimem_mpi)
      set_target_properties(unimem_mpi PROPERTIES EXPORT_NAME mpi)  # unimem::mpi when exported
      set(_unimem_mpi_target unimem_mpi)
      # As for unimem::unimem (unimem-backend.cmake): the export set names no MPI.
      set(_unimem_mpi $<BUILD_INTERFACE:MPI::MPI_CXX>)
    endif()
    target_link_libraries(${_unimem_mpi_target} INTERFACE unimem::unimem ${_unimem_mpi})
    target_compile_definitions(${_unimem_mpi_target} INTERFACE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
    message(STATUS "unimem: unimem::mpi over MPI ${MPI_CXX_VERSION} (${MPIEXEC_EXECUTABLE})")
    unset(_unimem_mpi_target)
    unset(_unimem_mpi)
    unset(_unimem_imported)
  else()
    message(STATUS "unimem: no MPI found (find_package(MPI COMPONENTS CXX)): no unimem::mpi")
  endif()
endif()
