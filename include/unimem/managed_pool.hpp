// unimem: managed_pool, stream-ordered allocation of managed memory at allocator speed, and the
// pool_buffer that owns an allocation of it (managed_pool_resource, the std::pmr resource over
// it, is in <unimem/managed_pool_resource.hpp>). Not in the umbrella header (its bookkeeping
// needs <unordered_map> and <vector>): include <unimem/managed_pool.hpp> where you use it.
//
// Two implementations behind one interface (docs/architecture.md, "The managed pool"):
// - the runtime's pool of managed memory (cudaMemPoolCreate with cudaMemAllocationTypeManaged,
//   cudaMallocFromPoolAsync, cudaFreeAsync) where the runtime and driver have one: CUDA 13;
//   tried at construction, and a refusal (not supported) selects the other;
// - unimem's caching allocator over cudaMallocManaged / hipMallocManaged everywhere else (HIP
//   on AMD and on NVIDIA, CUDA 12 and older): blocks in size classes, each with an event on
//   which its frees are recorded; a block freed on stream s is handed out again on s at once
//   (s is made to wait for the free's event, a no-op in the device's order when the handle
//   names the same stream, and the guard when it does not: per-thread default streams, or the
//   handle of a destroyed stream given to a new one), on another stream only once that event
//   has completed (queried, never waited for: no stream is made to wait for another's work);
//   otherwise a new block comes from the runtime.
/// @file
/// @brief managed_pool (stream-ordered allocation of managed memory) and pool_buffer (an array
/// in it). Not in the umbrella header; the std::pmr resource over a pool is in
/// `<unimem/managed_pool_resource.hpp>`.
#pragma once

#include "config.hpp"
#include "detail/atomic.hpp"
#include "detail/backend/backend.hpp"
#include "detail/host_array.hpp"
#include "detail/owned_array.hpp"
#include "detail/placement_record.hpp"
#include "device.hpp"
#include "error.hpp"
#include "memory_kind.hpp"
#include "stream_ref.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <sched.h>
#define UNIMEM_DETAIL_POOL_YIELD 1
#endif

UNIMEM_BEGIN_NAMESPACE

/// @brief How a managed_pool is made (see managed_pool's constructors).
struct managed_pool_options {
  /// @brief The bytes the pool may hold from the runtime (in use and free) before it returns
  /// free memory: by the runtime's pool at each synchronisation (stream, event, device), by the
  /// caching allocator when an allocation must go to the runtime for new memory (the blocks
  /// whose frees have completed), and by trim() in both. Default: no limit (the pool keeps
  /// what it has allocated until trim() or its destruction), the setting a pool is made for;
  /// the runtime's own default, 0, returns freed memory at every synchronisation.
  std::size_t release_threshold = std::numeric_limits<std::size_t>::max();
  /// @brief Use the runtime's pool of managed memory where the runtime has one (CUDA 13 and
  /// later, runtime and driver); false: unimem's caching allocator on every runtime (to compare
  /// them, or to keep one behaviour across platforms).
  bool use_runtime_pool = true;
};

/// @brief What a managed_pool holds and hands out (managed_pool::statistics()).
struct pool_statistics {
  /// @brief The bytes of the allocations not yet deallocated, as they were asked for.
  std::size_t bytes_in_use = 0;
  /// @brief The most bytes_in_use has been since the pool was made or reset_peak() was called.
  std::size_t peak_bytes_in_use = 0;
  /// @brief The bytes the pool holds from the runtime: its allocations in use (rounded up to
  /// their blocks) and the free memory it keeps for reuse. For the runtime's pool, the pool's
  /// reserved memory as the runtime reports it (in the runtime's granules).
  std::size_t bytes_held = 0;
  /// @brief The allocations not yet deallocated.
  std::size_t allocations = 0;
};

class managed_pool;
template <class T>
class pool_buffer;
class managed_pool_resource;  // <unimem/managed_pool_resource.hpp>

