// unimem-mpi-bench: unimem::mpi against MPI written by hand, two ranks with one GPU each.
// Run: mpiexec -n 2 unimem-mpi-bench [--iterations N] [--cols N] [--rows N] [--reps N]
// [--max-mib N] [--seed N] [--only halo,bandwidth,overlap,awareness] [--csv FILE] [--quick].
// Rank 0 prints.
//
//   awareness  what unimem::mpi found: GPU-aware or not (and who said so), the MPI library,
//              the managed path, the ranks and their GPUs.
//   halo       the halo exchange of a 2-D Jacobi grid split between the two ranks (periodic:
//              each rank's top and bottom neighbour is the other rank): every iteration a
//              kernel updates the two boundary rows from the ghost rows, then each rank sends
//              its two boundary rows and receives its two ghost rows. unimem: views of a
//              managed_buffer (prefetched to the GPU) or of a device_buffer grid, exchanged with
//              unimem::mpi::sendrecv on the kernel's stream, or with irecv x2, isend x2 and
//              wait_all. raw: a cudaMalloc/hipMalloc grid, pinned staging rows allocated once,
//              D2H copies, stream synchronize, MPI_Sendrecv, H2D copies, stream synchronize;
//              the same by hand over a managed grid prefetched to the GPU; and both written
//              one message at a time, a wait after each copy, as two sendrecv calls do.
//              Targets: each unimem form <= 1.05 x the raw code that waits as often, and the
//              managed grid <= 1.05 x raw over a device grid. Two ranks on one GPU measure
//              what they should only under MPS (the first lines say whether it is on).
//   bandwidth  ping-pong 4 KiB .. --max-mib (powers of 4), GB/s = 2 x size / round trip:
//              raw MPI_Send/MPI_Recv on pinned and on pageable memory, each with no wait and
//              with a stream sync before each call (what unimem::mpi owes a stream), and raw
//              staging of device and managed memory through one pinned buffer; unimem::mpi on
//              a pinned_buffer and a std::vector on a stream and with host_ready, and on a
//              device_buffer and a managed_buffer (prefetched to the GPU), staged. Targets:
//              each unimem column >= 0.95 of the raw one that waits as it does, at every size.
//   overlap    a kernel that runs while a message is in flight: each rank fills a
//              device_buffer of 16 MiB on stream s, exchanges it with the other rank
//              (isend/irecv on s: staged), and runs an independent kernel of about 2 ms on a
//              second stream. sequential: the independent kernel, then the exchange.
//              overlapped: irecv, isend (returns before the fill and its copy are done), the
//              independent kernel, wait_all. Printed: how long isend took to return, both
//              totals and overlapped / sequential (the closer to max/sum, the more overlap).
//
// The data is checked: the halo grids against a host model of the exchange, every ping-pong
// size by a pattern sent each way. Exit status: 0 done (targets met or not: the last line
// says), 1 wrong rank count, bad options or a wrong result, 2 no GPU on some rank.
#include <unimem/mpi.hpp>

#include "harness.hpp"
#include "raw_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace um = unimem::mpi;
using clock_type = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------- kernels

/// The halo iteration's GPU work on a grid of rows + 2 rows of `cols` (row 0 and row rows + 1
/// are the ghost rows): each boundary row becomes its ghost row plus one. Every element is
/// read and written by one thread only; with exact integers in doubles, the values after N
/// iterations are known exactly (halo_model).
__global__ void halo_edges(double* g, std::size_t cols, std::size_t rows) {
  const std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (j >= cols) return;
  g[cols + j] = g[j] + 1.0;                                  // top row from the top ghost
  g[rows * cols + j] = g[(rows + 1) * cols + j] + 1.0;       // bottom row from the bottom ghost
}

/// p[i] = base + i.
__global__ void pattern_fill(double* p, std::size_t n, double base) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    p[i] = base + static_cast<double>(i);
  }
}

/// Busy for about `cycles` clock cycles on one block: work that does not touch the message.
__global__ void busy_kernel(long long cycles, unsigned long long* sink) {
  const long long start = clock64();
  long long now = start;
  while (now - start < cycles) now = clock64();
  if (threadIdx.x == 0 && now == 0) *sink = 1;  // never: keeps the loop
}

/// *bad += the elements with p[i] != base + i.
__global__ void pattern_check(const double* p, std::size_t n, double base,
                              unsigned long long* bad) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  unsigned long long wrong = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    wrong += p[i] != base + static_cast<double>(i);
  }
  if (wrong != 0) atomicAdd(bad, wrong);
}

// ---------------------------------------------------------------------------------- options

struct options {
  std::size_t cols = 8192;    ///< doubles per grid row
  std::size_t rows = 16;      ///< interior rows of the grid per rank
  int iterations = 1000;      ///< timed halo iterations per repetition
  int reps = 5;               ///< repetitions (the median is reported)
  std::size_t max_mib = 1024; ///< the largest ping-pong message
  unsigned seed = 26;         ///< the bandwidth columns' shuffle
  std::string only;           ///< ",a,b,": only these sections (empty: all)
  std::string csv;
  bool help = false;
};

const char* const usage =
    "usage: mpiexec -n 2 unimem-mpi-bench [--iterations N] [--cols N] [--rows N] [--reps N]\n"
    "                                     [--max-mib N] [--only SECTION,...] [--csv FILE] "
    "[--quick]\n"
    "  sections: awareness, halo, bandwidth, overlap (default: all)\n"
    "  --iterations  timed halo iterations per repetition (1000)\n"
    "  --cols        doubles per halo row (8192)\n"
    "  --rows        interior grid rows per rank (16, at least 2)\n"
    "  --reps        repetitions; medians are reported (5)\n"
    "  --max-mib     the largest ping-pong message in MiB (1024; sizes from 4 KiB in powers "
    "of 4)\n"
    "  --seed        the bandwidth columns' shuffle, the same on both ranks (26)\n"
    "  --quick       --iterations 200 --reps 3 --max-mib 16\n";

