// unimem-bench: the unified-memory pitfalls, measured. Every strategy runs in this one process,
// side by side with a raw baseline written directly against the runtime (raw_runtime.hpp),
// and the table reports medians over repetitions with their spread, plus the ratios that
// matter. Build: the `unimem-bench` target (bench/). Run: unimem-bench [--size-mib N]
// [--reps N] [--launches N] [--rounds N] [--csv FILE] [--quick].
#include <unimem/unimem.hpp>

#include "raw_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

// ---------------------------------------------------------------- kernels
__global__ void bench_vadd(const float* a, const float* b, float* c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void bench_empty() {}
__global__ void bench_args(const float* a, const float* b, float* c, std::size_t n) {
  if (n == 0x7fffffffffffull) c[0] = a[0] + b[0];  // never true: keeps the parameters alive
}
__global__ void bench_plus_one(const float* in, float* out, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}
__global__ void bench_increment(float* data, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

struct options {
  std::size_t size_mib = 1024;
  int reps = 5;
  int launches = 100000;
  int rounds = 2000;
  std::string csv;
};

// ---------------------------------------------------------------- results
struct stats {
  double median = 0, min = 0, max = 0;
};
stats summarize(std::vector<double> v) {
  stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  return s;
}

struct row {
  std::string section, strategy, impl, metric, unit;
  stats s;
};
std::vector<row> g_rows;

const row* find_row(const std::string& section, const std::string& strategy,
                    const std::string& impl, const std::string& metric) {
  for (const row& r : g_rows) {
    if (r.section == section && r.strategy == strategy && r.impl == impl && r.metric == metric) {
      return &r;
    }
  }
  return nullptr;
}

void add_row(const std::string& section, const std::string& strategy, const std::string& impl,
             const std::string& metric, const std::string& unit, const std::vector<double>& v) {
  g_rows.push_back({section, strategy, impl, metric, unit, summarize(v)});
}

void progress(const std::string& what) {
  std::fprintf(stderr, "\r%-78s", what.c_str());
  std::fflush(stderr);
}
void progress_done() {
  std::fprintf(stderr, "\r%-78s\r", "");
  std::fflush(stderr);
}

// CPU side of the pipeline: the seed's initialisation and read-back.
void cpu_init(float* a, float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1024);
    b[i] = 2.0f * static_cast<float>(i % 1024);
  }
}
std::size_t cpu_check(const float* c, std::size_t n) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += c[i] != 3.0f * static_cast<float>(i % 1024);
  return wrong;
}

[[noreturn]] void fail(const std::string& what) {
  progress_done();
  std::fprintf(stderr, "unimem-bench: WRONG RESULT: %s\n", what.c_str());
  std::exit(1);
}

// ---------------------------------------------------------------- 1. the seed's pipeline
struct phases {
  double init = 0, gpu = 0, read = 0;
};