namespace detail {

/// The smallest block of the caching allocator (and the alignment of every allocation).
constexpr std::size_t pool_min_block = 256;

/// The size class of an allocation of `bytes` in the caching allocator: at least
/// pool_min_block, else rounded up to a quarter of the power of two below it (at most 25 %
/// more than asked: 4 KiB, 1 MiB, 64 MiB and 1 GiB are classes of their own).
/// bytes <= PTRDIFF_MAX (checked before).
inline std::size_t pool_block_bytes(std::size_t bytes) noexcept {
  if (bytes <= pool_min_block) return pool_min_block;
  std::size_t top = pool_min_block;
  while (top * 2 < bytes) top *= 2;  // top < bytes <= 2 * top
  const std::size_t step = top / 4;
  return (bytes + step - 1) / step * step;
}

/// The lock of a pool's bookkeeping (no <mutex> in unimem's headers: it costs a small CUDA
/// translation unit a third more compile time, docs/architecture.md). Its critical sections are
/// map and list updates and non-blocking event queries: a waiter spins a little, then yields
/// the CPU.
class pool_mutex {
 public:
  void lock() noexcept {
    for (int spins = 0;; ++spins) {
      int expected = 0;
      if (cell_.load() == 0 && cell_.compare_exchange(expected, 1)) return;
      if (spins >= 64) {
#if defined(UNIMEM_DETAIL_POOL_YIELD)
        (void)sched_yield();
#endif
      }
    }
  }
  void unlock() noexcept { cell_.store(0); }

 private:
  atomic_cell<int> cell_{0};
};

/// Holds a pool_mutex for a scope.
class pool_lock {
 public:
  explicit pool_lock(pool_mutex& m) noexcept : m_(m) { m_.lock(); }
  ~pool_lock() { m_.unlock(); }
  pool_lock(const pool_lock&) = delete;
  pool_lock& operator=(const pool_lock&) = delete;

 private:
  pool_mutex& m_;
};

/// A block of the caching allocator.
struct pool_block {
  void* p = nullptr;
  std::size_t bytes = 0;                    // its size class
  backend::stream_handle stream = nullptr;  // the stream of its last free
  backend::event_handle event = nullptr;    // recorded at that free
  bool done = true;                         // that free is known to have completed
  std::uint64_t placed = 0;  // the placement record of its last owner (placement_record.hpp)
};

/// A live allocation: the bytes asked for, and its block (caching allocator only).
struct pool_live {
  std::size_t asked = 0;
  pool_block block;
};

/// The pool itself. managed_pool owns it; it lives on, after the pool is destroyed, until the
/// last allocation still out (a pool_buffer that outlived its pool) comes back, and then
/// deletes itself. Thread-safe: one mutex around the bookkeeping; runtime calls are made
/// outside it, except the non-blocking event queries of the caching allocator.
class pool_core {
 public:
  pool_core(int device, const managed_pool_options& o, call_site where)
      : device_(device), threshold_(o.release_threshold) {
    if (!o.use_runtime_pool) {
      runtime_status_ = backend::error_not_supported;
      return;
    }
    int current = 0;
    check(backend::get_device(&current), where);
    if (current != device_) check(backend::set_device(device_), where);
    backend::mem_pool_handle pool = nullptr;
    const backend::result r = backend::managed_pool_create(&pool);
    if (current != device_) (void)backend::set_device(current);
    runtime_status_ = r.code;
    if (r.code != backend::success) {
      if (!backend::refuses_managed_pool(r.code)) {
        throw_error(r, where, "managed_pool: creating the runtime's pool of managed memory");
      }
      backend::forget_if_last(r.code);  // refused: the caching allocator serves
      return;
    }
    const backend::result t = backend::managed_pool_set_release_threshold(
        pool, static_cast<unsigned long long>(threshold_));
    if (t.code != backend::success) {
      (void)backend::managed_pool_destroy(pool);
      throw_error(t, where, "managed_pool: setting the release threshold");
    }
    pool_ = pool;
  }
  pool_core(const pool_core&) = delete;
  pool_core& operator=(const pool_core&) = delete;

  bool runtime() const noexcept { return pool_ != nullptr; }
  int device() const noexcept { return device_; }
  native_status runtime_status() const noexcept { return runtime_status_; }

  std::size_t release_threshold() noexcept {
    pool_lock lock(mutex_);
    return threshold_;
  }
  void set_release_threshold(std::size_t bytes, call_site where) {
    if (runtime()) {
      check(backend::managed_pool_set_release_threshold(pool_,
                                                        static_cast<unsigned long long>(bytes)),
            where);
    }
    pool_lock lock(mutex_);
    threshold_ = bytes;
  }