/// Parses the command line the same way on every rank; an empty string means fine.
std::string parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    auto number = [&](long long lo, long long hi, long long& out) -> std::string {
      if (!has_value) return a + " needs a value";
      const char* v = argv[++i];
      char* end = nullptr;
      const long long x = std::strtoll(v, &end, 10);
      if (end == v || *end != '\0' || x < lo || x > hi) {
        return a + " " + v + ": expected a number from " + std::to_string(lo) + " to " +
               std::to_string(hi);
      }
      out = x;
      return {};
    };
    long long x = 0;
    std::string e;
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--iterations") {
      if ((e = number(1, 100000000, x)).empty()) o.iterations = static_cast<int>(x);
    } else if (a == "--cols") {
      if ((e = number(1, 1 << 26, x)).empty()) o.cols = static_cast<std::size_t>(x);
    } else if (a == "--rows") {
      if ((e = number(2, 1 << 20, x)).empty()) o.rows = static_cast<std::size_t>(x);
    } else if (a == "--reps") {
      if ((e = number(1, 1000, x)).empty()) o.reps = static_cast<int>(x);
    } else if (a == "--seed") {
      if ((e = number(0, 1000000, x)).empty()) o.seed = static_cast<unsigned>(x);
    } else if (a == "--max-mib") {
      if ((e = number(1, 8192, x)).empty()) o.max_mib = static_cast<std::size_t>(x);
    } else if (a == "--only") {
      if (!has_value) return a + " needs a value";
      o.only = std::string(",") + argv[++i] + ",";
      std::size_t at = 1;
      while (at < o.only.size()) {
        const std::size_t comma = o.only.find(',', at);
        const std::string name = o.only.substr(at, comma - at);
        if (name != "awareness" && name != "halo" && name != "bandwidth" && name != "overlap") {
          return "--only: unknown section '" + name + "' (awareness, halo, bandwidth, overlap)";
        }
        at = comma + 1;
      }
    } else if (a == "--csv") {
      if (!has_value) return a + " needs a value";
      o.csv = argv[++i];
    } else if (a == "--quick") {
      o.iterations = 200;
      o.reps = 3;
      o.max_mib = 16;
    } else {
      return "unknown option " + a;
    }
    if (!e.empty()) return e;
  }
  if (o.rows * o.cols > (std::size_t{1} << 28)) return "--rows x --cols: the grid is over 2 GiB";
  return {};
}

bool selected(const options& o, const char* section) {
  return o.only.empty() || o.only.find(std::string(",") + section + ",") != std::string::npos;
}

// ---------------------------------------------------------------------------------- MPI, results

int g_rank = 0;

/// A wrong result both ranks know of (decided together): they stop without MPI_Abort.
struct wrong_result : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void mpi_failed(int rc, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING + 1] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  std::fprintf(stderr, "unimem-mpi-bench: rank %d: %s failed: %s (%s:%d)\n", g_rank, call, text,
               file, line);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::exit(3);
}

