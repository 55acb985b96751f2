/// @file
/// @brief location, where managed pages live: the host or one GPU, and optional_location, the
/// answer of a query that may have none. Runtime-free.
#pragma once

#include "config.hpp"

UNIMEM_BEGIN_NAMESPACE

/// @brief The device id that names no device: what location::host().device_id(),
/// stream_ref::device_id() of a stream whose device it does not know, and stream::device_id()
/// of a moved-from stream return, and launch_config::device when no device is named. It is
/// not -1, so that -1 passed as a device (the runtimes' id of the CPU) is refused as invalid
/// instead of meaning "none".
inline constexpr int no_device = -2147483647 - 1;

/// @brief Where managed memory should live: the host (CPU memory) or one GPU.
///
/// Every placement call (prefetch, advice, first touch) takes one; the backend maps it onto the
/// runtime's own form (an int device and a CPU id, or a hipMemLocation/cudaMemLocation).
/// to_string(location) is in placement.hpp.
/// @code
///   unimem::prefetch(buf, unimem::location::device(0));
///   unimem::prefetch(buf, unimem::location::host());
/// @endcode
class location {
 public:
  /// @brief The host.
  static constexpr location host() noexcept { return location(true, no_device); }
  /// @brief The GPU with ordinal `id`. An id that names no GPU makes the call that uses the
  /// location throw unimem::error.
  static constexpr location device(int id) noexcept { return location(false, id); }

  /// @brief True for the host.
  [[nodiscard]] constexpr bool is_host() const noexcept { return host_; }
  /// @brief True for a GPU.
  [[nodiscard]] constexpr bool is_device() const noexcept { return !host_; }
  /// @brief The device ordinal; no_device for the host.
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

/// @brief A location or none: what preferred_location() and last_prefetch_location() answer,
/// with the part of std::optional<location>'s interface such answers need (the header stays
/// free of `<optional>`, which the buffers' headers would otherwise pull into every
/// translation unit).
/// @code
///   if (unimem::optional_location l = unimem::preferred_location(buf)) use(*l);
///   EXPECT_EQ(unimem::last_prefetch_location(buf), unimem::location::device(0));
/// @endcode
class optional_location {
 public:
  /// @brief None.
  constexpr optional_location() noexcept = default;
  /// @brief The location l.
  constexpr optional_location(location l) noexcept : value_(l), engaged_(true) {}  // NOLINT

  /// @brief True when there is a location.
  [[nodiscard]] constexpr bool has_value() const noexcept { return engaged_; }
  /// @brief True when there is a location.
  constexpr explicit operator bool() const noexcept { return engaged_; }
  /// @brief The location (has_value() must be true).
  [[nodiscard]] constexpr location operator*() const noexcept { return value_; }
  /// @brief Members of the location (has_value() must be true).
  [[nodiscard]] constexpr const location* operator->() const noexcept { return &value_; }
  /// @brief The location, or `fallback` when there is none.
  [[nodiscard]] constexpr location value_or(location fallback) const noexcept {
    return engaged_ ? value_ : fallback;
  }

  /// @brief Both none, or the same location.
  friend constexpr bool operator==(optional_location a, optional_location b) noexcept {
    return a.engaged_ == b.engaged_ && (!a.engaged_ || a.value_ == b.value_);
  }
  /// @brief Not equal.
  friend constexpr bool operator!=(optional_location a, optional_location b) noexcept {
    return !(a == b);
  }
  /// @brief A location equal to l.
  friend constexpr bool operator==(optional_location a, location l) noexcept {
    return a.engaged_ && a.value_ == l;
  }
  /// @brief A location equal to l.
  friend constexpr bool operator==(location l, optional_location a) noexcept { return a == l; }
  /// @brief None, or another location.
  friend constexpr bool operator!=(optional_location a, location l) noexcept { return !(a == l); }
  /// @brief None, or another location.
  friend constexpr bool operator!=(location l, optional_location a) noexcept { return !(a == l); }

 private:
  location value_ = location::host();
  bool engaged_ = false;
};

UNIMEM_END_NAMESPACE
