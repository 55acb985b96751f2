/// @file
/// @brief pool_statistics: what a managed_pool holds and hands out (managed_pool::statistics()).
#pragma once

#include "../core/config.hpp"

#include <cstddef>

UNIMEM_BEGIN_NAMESPACE

/// @brief What a managed_pool holds and hands out, as of one moment (managed_pool::statistics()):
/// bytes_held is never below bytes_in_use.
struct pool_statistics {
  std::size_t bytes_in_use = 0;  ///< Bytes of the allocations not yet deallocated, as asked.
  std::size_t peak_bytes_in_use = 0;  ///< Most bytes_in_use since construction or reset_peak().
  /// @brief Bytes held from the runtime: allocations in use (rounded up to their blocks) and free
  /// memory kept for reuse; for the runtime's pool, its reserved memory (in its granules).
  std::size_t bytes_held = 0;
  std::size_t allocations = 0;  ///< The allocations not yet deallocated.
};

UNIMEM_END_NAMESPACE
