// unimem: location, where managed pages live (the host or a device). Runtime-free.
/// @file
/// @brief location, where managed pages live: the host or one GPU. Runtime-free.
#pragma once

#include "config.hpp"

UNIMEM_BEGIN_NAMESPACE

/// @brief Where managed memory should live: the host (CPU memory) or one GPU.
///
/// Every placement call (prefetch, advice, first touch) takes one; the backend maps it onto the
/// runtime's own form (an int device and a CPU id, or a hipMemLocation/cudaMemLocation).
/// to_string(location) is in placement.hpp.
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

  /// @brief True for the host.
  [[nodiscard]] constexpr bool is_host() const noexcept { return host_; }
  /// @brief True for a GPU.
  [[nodiscard]] constexpr bool is_device() const noexcept { return !host_; }
  /// @brief The device ordinal; -1 for the host.
  [[nodiscard]] constexpr int device_id() const noexcept { return id_; }

  /// @brief Same place.
  friend constexpr bool operator==(location a, location b) noexcept {
    return a.host_ == b.host_ && (a.host_ || a.id_ == b.id_);
  }
  /// @brief Different places.
  friend constexpr bool operator!=(location a, location b) noexcept { return !(a == b); }

 private:
  constexpr location(bool host, int id) noexcept : host_(host), id_(id) {}
  bool host_;
  int id_;
};

UNIMEM_END_NAMESPACE
