#include "square.hpp"

#include <unimem/unimem.hpp>

namespace {
__global__ void square_kernel(int* v, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) v[i] *= v[i];
}
}  // namespace

void parent::square(unimem::managed_buffer<int>& values) {
  unimem::launch(square_kernel, unimem::grid_for(values.size()), unimem::inout(values),
                 values.size());
  unimem::synchronize();
}
