// unimem: what a managed buffer knows of where its pages are, so that a tagged launch over data
// already on its GPU costs what an untagged one does. Not a public header; runtime-free.
//
// A record is one word in the buffer (no table, nothing keyed by address): "unimem placed all of
// this buffer on device d (moved there, or mapped for d) when the process's host-access log
// (host_access.hpp) had n entries". It holds, whole, while no later entry of the log meets the
// buffer; where later entries say the host touched parts of it, those parts alone are placed
// again (placement.hpp). The log is the process's, shared by every copy of unimem in it, so a
// record in a buffer means the same in every shared library. A record that holds when the pages
// have moved anyway (memory evicted, a raw prefetch, a raw kernel on another GPU) costs speed,
// never data: managed memory stays coherent wherever its pages are.
#pragma once

#include "../config.hpp"
#include "atomic.hpp"
#include "host_access.hpp"

#include <cstddef>
#include <cstdint>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// Where unimem last placed a whole buffer, and the host-access log's newest entry of that
/// moment (host_access::now()), in one atomic word: bits 56-63 the device + 1 (0: nothing
/// recorded), bit 55 mapped (else moved), bits 0-54 the entry's number. Buffers hold one; copies
/// of the word are made only by moves.
class placement_record {
 public:
  /// What a placement leaves: all of the buffer moved to device d, or mapped for it.
  static constexpr std::uint64_t stamp(int device, bool mapped, std::uint64_t entry) noexcept {
    return device < 0 || device >= 255
               ? 0  // not recordable: never holds
               : (static_cast<std::uint64_t>(device + 1) << 56) |
                     (mapped ? std::uint64_t{1} << 55 : 0) | (entry & entry_mask);
  }
  /// The device a stamp names (-1: none), whether it says mapped, and its log entry.
  static constexpr int device_of(std::uint64_t s) noexcept { return static_cast<int>(s >> 56) - 1; }
  static constexpr bool mapped_of(std::uint64_t s) noexcept { return ((s >> 55) & 1) != 0; }
  static constexpr std::uint64_t entry_of(std::uint64_t s) noexcept { return s & entry_mask; }

  constexpr placement_record() noexcept = default;
  placement_record(placement_record&& other) noexcept : word_(other.take()) {}
  placement_record& operator=(placement_record&& other) noexcept {
    word_.store(other.take());
    return *this;
  }
  placement_record(const placement_record&) = delete;
  placement_record& operator=(const placement_record&) = delete;

  /// Whether the record is exactly `s` (a stamp()): placed there, as of that entry.
  [[nodiscard]] bool holds(std::uint64_t s) const noexcept { return s != 0 && word_.load() == s; }
  /// Records a placement.
  void set(std::uint64_t s) noexcept { word_.store(s); }
  /// Forgets: the next tagged launch places the buffer again.
  void forget() noexcept { word_.store(0); }
  /// The stamp recorded now (0: none), to be kept with the memory when its owner gives it
  /// back to a pool and set() on the next owner of the same memory (managed_pool.hpp).
  [[nodiscard]] std::uint64_t word() const noexcept { return word_.load(); }
  /// Exchanges two records (buffers swap their allocations).
  void swap(placement_record& other) noexcept {
    const std::uint64_t mine = word_.load();
    word_.store(other.word_.load());
    other.word_.store(mine);
  }

 private:
  static constexpr std::uint64_t entry_mask = (std::uint64_t{1} << 55) - 1;
  std::uint64_t take() noexcept {
    const std::uint64_t w = word_.load();
    word_.store(0);
    return w;
  }
  atomic_cell<std::uint64_t> word_{0};
};

}  // namespace detail
UNIMEM_END_NAMESPACE
