/// @file
/// @brief managed_pool_resource. Not in the umbrella header: it needs `<memory_resource>`.
#pragma once

#include "../core/config.hpp"
#include "../core/detail/atomic.hpp"
#include "../core/detail/spin_guard.hpp"
#include "../core/detail/owned_array.hpp"
#include "../core/stream_ref.hpp"
#include "managed_pool.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory_resource>
#include <new>

UNIMEM_BEGIN_NAMESPACE

/// @brief A std::pmr::memory_resource over a managed_pool, for containers in managed memory at
/// the pool's speed (`std::pmr::vector<float> v(n, &resource);`). Allocations are ordered on its
/// stream and ready for the host (managed_pool::allocate_for_host); deallocations are ordered on
/// the stream. Any power-of-two alignment. Equal only to itself; the pool must outlive it.
class managed_pool_resource final : public std::pmr::memory_resource {
 public:
  /// @brief Allocates from `pool`, in the order of stream s.
  explicit managed_pool_resource(managed_pool& pool, stream_ref s = {}) noexcept
      : pool_(&pool), stream_(s) {}
  [[nodiscard]] managed_pool& pool() const noexcept { return *pool_; }  ///< The pool.
  /// @brief The stream allocations and deallocations are ordered on.
  [[nodiscard]] stream_ref stream() const noexcept { return stream_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) throw std::bad_alloc();
    if (bytes == 0) bytes = 1;  // a unique, non-null pointer for every allocation
    (void)detail::checked_bytes(bytes, 1, "managed_pool_resource");
    const bool over = alignment > detail::pool_min_block;
    if (!over) return pool_->allocate_for_host(bytes, stream_);
    (void)detail::checked_bytes(bytes + alignment, 1, "managed_pool_resource");
    void* raw = pool_->allocate_for_host(bytes + alignment, stream_);
    const auto address = reinterpret_cast<std::uintptr_t>(raw);
    void* aligned = reinterpret_cast<void*>((address + alignment - 1) & ~(alignment - 1));
    originals::node_type n;
    try {
      n = detail::make_node<originals>(aligned, raw);  // before the lock: it allocates
    } catch (...) {
      pool_->deallocate(raw, bytes + alignment, stream_);
      throw;
    }
    detail::spin_guard lock(lock_);
    originals_.insert(std::move(n));
    return aligned;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    if (p != nullptr && alignment > detail::pool_min_block) {
      originals::node_type n;  // freed after the lock
      {
        detail::spin_guard lock(lock_);
        n = originals_.extract(p);
      }
      if (n.empty()) return;  // not ours
      p = n.mapped();
    }
    pool_->deallocate(p, bytes, stream_);
  }
  // Only this resource knows the originals of its over-aligned allocations.
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  using originals = std::map<void*, void*>;  // map nodes: made and freed outside the lock
  managed_pool* pool_;
  stream_ref stream_;
  detail::atomic_cell<int> lock_{0};  // held through spin_guard, around originals_
  originals originals_;
};

UNIMEM_END_NAMESPACE