void pipeline(const options& o) {
  const std::size_t n = o.size_mib * (std::size_t{1} << 20) / sizeof(float);
  const unsigned block = 256;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  unimem::stream s(unimem::stream::flags::non_blocking);
  const raw_stream_t rs = s.get();

  using strategy = std::function<phases()>;
  const std::vector<std::pair<std::string, strategy>> strategies = {
      {"on-demand/raw",
       [&] {
         float *a, *b, *c;
         RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&a), n * 4, RAW_ATTACH_GLOBAL));
         RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&b), n * 4, RAW_ATTACH_GLOBAL));
         RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&c), n * 4, RAW_ATTACH_GLOBAL));
         phases p;
         auto t = clock_type::now();
         cpu_init(a, b, n);
         p.init = ms_since(t);
         t = clock_type::now();
         bench_vadd<<<grid, block, 0, rs>>>(a, b, c, n);
         RAW_CHECK(RAW(StreamSynchronize)(rs));
         p.gpu = ms_since(t);
         t = clock_type::now();
         if (cpu_check(c, n) != 0) fail("on-demand/raw");
         p.read = ms_since(t);
         RAW_CHECK(RAW(Free)(a));
         RAW_CHECK(RAW(Free)(b));
         RAW_CHECK(RAW(Free)(c));
         return p;
       }},
      {"prefetch/raw",
       [&] {
         float *a, *b, *c;
         RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&a), n * 4, RAW_ATTACH_GLOBAL));
         RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&b), n * 4, RAW_ATTACH_GLOBAL));
         RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&c), n * 4, RAW_ATTACH_GLOBAL));
         phases p;
         auto t = clock_type::now();
         cpu_init(a, b, n);
         p.init = ms_since(t);
         t = clock_type::now();
         raw_prefetch(a, n * 4, 0, rs);
         raw_prefetch(b, n * 4, 0, rs);
         raw_prefetch(c, n * 4, 0, rs);
         bench_vadd<<<grid, block, 0, rs>>>(a, b, c, n);
         RAW_CHECK(RAW(StreamSynchronize)(rs));
         p.gpu = ms_since(t);
         t = clock_type::now();
         raw_prefetch(c, n * 4, -1, rs);
         RAW_CHECK(RAW(StreamSynchronize)(rs));
         if (cpu_check(c, n) != 0) fail("prefetch/raw");
         p.read = ms_since(t);
         RAW_CHECK(RAW(Free)(a));
         RAW_CHECK(RAW(Free)(b));
         RAW_CHECK(RAW(Free)(c));
         return p;
       }},
      {"on-demand/unimem",
       [&] {
         unimem::managed_buffer<float> a(n, unimem::uninitialized), b(n, unimem::uninitialized),
             c(n, unimem::uninitialized);
         phases p;
         auto t = clock_type::now();
         cpu_init(a.data(), b.data(), n);
         p.init = ms_since(t);
         t = clock_type::now();
         unimem::launch(bench_vadd, unimem::grid_for(n, block).on(s), a, b, c, n);
         s.synchronize();
         p.gpu = ms_since(t);
         t = clock_type::now();
         if (cpu_check(c.data(), n) != 0) fail("on-demand/unimem");
         p.read = ms_since(t);
         return p;
       }},
      {"tags/unimem",
       [&] {
         unimem::managed_buffer<float> a(n, unimem::uninitialized), b(n, unimem::uninitialized),
             c(n, unimem::uninitialized);
         phases p;
         auto t = clock_type::now();
         cpu_init(a.data(), b.data(), n);
         p.init = ms_since(t);
         t = clock_type::now();
         unimem::launch(bench_vadd, unimem::grid_for(n, block).on(s), unimem::in(a), unimem::in(b),
                        unimem::out(c), n);
         s.synchronize();
         p.gpu = ms_since(t);
         t = clock_type::now();
         c.ready_for_host(s);
         if (cpu_check(c.data(), n) != 0) fail("tags/unimem");
         p.read = ms_since(t);
         return p;
       }},
      {"explicit-pageable/raw",
       [&] {
         std::unique_ptr<float[]> ha(new float[n]), hb(new float[n]), hc(new float[n]);
         float *a, *b, *c;
         RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&a), n * 4));
         RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&b), n * 4));
         RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&c), n * 4));
         phases p;
         auto t = clock_type::now();
         cpu_init(ha.get(), hb.get(), n);
         p.init = ms_since(t);
         t = clock_type::now();
         RAW_CHECK(RAW(Memcpy)(a, ha.get(), n * 4, RAW_H2D));
         RAW_CHECK(RAW(Memcpy)(b, hb.get(), n * 4, RAW_H2D));
         bench_vadd<<<grid, block, 0, rs>>>(a, b, c, n);
         RAW_CHECK(RAW(StreamSynchronize)(rs));
         p.gpu = ms_since(t);
         t = clock_type::now();
         RAW_CHECK(RAW(Memcpy)(hc.get(), c, n * 4, RAW_D2H));
         if (cpu_check(hc.get(), n) != 0) fail("explicit-pageable/raw");
         p.read = ms_since(t);
         RAW_CHECK(RAW(Free)(a));
         RAW_CHECK(RAW(Free)(b));
         RAW_CHECK(RAW(Free)(c));
         return p;
       }},
      {"explicit-pinned/raw",
       [&] {
         float *ha, *hb, *hc, *a, *b, *c;
#if defined(UNIMEM_BACKEND_HIP)
         RAW_CHECK(hipHostMalloc(reinterpret_cast<void**>(&ha), n * 4, 0));
         RAW_CHECK(hipHostMalloc(reinterpret_cast<void**>(&hb), n * 4, 0));
         RAW_CHECK(hipHostMalloc(reinterpret_cast<void**>(&hc), n * 4, 0));
#else
         RAW_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ha), n * 4));
         RAW_CHECK(cudaMallocHost(reinterpret_cast<void**>(&hb), n * 4));
         RAW_CHECK(cudaMallocHost(reinterpret_cast<void**>(&hc), n * 4));
