// unimem (internal): the state a managed_pool shares with its buffers: the live allocations,
// statistics, release threshold and lock, under a policy that supplies and orders the memory
// (pool/detail/caching_pool.hpp, pool/detail/runtime_pool.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/atomic.hpp"
#include "../../core/detail/backend/handles.hpp"
#include "../../core/detail/spin_guard.hpp"
#include "../../core/error.hpp"
#include "../pool_statistics.hpp"
#include "pool_block.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// Stream-ordered allocation over a policy that supplies the memory (caching_pool, runtime_pool):
/// live allocations, statistics, threshold, reuse ordered after the last free. Shared (through
/// std::shared_ptr) by its managed_pool and each pool_buffer, which may outlive the pool.
///
/// One lock, detail::spin_guard (unimem's one lock: no <mutex>), guards the bookkeeping of the core
/// and its policy, and nothing under it allocates, frees or calls the runtime: records are map
/// nodes made before it is taken and moved under it, and runtime calls (event queries included)
/// are made after it is released, with what they need copied out under it.
class pool_core {
 public:
  pool_core(int device_id, std::size_t threshold, native_status status) noexcept
      : threshold_(threshold), device_id_(device_id), status_(status) {}
  pool_core(const pool_core&) = delete;
  pool_core& operator=(const pool_core&) = delete;
  virtual ~pool_core() = default;

  bool runtime() const noexcept { return status_ == backend::success; }
  int device_id() const noexcept { return device_id_; }
  native_status status() const noexcept { return status_; }
  /// `bytes` (> 0, checked) in the order of stream s; with for_host, ready for the host too.
  /// `stamp` receives the last owner's placement stamp (0: new memory), so that a tagged launch
  /// over reused memory still on its GPU moves nothing (a stale record costs a prefetch only).
  void* allocate(std::size_t bytes, backend::stream_handle s, bool for_host, call_site where,
                 std::uint64_t* stamp = nullptr) {
    const pool_block b = take(bytes, s, for_host, where);
    const backend::result w = order(b, s, for_host);
    if (w.code != backend::success) {
      untake(b, s);
      fail(w, where, "managed_pool: ordering the memory after its last free");
    }
    if (stamp != nullptr) *stamp = b.stamp;
    return b.p;
  }
  /// Gives p back in the order of s with its owner's placement stamp; ignores p not live here.
  virtual void deallocate(void* p, backend::stream_handle s, std::uint64_t stamp) noexcept = 0;
  /// Returns free memory to the runtime until the pool holds at most `keep` bytes.
  virtual void trim_to(std::size_t keep, call_site where) = 0;
  /// The managed_pool is gone: free memory goes back now, allocations still out on their return.
  virtual void close() noexcept = 0;

  pool_statistics statistics(call_site where) {
    pool_statistics st;
    {
      spin_guard lock(lock_);
      st = pool_statistics{in_use_, peak_, 0, live_.size()};
    }
    st.bytes_held = bytes_held(where);
    return st;
  }
  void reset_peak() noexcept {
    spin_guard lock(lock_);
    peak_ = in_use_;
  }
  std::size_t release_threshold() noexcept {
    spin_guard lock(lock_);
    return threshold_;
  }
  void set_release_threshold(std::size_t bytes, call_site where) {
    apply_release_threshold(bytes, where);
    spin_guard lock(lock_);
    threshold_ = bytes;
  }

 protected:
  /// Memory for `bytes` on stream s, live (track()) when handed over.
  virtual pool_block take(std::size_t bytes, backend::stream_handle s, bool for_host,
                          call_site where) = 0;
  /// Gives back, as it was, memory from take() whose ordering failed.
  virtual void untake(const pool_block& b, backend::stream_handle s) noexcept = 0;
  virtual std::size_t bytes_held(call_site where) = 0;
  /// Orders b for s after its last free (s waits for it; the host waits): the runtime's answer.
  virtual backend::result order(const pool_block& b, backend::stream_handle s,
                                bool for_host) noexcept = 0;
  [[noreturn]] virtual void fail(backend::result r, call_site where, const char* context) = 0;
  virtual void apply_release_threshold(std::size_t, call_site) {}
  /// Makes n's block live, asking for `bytes` (the caller holds the lock); returns a copy of it.
  pool_block track(block_node&& n, std::size_t bytes) noexcept {
    n.key() = address_key(n.mapped().p);
    n.mapped().asked = bytes;
    const pool_block b = n.mapped();
    live_.insert(std::move(n));  // addresses of live allocations are unique: always inserted
    in_use_ += bytes;
    if (in_use_ > peak_) peak_ = in_use_;
    return b;
  }
  /// Takes p's node out of the live allocations (the caller holds the lock); empty if not live.
  block_node untrack(void* p) noexcept {
    block_node n = live_.extract(address_key(p));
    if (!n.empty()) in_use_ -= n.mapped().asked;
    return n;
  }

  atomic_cell<int> lock_{0};  // held through spin_guard
  std::size_t threshold_;     // under the lock, as live_ and the counts below

 private:
  const int device_id_;
  const native_status status_;  // success for the runtime's pool, else why it does not serve
  live_blocks live_;            // by address
  std::size_t in_use_ = 0, peak_ = 0;
};

/// The ordering of a reused block b after its last free, for stream s or the host, over the
/// runtime table R: what the runtime answered.
template <class R>
backend::result order_after_free(const pool_block& b, backend::stream_handle s,
                                 bool for_host) noexcept {
  backend::result w{backend::success, ""};
  if (!b.done && b.event != nullptr) {  // freed on a stream with s's handle, maybe another
    w = for_host ? R::event_synchronize(b.event) : R::stream_wait_event(s, b.event);
  } else if (!b.done && for_host) {
    w = R::stream_synchronize(s);
  }
  return w;
}

}  // namespace detail
UNIMEM_END_NAMESPACE
