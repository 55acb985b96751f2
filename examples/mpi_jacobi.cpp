// mpi_jacobi: a 2-D heat equation (Jacobi iteration) over MPI ranks, one GPU per rank, on
// unimem's managed buffers and unimem::mpi.
//
// The global grid has cols columns and rows_per_rank * ranks interior rows between two fixed
// edge rows (top 1.0, bottom 0.0); its first and last columns are fixed too (left 0.5, right
// 0.25); the interior starts from a pattern of the global coordinates. Rank r owns the
// rows_per_rank rows from r * rows_per_rank on and keeps them in a managed buffer of
// rows_per_rank + 2 rows: local row 0 is the halo above (the row the rank above owns, or the
// top edge on rank 0), rows 1..rows_per_rank are its own, row rows_per_rank + 1 is the halo
// below (the bottom edge on the last rank). Every iteration a kernel computes
// new = 0.25 * (up + down + left + right) for the owned interior points into a second buffer,
// the buffers swap, and the halo rows are exchanged with unimem::mpi::sendrecv on the rank's
// stream: the first owned row goes to the rank above, the last one to the rank below
// (MPI_PROC_NULL at the ends: the edge rows keep their values).
//
// --verify (the default): rank 0 then runs the same global grid alone (the same code with one
// "rank", so no exchange), receives every rank's rows and compares them bit by bit. Each point is
// the same floating-point operations on the same inputs whatever the decomposition, so the
// results must be identical.
//
// Usage: mpiexec -n R mpi_jacobi [--cols N] [--rows-per-rank N] [--iterations N]
//                                [--verify | --no-verify] [--check-every N]
// Exit status (the same on every rank): 0 done (and verified), 1 bad arguments, a wrong result
// or another error, 2 a rank has no GPU.
#include <unimem/mpi.hpp>  // unimem::mpi (and the whole of unimem)

#include <mpi.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <vector>

// ---------------------------------------------------------------------------------------------
// Kernels. A rank's buffer is `rows + 2` rows of `cols` doubles, row-major; padded global row u
// (0: the top edge, 1..global_rows: the interior rows, global_rows + 1: the bottom edge) is
// local row u - first_row.

/// The value a point starts with: the fixed edges, and a pattern of the global coordinates
/// inside (exact in binary, and different from point to point).
__device__ double initial_value(std::size_t u, std::size_t c, std::size_t global_rows,
                                std::size_t cols) {
  if (u == 0) return 1.0;                // top edge
  if (u == global_rows + 1) return 0.0;  // bottom edge
  if (c == 0) return 0.5;                // left edge
  if (c == cols - 1) return 0.25;        // right edge
  return static_cast<double>((u * 7 + c * 3) % 16) / 16.0;
}

/// Writes every point of the local buffer (halo rows included): the halos start equal to the
/// neighbours' rows, and the edges hold their fixed values.
__global__ void initialise(double* grid, std::size_t local_rows, std::size_t cols,
                           std::size_t first_row, std::size_t global_rows) {
  const std::size_t c = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  for (std::size_t r = blockIdx.y * std::size_t(blockDim.y) + threadIdx.y; r < local_rows;
       r += std::size_t(gridDim.y) * blockDim.y) {
    grid[r * cols + c] = initial_value(first_row + r, c, global_rows, cols);
  }
}

/// One Jacobi sweep over the owned interior points: local rows 1..rows, columns 1..cols - 2.
/// Reads the halo rows and the edge columns of `cur`, never writes them in `next`.
__global__ void jacobi_step(const double* cur, double* next, std::size_t rows, std::size_t cols) {
  const std::size_t c = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x + 1;
  if (c >= cols - 1) return;
  for (std::size_t r = blockIdx.y * std::size_t(blockDim.y) + threadIdx.y + 1; r <= rows;
       r += std::size_t(gridDim.y) * blockDim.y) {
    const std::size_t i = r * cols + c;
    next[i] = 0.25 * (cur[i - cols] + cur[i + cols] + cur[i - 1] + cur[i + 1]);
  }
}

