// unimem (internal): the state a managed_pool shares with its buffers: the live allocations,
// statistics, release threshold, GPU budget and lock, under a policy that supplies and orders the
// memory (pool/detail/caching_pool.hpp, pool/detail/runtime_pool.hpp).
#pragma once

#include "../../core/argument_error.hpp"
#include "../../core/config.hpp"
#include "../../core/detail/atomic.hpp"
#include "../../core/detail/backend/handles.hpp"
#include "../../core/detail/spin_guard.hpp"
#include "../../core/error.hpp"
#include "../pool_statistics.hpp"
#include "pool_block.hpp"
#include "pool_budget.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// Stream-ordered allocation over a policy that supplies the memory (caching_pool,
/// runtime_pool): live allocations, statistics, threshold. Shared (through std::shared_ptr) by
/// its managed_pool and each pool_buffer, which may outlive the pool.
///
/// One lock, detail::spin_guard (unimem's one lock: no <mutex>), guards the bookkeeping of the
/// core and its policy, and nothing under it allocates, frees or calls the runtime: records are
/// map nodes made before it is taken and moved under it, and runtime calls (event queries
/// included) are made after it is released, with what they need copied out under it.
class pool_core {
 public:
  /// `budget`: the GPU budget in bytes (pool_budget.hpp), no_gpu_budget for none.
  pool_core(int device_id, std::size_t threshold, native_status status,
            std::size_t budget = no_gpu_budget) noexcept
      : threshold_(threshold), budget_(budget), device_id_(device_id), status_(status) {}
  pool_core(const pool_core&) = delete;
  pool_core& operator=(const pool_core&) = delete;
  virtual ~pool_core() = default;

  bool runtime() const noexcept { return status_ == backend::success; }
  int device_id() const noexcept { return device_id_; }
  native_status status() const noexcept { return status_; }
  /// `bytes` (> 0, checked) in the order of stream s; with for_host, ready for the host too.
  /// `stamp` is non-null for a pool_buffer's allocation, which the buffer gives back itself (also
  /// after the pool's end), and receives the placement stamp its last owner left (0: none), so
  /// that a tagged launch over reused memory still on its GPU moves nothing.
  virtual void* allocate(std::size_t bytes, backend::stream_handle s, bool for_host,
                         call_site where, std::uint64_t* stamp) = 0;
  /// Gives p back in the order of s with its owner's placement stamp; ignores p not live here.
  virtual void deallocate(void* p, backend::stream_handle s, std::uint64_t stamp) noexcept = 0;
  /// Returns free memory to the runtime until the pool holds at most `keep` bytes.
  virtual void trim_to(std::size_t keep, call_site where) = 0;
  /// The managed_pool is gone: free memory and the allocations of allocate() still out go back
  /// now (after the device's work with them), a pool_buffer's when the buffer gives it back.
  virtual void close() noexcept = 0;

