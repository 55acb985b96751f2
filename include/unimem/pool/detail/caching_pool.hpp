// unimem (internal): unimem's caching allocator of managed memory, the policy of managed_pool on
// HIP, CUDA 12 and older, and where the runtime refuses its pool (pool/managed_pool.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/spin_guard.hpp"
#include "../../placement/detail/stamp.hpp"
#include "free_list.hpp"
#include "managed_blocks.hpp"
#include "pool_block.hpp"
#include "pool_budget.hpp"
#include "pool_core.hpp"
#include "pool_runtime.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// Blocks (managed_blocks) in size classes, listed while free in a free_list, over the runtime
/// table R. A block freed on s is reused on s at once (s waits for the free's event, a no-op in
/// its own order), on another stream once that free is known to have completed (queried, never
/// waited for); else a new block is made. The calls on a default stream are made with the pool's
/// device current: `{}` is the pool's device's default stream whichever device is current.
///
/// With a GPU budget (pool_budget.hpp), the blocks it holds that are not on the host (live and
/// free, and those being made) stay within it: a new block that does not fit, once the free ones
/// whose frees have completed went back to make room, is placed on the host. A block keeps its
/// place while listed (the host's blocks are classes of their own: an allocation takes a block
/// on the GPU first); one on the host taken while the budget has room for it goes back to the
/// GPU. A budget of 0 places every block on the host (runtime_pool's blocks past its budget).
template <class R>
class caching_pool final : public pool_core {
 public:
  caching_pool(int device_id, std::size_t threshold, native_status status,
               std::size_t budget = no_gpu_budget) noexcept
      : pool_core(device_id, threshold, status, budget), blocks_(device_id) {}

  void* allocate(std::size_t bytes, backend::stream_handle s, bool for_host, call_site where,
                 std::uint64_t* stamp) override {
    const std::size_t size = pool_block_bytes(bytes);
    block_node n = reuse(size, s, for_host, where);
    const bool fresh = n.empty();
    if (fresh) n = new_block(bytes, size, where);
    pool_block& b = n.mapped();
    void* const p = b.p;
    {
      spin_guard lock(lock_);
      if (fresh && !b.host && budgeted()) claimed_ -= size;  // counted below, or given back
      if (!closed_) {
        if (stamp != nullptr) *stamp = b.asked >= bytes ? stamp_kept(b) : 0;  // of as much
        if (fresh) {
          held_ += size;
          if (b.host) host_held_ += size;
        }
        track(std::move(n), bytes, stamp != nullptr);
        return p;
      }
    }
    if (!fresh) {
      spin_guard lock(lock_);
      forget_held(b);  // counted while it was listed
    }
    free_list gone;
    gone.push(std::move(n));
    blocks_.give_back(gone);
    throw_closed();
  }
  void deallocate(void* p, backend::stream_handle s, std::uint64_t stamp) noexcept override {
    block_node n;
    bool closed = false;
    {
      spin_guard lock(lock_);
      n = untrack(p);
      closed = closed_;
    }
    if (n.empty()) return;
    n.mapped().stream = s;
    n.mapped().stamp = stamp;
    pool_device_scope<R> on(device_id(), R::is_default_stream(s));
    if (closed) {  // its memory goes back now: after the work queued on s with it (a pool_buffer's
      // check kernel, say), not on the runtime's free to wait for the device (which it "may")
      if (on.ok()) R::forget(R::stream_synchronize(s).code);
      keep(std::move(n), true);
      return;
    }
    if (on.ok()) {
      const bool ordered = record_free(n);
      keep(std::move(n), !ordered);
      return;
    }
    {  // nothing can order its free: kept out of use until trim() or close()
      spin_guard lock(lock_);
      if (!closed_) {
        set_aside(std::move(n));
        return;
      }
    }
    keep(std::move(n), true);
  }
  /// Waits for the frees of the blocks it returns that are still queued; the blocks set aside go
  /// back first (the pool's device made current, the runtime's free waits for it).
  void trim_to(std::size_t keep_bytes, call_site where) override {
    block_list aside;
    {
      spin_guard lock(lock_);
      take_set_aside(aside);
    }
    if (!aside.empty()) {
      pool_device_scope<R> on(device_id(), true);
      if (!on.ok()) {
        spin_guard lock(lock_);
        put_back_set_aside(aside);
      } else {
        free_list gone;
        while (!aside.empty()) gone.push(aside.extract(aside.begin()));
        {
          spin_guard lock(lock_);
          forget_held(gone);
        }
        blocks_.give_back(gone);
      }
      if (!on.ok()) R::fail(on.failure(), where, "managed_pool::trim");
    }
    release_above(keep_bytes, false, where);
  }
  /// The free blocks go back once their frees have completed (waited for), and the memory of
  /// allocate() still out once the device is idle (its streams are unknown), as runtime_pool's.
  void close() noexcept override {
    free_list gone;
    bool leftovers = false;
    {
      spin_guard lock(lock_);
      closed_ = true;
      free_.move_all_to(gone);
      block_list left;
      take_leftovers(left);
      leftovers = !left.empty();
      while (!left.empty()) {
        block_node n = left.extract(left.begin());
        n.mapped().done = true;  // the device is waited for below
        gone.push(std::move(n));
      }
      forget_held(gone);
    }
    if (leftovers) {
      pool_device_scope<R> on(device_id(), true);
      if (on.ok()) R::forget(R::device_synchronize().code);
    }
    (void)give_back(gone, {backend::success, ""});  // waits for the frees still pending
    blocks_.close();
  }

