/// @file
/// @brief managed_pool and pool_buffer. Not in the umbrella header (it needs `<unordered_map>`
/// and `<vector>`); the std::pmr resource is in `<unimem/managed_pool_resource.hpp>`.
#pragma once

#include "../core/config.hpp"
#include "../core/detail/backend/events.hpp"
#include "../core/detail/atomic.hpp"
#include "../core/detail/spin_guard.hpp"
#include "../core/detail/backend/backend.hpp"
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
#include <unordered_map>
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
/// last free (on `stream`; completed when `done`) and the placement stamp its last owner left.
struct pool_block {
  void* p = nullptr;
  std::size_t asked = 0, size_class = 0;
  backend::event_handle event = nullptr;
  backend::stream_handle stream = nullptr;
  bool done = true;
  std::uint64_t stamp = 0;
};

/// Stream-ordered allocation over a policy that supplies the memory (caching_pool, runtime_pool):
/// live allocations, statistics, threshold, reuse ordered after the last free; one lock (no
/// runtime call under it but the caching allocator's event queries). Owned by its managed_pool
/// and each pool_buffer (which may outlive the pool): the last owner deletes it.
class pool_core {
 public:
  pool_core(const device& d, std::size_t threshold, native_status status) noexcept
      : device_(d), threshold_(threshold), status_(status) {}
  pool_core(const pool_core&) = delete;
  pool_core& operator=(const pool_core&) = delete;
  virtual ~pool_core() = default;
  /// One owner more (c may be nullptr); returns c.
  static pool_core* retain(pool_core* c) noexcept {
    if (c != nullptr) (void)c->owners_.fetch_add(1);
    return c;
  }
  /// One owner fewer: the last one deletes the core.
  static void release(pool_core* c) noexcept {
    if (c != nullptr && c->owners_.fetch_add(-1) == 1) delete c;
  }

  bool runtime() const noexcept { return status_ == backend::success; }
  int device_id() const noexcept { return device_.device_id(); }
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
  /// Makes b live, asking for `bytes` (the caller holds the lock); throws with nothing changed.
  void track(pool_block& b, std::size_t bytes) {
    b.asked = bytes;
    live_.emplace(b.p, b);
    in_use_ += bytes;
    if (in_use_ > peak_) peak_ = in_use_;
  }
  /// Takes p out of the live allocations into `out` (the caller holds the lock), if there.
  bool untrack(void* p, pool_block& out) noexcept {
    const auto it = live_.find(p);
    if (it == live_.end()) return false;
    out = it->second;
    in_use_ -= out.asked;
    live_.erase(it);
    return true;
  }

  const device device_;
  atomic_cell<int> lock_{0};  // held through spin_guard
  std::size_t threshold_;     // under the lock, as everything below but status_

 private:
  const native_status status_;  // success for the runtime's pool, else why it does not serve
  atomic_cell<long> owners_{1};
  std::unordered_map<void*, pool_block> live_;
  std::size_t in_use_ = 0, peak_ = 0;
};

/// unimem's caching allocator: blocks in size classes, each a runtime allocation with an event for
/// its frees. A block freed on s is reused on s at once, on another stream once that free has
/// completed (queried, never waited for); else a new block is made.
class caching_pool final : public pool_core {
 public:
  using pool_core::pool_core;

  void deallocate(void* p, backend::stream_handle s, std::uint64_t stamp) noexcept override {
    pool_block b;
    bool release = false;
    {
      spin_guard lock(lock_);
      if (!untrack(p, b)) return;
      release = closed_;
    }
    b.stream = s;
    b.done = false;
    b.stamp = stamp;
    if (!release) {
      // The free's point unknown: wait for the stream, or else give the block back.
      backend::result r = backend::event_record(b.event, s);
      if (r.code != backend::success) {
        backend::forget_if_last(r.code);
        r = backend::stream_synchronize(s);
        backend::forget_if_last(r.code);
        b.done = r.code == backend::success;
        release = !b.done;
      }
    }
    keep(b, release);
  }
  void trim_to(std::size_t keep_bytes, call_site where) override {
    release_above(keep_bytes, false, where);
  }
  void close() noexcept override { (void)release_all(true); }