/// Per block of jacobi_step's configuration: the sum of (a - b)^2 over its owned interior
/// points, into partial[block].
__global__ void squared_change(const double* a, const double* b, std::size_t rows,
                               std::size_t cols, double* partial) {
  const std::size_t c = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x + 1;
  double sum = 0.0;
  if (c < cols - 1) {
    for (std::size_t r = blockIdx.y * std::size_t(blockDim.y) + threadIdx.y + 1; r <= rows;
         r += std::size_t(gridDim.y) * blockDim.y) {
      const double d = a[r * cols + c] - b[r * cols + c];
      sum += d * d;
    }
  }
  sum = unimem::block::reduce(sum);  // every thread of the block takes part
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    partial[blockIdx.y * std::size_t(gridDim.x) + blockIdx.x] = sum;
  }
}

/// total[0] = the sum of partial[0..n), by one block (the same order every time).
__global__ void sum_partials(const double* partial, std::size_t n, double* total) {
  double sum = 0.0;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) sum += partial[i];
  sum = unimem::block::reduce(sum);
  if (threadIdx.x == 0) total[0] = sum;
}

namespace {

constexpr int warmup_iterations = 5;  // untimed, before the timed ones (both runs do them)
constexpr int tag_up = 1;             // a first owned row, to the rank above
constexpr int tag_down = 2;           // a last owned row, to the rank below
constexpr int tag_result = 3;         // a rank's owned rows, to rank 0 for the comparison

// ---------------------------------------------------------------------------------------------
// Options

struct options {
  std::size_t cols = 4096;
  std::size_t rows_per_rank = 4096;
  long long iterations = 200;
  bool verify = true;
  long long check_every = 0;  // 0: the residual at the end only
  bool help = false;
};

/// A message for the user (bad arguments, not enough memory): exit status 1.
class usage_error : public std::exception {
 public:
  explicit usage_error(const char* what) noexcept {
    std::snprintf(text_, sizeof text_, "%s", what);
  }
  [[nodiscard]] const char* what() const noexcept override { return text_; }

