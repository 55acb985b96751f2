// unimem (internal): where a GPU sits on the host's bus, for the placement layer's estimate of
// the host link (placement/detail/link.hpp). This folder alone names hip*/cuda*.
#pragma once

#include "backend.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
/// Device `id`'s PCI address, "domain:bus:device.function" (e.g. "0000:65:00.0"), into `out`.
inline result pci_bus_id(char* out, int length, int id) noexcept {
  return UNIMEM_DETAIL_CALL(DeviceGetPCIBusId, out, length, id);
}
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