 private:
  pool_block take(std::size_t bytes, backend::stream_handle s, bool for_host,
                  call_site where) override {
    const std::size_t size = pool_block_bytes(bytes);
    backend::result failed{backend::success, ""};
    {
      spin_guard lock(lock_);
      pool_block b;
      if (take_free(size, s, for_host, b, failed)) {
        try {
          track(b, bytes);
        } catch (...) {
          free_[size].push_back(b);  // the list had room for it a moment ago
          throw;
        }
        cached_ -= size;
        return b;
      }
    }
    if (failed.code != backend::success) throw_error(failed, where, query_failed);
    const std::size_t threshold = release_threshold();
    release_above(threshold > size ? threshold - size : 0, true, where);
    return new_block(bytes, size, where);
  }
  void untake(const pool_block& b, backend::stream_handle) noexcept override {
    pool_block live;
    {
      spin_guard lock(lock_);
      (void)untrack(b.p, live);
    }
    keep(b, false);
  }
  std::size_t bytes_held(call_site) override {
    spin_guard lock(lock_);
    return held_;
  }
  /// Takes a free block of class `size` for s (lock held): for the device, the last freed on s,
  /// else the oldest completed; for the host the reverse. A failed query is left in `failed`.
  bool take_free(std::size_t size, backend::stream_handle s, bool for_host, pool_block& out,
                 backend::result& failed) {
    const auto it = free_.find(size);
    if (it == free_.end()) return false;
    std::vector<pool_block>& list = it->second;
    auto take_at = [&](std::size_t i) {
      out = list[i];
      list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    };
    auto same_stream = [&] {
      for (std::size_t i = list.size(); i-- > 0;) {
        if (list[i].stream == s) return take_at(i);
      }
      return false;
    };
    if (!for_host && same_stream()) return true;
    int queries = 0;  // at most 8: bounds the cost of a miss
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].done && queries++ < 8) (void)completed(list[i], failed);
      if (failed.code != backend::success) return false;
      if (list[i].done) return take_at(i);
    }
    return for_host && same_stream();
  }
  /// Whether b's free has completed, asked where not known yet (a failure left in `failed`).
  static bool completed(pool_block& b, backend::result& failed) noexcept {
    if (b.done) return true;
    const backend::result q = backend::event_query(b.event);
    if (q.code == backend::success) return b.done = true;
    if (q.code == backend::error_not_ready) {
      backend::forget_if_last(q.code);
    } else {
      failed = q;
    }
    return false;
  }
  /// Gives free blocks back (oldest first) while the pool holds more than `keep_bytes`: any (its
  /// free waited for), or only completed ones; the first failure is thrown after, not before.
  void release_above(std::size_t keep_bytes, bool completed_only, call_site where) {
    backend::result failed{backend::success, ""};
    std::vector<pool_block> out;
    {
      spin_guard lock(lock_);
      if (held_ <= keep_bytes || cached_ == 0) return;
      std::size_t blocks = 0;
      for (const auto& list : free_) blocks += list.second.size();
      out.reserve(blocks);  // may throw, before anything is taken
      for (auto& list : free_) {
        std::vector<pool_block>& l = list.second;
        for (std::size_t i = 0; i < l.size() && held_ > keep_bytes;) {
          if (completed_only && !completed(l[i], failed)) {
            if (failed.code != backend::success) break;
            ++i;
            continue;
          }
          out.push_back(l[i]);
          l.erase(l.begin() + static_cast<std::ptrdiff_t>(i));
          held_ -= out.back().size_class;
          cached_ -= out.back().size_class;
        }
        if (failed.code != backend::success) break;
      }
    }
    for (const pool_block& b : out) {
      const backend::result w = b.done ? failed : backend::event_synchronize(b.event);
      if (failed.code == backend::success) failed = w;
      release_block(b);
    }
    if (failed.code != backend::success) {
      throw_error(failed, where, completed_only ? query_failed : "managed_pool::trim");
    }
  }
  /// A new block (event made on the pool's device); out of memory: retried after freeing all.
  pool_block new_block(std::size_t bytes, std::size_t size, call_site where) {
    pool_block b;
    b.size_class = size;
    {
      device_guard g(device_, where);
      check(backend::event_create(&b.event, false), where);
    }
    backend::result r = backend::malloc_managed(&b.p, size);
    if (r.code == backend::error_out_of_memory && release_all(false)) {
      backend::forget_if_last(r.code);
      r = backend::malloc_managed(&b.p, size);
    }
    if (r.code != backend::success || b.p == nullptr) {
      (void)backend::event_destroy(b.event);
      throw_allocation_error(r, bytes, "managed_pool", where);
    }
    try {
      spin_guard lock(lock_);
      track(b, bytes);
      held_ += size;
    } catch (...) {
      release_block(b);
      throw;
    }
    return b;
  }
  /// Lists a free block, or gives it back: with `release`, once closed, or with no room.
  void keep(const pool_block& b, bool release) noexcept {
    {
      spin_guard lock(lock_);
      if (!release && !closed_) {
        try {
          free_[b.size_class].push_back(b);
          cached_ += b.size_class;
          return;
        } catch (...) {
        }
      }
      held_ -= b.size_class;
    }
    release_block(b);
  }
  /// Every free block back to the runtime (closing: also later frees); whether there was any.
  bool release_all(bool closing) noexcept {
    decltype(free_) lists;
    bool any = false;
    {
      spin_guard lock(lock_);
      closed_ = closed_ || closing;
      lists.swap(free_);
      held_ -= cached_;
      any = std::exchange(cached_, 0) != 0;
    }
    for (const auto& list : lists) {
      for (const pool_block& b : list.second) release_block(b);
    }
    return any;
  }
  /// One block back to the runtime (whose free waits for the device).
  static void release_block(const pool_block& b) noexcept {
    (void)backend::event_destroy(b.event);
    (void)backend::free(b.p);
  }

  static constexpr const char* query_failed = "managed_pool: asking whether a free has completed";
  std::unordered_map<std::size_t, std::vector<pool_block>> free_;  // by size class
  std::size_t held_ = 0, cached_ = 0;  // bytes of the blocks live and free, and free
  bool closed_ = false;
};

