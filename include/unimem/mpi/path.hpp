// unimem::mpi: The decision of how a range reaches MPI, as pure functions (host-tested in CI): its memory,
// the GPU awareness and the managed policy choose direct, staged or via the host.
/// @file
/// @brief unimem::mpi::memory, path and choose_path(): how a range reaches MPI.
#pragma once

#include <mpi.h>

#include "../config.hpp"
#include "settings.hpp"

#include <string>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {

/// @brief The memory a range lives in, as unimem::mpi sees it.
enum class memory {
  pageable,  ///< host memory the GPU runtime does not know (std::vector, malloc)
  pinned,    ///< page-locked host memory (pinned_buffer)
  device,    ///< GPU memory (device_buffer)
  managed,   ///< managed memory (managed_buffer, managed_vector)
};

/// @brief How a range reaches MPI.
enum class path {
  /// MPI reads or writes the range itself.
  direct,
  /// Through pinned staging buffers, with copies in stream order.
  staged,
  /// Made host-ready in bulk first (managed memory, managed_path::host).
  via_host,
};

/// @brief "direct", "staged" or "via_host" (a std::string, as every unimem::to_string).
inline std::string to_string(path p) {
  switch (p) {
    case path::direct: return "direct";
    case path::staged: return "staged";
    case path::via_host: return "via_host";
  }
  return "?";
}
/// @brief "pageable", "pinned", "device" or "managed" (a std::string, as every
/// unimem::to_string).
inline std::string to_string(memory m) {
  switch (m) {
    case memory::pageable: return "pageable";
    case memory::pinned: return "pinned";
    case memory::device: return "device";
    case memory::managed: return "managed";
  }
  return "?";
}

/// @brief The path of a range: everything direct with GPU-aware MPI; host memory direct;
/// device memory staged; managed memory by the policy, where `managed_on_host` says the range
/// is host-resident (mapped, last prefetched to the host, or a GPU that cannot migrate).
constexpr path choose_path(memory m, bool gpu_aware, managed_path policy,
                           bool managed_on_host) noexcept {
  if (gpu_aware || m == memory::pageable || m == memory::pinned) return path::direct;
  if (m == memory::device) return path::staged;
  switch (policy) {
    case managed_path::staged: return path::staged;
    case managed_path::host: return path::via_host;
    case managed_path::automatic: break;
  }
  return managed_on_host ? path::direct : path::staged;
}

}  // namespace mpi
UNIMEM_END_NAMESPACE
