// The warp size unimem uses in device code, checked for every GPU target of the build while it
// is built: a mismatch stops the build. On AMD the wavefront size is not a constant expression
// for every compiler (clang >= 22), so the check is made on the code the compiler generates for
// each target: a call to a function that is never defined survives only where the compared
// values differ, and then the device link fails naming that function. Built at -O2 (the
// comparison must be folded). ctest runs the program, which prints what was checked.
#include <unimem/warp.hpp>

#include <cstdio>

#if defined(UNIMEM_DETAIL_HIP_AMD)
// Never defined: referenced only by code that the compiler keeps when a check fails.
extern "C" __device__ void unimem_warp_size_differs_from_warpSize();
extern "C" __device__ void unimem_warp_size_differs_from_the_targets_wavefront_size();

// What the ISA of each gfx family runs (unimem builds no target with -mwavefrontsize64).
#if defined(__HIP_DEVICE_COMPILE__)
#if defined(__GFX9__)
#define UNIMEM_TEST_EXPECTED_WAVE 64
#elif defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)
#define UNIMEM_TEST_EXPECTED_WAVE 32
#else
#error "warp_size_check: a gfx family this test does not know; add its wavefront size"
#endif
#endif

__global__ void warp_size_check(int* out) {
#if defined(__HIP_DEVICE_COMPILE__)
  if (unimem::warp::size() != static_cast<int>(warpSize)) unimem_warp_size_differs_from_warpSize();
  if (unimem::warp::size() != UNIMEM_TEST_EXPECTED_WAVE) {
    unimem_warp_size_differs_from_the_targets_wavefront_size();
  }
#if defined(UNIMEM_WARP_SIZE)
  static_assert(unimem::warp::static_size == UNIMEM_TEST_EXPECTED_WAVE,
                "warp::static_size is not the target's wavefront size");
#endif
#endif
  out[0] = unimem::warp::size();
}
#else
static_assert(unimem::warp::size() == 32 && unimem::warp::static_size == 32,
              "the warp size on NVIDIA is 32");
__global__ void warp_size_check(int* out) { out[0] = unimem::warp::size(); }
#endif

int main() {
  (void)&warp_size_check;
#if defined(UNIMEM_DETAIL_HIP_AMD)
  std::printf("warp_size_check: every AMD target of this binary uses its own wavefront size "
              "(gfx9: 64, gfx10-12: 32), equal to warpSize (checked when it was built)\n");
#else
  std::printf("warp_size_check: warp size 32 (NVIDIA)\n");
#endif
  return 0;
}
