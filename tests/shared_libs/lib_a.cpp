// Library A of the shared-library test (libs.hpp).
#include "libs.hpp"

namespace {
__global__ void lib_a_sum(const float* x, std::size_t n, float* sink) {
  float acc = 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    acc += x[i];
  }
  if (acc == -1.0f) *sink = acc;  // never: keeps the loads
}
}  // namespace

void lib_a_read_mostly_and_read(shared_buffer& x, unimem::stream& s) {
  unimem::advise(x, unimem::advice::read_mostly);
  // Read on the host and on the GPU: read-only copies on both sides (the case in which the
  // CUDA 13 driver lost a kernel's later writes after a discarding prefetch).
  volatile float acc = 0.0f;
  for (std::size_t i = 0; i < x.size(); i += 1024) acc = acc + x[i];
  unimem::launch(lib_a_sum, unimem::grid_for(x.size()).on(s), unimem::in(x), x.size(),
                 static_cast<float*>(nullptr));
  s.synchronize();
}

void lib_a_launch_in(shared_buffer& x, unimem::stream& s) {
  unimem::launch(lib_a_sum, unimem::grid_for(x.size()).on(s), unimem::in(x), x.size(),
                 static_cast<float*>(nullptr));
}

void lib_a_map_view(shared_buffer& x) { (void)unimem::set_intent(x.view(), unimem::intent::map); }

void lib_a_ready_view(shared_buffer& x, unimem::stream& s) {
  (void)unimem::ready_for_host(x.view().subview(0, x.size() / 2), s);
}
