// unimem (not public, runtime-free): the word a managed buffer keeps for the placement layer,
// which sets and reads it: where unimem last placed all of its pages, so a tagged launch over
// placed data costs what an untagged one does (docs/architecture.md, "Placement records").
#pragma once

#include "../config.hpp"
#include "atomic.hpp"

#include <cstdint>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// Where unimem last placed a whole buffer, and the log's newest entry then, as one atomic stamp:
/// bits 56-63 device + 1 (0: none), bit 55 mapped (else moved), bits 0-54 the entry. Move-only.
class placement_record {
 public:
  /// What a placement leaves: all of the buffer moved to device d, or mapped for it.
  static constexpr std::uint64_t make_stamp(int device, bool mapped, std::uint64_t entry) noexcept {
    return device < 0 || device >= 255
               ? 0  // not recordable: never holds
               : (static_cast<std::uint64_t>(device + 1) << 56) |
                     (mapped ? std::uint64_t{1} << 55 : 0) | (entry & entry_mask);
  }
  /// The device a stamp names (no_device: none), whether it says mapped, and its log entry.
  static constexpr int device_of(std::uint64_t s) noexcept {
    return (s >> 56) == 0 ? no_device : static_cast<int>(s >> 56) - 1;
  }
  static constexpr bool mapped_of(std::uint64_t s) noexcept { return ((s >> 55) & 1) != 0; }
  static constexpr std::uint64_t entry_of(std::uint64_t s) noexcept { return s & entry_mask; }

  constexpr placement_record() noexcept = default;
  placement_record(placement_record&& other) noexcept : stamp_(other.take()) {}
  placement_record& operator=(placement_record&& other) noexcept {
    stamp_.store(other.take());
    return *this;
  }
  placement_record(const placement_record&) = delete;
  placement_record& operator=(const placement_record&) = delete;

  /// Whether the record is exactly `s` (a make_stamp()): placed there, as of that entry.
  [[nodiscard]] bool holds(std::uint64_t s) const noexcept { return s != 0 && stamp_.load() == s; }
  /// Records a placement.
  void set(std::uint64_t s) noexcept { stamp_.store(s); }
  /// Forgets: the next tagged launch places the buffer again.
  void forget() noexcept { stamp_.store(0); }
  /// The stamp now (0: none); a pool keeps it with returned memory for its next owner.
  [[nodiscard]] std::uint64_t stamp() const noexcept { return stamp_.load(); }
  /// Exchanges two records (buffers swap their allocations).
  void swap(placement_record& other) noexcept {
    const std::uint64_t mine = stamp_.load();
    stamp_.store(other.stamp_.load());
    other.stamp_.store(mine);
  }

 private:
  static constexpr std::uint64_t entry_mask = (std::uint64_t{1} << 55) - 1;
  std::uint64_t take() noexcept {
    const std::uint64_t s = stamp_.load();
    stamp_.store(0);
    return s;
  }
  atomic_cell<std::uint64_t> stamp_{0};
};
}  // namespace detail
UNIMEM_END_NAMESPACE
