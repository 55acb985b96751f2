// pool_steps: where unimem::managed_pool's microsecond over the raw CUDA 13 managed pool goes
// (issue 28, item 2: pool/unimem was 1.107 of runtime-pool/raw at 1 MiB and 1.15 at 4 KiB).
// Unlike the other probes this one includes unimem: it times the same iteration as
// unimem-bench --only pool (allocate, fill kernel, free, synchronise the stream) built up one
// layer at a time, the variants rotated every iteration so that none always follows another:
//   raw-A       cudaMallocFromPoolAsync from raw pool A, <<<>>>, cudaFreeAsync
//   raw-B       the same from a second raw pool B (is a second pool alone slower?)
//   pool-calls  managed_pool::allocate / deallocate, <<<>>>
//   buffer      pool_buffer<float>, <<<>>> on its data()
//   buffer+launch  pool_buffer<float>, unimem::launch (what the bench times)
// and the host page faults each variant takes per iteration (getrusage), which decide whether
// a placement record still holds (detail/placement_record.hpp).
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -I include scripts/probes/pool_steps.cu -o pool_steps && ./pool_steps
#include <unimem/unimem.hpp>
#include <unimem/managed_pool.hpp>

#include "probe.hpp"

#include <limits>
#include <sys/resource.h>
#include <string>

__global__ void probe_fill(float* p, std::size_t n, float v) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}

static long long faults() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt + r.ru_majflt;
}

static cudaMemPool_t raw_pool() {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypeManaged;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeNone;
  props.location.id = 0;
  cudaMemPool_t p = nullptr;
  CK(cudaMemPoolCreate(&p, &props));
  unsigned long long keep = std::numeric_limits<unsigned long long>::max();
  CK(cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &keep));
  return p;
}

int main() {
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const cudaStream_t rs = s.get();
  cudaMemPool_t a = raw_pool(), b = raw_pool();
  unimem::managed_pool pool;
  std::printf("unimem pool: %s\n", pool.implementation_name());
  const char* names[] = {"raw-A", "raw-B", "pool-calls", "buffer", "buffer+launch"};
  constexpr int variants = 5, iterations = 401;
  for (const std::size_t bytes : {std::size_t{4} << 10, std::size_t{1} << 20}) {
    const std::size_t n = bytes / sizeof(float);
    const unsigned grid = static_cast<unsigned>((n + 255) / 256);
    const auto cfg = unimem::grid_for(n, 256).on(s);
    std::vector<double> us[variants];
    long long faulted[variants] = {};
    float v = 0;
    for (int it = 0; it < iterations + 20; ++it) {
      for (int k = 0; k < variants; ++k) {
        const int which = (k + it) % variants;
        v += 1;
        const long long f0 = faults();
        const auto t0 = clock_type::now();
        switch (which) {
          case 0:
          case 1: {
            void* p = nullptr;
            CK(cudaMallocFromPoolAsync(&p, bytes, which == 0 ? a : b, rs));
            probe_fill<<<grid, 256, 0, rs>>>(static_cast<float*>(p), n, v);
            CK(cudaFreeAsync(p, rs));
            break;
          }
          case 2: {
            void* p = pool.allocate(bytes, s);
            probe_fill<<<grid, 256, 0, rs>>>(static_cast<float*>(p), n, v);
            pool.deallocate(p, bytes, s);
            break;
          }
          case 3: {
            unimem::pool_buffer<float> buf(n, pool, s);
            probe_fill<<<grid, 256, 0, rs>>>(buf.data(), n, v);
            break;
          }
          default: {
            unimem::pool_buffer<float> buf(n, pool, s);
            unimem::launch(probe_fill, cfg, buf, n, v);
            break;
          }
        }
        CK(cudaStreamSynchronize(rs));
        if (it >= 20) {
          us[which].push_back(us_since(t0));
          faulted[which] += faults() - f0;
        }
      }
    }
    std::printf("%zu KiB, median us of %d:", bytes >> 10, iterations);
    for (int k = 0; k < variants; ++k) std::printf("  %s %.2f", names[k], median(us[k]));
    std::printf("\n  ratios to raw-A:");
    for (int k = 1; k < variants; ++k) std::printf("  %s %.3f", names[k], median(us[k]) / median(us[0]));
    std::printf("\n  host page faults per iteration:");
    for (int k = 0; k < variants; ++k) {
      std::printf("  %s %.3f", names[k], static_cast<double>(faulted[k]) / iterations);
    }
    std::printf("\n");
  }
  CK(cudaMemPoolDestroy(a));
  CK(cudaMemPoolDestroy(b));
  return 0;
}
