// unimem (internal): the caching allocator's free blocks (pool/detail/caching_pool.hpp).
#pragma once

#include "../../core/config.hpp"
#include "pool_block.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// The caching allocator's free blocks, in two lists keyed by class (the size class, with
/// host_class_bit for blocks the pool's GPU budget placed on the host: pool_block.hpp): those
/// whose last free is known to have completed (`ready`, the oldest free first, however it came to
/// be known), and those whose free
/// may still be pending (`pending`, in groups by the stream the free was ordered on, each group
/// the oldest first). Bookkeeping only: no lock (its owner's), no runtime call, no allocation (blocks come
/// and go as nodes), and no step longer than a few lookups: what a step reads is found by key.
///
/// Frees ordered on one stream complete in that order, so of a group only its first free is
/// worth asking about: while it is pending, so are the others (a handle shared by two streams,
/// the per-thread default stream's, only delays the answer until that first free completes).
class free_list {
 public:
  /// The pending frees an allocation asks about at most: the first of as many streams' groups.
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
  std::size_t host_bytes() const noexcept { return host_bytes_; }  ///< Of those on the host.
  std::size_t size() const noexcept { return ready_.size() + pending_.size(); }
  std::size_t pending() const noexcept { return pending_.size(); }  ///< Frees maybe pending.

  /// Lists a freed block as the newest of its class (and stream), numbering its free.
  void push(block_node&& n) noexcept {
    pool_block& b = n.mapped();
    b.free_id = ++frees_;
    bytes_ += b.size_class;
    if (b.host) host_bytes_ += b.size_class;
    if (b.done) {
      n.key() = block_key{class_key(b.size_class, b.host), b.free_id};
      ready_.insert(std::move(n));  // the newest of its class
    } else {
      n.key() = pending_key(class_key(b.size_class, b.host), b.stream);
      pending_.insert(std::move(n));
    }
  }
  /// The block an allocation of class key `size` (class_key()) on stream s takes: for the device, the last freed on
  /// s (its free maybe pending: s waits for it), else the oldest whose free has completed; for
  /// the host the oldest completed, else the last freed on s (the host waits for it). With
  /// `ask`, before the host's second choice and after the device's, the first free of each
  /// stream's group pending in the class is left in `ask` (at most max_questions groups, each
  /// allocation going on where the last stopped) and nothing is taken: the owner asks the
  /// runtime, note()s the answers and takes again without `ask`.
  block_node take(std::size_t size, backend::stream_handle s, bool for_host,
                  questions* ask) noexcept {
    if (!for_host) {
      const auto it = last_freed_on(size, s);
      if (it != pending_.end()) return take(pending_, it);
    }
    const auto ready = ready_.lower_bound(block_key{size, 0});
    if (ready != ready_.end() && ready->first.first == size) return take(ready_, ready);
    if (ask != nullptr) {
      ask_about(size, *ask);
      if (ask->count > 0) return {};
    }
    const auto it = for_host ? last_freed_on(size, s) : pending_.end();
    return it != pending_.end() ? take(pending_, it) : block_node();
  }
  /// The first free of each stream's group pending, in every class, from `from` on: at most
  /// `max` written to `out`, their number returned; `from` moves past them (to continue).
  std::size_t first_pending(block_key& from, pending_free* out, std::size_t max) const noexcept {
    std::size_t n = 0;
    for (auto it = pending_.lower_bound(from); it != pending_.end() && n < max;
         it = pending_.upper_bound(it->first)) {
      out[n++] = pending(*it);
      from = after(it->first);
    }
    return n;
  }
  /// Notes the frees found completed, of blocks still listed under them: each moves to `ready`.
  void note(const pending_free* f, std::size_t n) noexcept {
    for (const pending_free* q = f; q != f + n; ++q) {
      if (!q->completed) continue;
      const auto it = pending_.lower_bound(q->key);  // it was the first of its group, and stays
      if (it == pending_.end() || it->second.free_id != q->free_id) continue;  // taken meanwhile
      block_node node = pending_.extract(it);
      node.mapped().done = true;
      node.key() = block_key{key_class_of(node), node.mapped().free_id};  // by its free's age,
      ready_.insert(std::move(node));  // whichever order the answers came in
    }
  }
  /// Moves blocks to `out` until `bytes` have moved: the smaller classes first, the oldest first
  /// in each (those on the GPU before those on the host); those whose frees have completed
  /// first, the others too unless `completed_only`; with `gpu_only`, none on the host.
  void move_to(free_list& out, std::size_t bytes, bool completed_only,
               bool gpu_only = false) noexcept {
    const std::size_t goal = out.bytes() + bytes;
    for (block_list* from : {&ready_, &pending_}) {
      if (from == &pending_ && completed_only) break;
      while (!from->empty() && out.bytes() < goal) {
        if (gpu_only && (from->begin()->first.first & host_class_bit) != 0) break;
        out.push(take(*from, from->begin()));
      }
    }
  }
  /// Moves every block to `out`. The numbers of this list's frees go on rising: an answer about
  /// a free listed before is never taken for one listed after.
  void move_all_to(free_list& out) noexcept {
    out.bytes_ += std::exchange(bytes_, 0);
    out.host_bytes_ += std::exchange(host_bytes_, 0);
    out.ready_.merge(ready_);
    out.pending_.merge(pending_);
  }
  /// The first block's node (empty when none is listed).
  block_node take_first() noexcept {
    if (!ready_.empty()) return take(ready_, ready_.begin());
    return pending_.empty() ? block_node() : take(pending_, pending_.begin());
  }
  template <class F>
  void for_each(F&& f) noexcept {
    for (auto& x : ready_) f(x.second);
    for (auto& x : pending_) f(x.second);
  }

