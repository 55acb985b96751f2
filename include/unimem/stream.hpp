// unimem: stream, an owning runtime stream.
#pragma once

#include "detail/backend.hpp"
#include "device.hpp"
#include "error.hpp"
#include "stream_ref.hpp"

#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

/// @brief An owned stream of the device that was current when it was made.
///
/// Move-only; a moved-from stream is empty (it refers to no stream and must not be used).
/// Converts to stream_ref, which every stream-taking call accepts, and which remembers the
/// stream's device; a temporary stream does not convert (it would be gone before its work).
/// Destruction never throws.
/// @code
///   unimem::stream s;                                   // on the current device
///   unimem::launch(kernel, unimem::grid_for(n).on(s), a, n);
///   s.synchronize();
/// @endcode
class stream {
 public:
  /// Ordering against the legacy default stream.
  enum class flags {
    /// Waits for, and is waited for by, the legacy default stream (as cudaStreamCreate).
    blocking,
    /// Independent of the default stream.
    non_blocking,
  };

  /// @brief A new stream on the current device.
  /// @throws unimem::error when the runtime cannot create it (no GPU, for one).
  explicit stream(flags f = flags::blocking) {
    UNIMEM_DETAIL_CHECK(detail::backend::get_device(&device_));
    UNIMEM_DETAIL_CHECK(detail::backend::stream_create(&handle_, f == flags::non_blocking));
  }
  /// @brief A new stream on device d (the current device is left as it was).
  explicit stream(const device& d, flags f = flags::blocking) : device_(d.id()) {
    device_guard g(d);
    UNIMEM_DETAIL_CHECK(detail::backend::stream_create(&handle_, f == flags::non_blocking));
  }

  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  stream(stream&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), device_(std::exchange(other.device_, -1)) {}
  stream& operator=(stream&& other) noexcept {
    stream(std::move(other)).swap(*this);
    return *this;
  }
  ~stream() {
    if (handle_ != nullptr) (void)detail::backend::stream_destroy(handle_);
  }

  void swap(stream& other) noexcept {
    std::swap(handle_, other.handle_);
    std::swap(device_, other.device_);
  }

  /// @brief A non-owning reference to this stream, which knows the stream's device.
  [[nodiscard]] stream_ref ref() const& noexcept { return stream_ref(handle_, device_); }
  operator stream_ref() const& noexcept { return ref(); }  // NOLINT: streams are stream_refs

  /// A temporary stream is destroyed at the end of the statement, and the runtime hands its
  /// handle to the next stream created: a stream_ref kept from it (in a launch_config, a
  /// first_touch, ...) would silently name an unrelated stream. Name the stream instead.
  template <class R, std::enable_if_t<std::is_same<R, stream_ref>::value, int> = 0>
  operator R() const&& noexcept {  // NOLINT
    static_assert(!std::is_same<R, R>::value,
                  "unimem::stream: a temporary stream cannot become a stream_ref: it is destroyed "
                  "at the end of the statement and its handle reused by the next stream, so a "
                  "launch_config or first_touch keeping it would run on an unrelated stream. "
                  "Create a named unimem::stream and pass that.");
    return {};
  }
  template <class Self = stream>
  stream_ref ref() const&& noexcept {  // see the conversion above
    static_assert(!std::is_same<Self, Self>::value,
                  "unimem::stream: a temporary stream cannot become a stream_ref: it is destroyed "
                  "at the end of the statement and its handle reused by the next stream. Create a "
                  "named unimem::stream and pass that.");
    return {};
  }

  [[nodiscard]] stream_ref::native_handle_type get() const noexcept { return handle_; }
  /// @brief The device the stream was created on (-1 for a moved-from stream).
  [[nodiscard]] int device_id() const noexcept { return device_; }
  /// @brief False for a moved-from stream.
  [[nodiscard]] explicit operator bool() const noexcept { return handle_ != nullptr; }

  /// @brief Waits for all work queued on the stream.
  void synchronize() const { ref().synchronize(); }
  /// @brief True when all queued work has finished; never blocks.
  [[nodiscard]] bool ready() const { return ref().ready(); }

  /// @brief Gives up ownership: the caller destroys the returned handle.
  [[nodiscard]] stream_ref::native_handle_type release() noexcept {
    device_ = -1;
    return std::exchange(handle_, nullptr);
  }

 private:
  stream_ref::native_handle_type handle_ = nullptr;
  int device_ = -1;
};

UNIMEM_END_NAMESPACE
