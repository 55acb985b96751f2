// The consumer project's program: a kernel over a managed buffer, or the no-GPU message.
#include <unimem/unimem.hpp>

#include <cstdio>

__global__ void consumer_square(int* v, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) v[i] *= v[i];
}

int main() {
  std::printf("backend %s\n", unimem::backend_name());
  if (unimem::device_count() == 0) {
    std::printf("consumer: OK (no GPU here: built, linked and ran)\n");
    return 0;
  }
  unimem::managed_buffer<int> v{1, 2, 3, 4};
  unimem::launch(consumer_square, unimem::grid_for(v.size()), unimem::inout(v), v.size());
  unimem::ready_for_host(v);
  const bool ok = v[0] == 1 && v[1] == 4 && v[2] == 9 && v[3] == 16;
  std::printf("consumer: %s (%d %d %d %d)\n", ok ? "OK" : "WRONG", v[0], v[1], v[2], v[3]);
  return ok ? 0 : 1;
}
