// results_back: the fastest correct way for GPU-produced managed data to become CPU-readable
// (issue 12, item 3). Raw CUDA, no unimem.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/results_back.cu -o results_back
//   ./results_back [CPU threads, default 8]
//
// A kernel writes 1 GiB of floats; then the CPU threads read all of it (a sum). Each strategy is
// timed from the kernel's launch until the CPU has read everything (kernel included, since
// where the output lives changes the kernel), medians of 5:
//   explicit      device buffer, cudaMemcpy to a pinned buffer, CPU reads the pinned buffer
//   on-demand     managed on the GPU, the CPU reads and faults pages back
//   prefetch      managed on the GPU, one prefetch to the host, then the CPU reads
//   pipelined     managed on the GPU, prefetch to the host in 64 MiB chunks on one stream, an
//                 event per chunk; each CPU thread waits for a chunk's event and reads it while
//                 later chunks still move
//   read-mostly   managed on the GPU, cudaMemAdviseSetReadMostly, then the CPU reads (read
//                 faults duplicate pages instead of moving them)
//   mapped        managed, preferred location host + accessed-by the GPU before the kernel: the
//                 kernel writes over the bus into host pages, the CPU reads them where they are
#include "probe.hpp"

#include <atomic>
#include <thread>

__global__ void produce(float* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    out[i] = float(i & 1023);
  }
}

static int threads = 8;

// Every CPU thread sums its share; returns the total (checked against the expected value).
static double cpu_read(const float* p, std::size_t n) {
  std::vector<double> part(threads);
  std::vector<std::thread> t;
  for (int k = 0; k < threads; ++k) {
    t.emplace_back([=, &part] {
      double s = 0;
      for (std::size_t i = n * k / threads; i < n * (k + 1) / threads; ++i) s += p[i];
      part[k] = s;
    });
  }
  for (auto& x : t) x.join();
  double s = 0;
  for (double v : part) s += v;
  return s;
}

int main(int argc, char** argv) {
  if (argc > 1) threads = std::max(1, std::atoi(argv[1]));
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  const std::size_t bytes = std::size_t(1) << 30, n = bytes / sizeof(float);
  double expected = 0;
  for (std::size_t i = 0; i < n; ++i) expected += double(i & 1023);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const unsigned grid = unsigned(sms) * 8;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int reps = 5;
  std::printf("results_back: 1 GiB written by a kernel, read by %d CPU threads; ms from the "
              "launch until the CPU has read it all, medians of %d\n", threads, reps);
  std::printf("%-12s %10s %10s\n", "strategy", "total", "kernel");

  const auto report = [&](const char* name, std::vector<double> total, std::vector<double> kernel,
                          bool ok) {
    std::printf("%-12s %10.2f %10.2f%s\n", name, median(total), median(kernel),
                ok ? "" : "   WRONG SUM");
  };

  {  // explicit
    float *d = nullptr, *h = nullptr;
    CK(cudaMalloc(&d, bytes));
    CK(cudaMallocHost(&h, bytes));
    std::vector<double> total, kernel;
    bool ok = true;
    for (int r = 0; r < reps; ++r) {
      auto t0 = clock_type::now();
      produce<<<grid, 256, 0, s>>>(d, n);
      CK(cudaStreamSynchronize(s));
      kernel.push_back(ms_since(t0));
      CK(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
      CK(cudaStreamSynchronize(s));
      ok = ok && cpu_read(h, n) == expected;
      total.push_back(ms_since(t0));
    }
    report("explicit", total, kernel, ok);
    CK(cudaFree(d));
    CK(cudaFreeHost(h));
  }

  for (int strategy = 0; strategy < 5; ++strategy) {
    const char* names[] = {"on-demand", "prefetch", "pipelined", "read-mostly", "mapped"};
    std::vector<double> total, kernel;
    bool ok = true;
    for (int r = 0; r < reps; ++r) {
      float* m = nullptr;
      CK(cudaMallocManaged(&m, bytes));
      if (strategy == 4) {
        CK(cudaMemAdvise(m, bytes, cudaMemAdviseSetPreferredLocation, on_host()));
        CK(cudaMemAdvise(m, bytes, cudaMemAdviseSetAccessedBy, on_device(0)));
        for (std::size_t i = 0; i < n; i += 1024) m[i] = 0.0f;  // pages exist on the host
      } else {
        CK(cudaMemPrefetchAsync(m, bytes, on_device(0), 0, s));  // pages exist on the GPU
        CK(cudaStreamSynchronize(s));
      }
      auto t0 = clock_type::now();
      produce<<<grid, 256, 0, s>>>(m, n);
      CK(cudaStreamSynchronize(s));
      kernel.push_back(ms_since(t0));
      double sum = 0;
      if (strategy == 1) {
        CK(cudaMemPrefetchAsync(m, bytes, on_host(), 0, s));
        CK(cudaStreamSynchronize(s));
        sum = cpu_read(m, n);
      } else if (strategy == 2) {
        const std::size_t chunk = std::size_t(64) << 20, chunks = bytes / chunk;
        std::vector<cudaEvent_t> ready(chunks);
        for (std::size_t c = 0; c < chunks; ++c) {
          CK(cudaEventCreateWithFlags(&ready[c], cudaEventDisableTiming));
          CK(cudaMemPrefetchAsync(reinterpret_cast<char*>(m) + c * chunk, chunk, on_host(), 0, s));
          CK(cudaEventRecord(ready[c], s));
        }
        std::vector<double> part(chunks);
        std::atomic<std::size_t> next{0};
        std::vector<std::thread> t;
        for (int k = 0; k < threads; ++k) {
          t.emplace_back([&] {
            for (std::size_t c; (c = next.fetch_add(1)) < chunks;) {
              CK(cudaEventSynchronize(ready[c]));
              const float* p = m + c * (chunk / sizeof(float));
              double v = 0;
              for (std::size_t i = 0; i < chunk / sizeof(float); ++i) v += p[i];
              part[c] = v;
            }
          });
        }
        for (auto& x : t) x.join();
        for (double v : part) sum += v;
        for (auto e : ready) CK(cudaEventDestroy(e));
      } else if (strategy == 3) {
        CK(cudaMemAdvise(m, bytes, cudaMemAdviseSetReadMostly, on_device(0)));
        sum = cpu_read(m, n);
      } else {
        sum = cpu_read(m, n);  // on-demand, mapped
      }
      total.push_back(ms_since(t0));
      ok = ok && sum == expected;
      CK(cudaFree(m));
    }
    report(names[strategy], total, kernel, ok);
  }
  std::printf("done\n");
  return 0;
}