#endif
         RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&a), n * 4));
         RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&b), n * 4));
         RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&c), n * 4));
         phases p;
         auto t = clock_type::now();
         cpu_init(ha, hb, n);
         p.init = ms_since(t);
         t = clock_type::now();
         RAW_CHECK(RAW(MemcpyAsync)(a, ha, n * 4, RAW_H2D, rs));
         RAW_CHECK(RAW(MemcpyAsync)(b, hb, n * 4, RAW_H2D, rs));
         bench_vadd<<<grid, block, 0, rs>>>(a, b, c, n);
         RAW_CHECK(RAW(StreamSynchronize)(rs));
         p.gpu = ms_since(t);
         t = clock_type::now();
         RAW_CHECK(RAW(MemcpyAsync)(hc, c, n * 4, RAW_D2H, rs));
         RAW_CHECK(RAW(StreamSynchronize)(rs));
         if (cpu_check(hc, n) != 0) fail("explicit-pinned/raw");
         p.read = ms_since(t);
         RAW_CHECK(RAW(Free)(a));
         RAW_CHECK(RAW(Free)(b));
         RAW_CHECK(RAW(Free)(c));
#if defined(UNIMEM_BACKEND_HIP)
         RAW_CHECK(hipHostFree(ha));
         RAW_CHECK(hipHostFree(hb));
         RAW_CHECK(hipHostFree(hc));
#else
         RAW_CHECK(cudaFreeHost(ha));
         RAW_CHECK(cudaFreeHost(hb));
         RAW_CHECK(cudaFreeHost(hc));
#endif
         return p;
       }},
  };

  std::vector<std::vector<double>> init(strategies.size()), gpu(strategies.size()),
      read(strategies.size()), total(strategies.size());
  for (int rep = 0; rep < o.reps; ++rep) {
    for (std::size_t k = 0; k < strategies.size(); ++k) {  // interleaved: drift hits all alike
      progress("[pipeline " + std::to_string(o.size_mib) + " MiB x3] rep " +
               std::to_string(rep + 1) + "/" + std::to_string(o.reps) + " " +
               strategies[k].first);
      const phases p = strategies[k].second();
      init[k].push_back(p.init);
      gpu[k].push_back(p.gpu);
      read[k].push_back(p.read);
      total[k].push_back(p.init + p.gpu + p.read);
    }
  }
  progress_done();
  for (std::size_t k = 0; k < strategies.size(); ++k) {
    const std::string& name = strategies[k].first;
    const std::string strategy = name.substr(0, name.find('/'));
    const std::string impl = name.substr(name.find('/') + 1);
    add_row("pipeline", strategy, impl, "cpu-init", "ms", init[k]);
    add_row("pipeline", strategy, impl, "gpu-phase", "ms", gpu[k]);
    add_row("pipeline", strategy, impl, "cpu-read", "ms", read[k]);
    add_row("pipeline", strategy, impl, "total", "ms", total[k]);
  }
}

