/// @file
/// @brief event, a marker in a stream for ordering and timing, and elapsed_ms().
#pragma once

#include "config.hpp"
#include "detail/backend/events.hpp"
#include "detail/backend/backend.hpp"
#include "error.hpp"
#include "stream_ref.hpp"

#include <utility>

UNIMEM_BEGIN_NAMESPACE

/// @brief An owned runtime event: record it on a stream; wait for it, query it, make another
/// stream wait for it (`other.wait(e)`), or time work between two. Move-only.
/// @code
///   start.record(s);
///   unimem::launch(kernel, cfg.on(s), a, n);
///   stop.record(s);
///   float ms = unimem::elapsed_ms(start, stop);   // waits for stop
/// @endcode
class event {
 public:
  /// @brief Whether the event records timestamps: one choice of two.
  enum class timing_mode {
    timing,  ///< Records timestamps (elapsed_ms works).
    disable_timing,  ///< Cheaper, for ordering only (cudaEventDisableTiming).
  };
  /// @brief A new event on the current device. @throws unimem::error
  explicit event(timing_mode m = timing_mode::timing, call_site where = call_site::current()) {
    detail::check(detail::backend::event_create(&handle_, m == timing_mode::timing), where);
  }
  event(const event&) = delete;             ///< Not copyable: owns its handle.
  event& operator=(const event&) = delete;  ///< Not copyable: owns its handle.
  /// @brief Takes the other event's handle; the other is left empty.
  event(event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  /// @brief Destroys this event's handle, if any, and takes the other's (left empty).
  event& operator=(event&& other) noexcept {
    event(std::move(other)).swap(*this);
    return *this;
  }
  /// @brief Destroys the handle, if any; never throws.
  ~event() {
    if (handle_ != nullptr) (void)detail::backend::event_destroy(handle_);
  }
  /// @brief Exchanges the two events.
  void swap(event& other) noexcept { std::swap(handle_, other.handle_); }
  /// @brief Records the event at the current end of stream s.
  void record(stream_ref s = {}, call_site where = call_site::current()) {
    detail::check(detail::backend::event_record(handle_, s.get()), where);
  }
  /// @brief Waits until the recorded work has finished.
  void synchronize(call_site where = call_site::current()) const {
    detail::check(detail::backend::event_synchronize(handle_), where);
  }
  /// @brief True when the recorded work has finished; never blocks.
  [[nodiscard]] bool ready(call_site where = call_site::current()) const {
    return detail::query_ready(detail::backend::event_query(handle_), where);
  }
  /// @brief The native handle (hipEvent_t / cudaEvent_t).
  [[nodiscard]] detail::backend::event_handle get() const noexcept { return handle_; }
  /// @brief False for a moved-from event.
  [[nodiscard]] explicit operator bool() const noexcept { return handle_ != nullptr; }

 private:
  detail::backend::event_handle handle_ = nullptr;
};

/// @brief Milliseconds between two recorded timing events; waits for `end` first.
/// @throws unimem::error when either was not recorded or was made with disable_timing.
inline float elapsed_ms(const event& start, const event& end,
                        call_site where = call_site::current()) {
  end.synchronize(where);
  float ms = 0.0f;
  detail::check(detail::backend::event_elapsed_ms(&ms, start.get(), end.get()), where);
  return ms;
}

UNIMEM_END_NAMESPACE
