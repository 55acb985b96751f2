// unimem-info: the first thing to run on a new machine. Prints the backend, the runtime and
// driver versions and, for each GPU, its name, architecture, warp size, memory (with the bus
// width, clock and peak bandwidth), what fits on it (the free memory, the largest working set
// that stays resident, the host link and the windows a larger one is walked in), managed-memory
// capabilities and unified-memory regime, with what the regime means: which memory to allocate,
// which placement hints do anything; then how placement records learn what the host touched (the
// UVM driver's events in a layout read or proven on this driver, or the page-fault count, and
// why). Without a GPU it prints one line saying so and exits 0.
#include <unimem/unimem.hpp>

#include <unimem/placement/budget.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

namespace {
double gib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024 * 1024); }
const char* yes(bool b) { return b ? "yes" : "no"; }

// Prints each line of `text` (lines separated by '\n') after `indent`.
void print_lines(const char* indent, const char* text) {
  while (*text != '\0') {
    const char* end = std::strchr(text, '\n');
    const std::size_t n = end != nullptr ? static_cast<std::size_t>(end - text) : std::strlen(text);
    std::printf("%s%.*s\n", indent, static_cast<int>(n), text);
    text += n;
    if (*text == '\n') ++text;
  }
}
}  // namespace

int main() {
  try {
    const int n = unimem::device_count();
    if (n == 0) {
      std::printf("unimem-info: no GPU found (unimem %s, backend %s, runtime %s, driver %s, "
                  "placement calls %s)\n",
                  UNIMEM_VERSION_STRING, unimem::backend_name(), unimem::runtime_version().c_str(),
                  unimem::driver_version().c_str(), unimem::detail::backend::placement_api());
      return 0;
    }
    std::printf("unimem %s\n", UNIMEM_VERSION_STRING);
    std::printf("backend            %s\n", unimem::backend_name());
    std::printf("runtime            %s\n", unimem::runtime_version().c_str());
    std::printf("driver             %s\n", unimem::driver_version().c_str());
    std::printf("placement calls    %s\n", unimem::detail::backend::placement_api());
    std::printf("GPUs               %d\n", n);
    for (const unimem::device& d : unimem::devices()) {
      const unimem::device_properties p = d.properties();
      std::printf("\n[%d] %s\n", p.device_id, p.name);
      std::printf("  architecture               %s (compute %d.%d)\n", p.architecture,
                  p.compute_major, p.compute_minor);
      std::printf("  warp size                  %d\n", p.warp_size);
      std::printf("  multiprocessors            %d\n", p.multiprocessors);
      std::printf("  max threads per block      %d\n", p.max_threads_per_block);
      std::printf("  memory                     %.1f GiB free of %.1f GiB\n", gib(p.free_memory),
                  gib(p.total_memory));
      std::printf("  memory bus                 %d bits at %.0f MHz: peak %.1f GB/s\n",
                  p.memory_bus_width_bits, p.memory_clock_khz / 1000.0, p.peak_bandwidth_gbps());
      // What fits: a working set up to the usable memory stays on the GPU; a larger one is
      // walked in windows (unimem::windows) of about 8 ms of the host link, at most a quarter of
      // the usable memory (two placed ahead, one in use, one moving out).
      const unimem::gpu_budget b = unimem::gpu_budget_of(p.device_id);
      const unimem::host_link l = unimem::host_link_of(p.device_id);
      double window = l.bytes_per_second * 0.008;
      window = std::min(std::max(window, 64.0 * (1 << 20)), 4.0 * (1u << 30));
      window = std::min(window, static_cast<double>(b.usable()) / 4);
      std::printf("  working set that fits      %.1f GiB (%.1f GiB free, %.1f GiB kept in reserve)\n",
                  gib(b.usable()), gib(b.free_memory), gib(b.reserve));
      std::printf("  host link                  PCIe %.1f GT/s x%d: %.1f GB/s a direction%s\n",
                  l.gigatransfers, l.lanes, l.bytes_per_second / 1e9,
                  l.read ? "" : " (assumed: the system did not say)");
      std::printf("  larger working sets        walked in windows of about %.0f MiB "
                  "(unimem::windows)\n",
                  window / (1 << 20));
      std::printf("  managed memory             %s\n", yes(p.managed_memory));
      std::printf("  concurrent managed access  %s\n", yes(p.concurrent_managed_access));
      std::printf("  pageable memory access     %s\n", yes(p.pageable_memory_access));
      std::printf("  uses host page tables      %s\n",
                  yes(p.pageable_memory_access_uses_host_page_tables));
      std::printf("  integrated                 %s\n", yes(p.integrated));
      std::printf("  migrates on demand         %s%s\n", yes(p.migrates_on_demand),
                  p.migrates_on_demand ? ""
                                       : "  (prefetch and advice cannot move pages here; see "
                                         "unimem::unsupported_policy)");
      std::printf("  unified-memory regime      %s\n", unimem::to_string(p.regime).c_str());
      print_lines("    ", unimem::describe(p.regime));
    }
    // How the placement records learn what the host touched, decided as a first placement would
    // (with the runtime started): the signal and why, the UVM module's version, its layout and
    // how that layout was trusted (read at the version, or proven by the self-check).
    std::printf("\nhost touches\n");
    try {
      const unimem::managed_buffer<int> started(1);
      (void)unimem::detail::host_access::now();
    } catch (const std::exception& e) {
      std::printf("  (no managed memory to start the runtime with: %s)\n", e.what());
    }
    print_lines("  ", unimem::detail::host_access::describe().text);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unimem-info: %s\n", e.what());
    return 1;
  }
}
