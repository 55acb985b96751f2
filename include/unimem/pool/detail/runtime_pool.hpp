// unimem (internal): the runtime's pool of managed memory (CUDA 13) as managed_pool's policy
// (pool/managed_pool.hpp), over a runtime table that has one (pool/detail/pool_runtime.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/spin_guard.hpp"
#include "pool_block.hpp"
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
template <class R>
class runtime_pool final : public pool_core {
 public:
  /// The runtime's pool on device `device_id`, or nullptr with `status` where the runtime
  /// refuses one.
  static std::shared_ptr<pool_core> make(int device_id, std::size_t threshold, call_site where,
                                         native_status& status) {
    typename R::mem_pool pool{};
    backend::result r{backend::success, ""};
    {
      pool_device_scope<R> on(device_id, true);
      r = on.ok() ? R::pool_create(&pool) : on.failure();
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
      return std::shared_ptr<pool_core>(new runtime_pool(device_id, threshold, pool));
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
    pool_device_scope<R> on(device_id(), R::is_default_stream(s));
    backend::result r = on.ok() ? R::pool_allocate(&b.p, bytes, pool_, s) : on.failure();
    if (r.code != backend::success || b.p == nullptr) R::fail_allocation(r, bytes, where);
    if (for_host) {  // the runtime may hand out memory whose free is still queued on s
      r = R::stream_synchronize(s);
      if (r.code != backend::success) {
        (void)R::pool_free(b.p, s);  // as it was: nothing counted yet
        R::fail(r, where, "managed_pool: ordering the memory after its last free");
      }
    }
    void* const p = b.p;
    {
      spin_guard lock(lock_);
      if (!closed_) {
        for (pool_block& x : recent_) {  // the stamp left at p by a free of at least `bytes`
          if (x.p != p) continue;
          b.stamp = x.asked >= bytes ? x.stamp : 0;
          x = pool_block{};
          break;
        }
        if (stamp != nullptr) *stamp = b.stamp;
        track(std::move(n), bytes, stamp != nullptr);
        return p;
      }
    }
    (void)R::pool_free(p, s);
    throw_closed();
  }
  void deallocate(void* p, backend::stream_handle s, std::uint64_t stamp) noexcept override {
    block_node n;
    bool closed = false;
    {  // forgotten before the runtime's free: the runtime may hand p out again at once
      spin_guard lock(lock_);
      n = untrack(p);
      closed = closed_;
      if (!n.empty() && stamp != 0) {
        n.mapped().stamp = stamp;
        recent_[next_] = n.mapped();
        next_ = (next_ + 1) % recent_count;
      }
    }
    if (n.empty()) return;
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
    const backend::result r = R::pool_trim(pool_, keep);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::trim_to");
  }
  /// Frees what nothing else will (after the device's work with it: its streams are unknown) and
  /// destroys the runtime's pool, which the runtime releases once the pool_buffers' memory is
  /// freed too.
  void close() noexcept override {
    block_list left;
    {
      spin_guard lock(lock_);
      closed_ = true;
      take_leftovers(left);
    }
    if (!left.empty() && free_after_the_device(left).code != backend::success) {
      for (const auto& x : left) (void)R::pool_free(x.second.p, nullptr);  // as well as it can
    }
    (void)R::pool_destroy(pool_);
  }

 private:
  runtime_pool(int device_id, std::size_t threshold, typename R::mem_pool pool) noexcept
      : pool_core(device_id, threshold, backend::success), pool_(pool) {}

  std::size_t runtime_reserved(call_site where) override {
    {
      spin_guard lock(lock_);
      if (closed_) return 0;  // the runtime's pool is destroyed
    }
    std::size_t reserved = 0;
    const backend::result r = R::pool_reserved(pool_, &reserved);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::statistics");
    return reserved;
  }
  void apply_release_threshold(std::size_t bytes, call_site where) override {
    refuse_if_closed();
    const backend::result r = R::pool_set_release_threshold(pool_, bytes);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::set_release_threshold");
  }

  /// After close() the runtime's pool is destroyed: what would call it is refused.
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
  pool_block recent_[recent_count];  // the last frees with a stamp, under the lock
  int next_ = 0;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