 private:
  block_node take(block_list& from, block_list::iterator it) noexcept {
    const pool_block& b = it->second;
    bytes_ -= b.size_class;
    if (b.host) host_bytes_ -= b.size_class;
    return from.extract(it);
  }
  static std::size_t key_class_of(const block_node& n) noexcept {
    return class_key(n.mapped().size_class, n.mapped().host);
  }
  block_list::iterator last_freed_on(std::size_t size, backend::stream_handle s) noexcept {
    const block_key key = pending_key(size, s);
    auto it = pending_.upper_bound(key);
    if (it == pending_.begin()) return pending_.end();
    --it;
    return it->first.first == key.first && it->first.second == key.second ? it : pending_.end();
  }
  /// The first free of each group of class key `size`, from the group after the last asked about.
  void ask_about(std::size_t size, questions& q) noexcept {
    const auto begin = pending_.lower_bound(block_key{size, 0});
    const auto end = pending_.upper_bound(block_key{size, max_key});
    const auto start = pending_.lower_bound(block_key{size, ask_from_});
    for (auto it = start; it != end && q.count < max_questions; it = pending_.upper_bound(it->first)) {
      q.free[q.count++] = pending(*it);
      ask_from_ = after(it->first).second;
    }
    for (auto it = begin; it != start && q.count < max_questions; it = pending_.upper_bound(it->first)) {
      q.free[q.count++] = pending(*it);
      ask_from_ = after(it->first).second;
    }
  }
  static block_key after(block_key k) noexcept {
    return k.second == max_key ? block_key{k.first + 1, 0} : block_key{k.first, k.second + 1};
  }
  static pending_free pending(const block_list::value_type& x) noexcept {
    return {x.first, x.second.free_id, x.second.event, false};
  }

  static constexpr std::uintptr_t max_key = std::numeric_limits<std::uintptr_t>::max();
  block_list ready_;    // (size class, free number): frees known to have completed, oldest first
  block_list pending_;  // (size class, stream): frees maybe pending
  std::size_t bytes_ = 0;         // of the blocks listed
  std::size_t host_bytes_ = 0;    // of those on the host
  std::uint64_t frees_ = 0;       // the number of the last free listed
  std::uintptr_t ask_from_ = 0;   // the stream key the next questions start from
};

}  // namespace detail
UNIMEM_END_NAMESPACE
