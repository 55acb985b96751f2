// unimem: the process-wide table of managed ranges whose intent is "map" (access.hpp): unimem
// gave them preferred-location-host advice and accessed-by advice for a set of GPUs, and
// remembers that here so that a launch does not advise them again (advice costs about 24 ms per
// GiB each time; a look-up here costs nanoseconds). Not a public header.
//
// Runtime-free: placement.hpp gives and withdraws the advice; this table only records it.
// Entries are disjoint, sorted by address, each with its set of devices. A lock-free check
// ("is the table empty?") keeps programs that never map anything at one atomic load per tag.
// Nothing here throws or allocates with a throwing new: when memory runs out an entry is
// dropped, and a dropped entry only costs its advice once more at its next use (unimem then
// advises again, or prefetches a range whose advice it forgot: slower, never wrong).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "../config.hpp"
#include "atomic.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// Device d's bit in a device set. Devices 63 and up share bit 63, which says that one of them
/// has advice but not which: their advice is given again at every use (placement.hpp).
constexpr std::uint64_t device_bit(int d) noexcept {
  return std::uint64_t{1} << (d >= 0 && d < 63 ? d : 63);
}

/// x rounded down to a multiple of `unit`, a power of two.
inline std::uintptr_t round_down(std::uintptr_t x, std::uintptr_t unit) noexcept {
  return x & ~(unit - 1);
}
/// x rounded up to a multiple of `unit`, a power of two; the highest address where that would
/// overflow.
inline std::uintptr_t round_up(std::uintptr_t x, std::uintptr_t unit) noexcept {
  const std::uintptr_t up = x + (unit - 1);
  return up < x ? ~std::uintptr_t{0} : round_down(up, unit);
}

/// A piece of a range: mapped for a set of devices, or not mapped (devices 0, mapped false).
struct range_piece {
  std::uintptr_t begin;
  std::uintptr_t end;
  std::uint64_t devices;
  bool mapped;
};

class mapped_ranges {
 public:
  constexpr mapped_ranges() noexcept = default;
  mapped_ranges(const mapped_ranges&) = delete;
  mapped_ranges& operator=(const mapped_ranges&) = delete;
  ~mapped_ranges() { delete[] items_; }

  /// True when no range is mapped: one atomic load, no lock.
  [[nodiscard]] bool empty() const noexcept { return count_.load() == 0; }

  /// The pieces of [b, e) in address order, written to out[0, cap); returns how many there
  /// are, which may exceed cap (call again with room for them).
  std::size_t pieces(std::uintptr_t b, std::uintptr_t e, range_piece* out,
                     std::size_t cap) const noexcept {
    if (b >= e) return 0;
    std::size_t n = 0;
    auto emit = [&](std::uintptr_t pb, std::uintptr_t pe, std::uint64_t devices, bool mapped) {
      if (pb < pe) {
        if (n < cap) out[n] = {pb, pe, devices, mapped};
        ++n;
      }
    };
    const spin_guard l(locked_);
    std::uintptr_t at = b;
    for (std::size_t i = first_ending_after(b); i < size_ && items_[i].begin < e; ++i) {
      const entry& x = items_[i];
      emit(at, x.begin > at ? x.begin : at, 0, false);
      const std::uintptr_t from = x.begin > b ? x.begin : b;
      const std::uintptr_t to = x.end < e ? x.end : e;
      emit(from, to, x.devices, true);
      at = to;
    }
    emit(at, e, 0, false);
    return n;
  }

  /// Whether every byte of [b, e) (not empty) is mapped.
  [[nodiscard]] bool covers(std::uintptr_t b, std::uintptr_t e) const noexcept {
    if (b >= e) return false;
    const spin_guard l(locked_);
    std::uintptr_t at = b;
    for (std::size_t i = first_ending_after(b); i < size_ && at < e; ++i) {
      if (items_[i].begin > at) return false;
      at = items_[i].end;
    }
    return at >= e;
  }

  /// Records [b, e) as mapped for the devices in `devices` too: parts already mapped keep their
  /// devices and gain these; the rest becomes mapped for these alone.
  void add(std::uintptr_t b, std::uintptr_t e, std::uint64_t devices) noexcept {
    update(b, e, devices, true);
  }
  /// The runtime's advice applies to whole CPU pages: withdrawing it from [b, e) withdraws it
  /// from every page [b, e) touches (4 KiB pages, measured with CUDA 11.8 and 13 on x86-64).
  /// So removal forgets whole units of 64 KiB, the largest CPU page of unimem's targets
  /// (aarch64): a neighbour that shares a page with [b, e) is forgotten too, which only costs
  /// its advice once more at its next use. Adding records [b, e) exactly (the runtime has
  /// advised at least that).
  static constexpr std::uintptr_t forget_unit = std::uintptr_t{64} << 10;

  /// Forgets [b, e), widened to whole forget_units: the parts of entries outside it stay.
  void remove(std::uintptr_t b, std::uintptr_t e) noexcept {
    update(round_down(b, forget_unit), round_up(e, forget_unit), 0, false);
  }

  /// Forgets exactly [b, e).
  void cut(std::uintptr_t b, std::uintptr_t e) noexcept { update(b, e, 0, false); }

