/// @file
/// @brief pool_statistics: what a managed_pool holds and hands out (managed_pool::statistics()).
#pragma once

#include "../core/config.hpp"

#include <cstddef>

UNIMEM_BEGIN_NAMESPACE

/// @brief What a managed_pool holds and hands out, as of one moment (managed_pool::statistics()):
/// bytes_held is never below bytes_in_use, nor host_bytes_held below host_bytes_in_use.
///
/// Regimes (issue 51): a pool with a GPU budget (managed_pool_options::gpu_budget) places the
/// blocks past it on the host (preferred location host, accessed by its GPU); the host_ figures
/// count those, the gpu_ ones the others (ordinary managed memory, which migrates to the GPU
/// that touches it). Without a budget every block is ordinary (the host_ figures are 0).
struct pool_statistics {
  std::size_t bytes_in_use = 0;  ///< Bytes of the allocations not yet deallocated, as asked.
  std::size_t peak_bytes_in_use = 0;  ///< Most bytes_in_use since construction or reset_peak().
  /// @brief Bytes held from the runtime: allocations in use (rounded up to their blocks) and free
  /// memory kept for reuse; for the runtime's pool, its reserved memory (in its granules).
  std::size_t bytes_held = 0;
  std::size_t allocations = 0;  ///< The allocations not yet deallocated.
  /// @brief Of bytes_in_use: in blocks placed on the host by the GPU budget.
  std::size_t host_bytes_in_use = 0;
  /// @brief Of bytes_held: blocks placed on the host by the GPU budget, in use and free.
  std::size_t host_bytes_held = 0;
  /// @brief Whether the pool has a GPU budget (asked for, and its GPU's managed memory migrates).
  bool has_gpu_budget = false;
  /// @brief The GPU budget in bytes (measured when the pool was made, where asked); 0 without.
  std::size_t gpu_budget = 0;

  /// @brief Of bytes_in_use: in ordinary blocks (those the budget counts).
  [[nodiscard]] constexpr std::size_t gpu_bytes_in_use() const noexcept {
    return bytes_in_use - host_bytes_in_use;
  }
  /// @brief Of bytes_held: ordinary blocks, in use and free.
  [[nodiscard]] constexpr std::size_t gpu_bytes_held() const noexcept {
    return bytes_held - host_bytes_held;
  }
};

UNIMEM_END_NAMESPACE
