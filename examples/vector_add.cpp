// vector_add: the seed program on unimem. CPU writes managed buffers, a GPU adds them, the CPU
// reads the result, with no copy anywhere. Builds unchanged with hipcc (AMD),
// HIP_PLATFORM=nvidia hipcc, and nvcc.
#include <unimem/device.hpp>          // device_count(), device, synchronize()
#include <unimem/launch.hpp>          // launch(), grid_for()
#include <unimem/managed_buffer.hpp>  // managed_buffer

#include <cstdio>
#include <cstdlib>

__global__ void vector_add(const float* a, const float* b, float* c, std::size_t n) {
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  if (unimem::device_count() == 0) {
    std::fprintf(stderr, "vector_add: no GPU was found; this example needs one (unimem-info "
                         "says why).\n");
    return 2;
  }
  try {
    const std::size_t n = 1 << 20;
    unimem::managed_buffer<float> a(n), b(n), c(n);  // managed allocations
    for (std::size_t i = 0; i < n; ++i) {            // CPU writes
      a[i] = float(i);
      b[i] = 2.0f * i;
    }
    unimem::launch(vector_add, unimem::grid_for(n), a, b, c, n);  // buffers go in as pointers
    unimem::synchronize();
    std::printf("c[10] = %g\n", c[10]);  // CPU reads, no copy anywhere

    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (c[i] != 3.0f * i) {
        if (wrong++ < 5) std::fprintf(stderr, "c[%zu] = %g, expected %g\n", i, c[i], 3.0f * i);
      }
    }
    if (wrong != 0) {
      std::fprintf(stderr, "vector_add: FAILED, %zu of %zu elements wrong\n", wrong, n);
      return 1;
    }
    std::printf("vector_add: all %zu elements correct on %s (%s)\n", n,
                unimem::device::current().name(), unimem::backend_name());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vector_add: %s\n", e.what());
    return 1;
  }
}