  bool budgeted() const noexcept { return budget_ != no_gpu_budget; }
  /// One moment's statistics: bytes_held read with the counts it is compared with.
  pool_statistics statistics(call_site where) {
    const std::size_t reserved = runtime_reserved(where);  // runtime calls: before the lock
    const std::size_t held_elsewhere = host_blocks_held(where);
    spin_guard lock(lock_);
    pool_statistics st{in_use_, peak_, 0, live_.size()};
    st.host_bytes_in_use = host_in_use_;
    st.has_gpu_budget = budgeted();
    st.gpu_budget = budgeted() ? budget_ : 0;
    if (runtime()) {
      // The runtime's count, read a moment before, may lag an allocation made meanwhile: the
      // memory in use is held, whatever it says; as the host blocks' count.
      const std::size_t gpu_in_use = in_use_ - host_in_use_;
      st.host_bytes_held = held_elsewhere > host_in_use_ ? held_elsewhere : host_in_use_;
      st.bytes_held = (reserved > gpu_in_use ? reserved : gpu_in_use) + st.host_bytes_held;
    } else {
      st.host_bytes_held = host_held_;
      st.bytes_held = held_;
    }
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
  /// One setter at a time, the runtime's value set before the pool's: both agree afterwards.
  void set_release_threshold(std::size_t bytes, call_site where) {
    spin_guard setting(setting_);  // held across the runtime call; the bookkeeping lock is not
    apply_release_threshold(bytes, where);
    spin_guard lock(lock_);
    threshold_ = bytes;
  }

 protected:
  /// The runtime pool's reserved bytes (statistics()); 0, without a call, for the caching one.
  virtual std::size_t runtime_reserved(call_site) { return 0; }
  /// The runtime pool's bytes of blocks on the host, which another pool holds (statistics()).
  virtual std::size_t host_blocks_held(call_site) { return 0; }
  virtual void apply_release_threshold(std::size_t, call_site) {}
  /// Makes n's block live, asked for `bytes`, a pool_buffer's where `buffer` (the caller holds
  /// the lock).
  void track(block_node&& n, std::size_t bytes, bool buffer) noexcept {
    n.key() = address_key(n.mapped().p);
    n.mapped().asked = bytes;
    n.mapped().buffer = buffer;
    if (n.mapped().host) host_in_use_ += bytes;
    live_.insert(std::move(n));  // addresses of live allocations are unique: always inserted
    in_use_ += bytes;
    if (in_use_ > peak_) peak_ = in_use_;
  }
  /// Takes p's node out of the live allocations (the caller holds the lock); empty if not live.
  block_node untrack(void* p) noexcept {
    block_node n = live_.extract(address_key(p));
    if (!n.empty()) forget_in_use(n.mapped());
    return n;
  }
  /// Bytes in use on the GPU: not in blocks placed on the host (the caller holds the lock).
  std::size_t gpu_bytes_in_use() const noexcept { return in_use_ - host_in_use_; }
  /// Keeps a block whose free could not be ordered (the pool's device could not be made current
  /// for a default stream) out of use until trim() or close() (the caller holds the lock).
  void set_aside(block_node&& n) noexcept {
    n.key() = address_key(n.mapped().p);
    set_aside_.insert(std::move(n));
  }
  /// The blocks set aside, moved to `out`, or back from it (the caller holds the lock).
  void take_set_aside(block_list& out) noexcept { out.merge(set_aside_); }
  void put_back_set_aside(block_list& from) noexcept { set_aside_.merge(from); }
  /// Moves what nothing can give back once the pool is closing to `out`: the allocations of
  /// allocate() still out, and the blocks set aside (the caller holds the lock).
  void take_leftovers(block_list& out) noexcept {
    for (auto it = live_.begin(); it != live_.end();) {
      const auto at = it++;
      if (at->second.buffer) continue;
      forget_in_use(at->second);
      out.insert(live_.extract(at));
    }
    take_set_aside(out);
  }
  /// A call reached the state after the pool's end: its destruction or move assignment ran
  /// beside this call, which the pool's thread-safety contract excludes.
  [[noreturn]] static void throw_closed() {
    throw_refused<invalid_argument>(refusal(
        "unimem::managed_pool: a call reached the pool after its end (a pool's destruction or "
        "assignment must not run beside its other calls)"));
  }

  atomic_cell<int> lock_{0};  // held through spin_guard
  std::size_t threshold_;     // under the lock, as what follows
  std::size_t held_ = 0;      // caching allocator: bytes of its blocks, live and free
  std::size_t host_held_ = 0;  // caching allocator: of held_, blocks placed on the host
  // GPU bytes claimed under the budget and not yet counted (a block being made, or taken back
  // from the host: caching_pool; an allocation being made: runtime_pool)
  std::size_t claimed_ = 0;
  bool closed_ = false;       // the managed_pool is gone
  const std::size_t budget_;  // the GPU budget: no_gpu_budget for none

 private:
  void forget_in_use(const pool_block& b) noexcept {
    in_use_ -= b.asked;
    if (b.host) host_in_use_ -= b.asked;
  }

  atomic_cell<int> setting_{0};  // serialises set_release_threshold
  const int device_id_;
  const native_status status_;  // success for the runtime's pool, else why it does not serve
  live_blocks live_;            // by address
  block_list set_aside_;        // blocks whose frees could not be ordered, by address
  std::size_t in_use_ = 0, peak_ = 0;
  std::size_t host_in_use_ = 0;  // of in_use_, in blocks placed on the host
};

}  // namespace detail
UNIMEM_END_NAMESPACE