  /// `bytes` (> 0, checked) in the order of stream s; with for_host, memory the host may use at
  /// once (managed_pool_resource). `placed`, where given, receives the placement record its
  /// last owner left with this memory (deallocate's `placed`; 0 for memory new to the pool):
  /// a pool_buffer starts from it, so that a tagged launch over reused memory that is still
  /// on its GPU moves nothing (a record that no longer holds costs a prefetch, never data).
  void* allocate(std::size_t bytes, backend::stream_handle s, bool for_host, call_site where,
                 std::uint64_t* placed = nullptr) {
    if (placed != nullptr) *placed = 0;
    return runtime() ? allocate_runtime(bytes, s, for_host, where, placed)
                     : allocate_cached(bytes, s, for_host, where, placed);
  }

  /// Gives p back in the order of stream s, with its owner's placement record `placed` (0:
  /// none); unknown pointers are ignored. Never throws; may delete the core (the owner is gone
  /// and this was the last allocation).
  void deallocate(void* p, backend::stream_handle s, std::uint64_t placed = 0) noexcept {
    if (runtime()) {
      // Forgotten before the runtime's free: the runtime may hand p out again at once. After
      // the lock, only locals are used (the core may be gone).
      bool last = false;
      {
        pool_lock lock(mutex_);
        const auto it = live_.find(p);
        if (it == live_.end()) return;  // not ours: never free what we did not allocate
        in_use_ -= it->second.asked;
        if (placed != 0) remember_placed(p, it->second.asked, placed);
        live_.erase(it);
        last = closed_ && live_.empty();
      }
      (void)backend::free_async(p, s);  // a failed release cannot be reported from here
      if (last) delete this;
      return;
    }
    pool_live entry;
    bool closing = false;
    {
      pool_lock lock(mutex_);
      const auto it = live_.find(p);
      if (it == live_.end()) return;  // not ours: never free what we did not allocate
      entry = it->second;  // stays live until the block is listed: the core outlives this call
      closing = closed_;
    }
    pool_block b = entry.block;
    b.placed = placed;
    bool release = false;  // give the block back to the runtime now
    if (!closing) {
      b.stream = s;
      b.done = false;
      const backend::result r = backend::pool_event_record(b.event, s);
      if (r.code != backend::success) {
        // The free's point is unknown: wait for the stream instead (the block is then free for
        // every stream), or, failing that, give the block back (the runtime's free waits for
        // the device first).
        backend::forget_if_last(r.code);
        const backend::result w = backend::stream_synchronize(s);
        if (w.code == backend::success) {
          b.done = true;
        } else {
          backend::forget_if_last(w.code);
          release = true;
        }
      }
    }
    bool last = false;
    {
      pool_lock lock(mutex_);
      live_.erase(p);
      in_use_ -= entry.asked;
      if (closed_ || release) {
        held_ -= b.bytes;
        release = true;
      } else {
        try {
          free_[b.bytes].push_back(b);
          cached_ += b.bytes;
        } catch (...) {  // no memory for the list: the block goes back to the runtime
          held_ -= b.bytes;
          release = true;
        }
      }
      last = closed_ && live_.empty();
    }
    if (release) release_block(b);
    if (last) delete this;
  }

  /// Returns free memory to the runtime until the pool holds at most `keep` bytes (caching
  /// allocator: waiting for frees still queued on their streams).
  void trim_to(std::size_t keep, call_site where) {
    if (runtime()) {
      check(backend::managed_pool_trim(pool_, keep), where);
      return;
    }
    std::vector<pool_block> out;
    {
      pool_lock lock(mutex_);
      std::size_t blocks = 0;
      for (const auto& list : free_) blocks += list.second.size();
      out.reserve(blocks);  // may throw, before anything is taken
      for (auto& list : free_) {
        while (held_ > keep && !list.second.empty()) {
          out.push_back(list.second.front());
          list.second.erase(list.second.begin());
          held_ -= out.back().bytes;
          cached_ -= out.back().bytes;
        }
      }
    }
    release_blocks(out, where, "managed_pool::trim");
  }

  pool_statistics statistics(call_site where) {
    pool_statistics st;
    {
      pool_lock lock(mutex_);
      st.bytes_in_use = in_use_;
      st.peak_bytes_in_use = peak_;
      st.bytes_held = held_;
      st.allocations = live_.size();
    }
    if (runtime()) {
      unsigned long long reserved = 0;
      check(backend::managed_pool_reserved(pool_, &reserved), where);
      st.bytes_held = static_cast<std::size_t>(reserved);
    }
    return st;
  }

