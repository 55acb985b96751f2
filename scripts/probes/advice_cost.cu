// advice_cost: what the "keep it on the host, let the GPU map it" intent costs (issue 12, item 1).
// Raw CUDA, no unimem.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/advice_cost.cu -o advice_cost && ./advice_cost
//
// For ranges of 4 MiB, 64 MiB and 1 GiB of CPU-written managed memory: the host time of
// cudaMemAdvise(SetPreferredLocation host) + cudaMemAdvise(SetAccessedBy GPU) the first time,
// again on a range already advised (what re-advising on every launch would cost), of the two
// queries that could tell that a range is already advised (cudaMemRangeGetAttribute), and of
// undoing it (Unset both). Then a kernel that reads a 1 GiB range k times (k = 1, 2, 4, 8, 16)
// with the range mapped (advised as above, pages on the host) against moved (prefetched to the
// GPU first, prefetch time included): where mapping stops paying. Medians of 7.
#include "probe.hpp"

#include <cstring>

__global__ void read_k(const float* in, std::size_t n, int k, float* sink) {
  float acc = 0.0f;
  for (int pass = 0; pass < k; ++pass) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
      acc += in[i];
    }
  }
  if (acc == 12345.0f) *sink = acc;  // keeps the loads
}

int main() {
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("advice_cost: medians of 7, host time of each call\n");
  std::printf("%-10s %12s %12s %12s %12s\n", "range", "advise", "re-advise", "query", "unadvise");
  for (std::size_t mib : {4, 64, 1024}) {
    const std::size_t bytes = mib << 20;
    std::vector<double> first, again, query, undo;
    for (int r = 0; r < 7; ++r) {
      char* p = nullptr;
      CK(cudaMallocManaged(&p, bytes));
      std::memset(p, 1, bytes);
      auto t0 = clock_type::now();
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, on_host()));
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseSetAccessedBy, on_device(0)));
      first.push_back(us_since(t0));
      t0 = clock_type::now();
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, on_host()));
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseSetAccessedBy, on_device(0)));
      again.push_back(us_since(t0));
      t0 = clock_type::now();
      int preferred = -2;
      int accessed[4] = {-2, -2, -2, -2};
      CK(cudaMemRangeGetAttribute(&preferred, sizeof preferred,
                                  cudaMemRangeAttributePreferredLocation, p, bytes));
      CK(cudaMemRangeGetAttribute(accessed, sizeof accessed, cudaMemRangeAttributeAccessedBy, p,
                                  bytes));
      query.push_back(us_since(t0));
      if (preferred != cudaCpuDeviceId || accessed[0] != 0) {
        std::printf("unexpected attributes: preferred %d, accessed-by %d\n", preferred, accessed[0]);
      }
      t0 = clock_type::now();
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseUnsetPreferredLocation, on_host()));
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseUnsetAccessedBy, on_device(0)));
      undo.push_back(us_since(t0));
      CK(cudaFree(p));
    }
    char label[32];
    std::snprintf(label, sizeof label, "%zu MiB", mib);
    std::printf("%-10s %9.1f us %9.1f us %9.1f us %9.1f us\n", label, median(first), median(again),
                median(query), median(undo));
  }

  const std::size_t bytes = std::size_t(1) << 30, n = bytes / sizeof(float);
  float* sink = nullptr;
  CK(cudaMalloc(&sink, sizeof(float)));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::printf("\nkernel reads 1 GiB k times: mapped (host-preferred, accessed-by GPU) vs moved "
              "(prefetch to the GPU included), ms\n%-4s %10s %10s %8s\n", "k", "mapped", "moved",
              "ratio");
  for (int k : {1, 2, 4, 8, 16}) {
    std::vector<double> mapped, moved;
    for (int r = 0; r < 7; ++r) {
      float* p = nullptr;
      CK(cudaMallocManaged(&p, bytes));
      for (std::size_t i = 0; i < n; i += 1024) p[i] = 1.0f;
      std::memset(p, 0, bytes);
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, on_host()));
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseSetAccessedBy, on_device(0)));
      CK(cudaEventRecord(a));
      read_k<<<sms * 8, 256>>>(p, n, k, sink);
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float t = 0;
      CK(cudaEventElapsedTime(&t, a, b));
      mapped.push_back(t);
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseUnsetPreferredLocation, on_host()));
      CK(cudaMemAdvise(p, bytes, cudaMemAdviseUnsetAccessedBy, on_device(0)));
      std::memset(p, 0, bytes);  // back on the host
      CK(cudaEventRecord(a));
      CK(cudaMemPrefetchAsync(p, bytes, on_device(0), 0, nullptr));
      read_k<<<sms * 8, 256>>>(p, n, k, sink);
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      CK(cudaEventElapsedTime(&t, a, b));
      moved.push_back(t);
      CK(cudaFree(p));
    }
    std::printf("%-4d %10.2f %10.2f %8.2f\n", k, median(mapped), median(moved),
                median(mapped) / median(moved));
  }
  std::printf("done\n");
  return 0;
}
