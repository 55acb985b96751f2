/// @file
/// @brief pool_buffer: an array from a managed_pool, allocated and given back in the order of a
/// stream (<unimem/pool/managed_pool.hpp> includes it).
#pragma once

#include "../core/config.hpp"
#include "../core/detail/host_array.hpp"
#include "../core/detail/owned_array.hpp"
#include "../core/detail/placement_record.hpp"
#include "../core/memory_kind.hpp"
#include "../core/stream_ref.hpp"
#include "detail/pool_core.hpp"
#include "managed_pool.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// pool_buffer's storage: managed memory that pool_buffer itself gives back to its pool.
struct pool_memory : managed_memory {
  static constexpr const char* buffer_name = "pool_buffer";
  static void deallocate(void*, std::size_t) noexcept {}
};
}  // namespace detail

/// @brief An array of T from a managed_pool, allocated and given back in the order of a stream,
/// with managed_buffer's interface, tags and placement calls. Elements are uninitialised.
///
/// Stream order (see managed_pool): kernels on the buffer's
/// stream may use it at once; the host after the stream has reached the allocation
/// (s.synchronize(), or ready_for_host(b, s), which also brings the pages to the host). The
/// destructor gives the memory back in the order of stream(), which must outlive the buffer
/// (declare it first); other streams' work must be ordered before it (or use set_stream()). May
/// outlive its pool. Move-only; a moved-from buffer is empty.
/// @code
///   unimem::pool_buffer<float> tmp(n, pool, s);
///   unimem::launch(kernel, unimem::grid_for(n).on(s), unimem::in(a), unimem::out(tmp), n);
///   unimem::ready_for_host(tmp, s);                   // waits for s, pages to the host
/// @endcode
template <class T>
class pool_buffer : public detail::host_array<T, detail::pool_memory> {
  using base = detail::host_array<T, detail::pool_memory>;

 public:
  using typename base::size_type;
  using memory_kind = managed_memory;  ///< Managed memory, for copy() and the access tags.

  pool_buffer() noexcept = default;  ///< An empty buffer; allocates nothing.
  /// @brief n uninitialised elements from `pool`, allocated (and later freed) in the order of s.
  /// @throws unimem::length_error when n > max_size(); unimem::out_of_memory when memory runs
  /// out; unimem::error when the runtime fails; unimem::invalid_argument for a moved-from pool.
  pool_buffer(size_type n, managed_pool& pool, stream_ref s = {},
              call_site where = call_site::current())
      : pool_buffer(n, pool.core_, s, where, stamp_slot{}) {}

  pool_buffer(const pool_buffer&) = delete;             ///< Not copyable: owns its memory.
  pool_buffer& operator=(const pool_buffer&) = delete;  ///< Not copyable: owns its memory.
  /// @brief Takes the other's memory, stream and placement record; the other is left empty.
  pool_buffer(pool_buffer&& other) noexcept
      : base(std::move(static_cast<base&>(other))),
        core_(std::move(other.core_)),
        stream_(other.stream_),
        record_(std::move(other.record_)) {}
  /// @brief Gives this buffer's memory back (as the destructor does) and takes the other's.
  pool_buffer& operator=(pool_buffer&& other) noexcept {
    pool_buffer(std::move(other)).swap(*this);
    return *this;
  }
  /// @brief Gives the memory back to its pool in the order of stream(); never throws.
  ~pool_buffer() {
    if (this->data() != nullptr && core_ != nullptr) {
      core_->deallocate(this->data(), stream_.get(), record_.stamp());
    }
  }
  /// @brief The stream the memory is given back on.
  [[nodiscard]] stream_ref stream() const noexcept { return stream_; }
  /// @brief Orders the release on stream s instead (e.g. that of the last work that uses it).
  void set_stream(stream_ref s) noexcept { stream_ = s; }
  /// @brief Exchanges the two buffers (memory, pools, streams, placement records).
  void swap(pool_buffer& other) noexcept {
    base::swap(other);
    std::swap(core_, other.core_);
    std::swap(stream_, other.stream_);
    record_.swap(other.record_);
  }
  /// @brief Exchanges the two buffers.
  friend void swap(pool_buffer& a, pool_buffer& b) noexcept { a.swap(b); }

 private:
  /// The placement stamp the pool kept with the memory (the base is made before record_).
  struct stamp_slot {
    std::uint64_t value = 0;
  };
  /// Allocates from `state`, read from the pool once: the state the memory comes from is the one
  /// it goes back to.
  pool_buffer(size_type n, std::shared_ptr<detail::pool_core> state, stream_ref s, call_site where,
              stamp_slot&& kept)
      : base(detail::owned_array<T, detail::pool_memory>(
            n, detail::pool_memory::buffer_name, where,
            [&state, s, &kept](std::size_t bytes, const char*, call_site w) {
              return managed_pool::checked(state, "allocate")
                  .allocate(bytes, s.get(), false, w, &kept.value);
            })),
        core_(std::move(state)),
        stream_(s) {
    record_.set(kept.value);
  }
  /// The placement-record hook (access.hpp): tags and placement calls of this buffer use it.
  friend detail::placement_record* unimem_detail_placement_record(const pool_buffer& b) noexcept {
    return &b.record_;
  }

  std::shared_ptr<detail::pool_core> core_;  // shared with the pool and its other buffers
  stream_ref stream_;
  mutable detail::placement_record record_;
};

UNIMEM_END_NAMESPACE
