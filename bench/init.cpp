// 7. Where a new managed buffer's value initialisation should run (unimem-bench --only init).
// A CPU zero-fill places every page on the host; for an array the GPU writes first that is work
// and a migration the program does not need. Each run allocates a fresh array of --init-mib MiB
// or --init-kib KiB (default 64 and 1024 MiB; one array at a time), and is timed from the
// allocation until the work below is done (freeing is not timed):
//   gpu-writes  a kernel writes every element, then the stream is synchronised
//   gpu-reads   a kernel reads every element, then the array comes back to the CPU (prefetched
//               to the host) and the CPU reads every element
//   cpu-writes  the CPU writes every element (--threads threads), then a kernel reads them all:
//               the case a CPU-side initialisation suits
// for each way of initialising the array, with unimem and with the same steps written against
// the runtime (raw), side by side in this process:
//   default     unimem only: managed_buffer<float>(n), which zeroes on the GPU (prefetch and
//               memset on the calling thread's default stream) from gpu_value_init_min_bytes
//               where the device migrates on demand, and on the CPU below
//   cpu-zero    unimem: managed_buffer<float>(n, first_touch(location::host())) (the default
//               of unimem 0.1); raw: cudaMallocManaged + memset on the CPU (one thread, as
//               the constructor does)
//   gpu-zero    unimem: managed_buffer<float>(n, first_touch(location::device(0), s)) (pages
//               prefetched to the GPU and zeroed there, on s); raw: the same prefetch + a memset
//               on the stream
//   gpu-memset  raw only: a memset on the stream with no prefetch first (the GPU faults the
//               pages in)
//   uninit      unimem: managed_buffer<float>(n, unimem::uninitialized); raw: the allocation
//               alone. Reading it before writing is undefined (a reference for the reads only)
// The kernels run through tagged launches (out() for writes, in() for reads) with unimem; the
// raw runs prefetch to the GPU before the kernel wherever the pages may be on the host, as the
// tags do. The report prints every time with its unimem/raw ratio and each strategy's time over
// cpu-zero/unimem's.
#include <unimem/unimem.hpp>

#include "harness.hpp"
#include "raw_runtime.hpp"

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

__global__ void init_bench_write(float* x, std::size_t n, float k) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = static_cast<float>(i % 1024) + k;
}

// Counts the elements that differ from 0 (pattern 0) or from i % 1024 (pattern 1). Every
// element is read: the count depends on each one.
__global__ void init_bench_read(const float* x, std::size_t n, int pattern, unsigned* wrong) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float expected = pattern == 0 ? 0.0f : static_cast<float>(i % 1024);
    if (x[i] != expected) atomicAdd(wrong, 1u);
  }
}

}  // namespace

