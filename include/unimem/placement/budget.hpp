/// @file
/// @brief What fits on a GPU: gpu_budget_of() (its free memory now, the reserve kept free, the
/// managed memory unimem moved there and back, the largest range it placed there and whether it
/// fitted) and host_link_of() (the link to the host, estimated). windows.hpp sizes its windows
/// from them; report() and unimem-info print them.
/// @code
///   const unimem::gpu_budget b = unimem::gpu_budget_of(0);
///   if (!b.fits(bytes)) { /* walk the data with unimem::windows (<unimem/placement/window.hpp>) */ }
/// @endcode
#pragma once

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "detail/ledger.hpp"
#include "detail/link.hpp"

#include <cstddef>
#include <cstdint>

UNIMEM_BEGIN_NAMESPACE

/// @brief One GPU's memory as unimem judges what fits: read at one moment by gpu_budget_of().
struct gpu_budget {
  int device_id = 0;              ///< The device.
  std::size_t total_memory = 0;   ///< Its memory in bytes.
  std::size_t free_memory = 0;    ///< Free now, as the runtime reports it.
  /// @brief Bytes a working set leaves free for the runtime, the driver's own use and other
  /// allocations (default_reserve(), or what the caller asked).
  std::size_t reserve = 0;
  /// @brief Managed bytes this copy of unimem moved to the GPU (its prefetches, tags and
  /// windows; not faults, not raw prefetches, and frees are not seen), since the program started.
  std::uint64_t moved_to_gpu = 0;
  /// @brief Managed bytes it moved from the GPU back to the host (where it knew the source).
  std::uint64_t moved_to_host = 0;
  /// @brief The largest range unimem placed on the GPU (from 256 MiB and 1/16 of its memory up;
  /// 0: none) and the GPU's free memory just before (the range's own pages may have been there).
  std::size_t largest_placed = 0;
  std::size_t free_before_largest = 0;  ///< The free memory when largest_placed was placed.

  /// @brief free_memory - reserve: the most a working set not yet on the GPU may take.
  [[nodiscard]] constexpr std::size_t usable() const noexcept {
    return free_memory > reserve ? free_memory - reserve : 0;
  }
  /// @brief Whether a working set of `bytes`, of which `resident` are on the GPU already, stays
  /// on it: bytes - resident <= usable().
  [[nodiscard]] constexpr bool fits(std::size_t bytes, std::size_t resident = 0) const noexcept {
    return bytes <= resident || bytes - resident <= usable();
  }
  /// @brief Whether largest_placed was larger than the GPU's free memory then: it could not stay
  /// resident, and kernels over all of it made the driver evict pages and fault them back (a
  /// range partly on the GPU already may be counted here though it fitted).
  [[nodiscard]] constexpr bool largest_did_not_fit() const noexcept {
    return largest_placed > free_before_largest;
  }
};

/// @brief The reserve a working set leaves free on a GPU of `total_memory` bytes:
/// max(256 MiB, 1/64 of it) (2.2 GiB on an H200): room for the runtime's and the driver's own
/// allocations, and for the kernels' stacks and the libraries' workspaces.
[[nodiscard]] constexpr std::size_t default_reserve(std::size_t total_memory) noexcept {
  return total_memory / 64 > (std::size_t{256} << 20) ? total_memory / 64
                                                      : std::size_t{256} << 20;
}

/// @brief GPU `device_id`'s budget now: free and total memory, the reserve (`reserve`, 0: the
/// default_reserve()), and what this copy of unimem moved there. One memory query (the device
/// is made current for it and restored).
/// @throws unimem::error for a device that does not exist or a failed query.
[[nodiscard]] inline gpu_budget gpu_budget_of(int device_id, std::size_t reserve = 0,
                                              call_site where = call_site::current()) {
  const device d(device_id, where);
  gpu_budget b;
  b.device_id = device_id;
  b.total_memory = d.total_memory(where);
  b.free_memory = d.free_memory(where);
  b.reserve = reserve != 0 ? reserve : default_reserve(b.total_memory);
  if (device_id < detail::ledger::devices) {
    detail::ledger::counts& c = detail::ledger::table()[device_id];
    b.moved_to_gpu = c.to_gpu.load();
    b.moved_to_host = c.to_host.load();
    b.largest_placed = static_cast<std::size_t>(c.largest.load());
    b.free_before_largest = static_cast<std::size_t>(c.largest_free.load());
  }
  return b;
}

/// @brief The host link of a GPU, as estimated: its PCIe generation's speed and its width (the
/// GPU's own capability, from sysfs on Linux), and the bandwidth that gives a direction.
struct host_link {
  double gigatransfers = 0;      ///< GT/s per lane.
  int lanes = 0;                 ///< The link's width.
  double bytes_per_second = 0;   ///< Payload bandwidth, each direction.
  /// @brief Whether the link was read (false: the runtime or the system did not say, and the
  /// figures are an assumed PCIe 4.0 x16).
  bool read = false;
};

/// @brief GPU `device_id`'s host link: read from the system (Linux sysfs, by the GPU's PCI
/// address), else an assumed PCIe 4.0 x16 (31.5 GB/s). Never throws: a runtime or system that
/// does not answer gives the assumed link.
[[nodiscard]] inline host_link host_link_of(int device_id) noexcept {
  const detail::link::estimate e = detail::link::of_device(device_id);
  return {e.gts, e.lanes, e.bytes_per_second, e.read};
}

UNIMEM_END_NAMESPACE