// ---------------------------------------------------------------- 2. steady state
void steady_state(const options& o) {
  const std::size_t n = o.size_mib * (std::size_t{1} << 20) / sizeof(float);
  const unsigned block = 256;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  unimem::stream s(unimem::stream::flags::non_blocking);
  const raw_stream_t rs = s.get();
  float *da, *db, *dc;
  RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&da), n * 4));
  RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&db), n * 4));
  RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&dc), n * 4));
  RAW_CHECK(RAW(Memset)(da, 0, n * 4));
  RAW_CHECK(RAW(Memset)(db, 0, n * 4));
  const unimem::location gpu0 = unimem::location::device(0);
  unimem::managed_buffer<float> a(n, unimem::first_touch(gpu0)), b(n, unimem::first_touch(gpu0)),
      c(n, unimem::first_touch(gpu0));
  raw_event_t e0, e1;
  RAW_CHECK(RAW(EventCreate)(&e0));
  RAW_CHECK(RAW(EventCreate)(&e1));
  auto timed = [&](auto&& launch_once) {
    RAW_CHECK(RAW(EventRecord)(e0, rs));
    launch_once();
    RAW_CHECK(RAW(EventRecord)(e1, rs));
    RAW_CHECK(RAW(EventSynchronize)(e1));
    float ms = 0;
    RAW_CHECK(RAW(EventElapsedTime)(&ms, e0, e1));
    return static_cast<double>(ms);
  };
  std::vector<double> raw_ms, um_ms;
  const auto cfg = unimem::grid_for(n, block).on(s);
  for (int i = 0; i < 3; ++i) {  // warm-up
    bench_vadd<<<grid, block, 0, rs>>>(da, db, dc, n);
    unimem::launch(bench_vadd, cfg, a, b, c, n);
  }
  const int iterations = std::max(20, o.reps * 4);
  for (int i = 0; i < iterations; ++i) {
    progress("[steady state] iteration " + std::to_string(i + 1) + "/" + std::to_string(iterations));
    raw_ms.push_back(timed([&] { bench_vadd<<<grid, block, 0, rs>>>(da, db, dc, n); }));
    um_ms.push_back(timed([&] { unimem::launch(bench_vadd, cfg, a, b, c, n); }));
  }
  progress_done();
  c.ready_for_host(s);
  if (cpu_check(c.data(), 0) != 0 || c[n - 1] != 0.0f) fail("steady state");
  add_row("steady-state", "device-memory", "raw", "kernel", "ms", raw_ms);
  add_row("steady-state", "managed-prefetched", "unimem", "kernel", "ms", um_ms);
  RAW_CHECK(RAW(EventDestroy)(e0));
  RAW_CHECK(RAW(EventDestroy)(e1));
  RAW_CHECK(RAW(Free)(da));
  RAW_CHECK(RAW(Free)(db));
  RAW_CHECK(RAW(Free)(dc));
}

// ---------------------------------------------------------------- 3. launch overhead
void launch_overhead(const options& o) {
  unimem::stream s(unimem::stream::flags::non_blocking);
  const raw_stream_t rs = s.get();
  unimem::managed_buffer<float> a(1024, 1.0f), b(1024, 1.0f), c(1024);
  float* pa = a.data();
  float* pb = b.data();
  float* pc = c.data();
  const std::size_t n = a.size();
  const unimem::launch_config cfg(1, 32, 0, s);
  // Batches of 500 stay below the launch queue's depth, so the loop measures the host's cost
  // of enqueueing, not the GPU's pace; raw and unimem batches alternate.
  const int batch = 500;
  const int batches = std::max(1, o.launches / batch);
  std::vector<double> raw_empty, um_empty, raw_args, um_args;
  auto per_launch_us = [&](auto&& body) {
    RAW_CHECK(RAW(StreamSynchronize)(rs));
    const auto t = clock_type::now();
    for (int i = 0; i < batch; ++i) body();
    const double us = ms_since(t) * 1000.0 / batch;
    RAW_CHECK(RAW(StreamSynchronize)(rs));
    return us;
  };
  for (int k = 0; k < 2; ++k) {  // warm-up
    per_launch_us([&] { bench_empty<<<1, 32, 0, rs>>>(); });
    per_launch_us([&] { unimem::launch(bench_empty, cfg); });
  }
  for (int k = 0; k < batches; ++k) {
    if (k % 20 == 0) progress("[launch overhead] batch " + std::to_string(k + 1) + "/" + std::to_string(batches));
    raw_empty.push_back(per_launch_us([&] { bench_empty<<<1, 32, 0, rs>>>(); }));
    um_empty.push_back(per_launch_us([&] { unimem::launch(bench_empty, cfg); }));
    raw_args.push_back(per_launch_us([&] { bench_args<<<1, 32, 0, rs>>>(pa, pb, pc, n); }));
    um_args.push_back(per_launch_us([&] { unimem::launch(bench_args, cfg, a, b, c, n); }));
  }
  progress_done();
  RAW_CHECK(RAW(GetLastError)());
  add_row("launch", "empty-kernel", "raw", "enqueue", "us", raw_empty);
  add_row("launch", "empty-kernel", "unimem", "enqueue", "us", um_empty);
  add_row("launch", "4-arg-kernel", "raw", "enqueue", "us", raw_args);
  add_row("launch", "4-arg-kernel", "unimem", "enqueue", "us", um_args);
}

