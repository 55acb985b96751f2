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

/// The runtime's pool of managed memory (CUDA 13), which orders reuse itself, with the placement
/// records of the last few frees (the runtime hands freed memory out at the same address).
template <class R>
class runtime_pool final : public pool_core {
 public:
  /// The runtime's pool on d, or nullptr with `status` where the runtime refuses one.
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
    if (!n.empty()) (void)R::pool_free(p, s);  // a failure cannot be reported from here
  }
  void trim_to(std::size_t keep, call_site where) override {
    const backend::result r = R::pool_trim(pool_, keep);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::trim_to");
  }
  /// Allocations still out stay valid: the runtime releases the pool after their frees.
  void close() noexcept override { (void)R::pool_destroy(pool_); }

 private:
  runtime_pool(int device_id, std::size_t threshold, typename R::mem_pool pool) noexcept
      : pool_core(device_id, threshold, backend::success), pool_(pool) {}

  pool_block take(std::size_t bytes, backend::stream_handle s, bool, call_site where) override {
    block_node n = make_node<live_blocks>(block_key{0}, pool_block{});
    pool_block& b = n.mapped();
    b.done = false;  // frees on s may be pending
    const backend::result r = R::pool_allocate(&b.p, bytes, pool_, s);
    if (r.code != backend::success || b.p == nullptr) R::fail_allocation(r, bytes, where);
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
    std::size_t reserved = 0;
    const backend::result r = R::pool_reserved(pool_, &reserved);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::statistics");
    return reserved;
  }
  void apply_release_threshold(std::size_t bytes, call_site where) override {
    const backend::result r = R::pool_set_release_threshold(pool_, bytes);
    if (r.code != backend::success) R::fail(r, where, "managed_pool::set_release_threshold");
  }
  backend::result order(const pool_block& b, backend::stream_handle s,
                        bool for_host) noexcept override {
    return order_after_free<R>(b, s, for_host);
  }
  [[noreturn]] void fail(backend::result r, call_site where, const char* context) override {
    R::fail(r, where, context);
  }

  static constexpr int recent_count = 16;
  const typename R::mem_pool pool_;
  pool_block recent_[recent_count];  // the last frees with a stamp, under the lock
  int next_ = 0;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