// MPI called by hand (the raw baselines and the benchmark's own coordination).
#define BENCH_MPI(call)                                            \
  do {                                                             \
    const int bench_rc_ = (call);                                  \
    if (bench_rc_ != MPI_SUCCESS) mpi_failed(bench_rc_, #call, __FILE__, __LINE__); \
  } while (0)

/// One CSV row: section,name,size_bytes,value,unit.
struct result {
  std::string section, name;
  std::size_t bytes;
  double value;
  std::string unit;
};
std::vector<result> g_results;
int g_ratios = 0, g_met = 0;

void record(const char* section, const std::string& name, std::size_t bytes, double value,
            const char* unit) {
  g_results.push_back({section, name, bytes, value, unit});
}

/// Prints "label ratio" and, with a target, MET or MISSED (counted for the last line).
void print_ratio(const std::string& label, double r, double at_most) {
  if (at_most > 0) {
    const bool ok = r <= at_most;
    ++g_ratios;
    g_met += ok;
    if (g_rank == 0) {
      std::printf("  %-58s %8.3f  (target <= %.2f) %s\n", label.c_str(), r, at_most,
                  ok ? "MET" : "MISSED");
    }
  } else if (g_rank == 0) {
    std::printf("  %-58s %8.3f\n", label.c_str(), r);
  }
}

using unimem_bench::stats;
using unimem_bench::summarize;

/// Runs f() on both ranks from a barrier; the seconds of the slower rank.
template <class F>
double timed(F&& f) {
  BENCH_MPI(MPI_Barrier(MPI_COMM_WORLD));
  const auto t0 = clock_type::now();
  f();
  const double mine = std::chrono::duration<double>(clock_type::now() - t0).count();
  double slowest = 0;
  BENCH_MPI(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return slowest;
}

/// The sum of `mine` over both ranks (results checked on each rank, judged together).
unsigned long long sum_over_ranks(unsigned long long mine) {
  unsigned long long all = 0;
  BENCH_MPI(MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  return all;
}

std::string size_text(std::size_t bytes) {
  char b[32];
  if (bytes >= (std::size_t{1} << 30) && bytes % (std::size_t{1} << 30) == 0) {
    std::snprintf(b, sizeof b, "%zu GiB", bytes >> 30);
  } else if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0) {
    std::snprintf(b, sizeof b, "%zu MiB", bytes >> 20);
  } else if (bytes % 1024 == 0) {
    std::snprintf(b, sizeof b, "%zu KiB", bytes >> 10);
  } else {
    std::snprintf(b, sizeof b, "%zu B", bytes);
  }
  return b;
}

const char* to_string(um::managed_path m) {
  switch (m) {
    case um::managed_path::automatic: return "automatic";
    case um::managed_path::staged: return "staged";
    case um::managed_path::host: return "host";
  }
  return "?";
}

/// This rank's place: what the awareness section prints and the GPU-sharing check reads.
struct rank_info {
  char host[MPI_MAX_PROCESSOR_NAME + 1];
  char gpu[256];
  int device;
};

// ---------------------------------------------------------------------------------- awareness

void awareness(const std::vector<rank_info>& ranks) {
  const um::gpu_awareness a = um::current_gpu_awareness();
  const um::settings st = um::current_settings();
  char library[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {};
  int length = 0;
  BENCH_MPI(MPI_Get_library_version(library, &length));
  int major = 0, minor = 0;
  BENCH_MPI(MPI_Get_version(&major, &minor));
  record("awareness", "device_pointers", 0, a.device_pointers ? 1 : 0, "bool");
  record("awareness", "ranks", 0, static_cast<double>(ranks.size()), "count");
  if (g_rank != 0) return;
  // The library string may span lines and end in a newline: print its lines indented.
  std::string lib(library, static_cast<std::size_t>(std::max(0, length)));
  while (!lib.empty() && (lib.back() == '\n' || lib.back() == '\0' || lib.back() == ' ')) {
    lib.pop_back();
  }
  for (std::size_t p = lib.find('\n'); p != std::string::npos; p = lib.find('\n', p + 1)) {
    lib.insert(p + 1, std::string(26, ' '));
  }
  std::printf("== awareness\n");
  std::printf("  %-22s %s (GPU-aware MPI: %s; source: %s)\n", "device_pointers",
              a.device_pointers ? "true" : "false", a.device_pointers ? "yes" : "no", a.source);
  std::printf("  %-22s %s\n", "MPI library", lib.c_str());
  std::printf("  %-22s %d.%d\n", "MPI standard", major, minor);
  std::printf("  %-22s %s\n", "managed path", to_string(st.managed));
  std::printf("  %-22s %s\n", "backend", unimem::backend_name());
  std::printf("  %-22s %zu\n", "ranks", ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::printf("  %-22s %s, GPU %d: %s\n", ("rank " + std::to_string(r)).c_str(),
                ranks[r].host, ranks[r].device, ranks[r].gpu);
  }
}

// ---------------------------------------------------------------------------------- halo

/// The grid's initial value at (row, col) on rank r: rows 0, 1, rows and rows + 1 (top
/// ghost, top, bottom, bottom ghost) are 1e6 (1 + 4 r + slot) + col; the others 0.
double halo_initial(int r, std::size_t row, std::size_t rows, std::size_t col) {
  int slot = -1;
  if (row == 0) slot = 0;
  else if (row == 1) slot = 1;
  else if (row == rows) slot = 2;
  else if (row == rows + 1) slot = 3;
  if (slot < 0) return 0.0;
  return 1e6 * (1 + 4 * r + slot) + static_cast<double>(col);
}

/// Column 0 of rank `r`'s four halo rows after `n` iterations (kernel, then the exchange),
/// computed on the host; column j is that plus j.
void halo_model(int r, long long n, double out[4]) {
  double s[2][4];
  for (int k = 0; k < 2; ++k) {
    for (int slot = 0; slot < 4; ++slot) s[k][slot] = 1e6 * (1 + 4 * k + slot);
  }
  for (long long i = 0; i < n; ++i) {
    for (int k = 0; k < 2; ++k) {
      s[k][1] = s[k][0] + 1.0;  // top row from the top ghost
      s[k][2] = s[k][3] + 1.0;  // bottom row from the bottom ghost
    }
    for (int k = 0; k < 2; ++k) {
      const int p = 1 - k;
      s[k][3] = s[p][1];  // bottom ghost: the other rank's top row
      s[k][0] = s[p][2];  // top ghost: the other rank's bottom row
    }
  }
  for (int slot = 0; slot < 4; ++slot) out[slot] = s[r][slot];
}

/// The elements of the four halo rows of `grid` (host copy) that differ from the model.
std::size_t halo_wrong(const std::vector<double>& grid, std::size_t rows, std::size_t cols,
                       long long n) {
  double m[4];
  halo_model(g_rank, n, m);
  const std::size_t at[4] = {0, 1, rows, rows + 1};
  std::size_t wrong = 0;
  for (int slot = 0; slot < 4; ++slot) {
    for (std::size_t j = 0; j < cols; ++j) {
      wrong += grid[at[slot] * cols + j] != m[slot] + static_cast<double>(j);
    }
  }
  return wrong;
}

void halo(const options& o, int device_id) {
  const std::size_t C = o.cols, R = o.rows, total = (R + 2) * C, row_bytes = C * sizeof(double);
  const int peer = 1 - g_rank;
  const int warm = std::max(10, o.iterations / 10);
  const unsigned blocks = static_cast<unsigned>((C + 255) / 256);
  const bool aware = um::current_gpu_awareness().device_pointers;
  if (g_rank == 0) {
    std::printf("\n== halo: 2 rows of %zu doubles (%s each) each way per iteration; grid %zu x "
                "%zu per rank; %d iterations after %d of warm-up, median of %d\n",
                C, size_text(row_bytes).c_str(), R + 2, C, o.iterations, warm, o.reps);
    std::printf("   (MPI %s GPU-aware: unimem::mpi %s)\n", aware ? "is" : "is not",
                aware ? "hands it the GPU pointers" : "stages through pinned buffers");
  }

  std::vector<double> init(total);
  for (std::size_t r = 0; r < R + 2; ++r) {
    for (std::size_t j = 0; j < C; ++j) init[r * C + j] = halo_initial(g_rank, r, R, j);
  }

  // unimem: one stream for both grids' kernels and exchanges.
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const auto cfg = unimem::grid_for(C).on(s);
  unimem::managed_buffer<double> mg(init.begin(), init.end());  // written on the CPU, then
  (void)unimem::prefetch(mg, unimem::location::device(device_id), s);  // moved to the GPU
  unimem::device_buffer<double> dg(init.begin(), init.end());
  s.synchronize();
  auto unimem_iteration = [&](auto& grid) {
    auto v = grid.view();
    unimem::launch(halo_edges, cfg, grid, C, R);
    // Top row -> the other rank's bottom ghost; bottom row -> the other rank's top ghost.
    (void)um::sendrecv(v.subview(C, C), peer, 0, v.subview((R + 1) * C, C), peer, 0,
                       MPI_COMM_WORLD, s);
    (void)um::sendrecv(v.subview(R * C, C), peer, 1, v.subview(0, C), peer, 1, MPI_COMM_WORLD,
                       s);
  };
  auto managed_iteration = [&] { unimem_iteration(mg); };
  auto device_iteration = [&] { unimem_iteration(dg); };
  // The same exchange written the usual non-blocking way: both receives, both sends, wait_all.
  auto unimem_nonblocking = [&](auto& grid) {
    auto v = grid.view();
    unimem::launch(halo_edges, cfg, grid, C, R);
    um::request r0 = um::irecv(v.subview((R + 1) * C, C), peer, 0, MPI_COMM_WORLD, s);
    um::request r1 = um::irecv(v.subview(0, C), peer, 1, MPI_COMM_WORLD, s);
    um::request t0 = um::isend(v.subview(C, C), peer, 0, MPI_COMM_WORLD, s);
    um::request t1 = um::isend(v.subview(R * C, C), peer, 1, MPI_COMM_WORLD, s);
    um::wait_all(t0, t1, r0, r1);
  };
  auto managed_nb_iteration = [&] { unimem_nonblocking(mg); };
  auto device_nb_iteration = [&] { unimem_nonblocking(dg); };
  auto unimem_sync = [&] { s.synchronize(); };

  // raw: what an expert writes without unimem.
  raw_stream_t rs = nullptr;
  RAW_CHECK(RAW(StreamCreateWithFlags)(&rs, RAW(StreamNonBlocking)));
  double* rg = raw_device_array<double>(total);
  RAW_CHECK(RAW(Memcpy)(rg, init.data(), total * sizeof(double), RAW_H2D));
  // The same by hand over a managed grid, prefetched to the GPU: what managed memory costs.
  double* rmg = nullptr;
  RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&rmg), total * sizeof(double),
                               RAW_ATTACH_GLOBAL));
  std::copy(init.begin(), init.end(), rmg);
  raw_prefetch(rmg, total * sizeof(double), device_id, rs);
  RAW_CHECK(RAW(StreamSynchronize)(rs));
  double* send_top = raw_pinned_array<double>(C);
  double* send_bottom = raw_pinned_array<double>(C);
  double* recv_top = raw_pinned_array<double>(C);
  double* recv_bottom = raw_pinned_array<double>(C);
  const int count = static_cast<int>(C);
  auto raw_grid_iteration = [&](double* g) {
    halo_edges<<<blocks, 256, 0, rs>>>(g, C, R);
    RAW_CHECK(RAW(MemcpyAsync)(send_top, g + C, row_bytes, RAW(MemcpyDefault), rs));
    RAW_CHECK(RAW(MemcpyAsync)(send_bottom, g + R * C, row_bytes, RAW(MemcpyDefault), rs));
    RAW_CHECK(RAW(StreamSynchronize)(rs));  // the kernel ran and the rows are in pinned memory
    BENCH_MPI(MPI_Sendrecv(send_top, count, MPI_DOUBLE, peer, 0, recv_bottom, count, MPI_DOUBLE,
                           peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    BENCH_MPI(MPI_Sendrecv(send_bottom, count, MPI_DOUBLE, peer, 1, recv_top, count, MPI_DOUBLE,
                           peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    RAW_CHECK(RAW(MemcpyAsync)(g + (R + 1) * C, recv_bottom, row_bytes, RAW(MemcpyDefault), rs));
    RAW_CHECK(RAW(MemcpyAsync)(g, recv_top, row_bytes, RAW(MemcpyDefault), rs));
    RAW_CHECK(RAW(StreamSynchronize)(rs));  // the ghost rows are in place, recv_* reusable
  };
  auto raw_iteration = [&] { raw_grid_iteration(rg); };
  auto raw_managed_iteration = [&] { raw_grid_iteration(rmg); };
  // By hand as two sendrecv calls do it: each row out, wait, exchange, in, wait (4 waits).
  auto raw_per_message = [&](double* g) {
    halo_edges<<<blocks, 256, 0, rs>>>(g, C, R);
    const std::size_t out_row[2] = {C, R * C}, in_row[2] = {(R + 1) * C, 0};
    for (int k = 0; k < 2; ++k) {
      RAW_CHECK(RAW(MemcpyAsync)(send_top, g + out_row[k], row_bytes, RAW(MemcpyDefault), rs));
      RAW_CHECK(RAW(StreamSynchronize)(rs));
      BENCH_MPI(MPI_Sendrecv(send_top, count, MPI_DOUBLE, peer, k, recv_top, count, MPI_DOUBLE,
                             peer, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      RAW_CHECK(RAW(MemcpyAsync)(g + in_row[k], recv_top, row_bytes, RAW(MemcpyDefault), rs));
      RAW_CHECK(RAW(StreamSynchronize)(rs));
    }
  };
  auto raw_managed_per_message = [&] { raw_per_message(rmg); };
  auto raw_device_per_message = [&] { raw_per_message(rg); };
  auto raw_sync = [&] {
    RAW_CHECK(RAW(GetLastError)());  // a launch the runtime refused
    RAW_CHECK(RAW(StreamSynchronize)(rs));
  };

  // One timed block: warm-up, both ranks at a barrier, the iterations, the stream drained.
  constexpr int variants = 8;
  long long done[variants] = {};
  auto block = [&](auto& iterate, auto& sync, long long& n) {
    for (int i = 0; i < warm; ++i) iterate();
    sync();
    n += warm;
    const double t = timed([&] {
      for (int i = 0; i < o.iterations; ++i) iterate();
      sync();
    });
    n += o.iterations;
    return t * 1e6 / o.iterations;
  };
  std::vector<double> us[variants];
  for (int rep = 0; rep < o.reps; ++rep) {  // interleaved, so that drift hits all alike
    us[0].push_back(block(managed_iteration, unimem_sync, done[0]));
    us[1].push_back(block(device_iteration, unimem_sync, done[1]));
    us[2].push_back(block(raw_iteration, raw_sync, done[2]));
    us[3].push_back(block(raw_managed_iteration, raw_sync, done[3]));
    us[4].push_back(block(managed_nb_iteration, unimem_sync, done[4]));
    us[5].push_back(block(device_nb_iteration, unimem_sync, done[5]));
    us[6].push_back(block(raw_managed_per_message, raw_sync, done[6]));
    us[7].push_back(block(raw_device_per_message, raw_sync, done[7]));
  }

  // The data: every grid's halo rows against the model after its iterations.
  std::vector<double> host(total);
  s.synchronize();
  std::copy(mg.begin(), mg.end(), host.begin());
  std::size_t wrong[variants];
  wrong[0] = halo_wrong(host, R, C, done[0] + done[4]);  // both unimem managed variants
  wrong[4] = 0;
  unimem::copy(host, dg);
  wrong[1] = halo_wrong(host, R, C, done[1] + done[5]);  // both unimem device variants
  wrong[5] = 0;
  RAW_CHECK(RAW(Memcpy)(host.data(), rg, total * sizeof(double), RAW_D2H));
  wrong[2] = halo_wrong(host, R, C, done[2] + done[7]);  // both raw device variants
  wrong[7] = 0;
  std::copy(rmg, rmg + total, host.begin());
  wrong[3] = halo_wrong(host, R, C, done[3] + done[6]);  // both raw managed variants
  wrong[6] = 0;
  unsigned long long all_wrong[variants];
  for (int k = 0; k < variants; ++k) all_wrong[k] = sum_over_ranks(wrong[k]);

  raw_free_host(send_top);
  raw_free_host(send_bottom);
  raw_free_host(recv_top);
  raw_free_host(recv_bottom);
  raw_free_device(rg);
  raw_free_device(rmg);
  RAW_CHECK(RAW(StreamDestroy)(rs));

  const char* names[variants] = {"unimem-managed", "unimem-device", "raw-device-staged",
                                 "raw-managed-staged", "unimem-managed-nonblocking",
                                 "unimem-device-nonblocking", "raw-managed-per-message",
                                 "raw-device-per-message"};
  const char* what[variants] = {"unimem, managed_buffer grid (on the GPU), sendrecv",
                                "unimem, device_buffer grid, sendrecv",
                                "raw, device grid + pinned staging",
                                "raw, managed grid (on the GPU) + pinned staging",
                                "unimem, managed_buffer grid, irecv x2 + isend x2 + wait_all",
                                "unimem, device_buffer grid, irecv x2 + isend x2 + wait_all",
                                "raw, managed grid, a wait after each copy (as 2 sendrecv)",
                                "raw, device grid, a wait after each copy (as 2 sendrecv)"};
  stats st[variants];
  if (g_rank == 0) std::printf("  %-58s %10s %10s %10s\n", "per iteration", "median", "min", "max");
  for (int k = 0; k < variants; ++k) {
    st[k] = summarize(us[k]);
    record("halo", names[k], row_bytes, st[k].median, "us");
    if (g_rank == 0) {
      std::printf("  %-58s %10.2f %10.2f %10.2f  us%s\n", what[k], st[k].median, st[k].min,
                  st[k].max, all_wrong[k] != 0 ? "  WRONG DATA" : "");
    }
  }
  for (int k = 0; k < variants; ++k) {
    if (all_wrong[k] != 0) {
      if (g_rank == 0) {
        std::fprintf(stderr, "unimem-mpi-bench: WRONG RESULT: halo %s: %llu elements differ from "
                     "the model\n", names[k], all_wrong[k]);
      }
      throw wrong_result("wrong halo data");
    }
  }
  // Each unimem form against the raw code that waits as often: irecv/isend/wait_all and the
  // raw staging wait twice an iteration (the copies out, the copies in), two sendrecv calls
  // and the raw code written one message at a time wait 4 times. How much a wait costs is
  // the setting's: little under MPS or with one GPU per rank, 200-300 us when two processes'
  // contexts time-share one GPU and the wait covers a kernel or a copy of managed memory.
  const double nb_mm = st[4].median / st[3].median, sr_mm = st[0].median / st[6].median;
  const double nb_dd = st[5].median / st[2].median, sr_dd = st[1].median / st[7].median;
  const double nb_md = st[4].median / st[2].median, raw_mm = st[3].median / st[2].median;
  const double sr_m2 = st[0].median / st[3].median, sr_d2 = st[1].median / st[2].median;
  record("halo", "ratio unimem-managed-nonblocking/raw-managed", row_bytes, nb_mm, "ratio");
  record("halo", "ratio unimem-managed/raw-managed-per-message", row_bytes, sr_mm, "ratio");
  record("halo", "ratio unimem-device-nonblocking/raw", row_bytes, nb_dd, "ratio");
  record("halo", "ratio unimem-device/raw-device-per-message", row_bytes, sr_dd, "ratio");
  record("halo", "ratio unimem-managed-nonblocking/raw", row_bytes, nb_md, "ratio");
  record("halo", "ratio unimem-managed/raw-managed", row_bytes, sr_m2, "ratio");
  record("halo", "ratio raw-managed/raw", row_bytes, raw_mm, "ratio");
  print_ratio("halo: managed, unimem irecv/isend/wait_all / raw (2 waits each)", nb_mm, 1.05);
  print_ratio("halo: managed, unimem sendrecv / raw per message (4 waits each)", sr_mm, 1.05);
  print_ratio("halo: device, unimem irecv/isend/wait_all / raw (2 waits each)", nb_dd, 1.05);
  print_ratio("halo: device, unimem sendrecv / raw per message (4 waits each)", sr_dd, 1.05);
  print_ratio("halo: unimem managed grid (irecv/isend) / raw device grid", nb_md, 1.05);
  print_ratio("halo: unimem managed, sendrecv / raw managed (4 waits against 2)", sr_m2, 0);
  print_ratio("halo: unimem device, sendrecv / raw device (4 waits against 2)", sr_d2, 0);
  print_ratio("halo: raw managed grid / raw device grid", raw_mm, 0);
}

// ---------------------------------------------------------------------------------- bandwidth

/// The ping-pong sizes: 4 KiB, 16 KiB, ... up to --max-mib, and --max-mib itself.
std::vector<std::size_t> ping_pong_sizes(const options& o) {
  const std::size_t most = o.max_mib << 20;
  std::vector<std::size_t> v;
  for (std::size_t b = 4096; b <= most; b *= 4) v.push_back(b);
  if (v.empty() || v.back() != most) v.push_back(most);
  return v;
}

/// Round trips per timed block: about 256 MiB each way, from 2 to 1000.
int rounds_for(std::size_t bytes) {
  const std::size_t r = (std::size_t{256} << 20) / bytes;
  return static_cast<int>(std::min<std::size_t>(1000, std::max<std::size_t>(2, r)));
}

/// Repetitions of a bandwidth block: three times --reps up to 1 MiB, where a block is short
/// (1,000 round trips of 40-200 us) and a round trip's few microseconds of overhead are what
/// the ratio judges, so that one noisy block moves the median less; twice --reps above, where a
/// block is 16 round trips or fewer. (H200, two ranks under MPS, 16 MiB: columns that make the
/// same MPI calls on the same pages still differ by 5-11 % from run to run, e.g. raw host 8.16
/// and raw host that waits 7.39 GB/s, where the wait costs microseconds of a 4 ms round trip.)
int reps_for(const options& o, std::size_t bytes) {
  return bytes <= (std::size_t{1} << 20) ? 3 * o.reps : 2 * o.reps;
}

/// Fills and checks patterns in any memory a kernel can reach, on its own stream, waited for;
/// in pageable memory with the CPU.
class checker {
 public:
  checker() {
    RAW_CHECK(RAW(StreamCreateWithFlags)(&s_, RAW(StreamNonBlocking)));
    bad_ = raw_device_array<unsigned long long>(1);
  }
  checker(const checker&) = delete;
  checker& operator=(const checker&) = delete;
  ~checker() {
    raw_free_device(bad_);
    (void)RAW(StreamDestroy)(s_);
  }
  void fill(double* p, std::size_t n, double base, bool host) {
    if (host) {
      for (std::size_t i = 0; i < n; ++i) p[i] = base + static_cast<double>(i);
      return;
    }
    pattern_fill<<<1024, 256, 0, s_>>>(p, n, base);
    RAW_CHECK(RAW(GetLastError)());
    RAW_CHECK(RAW(StreamSynchronize)(s_));
  }
  unsigned long long wrong(const double* p, std::size_t n, double base, bool host = false) {
    unsigned long long bad = 0;
    if (host) {
      for (std::size_t i = 0; i < n; ++i) bad += p[i] != base + static_cast<double>(i);
      return bad;
    }
    RAW_CHECK(RAW(MemsetAsync)(bad_, 0, sizeof bad, s_));
    pattern_check<<<1024, 256, 0, s_>>>(p, n, base, bad_);
    RAW_CHECK(RAW(GetLastError)());
    RAW_CHECK(RAW(MemcpyAsync)(&bad, bad_, sizeof bad, RAW_D2H, s_));
    RAW_CHECK(RAW(StreamSynchronize)(s_));
    return bad;
  }

 private:
  raw_stream_t s_ = nullptr;
  unsigned long long* bad_ = nullptr;
};

/// One column of the table: a buffer (pageable, filled by the CPU, or memory a kernel
/// reaches) and how one rank moves its first n doubles to and from the other rank; before()
/// runs before each timed block.
struct bandwidth_column {
  const char* name;
  double* data;
  bool host;
  std::function<void(std::size_t)> send, recv;
  std::function<void()> before;
};

/// Checks one column at one size (`index` makes the patterns differ between sizes): rank 0
/// sends a pattern, rank 1 checks it and answers with another one, which rank 0 checks. This
/// is also the column's first warm-up round trip at that size.
void check_column(const bandwidth_column& c, std::size_t bytes, int index, checker& check) {
  const std::size_t n = bytes / sizeof(double);
  const double there = 1e9 * index, back = there + 5e8;
  unsigned long long wrong = 0;
  c.before();
  if (g_rank == 0) {
    check.fill(c.data, n, there, c.host);
    c.send(n);
    c.recv(n);
    wrong = check.wrong(c.data, n, back, c.host);
  } else {
    check.fill(c.data, n, -1.0, c.host);
    c.recv(n);
    wrong = check.wrong(c.data, n, there, c.host);
    check.fill(c.data, n, back, c.host);
    c.send(n);
  }
  const unsigned long long all = sum_over_ranks(wrong);
  if (all != 0) {
    if (g_rank == 0) {
      std::fprintf(stderr, "\nunimem-mpi-bench: WRONG RESULT: bandwidth %s %s: %llu elements "
                   "differ\n", c.name, size_text(bytes).c_str(), all);
    }
    throw wrong_result("wrong ping-pong data");
  }
}

/// Rank 0 sends and receives back; rank 1 receives and sends back; `rounds` times.
void round_trips(const bandwidth_column& c, std::size_t n, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    if (g_rank == 0) {
      c.send(n);
      c.recv(n);
    } else {
      c.recv(n);
      c.send(n);
    }
  }
}

/// The bandwidth table's columns, by index.
enum bandwidth_index {
  r_pin, r_pin_wait, r_host, r_host_wait, r_dev, r_man,                 // raw MPI
  u_pin, u_host, u_ready_pin, u_ready_host, u_dev, u_man, n_bandwidth,  // unimem::mpi
};

/// One ratio of the table against its target (>= 0.95 at every size): printed, recorded and
/// counted as one MET or MISSED line.
struct bandwidth_ratio {
  int unimem, raw;
  const char* label;
};

void bandwidth(const options& o, int device_id) {
  const std::vector<std::size_t> sizes = ping_pong_sizes(o);
  const std::size_t most = sizes.back() / sizeof(double);
  const int peer = 1 - g_rank, tag = 7;
  const int max_rounds = rounds_for(sizes.front());
  if (g_rank == 0) {
    std::printf("\n== bandwidth: ping-pong rank 0 <-> rank 1, GB/s = 2 x size / round trip, "
                "%d to %d round trips per block, median of %d (%d up to 1 MiB); the %d columns "
                "interleaved in an order shuffled every repetition\n",
                rounds_for(sizes.back()), max_rounds, reps_for(o, sizes.back()), reps_for(o, sizes.front()),
                static_cast<int>(n_bandwidth));
  }
  checker check;
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  auto nothing = [] {};
  // The raw staged columns' buffers, at the largest size. The host columns, raw and unimem,
  // share buffers made at each size (below): the same pages, as the allocator gave them (a
  // std::vector of 4 MiB may sit on huge pages where one of 1 MiB does not).
  raw_stream_t rs = nullptr;
  RAW_CHECK(RAW(StreamCreateWithFlags)(&rs, RAW(StreamNonBlocking)));
  double* h = raw_pinned_array<double>(most);  // the raw staged columns' staging buffer
  double* d = raw_device_array<double>(most);
  double* m = nullptr;
  RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&m), most * sizeof(double),
                               RAW_ATTACH_GLOBAL));
  // Raw MPI on host memory, with or without the stream wait unimem::mpi owes its stream-order
  // rule (the work queued on the stream is done before MPI reads or writes the range): the
  // raw column that waits as unimem must.
  auto raw_host = [&](const char* name, double* b, bool pinned, bool wait) -> bandwidth_column {
    return {name, b, !pinned,
            [=](std::size_t n) {
              if (wait) RAW_CHECK(RAW(StreamSynchronize)(rs));
              BENCH_MPI(MPI_Send(b, static_cast<int>(n), MPI_DOUBLE, peer, tag, MPI_COMM_WORLD));
            },
            [=](std::size_t n) {
              if (wait) RAW_CHECK(RAW(StreamSynchronize)(rs));
              BENCH_MPI(MPI_Recv(b, static_cast<int>(n), MPI_DOUBLE, peer, tag, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE));
            },
            nothing};
  };
  // Raw device and managed memory staged by hand: the whole message through one pinned buffer.
  auto raw_staged = [&](const char* name, double* g, bool managed,
                        std::function<void()> before) -> bandwidth_column {
    const auto out_kind = managed ? RAW(MemcpyDefault) : RAW_D2H;
    const auto in_kind = managed ? RAW(MemcpyDefault) : RAW_H2D;
    return {name, g, false,
            [=](std::size_t n) {
              RAW_CHECK(RAW(MemcpyAsync)(h, g, n * sizeof(double), out_kind, rs));
              RAW_CHECK(RAW(StreamSynchronize)(rs));
              BENCH_MPI(MPI_Send(h, static_cast<int>(n), MPI_DOUBLE, peer, tag, MPI_COMM_WORLD));
            },
            [=](std::size_t n) {
              BENCH_MPI(MPI_Recv(h, static_cast<int>(n), MPI_DOUBLE, peer, tag, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE));
              RAW_CHECK(RAW(MemcpyAsync)(g, h, n * sizeof(double), in_kind, rs));
              RAW_CHECK(RAW(StreamSynchronize)(rs));
            },
            std::move(before)};
  };
  // A unimem container of exactly n elements through unimem::mpi: on stream s, or host_ready.
  // Containers say their memory kind at compile time; a view would be asked about it.
  auto through_unimem = [&](const char* name, auto& buffer, bool host, unimem::mpi::ordering w,
                            std::function<void()> before) -> bandwidth_column {
    return {name, buffer.data(), host,
            [=, &buffer](std::size_t) {
              um::send(buffer, peer, tag, MPI_COMM_WORLD, w);
            },
            [=, &buffer](std::size_t) {
              (void)um::recv(buffer, peer, tag, MPI_COMM_WORLD, w);
            },
            std::move(before)};
  };
  std::vector<std::vector<double>> gbps(n_bandwidth);  // by column, then size
  std::vector<std::size_t> order(n_bandwidth);
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::mt19937 shuffler(o.seed);  // the same on both ranks: they take the columns in one order
  int index = 0;
  for (const std::size_t bytes : sizes) {
    const std::size_t n = bytes / sizeof(double);
    ++index;
    if (g_rank == 0) {
      std::fprintf(stderr, "\r[bandwidth] %-8s", size_text(bytes).c_str());
      std::fflush(stderr);
    }
    unimem::pinned_buffer<double> ub(n, unimem::uninitialized);
    std::vector<double> uh(n);
    unimem::device_buffer<double> db(n, unimem::uninitialized);
    unimem::managed_buffer<double> mb(
        n, unimem::first_touch(unimem::location::device(device_id), s), unimem::uninitialized);
    s.synchronize();
    const std::vector<bandwidth_column> cols = {
        raw_host("raw-pinned", ub.data(), true, false),
        raw_host("raw-pinned-wait", ub.data(), true, true),
        raw_host("raw-host", uh.data(), false, false),
        raw_host("raw-host-wait", uh.data(), false, true),
        raw_staged("raw-staged-device", d, false, nothing),
        raw_staged("raw-staged-managed", m, true,
                   [&] {  // on the GPU before every timed block, as the unimem managed column
                     raw_prefetch(m, most * sizeof(double), device_id, rs);
                     RAW_CHECK(RAW(StreamSynchronize)(rs));
                   }),
        through_unimem("unimem-pinned", ub, false, s, nothing),
        through_unimem("unimem-host", uh, true, s, nothing),
        through_unimem("unimem-ready-pinned", ub, false, um::host_ready, nothing),
        through_unimem("unimem-ready-host", uh, true, um::host_ready, nothing),
        through_unimem("unimem-device", db, false, s, nothing),
        through_unimem("unimem-managed", mb, false, s,
                       [&] {  // on the GPU before every timed block: a kernel may have left it
                         (void)unimem::prefetch(mb.view(), unimem::location::device(device_id),
                                                s);
                         s.synchronize();
                       }),
    };
    const int rounds = rounds_for(bytes);
    for (const bandwidth_column& c : cols) {
      check_column(c, bytes, index, check);
      round_trips(c, n, std::max(2, rounds / 10));  // warm-up
    }
    std::vector<std::vector<double>> v(cols.size());
    for (int rep = 0; rep < reps_for(o, bytes); ++rep) {
      std::shuffle(order.begin(), order.end(), shuffler);
      for (const std::size_t k : order) {
        cols[k].before();
        const double t = timed([&] { round_trips(cols[k], n, rounds); });
        v[k].push_back(2.0 * static_cast<double>(bytes) * rounds / t / 1e9);
      }
    }
    for (std::size_t k = 0; k < cols.size(); ++k) {
      gbps[k].push_back(summarize(v[k]).median);
      record("bandwidth", cols[k].name, bytes, gbps[k].back(), "GB/s");
    }
  }
  raw_free_host(h);
  raw_free_device(d);
  raw_free_device(m);
  RAW_CHECK(RAW(StreamDestroy)(rs));
  (void)um::release_staging();
  if (g_rank == 0) {
    std::fprintf(stderr, "\r%-40s\r", "");
    std::fflush(stderr);
  }
  // Each unimem column against the raw code that waits as it must: on a stream, the stream's
  // work (a sync before each MPI call); with host_ready, nothing; staged, the copy.
  const bandwidth_ratio ratios[] = {
      {u_pin, r_pin_wait, "pinned on a stream / raw pinned + stream sync"},
      {u_host, r_host_wait, "host (std::vector) on a stream / raw host + stream sync"},
      {u_ready_pin, r_pin, "pinned, host_ready / raw pinned (no wait)"},
      {u_ready_host, r_host, "host, host_ready / raw host (no wait)"},
      {u_dev, r_dev, "device, staged / raw staged device"},
      {u_man, r_man, "managed, staged / raw staged managed"},
  };
  const char* const heads[n_bandwidth] = {"r-pin", "r-pin-w", "r-host", "r-hst-w", "r-dev",
                                          "r-manag", "u-pin", "u-host", "u-rdy-p", "u-rdy-h",
                                          "u-dev", "u-manag"};
  if (g_rank == 0) {
    std::printf("  %9s", "size");
    for (const char* head : heads) std::printf(" %8s", head);
    std::printf("   ratios:");
    for (std::size_t r = 0; r < sizeof ratios / sizeof ratios[0]; ++r) std::printf(" %6zu", r + 1);
    std::printf("\n");
  }
  std::size_t met[sizeof ratios / sizeof ratios[0]] = {};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (g_rank == 0) {
      std::printf("  %9s", size_text(sizes[i]).c_str());
      for (int k = 0; k < n_bandwidth; ++k) std::printf(" %8.3f", gbps[k][i]);
      std::printf("          ");
    }
    for (std::size_t r = 0; r < sizeof ratios / sizeof ratios[0]; ++r) {
      const double q = gbps[ratios[r].unimem][i] / gbps[ratios[r].raw][i];
      met[r] += q >= 0.95;
      record("bandwidth",
             std::string("ratio ") + heads[ratios[r].unimem] + "/" + heads[ratios[r].raw],
             sizes[i], q, "ratio");
      if (g_rank == 0) std::printf(" %6.3f", q);
    }
    if (g_rank == 0) std::printf("\n");
  }
  if (g_rank == 0) {
    std::printf("  (GB/s, higher is better. r- raw MPI, u- unimem::mpi; -w: a stream sync before "
                "each MPI_Send and MPI_Recv, as unimem::mpi waits for its stream; rdy: "
                "unimem::mpi::host_ready, no wait; dev and manag staged, by hand through one "
                "pinned buffer for raw. Ratios, target >= 0.95 at every size:)\n");
  }
  for (std::size_t r = 0; r < sizeof ratios / sizeof ratios[0]; ++r) {
    const bool ok = met[r] == sizes.size();
    ++g_ratios;
    g_met += ok;
    if (g_rank == 0) {
      std::printf("  %zu %-56s %5zu/%-3zu %s\n", r + 1, ratios[r].label, met[r], sizes.size(),
                  ok ? "MET" : "MISSED");
    }
  }
}

// ---------------------------------------------------------------------------------- main

void write_csv(const options& o) {
  if (o.csv.empty() || g_rank != 0) return;
  FILE* f = std::fopen(o.csv.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "unimem-mpi-bench: cannot write %s\n", o.csv.c_str());
    return;
  }
  std::fprintf(f, "section,name,size_bytes,value,unit\n");
  for (const result& r : g_results) {
    std::fprintf(f, "%s,%s,%zu,%.6f,%s\n", r.section.c_str(), r.name.c_str(), r.bytes, r.value,
                 r.unit.c_str());
  }
  std::fclose(f);
  std::printf("\nCSV written to %s\n", o.csv.c_str());
}