// ---------------------------------------------------------------- 4. ping-pong
void ping_pong(const options& o) {
  unimem::stream s(unimem::stream::flags::non_blocking);
  const raw_stream_t rs = s.get();
  const int batches = 10;
  const int per_batch = std::max(1, o.rounds / batches);
  for (std::size_t n : {std::size_t{1}, std::size_t{1024}}) {  // one value, one 4 KiB page
    const std::string what = n == 1 ? "one-value" : "one-page";
    const unsigned grid = static_cast<unsigned>((n + 255) / 256);
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
    float *mx, *my;
    RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&mx), n * 4, RAW_ATTACH_GLOBAL));
    RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&my), n * 4, RAW_ATTACH_GLOBAL));
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
    float *dx, *dy;
    RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&dx), n * 4));
    RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&dy), n * 4));
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
    RAW_CHECK(RAW(Free)(mx));
    RAW_CHECK(RAW(Free)(my));
    RAW_CHECK(RAW(Free)(dx));
    RAW_CHECK(RAW(Free)(dy));
    add_row("ping-pong", what, "raw-managed", "round", "us", managed_raw);
    add_row("ping-pong", what, "unimem-managed", "round", "us", managed_um);
    add_row("ping-pong", what, "raw-explicit-copy", "round", "us", explicit_pageable);
  }
  progress_done();
}

