// unimem: location, where managed pages live (the host or a device).
#pragma once

#include "detail/backend.hpp"

#include <string>

UNIMEM_BEGIN_NAMESPACE

class device;

/// @brief Where managed memory should live: the host (CPU memory) or one GPU.
///
/// Every placement call (prefetch, advice, first touch) takes one; the backend maps it onto the
/// runtime's own form (an int device and a CPU id, or a hipMemLocation/cudaMemLocation).
/// @code
///   buf.prefetch(unimem::location::device(0));
///   buf.prefetch(unimem::location::host());
/// @endcode
class location {
 public:
  /// @brief The host.
  static constexpr location host() noexcept { return location(true, -1); }
  /// @brief The GPU with ordinal `id`. An id that names no GPU makes the call that uses the
  /// location throw unimem::error.
  static constexpr location device(int id) noexcept { return location(false, id); }

  [[nodiscard]] constexpr bool is_host() const noexcept { return host_; }
  [[nodiscard]] constexpr bool is_device() const noexcept { return !host_; }
  /// @brief The device ordinal; -1 for the host.
  [[nodiscard]] constexpr int device_id() const noexcept { return id_; }

  /// @brief "host" or "device 3".
  [[nodiscard]] std::string to_string() const {
    return host_ ? std::string("host") : "device " + std::to_string(id_);
  }

  friend constexpr bool operator==(location a, location b) noexcept {
    return a.host_ == b.host_ && (a.host_ || a.id_ == b.id_);
  }
  friend constexpr bool operator!=(location a, location b) noexcept { return !(a == b); }

  /// Internal: the backend's form.
  [[nodiscard]] constexpr detail::backend::native_location native() const noexcept {
    return {host_, id_};
  }

 private:
  constexpr location(bool host, int id) noexcept : host_(host), id_(id) {}
  bool host_;
  int id_;
};

UNIMEM_END_NAMESPACE
