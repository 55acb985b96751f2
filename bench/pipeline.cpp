// 1. The seed's pipeline: the CPU initialises a and b, the GPU computes c = a + b, the CPU
// reads c. Every strategy, raw and unimem side by side, runs --iterations times on the same
// buffers: the first iteration includes the allocation (cudaMallocHost of 3 GiB alone costs
// more than a second), the others are the steady state of a program that reuses its buffers.
// The CPU's share runs on --threads threads.
#include <unimem/unimem.hpp>

#include "harness.hpp"
#include "kernels.hpp"
#include "raw_runtime.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace unimem_bench {
namespace {

struct phases {
  double init = 0, gpu = 0, read = 0;
  double total() const { return init + gpu + read; }
};

/// What every strategy shares: the size, the launch shape, the stream, the CPU threads.
struct pipeline_context {
  std::size_t n;
  unsigned block, grid;
  unimem::stream& s;
  raw_stream_t rs;
  int threads;
};

/// One way to run the pipeline: allocate() once, then each iteration the CPU writes a and b
/// (inputs()), the GPU phase (gpu_phase(), then the stream is synchronised), and the CPU reads
/// c (results(): whatever makes c readable, then the pointer the CPU reads); release() at the
/// end.
class strategy {
 public:
  explicit strategy(const pipeline_context& c) : x(c) {}
  virtual ~strategy() = default;
  strategy(const strategy&) = delete;
  strategy& operator=(const strategy&) = delete;
  virtual const char* name() const = 0;  // "strategy/impl"
  virtual void allocate() = 0;
  virtual void release() = 0;

  phases iterate() {
    phases p;
    p.init = time_ms([&] { cpu_init(input_a(), input_b(), x.n, x.threads); });
    p.gpu = time_ms([&] {
      gpu_phase();
      RAW_CHECK(RAW(StreamSynchronize)(x.rs));
    });
    p.read = time_ms([&] {
      if (cpu_check(results(), x.n, x.threads) != 0) fail(std::string("pipeline ") + name());
    });
    return p;
  }

 protected:
  virtual float* input_a() = 0;
  virtual float* input_b() = 0;
  virtual void gpu_phase() = 0;
  virtual const float* results() = 0;
  void vadd(const float* a, const float* b, float* c) const {
    bench_vadd<<<x.grid, x.block, 0, x.rs>>>(a, b, c, x.n);
  }
  const pipeline_context& x;
};

// ---- managed memory, raw ----

class raw_managed : public strategy {
 public:
  using strategy::strategy;
  void allocate() override {
    a = raw_managed_floats(x.n);
    b = raw_managed_floats(x.n);
    c = raw_managed_floats(x.n);
  }
  void release() override { raw_free({a, b, c}); }

 protected:
  float* input_a() override { return a; }
  float* input_b() override { return b; }
  void gpu_phase() override { vadd(a, b, c); }
  const float* results() override { return c; }
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
};

class on_demand_raw final : public raw_managed {
 public:
  using raw_managed::raw_managed;
  const char* name() const override { return "on-demand/raw"; }
};

class prefetch_raw final : public raw_managed {
 public:
  using raw_managed::raw_managed;
  const char* name() const override { return "prefetch/raw"; }

 private:
  void gpu_phase() override {
    for (float* p : {a, b, c}) raw_prefetch(p, x.n * 4, 0, x.rs);
    vadd(a, b, c);
  }
  const float* results() override {
    raw_prefetch(c, x.n * 4, -1, x.rs);
    RAW_CHECK(RAW(StreamSynchronize)(x.rs));
    return c;
  }
};

/// Preferred location host + accessed-by GPU0, given once at allocation as a hand-written
/// program would: the GPU reads and writes host memory over the bus, nothing migrates.
class host_mapped_raw final : public raw_managed {
 public:
  using raw_managed::raw_managed;
  const char* name() const override { return "host-mapped/raw"; }
  void allocate() override {
    raw_managed::allocate();
    for (float* p : {a, b, c}) {
      raw_advise(p, x.n * 4, RAW_ADVISE_PREFERRED, -1);
      raw_advise(p, x.n * 4, RAW_ADVISE_ACCESSED_BY, 0);
    }
  }
};

// ---- managed memory, unimem ----

class unimem_managed : public strategy {
 public:
  using strategy::strategy;
  void allocate() override {
    a = unimem::managed_buffer<float>(x.n, unimem::uninitialized);
    b = unimem::managed_buffer<float>(x.n, unimem::uninitialized);
    c = unimem::managed_buffer<float>(x.n, unimem::uninitialized);
  }
  void release() override {
    a = unimem::managed_buffer<float>();
    b = unimem::managed_buffer<float>();
    c = unimem::managed_buffer<float>();
  }