 private:
  /// A listed block for an allocation of class `size` on s, ordered after its last free (s waits
  /// for the free's event; the host waits for it): one on the GPU, else one on the host (taken
  /// back to the GPU where the budget has room); empty where none fits.
  block_node reuse(std::size_t size, backend::stream_handle s, bool for_host, call_site where) {
    block_node n = listed(class_key(size, false), s, for_host, where);
    if (n.empty() && budgeted()) n = listed(class_key(size, true), s, for_host, where);
    if (n.empty()) return n;
    pool_block& b = n.mapped();
    if (!b.done) {
      pool_device_scope<R> on(device_id(), !for_host && R::is_default_stream(s));
      backend::result w = on.failure();
      if (on.ok()) w = for_host ? R::event_synchronize(b.event) : R::stream_wait_event(s, b.event);
      if (w.code != backend::success) {
        keep(std::move(n), false);  // as it was taken
        R::fail(w, where, "managed_pool: ordering the memory after its last free");
      }
      b.done = for_host;  // the host waited: the free has completed
    }
    if (b.host) to_gpu_if_room(b);
    return n;
  }
  /// A listed block of class key `key` for an allocation on s (free_list::take()): empty where
  /// none fits.
  block_node listed(std::size_t key, backend::stream_handle s, bool for_host, call_site where) {
    free_list::questions q;
    block_node n;
    bool closed = false;
    {
      spin_guard lock(lock_);
      closed = closed_;
      if (!closed) n = free_.take(key, s, for_host, &q);
    }
    if (closed) throw_closed();
    if (n.empty() && q.count > 0) {  // frees maybe pending: asked, then chosen again
      const backend::result failed = managed_blocks<R>::ask(q.free, q.count, true);
      if (failed.code != backend::success) R::fail(failed, where, query_failed);
      spin_guard lock(lock_);
      free_.note(q.free, q.count);
      n = free_.take(key, s, for_host, nullptr);
    }
    return n;
  }
  /// A block on the host, taken from the list, goes back to the GPU where the budget has room
  /// for it (advice_to_gpu(); it stays on the host where the runtime refuses). Its placement
  /// stamp, a mapping's, no longer holds.
  void to_gpu_if_room(pool_block& b) noexcept {
    {
      spin_guard lock(lock_);
      if (!try_claim(b.size_class)) return;
    }
    const bool moved = advise_to_gpu<R>(b.p, b.size_class, device_id());
    spin_guard lock(lock_);
    claimed_ -= b.size_class;
    if (!moved) return;
    host_held_ -= b.size_class;
    b.host = false;
    b.stamp = 0;
  }
  /// The bytes of GPU blocks the budget counts: held (live and free) and claimed (the caller
  /// holds the lock).
  std::size_t gpu_held() const noexcept { return held_ - host_held_ + claimed_; }
  /// The placement stamp a block's next owner receives: its last owner's, but for a block on the
  /// host only a mapping's (a record must never say such a block was moved to a GPU).
  static std::uint64_t stamp_kept(const pool_block& b) noexcept {
    return !b.host || placement_stamp::mapped_of(b.stamp) ? b.stamp : 0;
  }
  /// Claims `size` bytes of the budget for a new block on the GPU, first giving back free GPU
  /// blocks (the smaller classes first, their frees waited for: the runtime's free waits for the
  /// device anyway) where that makes room; false (nothing claimed): the block goes on the host.
  /// @throws unimem::error where waiting for a free fails (the blocks went back).
  bool claim_gpu(std::size_t size, call_site where) {
    free_list gone;
    bool claimed = false;
    {
      spin_guard lock(lock_);
      claimed = try_claim(size);
      if (claimed || size > budget_) return claimed;
      const std::size_t need = gpu_held() + size - budget_;  // > 0: size <= budget_
      if (free_.bytes() - free_.host_bytes() < need) return false;  // too few to give back
      free_.move_to(gone, need, false, true);
      forget_held(gone);
      claimed = try_claim(size);
    }
    const backend::result failed = give_back(gone, {backend::success, ""});
    if (failed.code != backend::success) {
      if (claimed) unclaim(size);
      R::fail(failed, where, "managed_pool: making room within the GPU budget");
    }
    return claimed;
  }
  /// Claims `size` bytes where the budget has them (the caller holds the lock).
  bool try_claim(std::size_t size) noexcept {
    if (!within_budget(gpu_held(), size, budget_)) return false;
    claimed_ += size;
    return true;
  }
  void unclaim(std::size_t size) noexcept {
    spin_guard lock(lock_);
    claimed_ -= size;
  }
  /// Takes blocks going back to the runtime out of the counts (the caller holds the lock).
  void forget_held(const free_list& gone) noexcept {
    held_ -= gone.bytes();
    host_held_ -= gone.host_bytes();
  }
  void forget_held(const pool_block& b) noexcept {
    held_ -= b.size_class;
    if (b.host) host_held_ -= b.size_class;
  }
  /// A new block, made after the completed frees above the release threshold went back, on the
  /// GPU or, past the budget, on the host (claim_gpu()); out of memory: tried once more after
  /// every free block went back.
  block_node new_block(std::size_t bytes, std::size_t size, call_site where) {
    const std::size_t threshold = release_threshold();
    release_above(threshold > size ? threshold - size : 0, true, where);
    const bool host = budgeted() && !claim_gpu(size, where);
    backend::result r{backend::success, ""};
    bool advice = false;
    block_node n = blocks_.make(size, host, r, advice, where);
    if (n.empty() && r.code == backend::error_out_of_memory && !advice && release_all()) {
      R::forget(r.code);
      n = blocks_.make(size, host, r, advice, where);
    }
    if (!n.empty()) return n;
    if (!host && budgeted()) unclaim(size);
    if (advice) R::fail(r, where, "managed_pool: placing a new block on the host (GPU budget)");
    R::fail_allocation(r, bytes, where);
  }
  /// Orders n's free on its stream (the pool's device current): its event recorded there, an
  /// event no recording of which is pending where the runtime forbids recording one again (HIP);
  /// where recording fails, the host waits for the stream (the free is then done). False where
  /// nothing could order it: the block goes back to the runtime, whose free waits for the device.
  bool record_free(block_node& n) noexcept {
    pool_block& b = n.mapped();
    if (!b.done && !R::rerecords_pending_events && !blocks_.exchange_event(n)) {
      const backend::result w = R::event_synchronize(b.event);  // no other event: wait for it
      if (w.code != backend::success) {
        R::forget(w.code);
        return false;
      }
    }
    backend::result r = R::event_record(b.event, b.stream);
    if (r.code == backend::success) {
      b.done = false;
      return true;
    }
    R::forget(r.code);
    r = R::stream_synchronize(b.stream);
    R::forget(r.code);
    b.done = true;
    return r.code == backend::success;
  }
  /// Lists a freed block, or gives it back: with `release`, or once the pool is closed.
  void keep(block_node&& n, bool release) noexcept {
    free_list gone;
    {
      spin_guard lock(lock_);
      if (!release && !closed_) {
        free_.push(std::move(n));
        return;
      }
      forget_held(n.mapped());
      gone.push(std::move(n));
    }
    blocks_.give_back(gone);
  }
  /// Gives free blocks back while the pool holds more than `keep_bytes` (free_list::move_to()):
  /// any, their frees waited for, or only those whose frees have completed (the runtime asked
  /// first). The first failure is thrown after the blocks went back.
  void release_above(std::size_t keep_bytes, bool completed_only, call_site where) {
    {
      spin_guard lock(lock_);
      if (held_ <= keep_bytes || free_.size() == 0) return;
    }
    backend::result failed{backend::success, ""};
    if (completed_only) failed = learn_completed();
    free_list gone;
    {
      spin_guard lock(lock_);
      if (held_ > keep_bytes) free_.move_to(gone, held_ - keep_bytes, completed_only);
      forget_held(gone);
    }
    failed = give_back(gone, failed);
    if (failed.code != backend::success) {
      R::fail(failed, where, completed_only ? query_failed : "managed_pool::trim");
    }
  }
  /// Gives the blocks back to the runtime once their frees still queued have completed (waited
  /// for); returns `failed`, else the first failed wait.
  backend::result give_back(free_list& gone, backend::result failed) noexcept {
    gone.for_each([&failed](pool_block& b) {
      const backend::result w = b.done ? failed : R::event_synchronize(b.event);
      b.done = b.done || w.code == backend::success;
      if (failed.code == backend::success) failed = w;
    });
    blocks_.give_back(gone);
    return failed;
  }
  /// Asks the runtime about the first pending free of each stream's group in every class, a few
  /// at a time, and notes those that have completed; returns the first failed query.
  backend::result learn_completed() noexcept {
    block_key from{};
    for (;;) {
      pending_free asked[free_list::max_questions];
      std::size_t n = 0;
      {
        spin_guard lock(lock_);
        n = free_.first_pending(from, asked, free_list::max_questions);
      }
      if (n == 0) return {backend::success, ""};
      const backend::result failed = managed_blocks<R>::ask(asked, n, false);
      {
        spin_guard lock(lock_);
        free_.note(asked, n);
      }
      if (failed.code != backend::success || n < free_list::max_questions) return failed;
    }
  }
  /// Every free block back to the runtime; whether there was any.
  bool release_all() noexcept {
    free_list gone;
    {
      spin_guard lock(lock_);
      free_.move_all_to(gone);
      forget_held(gone);
    }
    const bool any = gone.size() != 0;
    blocks_.give_back(gone);
    return any;
  }

  static constexpr const char* query_failed = "managed_pool: asking whether a free has completed";
  managed_blocks<R> blocks_;
  free_list free_;  // under the lock, as held_ and closed_
};

}  // namespace detail
UNIMEM_END_NAMESPACE