  void reset_peak() noexcept {
    pool_lock lock(mutex_);
    peak_ = in_use_;
  }

  /// The owner is gone: free memory goes back to the runtime now, allocations still out when
  /// they come back; the core deletes itself with the last of them. Never throws.
  void close() noexcept {
    // After the lock, only locals are used: the last deallocation may delete the core meanwhile.
    const bool runtime_pool = runtime();
    const backend::mem_pool_handle pool = pool_;
    decltype(free_) lists;
    bool last = false;
    {
      pool_lock lock(mutex_);
      closed_ = true;
      lists.swap(free_);
      held_ -= cached_;
      cached_ = 0;
      last = live_.empty();
    }
    for (auto& list : lists) {
      for (const pool_block& b : list.second) release_block(b);
    }
    if (runtime_pool) {
      // Allocations still out stay valid: the runtime releases the pool after their frees.
      (void)backend::managed_pool_destroy(pool);
    }
    if (last) delete this;
  }

 private:
  ~pool_core() = default;  // only through close() or the last deallocate()

  /// Makes p live (the caller holds the lock); on failure (no memory for the map) nothing
  /// changed.
  void add_live(void* p, std::size_t bytes, const pool_block& b) {
    live_.emplace(p, pool_live{bytes, b});
    in_use_ += bytes;
    if (in_use_ > peak_) peak_ = in_use_;
  }

  /// The runtime's pool hands freed memory out again at the same address: the placement
  /// records of the last few frees, by address (the caller holds the lock).
  void remember_placed(void* p, std::size_t bytes, std::uint64_t placed) noexcept {
    recent_[recent_next_] = recent_placement{p, bytes, placed};
    recent_next_ = (recent_next_ + 1) % recent_placements;
  }
  /// The record left at p by a free of at least `bytes`, taken (0: none).
  std::uint64_t take_placed(void* p, std::size_t bytes) noexcept {
    for (recent_placement& r : recent_) {
      if (r.p == p) {
        const std::uint64_t placed = r.bytes >= bytes ? r.placed : 0;
        r = recent_placement{};
        return placed;
      }
    }
    return 0;
  }

  void* allocate_runtime(std::size_t bytes, backend::stream_handle s, bool for_host,
                         call_site where, std::uint64_t* placed) {
    void* p = nullptr;
    const backend::result r = backend::malloc_from_pool(&p, bytes, pool_, s);
    if (r.code != backend::success || p == nullptr) {
      throw_allocation_error(r, bytes, "managed_pool", where);
    }
    if (for_host) {
      const backend::result w = backend::stream_synchronize(s);
      if (w.code != backend::success) {
        (void)backend::free_async(p, s);
        throw_error(w, where, "managed_pool_resource: waiting for the allocation");
      }
    }
    try {
      pool_lock lock(mutex_);
      add_live(p, bytes, pool_block{});
      const std::uint64_t last = take_placed(p, bytes);
      if (placed != nullptr) *placed = last;
    } catch (...) {
      (void)backend::free_async(p, s);
      throw;
    }
    return p;
  }

  /// Takes a free block of `size` for stream s out of its list (the caller holds the lock):
  /// for the device, the last one freed on s first, else the oldest whose free has completed;
  /// for the host, a completed one first, else the last one freed on s (waited for by the
  /// caller). A query that fails is left in `failed`.
  bool take_cached(std::size_t size, backend::stream_handle s, bool for_host, pool_block& out,
                   backend::result& failed) {
    const auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return false;
    std::vector<pool_block>& list = it->second;
    auto take = [&](std::size_t i) {
      out = list[i];
      list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    };
    auto same_stream = [&] {
      for (std::size_t i = list.size(); i-- > 0;) {
        if (list[i].stream == s) return take(i);
      }
      return false;
    };
    if (!for_host && same_stream()) return true;
    constexpr int max_queries = 8;  // bounds the cost of a miss
    int queries = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      pool_block& c = list[i];
      if (!c.done && queries < max_queries) {
        ++queries;
        const backend::result q = backend::event_query(c.event);
        if (q.code == backend::success) {
          c.done = true;
        } else if (q.code == backend::error_not_ready) {
          backend::forget_if_last(q.code);
        } else {
          failed = q;
          return false;
        }
      }
      if (c.done) return take(i);
    }
    return for_host && same_stream();
  }

