// unimem (internal): the caching allocator's blocks on the runtime's side: managed memory and an
// event per block, made, recorded, asked about and given back (pool/detail/caching_pool.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/atomic.hpp"
#include "../../core/detail/spin_guard.hpp"
#include "free_list.hpp"
#include "pool_block.hpp"
#include "pool_runtime.hpp"

#include <cstddef>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// The caching allocator's blocks on the runtime's side: each a managed allocation with an event
/// for its frees, made, recorded, asked about and given back here. A block given back keeps its
/// node and event for the next block (spares_) until close(): an event asked about outside the
/// pool's lock is never destroyed meanwhile, and no node is made under it.
template <class R>
class managed_blocks {
 public:
  explicit managed_blocks(int device_id) noexcept : device_(device_id) {}

  /// A node with a block of `size` bytes and an event; empty where the runtime refuses the
  /// memory (its status in `r`).
  block_node make(std::size_t size, backend::result& r, call_site where) {
    block_node n = spare(where);
    n.mapped().size_class = size;
    r = R::malloc_managed(&n.mapped().p, size);
    if (r.code == backend::success && n.mapped().p != nullptr) return n;
    n.mapped().p = nullptr;
    spin_guard lock(lock_);
    spares_.insert(std::move(n));
    return {};
  }
  /// Frees the blocks' memory (the runtime waits for the device); keeps their nodes and events
  /// for make(), or, after close(), destroys the events.
  void give_back(free_list& blocks) noexcept {
    blocks.for_each([](pool_block& b) { (void)R::free(std::exchange(b.p, nullptr)); });
    {
      spin_guard lock(lock_);
      if (!closed_) {
        for (block_node n = blocks.take_first(); !n.empty(); n = blocks.take_first()) {
          spares_.insert(std::move(n));
        }
        return;
      }
    }
    blocks.for_each([](pool_block& b) { (void)R::event_destroy(b.event); });
  }
  /// Destroys the events kept; from now on blocks given back take theirs with them.
  void close() noexcept {
    block_list spares;
    {
      spin_guard lock(lock_);
      closed_ = true;
      spares.swap(spares_);
    }
    for (const auto& x : spares) (void)R::event_destroy(x.second.event);
  }

  /// Records b's free on its stream; where that fails, waits for the stream (b is then done);
  /// false when that fails too.
  static bool record_free(pool_block& b) noexcept {
    backend::result r = R::event_record(b.event, b.stream);
    if (r.code == backend::success) return true;
    R::forget(r.code);
    r = R::stream_synchronize(b.stream);
    R::forget(r.code);
    return b.done = r.code == backend::success;
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
    pool_device_scope<R> on(device_, true);
    const backend::result r = on.ok() ? R::event_create(&n.mapped().event) : on.failure();
    if (r.code != backend::success) R::fail(r, where, "managed_pool: making a block's event");
    return n;
  }

  const int device_;
  atomic_cell<int> lock_{0};  // held through spin_guard, around spares_ and closed_
  block_list spares_;         // nodes and events of blocks given back
  bool closed_ = false;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
