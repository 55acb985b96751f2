// 1b. GPU results back to the CPU: a kernel writes an array of --size-mib MiB that the CPU then
// reads on --threads threads; timed from the launch until the CPU has read every element.
// Buffers are allocated once and reused (one warm-up round first): this is the steady state.
#include <unimem/unimem.hpp>

#include "harness.hpp"
#include "raw_runtime.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

__global__ void bench_results(float* c, std::size_t n, float k) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = static_cast<float>(i % 1024) + k;
}

}  // namespace

namespace unimem_bench {
namespace {

/// The sum of i % 1024 + k over [0, n), exactly (every partial sum is an integer below 2^53).
double expected_sum(std::size_t n, float k) {
  const double full = static_cast<double>(n / 1024) * (1023.0 * 1024.0 / 2.0);
  const double rest = static_cast<double>(n % 1024);
  return full + rest * (rest - 1) / 2 + static_cast<double>(k) * static_cast<double>(n);
}

}  // namespace

void results_back(const options& o) {
  const std::size_t n = array_floats(o);
  const unsigned block = 256, grid = blocks_for(n, block);
  const int threads = cpu_threads(o);
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const raw_stream_t rs = s.get();
  const auto cfg = unimem::grid_for(n, block).on(s);

  float* dev = raw_device_floats(n);
  float* pinned = raw_pinned_floats(n);
  float* managed_raw = raw_managed_floats(n);
  unimem::managed_buffer<float> moved(n, unimem::uninitialized), mapped(n, unimem::uninitialized);
  float k = 0;  // each round writes other values: a stale read cannot pass the check
  auto read = [&](const float* c, const char* what) {
    if (cpu_sum(c, n, threads) != expected_sum(n, k)) fail(std::string("results back ") + what);
  };
  using round = std::function<void()>;
  const std::vector<std::pair<std::string, round>> strategies = {
      {"explicit/raw",
       [&] {
         bench_results<<<grid, block, 0, rs>>>(dev, n, k);
         RAW_CHECK(RAW(MemcpyAsync)(pinned, dev, n * 4, RAW_D2H, rs));
         RAW_CHECK(RAW(StreamSynchronize)(rs));
         read(pinned, "explicit/raw");
       }},
      {"on-demand/raw",
       [&] {
         bench_results<<<grid, block, 0, rs>>>(managed_raw, n, k);
         RAW_CHECK(RAW(StreamSynchronize)(rs));
         read(managed_raw, "on-demand/raw");
       }},
      {"prefetch-back/raw",
       [&] {
         bench_results<<<grid, block, 0, rs>>>(managed_raw, n, k);
         raw_prefetch(managed_raw, n * 4, -1, rs);
         RAW_CHECK(RAW(StreamSynchronize)(rs));
         read(managed_raw, "prefetch-back/raw");
       }},
      {"tags/unimem",
       [&] {
         unimem::launch(bench_results, cfg, unimem::out(moved), n, k);
         unimem::ready_for_host(moved, s);
         read(moved.data(), "tags/unimem");
       }},
      {"mapped/unimem",
       [&] {
         unimem::launch(bench_results, cfg, unimem::out(mapped, unimem::intent::map), n, k);
         unimem::ready_for_host(mapped, s);
         read(mapped.data(), "mapped/unimem");
       }},
  };
  std::vector<std::vector<double>> ms(strategies.size());
  for (int rep = 0; rep <= o.reps; ++rep) {  // rep 0: warm-up (advice, first touch), not counted
    for (std::size_t i = 0; i < strategies.size(); ++i) {
      progress("[results back " + std::to_string(o.size_mib) + " MiB, " + std::to_string(threads) +
               " CPU threads] rep " + std::to_string(rep) + "/" + std::to_string(o.reps) + " " +
               strategies[i].first);
      k += 1;
      const double t = time_ms(strategies[i].second);
      if (rep > 0) ms[i].push_back(t);
    }
  }
  progress_done();
  raw_free({dev, managed_raw});
  raw_free_pinned({pinned});
  for (std::size_t i = 0; i < strategies.size(); ++i) {
    const std::string& name = strategies[i].first;
    add_row("results-back", name.substr(0, name.find('/')), name.substr(name.find('/') + 1),
            "until-read", "ms", ms[i]);
  }
}

}  // namespace unimem_bench
