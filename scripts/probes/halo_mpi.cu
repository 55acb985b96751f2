// halo_mpi: why a wait after a copy of managed memory costs 100-200 us when two MPI ranks share
// one GPU (issue 26, item 3), and whether a copy kernel avoids it. Raw CUDA + MPI, no unimem.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/halo_mpi.cu -o halo_mpi
//        $(mpicxx --showme:compile) $(mpicxx --showme:link) && mpiexec -n 2 ./halo_mpi
// (one command line)
//
// The halo of unimem-mpi-bench: a grid of 16 interior rows + 2 ghost rows of 8192 doubles
// (64 KiB a row) per rank, both ranks on GPU 0. One iteration: the edge kernel; the two boundary
// rows staged out to pinned memory; MPI_Sendrecv with the other rank; the two ghost rows staged
// in. Variants: the grid in device or managed memory (prefetched to the GPU); the staging done
// by cudaMemcpyAsync or by a copy kernel that reads/writes the pinned buffer directly; 2 waits
// per iteration (both rows out, wait, exchange, both in, wait) or 4 (one row at a time, as two
// sendrecv calls do). Then a ping-pong of one message each way, 64 KiB to 16 MiB, staged the
// same ways. Blocks interleaved over 9 repetitions; medians, in microseconds. Run it as it is
// (the two processes' contexts time-share the GPU) and under MPS (nvidia-cuda-mps-control -d:
// one context serves both), how ranks that share a GPU are usually run.
#include "probe.hpp"

#include <mpi.h>

__global__ void halo_edges(double* g, std::size_t cols, std::size_t rows) {
  const std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (j >= cols) return;
  g[cols + j] = g[j] + 1.0;
  g[rows * cols + j] = g[(rows + 1) * cols + j] + 1.0;
}

__global__ void copy_kernel(double* __restrict__ dst, const double* __restrict__ src,
                            std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

namespace {

int g_rank = 0;

enum how { memcpy_default, memcpy_explicit, kernel_copy };

// Stages n doubles: cudaMemcpyAsync with cudaMemcpyDefault, or with the explicit kind (a pinned
// source is a copy in), or a copy kernel.
void stage(double* dst, const double* src, std::size_t n, how h, cudaStream_t s, bool in) {
  if (h == kernel_copy) {
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 1024));
    copy_kernel<<<blocks, 256, 0, s>>>(dst, src, n);
    CK(cudaGetLastError());
  } else {
    const cudaMemcpyKind k =
        h == memcpy_default ? cudaMemcpyDefault : in ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    CK(cudaMemcpyAsync(dst, src, n * sizeof(double), k, s));
  }
}

