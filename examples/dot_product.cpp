// dot_product: x . y for two managed buffers, with unimem's block reduction, checked against
// a CPU result. Each block reduces its grid-stride partial sums (in double) to one value; the
// CPU adds the per-block values, so the result is deterministic run to run.
#include <unimem/unimem.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <random>

__global__ void dot_partials(const float* x, const float* y, std::size_t n, double* partial) {
  double sum = 0.0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    sum += static_cast<double>(x[i]) * y[i];
  }
  sum = unimem::block::reduce(sum);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

int main() {
  if (unimem::device_count() == 0) {
    std::fprintf(stderr, "dot_product: no GPU was found; this example needs one.\n");
    return 2;
  }
  try {
    const std::size_t n = 10'000'019;  // prime: no block or warp divides it
    unimem::managed_buffer<float> x(n, unimem::uninitialized), y(n, unimem::uninitialized);
    std::mt19937 rng(2026);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = dist(rng);
      y[i] = dist(rng);
    }
    const unimem::device gpu = unimem::device::current();
    const unsigned blocks = static_cast<unsigned>(gpu.multiprocessors()) * 4;
    const unsigned threads = 250;  // not a multiple of any warp size
    unimem::managed_buffer<double> partial(blocks);
    unimem::launch(dot_partials, unimem::launch_config(blocks, threads), unimem::in(x),
                   unimem::in(y), n, unimem::out(partial));
    unimem::ready_for_host(partial);
    double gpu_result = 0.0;
    for (double p : partial) gpu_result += p;

    double cpu_result = 0.0;
    for (std::size_t i = 0; i < n; ++i) cpu_result += static_cast<double>(x[i]) * y[i];

    // Tolerance: both sides add the same exact products (float * float fits a double) in
    // double, in different orders. The rounding error of such a sum is at most about
    // n * 2^-53 ~ 1.1e-9 times the sum of |x_i * y_i|; the check allows 1e-8 times it.
    double magnitude = 0.0;
    for (std::size_t i = 0; i < n; ++i) magnitude += std::fabs(static_cast<double>(x[i]) * y[i]);
    const double tolerance = 1e-8 * magnitude;
    const double difference = std::fabs(gpu_result - cpu_result);
    std::printf("dot_product: n = %zu on %s (warp size %d)\n", n, gpu.name(),
                gpu.warp_size());
    std::printf("  GPU %.12f\n  CPU %.12f\n  |difference| %.3e, tolerance %.3e\n", gpu_result,
                cpu_result, difference, tolerance);
    if (!(difference <= tolerance)) {
      std::fprintf(stderr, "dot_product: FAILED, the results differ by more than the tolerance\n");
      return 1;
    }
    std::printf("dot_product: OK\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dot_product: %s\n", e.what());
    return 1;
  }
}
