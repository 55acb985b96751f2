// unimem (internal): a managed_pool's block record, the size classes of its caching allocator,
// the regime of a block (ordinary managed memory, or placed on the host by the pool's GPU
// budget), and the map nodes the records live in (pool/managed_pool.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/backend/handles.hpp"

#include <cstddef>
#include <cstdint>
#include <map>

UNIMEM_BEGIN_NAMESPACE
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

/// Memory of a pool and what the pool knows of it.
struct pool_block {
  void* p = nullptr;
  std::size_t asked = 0;       // by its owner (live), or by its last owner (free)
  std::size_t size_class = 0;  // caching allocator: the block's bytes
  backend::event_handle event = nullptr;    // caching allocator: recorded at each free
  backend::stream_handle stream = nullptr;  // the stream its last free was ordered on
  std::uint64_t stamp = 0;    // the placement stamp its last owner left
  std::uint64_t free_id = 0;  // its last free's number in its free_list
  /// The last free (the event's last recording) is known to have completed, or there was none.
  bool done = true;
  bool buffer = false;  // live: a pool_buffer's, which gives it back itself (also after close)
  /// Placed on the host by the pool's GPU budget (preferred location host, accessed by the
  /// pool's GPU), else ordinary managed memory counted against the budget (issue 51).
  bool host = false;
};

/// The top bit of a free list's class key: set for blocks on the host, which are then a class of
/// their own (no block of the caching allocator comes near 2^63 bytes).
constexpr std::size_t host_class_bit = ~(~std::size_t{0} >> 1);
/// The free lists' key class of a block of `size_class` bytes in its regime.
constexpr std::size_t class_key(std::size_t size_class, bool host) noexcept {
  return host ? size_class | host_class_bit : size_class;
}

/// A block record's key: (address, 0) while live; (class key, the free's number) while free and
/// its free known to have completed; (class key, stream) while free and its free maybe still
/// pending.
struct block_key {
  std::uintptr_t first = 0, second = 0;
  friend bool operator<(const block_key& a, const block_key& b) noexcept {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  }
};

/// A pool keeps each block's record in a map node (C++17 node handles), made outside the pool's
/// lock and moved between its maps under it, so that nothing under the lock allocates or frees:
/// live by address (live_blocks), free by size class (block_list: std::map and std::multimap of
/// one key and value share their node type).
using live_blocks = std::map<block_key, pool_block>;
using block_list = std::multimap<block_key, pool_block>;
using block_node = live_blocks::node_type;

inline block_key address_key(const void* p) noexcept {
  return {reinterpret_cast<std::uintptr_t>(p), 0};
}
inline block_key pending_key(std::size_t key_class, backend::stream_handle s) noexcept {
  return {key_class, reinterpret_cast<std::uintptr_t>(s)};
}

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
  block_key key;  // where it is listed: (size class, stream)
  std::uint64_t free_id = 0;
  backend::event_handle event = nullptr;
  bool completed = false;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
