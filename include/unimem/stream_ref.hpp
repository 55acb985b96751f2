// unimem: stream_ref, a non-owning handle to a runtime stream.
#pragma once

#include "detail/backend.hpp"
#include "error.hpp"

#include <optional>

UNIMEM_BEGIN_NAMESPACE

/// @brief A non-owning reference to a stream; the default-constructed one is the default
/// stream. Trivially copyable; converts from the runtime's native handle.
///
/// A stream_ref made from a unimem::stream knows the device the stream belongs to; one made
/// from a native handle does not, and calls that need the device ask the runtime.
class stream_ref {
 public:
  using native_handle_type = detail::backend::stream_handle;

  /// @brief The default stream.
  constexpr stream_ref() noexcept = default;
  /// @brief Wraps a native handle (hipStream_t / cudaStream_t); nullptr is the default stream.
  constexpr stream_ref(native_handle_type handle) noexcept : handle_(handle) {}  // NOLINT
  /// @brief Wraps a native handle of a stream created on device `device_id`.
  constexpr stream_ref(native_handle_type handle, int device_id) noexcept
      : handle_(handle), device_(device_id) {}

  [[nodiscard]] constexpr native_handle_type get() const noexcept { return handle_; }
  [[nodiscard]] constexpr bool is_default() const noexcept { return handle_ == nullptr; }
  /// @brief The device the stream belongs to, when this reference knows it (a unimem::stream,
  /// or a handle wrapped with its device); nullopt otherwise. The default stream has none: it
  /// belongs to whichever device is current.
  [[nodiscard]] constexpr std::optional<int> device_id() const noexcept {
    if (device_ < 0) return std::nullopt;
    return device_;
  }

  /// @brief Waits until all work queued on the stream has finished.
  /// @throws unimem::error, which carries any asynchronous error of that work.
  void synchronize() const { UNIMEM_DETAIL_CHECK(detail::backend::stream_synchronize(handle_)); }

  /// @brief True when all work queued on the stream has finished; never blocks.
  /// @throws unimem::error when the query reports an error other than "not ready".
  [[nodiscard]] bool ready() const {
    return detail::query_ready(detail::backend::stream_query(handle_));
  }

  /// Two references are equal when they name the same stream.
  friend constexpr bool operator==(stream_ref a, stream_ref b) noexcept {
    return a.handle_ == b.handle_;
  }
  friend constexpr bool operator!=(stream_ref a, stream_ref b) noexcept {
    return a.handle_ != b.handle_;
  }

 private:
  native_handle_type handle_ = nullptr;
  int device_ = -1;
};

/// @brief The default stream.
inline constexpr stream_ref default_stream{};

UNIMEM_END_NAMESPACE
