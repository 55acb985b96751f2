// unimem (internal): unimem's caching allocator of managed memory, the policy of managed_pool on
// HIP, CUDA 12 and older, and where the runtime refuses its pool (pool/managed_pool.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/spin_guard.hpp"
#include "free_list.hpp"
#include "managed_blocks.hpp"
#include "pool_block.hpp"
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
template <class R>
class caching_pool final : public pool_core {
 public:
  caching_pool(int device_id, std::size_t threshold, native_status status) noexcept
      : pool_core(device_id, threshold, status), blocks_(device_id) {}

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
      if (!closed_) {
        if (stamp != nullptr) *stamp = b.asked >= bytes ? b.stamp : 0;  // a record of as much
        if (fresh) held_ += size;
        track(std::move(n), bytes, stamp != nullptr);
        return p;
      }
    }
    if (!fresh) {
      spin_guard lock(lock_);
      held_ -= size;  // counted while it was listed
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
    if (closed) {
      keep(std::move(n), true);
      return;
    }
    pool_device_scope<R> on(device_id(), R::is_default_stream(s));
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
          held_ -= gone.bytes();
        }
        blocks_.give_back(gone);
      }
      if (!on.ok()) R::fail(on.failure(), where, "managed_pool::trim");
    }
    release_above(keep_bytes, false, where);
  }
  void close() noexcept override {
    free_list gone;
    {
      spin_guard lock(lock_);
      closed_ = true;
      free_.move_all_to(gone);
      block_list left;
      take_leftovers(left);
      while (!left.empty()) gone.push(left.extract(left.begin()));
      held_ -= gone.bytes();
    }
    blocks_.give_back(gone);
    blocks_.close();
  }

 private:
  /// A listed block for an allocation of class `size` on s, ordered after its last free (s waits
  /// for the free's event; the host waits for it): empty where none fits.
  block_node reuse(std::size_t size, backend::stream_handle s, bool for_host, call_site where) {
    free_list::questions q;
    block_node n;
    bool closed = false;
    {
      spin_guard lock(lock_);
      closed = closed_;
      if (!closed) n = free_.take(size, s, for_host, &q);
    }
    if (closed) throw_closed();
    if (n.empty() && q.count > 0) {  // frees maybe pending: asked, then chosen again
      const backend::result failed = managed_blocks<R>::ask(q.free, q.count, true);
      if (failed.code != backend::success) R::fail(failed, where, query_failed);
      spin_guard lock(lock_);
      free_.note(q.free, q.count);
      n = free_.take(size, s, for_host, nullptr);
    }
    if (n.empty() || n.mapped().done) return n;
    pool_block& b = n.mapped();
    pool_device_scope<R> on(device_id(), !for_host && R::is_default_stream(s));
    backend::result w = on.failure();
    if (on.ok()) w = for_host ? R::event_synchronize(b.event) : R::stream_wait_event(s, b.event);
    if (w.code == backend::success) {
      b.done = b.done || for_host;  // the host waited: the free has completed
      return n;
    }
    keep(std::move(n), false);  // as it was taken
    R::fail(w, where, "managed_pool: ordering the memory after its last free");
  }
  /// A new block, made after the completed frees above the release threshold went back; out of
  /// memory: tried once more after every free block went back.
  block_node new_block(std::size_t bytes, std::size_t size, call_site where) {
    const std::size_t threshold = release_threshold();
    release_above(threshold > size ? threshold - size : 0, true, where);
    backend::result r{backend::success, ""};
    block_node n = blocks_.make(size, r, where);
    if (n.empty() && r.code == backend::error_out_of_memory && release_all()) {
      R::forget(r.code);
      n = blocks_.make(size, r, where);
    }
    if (n.empty()) R::fail_allocation(r, bytes, where);
    return n;
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
      held_ -= n.mapped().size_class;
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
      held_ -= gone.bytes();
    }
    gone.for_each([&failed](pool_block& b) {
      const backend::result w = b.done ? failed : R::event_synchronize(b.event);
      b.done = b.done || w.code == backend::success;
      if (failed.code == backend::success) failed = w;
    });
    blocks_.give_back(gone);
    if (failed.code != backend::success) {
      R::fail(failed, where, completed_only ? query_failed : "managed_pool::trim");
    }
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
      held_ -= gone.bytes();
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
