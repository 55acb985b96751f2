// unimem (internal): the runtime's pool of managed memory (CUDA 13) as managed_pool's policy
// (pool/managed_pool.hpp), over a runtime table that has one (pool/detail/pool_runtime.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/spin_guard.hpp"
#include "caching_pool.hpp"
#include "pool_block.hpp"
#include "pool_budget.hpp"
#include "pool_core.hpp"
#include "pool_runtime.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// The runtime's pool, which orders reuse itself, with the placement records of the last few
/// frees (the runtime hands freed memory out at the same address). The calls on a default
/// stream are made with the pool's device current, as the caching allocator's.
///
/// With a GPU budget (pool_budget.hpp), an allocation that would take the bytes in use from the
/// runtime's pool past it comes from a caching allocator whose blocks are all on the host
/// (caching_pool with a budget of 0): the runtime's managed pools take no advice (CUDA 13 on the
/// H200 answers cudaErrorNotSupported; cudaMemAdvise documents cudaMallocManaged's memory), so
/// the blocks past the budget are cudaMallocManaged's, advised. The budget counts the bytes in
/// use from the runtime's pool (what it reserves beyond them, it reuses for them).
template <class R>
class runtime_pool final : public pool_core {
 public:
  /// The runtime's pool on device `device_id`, or nullptr with `status` where the runtime
  /// refuses one.
  static std::shared_ptr<pool_core> make(int device_id, std::size_t threshold, call_site where,
                                         native_status& status,
                                         std::size_t budget = no_gpu_budget) {
    typename R::mem_pool pool{};
    backend::result r{backend::success, ""};
    {
      pool_device_scope<R> on(device_id, true);
      // Only the runtime's answer to the pool itself may select the caching allocator: a
      // failure to make the device current is the caller's error (it was taken for a refused
      // pool, its status for the runtime's: the fault sweep on the H100, 2026-12-05).
      if (!on.ok()) R::fail(on.failure(), where, "managed_pool: making the pool's device current");
      r = R::pool_create(&pool);
    }
    status = r.code;
    if (R::refuses_pool(r.code)) {
      R::forget(r.code);
      return nullptr;
    }
    if (r.code != backend::success) {
      R::fail(r, where, "managed_pool: creating the runtime's pool of managed memory");
    }
    try {
      r = R::pool_set_release_threshold(pool, threshold);
      if (r.code != backend::success) R::fail(r, where, "managed_pool: setting the release threshold");
      std::shared_ptr<caching_pool<R>> host;
      if (budget != no_gpu_budget) {
        host = std::make_shared<caching_pool<R>>(device_id, threshold,
                                                 backend::error_not_supported, 0);
      }
      return std::shared_ptr<pool_core>(
          new runtime_pool(device_id, threshold, pool, budget, std::move(host)));
    } catch (...) {
      (void)R::pool_destroy(pool);
      throw;
    }
  }

  void* allocate(std::size_t bytes, backend::stream_handle s, bool for_host, call_site where,
                 std::uint64_t* stamp) override {
    refuse_if_closed();
    block_node n = make_node<live_blocks>(block_key{}, pool_block{});  // before the lock
    pool_block& b = n.mapped();
    if (host_ != nullptr) {
      spin_guard lock(lock_);
      b.host = !within_budget(gpu_bytes_in_use() + claimed_, bytes, budget_);
      if (!b.host) claimed_ += bytes;
    }
    if (b.host) {
      b.p = host_->allocate(bytes, s, for_host, where, stamp);  // throws as this pool would
    } else {
      allocate_here(b, bytes, s, for_host, where);
    }
    void* const p = b.p;
    {
      spin_guard lock(lock_);
      if (host_ != nullptr && !b.host) claimed_ -= bytes;
      if (!closed_) {
        if (!b.host) {
          for (pool_block& x : recent_) {  // the stamp left at p by a free of at least `bytes`
            if (x.p != p) continue;
            b.stamp = x.asked >= bytes ? x.stamp : 0;
            x = pool_block{};
            break;
          }
          if (stamp != nullptr) *stamp = b.stamp;
        }
        track(std::move(n), bytes, stamp != nullptr);
        return p;
      }
    }
    if (b.host) {
      host_->deallocate(p, s, 0);
    } else {
      (void)R::pool_free(p, s);
    }
    throw_closed();
  }
  void deallocate(void* p, backend::stream_handle s, std::uint64_t stamp) noexcept override {
    block_node n;
    bool closed = false;
    {  // forgotten before the runtime's free: the runtime may hand p out again at once
      spin_guard lock(lock_);
      n = untrack(p);
      closed = closed_;
      if (!n.empty() && !n.mapped().host && stamp != 0) {
        n.mapped().stamp = stamp;
        recent_[next_] = n.mapped();
        next_ = (next_ + 1) % recent_count;
      }
    }
    if (n.empty()) return;
    if (n.mapped().host) {  // the host's pool orders its free and keeps its stamp
      host_->deallocate(p, s, stamp);
      return;
    }
    pool_device_scope<R> on(device_id(), R::is_default_stream(s));
    if (!on.ok() && !closed) {  // nothing can order its free: kept until trim() or close()
      spin_guard lock(lock_);
      if (!closed_) {
        set_aside(std::move(n));
        return;
      }
    }
    (void)R::pool_free(p, s);  // a failure cannot be reported from here
  }
  /// The blocks set aside go back first (the pool's device made current and synchronised).
  void trim_to(std::size_t keep, call_site where) override {
    refuse_if_closed();
    block_list aside;
    {
      spin_guard lock(lock_);
      take_set_aside(aside);
    }
    if (!aside.empty()) {
      const backend::result r = free_after_the_device(aside);
      if (r.code != backend::success) {
        spin_guard lock(lock_);
        put_back_set_aside(aside);
      }
      if (r.code != backend::success) R::fail(r, where, "managed_pool::trim");
    }
    backend::result r = R::pool_trim(pool_, keep);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::trim_to");
    if (host_ == nullptr) return;
    std::size_t reserved = 0;  // what the runtime's pool still holds: the host's keep the rest
    r = R::pool_reserved(pool_, &reserved);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::trim_to");
    host_->trim_to(keep > reserved ? keep - reserved : 0, where);
  }
  /// Frees what nothing else will (after the device's work with it: its streams are unknown).
  /// The runtime's pool itself goes with this state, once the last pool_buffer from it has
  /// freed its memory into it: the runtime allows destroying a pool with allocations out, but
  /// then every later free goes into a destroyed pool, from any thread, a path few programs take
  /// (the stress test that ends a pool under load crashed on an H100 and hung on an H200 with
  /// CUDA 13, 2026-12-05; which of the two allocators it was is not known).
  ~runtime_pool() override { (void)R::pool_destroy(pool_); }
  void close() noexcept override {
    block_list left;
    {
      spin_guard lock(lock_);
      closed_ = true;
      take_leftovers(left);
    }
    for (auto it = left.begin(); it != left.end();) {  // the host's pool frees its own
      if (it->second.host) {
        it = left.erase(it);
      } else {
        ++it;
      }
    }
    if (!left.empty() && free_after_the_device(left).code != backend::success) {
      for (const auto& x : left) (void)R::pool_free(x.second.p, nullptr);  // as well as it can
    }
    if (host_ != nullptr) host_->close();
  }