  void* allocate_cached(std::size_t bytes, backend::stream_handle s, bool for_host,
                        call_site where, std::uint64_t* placed) {
    const std::size_t size = pool_block_bytes(bytes);
    pool_block b;
    backend::result failed{backend::success, ""};
    bool found = false;
    {
      pool_lock lock(mutex_);
      found = take_cached(size, s, for_host, b, failed);
      if (found) {
        try {
          add_live(b.p, bytes, b);
        } catch (...) {
          free_[size].push_back(b);  // the list had room for it a moment ago
          throw;
        }
        cached_ -= size;
      }
    }
    if (failed.code != backend::success) {
      throw_error(failed, where, "managed_pool: asking whether a free has completed");
    }
    if (found) {
      if (placed != nullptr) *placed = b.placed;
      if (b.done) return b.p;
      // Freed on a stream with this handle: ordered after that free (the host waits for it).
      const backend::result w = for_host ? backend::event_synchronize(b.event)
                                         : backend::stream_wait_event(s, b.event);
      if (w.code == backend::success) return b.p;
      if (placed != nullptr) *placed = 0;
      bool give_back = false;  // the block goes back to its list, or else to the runtime
      {
        pool_lock lock(mutex_);
        live_.erase(b.p);
        in_use_ -= bytes;
        try {
          free_[size].push_back(b);
          cached_ += size;
        } catch (...) {
          held_ -= size;
          give_back = true;
        }
      }
      if (give_back) release_block(b);
      throw_error(w, where, "managed_pool: ordering a reused block after its free");
    }
    release_above_threshold(size, where);
    return new_block(bytes, size, s, where);
  }

  /// A new block from the runtime, with its event (made on the pool's device).
  void* new_block(std::size_t bytes, std::size_t size, backend::stream_handle s,
                  call_site where) {
    backend::event_handle e = nullptr;
    {
      int current = 0;
      check(backend::get_device(&current), where);
      if (current != device_) check(backend::set_device(device_), where);
      const backend::result r = backend::pool_event_create(&e);
      if (current != device_) (void)backend::set_device(current);
      check(r, where);
    }
    void* p = nullptr;
    backend::result r = backend::pool_block_malloc(&p, size);
    if (r.code == backend::error_out_of_memory && release_all_cached() > 0) {
      backend::forget_if_last(r.code);  // the cache went back to the runtime: once more
      r = backend::pool_block_malloc(&p, size);
    }
    if (r.code != backend::success || p == nullptr) {
      (void)backend::event_destroy(e);
      throw_allocation_error(r, bytes, "managed_pool", where);
    }
    pool_block b;
    b.p = p;
    b.bytes = size;
    b.stream = s;
    b.event = e;
    b.done = true;
    try {
      pool_lock lock(mutex_);
      add_live(p, bytes, b);
      held_ += size;
    } catch (...) {
      release_block(b);
      throw;
    }
    return p;
  }

  /// Before a new block of `size`: free blocks whose frees have completed go back to the
  /// runtime while the pool would hold more than its threshold.
  void release_above_threshold(std::size_t size, call_site where) {
    std::vector<pool_block> out;
    backend::result failed{backend::success, ""};
    {
      pool_lock lock(mutex_);
      if (held_ + size <= threshold_ || cached_ == 0) return;
      std::size_t blocks = 0;
      for (const auto& list : free_) blocks += list.second.size();
      out.reserve(blocks);
      for (auto& list : free_) {
        std::vector<pool_block>& l = list.second;
        for (std::size_t i = 0; i < l.size() && held_ + size > threshold_;) {
          if (!l[i].done) {
            const backend::result q = backend::event_query(l[i].event);
            if (q.code == backend::error_not_ready) {
              backend::forget_if_last(q.code);
              ++i;
              continue;
            }
            if (q.code != backend::success) {
              failed = q;
              break;
            }
            l[i].done = true;
          }
          out.push_back(l[i]);
          l.erase(l.begin() + static_cast<std::ptrdiff_t>(i));
          held_ -= out.back().bytes;
          cached_ -= out.back().bytes;
        }
        if (failed.code != backend::success) break;
      }
    }
    release_blocks(out, where, "managed_pool: returning memory above the release threshold");
    if (failed.code != backend::success) {
      throw_error(failed, where, "managed_pool: asking whether a free has completed");
    }
  }

