// unimem: what a managed buffer knows of where its pages are, so that a tagged launch over data
// already on its GPU costs what an untagged one does. Not a public header; runtime-free.
//
// A record is one word in the buffer (no table, nothing keyed by address): "unimem placed all of
// this buffer on device d (moved there, or mapped for d), and the process had taken F page
// faults then". It holds while the process's page-fault count is still F. The count is the
// operating system's (getrusage: minor and major faults of every thread), so it is the same in
// every shared library of the process, and every CPU access that takes a managed page back from
// a GPU is a fault (measured on the H200: reads and writes, any thread, any pointer, 1 fault
// each; a steady-state loop of launches and synchronisations takes none:
// scripts/probes/host_faults.cu). A record that holds when the pages have moved anyway (memory
// evicted, a raw prefetch, a raw kernel on another GPU) costs speed, never data: managed
// memory stays coherent wherever its pages are. Where unimem itself moves pages that no record
// describes (a view prefetched to the host, or to one GPU of several), it takes one fault on
// purpose, so that every record in the process stops holding.
#pragma once

#include "../config.hpp"
#include "atomic.hpp"

#include <cstddef>
#include <cstdint>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <sys/resource.h>
#define UNIMEM_DETAIL_FAULT_COUNT 1
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// The page faults the process has taken, minor and major, in every thread (getrusage). Where
/// the operating system has no such count, a number that changes at every call (no record ever
/// holds: every tagged launch places its ranges).
inline std::uint64_t host_faults() noexcept {
#if defined(UNIMEM_DETAIL_FAULT_COUNT)
  rusage r{};
  (void)getrusage(RUSAGE_SELF, &r);  // cannot fail for RUSAGE_SELF and a valid pointer
  return static_cast<std::uint64_t>(r.ru_minflt) + static_cast<std::uint64_t>(r.ru_majflt);
#else
  static atomic_cell<std::uint64_t> calls{0};  // no count: every call is news
  std::uint64_t n = calls.load();
  while (!calls.compare_exchange(n, n + 1)) {
  }
  return n + 1;
#endif
}

/// Takes one page fault on purpose (a page of this library's, given back to the system and
/// written again): every placement record of the process, in every shared library, stops
/// holding. About 2 us; unimem calls it only after moving or re-advising pages no record
/// describes.
inline void fault_on_purpose() noexcept {
#if defined(UNIMEM_DETAIL_FAULT_COUNT)
  // 64 KiB: at least one page on every system (no <unistd.h> for sysconf in every user's TU);
  // madvise rounds its length up to the page.
  constexpr std::size_t span = std::size_t{64} << 10;
  static char* const page = [] {
    void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }();
  if (page == nullptr) return;  // no page: records are then only as good as the count
  madvise(page, 1, MADV_DONTNEED);         // the first page goes back to the system
  *static_cast<volatile char*>(page) = 1;  // and comes back zero-filled: one minor fault
#endif
}

/// Where unimem last placed a whole buffer, and the fault count of that moment, in one atomic
/// word: bits 56-63 the device + 1 (0: nothing recorded), bit 55 mapped (else moved), bits 0-54
/// the fault count. Buffers hold one; copies of the word are made only by moves.
class placement_record {
 public:
  /// What a placement leaves: all of the buffer moved to device d, or mapped for it.
  static constexpr std::uint64_t stamp(int device, bool mapped, std::uint64_t faults) noexcept {
    return device < 0 || device >= 255
               ? 0  // not recordable: never holds
               : (static_cast<std::uint64_t>(device + 1) << 56) |
                     (mapped ? std::uint64_t{1} << 55 : 0) | (faults & fault_mask);
  }

  constexpr placement_record() noexcept = default;
  placement_record(placement_record&& other) noexcept : word_(other.take()) {}
  placement_record& operator=(placement_record&& other) noexcept {
    word_.store(other.take());
    return *this;
  }
  placement_record(const placement_record&) = delete;
  placement_record& operator=(const placement_record&) = delete;

  /// Whether the buffer is known to be where `s` (a stamp()) says, with no fault since.
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
  static constexpr std::uint64_t fault_mask = (std::uint64_t{1} << 55) - 1;
  std::uint64_t take() noexcept {
    const std::uint64_t w = word_.load();
    word_.store(0);
    return w;
  }
  atomic_cell<std::uint64_t> word_{0};
};

}  // namespace detail
UNIMEM_END_NAMESPACE