double slower_rank(double v) {
  double other = 0;
  MPI_Allreduce(&v, &other, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return other;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const int peer = 1 - g_rank;
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  const std::size_t C = 8192, R = 16, total = (R + 2) * C;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  double *send_top, *send_bottom, *recv_top, *recv_bottom;
  CK(cudaMallocHost(&send_top, C * sizeof(double)));
  CK(cudaMallocHost(&send_bottom, C * sizeof(double)));
  CK(cudaMallocHost(&recv_top, C * sizeof(double)));
  CK(cudaMallocHost(&recv_bottom, C * sizeof(double)));
  double *dg, *mg;
  CK(cudaMalloc(&dg, total * sizeof(double)));
  CK(cudaMemsetAsync(dg, 0, total * sizeof(double), s));
  CK(cudaMallocManaged(&mg, total * sizeof(double)));
  for (std::size_t i = 0; i < total; ++i) mg[i] = 0;
  CK(cudaMemPrefetchAsync(mg, total * sizeof(double), on_device(0), 0, s));
  CK(cudaStreamSynchronize(s));
  const int count = static_cast<int>(C);
  const unsigned blocks = static_cast<unsigned>((C + 255) / 256);

  auto two_waits = [&](double* g, how kernel) {
    halo_edges<<<blocks, 256, 0, s>>>(g, C, R);
    stage(send_top, g + C, C, kernel, s, false);
    stage(send_bottom, g + R * C, C, kernel, s, false);
    CK(cudaStreamSynchronize(s));
    MPI_Sendrecv(send_top, count, MPI_DOUBLE, peer, 0, recv_bottom, count, MPI_DOUBLE, peer, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(send_bottom, count, MPI_DOUBLE, peer, 1, recv_top, count, MPI_DOUBLE, peer, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    stage(g + (R + 1) * C, recv_bottom, C, kernel, s, true);
    stage(g, recv_top, C, kernel, s, true);
    CK(cudaStreamSynchronize(s));
  };
  auto four_waits = [&](double* g, how kernel) {
    halo_edges<<<blocks, 256, 0, s>>>(g, C, R);
    const std::size_t out_row[2] = {C, R * C}, in_row[2] = {(R + 1) * C, 0};
    for (int k = 0; k < 2; ++k) {
      stage(send_top, g + out_row[k], C, kernel, s, false);
      CK(cudaStreamSynchronize(s));
      MPI_Sendrecv(send_top, count, MPI_DOUBLE, peer, k, recv_top, count, MPI_DOUBLE, peer, k,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      stage(g + in_row[k], recv_top, C, kernel, s, true);
      CK(cudaStreamSynchronize(s));
    }
  };
  struct variant {
    const char* name;
    double* grid;
    how kernel;
    bool four;
  };
  const variant vs[] = {
      {"device, memcpy, 2 waits", dg, memcpy_default, false},
      {"device, memcpy, 4 waits", dg, memcpy_default, true},
      {"device, kernel, 4 waits", dg, kernel_copy, true},
      {"managed, memcpy, 2 waits", mg, memcpy_default, false},
      {"managed, memcpy, 4 waits", mg, memcpy_default, true},
      {"managed, memcpy D2H/H2D, 4 waits", mg, memcpy_explicit, true},
      {"managed, kernel, 2 waits", mg, kernel_copy, false},
      {"managed, kernel, 4 waits", mg, kernel_copy, true},
  };
  constexpr int nv = sizeof(vs) / sizeof(vs[0]);
  const int reps = 9, iters = 300, warm = 30;
  std::vector<double> us[nv];
  for (int rep = 0; rep < reps; ++rep) {
    for (int k = 0; k < nv; ++k) {
      const variant& v = vs[k];
      auto it = [&] { v.four ? four_waits(v.grid, v.kernel) : two_waits(v.grid, v.kernel); };
      for (int i = 0; i < warm; ++i) it();
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = clock_type::now();
      for (int i = 0; i < iters; ++i) it();
      us[k].push_back(slower_rank(us_since(t0) / iters));
    }
  }
  if (g_rank == 0) {
    std::printf("halo, 2 ranks on one GPU, 64 KiB rows, per iteration (median of %d x %d):\n",
                reps, iters);
    for (int k = 0; k < nv; ++k) std::printf("  %-28s %9.1f us\n", vs[k].name, median(us[k]));
  }

  // Ping-pong: rank 0 stages out, sends, receives, stages in; rank 1 the other way round.
  const std::size_t most = std::size_t{16} << 20;
  double *dbuf, *mbuf, *pin;
  CK(cudaMalloc(&dbuf, most));
  CK(cudaMallocManaged(&mbuf, most));
  CK(cudaMemsetAsync(dbuf, 0, most, s));
  CK(cudaMemPrefetchAsync(mbuf, most, on_device(0), 0, s));
  CK(cudaMemsetAsync(mbuf, 0, most, s));
  CK(cudaMallocHost(&pin, most));
  CK(cudaStreamSynchronize(s));
  if (g_rank == 0) {
    std::printf("ping-pong, one message each way, GB/s (2 x bytes / round trip):\n  %-10s",
                "bytes");
  }
  struct pp {
    const char* name;
    double* buf;
    how kernel;
  };
  const pp ps[] = {{"dev-memcpy", dbuf, memcpy_default},
                   {"dev-kernel", dbuf, kernel_copy},
                   {"man-memcpy", mbuf, memcpy_default},
                   {"man-kernel", mbuf, kernel_copy}};
  if (g_rank == 0) {
    for (const pp& p : ps) std::printf(" %11s", p.name);
    std::printf("\n");
  }
  for (std::size_t bytes = 64 << 10; bytes <= most; bytes *= 4) {
    const std::size_t n = bytes / sizeof(double);
    const int cnt = static_cast<int>(n);
    std::vector<double> gbs[4];
    for (int rep = 0; rep < reps; ++rep) {
      for (int k = 0; k < 4; ++k) {
        auto round = [&] {
          if (g_rank == 0) {
            stage(pin, ps[k].buf, n, ps[k].kernel, s, false);
            CK(cudaStreamSynchronize(s));
            MPI_Send(pin, cnt, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
            MPI_Recv(pin, cnt, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            stage(ps[k].buf, pin, n, ps[k].kernel, s, true);
            CK(cudaStreamSynchronize(s));
          } else {
            MPI_Recv(pin, cnt, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            stage(ps[k].buf, pin, n, ps[k].kernel, s, true);
            CK(cudaStreamSynchronize(s));
            stage(pin, ps[k].buf, n, ps[k].kernel, s, false);
            CK(cudaStreamSynchronize(s));
            MPI_Send(pin, cnt, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
          }
        };
        const int rounds = bytes <= (1u << 20) ? 100 : 20;
        for (int i = 0; i < 5; ++i) round();
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = clock_type::now();
        for (int i = 0; i < rounds; ++i) round();
        const double us_round = slower_rank(us_since(t0) / rounds);
        gbs[k].push_back(2.0 * bytes / (us_round * 1e3));
      }
    }
    if (g_rank == 0) {
      std::printf("  %-10zu", bytes);
      for (int k = 0; k < 4; ++k) std::printf(" %11.2f", median(gbs[k]));
      std::printf("\n");
    }
  }
  MPI_Finalize();
  return 0;
}
