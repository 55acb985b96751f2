/// @file
/// @brief managed_pool and pool_buffer. Not in the umbrella header (it needs `<map>`, `<memory>`
/// and `<vector>`); the std::pmr resource is in `<unimem/managed_pool_resource.hpp>`.
#pragma once

#include "../core/config.hpp"
#include "../core/detail/atomic.hpp"
#include "../core/detail/spin_guard.hpp"
#include "../core/detail/backend/backend.hpp"
#include "../core/detail/backend/events.hpp"
#include "../core/detail/backend/pool.hpp"
#include "../core/detail/host_array.hpp"
#include "../core/detail/owned_array.hpp"
#include "../core/detail/placement_record.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../core/memory_kind.hpp"
#include "../core/stream_ref.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <utility>
#include <vector>

UNIMEM_BEGIN_NAMESPACE

/// @brief How a managed_pool is made (see managed_pool's constructors).
struct managed_pool_options {
  /// @brief The bytes the pool may hold from the runtime (in use and free) before it returns free
  /// memory: the runtime's pool at each synchronisation, the caching allocator when it must ask
  /// the runtime for new memory (the blocks whose frees have completed), both in trim(). Default:
  /// no limit (kept until trim() or destruction); the runtime's own, 0, frees at every sync.
  std::size_t release_threshold = std::numeric_limits<std::size_t>::max();
  /// @brief Use the runtime's pool of managed memory where there is one (CUDA 13 runtime and
  /// driver); false: unimem's caching allocator everywhere (to compare, or for one behaviour).
  bool use_runtime_pool = true;
};

/// @brief What a managed_pool holds and hands out (managed_pool::statistics()).
struct pool_statistics {
  std::size_t bytes_in_use = 0;  ///< Bytes of the allocations not yet deallocated, as asked.
  std::size_t peak_bytes_in_use = 0;  ///< Most bytes_in_use since construction or reset_peak().
  /// @brief Bytes held from the runtime: allocations in use (rounded up to their blocks) and free
  /// memory kept for reuse; for the runtime's pool, its reserved memory (in its granules).
  std::size_t bytes_held = 0;
  std::size_t allocations = 0;  ///< The allocations not yet deallocated.
};

