// prefetch_sweep: how to split a large prefetch (issue 12, the transfer engine). Raw CUDA, no
// unimem, so that the engine's chunk size and stream count come from the runtime's own figures.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/prefetch_sweep.cu -o prefetch_sweep
//   ./prefetch_sweep [MiB, default 2048] [repetitions, default 5]
//
// For each chunk size (one call = the whole range) and stream count: host->GPU and GPU->host
// prefetch of CPU-written managed memory, medians of the repetitions, with the pattern the
// engine would use (an event on the caller's stream, chunks round-robin over a pool of
// non-blocking streams that wait for it, an event per pool stream joined back into the
// caller's stream). Beside them: a pinned cudaMemcpy each way, cudaMemPrefetchBatchAsync
// (CUDA >= 12.8) and, with two GPUs, GPU0 -> GPU1 moves of half the size. Prints one table.
#include "probe.hpp"

#include <thread>

struct pool {
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> done;
  cudaEvent_t start{};
  explicit pool(int n) : streams(n), done(n) {
    for (int i = 0; i < n; ++i) {
      CK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
      CK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
    }
    CK(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
  }
};

// The engine's pattern on `caller`: fork, chunks round-robin, join. Returns milliseconds until
// the caller's stream has passed the join.
static double engine_prefetch(char* p, std::size_t bytes, std::size_t chunk, pool& pl, int n,
                              cudaMemLocation to, cudaStream_t caller) {
  const auto t0 = clock_type::now();
  if (chunk >= bytes || n == 0) {
    CK(cudaMemPrefetchAsync(p, bytes, to, 0, caller));
  } else {
    CK(cudaEventRecord(pl.start, caller));
    for (int i = 0; i < n; ++i) CK(cudaStreamWaitEvent(pl.streams[i], pl.start, 0));
    std::size_t k = 0;
    for (std::size_t off = 0; off < bytes; off += chunk, ++k) {
      CK(cudaMemPrefetchAsync(p + off, std::min(chunk, bytes - off), to, 0, pl.streams[k % n]));
    }
    for (int i = 0; i < n; ++i) {
      CK(cudaEventRecord(pl.done[i], pl.streams[i]));
      CK(cudaStreamWaitEvent(caller, pl.done[i], 0));
    }
  }
  CK(cudaStreamSynchronize(caller));
  return ms_since(t0);
}

int main(int argc, char** argv) {
  const probe_args args = parse_args(argc, argv, 2048, 5);
  const std::size_t mib = args.mib, bytes = args.bytes;
  const int reps = args.reps, devices = args.devices;
  int runtime = 0, driver = 0;
  CK(cudaRuntimeGetVersion(&runtime));
  CK(cudaDriverGetVersion(&driver));
  std::printf("prefetch_sweep: %zu MiB, %d repetitions (medians), runtime %d, driver %d, %d GPU(s)\n",
              mib, reps, runtime, driver, devices);

  cudaStream_t caller;
  CK(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking));
  const auto gbps = [&](double ms, std::size_t b) { return b / ms / 1e6; };