 private:
  runtime_pool(int device_id, std::size_t threshold, typename R::mem_pool pool,
               std::size_t budget, std::shared_ptr<caching_pool<R>> host) noexcept
      : pool_core(device_id, threshold, backend::success, budget),
        pool_(pool),
        host_(std::move(host)) {}

  /// `bytes` from the runtime's pool into b.p, in the order of s (for the host: after it).
  /// @throws as allocate() (nothing counted: the caller releases its claim).
  void allocate_here(pool_block& b, std::size_t bytes, backend::stream_handle s, bool for_host,
                     call_site where) {
    pool_device_scope<R> on(device_id(), R::is_default_stream(s));
    backend::result r = on.ok() ? R::pool_allocate(&b.p, bytes, pool_, s) : on.failure();
    if (r.code == backend::success && b.p != nullptr && for_host) {
      r = R::stream_synchronize(s);  // the runtime may hand out memory whose free is queued on s
      if (r.code != backend::success) {
        (void)R::pool_free(b.p, s);  // as it was
        unclaim(bytes);
        R::fail(r, where, "managed_pool: ordering the memory after its last free");
      }
    }
    if (r.code != backend::success || b.p == nullptr) {
      unclaim(bytes);
      R::fail_allocation(r, bytes, where);
    }
  }
  void unclaim(std::size_t bytes) noexcept {
    if (host_ == nullptr) return;
    spin_guard lock(lock_);
    claimed_ -= bytes;
  }

  std::size_t runtime_reserved(call_site where) override {
    {
      spin_guard lock(lock_);
      if (closed_) return 0;  // the pool's end: nothing held for its users
    }
    std::size_t reserved = 0;
    const backend::result r = R::pool_reserved(pool_, &reserved);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::statistics");
    return reserved;
  }
  std::size_t host_blocks_held(call_site where) override {
    return host_ != nullptr ? host_->statistics(where).bytes_held : 0;
  }
  void apply_release_threshold(std::size_t bytes, call_site where) override {
    refuse_if_closed();
    const backend::result r = R::pool_set_release_threshold(pool_, bytes);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::set_release_threshold");
    if (host_ != nullptr) host_->set_release_threshold(bytes, where);
  }

  /// After close() the runtime's pool takes only the frees of the memory still out: what else
  /// would call it is refused.
  void refuse_if_closed() {
    bool closed = false;
    {
      spin_guard lock(lock_);
      closed = closed_;
    }
    if (closed) throw_closed();
  }
  /// Frees the blocks, whose last streams are unknown, on the pool's device's default stream
  /// once the device is idle, and waits for those frees (so that a trim that follows can return
  /// their memory); nothing where the device cannot be made current or waited for.
  backend::result free_after_the_device(const block_list& blocks) noexcept {
    pool_device_scope<R> on(device_id(), true);
    backend::result r = on.ok() ? R::device_synchronize() : on.failure();
    if (r.code != backend::success) {
      R::forget(r.code);
      return r;
    }
    for (const auto& x : blocks) (void)R::pool_free(x.second.p, nullptr);
    R::forget(R::stream_synchronize(nullptr).code);
    return r;
  }

  static constexpr int recent_count = 16;
  const typename R::mem_pool pool_;
  const std::shared_ptr<caching_pool<R>> host_;  // the blocks past the budget (none without)
  pool_block recent_[recent_count];  // the last frees with a stamp, under the lock
  int next_ = 0;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