namespace detail {

/// The smallest block of the caching allocator (and the alignment of every allocation).
constexpr std::size_t pool_min_block = 256;

/// The caching allocator's size class for `bytes` (<= PTRDIFF_MAX): at least pool_min_block, else
/// rounded up to a quarter of the power of two below it (at most 25 % more than asked).
inline std::size_t pool_block_bytes(std::size_t bytes) noexcept {
  if (bytes <= pool_min_block) return pool_min_block;
  std::size_t top = pool_min_block;
  while (top * 2 < bytes) top *= 2;  // top < bytes <= 2 * top
  const std::size_t step = top / 4;
  return (bytes + step - 1) / step * step;
}

/// Memory of a pool: bytes asked for (live), size class and free event (caching allocator), its
/// last free (on `stream`, numbered `free_id` by its free_list; completed when `done`) and the
/// placement stamp its last owner left.
struct pool_block {
  void* p = nullptr;
  std::size_t asked = 0, size_class = 0;
  backend::event_handle event = nullptr;
  backend::stream_handle stream = nullptr;
  bool done = true;
  std::uint64_t stamp = 0, free_id = 0;
};

/// A pool keeps each block's record in a map node (C++17 node handles), made outside the pool's
/// lock and moved between its maps under it, so that nothing under the lock allocates or frees:
/// keyed by address while live (live_blocks), by size class while free (block_list: std::map
/// and std::multimap of one key and value share their node type).
using block_key = std::uintptr_t;
using live_blocks = std::map<block_key, pool_block>;
using block_list = std::multimap<block_key, pool_block>;
using block_node = live_blocks::node_type;

inline block_key address_key(const void* p) noexcept { return reinterpret_cast<block_key>(p); }

/// A node of a Map holding (k, v), to insert later: it allocates, so make it before a lock.
template <class Map, class K, class V>
typename Map::node_type make_node(const K& k, const V& v) {
  Map one;
  one.emplace(k, v);
  return one.extract(one.begin());
}

/// A free not known to have completed, asked about outside the pool's lock: the answer is noted
/// only where the block is still listed under the same free.
struct pending_free {
  std::size_t size_class = 0;
  std::uint64_t free_id = 0;
  backend::event_handle event = nullptr;
  bool completed = false;
};

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
    backend::result w{backend::success, ""};
    if (!b.done && b.event != nullptr) {  // freed on a stream with s's handle, maybe another
      w = for_host ? backend::event_synchronize(b.event) : backend::stream_wait_event(s, b.event);
    } else if (!b.done && for_host) {
      w = backend::stream_synchronize(s);
    }
    if (w.code != backend::success) {
      untake(b, s);
      throw_error(w, where, "managed_pool: ordering the memory after its last free");
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

/// The caching allocator's blocks on the runtime's side: each a managed allocation with an event
/// for its frees, made, recorded, asked about and given back here. A block given back keeps its
/// node and event for the next block (spares_) until close(): an event asked about outside the
/// pool's lock is never destroyed meanwhile, and no node is made under it.
class managed_blocks {
 public:
  explicit managed_blocks(const device& d) noexcept : device_(d) {}

  /// A node with a block of `size` bytes and an event; empty where the runtime refuses the
  /// memory (its status in `r`).
  block_node make(std::size_t size, backend::result& r, call_site where) {
    block_node n = spare(where);
    n.mapped().size_class = size;
    r = backend::malloc_managed(&n.mapped().p, size);
    if (r.code == backend::success && n.mapped().p != nullptr) return n;
    n.mapped().p = nullptr;
    spin_guard lock(lock_);
    spares_.insert(std::move(n));
    return {};
  }
  /// Frees the blocks' memory (the runtime waits for the device); keeps their nodes and events
  /// for make(), or, after close(), destroys the events.
  void give_back(free_list& blocks) noexcept {
    blocks.for_each([](pool_block& b) { (void)backend::free(std::exchange(b.p, nullptr)); });
    {
      spin_guard lock(lock_);
      if (!closed_) {
        for (block_node n = blocks.take_first(); !n.empty(); n = blocks.take_first()) {
          spares_.insert(std::move(n));
        }
        return;
      }
    }
    blocks.for_each([](pool_block& b) { (void)backend::event_destroy(b.event); });
  }
  /// Destroys the events kept; from now on blocks given back take theirs with them.
  void close() noexcept {
    block_list spares;
    {
      spin_guard lock(lock_);
      closed_ = true;
      spares.swap(spares_);
    }
    for (const auto& x : spares) (void)backend::event_destroy(x.second.event);
  }

  /// Records b's free on its stream; where that fails, waits for the stream (b is then done);
  /// false when that fails too.
  static bool record_free(pool_block& b) noexcept {
    backend::result r = backend::event_record(b.event, b.stream);
    if (r.code == backend::success) return true;
    backend::forget_if_last(r.code);
    r = backend::stream_synchronize(b.stream);
    backend::forget_if_last(r.code);
    return b.done = r.code == backend::success;
  }
  /// Asks whether these frees have completed: in order, up to the first that has with
  /// `first_only`, and up to a failed query, which it returns.
  static backend::result ask(pending_free* f, std::size_t n, bool first_only) noexcept {
    for (pending_free* q = f; q != f + n; ++q) {
      const backend::result r = backend::event_query(q->event);
      if (r.code == backend::success) {
        q->completed = true;
        if (first_only) break;
      } else if (r.code == backend::error_not_ready) {
        backend::forget_if_last(r.code);
      } else {
        return r;
      }
    }
    return {backend::success, ""};
  }

 private:
  /// A node with an event and nothing else: a spare's, else one made on the device.
  block_node spare(call_site where) {
    {
      spin_guard lock(lock_);
      if (!spares_.empty()) {
        block_node n = spares_.extract(spares_.begin());
        pool_block b;
        b.event = n.mapped().event;
        n.mapped() = b;
        return n;
      }
    }
    block_node n = make_node<live_blocks>(block_key{0}, pool_block{});
    device_guard g(device_, where);
    check(backend::event_create(&n.mapped().event, false), where);
    return n;
  }

  const device device_;
  atomic_cell<int> lock_{0};  // held through spin_guard, around spares_ and closed_
  block_list spares_;         // nodes and events of blocks given back
  bool closed_ = false;
};

/// unimem's caching allocator: blocks (managed_blocks) in size classes, listed while free in a
/// free_list. A block freed on s is reused on s at once, on another stream once that free has
/// completed (queried, never waited for); else a new block is made.
class caching_pool final : public pool_core {
 public:
  caching_pool(const device& d, std::size_t threshold, native_status status) noexcept
      : pool_core(d.device_id(), threshold, status), blocks_(d) {}

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
    keep(std::move(n), closed || !managed_blocks::record_free(b));
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
      const backend::result failed = managed_blocks::ask(q.free, q.count, true);
      if (failed.code != backend::success) throw_error(failed, where, query_failed);
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

  /// A new block; out of memory: tried once more after every free block went back.
  pool_block new_block(std::size_t bytes, std::size_t size, call_site where) {
    backend::result r{backend::success, ""};
    block_node n = blocks_.make(size, r, where);
    if (n.empty() && r.code == backend::error_out_of_memory && release_all(false)) {
      backend::forget_if_last(r.code);
      n = blocks_.make(size, r, where);
    }
    if (n.empty()) throw_allocation_error(r, bytes, "managed_pool", where);
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
      const backend::result w = b.done ? failed : backend::event_synchronize(b.event);
      if (failed.code == backend::success) failed = w;
    });
    blocks_.give_back(gone);
    if (failed.code != backend::success) {
      throw_error(failed, where, completed_only ? query_failed : "managed_pool::trim");
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
    const backend::result failed = managed_blocks::ask(asked.data(), asked.size(), false);
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
  managed_blocks blocks_;
  free_list free_;        // under the lock, as held_ and closed_
  std::size_t held_ = 0;  // bytes of the blocks live and free
  bool closed_ = false;
};

#if UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL
/// The runtime's pool of managed memory (CUDA 13), which orders reuse itself, with the placement
/// records of the last few frees (the runtime hands freed memory out at the same address).
class runtime_pool final : public pool_core {
 public:
  /// The runtime's pool on d, or nullptr with `status` where the runtime refuses one.
  static std::shared_ptr<pool_core> make(const device& d, std::size_t threshold, call_site where,
                                         native_status& status) {
    backend::mem_pool_handle pool = nullptr;
    backend::result r{backend::success, ""};
    {
      device_guard g(d, where);
      r = backend::managed_pool_create(&pool);
    }
    status = r.code;
    if (backend::refuses_managed_pool(r.code)) {
      backend::forget_if_last(r.code);
      return nullptr;
    }
    if (r.code != backend::success) {
      throw_error(r, where, "managed_pool: creating the runtime's pool of managed memory");
    }
    try {
      r = backend::managed_pool_set_release_threshold(pool, threshold);
      if (r.code != backend::success) {
        throw_error(r, where, "managed_pool: setting the release threshold");
      }
      return std::shared_ptr<pool_core>(new runtime_pool(d, threshold, pool));
    } catch (...) {
      (void)backend::managed_pool_destroy(pool);
      throw;
    }
  }

  void deallocate(void* p, backend::stream_handle s, std::uint64_t stamp) noexcept override {
    block_node n;
    {  // forgotten before the runtime's free: the runtime may hand p out again at once
      spin_guard lock(lock_);
      n = untrack(p);
      if (!n.empty() && stamp != 0) {
        n.mapped().stamp = stamp;
        recent_[next_] = n.mapped();
        next_ = (next_ + 1) % recent_count;
      }
    }
    if (!n.empty()) (void)backend::free_async(p, s);  // a failure cannot be reported from here
  }
  void trim_to(std::size_t keep, call_site where) override {
    check(backend::managed_pool_trim(pool_, keep), where);
  }
  /// Allocations still out stay valid: the runtime releases the pool after their frees.
  void close() noexcept override { (void)backend::managed_pool_destroy(pool_); }

 private:
  runtime_pool(const device& d, std::size_t threshold, backend::mem_pool_handle pool) noexcept
      : pool_core(d.device_id(), threshold, backend::success), pool_(pool) {}

  pool_block take(std::size_t bytes, backend::stream_handle s, bool, call_site where) override {
    block_node n = make_node<live_blocks>(block_key{0}, pool_block{});
    pool_block& b = n.mapped();
    b.done = false;  // frees on s may be pending
    const backend::result r = backend::malloc_from_pool(&b.p, bytes, pool_, s);
    if (r.code != backend::success || b.p == nullptr) {
      throw_allocation_error(r, bytes, "managed_pool", where);
    }
    spin_guard lock(lock_);
    for (pool_block& x : recent_) {  // the stamp left at p by a free of at least `bytes`
      if (x.p != b.p) continue;
      b.stamp = x.asked >= bytes ? x.stamp : 0;
      x = pool_block{};
      break;
    }
    return track(std::move(n), bytes);
  }
  void untake(const pool_block& b, backend::stream_handle s) noexcept override {
    deallocate(b.p, s, b.stamp);
  }
  std::size_t bytes_held(call_site where) override {
    unsigned long long reserved = 0;
    check(backend::managed_pool_reserved(pool_, &reserved), where);
    return static_cast<std::size_t>(reserved);
  }
  void apply_release_threshold(std::size_t bytes, call_site where) override {
    check(backend::managed_pool_set_release_threshold(pool_, bytes), where);
  }

  static constexpr int recent_count = 16;
  const backend::mem_pool_handle pool_;
  pool_block recent_[recent_count];  // the last frees with a stamp, under the lock
  int next_ = 0;
};
#endif

/// pool_buffer's storage: managed memory that pool_buffer itself gives back to its pool.
struct pool_memory : managed_memory {
  static constexpr const char* buffer_name = "pool_buffer";
  static void deallocate(void*, std::size_t) noexcept {}
};

}  // namespace detail

template <class T>
class pool_buffer;

/// @brief A pool of managed memory with stream-ordered allocation: allocate(bytes, s) and
/// deallocate(p, bytes, s) cost microseconds where cudaMallocManaged / hipMallocManaged and their
/// frees cost a hundred and more (docs/pitfalls.md); the memory is ordinary managed memory (CPU
/// and every GPU, migrating; views, access tags and placement calls work on it).
///
/// Stream order, as cudaMallocAsync's: memory allocated on s may be used by work queued on s after
/// the allocation, and by the host or other streams once s has reached it (s.synchronize(), or an
/// event recorded on s after it); memory deallocated on s may be used by work queued on s before
/// the deallocation, by nothing after it; other streams' work must be ordered before it (an event
/// s waits for). Use streams of the pool's device (or the default stream with it current).
///
/// Behind it: the runtime's pool of managed memory where there is one (CUDA 13; a refusal at
/// construction selects the other), else unimem's caching allocator (HIP, CUDA 12 and older): size
/// classes (at most a quarter more than asked), a block freed on s reused on s at once and on
/// another stream once its free has completed; see uses_runtime_pool().
///
/// Thread-safe. Move-only; a moved-from pool throws unimem::invalid_argument when used.
/// @code
///   unimem::managed_pool pool;                          // on the current device
///   for (int step = 0; step < steps; ++step) {
///     unimem::pool_buffer<float> tmp(n, pool, s);       // microseconds, not a cudaMallocManaged
///     unimem::launch(kernel, unimem::grid_for(n).on(s), unimem::out(tmp), n);
///   }                                                   // each tmp freed in the order of s
/// @endcode
class managed_pool {
 public:
  /// @brief A pool on the current device with the default options. @throws as below.
  explicit managed_pool(call_site where = call_site::current())
      : managed_pool(managed_pool_options(), where) {}
  /// @brief A pool on the current device.
  /// @throws unimem::error when there is no GPU ("no GPU was found") or the runtime fails.
  explicit managed_pool(const managed_pool_options& o, call_site where = call_site::current())
      : managed_pool(make(device::current(where), o, where)) {}
  /// @brief A pool on device d (its streams are d's). @throws unimem::error when the runtime fails.
  explicit managed_pool(const device& d, const managed_pool_options& o = managed_pool_options(),
                        call_site where = call_site::current())
      : managed_pool(make(d, o, where)) {}

