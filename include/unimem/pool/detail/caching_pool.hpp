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
#include <vector>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// unimem's caching allocator: blocks (managed_blocks) in size classes, listed while free in a
/// free_list. A block freed on s is reused on s at once, on another stream once that free has
/// completed (queried, never waited for); else a new block is made.
template <class R>
class caching_pool final : public pool_core {
 public:
  caching_pool(int device_id, std::size_t threshold, native_status status) noexcept
      : pool_core(device_id, threshold, status), blocks_(device_id) {}

  void deallocate(void* p, backend::stream_handle s, std::uint64_t stamp) noexcept override {
    block_node n;
    bool closed = false;
    {
      spin_guard lock(lock_);
      n = untrack(p);
      closed = closed_;
    }
    if (n.empty()) return;
    pool_block& b = n.mapped();
    b.stream = s;
    b.done = false;
    b.stamp = stamp;
    keep(std::move(n), closed || !managed_blocks<R>::record_free(b));
  }
  void trim_to(std::size_t keep_bytes, call_site where) override {
    release_above(keep_bytes, false, where);
  }
  void close() noexcept override {
    (void)release_all(true);
    blocks_.close();
  }

 private:
  pool_block take(std::size_t bytes, backend::stream_handle s, bool for_host,
                  call_site where) override {
    const std::size_t size = pool_block_bytes(bytes);
    free_list::questions q;
    {
      spin_guard lock(lock_);
      block_node n = free_.take(size, s, for_host, &q);
      if (!n.empty()) return track(std::move(n), bytes);
    }
    if (q.count > 0) {  // frees not known to have completed come first: asked, then chosen again
      const backend::result failed = managed_blocks<R>::ask(q.free, q.count, true);
      if (failed.code != backend::success) R::fail(failed, where, query_failed);
      spin_guard lock(lock_);
      free_.note(q.free, q.count);
      block_node n = free_.take(size, s, for_host, nullptr);
      if (!n.empty()) return track(std::move(n), bytes);
    }
    const std::size_t threshold = release_threshold();
    release_above(threshold > size ? threshold - size : 0, true, where);
    return new_block(bytes, size, where);
  }
  void untake(const pool_block& b, backend::stream_handle) noexcept override {
    block_node n;
    {
      spin_guard lock(lock_);
      n = untrack(b.p);
    }
    if (!n.empty()) keep(std::move(n), false);  // as it was taken
  }
  std::size_t bytes_held(call_site) override {
    spin_guard lock(lock_);
    return held_;
  }
  backend::result order(const pool_block& b, backend::stream_handle s,
                        bool for_host) noexcept override {
    return order_after_free<R>(b, s, for_host);
  }
  [[noreturn]] void fail(backend::result r, call_site where, const char* context) override {
    R::fail(r, where, context);
  }

  /// A new block; out of memory: tried once more after every free block went back.
  pool_block new_block(std::size_t bytes, std::size_t size, call_site where) {
    backend::result r{backend::success, ""};
    block_node n = blocks_.make(size, r, where);
    if (n.empty() && r.code == backend::error_out_of_memory && release_all(false)) {
      R::forget(r.code);
      n = blocks_.make(size, r, where);
    }
    if (n.empty()) R::fail_allocation(r, bytes, where);
    spin_guard lock(lock_);
    held_ += size;
    return track(std::move(n), bytes);
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
    if (!holds_more_than(keep_bytes)) return;
    backend::result failed{backend::success, ""};
    if (completed_only) failed = learn_completed();
    free_list gone;
    {
      spin_guard lock(lock_);
      if (held_ > keep_bytes) free_.move_to(gone, held_ - keep_bytes, completed_only);
      held_ -= gone.bytes();
    }
    gone.for_each([&failed](const pool_block& b) {
      const backend::result w = b.done ? failed : R::event_synchronize(b.event);
      if (failed.code == backend::success) failed = w;
    });
    blocks_.give_back(gone);
    if (failed.code != backend::success) {
      R::fail(failed, where, completed_only ? query_failed : "managed_pool::trim");
    }
  }
  bool holds_more_than(std::size_t keep_bytes) noexcept {
    spin_guard lock(lock_);
    return held_ > keep_bytes && free_.bytes() != 0;
  }
  /// Asks the runtime whether the listed frees not known to have completed have, and notes those
  /// that have; returns the first failed query.
  backend::result learn_completed() {
    std::size_t n = 0;
    {
      spin_guard lock(lock_);
      n = free_.unknown(nullptr, 0);
    }
    std::vector<pending_free> asked(n);  // may throw, before anything is taken
    {
      spin_guard lock(lock_);
      n = free_.unknown(asked.data(), asked.size());  // as many as fit if more came meanwhile
    }
    if (n < asked.size()) asked.resize(n);
    const backend::result failed = managed_blocks<R>::ask(asked.data(), asked.size(), false);
    spin_guard lock(lock_);
    free_.note(asked.data(), asked.size());
    return failed;
  }
  /// Every free block back to the runtime (closing: also later frees); whether there was any.
  bool release_all(bool closing) noexcept {
    free_list gone;
    {
      spin_guard lock(lock_);
      closed_ = closed_ || closing;
      free_.move_all_to(gone);
      held_ -= gone.bytes();
    }
    const bool any = gone.size() != 0;
    blocks_.give_back(gone);
    return any;
  }

  static constexpr const char* query_failed = "managed_pool: asking whether a free has completed";
  managed_blocks<R> blocks_;
  free_list free_;        // under the lock, as held_ and closed_
  std::size_t held_ = 0;  // bytes of the blocks live and free
  bool closed_ = false;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