  /// Out of memory: every free block goes back to the runtime (whose free waits for the device).
  /// Returns how many did.
  std::size_t release_all_cached() noexcept {
    decltype(free_) lists;
    {
      pool_lock lock(mutex_);
      lists.swap(free_);
      held_ -= cached_;
      cached_ = 0;
    }
    std::size_t n = 0;
    for (auto& list : lists) {
      for (const pool_block& b : list.second) {
        release_block(b);
        ++n;
      }
    }
    return n;
  }

  /// Gives blocks back to the runtime, waiting for their frees first; the first failure of a
  /// wait is thrown after every block is given back.
  void release_blocks(const std::vector<pool_block>& blocks, call_site where, const char* what) {
    backend::result failed{backend::success, ""};
    for (const pool_block& b : blocks) {
      if (!b.done) {
        const backend::result w = backend::event_synchronize(b.event);
        if (w.code != backend::success && failed.code == backend::success) failed = w;
      }
      (void)backend::event_destroy(b.event);
      (void)backend::pool_block_free(b.p);
    }
    if (failed.code != backend::success) throw_error(failed, where, what);
  }

  /// One block back to the runtime; never throws. A free still queued on its stream needs no
  /// wait here: the runtime's free (cudaFree, hipFree) waits for the device first.
  static void release_block(const pool_block& b) noexcept {
    (void)backend::event_destroy(b.event);
    (void)backend::pool_block_free(b.p);
  }

  const int device_;
  backend::mem_pool_handle pool_ = nullptr;  // the runtime's pool, or none: caching allocator
  native_status runtime_status_ = backend::error_not_supported;
  pool_mutex mutex_;
  std::size_t threshold_;
  std::unordered_map<void*, pool_live> live_;
  std::unordered_map<std::size_t, std::vector<pool_block>> free_;  // by size class
  std::size_t in_use_ = 0, peak_ = 0;
  std::size_t held_ = 0, cached_ = 0;  // caching allocator: blocks live + free, and free
  bool closed_ = false;
  struct recent_placement {
    void* p = nullptr;
    std::size_t bytes = 0;
    std::uint64_t placed = 0;
  };
  static constexpr int recent_placements = 16;
  recent_placement recent_[recent_placements];  // runtime's pool: records of recent frees
  int recent_next_ = 0;
};

/// The memory kind of pool_buffer's storage: managed memory that pool_buffer itself gives back
/// to its pool (the storage's own release does nothing).
struct pool_memory : managed_memory {
  static constexpr const char* buffer_name = "pool_buffer";
  static void deallocate(void*, std::size_t) noexcept {}
};

}  // namespace detail

/// @brief A pool of managed memory with stream-ordered allocation: allocate(bytes, s) and
/// deallocate(p, bytes, s) cost microseconds where cudaMallocManaged / hipMallocManaged and
/// their frees cost a hundred and more (docs/pitfalls.md), and the memory is ordinary managed
/// memory: the CPU and every GPU use it, it migrates, and views, access tags and placement
/// calls work on it as on any managed memory.
///
/// Stream order, as cudaMallocAsync's: memory allocated on stream s may be used by work queued
/// on s after the allocation, and by the host or other streams once s has reached that point
/// (s.synchronize(), or an event recorded on s after it); memory deallocated on s may still be
/// used by work queued on s before the deallocation, and by nothing after it. Work of other
/// streams that uses the memory must be ordered before the deallocation (an event that s
/// waits for). Use streams of the pool's device (or the default stream with that device
/// current).
///
/// Behind it: the runtime's pool of managed memory where the runtime has one (CUDA 13 and
/// later: tried at construction, and a refusal selects the other), else unimem's caching
/// allocator over the runtime's managed allocation (HIP on AMD and NVIDIA, CUDA 12 and older):
/// size classes (at most a quarter more than asked), a block freed on s reused on s at once and
/// on another stream once its free has completed, never earlier; see uses_runtime_pool().
///
/// Thread-safe: any number of threads may allocate and deallocate at once. Move-only; a
/// moved-from pool throws unimem::invalid_argument when used. The destructor never throws and
/// returns everything the pool holds to the runtime; allocations still out (a pool_buffer that
/// outlives its pool) stay valid and are given back when they are deallocated.
/// @code
///   unimem::managed_pool pool;                          // on the current device
///   unimem::stream s;
///   for (int step = 0; step < steps; ++step) {
///     unimem::pool_buffer<float> tmp(n, pool, s);       // microseconds, not a cudaMallocManaged
///     unimem::launch(kernel, unimem::grid_for(n).on(s), unimem::out(tmp), n);
///   }                                                   // each tmp freed in the order of s
/// @endcode
class managed_pool {
 public:
  /// @brief A pool on the current device with the default options.
  /// @throws unimem::error when there is no GPU ("no GPU was found") or the runtime fails.
  explicit managed_pool(call_site where = call_site::current())
      : managed_pool(managed_pool_options(), where) {}
  /// @brief A pool on the current device.
  /// @throws unimem::error when there is no GPU ("no GPU was found") or the runtime fails.
  explicit managed_pool(const managed_pool_options& o, call_site where = call_site::current())
      : core_(make(detail::current_device_id(where), o, where)) {}
  /// @brief A pool on device d (its streams are d's; the current device is left as it was).
  /// @throws unimem::error when the runtime fails.
  explicit managed_pool(const device& d, const managed_pool_options& o = managed_pool_options(),
                        call_site where = call_site::current())
      : core_(make(d.device_id(), o, where)) {}