// ---------------------------------------------------------------------------------- overlap

void overlap(const options& o) {
  const std::size_t bytes = std::size_t{16} << 20, n = bytes / sizeof(double);
  const int peer = 1 - g_rank;
  const int iterations = std::max(5, o.iterations / 20);
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  unimem::stream other(unimem::stream::blocking_mode::non_blocking);
  unimem::device_buffer<double> out(n), in(n);
  unimem::device_buffer<unsigned long long> sink(1);
  const auto fill_cfg = unimem::launch_config(1024, 256, 0, s);
  const auto busy_cfg = unimem::launch_config(1, 32, 0, other);
  const long long cycles = 4000000;  // about 2 ms at 2 GHz: longer than the exchange
  double return_us = 0;  // isend's time to return, summed
  long long isends = 0;
  auto fill = [&](int it) {
    unimem::launch(pattern_fill, fill_cfg, out, n, 1e9 * (g_rank + 1) + it);
  };
  auto sequential = [&](int it) {
    fill(it);
    unimem::launch(busy_kernel, busy_cfg, cycles, sink);
    other.synchronize();
    (void)um::sendrecv(out, peer, 7, in, peer, 7, MPI_COMM_WORLD, s);
  };
  auto overlapped = [&](int it) {
    fill(it);
    um::request rx = um::irecv(in, peer, 8, MPI_COMM_WORLD, s);
    const auto t0 = clock_type::now();
    um::request tx = um::isend(out, peer, 8, MPI_COMM_WORLD, s);
    return_us += std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
    ++isends;
    unimem::launch(busy_kernel, busy_cfg, cycles, sink);  // runs while the message travels
    um::wait_all(tx, rx);
    other.synchronize();
  };
  checker check;
  unsigned long long wrong = 0;
  std::vector<double> seq_us, ovl_us;
  for (int rep = 0; rep < o.reps; ++rep) {
    for (int it = 0; it < 2; ++it) {  // warm-up
      sequential(it);
      overlapped(it);
    }
    return_us = 0;
    isends = 0;
    seq_us.push_back(1e6 / iterations * timed([&] {
      for (int it = 0; it < iterations; ++it) sequential(it);
    }));
    ovl_us.push_back(1e6 / iterations * timed([&] {
      for (int it = 0; it < iterations; ++it) overlapped(it);
    }));
    s.synchronize();
    wrong += check.wrong(in.data(), n, 1e9 * (peer + 1) + (iterations - 1));
  }
  const unsigned long long all = sum_over_ranks(wrong);
  if (all != 0) {
    if (g_rank == 0) {
      std::fprintf(stderr, "unimem-mpi-bench: WRONG RESULT: overlap: %llu elements differ\n", all);
    }
    throw wrong_result("wrong overlap data");
  }
  const stats sq = summarize(seq_us), ov = summarize(ovl_us);
  const double ret = isends > 0 ? return_us / static_cast<double>(isends) : 0;
  record("overlap", "sequential", bytes, sq.median, "us");
  record("overlap", "overlapped", bytes, ov.median, "us");
  record("overlap", "isend-return", bytes, ret, "us");
  if (g_rank == 0) {
    std::printf("\n== overlap: a 16 MiB device_buffer exchanged (staged) while a 2 ms kernel runs "
                "on another stream; %d iterations, median of %d\n", iterations, o.reps);
    std::printf("  %-58s %10.2f us\n", "isend returned after (mean, last repetition)", ret);
    std::printf("  %-58s %10.2f us\n", "sequential: kernel, then the exchange", sq.median);
    std::printf("  %-58s %10.2f us\n", "overlapped: isend, kernel, wait", ov.median);
  }
  print_ratio("overlap: overlapped / sequential", ov.median / sq.median, 0);
}

