/// @file
/// @brief report(), what unimem-info prints: the backend, the runtime's and driver's versions,
/// every GPU with its managed-memory capabilities and regime, what fits on it (its free memory,
/// the working set that stays, the host link) and what unimem placed there, and where placement
/// records learn what the host touched. Reads (sysfs for the link); decides and opens nothing (no
/// tracker is attached, no device left current). runtime_version(), driver_version().
#pragma once

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/detail/backend/versions.hpp"
#include "../core/version.hpp"
#include "../placement/budget.hpp"
#include "../placement/detail/host_access.hpp"
#include "regime.hpp"

#include <cstdio>
#include <cstring>
#include <string>

UNIMEM_BEGIN_NAMESPACE

namespace detail {
/// The version the runtime (or, with `driver`, the driver) reports, as text.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE std::string version_text(bool driver)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  int v = 0;
  const backend::result r = driver ? backend::driver_version(&v) : backend::runtime_version(&v);
  if (r.code == backend::success && v > 0) return backend::version_string(v).c_str();
  backend::forget_if_last(r.code);
  return driver ? "none" : backend::version_string(backend::linked_runtime_version()).c_str();
}
#else
    ;
#endif
/// report()'s lines on what fits on GPU `id`: its budget, its host link, what unimem moved there,
/// and the largest range it placed there where that did not fit.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE void append_budget(std::string& s, int id)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  constexpr double gib = 1024.0 * 1024 * 1024;
  const gpu_budget b = gpu_budget_of(id);
  const host_link l = host_link_of(id);
  char text[768];
  int n = std::snprintf(text, sizeof text,
                        "  what fits: %.1f GiB free, %.1f GiB kept in reserve: a working set up to "
                        "%.1f GiB stays on the GPU; a larger one, walked in unimem::windows, "
                        "streams over the host link\n  host link: PCIe %.1f GT/s x%d, %.1f GB/s "
                        "a direction (%s)\n  managed memory unimem moved here: %.1f GiB, back "
                        "to the host: %.1f GiB (this copy of unimem's prefetches, tags and "
                        "windows; faults and frees are not seen)\n",
                        static_cast<double>(b.free_memory) / gib,
                        static_cast<double>(b.reserve) / gib, static_cast<double>(b.usable()) / gib,
                        l.gigatransfers, l.lanes, l.bytes_per_second / 1e9,
                        l.read ? "read from the system" : "assumed: the system did not say",
                        static_cast<double>(b.moved_to_gpu) / gib,
                        static_cast<double>(b.moved_to_host) / gib);
  if (n > 0 && b.largest_placed != 0) {
    const int used = n < static_cast<int>(sizeof text) ? n : static_cast<int>(sizeof text) - 1;
    std::snprintf(text + used, sizeof text - static_cast<std::size_t>(used),
                  "  the largest range or working set unimem placed here: %.1f GiB, with %.1f GiB "
                  "free: %s\n",
                  static_cast<double>(b.largest_placed) / gib,
                  static_cast<double>(b.free_before_largest) / gib,
                  b.largest_did_not_fit()
                      ? "larger than what fits: kernels over all of it fault pages in and out "
                        "(walk it in unimem::windows, docs/pitfalls.md section 19)"
                      : "it fitted");
  }
  s.append(text);
}
#else
    ;
#endif
}  // namespace detail

/// @brief The runtime's version, e.g. "13.0" or "6.2.41133" (the CUDA runtime's under HIP on
/// NVIDIA); where it cannot be asked (CUDA 11 without a driver or GPU), the linked runtime's.
inline std::string runtime_version() { return detail::version_text(false); }

/// @brief The driver's version, or "none" when no driver is installed.
inline std::string driver_version() { return detail::version_text(true); }

/// @brief A text report of the backend, versions and every GPU with its managed-memory
/// capabilities and memory bus; with no GPU, one line saying so and why.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE std::string report()
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  std::string s("unimem " UNIMEM_VERSION_STRING ", backend ");
  s.append(backend_name()).append(" (headers ").append(detail::backend::compiled_version().c_str());
  s.append("), runtime ").append(runtime_version()).append(", driver ").append(driver_version());
  s.append("\n");
  int raw = 0;
  const detail::backend::result r = detail::backend::device_count(&raw);
  const int n = device_count();
  if (n == 0) {
    s.append("no GPU was found");
    if (r.code != detail::backend::success) {
      const char* name = detail::backend::error_name(r.code);
      const char* what = detail::backend::error_string(r.code);
      s.append(" (").append(r.call).append(": ").append(name);
      if (std::strcmp(name, what) != 0) s.append(": ").append(what);
      s.append(")");
    }
    return s.append("\n").append(detail::host_access::describe().text);
  }
  constexpr double gib = 1024.0 * 1024 * 1024;
  const auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  for (int i = 0; i < n; ++i) {
    const device_properties p = device(i).properties();
    char text[1024];  // name and architecture are at most 255 characters each
    std::snprintf(text, sizeof text,
                  "device %d: %s, %s, %d multiprocessors, warp size %d, memory %.1f GiB free of "
                  "%.1f GiB\n  memory bus: %d bits at %d kHz, peak bandwidth %.1f GB/s\n"
                  "  managed memory: %s, concurrent managed access: %s, pageable memory access: "
                  "%s, migrates on demand: %s\n  unified-memory regime: %s (uses host page "
                  "tables: %s, integrated: %s)\n",
                  i, p.name, p.architecture, p.multiprocessors, p.warp_size,
                  static_cast<double>(p.free_memory) / gib,
                  static_cast<double>(p.total_memory) / gib,
                  p.memory_bus_width_bits, p.memory_clock_khz, p.peak_bandwidth_gbps(),
                  yes_no(p.managed_memory), yes_no(p.concurrent_managed_access),
                  yes_no(p.pageable_memory_access), yes_no(p.migrates_on_demand),
                  detail::text_of(p.regime).name,
                  yes_no(p.pageable_memory_access_uses_host_page_tables), yes_no(p.integrated));
    s.append(text);
    detail::append_budget(s, i);
  }
  s.append(detail::host_access::describe().text);
  return s;
}
#else
    ;
#endif
UNIMEM_END_NAMESPACE