 protected:
  float* input_a() override { return a.data(); }
  float* input_b() override { return b.data(); }
  const float* results() override {
    unimem::ready_for_host(c, x.s);
    return c.data();
  }
  unimem::launch_config cfg() const { return unimem::grid_for(x.n, x.block).on(x.s); }
  unimem::managed_buffer<float> a, b, c;
};

class on_demand_unimem final : public unimem_managed {
 public:
  using unimem_managed::unimem_managed;
  const char* name() const override { return "on-demand/unimem"; }

 private:
  void gpu_phase() override { unimem::launch(bench_vadd, cfg(), a, b, c, x.n); }
  const float* results() override { return c.data(); }  // the CPU faults c's pages back
};

/// Tags that move (the default intent): a and b prefetched, c populated on the GPU, c
/// prefetched back by ready_for_host.
class tags_unimem final : public unimem_managed {
 public:
  using unimem_managed::unimem_managed;
  const char* name() const override { return "tags/unimem"; }

 private:
  void gpu_phase() override {
    unimem::launch(bench_vadd, cfg(), unimem::in(a), unimem::in(b), unimem::out(c), x.n);
  }
};

/// Tags with intent map: the advice is given at the first launch (in the first iteration's GPU
/// phase) and remembered; ready_for_host moves nothing.
class mapped_unimem final : public unimem_managed {
 public:
  using unimem_managed::unimem_managed;
  const char* name() const override { return "mapped/unimem"; }

 private:
  void gpu_phase() override {
    unimem::launch(bench_vadd, cfg(), unimem::in(a, unimem::intent::map),
                   unimem::in(b, unimem::intent::map), unimem::out(c, unimem::intent::map), x.n);
  }
};

/// Intent map set when the buffers are made, before any page exists: the advice costs next to
/// nothing there (after the CPU has written the pages it costs ~100 ms per GiB).
class mapped_at_allocation_unimem final : public unimem_managed {
 public:
  using unimem_managed::unimem_managed;
  const char* name() const override { return "mapped-at-alloc/unimem"; }
  void allocate() override {
    unimem_managed::allocate();
    for (auto* buf : {&a, &b, &c}) (void)unimem::set_intent(*buf, unimem::intent::map);
  }

 private:
  void gpu_phase() override {  // plain tags follow the buffers' intent
    unimem::launch(bench_vadd, cfg(), unimem::in(a), unimem::in(b), unimem::out(c), x.n);
  }
};

// ---- explicit copies, raw: host buffers of type Host, device buffers, copies on the stream ----

class explicit_copies : public strategy {
 public:
  using strategy::strategy;
  void allocate() override {
    for (float*& h : host) h = allocate_host();
    for (float*& d : dev) d = raw_device_floats(x.n);
  }
  void release() override {
    raw_free({dev[0], dev[1], dev[2]});
    for (float* h : host) free_host(h);
  }

 protected:
  virtual float* allocate_host() = 0;
  virtual void free_host(float* p) = 0;

 private:
  float* input_a() override { return host[0]; }
  float* input_b() override { return host[1]; }
  void gpu_phase() override {
    RAW_CHECK(RAW(MemcpyAsync)(dev[0], host[0], x.n * 4, RAW_H2D, x.rs));
    RAW_CHECK(RAW(MemcpyAsync)(dev[1], host[1], x.n * 4, RAW_H2D, x.rs));
    vadd(dev[0], dev[1], dev[2]);
  }
  const float* results() override {
    RAW_CHECK(RAW(MemcpyAsync)(host[2], dev[2], x.n * 4, RAW_D2H, x.rs));
    RAW_CHECK(RAW(StreamSynchronize)(x.rs));
    return host[2];
  }
  float* host[3] = {};
  float* dev[3] = {};
};

class explicit_pageable_raw final : public explicit_copies {
 public:
  using explicit_copies::explicit_copies;
  const char* name() const override { return "explicit-pageable/raw"; }

 private:
  float* allocate_host() override { return new float[x.n]; }
  void free_host(float* p) override { delete[] p; }
};

class explicit_pinned_raw final : public explicit_copies {
 public:
  using explicit_copies::explicit_copies;
  const char* name() const override { return "explicit-pinned/raw"; }

