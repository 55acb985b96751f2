// unimem (internal): the runtime's occupancy calculator (occupancy.hpp).
// Over the table backend.hpp writes every call once with; this folder alone names hip*/cuda*.
#pragma once

#include "backend.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
/// The occupancy calculator for `kernel` on the current device: the block size of the highest
/// occupancy (block_limit 0: no limit) and the fewest blocks reaching it everywhere. On NVIDIA a
/// template of cuda_runtime.h, which only code compiled as CUDA includes.
template <class Kernel>
result max_potential_block_size(int* min_grid, int* block, Kernel kernel, std::size_t shared_bytes,
                                int block_limit) noexcept {
#if defined(UNIMEM_DETAIL_HIP_AMD)
  return UNIMEM_DETAIL_CALL(OccupancyMaxPotentialBlockSize, min_grid, block,
                            reinterpret_cast<const void*>(kernel), shared_bytes, block_limit);
#elif defined(__CUDACC__)
  return UNIMEM_DETAIL_CALL(OccupancyMaxPotentialBlockSize, min_grid, block, kernel, shared_bytes,
                            block_limit);
#else
  static_assert(sizeof(Kernel) == 0,
                "unimem::max_potential_block_size needs the kernel compiler on NVIDIA: compile "
                "this file as CUDA, with nvcc or hipcc (unimem_gpu_target() in CMake)");
  (void)min_grid, (void)block, (void)kernel, (void)shared_bytes, (void)block_limit;
  return {error_not_supported, UNIMEM_DETAIL_RT_NAME(OccupancyMaxPotentialBlockSize)};
#endif
}
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