#if UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL
/// The runtime's pool of managed memory (CUDA 13), which orders reuse itself, with the placement
/// records of the last few frees (the runtime hands freed memory out at the same address).
class runtime_pool final : public pool_core {
 public:
  /// The runtime's pool on d, or nullptr with `status` where the runtime refuses one.
  static pool_core* make(const device& d, std::size_t threshold, call_site where,
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
      return new runtime_pool(d, threshold, pool);
    } catch (...) {
      (void)backend::managed_pool_destroy(pool);
      throw;
    }
  }

  void deallocate(void* p, backend::stream_handle s, std::uint64_t stamp) noexcept override {
    {  // forgotten before the runtime's free: the runtime may hand p out again at once
      spin_guard lock(lock_);
      pool_block b;
      if (!untrack(p, b)) return;
      if (stamp != 0) {
        b.stamp = stamp;
        recent_[next_] = b;
        next_ = (next_ + 1) % recent_count;
      }
    }
    (void)backend::free_async(p, s);  // a failed release cannot be reported from here
  }
  void trim_to(std::size_t keep, call_site where) override {
    check(backend::managed_pool_trim(pool_, keep), where);
  }
  /// Allocations still out stay valid: the runtime releases the pool after their frees.
  void close() noexcept override { (void)backend::managed_pool_destroy(pool_); }

 private:
  runtime_pool(const device& d, std::size_t threshold, backend::mem_pool_handle pool) noexcept
      : pool_core(d, threshold, backend::success), pool_(pool) {}

  pool_block take(std::size_t bytes, backend::stream_handle s, bool, call_site where) override {
    pool_block b;
    b.done = false;  // frees on s may be pending
    const backend::result r = backend::malloc_from_pool(&b.p, bytes, pool_, s);
    if (r.code != backend::success || b.p == nullptr) {
      throw_allocation_error(r, bytes, "managed_pool", where);
    }
    try {
      spin_guard lock(lock_);
      track(b, bytes);
      for (pool_block& x : recent_) {  // the stamp left at p by a free of at least `bytes`
        if (x.p != b.p) continue;
        b.stamp = x.asked >= bytes ? x.stamp : 0;
        x = pool_block{};
        break;
      }
    } catch (...) {
      (void)backend::free_async(b.p, s);
      throw;
    }
    return b;
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
      : core_(make(device::current(where), o, where)) {}
  /// @brief A pool on device d (its streams are d's). @throws unimem::error when the runtime fails.
  explicit managed_pool(const device& d, const managed_pool_options& o = managed_pool_options(),
                        call_site where = call_site::current())
      : core_(make(d, o, where)) {}

  managed_pool(const managed_pool&) = delete;             ///< Not copyable: owns its memory.
  managed_pool& operator=(const managed_pool&) = delete;  ///< Not copyable: owns its memory.
  /// @brief Takes the other pool; the other is left empty (moved-from).
  managed_pool(managed_pool&& other) noexcept : core_(std::exchange(other.core_, nullptr)) {}
  /// @brief Releases this pool (as the destructor does) and takes the other.
  managed_pool& operator=(managed_pool&& other) noexcept {
    managed_pool(std::move(other)).swap(*this);
    return *this;
  }
  /// @brief Returns everything the pool holds to the runtime; never throws. Allocations still out
  /// (a pool_buffer may outlive its pool) stay valid and are returned when deallocated.
  ~managed_pool() {
    if (core_ != nullptr) core_->close();
    detail::pool_core::release(core_);
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

 private:
  template <class T>
  friend class pool_buffer;

  static detail::pool_core* make(const device& d, const managed_pool_options& o,
                                 call_site where) {
    detail::require_device(d.device_id(), "unimem::managed_pool", where);  // "no GPU was found"
    native_status why = detail::backend::error_not_supported;  // not tried
#if UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL
    if (o.use_runtime_pool) {
      if (detail::pool_core* c = detail::runtime_pool::make(d, o.release_threshold, where, why)) {
        return c;
      }
    }
#endif
    return new detail::caching_pool(d, o.release_threshold, why);
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

  detail::pool_core* core_ = nullptr;  // one of its owners
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
      core_->deallocate(this->data(), stream_.get(), record_.stamp());
    }
    detail::pool_core::release(core_);
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
        core_(detail::pool_core::retain(pool.core_)),
        stream_(s) {
    record_.set(kept.value);
  }
  /// The placement-record hook (access.hpp): tags and placement calls of this buffer use it.
  friend detail::placement_record* unimem_detail_placement_record(const pool_buffer& b) noexcept {
    return &b.record_;
  }

  detail::pool_core* core_ = nullptr;  // one of the pool's owners
  stream_ref stream_;
  mutable detail::placement_record record_;
};

UNIMEM_END_NAMESPACE
