// unimem (internal): the caching allocator's blocks on the runtime's side: managed memory and an
// event per block, made, recorded, asked about and given back (pool/detail/caching_pool.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/atomic.hpp"
#include "../../core/detail/spin_guard.hpp"
#include "free_list.hpp"
#include "pool_block.hpp"
#include "pool_budget.hpp"
#include "pool_runtime.hpp"

#include <cstddef>
#include <initializer_list>
#include <new>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// Each block is a managed allocation with an event for its frees, over the runtime table R
/// (pool_runtime.hpp). Events outlive their blocks: a block given back leaves its node and event
/// for the next block until close(), so that an event asked about outside the pool's lock is
/// never destroyed meanwhile and no node is made under it. An event whose last recording may be
/// pending is `retired` until a query finds it complete; `spares` hold the others.
template <class R>
class managed_blocks {
 public:
  explicit managed_blocks(int device_id) noexcept : device_(device_id) {}
  managed_blocks(const managed_blocks&) = delete;
  managed_blocks& operator=(const managed_blocks&) = delete;

  /// A node with a block of `size` bytes on the pool's device, placed on the host for it where
  /// `host` (advice_to_host()), and an event no recording of which is pending; empty where the
  /// runtime refuses the memory or, with `advice` set, the advice (its status in `r`; the
  /// memory went back).
  /// @throws unimem::error where no event can be made.
  block_node make(std::size_t size, bool host, backend::result& r, bool& advice, call_site where) {
    block_node n = spare(r);
    if (n.empty()) R::fail(r, where, "managed_pool: making a block's event");
    pool_block& b = n.mapped();
    b.size_class = size;
    b.host = host;
    advice = false;
    {
      pool_device_scope<R> on(device_, true);
      r = on.ok() ? R::malloc_managed(&b.p, size) : on.failure();
      if (r.code == backend::success && b.p != nullptr) {
        if (!host) return n;
        r = advise_to_host<R>(b.p, size, device_);
        if (r.code == backend::success) return n;
        advice = true;
        (void)R::free(b.p);  // its advice goes with it
      }
    }
    b.p = nullptr;
    keep(std::move(n));
    return {};
  }
  /// Frees the blocks' memory (the runtime waits for the device's work with it first); keeps
  /// their nodes and events for make(), or, after close(), destroys the events.
  void give_back(free_list& blocks) noexcept {
    {
      pool_device_scope<R> on(device_, true);
      blocks.for_each([](pool_block& b) { (void)R::free(std::exchange(b.p, nullptr)); });
    }
    for (block_node n = blocks.take_first(); !n.empty(); n = blocks.take_first()) keep(std::move(n));
  }
  /// Gives n's block an event no recording of which is pending in place of its own, whose last
  /// recording may be (HIP forbids recording it again): that one is retired. False where there
  /// is no other event (none spare, none can be made).
  bool exchange_event(block_node& n) noexcept {
    backend::result r{backend::success, ""};
    block_node other;
    try {
      other = spare(r);
    } catch (const std::bad_alloc&) {  // no node could be made: as no event
    }
    if (other.empty()) return false;
    std::swap(n.mapped().event, other.mapped().event);
    other.mapped().done = false;
    keep(std::move(other));
    return true;
  }
  /// Destroys the events kept; from now on blocks given back take theirs with them.
  void close() noexcept {
    block_list spares, retired;
    {
      spin_guard lock(lock_);
      closed_ = true;
      spares.swap(spares_);
      retired.swap(retired_);
    }
    for (const block_list* l : {&spares, &retired}) {
      for (const auto& x : *l) (void)R::event_destroy(x.second.event);
    }
  }
  /// Asks whether these frees have completed: in order, up to the first that has with
  /// `first_only`, and up to a failed query, which it returns.
  static backend::result ask(pending_free* f, std::size_t n, bool first_only) noexcept {
    for (pending_free* q = f; q != f + n; ++q) {
      const backend::result r = R::event_query(q->event);
      if (r.code == backend::success) {
        q->completed = true;
        if (first_only) break;
      } else if (r.code == backend::error_not_ready) {
        R::forget(r.code);
      } else {
        return r;
      }
    }
    return {backend::success, ""};
  }

 private:
  /// Keeps n's event (and node) for later: spare where no recording of it is pending, retired
  /// where one may be; destroyed after close().
  void keep(block_node&& n) noexcept {
    {
      spin_guard lock(lock_);
      if (!closed_) {
        (n.mapped().done ? spares_ : retired_).insert(std::move(n));
        return;
      }
    }
    (void)R::event_destroy(n.mapped().event);
  }
  /// A node with an event no recording of which is pending, and nothing else: a spare's, else a
  /// retired one's a query finds complete, else one made on the pool's device; empty, with why
  /// in `r`, where none can be had. @throws std::bad_alloc where no node can be made.
  block_node spare(backend::result& r) {
    block_node n;
    {
      spin_guard lock(lock_);
      if (!spares_.empty()) {
        n = spares_.extract(spares_.begin());
      } else if (!retired_.empty()) {
        n = retired_.extract(retired_.begin());  // the oldest retired: asked outside the lock
      }
    }
    if (!n.empty() && !n.mapped().done) {
      const backend::result q = R::event_query(n.mapped().event);
      if (q.code != backend::success) {
        R::forget(q.code);
        keep(std::move(n));  // still pending: retired again, the newest
      }
    }
    if (n.empty()) {
      n = make_node<live_blocks>(block_key{}, pool_block{});
      pool_device_scope<R> on(device_, true);
      r = on.ok() ? R::event_create(&n.mapped().event) : on.failure();
      if (r.code != backend::success) {
        R::forget(r.code);
        return {};
      }
    }
    pool_block b;
    b.event = n.mapped().event;
    n.mapped() = b;  // done: no recording of its event is pending
    return n;
  }

  const int device_;
  atomic_cell<int> lock_{0};  // held through spin_guard, around what follows
  block_list spares_;         // nodes with events no recording of which is pending
  block_list retired_;        // nodes with events whose last recording may be pending
  bool closed_ = false;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
