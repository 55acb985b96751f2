// Plain C++ in a HIP-language project: compiled by the C++ compiler, using unimem's host API.
#include <unimem/device.hpp>

int host_only_device_count() { return unimem::device_count(); }
