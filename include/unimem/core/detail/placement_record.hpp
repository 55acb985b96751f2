// unimem (not public, runtime-free): the word a managed buffer keeps for the placement layer,
// which sets and reads it: where unimem last placed all of its pages, so a tagged launch over
// placed data costs what an untagged one does (docs/architecture.md, "Placement records").
#pragma once

#include "../config.hpp"
#include "atomic.hpp"

#include <cstdint>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// Where unimem last placed a whole buffer, as one atomic word the placement layer writes and
/// reads (placement/detail/stamp.hpp); 0: nowhere. Move-only.
class placement_record {
 public:
  constexpr placement_record() noexcept = default;
  placement_record(placement_record&& other) noexcept : stamp_(other.stamp()) { other.forget(); }
  placement_record& operator=(placement_record&& other) noexcept {
    set(other.stamp());
    other.forget();  // a self-move forgets: the next tagged launch places again
    return *this;
  }
  placement_record(const placement_record&) = delete;
  placement_record& operator=(const placement_record&) = delete;

  /// Whether the record is exactly `s` (a placement stamp): placed there, as of that entry.
  [[nodiscard]] bool holds(std::uint64_t s) const noexcept { return s != 0 && stamp_.load() == s; }
  /// Records a placement.
  void set(std::uint64_t s) noexcept { stamp_.store(s); }
  /// Forgets: the next tagged launch places the buffer again.
  void forget() noexcept { stamp_.store(0); }
  /// The stamp now (0: none); a pool keeps it with returned memory for its next owner.
  [[nodiscard]] std::uint64_t stamp() const noexcept { return stamp_.load(); }
  /// Exchanges two records (buffers swap their allocations).
  void swap(placement_record& other) noexcept {
    const std::uint64_t mine = stamp();
    set(other.stamp());
    other.set(mine);
  }

 private:
  atomic_cell<std::uint64_t> stamp_{0};
};
}  // namespace detail
UNIMEM_END_NAMESPACE
