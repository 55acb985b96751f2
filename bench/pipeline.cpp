// 1. The seed's pipeline: the CPU initialises a and b, the GPU computes c = a + b, the CPU
// reads c; each strategy (on demand, prefetch, tags, explicit copies) times the three phases.
#include <unimem/unimem.hpp>

#include "harness.hpp"
#include "kernels.hpp"
#include "raw_runtime.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace unimem_bench {
namespace {

struct phases {
  double init = 0, gpu = 0, read = 0;
};

}  // namespace

void pipeline(const options& o) {
  const std::size_t n = array_floats(o);
  const unsigned block = 256;
  const unsigned grid = blocks_for(n, block);
  unimem::stream s(unimem::stream::flags::non_blocking);
  const raw_stream_t rs = s.get();

  using strategy = std::function<phases()>;
  const std::vector<std::pair<std::string, strategy>> strategies = {
      {"on-demand/raw",
       [&] {
         float* a = raw_managed_floats(n);
         float* b = raw_managed_floats(n);
         float* c = raw_managed_floats(n);
         phases p;
         p.init = time_ms([&] { cpu_init(a, b, n); });
         p.gpu = time_ms([&] {
           bench_vadd<<<grid, block, 0, rs>>>(a, b, c, n);
           RAW_CHECK(RAW(StreamSynchronize)(rs));
         });
         p.read = time_ms([&] { if (cpu_check(c, n) != 0) fail("on-demand/raw"); });
         raw_free({a, b, c});
         return p;
       }},
      {"prefetch/raw",
       [&] {
         float* a = raw_managed_floats(n);
         float* b = raw_managed_floats(n);
         float* c = raw_managed_floats(n);
         phases p;
         p.init = time_ms([&] { cpu_init(a, b, n); });
         p.gpu = time_ms([&] {
           raw_prefetch(a, n * 4, 0, rs);
           raw_prefetch(b, n * 4, 0, rs);
           raw_prefetch(c, n * 4, 0, rs);
           bench_vadd<<<grid, block, 0, rs>>>(a, b, c, n);
           RAW_CHECK(RAW(StreamSynchronize)(rs));
         });
         p.read = time_ms([&] {
           raw_prefetch(c, n * 4, -1, rs);
           RAW_CHECK(RAW(StreamSynchronize)(rs));
           if (cpu_check(c, n) != 0) fail("prefetch/raw");
         });
         raw_free({a, b, c});
         return p;
       }},
      {"on-demand/unimem",
       [&] {
         unimem::managed_buffer<float> a(n, unimem::uninitialized), b(n, unimem::uninitialized),
             c(n, unimem::uninitialized);
         phases p;
         p.init = time_ms([&] { cpu_init(a.data(), b.data(), n); });
         p.gpu = time_ms([&] {
           unimem::launch(bench_vadd, unimem::grid_for(n, block).on(s), a, b, c, n);
           s.synchronize();
         });
         p.read = time_ms([&] { if (cpu_check(c.data(), n) != 0) fail("on-demand/unimem"); });
         return p;
       }},
      {"tags/unimem",
       [&] {
         unimem::managed_buffer<float> a(n, unimem::uninitialized), b(n, unimem::uninitialized),
             c(n, unimem::uninitialized);
         phases p;
         p.init = time_ms([&] { cpu_init(a.data(), b.data(), n); });
         p.gpu = time_ms([&] {
           unimem::launch(bench_vadd, unimem::grid_for(n, block).on(s), unimem::in(a),
                          unimem::in(b), unimem::out(c), n);
           s.synchronize();
         });
         p.read = time_ms([&] {
           c.ready_for_host(s);
           if (cpu_check(c.data(), n) != 0) fail("tags/unimem");
         });
         return p;
       }},
      {"explicit-pageable/raw",
       [&] {
         std::unique_ptr<float[]> ha(new float[n]), hb(new float[n]), hc(new float[n]);
         float* a = raw_device_floats(n);
         float* b = raw_device_floats(n);
         float* c = raw_device_floats(n);
         phases p;
         p.init = time_ms([&] { cpu_init(ha.get(), hb.get(), n); });
         p.gpu = time_ms([&] {
           RAW_CHECK(RAW(Memcpy)(a, ha.get(), n * 4, RAW_H2D));
           RAW_CHECK(RAW(Memcpy)(b, hb.get(), n * 4, RAW_H2D));
           bench_vadd<<<grid, block, 0, rs>>>(a, b, c, n);
           RAW_CHECK(RAW(StreamSynchronize)(rs));
         });
         p.read = time_ms([&] {
           RAW_CHECK(RAW(Memcpy)(hc.get(), c, n * 4, RAW_D2H));
           if (cpu_check(hc.get(), n) != 0) fail("explicit-pageable/raw");
         });
         raw_free({a, b, c});
         return p;
       }},
      {"explicit-pinned/raw",
       [&] {
         float* ha = raw_pinned_floats(n);
         float* hb = raw_pinned_floats(n);
         float* hc = raw_pinned_floats(n);
         float* a = raw_device_floats(n);
         float* b = raw_device_floats(n);
         float* c = raw_device_floats(n);
         phases p;
         p.init = time_ms([&] { cpu_init(ha, hb, n); });
         p.gpu = time_ms([&] {
           RAW_CHECK(RAW(MemcpyAsync)(a, ha, n * 4, RAW_H2D, rs));
           RAW_CHECK(RAW(MemcpyAsync)(b, hb, n * 4, RAW_H2D, rs));
           bench_vadd<<<grid, block, 0, rs>>>(a, b, c, n);
           RAW_CHECK(RAW(StreamSynchronize)(rs));
         });
         p.read = time_ms([&] {
           RAW_CHECK(RAW(MemcpyAsync)(hc, c, n * 4, RAW_D2H, rs));
           RAW_CHECK(RAW(StreamSynchronize)(rs));
           if (cpu_check(hc, n) != 0) fail("explicit-pinned/raw");
         });
         raw_free({a, b, c});
         raw_free_pinned({ha, hb, hc});
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

}  // namespace unimem_bench
