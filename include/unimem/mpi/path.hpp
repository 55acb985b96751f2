/// @file
/// @brief How a range reaches MPI (memory, path, choose_path()) and when (ordering, host_ready).
#pragma once

#include <mpi.h>

#include "../core/config.hpp"
#include "../core/stream_ref.hpp"
#include "settings.hpp"

#include <string>
#include <type_traits>
#include <utility>

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
  direct,    ///< MPI reads or writes the range itself
  staged,    ///< through pinned staging buffers, with copies in stream order
  via_host,  ///< made host-ready in bulk first (managed memory, managed_path::host)
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
/// @brief "pageable", "pinned", "device" or "managed".
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
/// @brief The type of unimem::mpi::host_ready.
struct host_ready_t {
  /// @brief Made only as unimem::mpi::host_ready.
  explicit constexpr host_ready_t() noexcept = default;
};
/// @brief Passed for a stream: "no GPU work still uses this range". The call waits for nothing,
/// as raw MPI_Send / MPI_Recv: host memory (pageable, pinned, managed) goes to MPI at once;
/// device memory without GPU-aware MPI is still staged on the default stream. Saying it of a
/// range a kernel still uses is a data race.
/// @code
///   s.synchronize();                              // the kernels that wrote `halo` are done
///   unimem::mpi::send(halo, peer, tag, MPI_COMM_WORLD, unimem::mpi::host_ready);
/// @endcode
inline constexpr host_ready_t host_ready{};
/// @brief What a unimem::mpi call waits for before MPI touches a range: a stream's queued work
/// (staging copies run on it), every GPU's work (`{}`; not for pageable memory), or nothing
/// (host_ready).
class ordering {
 public:
  /// @brief No stream: the call waits for every GPU's work (except for pageable memory).
  constexpr ordering() noexcept = default;
  /// @brief The work queued on stream `s` (a unimem::stream, a stream_ref or a native handle).
  template <class S, std::enable_if_t<std::is_convertible<S&&, stream_ref>::value, int> = 0>
  constexpr ordering(S&& s) noexcept : stream_(std::forward<S>(s)) {}  // NOLINT: converts
  /// @brief Nothing: the range is ready (unimem::mpi::host_ready).
  constexpr ordering(host_ready_t) noexcept : ready_(true) {}  // NOLINT: converts
  /// @brief The stream whose work comes first and staging copies run on (else the default stream).
  [[nodiscard]] constexpr stream_ref stream() const noexcept { return stream_; }
  /// @brief True for host_ready.
  [[nodiscard]] constexpr bool host_ready() const noexcept { return ready_; }
  /// @brief True without a stream and without host_ready: every GPU's work comes first.
  [[nodiscard]] constexpr bool every_gpu() const noexcept {
    return !ready_ && stream_.is_default();
  }

 private:
  stream_ref stream_{};
  bool ready_ = false;
};
}  // namespace mpi
UNIMEM_END_NAMESPACE