  /// @brief Not copyable: a pool owns its memory.
  managed_pool(const managed_pool&) = delete;
  /// @brief Not copyable: a pool owns its memory.
  managed_pool& operator=(const managed_pool&) = delete;
  /// @brief Takes the other pool; the other is left empty (moved-from).
  managed_pool(managed_pool&& other) noexcept : core_(std::exchange(other.core_, nullptr)) {}
  /// @brief Releases this pool (as the destructor does) and takes the other.
  managed_pool& operator=(managed_pool&& other) noexcept {
    managed_pool(std::move(other)).swap(*this);
    return *this;
  }
  /// @brief Returns everything the pool holds to the runtime; never throws. Allocations still
  /// out stay valid and are returned when they are deallocated.
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
    detail::pool_core& c = checked("allocate");
    (void)detail::checked_bytes(bytes, 1, "managed_pool::allocate");
    if (bytes == 0) return nullptr;
    return c.allocate(bytes, s.get(), false, where);
  }
  /// @brief Gives p (from allocate(bytes, ...)) back in the order of stream s: work queued on
  /// s before this call may still use it. Never throws; nullptr and pointers this pool did not
  /// hand out are ignored.
  void deallocate(void* p, std::size_t bytes, stream_ref s = {}) noexcept {
    (void)bytes;  // the pool knows each allocation's size
    if (p != nullptr && core_ != nullptr) core_->deallocate(p, s.get());
  }

  /// @brief Returns free memory above the release threshold to the runtime (see
  /// managed_pool_options::release_threshold); trim_to(release_threshold()).
  void trim(call_site where = call_site::current()) {
    detail::pool_core& c = checked("trim");
    c.trim_to(c.release_threshold(), where);
  }
  /// @brief Returns free memory to the runtime until the pool holds at most `keep` bytes
  /// (allocations in use are held whatever `keep` says). The caching allocator waits for frees
  /// still queued on their streams; the runtime's pool keeps what it cannot release yet.
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

  /// @brief True when the runtime's pool of managed memory serves (CUDA 13 and later), false
  /// when unimem's caching allocator does.
  [[nodiscard]] bool uses_runtime_pool() const { return checked("uses_runtime_pool").runtime(); }
  /// @brief "the runtime's pool of managed memory" or "unimem's caching allocator", for
  /// reports.
  [[nodiscard]] const char* implementation_name() const {
    return uses_runtime_pool() ? "the runtime's pool of managed memory"
                               : "unimem's caching allocator";
  }
  /// @brief Why the caching allocator serves: the status with which creating the runtime's
  /// pool was refused, or the backend's "not supported" where it was not tried (HIP, CUDA 12
  /// and older, managed_pool_options::use_runtime_pool false); success when the runtime's pool
  /// serves.
  [[nodiscard]] native_status runtime_pool_status() const {
    return checked("runtime_pool_status").runtime_status();
  }
  /// @brief The device whose streams the pool serves.
  [[nodiscard]] int device_id() const { return checked("device_id").device(); }
  /// @brief False for a moved-from pool.
  [[nodiscard]] explicit operator bool() const noexcept { return core_ != nullptr; }

 private:
  template <class T>
  friend class pool_buffer;
  friend class managed_pool_resource;

  static detail::pool_core* make(int id, const managed_pool_options& o, call_site where) {
    detail::require_device(id, "unimem::managed_pool", where);  // "no GPU was found" first
    return new detail::pool_core(id, o, where);
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

  detail::pool_core* core_ = nullptr;
};

