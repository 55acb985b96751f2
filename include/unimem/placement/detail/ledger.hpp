// unimem (internal): what this copy of unimem moved between the host and each GPU, for
// gpu_budget_of() and report(): bytes its placement calls prefetched to a GPU and back (faults,
// raw prefetches and frees are not seen), and the largest range placed on each GPU with the
// GPU's free memory at that moment (a range larger than that cannot stay resident: the point
// where a loop should walk it in windows, windows.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/atomic.hpp"

#include <cstddef>
#include <cstdint>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace ledger {
/// Devices with counts of their own; higher ordinals are not counted.
constexpr int devices = 64;
/// One device's counts.
struct counts {
  atomic_cell<std::uint64_t> to_gpu;
  atomic_cell<std::uint64_t> to_host;
  atomic_cell<std::uint64_t> largest;       // the largest range placed there, bytes
  atomic_cell<std::uint64_t> largest_free;  // the free memory when it was placed
};
inline counts* table() noexcept {
  static counts c[devices];
  return c;
}
/// Counts `bytes` moved to GPU d (to_gpu) or from it to the host.
inline void moved(int d, std::size_t bytes, bool to_gpu) noexcept {
  if (d < 0 || d >= devices || bytes == 0) return;
  counts& c = table()[d];
  (to_gpu ? c.to_gpu : c.to_host).fetch_add(bytes);
}
/// Keeps a range of `bytes` placed on GPU d with `free` bytes free if it is the largest yet.
inline void placed_range(int d, std::size_t bytes, std::size_t free) noexcept {
  if (d < 0 || d >= devices) return;
  counts& c = table()[d];
  std::uint64_t seen = c.largest.load();
  while (bytes > seen) {
    if (c.largest.compare_exchange(seen, bytes)) {
      c.largest_free.store(free);  // of the placement that set it (a racing one may mix them)
      return;
    }
  }
}
/// Ranges at least this large (and at least 1/16 of the GPU's memory) have the GPU's free
/// memory read when they are placed: a query of a microsecond or two beside a move of
/// milliseconds.
constexpr std::size_t noted_min_bytes = std::size_t{256} << 20;
}  // namespace ledger
}  // namespace detail
UNIMEM_END_NAMESPACE
