// warp::static_size in AMD device code: a constant where the compiler states the wavefront
// size (clang <= 21), a compile error with unimem's message where it cannot (clang >= 22).
// Built by ctest (tests/CMakeLists.txt) with the case that compiler must give.
#include <unimem/warp.hpp>

__global__ void warp_static_size_kernel(int* out) {
  int per_lane[unimem::warp::static_size] = {};
  out[0] = per_lane[0] + static_cast<int>(sizeof(per_lane) / sizeof(int));
}

int main() {
  (void)&warp_static_size_kernel;
  return 0;
}
