/// @file
/// @brief managed_pool_options: how a managed_pool is made (<unimem/pool/managed_pool.hpp>).
#pragma once

#include "../core/config.hpp"

#include <cstddef>
#include <limits>

UNIMEM_BEGIN_NAMESPACE

/// @brief How a managed_pool is made (see managed_pool's constructors).
struct managed_pool_options {
  /// @brief The bytes the pool may hold from the runtime (in use and free) before it returns free
  /// memory on its own: the runtime's pool at each synchronisation, the caching allocator when it
  /// must ask the runtime for new memory (the blocks whose frees have completed). Default: no
  /// limit (free memory is kept until trim(), trim_to() or the pool's end); the runtime's own, 0,
  /// frees at every synchronisation.
  std::size_t release_threshold = std::numeric_limits<std::size_t>::max();
  /// @brief Use the runtime's pool of managed memory where there is one (CUDA 13 runtime and
  /// driver); false: unimem's caching allocator everywhere (to compare, or for one behaviour).
  bool use_runtime_pool = true;
};

UNIMEM_END_NAMESPACE
