// 5. Two GPUs: an array resident on GPU0 used by a kernel on GPU1: on demand, prefetch,
// preferred location + accessed-by (raw and unimem each), unimem's intent map, and an explicit
// peer copy.
#include <unimem/unimem.hpp>

#include "harness.hpp"
#include "raw_runtime.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace {

__global__ void bench_increment(float* data, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

}  // namespace

namespace unimem_bench {
namespace {

/// n zeros of managed memory written on GPU0, so that their pages are there; GPU0 is current.
float* raw_zeros_on_gpu0(std::size_t n) {
  float* p = raw_managed_floats(n);
  RAW_CHECK(RAW(SetDevice)(0));
  RAW_CHECK(RAW(Memset)(p, 0, n * 4));
  RAW_CHECK(RAW(DeviceSynchronize)());
  return p;
}

}  // namespace

void two_gpus(const options& o) {
  const std::size_t n = array_floats(o);
  const unsigned block = 256;
  const unsigned grid = blocks_for(n, block);
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
  unimem::stream s1(unimem::device(1), unimem::stream::blocking_mode::non_blocking);
  const raw_stream_t rs1 = s1.get();
  const unimem::location gpu0 = unimem::location::device(0), gpu1 = unimem::location::device(1);
  std::vector<double> od_raw, od_um, pf_raw, pf_um, ab_raw, ab_um, mp_first, mp_um, peer, mv_raw,
      mv_um;

  for (int rep = 0; rep < o.reps; ++rep) {
    progress("[two GPUs] rep " + std::to_string(rep + 1) + "/" + std::to_string(o.reps));
    // On demand: pages on GPU0, kernel on GPU1 faults them over.
    {
      float* p = raw_zeros_on_gpu0(n);
      RAW_CHECK(RAW(SetDevice)(1));
      od_raw.push_back(time_ms([&] {
        bench_increment<<<grid, block, 0, rs1>>>(p, n);
        RAW_CHECK(RAW(StreamSynchronize)(rs1));
      }));
      RAW_CHECK(RAW(SetDevice)(0));
      raw_free({p});
    }
    {
      unimem::managed_buffer<float> b(n, unimem::first_touch(gpu0));
      od_um.push_back(time_ms([&] {
        unimem::launch(bench_increment, unimem::grid_for(n, block).on(s1).on_device(1), b, n);
        s1.synchronize();
      }));
    }
    // Prefetch to GPU1, then the kernel there.
    {
      float* p = raw_zeros_on_gpu0(n);
      RAW_CHECK(RAW(SetDevice)(1));
      pf_raw.push_back(time_ms([&] {
        raw_prefetch(p, n * 4, 1, rs1);
        bench_increment<<<grid, block, 0, rs1>>>(p, n);
        RAW_CHECK(RAW(StreamSynchronize)(rs1));
      }));
      RAW_CHECK(RAW(SetDevice)(0));
      raw_free({p});
    }
    {
      unimem::managed_buffer<float> b(n, unimem::first_touch(gpu0));
      pf_um.push_back(time_ms([&] {
        unimem::launch(bench_increment, unimem::grid_for(n, block).on(s1).on_device(1),
                       unimem::inout(b), n);
        s1.synchronize();
      }));
      if (unimem::last_prefetch_location(b) != gpu1) {
        fail("two GPUs: tags did not prefetch to GPU1");
      }
    }
    // Preferred location GPU0 + accessed by GPU1: GPU1 works on the pages remotely.
    {
      float* p = raw_zeros_on_gpu0(n);
      raw_advise(p, n * 4, RAW_ADVISE_PREFERRED, 0);
      raw_advise(p, n * 4, RAW_ADVISE_ACCESSED_BY, 1);
      RAW_CHECK(RAW(SetDevice)(1));
      ab_raw.push_back(time_ms([&] {
        bench_increment<<<grid, block, 0, rs1>>>(p, n);
        RAW_CHECK(RAW(StreamSynchronize)(rs1));
      }));
      RAW_CHECK(RAW(SetDevice)(0));
      raw_free({p});
    }
    {
      unimem::managed_buffer<float> b(n, unimem::first_touch(gpu0));
      unimem::advise(b, unimem::advice::preferred_location, gpu0);
      unimem::advise(b, unimem::advice::accessed_by, gpu1);
      ab_um.push_back(time_ms([&] {
        unimem::launch(bench_increment, unimem::grid_for(n, block).on(s1).on_device(1), b, n);
        s1.synchronize();
      }));
      unimem::ready_for_host(b);
      if (b[n - 1] != 1.0f) fail("two GPUs: accessed_by result");
    }
    // Intent map for GPU1: nothing moves, GPU1 works on the pages where they are (GPU0, over
    // NVLink). The first launch gives the advice; the second finds it remembered.
    {
      unimem::managed_buffer<float> b(n, unimem::first_touch(gpu0));
      auto launch_on_gpu1 = [&] {
        unimem::launch(bench_increment, unimem::grid_for(n, block).on(s1).on_device(1),
                       unimem::inout(b, unimem::intent::map), n);
        s1.synchronize();
      };
      mp_first.push_back(time_ms(launch_on_gpu1));
      mp_um.push_back(time_ms(launch_on_gpu1));
      if (unimem::last_prefetch_location(b) != gpu0) {
        fail("two GPUs: a mapped range was prefetched");
      }
      unimem::ready_for_host(b);
      if (b[0] != 2.0f || b[n - 1] != 2.0f) fail("two GPUs: mapped result");
    }
    // Moving the array GPU0 -> GPU1 and nothing else: one raw prefetch call against unimem's
    // prefetch (one call as well since the transfer engine was removed: what it costs).
    {
      float* p = raw_zeros_on_gpu0(n);
      raw_prefetch(p, n * 4, 0, nullptr);  // as unimem's first touch: last prefetched to GPU0
      RAW_CHECK(RAW(DeviceSynchronize)());
      RAW_CHECK(RAW(SetDevice)(1));
      mv_raw.push_back(time_ms([&] {
        raw_prefetch(p, n * 4, 1, rs1);
        RAW_CHECK(RAW(StreamSynchronize)(rs1));
      }));
      RAW_CHECK(RAW(SetDevice)(0));
      raw_free({p});
    }
    {
      unimem::managed_buffer<float> b(n, unimem::first_touch(gpu0));
      mv_um.push_back(time_ms([&] {
        unimem::prefetch(b, gpu1, s1);
        s1.synchronize();
      }));
      if (unimem::last_prefetch_location(b) != gpu1) fail("two GPUs: the move did not reach GPU1");
    }
    // Explicit peer copy between plain allocations, then the kernel on GPU1.
    {
      RAW_CHECK(RAW(SetDevice)(0));
      float* p0 = raw_device_floats(n);
      RAW_CHECK(RAW(Memset)(p0, 0, n * 4));
      RAW_CHECK(RAW(SetDevice)(1));
      float* p1 = raw_device_floats(n);
      RAW_CHECK(RAW(DeviceSynchronize)());
      peer.push_back(time_ms([&] {
        RAW_CHECK(RAW(MemcpyPeerAsync)(p1, 1, p0, 0, n * 4, rs1));
        bench_increment<<<grid, block, 0, rs1>>>(p1, n);
        RAW_CHECK(RAW(StreamSynchronize)(rs1));
      }));
      raw_free({p1});
      RAW_CHECK(RAW(SetDevice)(0));
      raw_free({p0});
    }
  }
  progress_done();
  add_row("two-gpus", "on-demand", "raw", "gpu1-phase", "ms", od_raw);
  add_row("two-gpus", "on-demand", "unimem", "gpu1-phase", "ms", od_um);
  add_row("two-gpus", "prefetch", "raw", "gpu1-phase", "ms", pf_raw);
  add_row("two-gpus", "prefetch", "unimem", "gpu1-phase", "ms", pf_um);
  add_row("two-gpus", "accessed-by", "raw", "gpu1-phase", "ms", ab_raw);
  add_row("two-gpus", "accessed-by", "unimem", "gpu1-phase", "ms", ab_um);
  add_row("two-gpus", "mapped", "unimem", "gpu1-first", "ms", mp_first);
  add_row("two-gpus", "mapped", "unimem", "gpu1-phase", "ms", mp_um);
  add_row("two-gpus", "peer-copy", "raw", "gpu1-phase", "ms", peer);
  add_row("two-gpus", "move-to-gpu1", "raw", "move", "ms", mv_raw);
  add_row("two-gpus", "move-to-gpu1", "unimem", "move", "ms", mv_um);
}

}  // namespace unimem_bench
