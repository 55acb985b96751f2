// A .hip file compiled by CMake's HIP language, with a kernel over a managed buffer.
#include <unimem/unimem.hpp>

#include <cstdio>

int host_only_device_count();  // host_only.cpp: plain C++, the host API only

__global__ void hip_consumer_square(int* v, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) v[i] *= v[i];
}

int main() {
  std::printf("backend %s, %d GPU(s) seen from plain C++\n", unimem::backend_name(),
              host_only_device_count());
  if (unimem::device_count() == 0) {
    std::printf("hip_consumer: OK (no GPU here: built, linked and ran)\n");
    return 0;
  }
  unimem::managed_buffer<int> v{1, 2, 3, 4};
  unimem::launch(hip_consumer_square, unimem::grid_for(v.size()), unimem::inout(v), v.size());
  unimem::ready_for_host(v);
  const bool ok = v[0] == 1 && v[1] == 4 && v[2] == 9 && v[3] == 16;
  std::printf("hip_consumer: %s (%d %d %d %d)\n", ok ? "OK" : "WRONG", v[0], v[1], v[2], v[3]);
  return ok ? 0 : 1;
}