/// @brief An array of T in managed memory from a managed_pool, allocated and given back in the
/// order of a stream: managed_buffer's container interface, views, access tags and placement
/// calls (unimem::prefetch(b, ...), unimem::ready_for_host(b, s), ...), with the pool's
/// allocation speed.
///
/// The elements are left uninitialised (as the pool's memory comes). Stream order (see
/// managed_pool): kernels on the buffer's stream may use it at once; the host, after the
/// stream has reached the allocation (s.synchronize(), or ready_for_host(b, s), which also
/// brings the pages to the host). The destructor gives the memory back in the order of
/// stream(): work queued there before may still use it; work of other streams must be
/// ordered before the destruction (or set_stream() names the stream to order it after). That
/// stream must outlive the buffer (declare the stream first). A pool_buffer may outlive its
/// pool. Move-only; a moved-from buffer is empty; the destructor never throws. `memory_kind`
/// is unimem::managed_memory: copy() and the tags treat it as the managed memory it is.
/// @code
///   unimem::pool_buffer<float> tmp(n, pool, s);
///   unimem::launch(kernel, unimem::grid_for(n).on(s), unimem::in(a), unimem::out(tmp), n);
///   unimem::ready_for_host(tmp, s);                   // waits for s, pages to the host
///   float first = tmp[0];
/// @endcode
template <class T>
class pool_buffer : public detail::host_array<T, detail::pool_memory> {
  using base = detail::host_array<T, detail::pool_memory>;

 public:
  using typename base::size_type;
  /// @brief Managed memory, for copy() and the access tags.
  using memory_kind = managed_memory;

  /// @brief An empty buffer; allocates nothing.
  pool_buffer() noexcept = default;
  /// @brief n uninitialised elements from `pool`, allocated in the order of stream s (which
  /// its destruction is ordered on too, see set_stream()).
  /// @throws unimem::length_error when n > max_size(); unimem::out_of_memory when memory runs
  /// out; unimem::error when the runtime fails; unimem::invalid_argument for a moved-from pool.
  pool_buffer(size_type n, managed_pool& pool, stream_ref s = {},
              call_site where = call_site::current())
      : pool_buffer(n, pool, s, where, placed_slot{}) {}

  /// @brief Not copyable: a buffer owns its memory.
  pool_buffer(const pool_buffer&) = delete;
  /// @brief Not copyable: a buffer owns its memory.
  pool_buffer& operator=(const pool_buffer&) = delete;
  /// @brief Takes the other buffer's memory, stream and placement record; the other is left
  /// empty.
  pool_buffer(pool_buffer&& other) noexcept
      : base(std::move(static_cast<base&>(other))),
        core_(std::exchange(other.core_, nullptr)),
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
      core_->deallocate(this->data(), stream_.get(), record_.word());
    }
  }

  /// @brief The stream the memory is given back on.
  [[nodiscard]] stream_ref stream() const noexcept { return stream_; }
  /// @brief Orders the release of the memory on stream s instead (as rmm::device_buffer's
  /// set_stream): e.g. the stream of the last work that uses it.
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
  /// The placement record the pool kept with the memory (the base is made before record_).
  struct placed_slot {
    std::uint64_t value = 0;
  };
  pool_buffer(size_type n, managed_pool& pool, stream_ref s, call_site where, placed_slot&& placed)
      : base(detail::owned_array<T, detail::pool_memory>(
            n, detail::pool_memory::buffer_name, where,
            [&pool, s, &placed](std::size_t bytes, const char*, call_site w) {
              return pool.checked("allocate").allocate(bytes, s.get(), false, w, &placed.value);
            })),
        core_(pool.core_),
        stream_(s) {
    record_.set(placed.value);
  }

  /// The placement-record hook (access.hpp): tags and placement calls of this buffer use it.
  friend detail::placement_record* unimem_detail_placement_record(const pool_buffer& b) noexcept {
    return &b.record_;
  }

  detail::pool_core* core_ = nullptr;  // lives while this buffer's memory is out
  stream_ref stream_;
  mutable detail::placement_record record_;
};


UNIMEM_END_NAMESPACE
