// Kernels that several scenarios launch. Without separate compilation a kernel must be defined
// in each translation unit that launches it: these are in an anonymous namespace, one copy
// per file that includes this header. Kernels of a single scenario live in its own file.
#pragma once

#include <unimem/unimem.hpp>

#include <cstddef>

namespace {

/// @brief c = a + b, one element per thread.
__global__ void bench_vadd(const float* a, const float* b, float* c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

}  // namespace
