// halo_steps: where the time of one halo iteration goes with a managed grid against a device
// grid (issue 26, item 3). Raw CUDA, no unimem, no MPI: the steps a staged halo exchange makes
// on one rank, each followed by a stream synchronisation and timed on the host.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/halo_steps.cu -o halo_steps && ./halo_steps
//
// The grid of unimem-mpi-bench's halo section: 16 interior rows + 2 ghost rows of 8192 doubles
// (64 KiB a row), prefetched to GPU 0 (managed) or cudaMalloc'd. Per iteration:
//   kernel      the boundary rows updated from the ghost rows
//   query       what unimem::mpi asks of a managed row: cudaPointerGetAttributes, and
//               cudaMemRangeGetAttribute (preferred location, last prefetch location)
//   copy out    the two boundary rows to pinned memory (cudaMemcpyAsync, default kind)
//   copy in     two pinned rows into the ghost rows
// Medians of 500 iterations after 50 of warm-up, in microseconds.
#include "probe.hpp"

__global__ void halo_edges(double* g, std::size_t cols, std::size_t rows) {
  const std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (j >= cols) return;
  g[cols + j] = g[j] + 1.0;
  g[rows * cols + j] = g[(rows + 1) * cols + j] + 1.0;
}

int main() {
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  const std::size_t C = 8192, R = 16, total = (R + 2) * C, row = C * sizeof(double);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  double* pinned = nullptr;
  CK(cudaMallocHost(&pinned, 4 * row));
  for (int kind = 0; kind < 2; ++kind) {
    double* g = nullptr;
    if (kind == 0) {
      CK(cudaMallocManaged(&g, total * sizeof(double)));
      for (std::size_t i = 0; i < total; ++i) g[i] = 1.0;
      CK(cudaMemPrefetchAsync(g, total * sizeof(double), on_device(0), 0, s));
    } else {
      CK(cudaMalloc(&g, total * sizeof(double)));
      CK(cudaMemsetAsync(g, 0, total * sizeof(double), s));
    }
    CK(cudaStreamSynchronize(s));
    std::vector<double> t_kernel, t_query, t_out, t_in, t_all;
    for (int it = 0; it < 550; ++it) {
      const auto t0 = clock_type::now();
      halo_edges<<<(C + 255) / 256, 256, 0, s>>>(g, C, R);
      CK(cudaStreamSynchronize(s));
      const auto t1 = clock_type::now();
      if (kind == 0) {
        cudaPointerAttributes a{};
        CK(cudaPointerGetAttributes(&a, g + C));
        int where = 0;
        CK(cudaMemRangeGetAttribute(&where, sizeof where, cudaMemRangeAttributePreferredLocation,
                                    g + C, row));
        CK(cudaMemRangeGetAttribute(&where, sizeof where,
                                    cudaMemRangeAttributeLastPrefetchLocation, g + C, row));
      }
      const auto t2 = clock_type::now();
      CK(cudaMemcpyAsync(pinned, g + C, row, cudaMemcpyDefault, s));
      CK(cudaMemcpyAsync(pinned + C, g + R * C, row, cudaMemcpyDefault, s));
      CK(cudaStreamSynchronize(s));
      const auto t3 = clock_type::now();
      CK(cudaMemcpyAsync(g + (R + 1) * C, pinned + 2 * C, row, cudaMemcpyDefault, s));
      CK(cudaMemcpyAsync(g, pinned + 3 * C, row, cudaMemcpyDefault, s));
      CK(cudaStreamSynchronize(s));
      const auto t4 = clock_type::now();
      if (it < 50) continue;
      auto us = [](clock_type::time_point a, clock_type::time_point b) {
        return std::chrono::duration<double, std::micro>(b - a).count();
      };
      t_kernel.push_back(us(t0, t1));
      t_query.push_back(us(t1, t2));
      t_out.push_back(us(t2, t3));
      t_in.push_back(us(t3, t4));
      t_all.push_back(us(t0, t4));
    }
    std::printf("%-8s kernel %7.1f  query %6.1f  copy out %7.1f  copy in %7.1f  iteration %7.1f us\n",
                kind == 0 ? "managed" : "device", median(t_kernel), median(t_query), median(t_out),
                median(t_in), median(t_all));
    CK(cudaFree(g));
  }
  CK(cudaFreeHost(pinned));
  CK(cudaStreamDestroy(s));
  return 0;
}
