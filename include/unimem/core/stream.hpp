/// @file
/// @brief stream, an owning runtime stream of one device.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/backend/device.hpp"
#include "detail/stream_calls.hpp"
#include "device.hpp"
#include "error.hpp"
#include "stream_ref.hpp"

#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE


/// @brief An owned stream of the device that was current when it was made. Move-only; a
/// moved-from stream is empty and must not be used. Converts to stream_ref (which remembers the
/// device); a temporary stream does not (it would be gone before its work).
/// @code
///   unimem::stream s;                                   // on the current device
///   unimem::launch(kernel, unimem::grid_for(n).on(s), a, n);
/// @endcode
class stream {
 public:
  /// @brief Whether the stream is ordered against the legacy default stream.
  enum class blocking_mode {
    /// Waits for, and is waited for by, the legacy default stream (as cudaStreamCreate).
    blocking,
    non_blocking,  ///< Independent of the default stream (cudaStreamNonBlocking).
  };
  /// @brief A new stream on the current device.
  /// @throws unimem::error when the runtime cannot create it (no GPU, for one).
  explicit stream(blocking_mode m = blocking_mode::blocking,
                  call_site where = call_site::current())
      : device_(detail::current_device_id(where)) {
    detail::check(detail::backend::stream_create(&handle_, m == blocking_mode::non_blocking),
                  where);
  }
  /// @brief A new stream on device d (the current device is left as it was).
  explicit stream(const device& d, blocking_mode m = blocking_mode::blocking,
                  call_site where = call_site::current())
      : device_(d.device_id()) {
    device_guard g(d, where);
    detail::check(detail::backend::stream_create(&handle_, m == blocking_mode::non_blocking),
                  where);
  }

  stream(const stream&) = delete;             ///< Not copyable: owns its handle.
  stream& operator=(const stream&) = delete;  ///< Not copyable: owns its handle.
  /// @brief Takes the other stream's handle and device; the other is left empty.
  stream(stream&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        device_(std::exchange(other.device_, no_device)) {}
  /// @brief Destroys this stream, if any, and takes the other's; the other is left empty.
  stream& operator=(stream&& other) noexcept {
    stream(std::move(other)).swap(*this);
    return *this;
  }
  /// @brief Destroys the stream, if any; never throws.
  ~stream() {
    if (handle_ != nullptr) (void)detail::backend::stream_destroy(handle_);
  }
  /// @brief Exchanges the two streams.
  void swap(stream& other) noexcept {
    std::swap(handle_, other.handle_);
    std::swap(device_, other.device_);
  }
  /// @brief A non-owning reference to this stream, which knows the stream's device.
  [[nodiscard]] stream_ref ref() const& noexcept { return stream_ref(handle_, device_); }
  /// @brief Converts to a stream_ref that knows the stream's device, as ref() does.
  operator stream_ref() const& noexcept { return ref(); }  // NOLINT: streams are stream_refs
  /// @brief Does not compile: a temporary stream dies at the end of the statement and its handle
  /// goes to the next stream created, so a stream_ref kept from it would name an unrelated one.
  template <class R, std::enable_if_t<std::is_same<R, stream_ref>::value, int> = 0>
  operator R() const&& noexcept {  // NOLINT
    static_assert(!std::is_same<R, R>::value,
                  "unimem::stream: a temporary stream cannot become a stream_ref: it is destroyed "
                  "at the end of the statement and its handle reused by the next stream, so a "
                  "launch_config or first_touch keeping it would run on an unrelated stream. "
                  "Create a named unimem::stream and pass that.");
    return {};
  }
  /// @brief Does not compile: ref() of a temporary stream is refused, as the conversion above.
  template <class Self = stream>
  stream_ref ref() const&& noexcept {  // see the conversion above
    static_assert(!std::is_same<Self, Self>::value,
                  "unimem::stream: a temporary stream cannot become a stream_ref: it is destroyed "
                  "at the end of the statement and its handle reused by the next stream. Create a "
                  "named unimem::stream and pass that.");
    return {};
  }
  /// @brief The native handle.
  [[nodiscard]] stream_ref::native_handle_type get() const noexcept { return handle_; }
  /// @brief The device the stream was created on (no_device for a moved-from stream).
  [[nodiscard]] int device_id() const noexcept { return device_; }
  /// @brief False for a moved-from stream.
  [[nodiscard]] explicit operator bool() const noexcept { return handle_ != nullptr; }
  /// @brief Waits for all work queued on the stream.
  void synchronize(call_site where = call_site::current()) const { ref().synchronize(where); }
  /// @brief True when all queued work has finished; never blocks.
  [[nodiscard]] bool ready(call_site where = call_site::current()) const {
    return ref().ready(where);
  }
  /// @brief Makes this stream wait (on the device) for event `e`: see stream_ref::wait.
  template <class Event>
  void wait(const Event& e, call_site where = call_site::current()) const {
    ref().wait(e, where);
  }
  /// @brief Gives up ownership: the caller destroys the returned handle.
  [[nodiscard]] stream_ref::native_handle_type release() noexcept {
    device_ = no_device;
    return std::exchange(handle_, nullptr);
  }

 private:
  stream_ref::native_handle_type handle_ = nullptr;
  int device_ = no_device;
};

UNIMEM_END_NAMESPACE