int run(um::environment& env, int argc, char** argv) {
  g_rank = env.rank();
  const int size = env.size();
  options o;
  const std::string bad = parse(argc, argv, o);
  if (o.help || !bad.empty()) {
    if (g_rank == 0) {
      if (!bad.empty()) std::fprintf(stderr, "unimem-mpi-bench: %s\n", bad.c_str());
      std::fprintf(bad.empty() ? stdout : stderr, "%s", usage);
    }
    return bad.empty() ? 0 : 1;
  }
  if (size != 2) {
    if (g_rank == 0) {
      std::fprintf(stderr, "unimem-mpi-bench: needs exactly 2 ranks (mpiexec -n 2 "
                   "unimem-mpi-bench), got %d\n", size);
    }
    return 1;
  }

  // A GPU per rank, decided together: every rank stops, none waits for another.
  rank_info me{};
  char why[1024] = {};
  int host_length = 0, ok = 1;
  BENCH_MPI(MPI_Get_processor_name(me.host, &host_length));
  try {
    const unimem::device d = um::use_local_device();
    me.device = d.device_id();
    std::snprintf(me.gpu, sizeof me.gpu, "%s", d.name());
  } catch (const std::exception& e) {
    ok = 0;
    std::snprintf(why, sizeof why, "%s", e.what());
  }
  std::vector<char> whys(static_cast<std::size_t>(size) * sizeof why);
  const int why_size = static_cast<int>(sizeof why);
  BENCH_MPI(MPI_Gather(why, why_size, MPI_CHAR, whys.data(), why_size, MPI_CHAR, 0,
                       MPI_COMM_WORLD));
  int all_ok = 0;
  BENCH_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (all_ok == 0) {
    if (g_rank == 0) {
      for (int r = 0; r < size; ++r) {
        const char* w = whys.data() + static_cast<std::size_t>(r) * sizeof why;
        if (*w == '\0') continue;
        std::fprintf(stderr, "unimem-mpi-bench: needs a GPU per rank: %s", w);
        if (r != 0) std::fprintf(stderr, " (rank %d)", r);
        std::fprintf(stderr, "\n");
        break;
      }
    }
    return 2;
  }
  std::vector<rank_info> ranks(static_cast<std::size_t>(size));
  const int info_size = static_cast<int>(sizeof me);
  BENCH_MPI(MPI_Allgather(&me, info_size, MPI_BYTE, ranks.data(), info_size, MPI_BYTE,
                          MPI_COMM_WORLD));
  if (g_rank == 0) {
    std::printf("unimem-mpi-bench: unimem %s, %s backend, 2 ranks\n", UNIMEM_VERSION_STRING,
                unimem::backend_name());
    if (std::strcmp(ranks[0].host, ranks[1].host) == 0 && ranks[0].device == ranks[1].device) {
      std::printf("warning: both ranks use GPU %d of %s: the figures are not those of one GPU per "
                  "rank\n", ranks[0].device, ranks[0].host);
      const int mps = raw_mps_enabled(ranks[0].device);
      if (mps == 1) {
        std::printf("   MPS is on: one server context runs both ranks' work, as ranks that share a "
                    "GPU are usually run\n");
      } else {
        std::printf("   MPS is %s: the ranks' two contexts time-share the GPU, and a wait for "
                    "work other than a copy of device memory (a kernel, a copy of managed "
                    "memory) costs 200-300 us more than under MPS (scripts/probes/halo_mpi.cu); "
                    "start MPS (nvidia-cuda-mps-control -d) for figures like those of ranks that "
                    "share a GPU in production\n",
                    mps == 0 ? "off" : "not known here");
      }
    }
  }

  try {
    if (selected(o, "awareness")) awareness(ranks);
    if (selected(o, "halo")) halo(o, me.device);
    if (selected(o, "bandwidth")) bandwidth(o, me.device);
    if (selected(o, "overlap")) overlap(o);
  } catch (const wrong_result&) {
    return 1;  // rank 0 said what; every rank is here
  } catch (const std::exception& e) {
    // The other rank may be inside a transfer with this one: stop the job rather than hang.
    std::fprintf(stderr, "unimem-mpi-bench: rank %d: %s\n", g_rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  write_csv(o);
  if (g_rank == 0) {
    std::printf("\nunimem-mpi-bench: %d ratios, %d met\n", g_ratios, g_met);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    um::environment env(argc, argv);
    return run(env, argc, argv);
  } catch (const std::exception& e) {  // MPI could not start
    std::fprintf(stderr, "unimem-mpi-bench: %s\n", e.what());
    return 1;
  }
}
