/// @file
/// @brief stream_ref, a non-owning handle to a runtime stream, and default_stream. Runtime-free:
/// the handle type is forward-declared; stream.hpp defines the calls that need the runtime.
#pragma once

#include "config.hpp"
#include "detail/backend/handles.hpp"

#include <type_traits>

UNIMEM_BEGIN_NAMESPACE

namespace detail {
/// The tag under which stream.hpp defines the runtime calls of stream_ref.
struct stream_calls_tag {};
/// The runtime calls of stream_ref, defined by stream.hpp; the primary template explains.
template <class Tag>
struct stream_calls {
  static_assert(sizeof(Tag) == 0,
                "unimem::stream_ref: synchronize(), ready() and wait() call the GPU runtime: "
                "include <unimem/stream.hpp> (or <unimem/unimem.hpp>)");
};
}  // namespace detail

/// @brief A non-owning, trivially copyable reference to a stream (default: the default stream).
/// Made from a unimem::stream it knows the stream's device; from a native handle it does not,
/// and calls that need the device ask the runtime.
class stream_ref {
 public:
  using native_handle_type = detail::backend::stream_handle;  ///< hipStream_t / cudaStream_t.

  constexpr stream_ref() noexcept = default;  ///< The default stream.
  /// @brief Wraps a native handle (hipStream_t / cudaStream_t); nullptr is the default stream.
  constexpr stream_ref(native_handle_type handle) noexcept : handle_(handle) {}  // NOLINT
  /// @brief Wraps a native handle of a stream created on device `device_id`.
  constexpr stream_ref(native_handle_type handle, int device_id) noexcept
      : handle_(handle), device_(device_id) {}
  /// @brief The native handle.
  [[nodiscard]] constexpr native_handle_type get() const noexcept { return handle_; }
  /// @brief True for the default stream.
  [[nodiscard]] constexpr bool is_default() const noexcept { return handle_ == nullptr; }
  /// @brief The stream's device when this reference knows it, else no_device (always for the
  /// default stream, which follows the current device).
  [[nodiscard]] constexpr int device_id() const noexcept {
    return device_ < 0 ? no_device : device_;
  }
  /// @brief True when device_id() names the stream's device.
  [[nodiscard]] constexpr bool knows_device() const noexcept { return device_ >= 0; }
  /// @brief Waits until all work queued on the stream has finished.
  /// @throws unimem::error carrying any asynchronous error of that work.
  template <class Tag = detail::stream_calls_tag>
  void synchronize(call_site where = call_site::current()) const {
    detail::stream_calls<Tag>::synchronize(handle_, where);
  }
  /// @brief True when all work queued on the stream has finished; never blocks.
  /// @throws unimem::error when the query reports an error other than "not ready".
  template <class Tag = detail::stream_calls_tag>
  [[nodiscard]] bool ready(call_site where = call_site::current()) const {
    return detail::stream_calls<Tag>::ready(handle_, where);
  }
  /// @brief Makes work queued on this stream later wait, on the device, for event `e`'s work:
  /// `done.record(producer); consumer.wait(done);`
  template <class Event, class Tag = detail::stream_calls_tag,
            class = std::enable_if_t<std::is_convertible<decltype(std::declval<const Event&>().get()),
                                                         detail::backend::event_handle>::value>>
  void wait(const Event& e, call_site where = call_site::current()) const {
    detail::stream_calls<Tag>::wait(handle_, e.get(), where);
  }
  /// @brief Same stream.
  friend constexpr bool operator==(stream_ref a, stream_ref b) noexcept {
    return a.handle_ == b.handle_;
  }
  /// @brief Two references to different streams.
  friend constexpr bool operator!=(stream_ref a, stream_ref b) noexcept {
    return a.handle_ != b.handle_;
  }

 private:
  native_handle_type handle_ = nullptr;
  int device_ = no_device;
};

inline constexpr stream_ref default_stream{};  ///< The default stream.

UNIMEM_END_NAMESPACE