 private:
  char text_[512];
};

const char* const usage_text =
    "usage: mpiexec -n RANKS mpi_jacobi [--cols N] [--rows-per-rank N] [--iterations N]\n"
    "                                   [--verify | --no-verify] [--check-every N]\n"
    "  --cols N           grid width, edge columns included (>= 3; default 4096)\n"
    "  --rows-per-rank N  interior rows each rank owns (>= 1; default 4096; weak scaling)\n"
    "  --iterations N     timed iterations (>= 1; default 200), after 5 untimed warm-up ones\n"
    "  --verify           rank 0 reruns the whole grid alone and compares bit by bit (default)\n"
    "  --no-verify        skip that\n"
    "  --check-every N    the global residual (unimem::mpi::allreduce) every N iterations\n"
    "                     (default 0: at the end only)\n";

unsigned long long number(const char* flag, const char* text, unsigned long long least,
                          unsigned long long most) {
  char why[256];
  if (text == nullptr) {
    std::snprintf(why, sizeof why, "%s needs a number", flag);
    throw usage_error(why);
  }
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || text[0] == '-' || text[0] == '+' || errno == ERANGE ||
      v < least || v > most) {
    std::snprintf(why, sizeof why, "%s %s: expected a whole number from %llu to %llu", flag, text,
                  least, most);
    throw usage_error(why);
  }
  return v;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (std::strcmp(a, "--cols") == 0) {
      o.cols = static_cast<std::size_t>(number(a, value, 3, std::size_t{1} << 28));
      ++i;
    } else if (std::strcmp(a, "--rows-per-rank") == 0) {
      o.rows_per_rank = static_cast<std::size_t>(number(a, value, 1, std::size_t{1} << 28));
      ++i;
    } else if (std::strcmp(a, "--iterations") == 0) {
      o.iterations = static_cast<long long>(number(a, value, 1, 1000000000));
      ++i;
    } else if (std::strcmp(a, "--check-every") == 0) {
      o.check_every = static_cast<long long>(number(a, value, 0, 1000000000));
      ++i;
    } else if (std::strcmp(a, "--verify") == 0) {
      o.verify = true;
    } else if (std::strcmp(a, "--no-verify") == 0) {
      o.verify = false;
    } else if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
      o.help = true;
    } else {
      char why[256];
      std::snprintf(why, sizeof why, "unknown argument '%s' (--help lists them)", a);
      throw usage_error(why);
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// Agreement: every rank takes the same exit path

/// What a step of one rank came to: 0 done, 1 failed, 2 no GPU; and the message.
struct outcome {
  int code = 0;
  char message[1200] = {};
};

/// Runs f, turning an exception into an outcome.
template <class F>
outcome attempt(F&& f) {
  outcome o;
  try {
    f();
  } catch (const unimem::error& e) {
    o.code = e.no_gpu() ? 2 : 1;
    std::snprintf(o.message, sizeof o.message, "%s%s", e.no_gpu() ? "needs a GPU per rank: " : "",
                  e.what());
  } catch (const std::exception& e) {
    o.code = 1;
    std::snprintf(o.message, sizeof o.message, "%s", e.what());
  }
  return o;
}

/// Agrees on a step that every rank ran on its own (no communication inside, so a rank that
/// failed cannot leave another one waiting): the worst code of all ranks, which every rank
/// returns; the lowest rank with that code prints its message.
int agree(const outcome& mine, int rank, MPI_Comm comm) {
  int worst = 0;
  if (MPI_Allreduce(&mine.code, &worst, 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) {
    std::fprintf(stderr, "mpi_jacobi: rank %d: MPI_Allreduce failed; aborting\n", rank);
    MPI_Abort(comm, 1);
  }
  if (worst == 0) return 0;
  int first = mine.code == worst ? rank : INT_MAX;
  if (MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
    MPI_Abort(comm, 1);
  }
  if (first == rank) {
    if (rank == 0) {
      std::fprintf(stderr, "mpi_jacobi: %s\n", mine.message);
    } else {
      std::fprintf(stderr, "mpi_jacobi: rank %d: %s\n", rank, mine.message);
    }
    std::fflush(stderr);
  }
  return worst;
}

/// Runs f, which communicates: a rank that fails there leaves the others waiting for it in the
/// exchange, so there is no agreeing afterwards; the job is aborted instead (never a hang).
template <class F>
void or_abort(int rank, MPI_Comm comm, F&& f) {
  const outcome o = attempt(f);
  if (o.code != 0) {
    std::fprintf(stderr, "mpi_jacobi: rank %d: %s; aborting the job\n", rank, o.message);
    std::fflush(stderr);
    MPI_Abort(comm, 1);
  }
}

// ---------------------------------------------------------------------------------------------
// The solver

/// One rank's part of the global grid.
struct part {
  std::size_t cols;         ///< grid width, edge columns included
  std::size_t rows;         ///< owned interior rows
  std::size_t first_row;    ///< padded global row of local row 0 (the first owned row's index)
  std::size_t global_rows;  ///< interior rows of the whole grid
  int up;                   ///< the rank above, or MPI_PROC_NULL
  int down;                 ///< the rank below, or MPI_PROC_NULL
  MPI_Comm comm;            ///< the ranks of the decomposition (MPI_COMM_SELF alone)
};

/// A 2-D configuration over `rows` x `cols` points: blocks of 32 columns x 8 rows, rows in a
/// grid-stride loop beyond 65535 blocks.
unimem::launch_config grid_2d(std::size_t rows, std::size_t cols, unimem::stream_ref s) {
  constexpr unsigned bx = 32, by = 8;
  const std::size_t gx = (cols + bx - 1) / bx;
  std::size_t gy = (rows + by - 1) / by;
  if (gy > 65535) gy = 65535;
  return unimem::launch_config(unimem::dims(static_cast<unsigned>(gx), static_cast<unsigned>(gy)),
                               unimem::dims(bx, by), 0, s);
}

/// Managed bytes one solver of `rows` owned rows allocates.
std::size_t solver_bytes(std::size_t rows, std::size_t cols) {
  const unimem::launch_config interior = grid_2d(rows, cols - 2, {});
  return 2 * (rows + 2) * cols * sizeof(double) +
         (std::size_t{interior.grid.x} * interior.grid.y + 1) * sizeof(double);
}

class solver {
 public:
  /// Allocates both buffers on the stream's GPU and initialises them there. Communicates with
  /// no one.
  solver(const part& p, const unimem::stream& s)
      : p_(p),
        s_(s),
        all_(grid_2d(p.rows + 2, p.cols, s)),
        interior_(grid_2d(p.rows, p.cols - 2, s)),
        cur_((p.rows + 2) * p.cols, unimem::first_touch(s), unimem::uninitialized),
        next_((p.rows + 2) * p.cols, unimem::first_touch(s), unimem::uninitialized),
        partial_(std::size_t{interior_.grid.x} * interior_.grid.y, unimem::first_touch(s),
                 unimem::uninitialized),
        total_(1, unimem::first_touch(s), unimem::uninitialized) {
    // Both buffers hold the edges and the initial halos: each is `cur` every other iteration.
    for (unimem::managed_buffer<double>* g : {&cur_, &next_}) {
      unimem::launch(initialise, all_, *g, p.rows + 2, p.cols, p.first_row, p.global_rows);
    }
    s.synchronize();
  }

  /// Runs `warmup` then `timed` iterations; with check_every > 0, prints (print_residuals) the
  /// global residual every check_every iterations. Communicates with the neighbours (and all
  /// ranks for the residual).
  void run(long long warmup, long long timed, long long check_every, bool print_residuals) {
    seconds_ = 0.0;
    halo_seconds_ = 0.0;
    double t0 = MPI_Wtime();
    for (long long k = 1; k <= warmup + timed; ++k) {
      if (k == warmup + 1) {  // the timed iterations start together, with no work queued
        s_.synchronize();
        check_mpi(MPI_Barrier(p_.comm), "MPI_Barrier");
        t0 = MPI_Wtime();
        halo_seconds_ = 0.0;
      }
      unimem::launch(jacobi_step, interior_, cur_, next_, p_.rows, p_.cols);
      if (check_every > 0 && k % check_every == 0) {
        const double r = residual();  // of this update: next against cur
        if (print_residuals) std::printf("  iteration %lld: residual %.6e\n", k, r);
      }
      cur_.swap(next_);
      s_.synchronize();  // the sweep is done: what follows is the halo exchange alone
      const double h0 = MPI_Wtime();
      exchange();
      halo_seconds_ += MPI_Wtime() - h0;
    }
    s_.synchronize();
    seconds_ = MPI_Wtime() - t0;
  }

  /// The halo exchange of `cur` with the neighbours, on the stream: the sweep queued on it is
  /// done before MPI reads the sent rows, and the received rows are in place when it returns.
  void exchange() {
    const unimem::view<double> g = cur_.view();
    const std::size_t n = p_.cols;
    const unimem::view<double> halo_above = g.subview(0, n);
    const unimem::view<double> first_owned = g.subview(n, n);
    const unimem::view<double> last_owned = g.subview(p_.rows * n, n);
    const unimem::view<double> halo_below = g.subview((p_.rows + 1) * n, n);
    // Up: my first row to the rank above; from the rank below, its first row into my lower halo.
    (void)unimem::mpi::sendrecv(first_owned, p_.up, tag_up, halo_below, p_.down, tag_up, p_.comm,
                                s_);
    // Down: my last row to the rank below; from the rank above, its last row into my upper halo.
    // At the ends the peer is MPI_PROC_NULL: nothing is sent, nothing arrives, and the edge row
    // in the halo keeps its value. The single-rank run has MPI_PROC_NULL on both sides.
    (void)unimem::mpi::sendrecv(last_owned, p_.down, tag_down, halo_above, p_.up, tag_down,
                                p_.comm, s_);
  }

  /// sqrt of the sum over the whole grid of (cur - next)^2: the change of the last update, in
  /// whichever order the two buffers are now. Collective over the ranks.
  double residual() {
    unimem::launch(squared_change, interior_, cur_, next_, p_.rows, p_.cols, partial_);
    unimem::launch(sum_partials, unimem::launch_config(1, 256, 0, s_), partial_, partial_.size(),
                   total_);
    // The sums of all ranks, in place; the kernels queued on s_ are done before MPI reads.
    unimem::mpi::allreduce(total_, MPI_SUM, p_.comm, s_);
    unimem::ready_for_host(total_, s_);
    return std::sqrt(total_[0]);
  }

  /// The owned rows of the last iterate (local rows 1..rows).
  [[nodiscard]] unimem::view<const double> owned() const {
    return cur_.view().subview(p_.cols, p_.rows * p_.cols);
  }
  /// Makes the last iterate readable by the CPU.
  void ready_for_host() const { unimem::ready_for_host(cur_, s_); }

  [[nodiscard]] double seconds() const noexcept { return seconds_; }
  [[nodiscard]] double halo_seconds() const noexcept { return halo_seconds_; }

 private:
  static void check_mpi(int rc, const char* call) {
    if (rc != MPI_SUCCESS) throw unimem::mpi::error(rc, call, unimem::call_site::current());
  }

  part p_;
  unimem::stream_ref s_;
  unimem::launch_config all_, interior_;
  unimem::managed_buffer<double> cur_, next_;
  unimem::managed_buffer<double> partial_, total_;
  double seconds_ = 0.0, halo_seconds_ = 0.0;
};

/// Compares `got` with `want` bit by bit; adds the differing points and the largest absolute
/// difference.
void compare(const double* got, const double* want, std::size_t n, std::size_t& differing,
             double& max_difference) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t a = 0, b = 0;
    std::memcpy(&a, got + i, sizeof a);
    std::memcpy(&b, want + i, sizeof b);
    if (a != b) {
      ++differing;
      const double d = std::fabs(got[i] - want[i]);
      if (!(d <= max_difference)) max_difference = d;  // NaN counts as the largest
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The program

int run(int rank, int ranks, int argc, char** argv) {
  const MPI_Comm world = MPI_COMM_WORLD;
  options opt;

  // 1. Arguments: every rank parses; rank 0's options are the ones used.
  int code = agree(attempt([&] { opt = parse(argc, argv); }), rank, world);
  if (code != 0) {
    if (rank == 0) std::fprintf(stderr, "%s", usage_text);
    return code;
  }
  MPI_Bcast(&opt, static_cast<int>(sizeof opt), MPI_BYTE, 0, world);
  if (opt.help) {
    if (rank == 0) std::printf("%s", usage_text);
    return 0;
  }
  const std::size_t global_rows = opt.rows_per_rank * static_cast<std::size_t>(ranks);

  // 2. A GPU per rank (none: exit status 2 on every rank) and its stream.
  std::optional<unimem::device> gpu;
  std::optional<unimem::stream> s;
  code = agree(attempt([&] {
                 gpu = unimem::mpi::use_local_device(world);
                 s.emplace();  // on the GPU just made current
               }),
               rank, world);
  if (code != 0) return code;

  // 3. Memory: every rank's managed buffers (rank 0 also holds the single-rank grid when it
  // verifies) must fit in the free memory of its GPU, with the ranks that share that GPU.
  std::size_t mine = 0, free_bytes = 0;
  code = agree(attempt([&] {
                 if (static_cast<double>(global_rows + 2) * static_cast<double>(opt.cols) >
                     static_cast<double>(std::size_t{1} << 40)) {
                   throw usage_error("the grid has more than 2^40 points: use fewer --cols or "
                                     "--rows-per-rank");
                 }
                 mine = solver_bytes(opt.rows_per_rank, opt.cols) +
                        (rank == 0 && opt.verify ? solver_bytes(global_rows, opt.cols) : 0);
                 free_bytes = gpu->free_memory();
               }),
               rank, world);
  if (code != 0) return code;
  MPI_Comm node = MPI_COMM_NULL, same_gpu = MPI_COMM_NULL;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_split(node, gpu->device_id(), rank, &same_gpu);
  unsigned long long need = mine, free_least = free_bytes;
  MPI_Allreduce(MPI_IN_PLACE, &need, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, same_gpu);
  MPI_Allreduce(MPI_IN_PLACE, &free_least, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, same_gpu);
  int sharing = 1;
  MPI_Comm_size(same_gpu, &sharing);
  MPI_Comm_free(&same_gpu);
  MPI_Comm_free(&node);
  code = agree(attempt([&] {
                 if (need > free_least / 10 * 9) {
                   char why[400];
                   std::snprintf(why, sizeof why,
                                 "the grid needs %.0f MiB of managed memory on GPU %d (%d rank(s) "
                                 "on it), more than 90%% of the %.0f MiB free: use fewer "
                                 "--cols or --rows-per-rank (or --no-verify)",
                                 static_cast<double>(need) / 1048576.0, gpu->device_id(), sharing,
                                 static_cast<double>(free_least) / 1048576.0);
                   throw usage_error(why);
                 }
               }),
               rank, world);
  if (code != 0) return code;

  // Who runs where.
  char line[256];
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int host_length = 0;
  MPI_Get_processor_name(host, &host_length);
  std::snprintf(line, sizeof line, "  rank %d: GPU %d, %.96s, on %.96s", rank, gpu->device_id(),
                gpu->name(), host);
  std::vector<char> lines(rank == 0 ? sizeof line * static_cast<std::size_t>(ranks) : 0);
  MPI_Gather(line, sizeof line, MPI_CHAR, lines.data(), sizeof line, MPI_CHAR, 0, world);
  if (rank == 0) {
    const unimem::mpi::gpu_awareness aware = unimem::mpi::current_gpu_awareness();
    std::printf("mpi_jacobi: %d rank(s), grid of %zu x %zu points (%zu rows per rank and the 2 "
                "edge rows), %lld iterations after %d warm-up ones\n",
                ranks, global_rows + 2, opt.cols, opt.rows_per_rank, opt.iterations,
                warmup_iterations);
    for (int r = 0; r < ranks; ++r) {
      std::printf("%s\n", &lines[sizeof line * static_cast<std::size_t>(r)]);
    }
    std::printf("  MPI takes GPU pointers: %s (%s)\n", aware.device_pointers ? "yes" : "no",
                aware.source);
    std::fflush(stdout);
  }

  // 4. The buffers, on each GPU.
  const part mine_part{opt.cols,
                       opt.rows_per_rank,
                       opt.rows_per_rank * static_cast<std::size_t>(rank),
                       global_rows,
                       rank == 0 ? MPI_PROC_NULL : rank - 1,
                       rank == ranks - 1 ? MPI_PROC_NULL : rank + 1,
                       world};
  std::optional<solver> distributed;
  code = agree(attempt([&] { distributed.emplace(mine_part, *s); }), rank, world);
  if (code != 0) return code;

  // 5. The distributed run, and the final residual.
  double residual = 0.0;
  or_abort(rank, world, [&] {
    distributed->run(warmup_iterations, opt.iterations, opt.check_every, rank == 0);
    residual = distributed->residual();
  });
  double local[2] = {distributed->seconds(), distributed->halo_seconds()};
  double slowest[2] = {0.0, 0.0};
  or_abort(rank, world, [&] { unimem::mpi::allreduce(local, slowest, MPI_MAX, world); });
  const double ms = slowest[0] * 1e3 / static_cast<double>(opt.iterations);
  const double halo_ms = slowest[1] * 1e3 / static_cast<double>(opt.iterations);
  if (rank == 0) {
    std::printf("  time per iteration: %.4f ms, of which halo exchange %.4f ms (the slowest "
                "rank's)\n",
                ms, halo_ms);
    std::printf("  final residual: %.6e\n", residual);
    std::printf("mpi_jacobi: ranks=%d cols=%zu rows_per_rank=%zu iterations=%lld "
                "ms_per_iteration=%.6f halo_ms_per_iteration=%.6f\n",
                ranks, opt.cols, opt.rows_per_rank, opt.iterations, ms, halo_ms);
    std::fflush(stdout);
  }
  if (!opt.verify) return 0;

  // 6. The single-rank run of the whole grid on rank 0 (no communication: the others wait for
  // the agreement).
  std::optional<solver> single;
  double single_residual = 0.0;
  code = agree(attempt([&] {
                 if (rank != 0) return;
                 const part whole{opt.cols, global_rows, 0, global_rows, MPI_PROC_NULL,
                                  MPI_PROC_NULL, MPI_COMM_SELF};
                 single.emplace(whole, *s);
                 single->run(warmup_iterations, opt.iterations, 0, false);
                 single_residual = single->residual();
                 single->ready_for_host();
                 distributed->ready_for_host();
               }),
               rank, world);
  if (code != 0) return code;

  // 7. Every rank's owned rows to rank 0, compared there with the single-rank grid.
  std::size_t differing = 0;
  double max_difference = 0.0;
  or_abort(rank, world, [&] {
    const std::size_t n = opt.rows_per_rank * opt.cols;
    if (rank != 0) {
      unimem::mpi::send(distributed->owned(), 0, tag_result, world, *s);
      return;
    }
    const double* want = single->owned().data();
    compare(distributed->owned().data(), want, n, differing, max_difference);
    std::vector<double> got(n);
    for (int r = 1; r < ranks; ++r) {
      (void)unimem::mpi::recv(got, r, tag_result, world);
      compare(got.data(), want + static_cast<std::size_t>(r) * n, n, differing, max_difference);
    }
  });
  unsigned long long verdict = differing;
  MPI_Bcast(&verdict, 1, MPI_UNSIGNED_LONG_LONG, 0, world);
  if (rank == 0) {
    const std::size_t points = global_rows * opt.cols;
    if (verdict != 0) {
      std::fprintf(stderr,
                   "mpi_jacobi: FAILED: %zu of %zu points differ from the single-rank run "
                   "(largest absolute difference %.3e)\n",
                   differing, points, max_difference);
    } else {
      std::printf("  single-rank run on rank 0: %.4f ms per iteration, final residual %.6e\n",
                  single->seconds() * 1e3 / static_cast<double>(opt.iterations), single_residual);
      std::printf("mpi_jacobi: verified: distributed result identical to the single-rank run "
                  "(%zu points)\n",
                  points);
    }
    std::fflush(stdout);
  }
  return verdict != 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    unimem::mpi::environment env(argc, argv);  // MPI_Init; MPI_Finalize when main returns
    return run(env.rank(), env.size(), argc, argv);
  } catch (const std::exception& e) {  // MPI itself could not start
    std::fprintf(stderr, "mpi_jacobi: %s\n", e.what());
    return 1;
  }
}
