// unimem (internal): the caching allocator's free blocks (pool/detail/caching_pool.hpp).
#pragma once

#include "../../core/config.hpp"
#include "pool_block.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// The caching allocator's free blocks: in each size class the oldest free first, each with the
/// stream its free was ordered on and whether that free is known to have completed. Bookkeeping
/// only: no lock (its owner's), no runtime call, and no allocation (blocks come and go as nodes).
class free_list {
 public:
  /// The frees an allocation asks about at most: bounds the cost of a miss.
  static constexpr std::size_t max_questions = 8;
  /// The frees to ask about before choosing (take()).
  struct questions {
    pending_free free[max_questions];
    std::size_t count = 0;
  };

  free_list() = default;
  free_list(const free_list&) = delete;  // a block's record is listed once
  free_list& operator=(const free_list&) = delete;

  std::size_t bytes() const noexcept { return bytes_; }  ///< Of the blocks listed.
  std::size_t size() const noexcept { return blocks_.size(); }

  /// Lists a freed block as the newest of its class, numbering its free.
  void push(block_node&& n) noexcept {
    pool_block& b = n.mapped();
    n.key() = b.size_class;
    b.free_id = ++frees_;
    bytes_ += b.size_class;
    blocks_.insert(std::move(n));  // last among its equals
  }
  /// The block an allocation of class `size` on stream s takes: for the device, the last freed on
  /// s, else the oldest whose free has completed; for the host the other way round. With `ask`:
  /// empty when frees not known to have completed come before the oldest completed one, left in
  /// `ask` (the owner asks the runtime, note()s the answers and takes again without `ask`).
  block_node take(std::size_t size, backend::stream_handle s, bool for_host,
                  questions* ask) noexcept {
    const auto first = blocks_.lower_bound(size), last = blocks_.upper_bound(size);
    if (!for_host) {
      const auto it = last_freed_on(first, last, s);
      if (it != last) return take(it);
    }
    for (auto it = first; ask != nullptr && it != last && !it->second.done; ++it) {
      if (ask->count < max_questions) ask->free[ask->count++] = pending(it->second);
    }
    if (ask != nullptr && ask->count > 0) return {};
    for (auto it = first; it != last; ++it) {
      if (it->second.done) return take(it);
    }
    const auto it = for_host ? last_freed_on(first, last, s) : last;
    return it != last ? take(it) : block_node();
  }
  /// The frees not known to have completed (every class): at most `max` written to `out`; the
  /// count of all of them returned.
  std::size_t unknown(pending_free* out, std::size_t max) const noexcept {
    std::size_t n = 0;
    for (const auto& x : blocks_) {
      if (x.second.done) continue;
      if (n < max) out[n] = pending(x.second);
      ++n;
    }
    return n;
  }
  /// Notes the frees found completed, of blocks still listed under them.
  void note(const pending_free* f, std::size_t n) noexcept {
    for (const pending_free* q = f; q != f + n; ++q) {
      if (!q->completed) continue;
      const auto range = blocks_.equal_range(q->size_class);
      for (auto it = range.first; it != range.second; ++it) {
        if (it->second.free_id == q->free_id) it->second.done = true;
      }
    }
  }
  /// Moves blocks to `out` until `bytes` have moved: the oldest first in each class, the smaller
  /// classes first; any, or only those whose frees have completed.
  void move_to(free_list& out, std::size_t bytes, bool completed_only) noexcept {
    const std::size_t goal = out.bytes() + bytes;
    for (auto it = blocks_.begin(); it != blocks_.end() && out.bytes() < goal;) {
      const auto at = it++;
      if (at->second.done || !completed_only) out.push(take(at));
    }
  }
  /// Moves every block to `out`. The numbers of this list's frees go on rising: an answer about
  /// a free listed before is never taken for one listed after.
  void move_all_to(free_list& out) noexcept {
    out.bytes_ += std::exchange(bytes_, 0);
    out.blocks_.merge(blocks_);
  }
  /// The first block's node (empty when none is listed).
  block_node take_first() noexcept {
    return blocks_.empty() ? block_node() : take(blocks_.begin());
  }
  template <class F>
  void for_each(F&& f) noexcept {
    for (auto& x : blocks_) f(x.second);
  }

 private:
  block_node take(block_list::iterator it) noexcept {
    bytes_ -= it->second.size_class;
    return blocks_.extract(it);
  }
  static block_list::iterator last_freed_on(block_list::iterator first, block_list::iterator last,
                                            backend::stream_handle s) noexcept {
    for (auto it = last; it != first;) {
      if ((--it)->second.stream == s) return it;
    }
    return last;
  }
  static pending_free pending(const pool_block& b) noexcept {
    return {b.size_class, b.free_id, b.event, false};
  }

  block_list blocks_;        // keyed by size class
  std::size_t bytes_ = 0;    // of the blocks listed
  std::uint64_t frees_ = 0;  // the number of the last free listed
};

}  // namespace detail
UNIMEM_END_NAMESPACE
