// unimem-bench's harness: the options, timing, the table of results and the helpers that
// several scenarios share. Each scenario is one source file (pipeline.cpp, steady_state.cpp,
// stream.cpp, launch_overhead.cpp, ping_pong.cpp, two_gpus.cpp) that adds its rows here; report.cpp
// prints them and main.cpp runs everything.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace unimem_bench {

using clock_type = std::chrono::steady_clock;

/// @brief Milliseconds from t0 until now.
inline double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

/// @brief Runs f() and returns the milliseconds it took.
template <class F>
double time_ms(F&& f) {
  const auto t0 = clock_type::now();
  f();
  return ms_since(t0);
}

/// @brief The command line's settings (main.cpp parses them).
struct options {
  std::size_t size_mib = 1024;
  int reps = 5;
  int iterations = 5;  ///< per strategy and repetition: the first (allocation included), then steady
  int threads = 0;     ///< CPU threads for the CPU's share of the work; 0: min(8, the cores)
  std::size_t sweep_max_mib = 4096;  ///< the largest size of the size sweeps
  std::string only;                  ///< ",a,b,": run only these scenarios (empty: all)
  std::vector<std::size_t> stream_mib{64, 2048};  ///< the STREAM section's sizes, MiB per array
  std::vector<std::size_t> init_kib{65536, 1048576};  ///< the init section's array sizes, KiB
  /// The GPU memory the oversubscribe section's ballast leaves free, GiB (--leave-free-gib).
  double leave_free_gib = 16.0;
  /// The oversubscribe section's working sets, x the free memory (--oversubscribe-factors).
  std::vector<double> oversubscribe_factors{0.5, 1.0, 1.5, 2.0};
  int launches = 100000;
  int rounds = 2000;
  std::string csv;
};

/// @brief An init size for labels: "64MiB", or "256KiB" when it is not whole MiB.
inline std::string init_size_label(std::size_t kib) {
  return kib % 1024 == 0 ? std::to_string(kib / 1024) + "MiB" : std::to_string(kib) + "KiB";
}

/// @brief The floats in one array of --size-mib MiB.
inline std::size_t array_floats(const options& o) {
  return o.size_mib * (std::size_t{1} << 20) / sizeof(float);
}

/// @brief Blocks of `block` threads that cover n elements.
inline unsigned blocks_for(std::size_t n, unsigned block) {
  return static_cast<unsigned>((n + block - 1) / block);
}

// ---------------------------------------------------------------- results

/// @brief Median and range of a metric's repetitions.
struct stats {
  double median = 0, min = 0, max = 0;
};

/// @brief The median, minimum and maximum of v (zeros when empty).
stats summarize(std::vector<double> v);

/// @brief One line of the table: a metric of one strategy, one implementation.
struct row {
  std::string section, strategy, impl, metric, unit;
  stats s;
};

/// @brief Adds the row of these repetitions (summarized) to the results, in order.
void add_row(const std::string& section, const std::string& strategy, const std::string& impl,
             const std::string& metric, const std::string& unit, const std::vector<double>& v);

/// @brief The rows added so far, in the order they were added.
const std::vector<row>& rows();

/// @brief Counts targets a section judged itself (printing its own ratios) and missed, so that
/// the final line of the report counts them too.
void note_missed_targets(const std::string& section, int n);
/// @brief The targets noted missed so far, and the sections that missed them ("pool: 1").
int noted_missed_targets(std::string* where);

/// @brief The row with these names, or nullptr when that scenario did not run.
const row* find_row(const std::string& section, const std::string& strategy,
                    const std::string& impl, const std::string& metric);

// ---------------------------------------------------------------- progress and errors

/// @brief Overwrites the progress line on stderr.
void progress(const std::string& what);
/// @brief Clears the progress line.
void progress_done();
/// @brief Reports a wrong result and exits with status 1.
[[noreturn]] void fail(const std::string& what);

// ---------------------------------------------------------------- CPU side