 private:
  float* allocate_host() override { return raw_pinned_floats(x.n); }
  void free_host(float* p) override { raw_free_pinned({p}); }
};

/// The medians' inputs of one strategy.
struct phase_samples {
  std::vector<double> alloc, first, first_gpu, init, gpu, read, total, after_init, free;
};

/// Every strategy, in the order of the table.
std::vector<std::unique_ptr<strategy>> all_strategies(const pipeline_context& x) {
  std::vector<std::unique_ptr<strategy>> strategies;
  strategies.emplace_back(new on_demand_raw(x));
  strategies.emplace_back(new on_demand_unimem(x));
  strategies.emplace_back(new prefetch_raw(x));
  strategies.emplace_back(new tags_unimem(x));
  strategies.emplace_back(new host_mapped_raw(x));
  strategies.emplace_back(new mapped_unimem(x));
  strategies.emplace_back(new mapped_at_allocation_unimem(x));
  strategies.emplace_back(new explicit_pageable_raw(x));
  strategies.emplace_back(new explicit_pinned_raw(x));
  return strategies;
}

/// "strategy/impl" -> {"strategy", "impl"}.
std::pair<std::string, std::string> split_name(const std::string& name) {
  return {name.substr(0, name.find('/')), name.substr(name.find('/') + 1)};
}

}  // namespace

void pipeline_sweep(const options& o) {
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  for (std::size_t mib = 4; mib <= o.size_mib; mib *= 4) {
    const std::size_t n = mib * (std::size_t{1} << 20) / sizeof(float);
    const pipeline_context x{n, 256, blocks_for(n, 256), s, s.get(), cpu_threads(o)};
    std::vector<std::unique_ptr<strategy>> strategies;
    strategies.emplace_back(new tags_unimem(x));
    strategies.emplace_back(new mapped_unimem(x));
    strategies.emplace_back(new host_mapped_raw(x));
    strategies.emplace_back(new explicit_pinned_raw(x));
    for (auto& st : strategies) {
      progress("[pipeline sweep] " + std::to_string(mib) + " MiB x3 " + st->name());
      std::vector<double> after_init;
      st->allocate();
      (void)st->iterate();  // the first iteration: advice, first touch
      for (int it = 0; it < 3; ++it) {
        const phases p = st->iterate();
        after_init.push_back(p.gpu + p.read);
      }
      st->release();
      const auto name = split_name(st->name());
      add_row("pipeline-sweep", name.first, name.second, std::to_string(mib) + "MiB", "ms",
              after_init);
    }
  }
  progress_done();
}

void pipeline(const options& o) {
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const std::size_t n = array_floats(o);
  const pipeline_context x{n, 256, blocks_for(n, 256), s, s.get(), cpu_threads(o)};
  const std::vector<std::unique_ptr<strategy>> strategies = all_strategies(x);

  std::vector<phase_samples> m(strategies.size());
  for (int rep = 0; rep < o.reps; ++rep) {
    for (std::size_t k = 0; k < strategies.size(); ++k) {  // interleaved: drift hits all alike
      strategy& st = *strategies[k];
      progress("[pipeline " + std::to_string(o.size_mib) + " MiB x3, " +
               std::to_string(x.threads) + " CPU threads] rep " + std::to_string(rep + 1) + "/" +
               std::to_string(o.reps) + " " + st.name());
      const double alloc = time_ms([&] { st.allocate(); });
      const phases first = st.iterate();
      m[k].alloc.push_back(alloc);
      m[k].first.push_back(alloc + first.total());
      m[k].first_gpu.push_back(first.gpu);
      for (int it = 1; it < o.iterations; ++it) {
        const phases p = st.iterate();
        m[k].init.push_back(p.init);
        m[k].gpu.push_back(p.gpu);
        m[k].read.push_back(p.read);
        m[k].total.push_back(p.total());
        m[k].after_init.push_back(p.gpu + p.read);
      }
      m[k].free.push_back(time_ms([&] { st.release(); }));
    }
  }
  progress_done();
  for (std::size_t k = 0; k < strategies.size(); ++k) {
    const auto names = split_name(strategies[k]->name());
    const std::string& strat = names.first;
    const std::string& impl = names.second;
    add_row("pipeline", strat, impl, "alloc", "ms", m[k].alloc);
    add_row("pipeline", strat, impl, "first", "ms", m[k].first);
    add_row("pipeline", strat, impl, "gpu-first", "ms", m[k].first_gpu);
    add_row("pipeline", strat, impl, "cpu-init", "ms", m[k].init);
    add_row("pipeline", strat, impl, "gpu-phase", "ms", m[k].gpu);
    add_row("pipeline", strat, impl, "cpu-read", "ms", m[k].read);
    add_row("pipeline", strat, impl, "total", "ms", m[k].total);
    add_row("pipeline", strat, impl, "gpu+read", "ms", m[k].after_init);
    add_row("pipeline", strat, impl, "free", "ms", m[k].free);
  }
}

}  // namespace unimem_bench
