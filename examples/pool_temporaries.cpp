// pool_temporaries: a time-stepping loop that needs scratch arrays at every step, of sizes that
// change from step to step, as solvers' work arrays, compaction outputs and coarse grids do.
// Each step smooths the state into a temporary, sums it onto a coarse temporary whose size
// depends on the step, and folds the coarse values back into the state. The temporaries come
// from a unimem::managed_pool on the loop's stream (microseconds) instead of managed_buffer's
// cudaMallocManaged / hipMallocManaged (a hundred microseconds and more for each, and a free
// that waits for the whole device). The program runs the loop both ways, checks every element
// against a CPU model, and prints the time per step of each and what the pool held.
// Usage: pool_temporaries [elements, default 4194304] [steps, default 40]
#include <unimem/unimem.hpp>
#include <unimem/managed_pool.hpp>  // managed_pool, pool_buffer (not in the umbrella header)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

// t[i] = x[i-1] + 2 x[i] + x[i+1] (0 beyond the ends), in unsigned arithmetic: exact on both
// sides, so the GPU and the CPU model must agree bit for bit.
__global__ void smooth(const unsigned* x, unsigned* t, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const unsigned left = i > 0 ? x[i - 1] : 0u, right = i + 1 < n ? x[i + 1] : 0u;
  t[i] = left + 2u * x[i] + right;
}
// c[j] = the sum of t over [j f, (j + 1) f), m = ceil(n / f) coarse values.
__global__ void coarsen(const unsigned* t, unsigned* c, std::size_t n, std::size_t f,
                        std::size_t m) {
  const std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (j >= m) return;
  unsigned sum = 0;
  for (std::size_t i = j * f; i < n && i < (j + 1) * f; ++i) sum += t[i];
  c[j] = sum;
}
// x[i] = t[i] / 4 + c[i / f] * 2654435761 (Knuth's multiplicative hash spreads the sums).
__global__ void fold(unsigned* x, const unsigned* t, const unsigned* c, std::size_t n,
                     std::size_t f) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = t[i] / 4u + c[i / f] * 2654435761u;
}

namespace {

/// The coarsening factor of a step: 2, 4, ..., 64, so the coarse temporary changes size.
std::size_t factor(int step) { return std::size_t{2} << (step % 6); }

/// The same steps on the CPU.
std::vector<unsigned> model(std::size_t n, int steps) {
  std::vector<unsigned> x(n), t(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<unsigned>(i * 7919u);
  for (int step = 0; step < steps; ++step) {
    const std::size_t f = factor(step), m = (n + f - 1) / f;
    std::vector<unsigned> c(m, 0u);
    for (std::size_t i = 0; i < n; ++i) {
      t[i] = (i > 0 ? x[i - 1] : 0u) + 2u * x[i] + (i + 1 < n ? x[i + 1] : 0u);
    }
    for (std::size_t i = 0; i < n; ++i) c[i / f] += t[i];
    for (std::size_t i = 0; i < n; ++i) x[i] = t[i] / 4u + c[i / f] * 2654435761u;
  }
  return x;
}

/// Runs the steps with temporaries from `pool` (or, with no pool, from managed_buffer);
/// returns milliseconds per step, or -1 when the result differs from the model.
double run(std::size_t n, int steps, unimem::managed_pool* pool,
           const std::vector<unsigned>& expected) {
  unimem::stream s;
  unimem::managed_buffer<unsigned> x(n, unimem::uninitialized);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<unsigned>(i * 7919u);
  const auto cfg = unimem::grid_for(n).on(s);
  const auto t0 = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    const std::size_t f = factor(step), m = (n + f - 1) / f;
    const auto coarse_cfg = unimem::grid_for(m).on(s);
    if (pool != nullptr) {
      unimem::pool_buffer<unsigned> t(n, *pool, s), c(m, *pool, s);  // in the order of s
      unimem::launch(smooth, cfg, unimem::in(x), unimem::out(t), n);
      unimem::launch(coarsen, coarse_cfg, unimem::in(t), unimem::out(c), n, f, m);
      unimem::launch(fold, cfg, unimem::inout(x), unimem::in(t), unimem::in(c), n, f);
    } else {  // what the loop costs without a pool
      unimem::managed_buffer<unsigned> t(n, unimem::uninitialized), c(m, unimem::uninitialized);
      unimem::launch(smooth, cfg, unimem::in(x), unimem::out(t), n);
      unimem::launch(coarsen, coarse_cfg, unimem::in(t), unimem::out(c), n, f, m);
      unimem::launch(fold, cfg, unimem::inout(x), unimem::in(t), unimem::in(c), n, f);
      s.synchronize();  // t and c are freed here: no kernel may still use them
    }
  }  // the pool's temporaries go back in the order of s: no wait for the device
  unimem::ready_for_host(x, s);
  const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] != expected[i]) {
      std::fprintf(stderr, "pool_temporaries: element %zu: %u, expected %u\n", i, x[i],
                   expected[i]);
      return -1;
    }
  }
  return ms.count() / steps;
}

}  // namespace

int main(int argc, char** argv) {
  if (unimem::device_count() == 0) {
    std::fprintf(stderr, "pool_temporaries: no GPU was found; this example needs one "
                         "(unimem-info says why).\n");
    return 2;
  }
  const long long elements = argc > 1 ? std::atoll(argv[1]) : 4194304;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 40;
  if (elements < 1 || elements > (1ll << 28) || steps < 1) {
    std::fprintf(stderr, "usage: pool_temporaries [elements, 1 to 2^28] [steps, >= 1]\n");
    return 1;
  }
  try {
    const std::size_t n = static_cast<std::size_t>(elements);
    const std::vector<unsigned> expected = model(n, steps);
    unimem::managed_pool pool;  // on the current device, keeps what it allocates
    std::printf("pool_temporaries: %zu elements, %d steps, two temporaries a step (%zu and "
                "%zu-%zu elements) on %s\n",
                n, steps, n, (n + 63) / 64, (n + 1) / 2, unimem::device::current().name());
    std::printf("  the pool: %s\n", pool.implementation_name());
    // A first step each way, untimed: the kernels' first launches (lazy module loading) and the
    // pool's first allocations of each size are not what a long loop costs.
    const std::vector<unsigned> one_step = model(n, 1);
    if (run(n, 1, &pool, one_step) < 0 || run(n, 1, nullptr, one_step) < 0) {
      std::fprintf(stderr, "pool_temporaries: FAILED, the GPU's first step differs from the CPU's\n");
      return 1;
    }
    const double with_pool = run(n, steps, &pool, expected);
    const double without = run(n, steps, nullptr, expected);
    if (with_pool < 0 || without < 0) {
      std::fprintf(stderr, "pool_temporaries: FAILED, the GPU's result differs from the CPU's\n");
      return 1;
    }
    const unimem::pool_statistics st = pool.statistics();
    std::printf("  temporaries from the pool:          %8.3f ms a step\n", with_pool);
    std::printf("  temporaries from managed_buffer:    %8.3f ms a step (%.2fx the pool's)\n",
                without, without / with_pool);
    std::printf("  the pool's peak in use %zu bytes, held %zu bytes, %zu allocations out\n",
                st.peak_bytes_in_use, st.bytes_held, st.allocations);
    if (st.allocations != 0) {
      std::fprintf(stderr, "pool_temporaries: FAILED, the pool still counts allocations\n");
      return 1;
    }
    std::printf("pool_temporaries: OK\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pool_temporaries: %s\n", e.what());
    return 1;
  }
}
