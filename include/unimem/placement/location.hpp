/// @file
/// @brief location (the host or one GPU) and optional_location. Runtime-free.
#pragma once

#include "../core/config.hpp"

UNIMEM_BEGIN_NAMESPACE

/// @brief Where managed memory should live: the host or one GPU; every placement call takes one.
/// to_string(location) is in placement.hpp.
/// @code
///   unimem::prefetch(buf, unimem::location::device(0));
/// @endcode
class location {
 public:
  static constexpr location host() noexcept { return location(true, no_device); }  ///< The host.
  /// @brief The GPU with ordinal `id`. An id that names no GPU makes the call that uses the
  /// location throw unimem::error.
  static constexpr location device(int id) noexcept { return location(false, id); }

  [[nodiscard]] constexpr bool is_host() const noexcept { return host_; }  ///< True for the host.
  [[nodiscard]] constexpr bool is_device() const noexcept { return !host_; }  ///< True for a GPU.
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

/// @brief A location or none (preferred_location(), last_prefetch_location()): the needed part of
/// std::optional<location>, without pulling `<optional>` into every translation unit.
/// @code
///   if (unimem::optional_location l = unimem::preferred_location(buf)) use(*l);
/// @endcode
class optional_location {
 public:
  constexpr optional_location() noexcept = default;  ///< None.
  /// @brief The location l.
  constexpr optional_location(location l) noexcept : value_(l), engaged_(true) {}  // NOLINT

  [[nodiscard]] constexpr bool has_value() const noexcept { return engaged_; }  ///< Not none.
  constexpr explicit operator bool() const noexcept { return engaged_; }      ///< Not none.
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
