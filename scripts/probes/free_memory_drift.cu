// free_memory_drift.cu: is GPU free memory a leak detector? (issue 13, the flaky stress test)
// Raw CUDA, no unimem: 8 host threads, each with its own non-blocking stream, do R rounds of
// allocate, fill by a kernel, wait, free, and the GPU's free memory (cudaMemGetInfo) is read
// after each of several runs, again after 100 ms and after 1 s. Every allocation is freed, so
// whatever free memory is lost is kept by the runtime or the driver, not leaked by the program.
// Three kinds of memory: managed prefetched to the GPU and back (what StressGpu does), managed
// touched by the GPU only, and device memory (cudaMalloc).
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/free_memory_drift.cu -o drift && ./drift [R] [runs]
#include "probe.hpp"

#include <atomic>
#include <string>

__global__ void fill(int* p, std::size_t n, int base) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = base + static_cast<int>(i);
}

enum class kind { managed_prefetched, managed_gpu_only, device };

long long free_bytes() {
  std::size_t f = 0, t = 0;
  CK(cudaMemGetInfo(&f, &t));
  return static_cast<long long>(f);
}

void run(kind k, int threads, int rounds) {
  std::vector<std::thread> pool;
  std::atomic<long long> wrong{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      cudaStream_t s;
      CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      cudaMemLocation gpu{cudaMemLocationTypeDevice, 0}, host{cudaMemLocationTypeHost, 0};
      for (int r = 0; r < rounds; ++r) {
        const std::size_t n = 1000 + static_cast<std::size_t>(t * 37 + r % 101);
        int* p = nullptr;
        if (k == kind::device) {
          CK(cudaMalloc(&p, n * sizeof(int)));
        } else {
          CK(cudaMallocManaged(&p, n * sizeof(int)));
        }
        if (k == kind::managed_prefetched) CK(cudaMemPrefetchAsync(p, n * sizeof(int), gpu, 0, s));
        fill<<<(n + 255) / 256, 256, 0, s>>>(p, n, r);
        if (k == kind::managed_prefetched) CK(cudaMemPrefetchAsync(p, n * sizeof(int), host, 0, s));
        CK(cudaStreamSynchronize(s));
        if (k != kind::device) wrong += p[n - 1] != r + static_cast<int>(n - 1);
        CK(cudaFree(p));
      }
      CK(cudaStreamDestroy(s));
    });
  }
  for (std::thread& th : pool) th.join();
  CK(cudaDeviceSynchronize());
  if (wrong.load() != 0) std::printf("  %lld wrong values\n", wrong.load());
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 6;
  CK(cudaFree(nullptr));
  const char* names[] = {"managed, prefetched to the GPU and back", "managed, GPU only",
                         "device memory (cudaMalloc)"};
  for (kind k : {kind::device, kind::managed_gpu_only, kind::managed_prefetched}) {
    std::printf("%s: 8 threads x %d rounds per run; free memory lost since the start (MiB): "
                "right after / 100 ms / 1 s\n",
                names[static_cast<int>(k)], rounds);
    const long long start = free_bytes();
    for (int i = 0; i < runs; ++i) {
      const auto t0 = clock_type::now();
      run(k, 8, rounds);
      const double ms = ms_since(t0);
      const long long now = free_bytes();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const long long later = free_bytes();
      std::this_thread::sleep_for(std::chrono::milliseconds(900));
      const long long latest = free_bytes();
      std::printf("  run %d (%.0f ms): %.1f / %.1f / %.1f\n", i + 1, ms, (start - now) / 1048576.0,
                  (start - later) / 1048576.0, (start - latest) / 1048576.0);
    }
  }
  return 0;
}
