// 2. Steady state: the same kernel on data already on the GPU, device memory with raw launches
// vs managed_buffer placed on the GPU with unimem::launch, timed with events.
#include <unimem/unimem.hpp>

#include "harness.hpp"
#include "kernels.hpp"
#include "raw_runtime.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace unimem_bench {

void steady_state(const options& o) {
  const std::size_t n = array_floats(o);
  const unsigned block = 256;
  const unsigned grid = blocks_for(n, block);
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const raw_stream_t rs = s.get();
  float* da = raw_device_floats(n);
  float* db = raw_device_floats(n);
  float* dc = raw_device_floats(n);
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
  unimem::ready_for_host(c, s);
  if (c[0] != 0.0f || c[n - 1] != 0.0f) fail("steady state");
  add_row("steady-state", "device-memory", "raw", "kernel", "ms", raw_ms);
  add_row("steady-state", "managed-prefetched", "unimem", "kernel", "ms", um_ms);
  RAW_CHECK(RAW(EventDestroy)(e0));
  RAW_CHECK(RAW(EventDestroy)(e1));
  raw_free({da, db, dc});
}

}  // namespace unimem_bench
