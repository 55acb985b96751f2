/// @file
/// @brief warp::reduce() and block::reduce() (device code), with the operators plus and maximum;
/// correct for any block and warp size.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "warp.hpp"

UNIMEM_BEGIN_NAMESPACE
/// @brief a + b, the default reduction operator.
struct plus {
  /// @brief a + b.
  template <class T>
  UNIMEM_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const {
    return a + b;
  }
};
/// @brief The larger of a and b.
struct maximum {
  /// @brief b when a < b, else a.
  template <class T>
  UNIMEM_HOST_DEVICE constexpr T operator()(const T& a, const T& b) const {
    return a < b ? b : a;
  }
};

#if defined(UNIMEM_DEVICE_COMPILER)
namespace warp {
/// @brief The threads of the calling warp that exist (a block's last warp may be partial).
__device__ inline int lanes_in_this_warp() {
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int w = size();
  const unsigned first = linear - linear % static_cast<unsigned>(w);
  const unsigned left = threads - first;
  return left < static_cast<unsigned>(w) ? static_cast<int>(left) : w;
}

/// @brief Reduces v over the lanes of the calling warp with op (associative and commutative);
/// the result is in lane 0. Every existing lane of the warp must call it (no divergence).
template <class T, class Op = plus>
__device__ inline T reduce(T v, Op op = {}) {
  const int w = size();
  const int lanes = lanes_in_this_warp();
  const lane_mask_t mask = first_lanes(lanes);
  const int lane = lane_id();
  for (int offset = w / 2; offset > 0; offset /= 2) {
    const T other = shfl_down(v, static_cast<unsigned>(offset), w, mask);
    if (lane + offset < lanes) v = op(v, other);
  }
  return v;
}
}  // namespace warp

/// @brief Block-level code: reduce() over all threads of a block.
namespace block {
/// @brief Reduces v over all threads of the block with op (associative and commutative); every
/// thread must call it and gets the result. Synchronises the block twice; uses 32 (1024 /
/// warp::min_size) elements of static shared memory.
template <class T, class Op = plus>
__device__ inline T reduce(T v, Op op = {}) {
  constexpr int max_warps = 1024 / warp::min_size;
  __shared__ T partial[max_warps];
  __shared__ T result;
  const int ws = warp::size();
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int warp_index = static_cast<int>(linear / static_cast<unsigned>(ws));
  const int warps = static_cast<int>((threads + static_cast<unsigned>(ws) - 1) / static_cast<unsigned>(ws));

  v = warp::reduce(v, op);
  if (warp::lane_id() == 0) partial[warp_index] = v;
  __syncthreads();
  if (warp_index == 0) {
    // The first warp reduces the partials; it is a full warp whenever there are several.
    const int lane = warp::lane_id();
    T w = lane < warps ? partial[lane] : partial[0];
    const int lanes = warp::lanes_in_this_warp();
    const int count = warps < lanes ? warps : lanes;
    for (int offset = ws / 2; offset > 0; offset /= 2) {
      const T other =
          warp::shfl_down(w, static_cast<unsigned>(offset), ws, warp::first_lanes(lanes));
      if (lane + offset < count) w = op(w, other);
    }
    if (lane == 0) result = w;
  }
  __syncthreads();
  return result;
}
}  // namespace block
#endif  // UNIMEM_DEVICE_COMPILER
UNIMEM_END_NAMESPACE
