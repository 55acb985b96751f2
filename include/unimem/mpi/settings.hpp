/// @file
/// @brief unimem::mpi::settings and the GPU awareness of the MPI library.
#pragma once

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>  // MPIX_Query_cuda_support (Open MPI 4/5), MPIX_Query_rocm_support (5)
#endif

#include "../core/argument_error.hpp"
#include "../core/config.hpp"
#include "error.hpp"

#include <cstdlib>
#include <cstring>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {
/// @brief What unimem::mpi does with managed memory when MPI is not GPU-aware.
enum class managed_path {
  /// Host-resident ranges (mapped, last prefetched to the host, or on a GPU that cannot
  /// migrate) go straight to MPI; the others are staged like device memory.
  automatic,
  staged,  ///< always staged through pinned buffers (the pages stay where they are)
  /// Made host-ready in bulk (ready_for_host()), and after a receive prefetched back to the GPU
  /// it was last prefetched to (the pages move).
  host,
};
/// @brief unimem::mpi's settings.
struct settings {
  /// @brief Managed memory without GPU-aware MPI; default automatic, or UNIMEM_MPI_MANAGED
  /// (automatic, staged, host) read at the first use.
  managed_path managed = managed_path::automatic;
};

namespace detail {
inline settings settings_from_environment() {
  settings s;
  const char* const m = std::getenv("UNIMEM_MPI_MANAGED");
  if (m == nullptr) return s;
  const char* const names[] = {"automatic", "staged", "host"};  // managed_path, in order
  for (int i = 0; i < 3; ++i) {
    if (std::strcmp(m, names[i]) == 0) {
      s.managed = static_cast<managed_path>(i);
      return s;
    }
  }
  unimem::detail::throw_refused<unimem::invalid_argument>(
      unimem::detail::refusal("unimem::mpi: UNIMEM_MPI_MANAGED=").append(m).append(
          " is none of automatic, staged, host"));
}
inline settings& settings_storage() {
  static settings s = settings_from_environment();
  return s;
}
}  // namespace detail
/// @brief The settings in force.
/// @throws unimem::invalid_argument at the first use when an environment variable is malformed.
inline settings current_settings() { return detail::settings_storage(); }
/// @brief Replaces the settings, before communicating, from one thread; they never change what
/// travels on the wire.
inline void configure(const settings& s) { detail::settings_storage() = s; }
/// @brief Whether MPI takes GPU pointers, and who said so.
struct gpu_awareness {
  /// @brief True: device and managed pointers go straight to MPI.
  bool device_pointers;
  /// @brief Where the answer came from ("UNIMEM_MPI_GPU_AWARE=1", ...).
  const char* source;
};
/// @brief Whether this MPI takes pointers of the GPUs unimem was built for: UNIMEM_MPI_GPU_AWARE
/// (1 or 0) first; then Open MPI's MPIX_Query_cuda/rocm_support(), or MPICH's
/// MPIX_GPU_query_support(); then Cray's MPICH_GPU_SUPPORT_ENABLED=1; else not (staging is
/// always correct).
/// @throws unimem::invalid_argument before MPI_Init or for a malformed UNIMEM_MPI_GPU_AWARE.
inline gpu_awareness query_gpu_awareness() {
  detail::require_initialized("unimem::mpi::query_gpu_awareness");
  if (const char* e = std::getenv("UNIMEM_MPI_GPU_AWARE")) {
    if (std::strcmp(e, "1") == 0) return {true, "UNIMEM_MPI_GPU_AWARE=1"};
    if (std::strcmp(e, "0") == 0) return {false, "UNIMEM_MPI_GPU_AWARE=0"};
    unimem::detail::throw_refused<unimem::invalid_argument>(
        unimem::detail::refusal("unimem::mpi: UNIMEM_MPI_GPU_AWARE=").append(e).append(
            " is not 0 or 1"));
  }
#if defined(UNIMEM_DETAIL_HIP_AMD)
#if defined(OMPI_HAVE_MPI_EXT_ROCM) && OMPI_HAVE_MPI_EXT_ROCM
  return {MPIX_Query_rocm_support() == 1, "MPIX_Query_rocm_support()"};
#elif defined(MPIX_GPU_SUPPORT_HIP)
  int hip = 0;
  if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_HIP, &hip) == MPI_SUCCESS) {
    return {hip != 0, "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_HIP)"};
  }
#endif
#else
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  return {MPIX_Query_cuda_support() == 1, "MPIX_Query_cuda_support()"};
#elif defined(MPIX_GPU_SUPPORT_CUDA)
  int cuda = 0;
  if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &cuda) == MPI_SUCCESS) {
    return {cuda != 0, "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA)"};
  }
#endif
#endif
  if (const char* c = std::getenv("MPICH_GPU_SUPPORT_ENABLED")) {
    if (std::strcmp(c, "1") == 0) return {true, "MPICH_GPU_SUPPORT_ENABLED=1 (Cray MPICH)"};
  }
  return {false, "this MPI cannot tell; set UNIMEM_MPI_GPU_AWARE=1 if it takes GPU pointers"};
}

namespace detail {
inline gpu_awareness& awareness_storage() {
  static gpu_awareness a = query_gpu_awareness();  // retried while it throws
  return a;
}
}  // namespace detail
/// @brief query_gpu_awareness(), asked once per process and remembered.
inline gpu_awareness current_gpu_awareness() { return detail::awareness_storage(); }
}  // namespace mpi
UNIMEM_END_NAMESPACE
