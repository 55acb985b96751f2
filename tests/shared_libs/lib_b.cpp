// Library B of the shared-library test (libs.hpp).
#include "libs.hpp"

namespace {
__global__ void lib_b_fill(float* x, std::size_t n, float value) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    x[i] = value;
  }
}
__global__ void lib_b_read(const float* x, std::size_t n, float* sink) {
  float acc = 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    acc += x[i];
  }
  if (acc == -1.0f) *sink = acc;
}
}  // namespace

void lib_b_launch_out(shared_buffer& x, float value, unimem::stream& s) {
  unimem::launch(lib_b_fill, unimem::grid_for(x.size()).on(s), unimem::out(x), x.size(), value);
}

void lib_b_launch_in(shared_buffer& x, unimem::stream& s) {
  unimem::launch(lib_b_read, unimem::grid_for(x.size()).on(s), unimem::in(x), x.size(),
                 static_cast<float*>(nullptr));
}

unimem::intent lib_b_get_intent(const shared_buffer& x) { return unimem::get_intent(x); }