// ---------------------------------------------------------------- 5. two GPUs
void two_gpus(const options& o) {
  const std::size_t n = o.size_mib * (std::size_t{1} << 20) / sizeof(float);
  const unsigned block = 256;
  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  int can01 = 0, can10 = 0;
  RAW_CHECK(RAW(DeviceCanAccessPeer)(&can01, 0, 1));
  RAW_CHECK(RAW(DeviceCanAccessPeer)(&can10, 1, 0));
  if (can01 && can10) {
    RAW_CHECK(RAW(SetDevice)(0));
    (void)RAW(DeviceEnablePeerAccess)(1, 0);
    RAW_CHECK(RAW(SetDevice)(1));
    (void)RAW(DeviceEnablePeerAccess)(0, 0);
    RAW_CHECK(RAW(SetDevice)(0));
    (void)RAW(GetLastError)();
  }
  unimem::stream s1(unimem::device(1), unimem::stream::flags::non_blocking);
  const raw_stream_t rs1 = s1.get();
  const unimem::location gpu0 = unimem::location::device(0), gpu1 = unimem::location::device(1);
  std::vector<double> od_raw, od_um, pf_raw, pf_um, ab_raw, ab_um, peer;

  for (int rep = 0; rep < o.reps; ++rep) {
    progress("[two GPUs] rep " + std::to_string(rep + 1) + "/" + std::to_string(o.reps));
    // On demand: pages on GPU0, kernel on GPU1 faults them over.
    {
      float* p;
      RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&p), n * 4, RAW_ATTACH_GLOBAL));
      RAW_CHECK(RAW(SetDevice)(0));
      RAW_CHECK(RAW(Memset)(p, 0, n * 4));
      RAW_CHECK(RAW(DeviceSynchronize)());
      RAW_CHECK(RAW(SetDevice)(1));
      auto t = clock_type::now();
      bench_increment<<<grid, block, 0, rs1>>>(p, n);
      RAW_CHECK(RAW(StreamSynchronize)(rs1));
      od_raw.push_back(ms_since(t));
      RAW_CHECK(RAW(SetDevice)(0));
      RAW_CHECK(RAW(Free)(p));
    }
    {
      unimem::managed_buffer<float> b(n, unimem::first_touch(gpu0));
      auto t = clock_type::now();
      unimem::launch(bench_increment, unimem::grid_for(n, block).on(s1).on_device(1), b, n);
      s1.synchronize();
      od_um.push_back(ms_since(t));
    }
    // Prefetch to GPU1, then the kernel there.
    {
      float* p;
      RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&p), n * 4, RAW_ATTACH_GLOBAL));
      RAW_CHECK(RAW(Memset)(p, 0, n * 4));
      RAW_CHECK(RAW(DeviceSynchronize)());
      RAW_CHECK(RAW(SetDevice)(1));
      auto t = clock_type::now();
      raw_prefetch(p, n * 4, 1, rs1);
      bench_increment<<<grid, block, 0, rs1>>>(p, n);
      RAW_CHECK(RAW(StreamSynchronize)(rs1));
      pf_raw.push_back(ms_since(t));
      RAW_CHECK(RAW(SetDevice)(0));
      RAW_CHECK(RAW(Free)(p));
    }
    {
      unimem::managed_buffer<float> b(n, unimem::first_touch(gpu0));
      auto t = clock_type::now();
      unimem::launch(bench_increment, unimem::grid_for(n, block).on(s1).on_device(1),
                     unimem::inout(b), n);
      s1.synchronize();
      pf_um.push_back(ms_since(t));
      if (b.last_prefetch_location() != gpu1) fail("two GPUs: tags did not prefetch to GPU1");
    }
    // Preferred location GPU0 + accessed by GPU1: GPU1 works on the pages remotely.
    {
      float* p;
      RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&p), n * 4, RAW_ATTACH_GLOBAL));
      RAW_CHECK(RAW(Memset)(p, 0, n * 4));
      RAW_CHECK(RAW(DeviceSynchronize)());
      raw_advise(p, n * 4, RAW_ADVISE_PREFERRED, 0);
      raw_advise(p, n * 4, RAW_ADVISE_ACCESSED_BY, 1);
      RAW_CHECK(RAW(SetDevice)(1));
      auto t = clock_type::now();
      bench_increment<<<grid, block, 0, rs1>>>(p, n);
      RAW_CHECK(RAW(StreamSynchronize)(rs1));
      ab_raw.push_back(ms_since(t));
      RAW_CHECK(RAW(SetDevice)(0));
      RAW_CHECK(RAW(Free)(p));
    }
    {
      unimem::managed_buffer<float> b(n, unimem::first_touch(gpu0));
      b.advise(unimem::advice::preferred_location, gpu0);
      b.advise(unimem::advice::accessed_by, gpu1);
      auto t = clock_type::now();
      unimem::launch(bench_increment, unimem::grid_for(n, block).on(s1).on_device(1), b, n);
      s1.synchronize();
      ab_um.push_back(ms_since(t));
      b.ready_for_host();
      if (b[n - 1] != 1.0f) fail("two GPUs: accessed_by result");
    }
    // Explicit peer copy between plain allocations, then the kernel on GPU1.
    {
      float *p0, *p1;
      RAW_CHECK(RAW(SetDevice)(0));
      RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&p0), n * 4));
      RAW_CHECK(RAW(Memset)(p0, 0, n * 4));
      RAW_CHECK(RAW(SetDevice)(1));
      RAW_CHECK(RAW(Malloc)(reinterpret_cast<void**>(&p1), n * 4));
      RAW_CHECK(RAW(DeviceSynchronize)());
      auto t = clock_type::now();
      RAW_CHECK(RAW(MemcpyPeerAsync)(p1, 1, p0, 0, n * 4, rs1));
      bench_increment<<<grid, block, 0, rs1>>>(p1, n);
      RAW_CHECK(RAW(StreamSynchronize)(rs1));
      peer.push_back(ms_since(t));
      RAW_CHECK(RAW(Free)(p1));
      RAW_CHECK(RAW(SetDevice)(0));
      RAW_CHECK(RAW(Free)(p0));
    }
  }
  progress_done();
  add_row("two-gpus", "on-demand", "raw", "gpu1-phase", "ms", od_raw);
  add_row("two-gpus", "on-demand", "unimem", "gpu1-phase", "ms", od_um);
  add_row("two-gpus", "prefetch", "raw", "gpu1-phase", "ms", pf_raw);
  add_row("two-gpus", "prefetch", "unimem", "gpu1-phase", "ms", pf_um);
  add_row("two-gpus", "accessed-by", "raw", "gpu1-phase", "ms", ab_raw);
  add_row("two-gpus", "accessed-by", "unimem", "gpu1-phase", "ms", ab_um);
  add_row("two-gpus", "peer-copy", "raw", "gpu1-phase", "ms", peer);
}

// ---------------------------------------------------------------- report
struct comparison {
  std::string label;
  const row* num;
  const row* den;
  double target;   // 0: none
  bool at_most;    // target is an upper bound on the ratio (else a lower bound)
};

double ratio(const comparison& c) { return c.num->s.median / c.den->s.median; }

