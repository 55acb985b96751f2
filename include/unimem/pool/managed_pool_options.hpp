/// @file
/// @brief managed_pool_options: how a managed_pool is made (<unimem/pool/managed_pool.hpp>).
#pragma once

#include "../core/config.hpp"

#include <cstddef>
#include <limits>

UNIMEM_BEGIN_NAMESPACE

/// @brief How a managed_pool is made (see managed_pool's constructors).
struct managed_pool_options {
  /// @brief gpu_budget's value for "the GPU's free memory when the pool is made, less
  /// gpu_budget_margin" (one memory query, at construction).
  static constexpr std::size_t gpu_free_memory = std::numeric_limits<std::size_t>::max();
  /// @brief gpu_budget_margin's value for default_reserve() of the GPU's memory
  /// (<unimem/placement/budget.hpp>: max(256 MiB, 1/64 of it), 2.2 GiB on an H200).
  static constexpr std::size_t default_margin = std::numeric_limits<std::size_t>::max();

  /// @brief The bytes the pool may hold from the runtime (in use and free) before it returns free
  /// memory on its own: the runtime's pool at each synchronisation, the caching allocator when it
  /// must ask the runtime for new memory (the blocks whose frees have completed). Default: no
  /// limit (free memory is kept until trim(), trim_to() or the pool's end); the runtime's own, 0,
  /// frees at every synchronisation.
  std::size_t release_threshold = std::numeric_limits<std::size_t>::max();
  /// @brief Use the runtime's pool of managed memory where there is one (CUDA 13 runtime and
  /// driver); false: unimem's caching allocator everywhere (to compare, or for one behaviour).
  bool use_runtime_pool = true;
  /// @brief The GPU budget (issue 51; opt-in): the bytes of managed memory the pool may place on
  /// its GPU. A new block that would take the pool's GPU blocks past it is placed on the host
  /// instead (preferred location host, accessed by the pool's GPU: kernels read and write it
  /// over the link, and nothing migrates or thrashes), and pool_statistics says how many bytes
  /// are in each place. 0 (the default): no budget, every block is ordinary managed memory.
  /// gpu_free_memory: the GPU's free memory when the pool is made, less gpu_budget_margin (the
  /// budget is not measured again: memory others take on the GPU later is not seen). Any other
  /// value: that many bytes. Ignored on a GPU whose managed memory does not migrate (an APU,
  /// AMD without XNACK): statistics() then reports no budget. docs/architecture.md, "The GPU
  /// budget", says which blocks count and why it is not the default.
  std::size_t gpu_budget = 0;
  /// @brief What a measured budget (gpu_free_memory) leaves free on the GPU for the runtime,
  /// the driver, other allocations and the kernels: bytes, or default_margin.
  std::size_t gpu_budget_margin = default_margin;
};

UNIMEM_END_NAMESPACE
