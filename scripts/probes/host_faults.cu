// host_faults: can the process's page-fault count tell that managed pages left the GPU?
// (issue 24, the design of placement records). Raw CUDA, no unimem.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/host_faults.cu -o host_faults && ./host_faults
//
// unimem skips the prefetch of a buffer it placed on a GPU while the process has taken no page
// fault since (getrusage: minor + major faults, every thread). That is sound only if
//   1. every CPU access that moves a GPU-resident managed page back is a fault the count sees
//      (a read, a write, from the main thread and from other threads, through any pointer);
//   2. a steady-state loop (launch, synchronise, host timing) takes no fault, else the skip
//      would never happen;
// and it is cheap only if getrusage is (it is asked once per tagged launch).
// Also measured: what the discarding prefetch of out() saves over a plain prefetch of
// host-resident pages (the number behind keeping or removing it), and the deliberate fault
// unimem takes after moving pages it keeps no record of.
#include "probe.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

static long faults() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt + r.ru_majflt;
}

__global__ void copy_k(const double* a, double* c, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    c[i] = a[i];
  }
}
__global__ void fill_k(double* p, std::size_t n, double v) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    p[i] = v;
  }
}

int main() {
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::size_t bytes = std::size_t(64) << 20, n = bytes / sizeof(double);
  double *a, *c;
  CK(cudaMallocManaged(&a, bytes));
  CK(cudaMallocManaged(&c, bytes));
  auto to_gpu = [&] {
    fill_k<<<528, 256, 0, s>>>(a, n, 1.0);
    fill_k<<<528, 256, 0, s>>>(c, n, 0.0);
    CK(cudaMemPrefetchAsync(a, bytes, on_device(0), 0, s));
    CK(cudaMemPrefetchAsync(c, bytes, on_device(0), 0, s));
    CK(cudaStreamSynchronize(s));
  };
  to_gpu();

  // 2. The steady state: launch + synchronise + host timing into a preallocated array.
  std::vector<double> times(2000);
  for (int warm = 0; warm < 20; ++warm) {
    copy_k<<<528, 256, 0, s>>>(a, c, n);
    CK(cudaStreamSynchronize(s));
  }
  long f0 = faults();
  for (int i = 0; i < 2000; ++i) {
    const auto t0 = clock_type::now();
    copy_k<<<528, 256, 0, s>>>(a, c, n);
    CK(cudaStreamSynchronize(s));
    times[i] = us_since(t0);
  }
  std::printf("steady state: 2000 x (launch, stream sync, timing): %ld faults (median kernel %.1f us)\n",
              faults() - f0, median(times));
  f0 = faults();
  for (int i = 0; i < 2000; ++i) {
    copy_k<<<528, 256, 0, s>>>(a, c, n);
    CK(cudaDeviceSynchronize());
  }
  std::printf("steady state: 2000 x (launch, device sync): %ld faults\n", faults() - f0);
  f0 = faults();
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 2000; ++i) {
    CK(cudaEventRecord(e0, s));
    copy_k<<<528, 256, 0, s>>>(a, c, n);
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    times[i] = ms;
  }
  std::printf("steady state: 2000 x (events around launch, event sync): %ld faults\n", faults() - f0);
  int last = -9;
  f0 = faults();
  for (int i = 0; i < 2000; ++i) {
    CK(cudaMemRangeGetAttribute(&last, sizeof last, cudaMemRangeAttributeLastPrefetchLocation, a,
                                bytes));
  }
  std::printf("2000 range queries: %ld faults\n", faults() - f0);

  // 1. CPU accesses to GPU-resident pages: each kind, separately.
  struct access {
    const char* what;
    void (*touch)(double*, double*, std::size_t);
  };
  const access accesses[] = {
      {"main thread writes one element", [](double* p, double*, std::size_t) { p[12345] = 2.0; }},
      {"main thread reads one element",
       [](double* p, double* sink, std::size_t) { *sink = p[54321]; }},
      {"another thread writes one element",
       [](double* p, double*, std::size_t) { std::thread([=] { p[777] = 3.0; }).join(); }},
      {"another thread reads the last element",
       [](double* p, double* sink, std::size_t m) {
         std::thread([=] { *sink = p[m - 1]; }).join();
       }},
      {"memcpy of 1 KiB out of it (libc)",
       [](double* p, double*, std::size_t) {
         char buf[1024];
         std::memcpy(buf, p + 4096, sizeof buf);
         asm volatile("" ::"r"(buf) : "memory");
       }},
  };
  double sink = 0;
  for (const access& x : accesses) {
    to_gpu();
    long before = faults();
    x.touch(a, &sink, n);
    std::printf("GPU-resident page, %-40s: %ld faults\n", x.what, faults() - before);
  }
  // The thread creation alone (what the previous rows include).
  long before = faults();
  std::thread([] {}).join();
  std::printf("creating and joining an empty thread: %ld faults\n", faults() - before);
  // Pages prefetched to the host, then read and written by the CPU: no fault expected (the
  // prefetch maps them), which is why unimem records a move to the host itself.
  to_gpu();
  CK(cudaMemPrefetchAsync(a, bytes, on_host(), 0, s));
  CK(cudaStreamSynchronize(s));
  before = faults();
  for (std::size_t i = 0; i < n; i += 512) a[i] += 1.0;
  std::printf("pages prefetched to the host, CPU writes one element per page: %ld faults (%zu pages)\n",
              faults() - before, bytes / 4096);
  // Read-mostly pages duplicated on the GPU: CPU reads keep the host copy, writes collapse it.
  to_gpu();
  CK(cudaMemAdvise(a, bytes, cudaMemAdviseSetReadMostly, on_device(0)));
  CK(cudaMemPrefetchAsync(a, bytes, on_host(), 0, s));
  CK(cudaMemPrefetchAsync(a, bytes, on_device(0), 0, s));
  CK(cudaStreamSynchronize(s));
  before = faults();
  sink = a[100];
  long after_read = faults();
  a[100] = 5.0;
  std::printf("read-mostly, duplicated on GPU 0: CPU read %ld faults, CPU write %ld faults\n",
              after_read - before, faults() - after_read);
  CK(cudaMemAdvise(a, bytes, cudaMemAdviseUnsetReadMostly, on_device(0)));

  // The deliberate fault: a private page given back with MADV_DONTNEED and written again.
  const long page = sysconf(_SC_PAGESIZE);
  char* own = static_cast<char*>(
      mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  own[0] = 1;
  std::vector<double> bump_us;
  long bumps = 0;
  for (int i = 0; i < 201; ++i) {
    before = faults();
    const auto t0 = clock_type::now();
    madvise(own, page, MADV_DONTNEED);
    reinterpret_cast<volatile char*>(own)[0] = 1;
    bump_us.push_back(us_since(t0));
    bumps += faults() - before;
  }
  std::printf("deliberate fault (madvise DONTNEED + write): %.2f us, %ld faults in 201\n",
              median(bump_us), bumps);

  // The cost of asking, with 1 and 17 threads in the process.
  std::atomic<bool> stop{false};
  for (int threads : {0, 16}) {
    std::vector<std::thread> idle;
    for (int t = 0; t < threads; ++t) {
      idle.emplace_back([&] {
        while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      });
    }
    std::vector<double> us;
    for (int r = 0; r < 21; ++r) {
      const auto t0 = clock_type::now();
      long x = 0;
      for (int i = 0; i < 1000; ++i) x += faults();
      us.push_back(us_since(t0) / 1000);
      if (x == 42) std::printf(" ");
    }
    std::printf("getrusage with %d threads in the process: %.3f us\n", threads + 1, median(us));
    stop = true;
    for (auto& t : idle) t.join();
    stop = false;
  }

  // What the discarding prefetch saves: c (1 GiB) written by the CPU, then placed on GPU 0 by a
  // prefetch, or by a discard-and-prefetch; then the kernel that overwrites it.
  CK(cudaFree(a));
  CK(cudaFree(c));
  const std::size_t big = std::size_t(1) << 30, bn = big / sizeof(double);
  CK(cudaMallocManaged(&a, big));
  CK(cudaMallocManaged(&c, big));
  fill_k<<<528, 256, 0, s>>>(a, bn, 1.0);
  CK(cudaMemPrefetchAsync(a, big, on_device(0), 0, s));
  CK(cudaStreamSynchronize(s));
  std::vector<double> pf, dc;
  for (int r = 0; r < 7; ++r) {
    cpu_write(reinterpret_cast<char*>(c), big);
    auto t0 = clock_type::now();
    CK(cudaMemPrefetchAsync(c, big, on_device(0), 0, s));
    copy_k<<<528, 256, 0, s>>>(a, c, bn);
    CK(cudaStreamSynchronize(s));
    pf.push_back(ms_since(t0));
#if CUDART_VERSION >= 12080
    cpu_write(reinterpret_cast<char*>(c), big);
    t0 = clock_type::now();
    void* ptrs[1] = {c};
    std::size_t sizes[1] = {big}, idx[1] = {0};
    cudaMemLocation dev = on_device(0);
    CK(cudaMemDiscardAndPrefetchBatchAsync(ptrs, sizes, 1, &dev, idx, 1, 0, s));
    copy_k<<<528, 256, 0, s>>>(a, c, bn);
    CK(cudaStreamSynchronize(s));
    dc.push_back(ms_since(t0));
#endif
  }
  std::printf("1 GiB out-range written by the CPU, placed on GPU 0 + copy kernel: prefetch %.2f ms",
              median(pf));
  if (!dc.empty()) std::printf(", discard-and-prefetch %.2f ms", median(dc));
  std::printf("\n");
  CK(cudaFree(a));
  CK(cudaFree(c));
  return 0;
}
