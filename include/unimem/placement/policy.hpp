/// @file
/// @brief hint_status (what a placement call did) and unsupported_policy (what it does where
/// managed pages cannot migrate).
#pragma once

#include "../core/config.hpp"
#include "../core/detail/atomic.hpp"
#include "../core/detail/backend/backend.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"

#include <string>

UNIMEM_BEGIN_NAMESPACE

/// @brief What a placement call (prefetch, advice) did.
enum class hint_status {
  /// The runtime took the hint (asynchronously, for prefetch).
  applied,
  /// The range is empty: nothing to do.
  empty,
  /// The device cannot migrate managed pages, and the policy said to ignore the hint.
  unsupported,
  /// On an APU (one memory for CPU and GPU) prefetch, read_mostly or preferred_location advice,
  /// set_intent and ready_for_host's prefetch make no runtime call. Never an error.
  not_needed,
};

/// @brief "applied", "empty", "unsupported" or "not_needed".
inline std::string to_string(hint_status s) {
  switch (s) {
    case hint_status::applied: return "applied";
    case hint_status::empty: return "empty";
    case hint_status::unsupported: return "unsupported";
    case hint_status::not_needed: return "not_needed";
  }
  return "?";
}

/// @brief What placement calls do on a device that cannot migrate managed pages (CUDA without
/// concurrent managed access, AMD without XNACK), and advise() on memory that takes no advice.
enum class unsupported_policy {
  /// Do nothing and return hint_status::unsupported (the default).
  ignore,
  /// Throw unimem::error with the native "not supported" status.
  throw_error,
};

namespace detail {
/// Whether a hint for device `id` has nothing to do (an APU): not_needed, no runtime call.
inline bool hint_not_needed(int id, call_site where) {
  return device_regime(id, where) == memory_regime::apu;
}

inline atomic_cell<int>& unsupported_policy_state() noexcept {
  static atomic_cell<int> state{static_cast<int>(unsupported_policy::ignore)};
  return state;
}
/// A hint that cannot apply: unsupported, or under throw_error unimem::error "not supported".
inline hint_status refused_hint(const char* what, call_site where, const char* context) {
  if (unsupported_policy_state().load() == static_cast<int>(unsupported_policy::throw_error)) {
    fail(backend::error_not_supported, what, where, context);
  }
  return hint_status::unsupported;
}
/// A hint refused because device `id` cannot migrate pages: the unsupported_policy applies.
inline hint_status refused_migration(int id, const char* what, call_site where) {
  fixed_text<160> context("device ");
  context.append(id).append(
      " cannot migrate managed memory (migrates_on_demand() is false), and "
      "unimem::unsupported_policy::throw_error is set");
  return refused_hint(what, where, context.c_str());
}
/// Applies the unsupported_policy for a hint that needs device `id` to migrate pages.
inline hint_status gate(int id, const char* what, call_site where) {
  return device_migrates(id, where) ? hint_status::applied : refused_migration(id, what, where);
}
}  // namespace detail

/// @brief Sets what placement calls do on devices that cannot migrate (process-wide).
inline void set_unsupported_policy(unsupported_policy p) noexcept {
  detail::unsupported_policy_state().store(static_cast<int>(p));
}
/// @brief The current unsupported_policy (default: ignore).
[[nodiscard]] inline unsupported_policy get_unsupported_policy() noexcept {
  return static_cast<unsupported_policy>(detail::unsupported_policy_state().load());
}

UNIMEM_END_NAMESPACE
