// unimem (internal): an estimate of the link between the host and a GPU, from which
// windows.hpp sizes its default window (docs/architecture.md, "Windows"). On Linux the GPU's
// own PCIe capability, as sysfs reports it (max_link_speed, max_link_width of the GPU's PCI
// function): the speed the link trains to under load (an idle GPU trains down, so the current
// speed says little). Elsewhere, or where sysfs does not answer, an assumed PCIe 4.0 x16.
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/backend/link.hpp"

#include <cstdio>
#include <cstdlib>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace link {
/// The leading number of a sysfs link speed ("32.0 GT/s PCIe", "8 GT/s", "2.5 GT/s"), in GT/s;
/// 0 where the text starts with none.
inline double parse_speed(const char* text) noexcept {
  if (text == nullptr) return 0.0;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  return end != text && v > 0.0 && v < 1e4 ? v : 0.0;
}
/// The payload bandwidth of a PCIe link, bytes a second and direction: `lanes` lanes at `gts`
/// GT/s; 8b/10b coding below 8 GT/s (PCIe 1 and 2), 128b/130b from 8 GT/s (PCIe 3 to 5), FLIT
/// mode from 64 GT/s (PCIe 6: 242 of every 256 bytes). 0 for a speed or width of none.
inline double pcie_bytes_per_second(double gts, int lanes) noexcept {
  if (!(gts > 0.0) || lanes <= 0) return 0.0;
  const double coding = gts < 8.0 ? 8.0 / 10.0 : gts < 64.0 ? 128.0 / 130.0 : 242.0 / 256.0;
  return gts * 1e9 * lanes * coding / 8.0;
}
/// What an unknown link is taken to be: PCIe 4.0 x16 (16 GT/s, 31.5 GB/s a direction).
constexpr double assumed_gts = 16.0;
constexpr int assumed_lanes = 16;

/// A link as read: speed, width and bandwidth; `read` false where the assumed one stands in.
struct estimate {
  double gts = assumed_gts;
  int lanes = assumed_lanes;
  double bytes_per_second = pcie_bytes_per_second(assumed_gts, assumed_lanes);
  bool read = false;
};

/// The first line of a small sysfs file into `out` (false where it cannot be read).
inline bool read_line(const char* path, char* out, int size) noexcept {
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  const bool ok = std::fgets(out, size, f) != nullptr;
  std::fclose(f);
  return ok;
}

/// The link of the PCI function at `address` ("0000:65:00.0"), read from sysfs under `root`
/// ("/sys/bus/pci/devices"); the assumed one where either file is missing or unreadable.
inline estimate read_sysfs(const char* root, const char* address) noexcept {
  estimate e;
  char path[256], line[64];
  std::snprintf(path, sizeof path, "%s/%s/max_link_speed", root, address);
  if (!read_line(path, line, sizeof line)) return e;
  const double gts = parse_speed(line);
  std::snprintf(path, sizeof path, "%s/%s/max_link_width", root, address);
  if (!read_line(path, line, sizeof line)) return e;
  const long lanes = std::strtol(line, nullptr, 10);
  const double bw = pcie_bytes_per_second(gts, lanes > 0 && lanes <= 64 ? int(lanes) : 0);
  if (!(bw > 0.0)) return e;
  e.gts = gts;
  e.lanes = static_cast<int>(lanes);
  e.bytes_per_second = bw;
  e.read = true;
  return e;
}

/// The link of device `id`: its PCI address from the runtime, lower-cased as sysfs names it,
/// then sysfs. A runtime that cannot say (the call failed) gives the assumed link; its status is
/// cleared so that the caller's next call does not see it.
inline estimate of_device(int id) noexcept {
  char address[32] = {};
  const backend::result r = backend::pci_bus_id(address, static_cast<int>(sizeof address) - 1, id);
  if (r.code != backend::success) {
    backend::forget_if_last(r.code);
    return estimate{};
  }
  for (char& c : address) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
#if defined(__linux__)
  return read_sysfs("/sys/bus/pci/devices", address);
#else
  return estimate{};
#endif
}
}  // namespace link
}  // namespace detail
UNIMEM_END_NAMESPACE
