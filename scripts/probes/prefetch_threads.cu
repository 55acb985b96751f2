// prefetch_threads: does a large prefetch go faster when several host threads issue its chunks
// (issue 12, the transfer engine)? prefetch_sweep.cu issues every chunk from one thread and
// found no gain host -> GPU; a prefetch call does much of its work (unmapping pages) on the
// calling thread, so this probe times the call itself and splits the range over K threads, each
// prefetching its own contiguous part on its own stream. Raw CUDA, no unimem.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/prefetch_threads.cu -o prefetch_threads
//   ./prefetch_threads [MiB, default 2048] [repetitions, default 5]
#include "probe.hpp"

#include <cstring>
#include <thread>

// K threads, each prefetching [bytes k / K, bytes (k + 1) / K) to `to` on its own stream and
// waiting for it; returns milliseconds until all are done, and the longest call in *call_ms.
static double threaded(char* p, std::size_t bytes, int K, cudaMemLocation to, int device,
                       std::vector<cudaStream_t>& streams, double* call_ms) {
  std::vector<std::thread> workers;
  std::vector<double> calls(K);
  const auto t0 = clock_type::now();
  for (int k = 0; k < K; ++k) {
    workers.emplace_back([&, k] {
      CK(cudaSetDevice(device));
      const std::size_t b = bytes * k / K, e = bytes * (k + 1) / K;
      const auto c0 = clock_type::now();
      CK(cudaMemPrefetchAsync(p + b, e - b, to, 0, streams[k]));
      calls[k] = ms_since(c0);
      CK(cudaStreamSynchronize(streams[k]));
    });
  }
  for (auto& w : workers) w.join();
  const double total = ms_since(t0);
  *call_ms = *std::max_element(calls.begin(), calls.end());
  return total;
}

int main(int argc, char** argv) {
  const probe_args args = parse_args(argc, argv, 2048, 5);
  const std::size_t mib = args.mib, bytes = args.bytes;
  const int reps = args.reps, devices = args.devices;
  std::vector<cudaStream_t> streams(16);
  for (auto& s : streams) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char* m = nullptr;
  char *pinned = nullptr, *dev = nullptr;
  CK(cudaMallocManaged(&m, bytes));
  CK(cudaMallocHost(&pinned, bytes));
  CK(cudaMalloc(&dev, bytes));
  std::memset(pinned, 1, bytes);
  const double gb = bytes / 1e9;
  std::vector<double> ref;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clock_type::now();
    CK(cudaMemcpy(dev, pinned, bytes, cudaMemcpyHostToDevice));
    ref.push_back(ms_since(t0));
  }
  const double ref_gbs = gb / (median(ref) / 1e3);
  std::printf("%zu MiB, %d repetitions (medians), driver's GPU 0%s\n", mib, reps,
              devices > 1 ? ", two GPUs" : "");
  std::printf("pinned cudaMemcpy host->GPU: %.1f GB/s\n", ref_gbs);
  std::printf("%-28s %12s %12s %10s %12s %12s\n", "host threads x streams", "H2D GB/s", "/ pinned",
              "call ms", "D2H GB/s", "call ms");
  for (int K : {1, 2, 4, 8, 16}) {
    std::vector<double> h2d, d2h, h2d_call, d2h_call;
    for (int r = 0; r < reps; ++r) {
      cpu_write(m, bytes);
      double call = 0;
      h2d.push_back(threaded(m, bytes, K, on_device(0), 0, streams, &call));
      h2d_call.push_back(call);
      d2h.push_back(threaded(m, bytes, K, on_host(), 0, streams, &call));
      d2h_call.push_back(call);
    }
    const double h = gb / (median(h2d) / 1e3), d = gb / (median(d2h) / 1e3);
    std::printf("%-28d %12.1f %12.3f %10.2f %12.1f %12.2f\n", K, h, h / ref_gbs, median(h2d_call),
                d, median(d2h_call));
  }
  {  // Read-mostly: the GPU gets a read-only copy and the CPU keeps its pages (no unmapping).
    std::vector<double> h2d;
    CK(cudaMemAdvise(m, bytes, cudaMemAdviseSetReadMostly, on_device(0)));
    for (int r = 0; r < reps; ++r) {
      cpu_write(m, bytes);
      double call = 0;
      h2d.push_back(threaded(m, bytes, 1, on_device(0), 0, streams, &call));
    }
    CK(cudaMemAdvise(m, bytes, cudaMemAdviseUnsetReadMostly, on_device(0)));
    const double h = gb / (median(h2d) / 1e3);
    std::printf("%-28s %12.1f %12.3f\n", "read-mostly, 1 call", h, h / ref_gbs);
  }
  if (devices > 1) {
    const std::size_t half = bytes / 2;
    int can = 0;
    CK(cudaDeviceCanAccessPeer(&can, 0, 1));
    std::printf("GPU0 -> GPU1, %zu MiB resident on GPU0 (peer access %s)\n", half >> 20,
                can ? "possible" : "impossible");
    std::vector<cudaStream_t> s1(16);
    CK(cudaSetDevice(1));
    for (auto& s : s1) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaSetDevice(0));
    for (int K : {1, 2, 4, 8}) {
      std::vector<double> t, calls;
      for (int r = 0; r < reps; ++r) {
        CK(cudaSetDevice(0));
        CK(cudaMemPrefetchAsync(m, half, on_device(0), 0, streams[0]));
        CK(cudaStreamSynchronize(streams[0]));
        double call = 0;
        t.push_back(threaded(m, half, K, on_device(1), 1, s1, &call));
        calls.push_back(call);
      }
      std::printf("  %2d threads: %.2f ms (%.0f GB/s), longest call %.2f ms\n", K, median(t),
                  half / 1e9 / (median(t) / 1e3), median(calls));
    }
  }
  CK(cudaFree(m));
  CK(cudaFree(dev));
  CK(cudaFreeHost(pinned));
  return 0;
}