  /// Whether any byte of [b, e) is in the table.
  [[nodiscard]] bool overlaps(std::uintptr_t b, std::uintptr_t e) const noexcept {
    if (b >= e || empty()) return false;
    const spin_guard l(locked_);
    const std::size_t i = first_ending_after(b);
    return i < size_ && items_[i].begin < e;
  }

  /// The number of entries (for tests).
  [[nodiscard]] std::size_t size() const noexcept {
    const spin_guard l(locked_);
    return size_;
  }

 private:
  struct entry {
    std::uintptr_t begin;
    std::uintptr_t end;
    std::uint64_t devices;
  };

  /// The first entry whose end is after b (binary search; entries are sorted and disjoint).
  std::size_t first_ending_after(std::uintptr_t b) const noexcept {
    std::size_t lo = 0, hi = size_;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (items_[mid].end <= b) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /// Rebuilds the entries with [b, e) added for `devices` (add) or cut out (remove).
  void update(std::uintptr_t b, std::uintptr_t e, std::uint64_t devices, bool add) noexcept {
    if (b >= e || (add && devices == 0)) return;
    const spin_guard l(locked_);
    // At most: every old entry, split in two at b and e, plus the gaps filled (add).
    const std::size_t room = 2 * size_ + 3;
    entry* next = new (std::nothrow) entry[room];
    if (next == nullptr) {  // no memory: drop every entry [b, e) touches (forgetting is safe)
      std::size_t kept = 0;
      for (std::size_t i = 0; i < size_; ++i) {
        if (items_[i].end <= b || items_[i].begin >= e) items_[kept++] = items_[i];
      }
      size_ = kept;
      count_.store(size_);
      return;
    }
    std::size_t n = 0;
    auto push = [&](std::uintptr_t pb, std::uintptr_t pe, std::uint64_t d) {
      if (pb >= pe || d == 0) return;
      if (n > 0 && next[n - 1].end == pb && next[n - 1].devices == d) {
        next[n - 1].end = pe;  // joins a neighbour with the same devices
      } else {
        next[n++] = {pb, pe, d};
      }
    };
    std::uintptr_t at = b;  // in [b, e): the start of what no old entry has covered yet
    for (std::size_t i = 0; i < size_; ++i) {
      const entry& x = items_[i];
      if (x.end <= b || x.begin >= e) {
        if (add && x.begin >= e && at < e) {  // the gap before the first entry after [b, e)
          push(at, e, devices);
          at = e;
        }
        push(x.begin, x.end, x.devices);
        continue;
      }
      push(x.begin, b, x.devices);  // the part before b
      if (add) {
        const std::uintptr_t from = x.begin > b ? x.begin : b;
        const std::uintptr_t to = x.end < e ? x.end : e;
        push(at, from, devices);
        push(from, to, x.devices | devices);
        at = to;
      }
      push(e, x.end, x.devices);  // the part after e
    }
    if (add && at < e) push(at, e, devices);
    delete[] items_;
    if (n == 0) {  // empty: no array kept
      delete[] next;
      next = nullptr;
    }
    items_ = next;
    size_ = n;
    count_.store(n);
  }

  mutable atomic_cell<int> locked_{0};
  atomic_cell<std::size_t> count_{0};  // size_, readable without the lock
  entry* items_ = nullptr;
  std::size_t size_ = 0;
};

/// The process's table, made at its first use and never destroyed: buffers freed by other
/// static objects' destructors, in any order, still find it.
inline mapped_ranges& mapped_table() noexcept {
  alignas(mapped_ranges) static unsigned char storage[sizeof(mapped_ranges)];
  static mapped_ranges* const table = ::new (static_cast<void*>(storage)) mapped_ranges();
  return *table;
}

/// The ranges that may have read-mostly advice given through unimem (advise(read_mostly)). It
/// errs the other way from mapped_table(): it may name pages that have lost the advice, never
/// miss one that has it. Advice applies to every page a range touches, so a range is recorded
/// widened to whole 64 KiB units (the largest CPU page of unimem's targets); withdrawing it
/// forgets only the 4 KiB pages the range touches (withdrawn on every page size), and a free
/// only the whole units inside the allocation. The launch path never discards a range in it
/// (placement.hpp: the CUDA 13 driver loses kernel writes to read-duplicated pages that a
/// discarding prefetch placed).
inline mapped_ranges& read_mostly_table() noexcept {
  alignas(mapped_ranges) static unsigned char storage[sizeof(mapped_ranges)];
  static mapped_ranges* const table = ::new (static_cast<void*>(storage)) mapped_ranges();
  return *table;
}

/// read_mostly_table() as advice is given (set), withdrawn, or its memory freed.
inline void note_read_mostly(std::uintptr_t b, std::uintptr_t e, bool set) noexcept {
  constexpr std::uintptr_t page = std::uintptr_t{4} << 10;
  if (set) {
    read_mostly_table().add(round_down(b, mapped_ranges::forget_unit),
                            round_up(e, mapped_ranges::forget_unit), 1);
  } else if (!read_mostly_table().empty()) {
    read_mostly_table().cut(round_down(b, page), round_up(e, page));
  }
}
inline void forget_read_mostly_of_freed(std::uintptr_t b, std::uintptr_t e) noexcept {
  if (read_mostly_table().empty()) return;
  read_mostly_table().cut(round_up(b, mapped_ranges::forget_unit),
                          round_down(e, mapped_ranges::forget_unit));
}

}  // namespace detail
UNIMEM_END_NAMESPACE