  managed_pool(const managed_pool&) = delete;             ///< Not copyable: owns its memory.
  managed_pool& operator=(const managed_pool&) = delete;  ///< Not copyable: owns its memory.
  /// @brief Takes the other pool; the other is left empty (moved-from).
  managed_pool(managed_pool&& other) noexcept = default;
  /// @brief Releases this pool (as the destructor does) and takes the other.
  managed_pool& operator=(managed_pool&& other) noexcept {
    managed_pool(std::move(other)).swap(*this);
    return *this;
  }
  /// @brief Returns everything the pool holds to the runtime; never throws. Allocations still out
  /// (a pool_buffer may outlive its pool) stay valid and are returned when deallocated.
  ~managed_pool() {
    if (core_ != nullptr) core_->close();
  }
  /// @brief Exchanges the two pools.
  void swap(managed_pool& other) noexcept { std::swap(core_, other.core_); }
  /// @brief `bytes` of managed memory in the order of stream s (see the class): aligned to at
  /// least 256 bytes; nullptr for 0 bytes (no runtime call).
  /// @throws unimem::length_error above PTRDIFF_MAX bytes (before any runtime call);
  /// unimem::out_of_memory (a std::bad_alloc) when memory runs out; unimem::error when the
  /// runtime fails otherwise; unimem::invalid_argument on a moved-from pool.
  [[nodiscard]] void* allocate(std::size_t bytes, stream_ref s = {},
                               call_site where = call_site::current()) {
    return allocate_on(bytes, s, false, "allocate", where);
  }
  /// @brief As allocate() (and throws as it does), and the host may use the memory at once: memory
  /// freed by work still queued on s waits for that free (caching allocator) or for s.
  [[nodiscard]] void* allocate_for_host(std::size_t bytes, stream_ref s = {},
                                        call_site where = call_site::current()) {
    return allocate_on(bytes, s, true, "allocate_for_host", where);
  }
  /// @brief Gives p back in the order of stream s; ignores pointers this pool did not hand out.
  void deallocate(void* p, std::size_t bytes, stream_ref s = {}) noexcept {
    (void)bytes;  // the pool knows each allocation's size
    if (p != nullptr && core_ != nullptr) core_->deallocate(p, s.get(), 0);
  }
  /// @brief trim_to(release_threshold()) (see managed_pool_options::release_threshold).
  void trim(call_site where = call_site::current()) {
    detail::pool_core& c = checked("trim");
    c.trim_to(c.release_threshold(), where);
  }
  /// @brief Returns free memory to the runtime until the pool holds at most `keep` bytes (the
  /// caching allocator waits for queued frees; the runtime's pool keeps what it cannot release).
  /// @throws unimem::error when the runtime fails.
  void trim_to(std::size_t keep, call_site where = call_site::current()) {
    checked("trim_to").trim_to(keep, where);
  }
  /// @brief Bytes in use, their peak, bytes held from the runtime, allocations in use.
  /// @throws unimem::error when the runtime cannot report its pool's memory.
  [[nodiscard]] pool_statistics statistics(call_site where = call_site::current()) const {
    return checked("statistics").statistics(where);
  }
  /// @brief Starts the peak over from the bytes in use now.
  void reset_peak() { checked("reset_peak").reset_peak(); }
  /// @brief The release threshold (see managed_pool_options).
  [[nodiscard]] std::size_t release_threshold() const {
    return checked("release_threshold").release_threshold();
  }
  /// @brief Changes the release threshold (see managed_pool_options).
  /// @throws unimem::error when the runtime refuses it.
  void set_release_threshold(std::size_t bytes, call_site where = call_site::current()) {
    checked("set_release_threshold").set_release_threshold(bytes, where);
  }
  /// @brief True when the runtime's pool serves (CUDA 13), false for the caching allocator.
  [[nodiscard]] bool uses_runtime_pool() const { return checked("uses_runtime_pool").runtime(); }
  /// @brief "the runtime's pool of managed memory" or "unimem's caching allocator".
  [[nodiscard]] const char* implementation_name() const {
    return uses_runtime_pool() ? "the runtime's pool of managed memory"
                               : "unimem's caching allocator";
  }
  /// @brief Why the caching allocator serves: the runtime's refusal, or "not supported" where not
  /// tried (HIP, CUDA 12 and older, use_runtime_pool false); success for the runtime's pool.
  [[nodiscard]] native_status runtime_pool_status() const {
    return checked("runtime_pool_status").status();
  }
  /// @brief The device whose streams the pool serves.
  [[nodiscard]] int device_id() const { return checked("device_id").device_id(); }
  /// @brief False for a moved-from pool.
  [[nodiscard]] explicit operator bool() const noexcept { return core_ != nullptr; }

