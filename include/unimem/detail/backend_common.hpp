// unimem: backend-neutral pieces shared by backend_hip.hpp and backend_cuda.hpp.
// Included from those files inside the ABI namespace; not a public header.
#pragma once

#include <cstddef>
#include <string>

/// Wraps one native call into a backend::result that remembers the call's text.
#define UNIMEM_DETAIL_NATIVE(...) \
  ::unimem::detail::backend::result { (__VA_ARGS__), #__VA_ARGS__ }

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {

/// The outcome of one runtime call: its native status and the call's source text.
template <class Status>
struct basic_result {
  Status code;
  const char* call;
};

/// Device attributes unimem reads; each backend maps them onto its own enumeration.
enum class device_attribute {
  warp_size,
  multiprocessors,
  max_threads_per_block,
  max_shared_memory_per_block,
  max_grid_dim_x,
  managed_memory,
  concurrent_managed_access,
  pageable_memory_access,
};

/// What one properties query returns.
struct native_properties {
  std::string name;
  std::string architecture;  // sm_90, gfx90a:sramecc+:xnack-
  std::size_t total_memory = 0;
  int major = 0;
  int minor = 0;
  int pci_domain = 0;
  int pci_bus = 0;
  int pci_device = 0;
};

/// A three-component extent in the layout of the runtimes' dim3.
struct extent3 {
  unsigned x, y, z;
};

}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
