// uvm_tools: can a process learn, cheaply and exactly, which managed pages its CPU took back from
// the GPU, without being misled by page faults on ordinary memory? (issue 36). Raw CUDA + the
// NVIDIA UVM driver's tools interface (/dev/nvidia-uvm-tools, the one CUPTI uses), no unimem.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/uvm_tools.cu -o uvm_tools && ./uvm_tools
//
// The interface's layout (ioctl numbers 56/58/60/76, the control page, 64- and 72-byte queue
// entries whose first byte is the event type and whose CPU-fault address is at offset 8) was read
// in the open kernel module's uvm_ioctl.h and uvm_types.h and is declared here by hand: the
// 56-byte parameter block of the modules of branches 515-545 and 565-595 (550, 555 and 560 have
// other layouts: refused here, see docs/architecture.md), inside a zeroed 128-byte block so that
// no module writes past it.
// Measured:
//   1. attaching a queue tracker (CPU-fault events) and a counter tracker without root;
//   2. what each host activity leaves in them: a fresh ordinary page, a second thread allocating,
//      one CPU read of a GPU-resident managed page, a write from another thread, pool memory;
//   3. the costs: reading the queue's put index, getrusage, a CPU fault with and without the
//      tracker, the GPU-fault path with and without it;
//   4. after a CPU touch of one page: the kernel taking it back by GPU faults against a prefetch of
//      the touched 2 MiB block, of 64 KiB, of the whole array (the choice of what a tag moves);
//   5. what a full queue does (dropped events counted).
// Arguments: MiB per array (64), and "touch-only" for part 4 alone. Part 4 runs two kernel
// shapes (grid-stride over 528 x 256 threads, and one element a thread) and also moves the
// touched blocks on a side stream after the launch.
#include "probe.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

namespace uvm {
struct init_params {
  std::uint64_t queue_buffer, queue_buffer_size, control_buffer;
  unsigned char processor[16];
  std::uint32_t all_processors, uvm_fd;
  std::uint32_t status;
  unsigned char tail[72];  // zero: 128 bytes, whatever a module copies out
};
struct flags_params {
  std::uint64_t flags;
  std::uint32_t status;
  unsigned char tail[116];
};
static_assert(sizeof(init_params) == 128 && sizeof(flags_params) == 128, "128-byte blocks");
/// Whether the loaded module declares the 56-byte block with the status at 48.
inline bool layout_known() {
  FILE* f = std::fopen("/sys/module/nvidia_uvm/version", "r");
  unsigned branch = 0;
  const bool read = f != nullptr && std::fscanf(f, "%u", &branch) == 1;
  if (f != nullptr) std::fclose(f);
  std::printf("UVM module branch %u\n", branch);
  return read && branch >= 515 && (branch < 550 || (branch >= 565 && branch <= 595));
}
struct control {
  volatile std::uint32_t get_ahead, get_behind, put_ahead, put_behind;
  std::uint64_t dropped[64];
};
constexpr unsigned long init_v1 = 56, enable_events = 58, enable_counters = 60, init_v2 = 76;
constexpr int cpu_fault = 1;
enum counter { htd = 0, dth = 1, cpu_faults = 2, gpu_faults = 9 };
}  // namespace uvm

static long rusage_faults() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt + r.ru_majflt;
}