 protected:
  /// @brief A pool over `core`, the stream-ordered allocator behind it (the constructors above
  /// choose one; a test gives its own), shared with the buffers from the pool.
  explicit managed_pool(std::shared_ptr<detail::pool_core> core) noexcept
      : core_(std::move(core)) {}

 private:
  template <class T>
  friend class pool_buffer;

  static std::shared_ptr<detail::pool_core> make(const device& d, const managed_pool_options& o,
                                                 call_site where) {
    detail::require_device(d.device_id(), "unimem::managed_pool", where);  // "no GPU was found"
    native_status why = detail::backend::error_not_supported;  // not tried
#if UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL
    if (o.use_runtime_pool) {
      auto c = detail::runtime_pool::make(d, o.release_threshold, where, why);
      if (c != nullptr) return c;
    }
#endif
    return std::make_shared<detail::caching_pool>(d, o.release_threshold, why);
  }
  detail::pool_core& checked(const char* what) const {
    if (core_ == nullptr) {
      detail::throw_refused<invalid_argument>(
          detail::refusal("unimem::managed_pool::")
              .append(what)
              .append(": the pool was moved from (it holds no memory)"));
    }
    return *core_;
  }
  void* allocate_on(std::size_t bytes, stream_ref s, bool for_host, const char* what,
                    call_site where) {
    detail::pool_core& c = checked(what);
    (void)detail::checked_bytes(bytes, 1, for_host ? "managed_pool::allocate_for_host"
                                                   : "managed_pool::allocate");
    return bytes == 0 ? nullptr : c.allocate(bytes, s.get(), for_host, where);
  }

  std::shared_ptr<detail::pool_core> core_;  // shared with the buffers from it
};

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
      : pool_buffer(n, pool, s, where, stamp_slot{}) {}

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
  pool_buffer(size_type n, managed_pool& pool, stream_ref s, call_site where, stamp_slot&& kept)
      : base(detail::owned_array<T, detail::pool_memory>(
            n, detail::pool_memory::buffer_name, where,
            [&pool, s, &kept](std::size_t bytes, const char*, call_site w) {
              return pool.checked("allocate").allocate(bytes, s.get(), false, w, &kept.value);
            })),
        core_(pool.core_),
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
