// 4. Ping-pong: the CPU writes, a kernel reads and writes back, the CPU reads, round after
// round, for one value and one page: managed memory (raw, unimem) vs explicit copies.
#include <unimem/unimem.hpp>

#include "harness.hpp"
#include "raw_runtime.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace {

__global__ void bench_plus_one(const float* in, float* out, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}

}  // namespace

namespace unimem_bench {

void ping_pong(const options& o) {
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const raw_stream_t rs = s.get();
  const int batches = 10;
  const int per_batch = std::max(1, o.rounds / batches);
  for (std::size_t n : {std::size_t{1}, std::size_t{1024}}) {  // one value, one 4 KiB page
    const std::string what = n == 1 ? "one-value" : "one-page";
    const unsigned grid = blocks_for(n, 256);
    auto rounds_us = [&](auto&& round) {
      std::vector<double> v;
      for (int k = 0; k < batches; ++k) {
        const auto t = clock_type::now();
        for (int r = 0; r < per_batch; ++r) round(static_cast<float>(k * per_batch + r));
        v.push_back(ms_since(t) * 1000.0 / per_batch);
      }
      return v;
    };
    progress("[ping-pong] " + what);
    // Managed, raw.
    float* mx = raw_managed_floats(n);
    float* my = raw_managed_floats(n);
    const auto managed_raw = rounds_us([&](float v) {
      for (std::size_t i = 0; i < n; ++i) mx[i] = v + static_cast<float>(i);
      bench_plus_one<<<grid, 256, 0, rs>>>(mx, my, n);
      RAW_CHECK(RAW(StreamSynchronize)(rs));
      for (std::size_t i = 0; i < n; ++i) {
        if (my[i] != v + static_cast<float>(i) + 1.0f) fail("ping-pong managed/raw");
      }
    });
    // Managed, unimem.
    unimem::managed_buffer<float> ux(n), uy(n);
    const auto cfg = unimem::grid_for(n).on(s);
    const auto managed_um = rounds_us([&](float v) {
      for (std::size_t i = 0; i < n; ++i) ux[i] = v + static_cast<float>(i);
      unimem::launch(bench_plus_one, cfg, ux, uy, n);
      s.synchronize();
      for (std::size_t i = 0; i < n; ++i) {
        if (uy[i] != v + static_cast<float>(i) + 1.0f) fail("ping-pong managed/unimem");
      }
    });
    // Explicit copies, pageable host memory (the seed's advice).
    std::vector<float> hx(n), hy(n);
    float* dx = raw_device_floats(n);
    float* dy = raw_device_floats(n);
    const auto explicit_pageable = rounds_us([&](float v) {
      for (std::size_t i = 0; i < n; ++i) hx[i] = v + static_cast<float>(i);
      RAW_CHECK(RAW(MemcpyAsync)(dx, hx.data(), n * 4, RAW_H2D, rs));
      bench_plus_one<<<grid, 256, 0, rs>>>(dx, dy, n);
      RAW_CHECK(RAW(MemcpyAsync)(hy.data(), dy, n * 4, RAW_D2H, rs));
      RAW_CHECK(RAW(StreamSynchronize)(rs));
      for (std::size_t i = 0; i < n; ++i) {
        if (hy[i] != v + static_cast<float>(i) + 1.0f) fail("ping-pong explicit");
      }
    });
    raw_free({mx, my, dx, dy});
    add_row("ping-pong", what, "raw-managed", "round", "us", managed_raw);
    add_row("ping-pong", what, "unimem-managed", "round", "us", managed_um);
    add_row("ping-pong", what, "raw-explicit-copy", "round", "us", explicit_pageable);
  }
  progress_done();
}

}  // namespace unimem_bench