// The process's /dev/nvidia-uvm descriptors (the CUDA driver opens a va-space one and an mm one).
static std::vector<int> uvm_fds() {
  std::vector<int> fds;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return fds;
  while (dirent* e = readdir(d)) {
    char path[300], target[256];
    std::snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    const ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    if (std::strcmp(target, "/dev/nvidia-uvm") == 0) fds.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  return fds;
}

struct tracker {
  int fd = -1;
  std::size_t entry = 0, count = 0;
  char* queue = nullptr;
  uvm::control* ctrl = nullptr;
  std::uint32_t get = 0;
  std::uint64_t* counters = nullptr;
  // version 2 (72-byte entries) where the driver has it, else version 1 (64 bytes)
  bool open_queue(std::size_t entries) {
    for (int v2 = 1; v2 >= 0; --v2) {
      for (int ufd : uvm_fds()) {
        fd = open("/dev/nvidia-uvm-tools", O_RDWR | O_CLOEXEC);
        if (fd < 0) { std::printf("open /dev/nvidia-uvm-tools: %s\n", std::strerror(errno)); return false; }
        entry = v2 ? 72 : 64;
        count = entries;
        queue = static_cast<char*>(mmap(nullptr, entry * count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        ctrl = static_cast<uvm::control*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        uvm::init_params p{};
        p.queue_buffer = reinterpret_cast<std::uintptr_t>(queue);
        p.queue_buffer_size = count;
        p.control_buffer = reinterpret_cast<std::uintptr_t>(ctrl);
        p.uvm_fd = ufd;
        const int rc = ioctl(fd, v2 ? uvm::init_v2 : uvm::init_v1, &p);
        std::printf("  init %s tracker over fd %d: ioctl %d, status 0x%x\n", v2 ? "v2" : "v1", ufd, rc, p.status);
        if (rc == 0 && p.status == 0) {
          uvm::flags_params e{std::uint64_t{1} << uvm::cpu_fault, 0, {}};
          const int rc2 = ioctl(fd, uvm::enable_events, &e);
          std::printf("  enable cpu-fault events: ioctl %d, status 0x%x\n", rc2, e.status);
          return rc2 == 0 && e.status == 0;
        }
        close(fd);
        fd = -1;
      }
    }
    return false;
  }
  bool open_counters() {
    for (int ufd : uvm_fds()) {
      fd = open("/dev/nvidia-uvm-tools", O_RDWR | O_CLOEXEC);
      counters = static_cast<std::uint64_t*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      uvm::init_params p{};
      p.control_buffer = reinterpret_cast<std::uintptr_t>(counters);
      p.all_processors = 1;
      p.uvm_fd = ufd;
      const int rc = ioctl(fd, uvm::init_v1, &p);
      if (rc == 0 && p.status == 0) {
        uvm::flags_params e{(1u << uvm::htd) | (1u << uvm::dth) | (1u << uvm::cpu_faults) | (1u << uvm::gpu_faults), 0, {}};
        const int rc2 = ioctl(fd, uvm::enable_counters, &e);
        std::printf("  counter tracker over fd %d: enable ioctl %d status 0x%x\n", ufd, rc2, e.status);
        return rc2 == 0 && e.status == 0;
      }
      close(fd);
    }
    return false;
  }
  void enable(bool on) {
    uvm::flags_params e{std::uint64_t{1} << uvm::cpu_fault, 0, {}};
    (void)ioctl(fd, on ? uvm::enable_events : uvm::enable_events + 1, &e);
  }
  std::uint32_t pending() const { return (ctrl->put_behind - get) & std::uint32_t(count - 1); }
  // Drains the queue: the CPU-fault addresses, and how many entries there were.
  std::vector<std::uint64_t> drain(int* entries = nullptr) {
    std::vector<std::uint64_t> a;
    const std::uint32_t put = ctrl->put_behind;
    int n = 0;
    while (get != put) {
      const char* e = queue + std::size_t(get) * entry;
      if (e[0] == uvm::cpu_fault) { std::uint64_t x; std::memcpy(&x, e + 8, 8); a.push_back(x); }
      get = (get + 1) & std::uint32_t(count - 1);
      ++n;
    }
    ctrl->get_ahead = get;
    ctrl->get_behind = get;
    if (entries) *entries = n;
    return a;
  }
};

__global__ void triad(double* a, const double* b, const double* c, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    a[i] = b[i] + 0.5 * c[i];
}
__global__ void triad_flat(double* a, const double* b, const double* c, std::size_t n) {  // one element a thread
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) a[i] = b[i] + 0.5 * c[i];
}
__global__ void touch_all(double* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] += 1;
}

static void fresh_page() {
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  *static_cast<volatile char*>(p) = 1;
  munmap(p, 4096);
}

int main(int argc, char** argv) {
  if (!uvm::layout_known()) {
    std::printf("a UVM module whose tools layout this probe does not declare: stopped\n");
    return 1;
  }
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  std::printf("uvm descriptors:");
  for (int f : uvm_fds()) std::printf(" %d", f);
  std::printf("\n");
  tracker q, c;
  const bool have_q = q.open_queue(8192);
  const bool have_c = c.open_counters();
  std::printf("queue tracker: %s (entry %zu B), counters: %s\n", have_q ? "yes" : "NO", q.entry, have_c ? "yes" : "NO");
  if (!have_q || !have_c) return 1;
  auto cnt = [&](int i) { return c.counters[i]; };

  const std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64, bytes = mib << 20, n = bytes / 8;
  double *a, *b, *cc;
  CK(cudaMallocManaged(&a, bytes)); CK(cudaMallocManaged(&b, bytes)); CK(cudaMallocManaged(&cc, bytes));
  for (std::size_t i = 0; i < n; i += 512) { a[i] = 0; b[i] = 1; cc[i] = 2; }
  int e0 = 0; q.drain(&e0);
  std::printf("CPU first touch of 3 x 64 MiB: %d queue entries, cpu faults counter %llu\n", e0, (unsigned long long)cnt(uvm::cpu_faults));
  CK(cudaMemPrefetchAsync(a, bytes, on_device(0), 0)); CK(cudaMemPrefetchAsync(b, bytes, on_device(0), 0)); CK(cudaMemPrefetchAsync(cc, bytes, on_device(0), 0));
  CK(cudaDeviceSynchronize());
  q.drain();
  cudaStream_t s, side; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  const dim3 g(132 * 4), bl(256);
  for (int w = 0; w < 3; ++w) triad<<<g, bl, 0, s>>>(a, b, cc, n);
  CK(cudaStreamSynchronize(s));
  q.drain();

  const bool touch_only = argc > 2 && std::strcmp(argv[2], "touch-only") == 0;  // section 4 alone
  if (!touch_only) {
  // 2. what each activity leaves
  auto report = [&](const char* what, auto&& f) {
    const long r0 = rusage_faults();
    const auto c0 = cnt(uvm::cpu_faults), h0 = cnt(uvm::htd), d0 = cnt(uvm::dth);
    f();
    int entries = 0;
    auto addrs = q.drain(&entries);
    std::printf("%-46s rusage +%ld, queue %d entries", what, rusage_faults() - r0, entries);
    for (std::size_t k = 0; k < addrs.size() && k < 3; ++k) std::printf(" %#llx", (unsigned long long)addrs[k]);
    std::printf("; counters cpu +%llu, DtH +%llu B, HtD +%llu B\n", (unsigned long long)(cnt(uvm::cpu_faults) - c0),
                (unsigned long long)(cnt(uvm::dth) - d0), (unsigned long long)(cnt(uvm::htd) - h0));
  };
  std::printf("b = %p .. %p\n", (void*)b, (void*)(b + n));
  report("one fresh ordinary page", [] { fresh_page(); });
  report("second thread: 64 x 1 MiB temporaries", [] {
    std::thread t([] { for (int k = 0; k < 64; ++k) { std::vector<char> v(1 << 20); for (std::size_t i = 0; i < v.size(); i += 4096) v[i] = 1; } });
    t.join();
  });
  report("CPU reads b[12345] (GPU-resident)", [&] { volatile double x = b[12345]; (void)x; });
  report("CPU reads b[12346] again (now CPU-resident)", [&] { volatile double x = b[12346]; (void)x; });
  report("another thread writes b[n/2]", [&] { std::thread t([&] { b[n / 2] = 3; }); t.join(); });
  report("prefetch of b back to GPU 0", [&] { CK(cudaMemPrefetchAsync(b, bytes, on_device(0), 0, s)); CK(cudaStreamSynchronize(s)); });
  report("CPU reads 1 % of b's pages (stride 100 pages)", [&] { for (std::size_t i = 0; i < n; i += 512 * 100) { volatile double x = b[i]; (void)x; } });
  report("prefetch of b back to GPU 0", [&] { CK(cudaMemPrefetchAsync(b, bytes, on_device(0), 0, s)); CK(cudaStreamSynchronize(s)); });
  report("untagged kernel (resident)", [&] { triad<<<g, bl, 0, s>>>(a, b, cc, n); CK(cudaStreamSynchronize(s)); });
  {
    cudaMemPool_t pool; cudaMemPoolProps pp{}; pp.allocType = cudaMemAllocationTypeManaged; pp.location = on_device(0);
    if (cudaMemPoolCreate(&pool, &pp) == cudaSuccess) {
      double* x = nullptr;
      CK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&x), bytes, pool, s));
      touch_all<<<g, bl, 0, s>>>(x, n); CK(cudaStreamSynchronize(s));
      q.drain();
      report("CPU reads pool memory x[777] (GPU-written)", [&] { volatile double v = x[777]; (void)v; });
      CK(cudaFreeAsync(x, s)); CK(cudaStreamSynchronize(s)); cudaMemPoolDestroy(pool);
    } else {
      cudaGetLastError();
      std::printf("no managed pool\n");
    }
  }

  // 3. costs
  {
    const int reps = 10000000;
    auto t0 = clock_type::now();
    std::uint32_t acc = 0;
    for (int i = 0; i < reps; ++i) acc += q.pending();
    const double put_ns = us_since(t0) * 1000 / reps;
    t0 = clock_type::now();
    long r = 0;
    for (int i = 0; i < 100000; ++i) r += rusage_faults();
    const double ru_ns = us_since(t0) * 1000 / 100000;
    std::printf("cost: queue check %.2f ns (acc %u), getrusage %.0f ns (%ld)\n", put_ns, acc, ru_ns, r & 1);
  }
  auto cpu_fault_cost = [&](bool events) {
    q.enable(events);
    std::vector<double> t;
    for (int it = 0; it < 9; ++it) {
      CK(cudaMemPrefetchAsync(b, bytes, on_device(0), 0, s)); CK(cudaStreamSynchronize(s));
      q.drain();
      const auto t0 = clock_type::now();
      for (std::size_t i = 0; i < n; i += 8192) { volatile double x = b[i]; (void)x; }  // one read per 64 KiB: 1024 faults
      t.push_back(us_since(t0) / 1024);
    }
    q.drain();
    return median(t);
  };
  const double f_on = cpu_fault_cost(true), f_off = cpu_fault_cost(false), f_on2 = cpu_fault_cost(true);
  std::printf("cost: CPU fault of a GPU-resident 64 KiB: %.2f us with events, %.2f without, %.2f with again\n", f_on, f_off, f_on2);
  auto gpu_fault_cost = [&](bool events) {
    q.enable(events);
    std::vector<double> t;
    for (int it = 0; it < 7; ++it) {
      CK(cudaMemPrefetchAsync(b, bytes, on_host(), 0, s)); CK(cudaStreamSynchronize(s));
      const auto t0 = clock_type::now();
      touch_all<<<g, bl, 0, s>>>(b, n); CK(cudaStreamSynchronize(s));
      t.push_back(us_since(t0));
    }
    q.drain();
    return median(t);
  };
  const double g_on = gpu_fault_cost(true), g_off = gpu_fault_cost(false), g_on2 = gpu_fault_cost(true);
  std::printf("cost: GPU faults 64 MiB host->GPU by a kernel: %.0f us with events, %.0f without, %.0f with again\n", g_on, g_off, g_on2);
  }
  CK(cudaMemPrefetchAsync(b, bytes, on_device(0), 0, s)); CK(cudaStreamSynchronize(s));

  // 4. after a CPU touch of k pages: what brings them back fastest
  bool flat = false;
  for (int k : {1, 2, 16, 164}) {
    auto run = [&](int mode) {  // 0 kernel takes them by faults, 1 prefetch 2 MiB blocks, 2 prefetch 64 KiB, 3 prefetch whole b, 4 no touch, 5 blocks on a side stream, 6 the same after the launch
      std::vector<double> t;
      std::uint64_t moved = 0;
      for (int it = 0; it < 21; ++it) {
        std::vector<std::size_t> pages;
        for (int j = 0; j < k; ++j) pages.push_back(std::size_t(j) * (n / 512 / k) * 512 + 7);
        if (mode != 4) for (std::size_t i : pages) { volatile double x = b[i]; (void)x; }
        q.drain();
        const auto h0 = cnt(uvm::htd);
        const auto t0 = clock_type::now();
        auto kernel = [&] {
          if (flat) triad_flat<<<unsigned((n + 1023) / 1024), 1024, 0, s>>>(a, b, cc, n);
          else triad<<<g, bl, 0, s>>>(a, b, cc, n);
        };
        if (mode == 6) kernel();
        if (mode == 1 || mode == 2 || mode == 5 || mode == 6) {
          const std::size_t gran = mode == 2 ? (64u << 10) : (2u << 20);
          std::uintptr_t last = 0;
          for (std::size_t i : pages) {
            std::uintptr_t blk = reinterpret_cast<std::uintptr_t>(b + i) & ~(std::uintptr_t(gran) - 1);
            if (blk == last) continue;
            last = blk;
            std::uintptr_t lo = std::max(blk, reinterpret_cast<std::uintptr_t>(b)), hi = std::min(blk + gran, reinterpret_cast<std::uintptr_t>(b + n));
            CK(cudaMemPrefetchAsync(reinterpret_cast<void*>(lo), hi - lo, on_device(0), 0, mode >= 5 ? side : s));
          }
        }
        if (mode == 3) CK(cudaMemPrefetchAsync(b, bytes, on_device(0), 0, s));
        if (mode != 6) kernel();
        CK(cudaStreamSynchronize(s));
        t.push_back(us_since(t0));
        CK(cudaStreamSynchronize(side));
        moved = cnt(uvm::htd) - h0;
      }
      std::printf("    %-34s %8.1f us, moved %llu KiB\n", mode == 0 ? "kernel takes them by GPU faults" : mode == 1 ? "prefetch touched 2 MiB blocks" : mode == 2 ? "prefetch touched 64 KiB" : mode == 3 ? "prefetch all of b" : mode == 5 ? "blocks on a side stream, no wait" : mode == 6 ? "the same after the launch" : "no touch (kernel alone)",
                  median(t), (unsigned long long)(moved >> 10));
    };
    for (bool f : {false, true}) {
      flat = f;
      std::printf("  CPU read %d page(s) of b, then the triad (%s):\n", k, f ? "one element a thread" : "grid-stride, 528 x 256");
      for (int m : {4, 0, 1, 5, 6, 2, 3}) run(m);
    }
  }

  // 5. a full queue
  if (!touch_only) {
    tracker small;
    small.open_queue(256);
    CK(cudaMemPrefetchAsync(b, bytes, on_device(0), 0, s)); CK(cudaStreamSynchronize(s));
    for (std::size_t i = 0; i < n; i += 8192) { volatile double x = b[i]; (void)x; }
    int entries = 0;
    small.drain(&entries);
    std::printf("queue of 256 after 1024 CPU faults: %d drained, %llu dropped\n", entries, (unsigned long long)small.ctrl->dropped[uvm::cpu_fault]);
  }
  std::printf("kernel: ");
  std::fflush(stdout);
  return std::system("uname -r") == 0 ? 0 : 1;
}