/// @brief The CPU threads the CPU's share of the work runs on (--threads; default up to 8, so
/// that page-fault and memory bandwidth of one core do not hide the GPU side).
int cpu_threads(const options& o);

/// @brief Runs f(begin, end) over [0, n) split into `threads` contiguous parts, one thread each.
void parallel_for(int threads, std::size_t n, void (*f)(void*, std::size_t, std::size_t),
                  void* context);

/// @brief The pipeline's CPU initialisation on `threads` threads: a[i] = i % 1024,
/// b[i] = 2 (i % 1024).
void cpu_init(float* a, float* b, std::size_t n, int threads);

/// @brief The elements of c = a + b (after cpu_init) that are wrong, read on `threads` threads.
std::size_t cpu_check(const float* c, std::size_t n, int threads);

/// @brief The sum of c's elements read on `threads` threads (a read that cannot be skipped).
double cpu_sum(const float* c, std::size_t n, int threads);

// ---------------------------------------------------------------- scenarios, in running order

/// @brief 1. The seed's pipeline (CPU init, c = a + b on the GPU, CPU read), every strategy,
/// first iteration (allocation included) and steady state.
void pipeline(const options& o);
/// @brief 1b. GPU results back to the CPU: a kernel writes an array the CPU then reads.
void results_back(const options& o);
/// @brief 1c. The pipeline by size (4 MiB up to --size-mib per array), steady state.
void pipeline_sweep(const options& o);
/// @brief 6. Moving data by size, each direction, and the crossover of mapping vs moving.
void movement(const options& o);
/// @brief 2. The kernel alone on memory already on the GPU: device memory vs managed_buffer.
void steady_state(const options& o);
/// @brief 2b. BabelStream's kernels (copy, mul, add, triad, dot) over arrays of double already on
/// the GPU, at each --stream-mib size: raw managed memory, managed_buffer untagged, tagged, and
/// tagged with intent map.
void stream_bench(const options& o);
/// @brief 2c. The triad over arrays already on the GPU, tagged and untagged, while the host
/// between launches faults fresh memory, runs a faulting thread, or touches one of the arrays.
void living_host(const options& o);
/// @brief 3. The host's cost of enqueueing a launch, raw vs unimem::launch.
void launch_overhead(const options& o);
/// @brief 4. CPU and GPU taking turns on one value and on one page.
void ping_pong(const options& o);
/// @brief 5. Data resident on GPU0 used by a kernel on GPU1 (needs two GPUs).
void two_gpus(const options& o);

/// @brief 7. Where a new managed_buffer's value initialisation should run: CPU zero-fill,
/// GPU zero-fill (first touch on the GPU) or none, before a kernel writes the array, before a
/// kernel reads it and the CPU reads it back, and before the CPU writes it, at each --init-mib
/// size, unimem and raw.
void init_bench(const options& o);

/// @brief 8. Managed memory at allocator speed (issue 28): allocate, fill and free managed memory
/// of 4 KiB, 1 MiB, 64 MiB and 1 GiB, unimem::managed_pool against cudaMallocManaged /
/// hipMallocManaged and the runtime's own pool of managed memory where there is one; prints its
/// ratios with their targets.
void pool_bench(const options& o);

/// @brief 9. DLPack export and import (<unimem/dlpack.hpp>) against the same tensor built and
/// taken by hand, per operation.
void dlpack_bench(const options& o);

/// @brief 10. Working sets larger than the GPU (issue 51): a ballast leaves --leave-free-gib
/// free; sum and triad over 0.5x to 2x that, naive managed memory, zero-copy, the runtime's
/// prefetch per chunk, explicit chunked copies (the link's speed), unimem's tags and its windows;
/// prints GB/s and its ratios with their targets.
void oversubscribe_bench(const options& o);

/// @brief Prints the table and the ratios with their targets; writes the CSV if asked.
void report(const options& o);

}  // namespace unimem_bench