namespace unimem_bench {
namespace {

enum class init_kind { by_default, cpu_zero, gpu_zero, gpu_memset, uninit };
enum class work_kind { gpu_writes, gpu_reads, cpu_writes };

const char* name(init_kind k) {
  switch (k) {
    case init_kind::by_default: return "default";
    case init_kind::cpu_zero: return "cpu-zero";
    case init_kind::gpu_zero: return "gpu-zero";
    case init_kind::gpu_memset: return "gpu-memset";
    case init_kind::uninit: return "uninit";
  }
  return "?";
}
const char* name(work_kind w) {
  switch (w) {
    case work_kind::gpu_writes: return "gpu-writes";
    case work_kind::gpu_reads: return "gpu-reads";
    case work_kind::cpu_writes: return "cpu-writes";
  }
  return "?";
}

/// What every run shares: the stream, the launch configuration and the mismatch counter (device
/// memory, reset before each run and read after it, neither timed).
struct context {
  std::size_t n;
  int threads;
  unimem::stream& s;
  raw_stream_t rs;
  unimem::launch_config cfg;
  unsigned* wrong;
  float k = 0;
};

void cpu_write_pattern(float* x, std::size_t n, int threads) {
  parallel_for(threads, n, [](void* p, std::size_t lo, std::size_t hi) {
    float* y = static_cast<float*>(p);
    for (std::size_t i = lo; i < hi; ++i) y[i] = static_cast<float>(i % 1024);
  }, x);
}

unsigned read_wrong(const context& c) {
  unsigned w = 0;
  RAW_CHECK(RAW(Memcpy)(&w, c.wrong, sizeof w, RAW_D2H));
  return w;
}

/// The checks after a run (not timed): the kernel's or the CPU's view of the array is right.
void check(const context& c, const float* x, work_kind w, init_kind how, double cpu_total,
           const std::string& what) {
  if (w == work_kind::gpu_writes) {
    for (const std::size_t i : {std::size_t{0}, c.n / 2, c.n - 1}) {
      if (x[i] != static_cast<float>(i % 1024) + c.k) fail(what + ": the kernel's writes");
    }
    return;
  }
  const bool defined = w == work_kind::cpu_writes || how != init_kind::uninit;
  if (defined && read_wrong(c) != 0) fail(what + ": the kernel read wrong values");
  if (w == work_kind::gpu_reads && how != init_kind::uninit && cpu_total != 0.0) {
    fail(what + ": the CPU read back values that are not zero");
  }
}

/// One run with unimem: the timed span from the constructor to the end of the work.
double run_unimem(context& c, init_kind how, work_kind w, const std::string& what) {
  using buffer = unimem::managed_buffer<float>;
  std::unique_ptr<buffer> b;
  double cpu_total = 0;
  const auto t0 = clock_type::now();
  switch (how) {
    case init_kind::by_default: b = std::make_unique<buffer>(c.n); break;
    case init_kind::cpu_zero:
      b = std::make_unique<buffer>(c.n, unimem::first_touch(unimem::location::host()));
      break;
    case init_kind::gpu_zero:
      b = std::make_unique<buffer>(c.n, unimem::first_touch(unimem::location::device(0), c.s));
      break;
    case init_kind::uninit:
    case init_kind::gpu_memset: b = std::make_unique<buffer>(c.n, unimem::uninitialized); break;
  }
  switch (w) {
    case work_kind::gpu_writes:
      unimem::launch(init_bench_write, c.cfg, unimem::out(*b), c.n, c.k);
      c.s.synchronize();
      break;
    case work_kind::gpu_reads:
      unimem::launch(init_bench_read, c.cfg, unimem::in(*b), c.n, 0, c.wrong);
      unimem::ready_for_host(*b, c.s);
      cpu_total = cpu_sum(b->data(), c.n, c.threads);
      break;
    case work_kind::cpu_writes:
      cpu_write_pattern(b->data(), c.n, c.threads);
      unimem::launch(init_bench_read, c.cfg, unimem::in(*b), c.n, 1, c.wrong);
      c.s.synchronize();
      break;
  }
  const double ms = ms_since(t0);
  check(c, b->data(), w, how, cpu_total, what);
  return ms;
}

/// The same run written against the runtime.
double run_raw(context& c, init_kind how, work_kind w, const std::string& what) {
  const std::size_t bytes = c.n * sizeof(float);
  const unsigned block = c.cfg.block.x, grid = c.cfg.grid.x;
  double cpu_total = 0;
  const auto t0 = clock_type::now();
  float* x = raw_managed_floats(c.n);
  switch (how) {
    case init_kind::by_default:  // unimem only
    case init_kind::cpu_zero: std::memset(x, 0, bytes); break;
    case init_kind::gpu_zero:
      raw_prefetch(x, bytes, 0, c.rs);
      RAW_CHECK(RAW(MemsetAsync)(x, 0, bytes, c.rs));
      RAW_CHECK(RAW(StreamSynchronize)(c.rs));
      break;
    case init_kind::gpu_memset:
      RAW_CHECK(RAW(MemsetAsync)(x, 0, bytes, c.rs));
      RAW_CHECK(RAW(StreamSynchronize)(c.rs));
      break;
    case init_kind::uninit: break;
  }
  const bool on_gpu = how == init_kind::gpu_zero || how == init_kind::gpu_memset;
  switch (w) {
    case work_kind::gpu_writes:
      if (!on_gpu) raw_prefetch(x, bytes, 0, c.rs);
      init_bench_write<<<grid, block, 0, c.rs>>>(x, c.n, c.k);
      RAW_CHECK(RAW(StreamSynchronize)(c.rs));
      break;
    case work_kind::gpu_reads:
      if (!on_gpu) raw_prefetch(x, bytes, 0, c.rs);
      init_bench_read<<<grid, block, 0, c.rs>>>(x, c.n, 0, c.wrong);
      raw_prefetch(x, bytes, -1, c.rs);
      RAW_CHECK(RAW(StreamSynchronize)(c.rs));
      cpu_total = cpu_sum(x, c.n, c.threads);
      break;
    case work_kind::cpu_writes:
      cpu_write_pattern(x, c.n, c.threads);
      raw_prefetch(x, bytes, 0, c.rs);
      init_bench_read<<<grid, block, 0, c.rs>>>(x, c.n, 1, c.wrong);
      RAW_CHECK(RAW(StreamSynchronize)(c.rs));
      break;
  }
  const double ms = ms_since(t0);
  check(c, x, w, how, cpu_total, what);
  raw_free_device(x);
  return ms;
}

}  // namespace

void init_bench(const options& o) {
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  unsigned* wrong = raw_device_array<unsigned>(1);
  const init_kind unimem_kinds[] = {init_kind::by_default, init_kind::cpu_zero, init_kind::gpu_zero,
                                    init_kind::uninit};
  const init_kind raw_kinds[] = {init_kind::cpu_zero, init_kind::gpu_zero, init_kind::gpu_memset,
                                 init_kind::uninit};
  const work_kind works[] = {work_kind::gpu_writes, work_kind::gpu_reads, work_kind::cpu_writes};
  for (const std::size_t kib : o.init_kib) {
    const std::size_t n = kib * std::size_t{1024} / sizeof(float);
    context c{n, cpu_threads(o), s, s.get(), unimem::grid_for(n, 256).on(s), wrong, 0.0f};
    const std::string size = init_size_label(kib);
    for (const work_kind w : works) {
      // One list of runs, in a fixed interleaved order: a burst of load spreads over all.
      struct series {
        init_kind how;
        bool raw;
        std::vector<double> ms;
      };
      std::vector<series> runs;
      for (const init_kind k : unimem_kinds) runs.push_back({k, false, {}});
      for (const init_kind k : raw_kinds) runs.push_back({k, true, {}});
      for (int rep = 0; rep <= o.reps; ++rep) {  // rep 0: warm-up, not counted
        for (series& r : runs) {
          const std::string what = std::string("init ") + size + " " + name(w) + " " +
                                   name(r.how) + (r.raw ? "/raw" : "/unimem");
          progress("[" + what + "] rep " + std::to_string(rep) + "/" + std::to_string(o.reps));
          RAW_CHECK(RAW(Memset)(wrong, 0, sizeof(unsigned)));
          c.k += 1;
          const double ms = r.raw ? run_raw(c, r.how, w, what) : run_unimem(c, r.how, w, what);
          if (rep > 0) r.ms.push_back(ms);
        }
      }
      progress_done();
      for (const series& r : runs) {
        add_row("init", std::string(name(r.how)) + "/" + size, r.raw ? "raw" : "unimem", name(w),
                "ms", r.ms);
      }
    }
  }
  raw_free_device(wrong);
}

}  // namespace unimem_bench