void report(const options& o) {
  std::printf("\n%-13s %-19s %-18s %-10s %12s %12s %12s  %s\n", "section", "strategy", "impl",
              "metric", "median", "min", "max", "unit");
  for (const row& r : g_rows) {
    std::printf("%-13s %-19s %-18s %-10s %12.3f %12.3f %12.3f  %s\n", r.section.c_str(),
                r.strategy.c_str(), r.impl.c_str(), r.metric.c_str(), r.s.median, r.s.min,
                r.s.max, r.unit.c_str());
  }

  std::vector<comparison> cs;
  auto add = [&](const std::string& label, const row* num, const row* den, double target = 0,
                 bool at_most = true) {
    if (num != nullptr && den != nullptr) cs.push_back({label, num, den, target, at_most});
  };
  add("pipeline gpu-phase: tags/unimem vs prefetch/raw (target <= 1.05)",
      find_row("pipeline", "tags", "unimem", "gpu-phase"),
      find_row("pipeline", "prefetch", "raw", "gpu-phase"), 1.05, true);
  add("pipeline gpu-phase: on-demand/raw vs tags/unimem (target >= 5)",
      find_row("pipeline", "on-demand", "raw", "gpu-phase"),
      find_row("pipeline", "tags", "unimem", "gpu-phase"), 5.0, false);
  add("pipeline gpu-phase: on-demand/unimem vs on-demand/raw",
      find_row("pipeline", "on-demand", "unimem", "gpu-phase"),
      find_row("pipeline", "on-demand", "raw", "gpu-phase"));
  add("pipeline gpu-phase: on-demand/raw vs prefetch/raw",
      find_row("pipeline", "on-demand", "raw", "gpu-phase"),
      find_row("pipeline", "prefetch", "raw", "gpu-phase"));
  add("pipeline cpu-read: on-demand/raw vs prefetch/raw",
      find_row("pipeline", "on-demand", "raw", "cpu-read"),
      find_row("pipeline", "prefetch", "raw", "cpu-read"));
  add("pipeline total: tags/unimem vs prefetch/raw",
      find_row("pipeline", "tags", "unimem", "total"),
      find_row("pipeline", "prefetch", "raw", "total"));
  add("pipeline total: explicit-pageable/raw vs tags/unimem",
      find_row("pipeline", "explicit-pageable", "raw", "total"),
      find_row("pipeline", "tags", "unimem", "total"));
  add("pipeline total: explicit-pinned/raw vs tags/unimem",
      find_row("pipeline", "explicit-pinned", "raw", "total"),
      find_row("pipeline", "tags", "unimem", "total"));
  add("steady-state kernel: managed_buffer+unimem vs device memory+raw (target <= 1.02)",
      find_row("steady-state", "managed-prefetched", "unimem", "kernel"),
      find_row("steady-state", "device-memory", "raw", "kernel"), 1.02, true);
  add("ping-pong one value: managed/raw vs explicit copies",
      find_row("ping-pong", "one-value", "raw-managed", "round"),
      find_row("ping-pong", "one-value", "raw-explicit-copy", "round"));
  add("ping-pong one value: managed/unimem vs managed/raw",
      find_row("ping-pong", "one-value", "unimem-managed", "round"),
      find_row("ping-pong", "one-value", "raw-managed", "round"));
  add("ping-pong one page: managed/raw vs explicit copies",
      find_row("ping-pong", "one-page", "raw-managed", "round"),
      find_row("ping-pong", "one-page", "raw-explicit-copy", "round"));
  for (const char* st : {"on-demand", "prefetch", "accessed-by"}) {
    add(std::string("two GPUs ") + st + ": unimem vs raw",
        find_row("two-gpus", st, "unimem", "gpu1-phase"), find_row("two-gpus", st, "raw", "gpu1-phase"));
  }
  add("two GPUs: on-demand/raw vs prefetch/raw", find_row("two-gpus", "on-demand", "raw", "gpu1-phase"),
      find_row("two-gpus", "prefetch", "raw", "gpu1-phase"));

  std::printf("\nratios (medians)\n");
  int missed = 0;
  for (const comparison& c : cs) {
    const double r = ratio(c);
    std::string verdict;
    if (c.target > 0) {
      const bool ok = c.at_most ? r <= c.target : r >= c.target;
      verdict = ok ? "  MET" : "  MISSED";
      missed += !ok;
    }
    std::printf("  %-86s %8.3f%s\n", c.label.c_str(), r, verdict.c_str());
  }
  const row* lr = find_row("launch", "empty-kernel", "raw", "enqueue");
  const row* lu = find_row("launch", "empty-kernel", "unimem", "enqueue");
  const row* ar = find_row("launch", "4-arg-kernel", "raw", "enqueue");
  const row* au = find_row("launch", "4-arg-kernel", "unimem", "enqueue");
  if (lr && lu && ar && au) {
    const double d0 = lu->s.median - lr->s.median, d1 = au->s.median - ar->s.median;
    const bool ok = d0 <= 0.3 && d1 <= 0.3;
    missed += !ok;
    std::printf("  %-86s %+8.3f us\n", "launch: unimem - raw, empty kernel", d0);
    std::printf("  %-86s %+8.3f us%s\n", "launch: unimem - raw, 4-argument kernel (target <= +0.3 us)",
                d1, ok ? "  MET" : "  MISSED");
  }

  FILE* csv = o.csv.empty() ? nullptr : std::fopen(o.csv.c_str(), "w");
  if (csv != nullptr) {
    std::fprintf(csv, "section,strategy,impl,metric,unit,median,min,max\n");
    for (const row& r : g_rows) {
      std::fprintf(csv, "%s,%s,%s,%s,%s,%.6f,%.6f,%.6f\n", r.section.c_str(), r.strategy.c_str(),
                   r.impl.c_str(), r.metric.c_str(), r.unit.c_str(), r.s.median, r.s.min, r.s.max);
    }
    for (const comparison& c : cs) {
      std::fprintf(csv, "ratio,\"%s\",,,,%.6f,,\n", c.label.c_str(), ratio(c));
    }
    std::fclose(csv);
    std::printf("\nCSV written to %s\n", o.csv.c_str());
  }
  std::printf("\n%s\n", missed == 0 ? "all targets met" : (std::to_string(missed) + " target(s) missed").c_str());
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "unimem-bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--size-mib") o.size_mib = std::stoul(next());
    else if (a == "--reps") o.reps = std::stoi(next());
    else if (a == "--launches") o.launches = std::stoi(next());
    else if (a == "--rounds") o.rounds = std::stoi(next());
    else if (a == "--csv") o.csv = next();
    else if (a == "--quick") {
      o.size_mib = 64;
      o.reps = 2;
      o.launches = 5000;
      o.rounds = 200;
    } else {
      std::fprintf(stderr,
                   "usage: unimem-bench [--size-mib N] [--reps N] [--launches N] [--rounds N] "
                   "[--csv FILE] [--quick]\n");
      std::exit(a == "--help" || a == "-h" ? 0 : 2);
    }
  }
  if (o.size_mib == 0 || o.reps < 1 || o.launches < 1 || o.rounds < 10) {
    std::fprintf(stderr, "unimem-bench: sizes and counts must be positive (rounds >= 10)\n");
    std::exit(2);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  if (unimem::device_count() == 0) {
    std::fprintf(stderr, "unimem-bench: no GPU was found.\n%s", unimem::report().c_str());
    return 2;
  }
  const std::size_t need = 3 * o.size_mib * (std::size_t{1} << 20);
  if (unimem::device(0).free_memory() < need + need / 4) {
    std::fprintf(stderr, "unimem-bench: --size-mib %zu needs %zu MiB free on device 0\n",
                 o.size_mib, (need + need / 4) >> 20);
    return 2;
  }
  std::printf("%s", unimem::report().c_str());
  std::printf("placement calls: %s\n", unimem::detail::backend::placement_api());
  std::printf("arrays of %zu MiB, %d repetitions, %d launches, %d ping-pong rounds\n", o.size_mib,
              o.reps, o.launches, o.rounds);
  try {
    pipeline(o);
    steady_state(o);
    launch_overhead(o);
    ping_pong(o);
    if (unimem::device_count() >= 2) {
      two_gpus(o);
    } else {
      std::printf("two-GPU rows skipped: one GPU\n");
    }
  } catch (const std::exception& e) {
    progress_done();
    std::fprintf(stderr, "unimem-bench: %s\n", e.what());
    return 1;
  }
  report(o);
  return 0;
}
