/// @file
/// @brief max_potential_block_size(kernel) and grid_for(kernel, n): block sizes chosen by the
/// runtime's occupancy calculator, on CUDA and HIP.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/backend/occupancy.hpp"
#include "detail/fixed_text.hpp"
#include "error.hpp"
#include "launch_config.hpp"

#include <cstddef>

UNIMEM_BEGIN_NAMESPACE

/// @brief What max_potential_block_size() finds for a kernel on the current device.
struct potential_block_size {
  /// The fewest blocks that keep the whole device at best occupancy (a grid-stride loop's grid).
  unsigned min_grid_size = 0;
  /// Threads per block for the highest occupancy: positive, a multiple of the warp size (unless
  /// the kernel or the limit allows fewer), at most the device's max_threads_per_block().
  unsigned block_size = 0;
};

namespace detail {
/// Cold path of max_potential_block_size(): the dynamic shared memory fits no block size.
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_no_block_size(
    backend::result r, std::size_t shared_bytes, call_site where)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  throw_error({backend::error_invalid_value, r.call}, where,
              fixed_text<128>("no block size fits ")
                  .append(shared_bytes)
                  .append(" bytes of dynamic shared memory per block")
                  .c_str());
}
#else
    ;
#endif
}  // namespace detail

/// @brief The block size that gives `kernel` the highest occupancy on the current device, with
/// `dynamic_shared_bytes` of dynamic shared memory per block, and the fewest blocks that reach it
/// (cudaOccupancyMaxPotentialBlockSize / hipOccupancyMaxPotentialBlockSize).
///
/// Asks the runtime at each call: call it once, outside a loop of launches. Needs the kernel
/// compiler on NVIDIA (nvcc, or hipcc over CUDA): a plain C++ file that calls it does not compile.
/// @code
///   const auto [min_grid, block] = unimem::max_potential_block_size(triad);
/// @endcode
/// @param kernel                a __global__ function (a template named with its arguments)
/// @param dynamic_shared_bytes  dynamic shared memory per block, in bytes
/// @param block_size_limit      the most threads per block to consider; 0: no limit
/// @param where                 the caller's file and line, for the error message
/// @throws unimem::error when the runtime cannot answer (no GPU), or when no block size fits
/// (too much dynamic shared memory).
template <class... Params>
potential_block_size max_potential_block_size(void (*kernel)(Params...),
                                              std::size_t dynamic_shared_bytes = 0,
                                              unsigned block_size_limit = 0,
                                              call_site where = call_site::current()) {
  int min_grid = 0;
  int block = 0;
  const detail::backend::result r = detail::backend::max_potential_block_size(
      &min_grid, &block, kernel, dynamic_shared_bytes, static_cast<int>(block_size_limit));
  detail::check(r, where);
  if (block <= 0) detail::throw_no_block_size(r, dynamic_shared_bytes, where);
  return {min_grid > 0 ? static_cast<unsigned>(min_grid) : 0u, static_cast<unsigned>(block)};
}

/// @brief grid_for(n, block) with the block of max_potential_block_size(kernel,
/// dynamic_shared_bytes), for one element per thread (`if (i < n)`); n = 0 gives an empty grid.
/// Asks the runtime at each call: keep the configuration where launches repeat.
/// @code
///   unimem::launch(triad, unimem::grid_for(triad, n), a, b, c, scalar, n);
/// @endcode
/// @throws unimem::error as max_potential_block_size() does.
/// @throws unimem::length_error when n needs more than 2^31 - 1 blocks (use a grid-stride
/// loop, with max_potential_block_size()'s min_grid_size blocks).
template <class... Params>
launch_config grid_for(void (*kernel)(Params...), std::size_t n,
                       std::size_t dynamic_shared_bytes = 0,
                       call_site where = call_site::current()) {
  const potential_block_size p = max_potential_block_size(kernel, dynamic_shared_bytes, 0, where);
  return grid_for(n, p.block_size).with_shared_bytes(dynamic_shared_bytes);
}

UNIMEM_END_NAMESPACE