  {  // pinned memcpy, the reference
    char *h = nullptr, *d = nullptr;
    CK(cudaMallocHost(&h, bytes));
    CK(cudaMalloc(&d, bytes));
    cpu_write(h, bytes);
    std::vector<double> in, out;
    for (int r = 0; r < reps; ++r) {
      auto t0 = clock_type::now();
      CK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, caller));
      CK(cudaStreamSynchronize(caller));
      in.push_back(ms_since(t0));
      t0 = clock_type::now();
      CK(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, caller));
      CK(cudaStreamSynchronize(caller));
      out.push_back(ms_since(t0));
    }
    std::printf("%-34s %9.2f ms %6.1f GB/s   %9.2f ms %6.1f GB/s\n", "pinned cudaMemcpy (reference)",
                median(in), gbps(median(in), bytes), median(out), gbps(median(out), bytes));
    CK(cudaFreeHost(h));
    CK(cudaFree(d));
  }

  char* m = nullptr;
  CK(cudaMallocManaged(&m, bytes));
  cpu_write(m, bytes);
  pool pl(8);
  std::printf("%-34s %24s   %24s\n", "prefetch (chunk MiB x streams)", "host -> GPU", "GPU -> host");
  const std::size_t chunks_mib[] = {0, 512, 256, 128, 64, 32, 16, 8, 4, 2};
  const int stream_counts[] = {1, 2, 4, 8};
  for (std::size_t c : chunks_mib) {
    for (int n : stream_counts) {
      if (c == 0 && n > 1) continue;
      if (c != 0 && (c << 20) >= bytes) continue;
      std::vector<double> in, out;
      for (int r = 0; r < reps; ++r) {
        cpu_write(m, bytes);  // CPU-written, resident on the host
        in.push_back(engine_prefetch(m, bytes, c == 0 ? bytes : c << 20, pl, c == 0 ? 0 : n,
                                     on_device(0), caller));
        out.push_back(engine_prefetch(m, bytes, c == 0 ? bytes : c << 20, pl, c == 0 ? 0 : n,
                                      on_host(), caller));
      }
      char label[64];
      if (c == 0) {
        std::snprintf(label, sizeof label, "one call");
      } else {
        std::snprintf(label, sizeof label, "%zu MiB x %d", c, n);
      }
      std::printf("%-34s %9.2f ms %6.1f GB/s   %9.2f ms %6.1f GB/s\n", label, median(in),
                  gbps(median(in), bytes), median(out), gbps(median(out), bytes));
    }
  }
#if CUDART_VERSION >= 12080
  for (int ranges : {4, 16, 64}) {
    std::vector<void*> ptrs(ranges);
    std::vector<std::size_t> sizes(ranges);
    for (int i = 0; i < ranges; ++i) {
      ptrs[i] = m + bytes / ranges * i;
      sizes[i] = bytes / ranges;
    }
    std::vector<double> in, out;
    for (int r = 0; r < reps; ++r) {
      cpu_write(m, bytes);
      for (int dir = 0; dir < 2; ++dir) {
        cudaMemLocation loc = dir == 0 ? on_device(0) : on_host();
        std::size_t index = 0;
        const auto t0 = clock_type::now();
        CK(cudaMemPrefetchBatchAsync(ptrs.data(), sizes.data(), ranges, &loc, &index, 1, 0, caller));
        CK(cudaStreamSynchronize(caller));
        (dir == 0 ? in : out).push_back(ms_since(t0));
      }
    }
    char label[64];
    std::snprintf(label, sizeof label, "batch of %d ranges", ranges);
    std::printf("%-34s %9.2f ms %6.1f GB/s   %9.2f ms %6.1f GB/s\n", label, median(in),
                gbps(median(in), bytes), median(out), gbps(median(out), bytes));
  }
#endif
  if (devices >= 2) {  // GPU0 -> GPU1 of half the size (resident on GPU0 first)
    const std::size_t half = bytes / 2;
    int peer = 0;
    CK(cudaDeviceCanAccessPeer(&peer, 1, 0));
    std::printf("%-34s %24s   (peer access %s)\n", "GPU0 -> GPU1, half the size", "", peer ? "yes" : "no");
    CK(cudaSetDevice(1));
    cudaStream_t c1;
    CK(cudaStreamCreateWithFlags(&c1, cudaStreamNonBlocking));
    pool p1(8);
    for (std::size_t c : {std::size_t(0), std::size_t(256), std::size_t(64), std::size_t(16)}) {
      for (int n : stream_counts) {
        if (c == 0 && n > 1) continue;
        std::vector<double> t;
        for (int r = 0; r < reps; ++r) {
          CK(cudaMemPrefetchAsync(m, half, on_device(0), 0, c1));
          CK(cudaStreamSynchronize(c1));
          t.push_back(engine_prefetch(m, half, c == 0 ? half : c << 20, p1, c == 0 ? 0 : n,
                                      on_device(1), c1));
        }
        char label[64];
        if (c == 0) std::snprintf(label, sizeof label, "  one call");
        else std::snprintf(label, sizeof label, "  %zu MiB x %d", c, n);
        std::printf("%-34s %9.2f ms %6.1f GB/s\n", label, median(t), gbps(median(t), half));
      }
    }
  }
  CK(cudaFree(m));
  std::printf("done\n");
  return 0;
}
