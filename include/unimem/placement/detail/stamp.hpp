// unimem (not public, runtime-free): how the placement layer writes a placement into the word a
// managed buffer keeps for it (core/detail/placement_record.hpp), and reads it back.
#pragma once

#include "../../core/config.hpp"

#include <cstdint>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// A placement as one word: bits 56-63 device + 1 (0: none), bit 55 mapped (else moved), bits
/// 0-54 the host-access log's newest entry when it was made. 0 is no placement, never held.
struct placement_stamp {
  static constexpr std::uint64_t entry_mask = (std::uint64_t{1} << 55) - 1;
  /// What a placement leaves: all of the buffer moved to device d, or mapped for it.
  static constexpr std::uint64_t make(int device, bool mapped, std::uint64_t entry) noexcept {
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
};
}  // namespace detail
UNIMEM_END_NAMESPACE
