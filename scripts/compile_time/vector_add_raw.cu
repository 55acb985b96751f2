// vector_add_raw: examples/vector_add.cpp written against the raw runtime, as a careful user
// would without unimem: managed allocations, a <<<>>> launch, every call checked. It is the
// baseline scripts/compile_time.sh compares the vector_add example with; same program, same
// output, compiled with the same flags.
//
// Compiles as CUDA (nvcc) and as HIP (hipcc on AMD; HIP_PLATFORM=nvidia hipcc with
// -DUNIMEM_RAW_HIP, since hipcc on NVIDIA defines no HIP macro before the first HIP header).
#if defined(UNIMEM_RAW_HIP) || defined(__HIP__) || defined(__HIP_PLATFORM_AMD__) || \
    defined(__HIP_PLATFORM_NVIDIA__)
#include <hip/hip_runtime.h>
#define RAW(name) hip##name
#define RAW_BACKEND "HIP"
using raw_error_t = hipError_t;
using raw_device_prop_t = hipDeviceProp_t;
#else
#include <cuda_runtime.h>
#define RAW(name) cuda##name
#define RAW_BACKEND "CUDA"
using raw_error_t = cudaError_t;
using raw_device_prop_t = cudaDeviceProp;
#endif

#include <cstddef>
#include <cstdio>
#include <cstdlib>

// Prints the failed call, its error and where it happened, then leaves.
#define CHECK(call)                                                                          \
  do {                                                                                       \
    const raw_error_t status_ = (call);                                                      \
    if (status_ != RAW(Success)) {                                                           \
      std::fprintf(stderr, "vector_add: %s failed: %s (%s:%d)\n", #call,                     \
                   RAW(GetErrorString)(status_), __FILE__, __LINE__);                        \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

__global__ void vector_add(const float* a, const float* b, float* c, std::size_t n) {
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  int devices = 0;
  if (RAW(GetDeviceCount)(&devices) != RAW(Success) || devices == 0) {
    (void)RAW(GetLastError)();  // clear the error a missing driver or device leaves behind
    std::fprintf(stderr, "vector_add: no GPU was found; this example needs one.\n");
    return 2;
  }

  const std::size_t n = 1 << 20;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK(RAW(MallocManaged)(&a, n * sizeof(float)));
  CHECK(RAW(MallocManaged)(&b, n * sizeof(float)));
  CHECK(RAW(MallocManaged)(&c, n * sizeof(float)));
  for (std::size_t i = 0; i < n; ++i) {  // CPU writes
    a[i] = float(i);
    b[i] = 2.0f * i;
    c[i] = 0.0f;
  }

  const unsigned block = 256;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  vector_add<<<grid, block>>>(a, b, c, n);
  CHECK(RAW(GetLastError)());
  CHECK(RAW(DeviceSynchronize)());
  std::printf("c[10] = %g\n", c[10]);  // CPU reads, no copy anywhere

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (c[i] != 3.0f * i) {
      if (wrong++ < 5) std::fprintf(stderr, "c[%zu] = %g, expected %g\n", i, c[i], 3.0f * i);
    }
  }
  int result = 0;
  if (wrong != 0) {
    std::fprintf(stderr, "vector_add: FAILED, %zu of %zu elements wrong\n", wrong, n);
    result = 1;
  } else {
    int device = 0;
    raw_device_prop_t prop{};
    CHECK(RAW(GetDevice)(&device));
    CHECK(RAW(GetDeviceProperties)(&prop, device));
    std::printf("vector_add: all %zu elements correct on %s (%s)\n", n, prop.name, RAW_BACKEND);
  }
  CHECK(RAW(Free)(a));
  CHECK(RAW(Free)(b));
  CHECK(RAW(Free)(c));
  return result;
}
