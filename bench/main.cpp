// unimem-bench: the unified-memory pitfalls, measured. Every strategy runs in this one process,
// side by side with a raw baseline written directly against the runtime (raw_runtime.hpp),
// and the table reports medians over repetitions with their spread, plus the ratios that
// matter. Build: the `unimem-bench` target (bench/). Run: unimem-bench [--size-mib N]
// [--reps N] [--launches N] [--rounds N] [--stream-mib A,B] [--init-mib A,B | --init-kib A,B]
// [--csv FILE] [--quick] [--only SECTION,...].
// One scenario a file (harness.hpp lists them); this file parses the options and runs them.
//
// Section "stream" (stream.cpp; alone: unimem-bench --only stream): BabelStream's copy, mul,
// add, triad and dot over three arrays of double already on the GPU, each kernel timed with the
// host's clock around its launch and stream synchronisation, at 64 MiB and 2 GiB per array
// (--stream-mib; --quick: 64 only), in four variants: raw managed memory prefetched once with
// <<<>>> launches, managed_buffer with untagged unimem::launch, the same with every launch
// tagged (in/out; data already on the GPU must cost nothing more: target tagged / untagged
// bandwidth >= 0.98), and tags with intent map (the arrays stay in host memory). Every
// variant's results are checked against BabelStream's gold values.
//
// Section "living-host" (living_host.cpp; alone: unimem-bench --only living-host): the triad
// over three arrays already on the GPU, tagged and untagged in turn, while the host between
// launches does nothing, faults one fresh page, runs a thread that keeps faulting fresh memory,
// or reads or writes pages of one of the arrays (issue 36); at the --stream-mib sizes. Targets:
// tagged / untagged bandwidth >= 0.95 where the host leaves the arrays alone; where it touches
// one, tagged no slower than untagged, moving no more than the host took (UVM counters).
//
// Section "init" (init.cpp; alone: unimem-bench --only init): where a new managed_buffer's
// value initialisation should run. Fresh arrays of 64 and 1024 MiB (--init-mib, or --init-kib
// for small ones; --quick: 64 MiB), built by managed_buffer(n) (the default: the GPU zeroes
// large arrays, the CPU small ones), zero-filled on the CPU (first_touch(location::host())),
// zero-filled on the GPU (first_touch(location::device(0), s)) or left uninitialised, each
// timed until a kernel has written it, until a kernel has read it and the CPU has read it
// back, and until the CPU has written it and a kernel read it; unimem and raw side by side,
// with ratios to the CPU zero-fill.
//
// Section "pool" (pool.cpp; alone: unimem-bench --only pool): managed memory at allocator speed
// (issue 28). Allocate managed memory of 4 KiB, 1 MiB, 64 MiB and 1 GiB, run one fill kernel
// over it, free it, synchronise: cudaMallocManaged/hipMallocManaged against unimem::managed_pool
// (a pool_buffer and an untagged launch) and against the runtime's own pool of managed memory
// (CUDA 13; HIP builds say it is absent and that the pool uses its caching allocator), medians
// of max(21, 4 --reps + 1) iterations. Targets: the pool at least 5x faster than
// cudaMallocManaged at 1 MiB, and within 1.1x of the raw CUDA 13 pool.
//
// Section "oversubscribe" (oversubscribe.cpp; alone: unimem-bench --only oversubscribe
// [--leave-free-gib 16] [--oversubscribe-factors 0.5,1,1.5,2]): working sets larger than the
// GPU (issue 51). A device allocation (the
// ballast) leaves --leave-free-gib GiB free (default 16; --quick 2); sum (read-only) and triad
// (read-write) over 0.5x, 1x, 1.5x and 2x that (skipped where the host's available memory
// cannot hold the working set twice: managed, and pinned for the explicit anchor): naive
// managed memory, zero-copy (host-resident, accessed by the GPU), the runtime's prefetch per
// chunk, explicit chunked copies through pinned memory on two streams, unimem's tags, its
// windows. GB/s and ratios. Targets: windows >= 0.90 of the explicit copies and >= 3x naive at
// 1.5x and 2x; at 0.5x >= 0.98 of the tags' steady state. At 1.5x also a managed_pool with a
// GPU budget (its pieces past the budget on the host, where the host holds a third copy) over
// sum, triad and two kernels that touch part of the data, sparse (1/64 of the bytes, all over)
// and tail (the last third), beside naive managed memory: targets >= 1.0 of naive over sum and
// triad, >= 1.1 over sparse; tail, none (the pool's host pieces: the case against a default).
//
// Section "dlpack" (dlpack.cpp; alone: unimem-bench --only dlpack): <unimem/dlpack.hpp>'s export
// of a shared managed_buffer and import of a tensor, each with its deleter, against the same
// tensor built or taken by hand. Target: unimem adds at most 1 us to either.
#include <unimem/unimem.hpp>

#include "harness.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace {

using unimem_bench::options;

/// "A,B,...": sizes in `unit` (MiB or KiB), each positive.
std::vector<std::size_t> parse_sizes(const std::string& option, const std::string& list,
                                     const char* unit = "MiB") {
  std::vector<std::size_t> sizes;
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    std::size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v == 0) {
      std::fprintf(stderr, "unimem-bench: %s takes sizes in %s, like 64,2048 (not \"%s\")\n",
                   option.c_str(), unit, list.c_str());
      std::exit(2);
    }
    sizes.push_back(v);
    at = comma + 1;
  }
  return sizes;
}

options parse(int argc, char** argv) {
  options o;
  bool stream_mib_given = false, init_mib_given = false, leave_free_given = false;
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
    else if (a == "--iterations") o.iterations = std::stoi(next());
    else if (a == "--threads") o.threads = std::stoi(next());
    else if (a == "--sweep-max-mib") o.sweep_max_mib = std::stoul(next());
    else if (a == "--only") o.only = "," + next() + ",";
    else if (a == "--oversubscribe-factors") {
      o.oversubscribe_factors.clear();
      const std::string list = next();
      std::size_t at = 0;
      while (at <= list.size()) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, comma - at);
        char* end = nullptr;
        const double f = std::strtod(item.c_str(), &end);
        if (item.empty() || end != item.c_str() + item.size() || !(f >= 0.1 && f <= 8.0)) {
          std::fprintf(stderr, "unimem-bench: --oversubscribe-factors takes factors of the free "
                               "memory from 0.1 to 8, like 0.5,1,1.5,2 (not \"%s\")\n",
                       list.c_str());
          std::exit(2);
        }
        o.oversubscribe_factors.push_back(f);
        at = comma + 1;
      }
    }
    else if (a == "--leave-free-gib") {
      o.leave_free_gib = std::stod(next());
      leave_free_given = true;
    }
    else if (a == "--stream-mib") {
      o.stream_mib = parse_sizes(a, next());
      stream_mib_given = true;
    }
    else if (a == "--init-mib") {
      o.init_kib.clear();
      for (const std::size_t mib : parse_sizes(a, next())) o.init_kib.push_back(mib * 1024);
      init_mib_given = true;
    }
    else if (a == "--init-kib") {
      o.init_kib = parse_sizes(a, next(), "KiB");
      init_mib_given = true;
    }
    else if (a == "--quick") {
      o.size_mib = 64;
      o.reps = 2;
      o.launches = 5000;
      o.rounds = 200;
      o.iterations = 3;
      o.sweep_max_mib = 64;
      if (!stream_mib_given) o.stream_mib = {64};  // --stream-mib wins, before or after
      if (!init_mib_given) o.init_kib = {65536};
      if (!leave_free_given) o.leave_free_gib = 2.0;
    } else {
      std::fprintf(stderr,
                   "usage: unimem-bench [--size-mib N] [--reps N] [--iterations N] [--threads N] "
                   "[--sweep-max-mib N] [--launches N] [--rounds N] [--csv FILE] [--quick]\n"
                   "                    [--stream-mib A,B,...]  (section stream's MiB per array; "
                   "default 64,2048; --quick: 64)\n"
                   "                    [--init-mib A,B,...] or [--init-kib A,B,...]  (section "
                   "init's array sizes; default 64,1024 MiB; --quick: 64)\n"
                   "                    [--leave-free-gib X]  (section oversubscribe: the GPU "
                   "memory its ballast leaves free; default 16, --quick: 2)\n"
                   "                    [--oversubscribe-factors A,B,...]  (its working sets, x "
                   "that; default 0.5,1,1.5,2)\n"
                   "                    [--only SECTION,...]  (pipeline, results-back, "
                   "pipeline-sweep, movement,\n"
                   "                     steady-state, stream, living-host, launch, ping-pong, "
                   "two-gpus, init, pool, oversubscribe, dlpack)\n");
      std::exit(a == "--help" || a == "-h" ? 0 : 2);
    }
  }
  if (o.size_mib == 0 || o.sweep_max_mib < 4 || o.reps < 1 || o.launches < 1 || o.rounds < 10 || o.iterations < 2 ||
      o.threads < 0 || !(o.leave_free_gib >= 0.25)) {
    std::fprintf(stderr,
                 "unimem-bench: sizes and counts must be positive (rounds >= 10, iterations >= 2, "
                 "threads >= 0, --leave-free-gib >= 0.25)\n");
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
  std::printf(
      "arrays of %zu MiB, %d repetitions of %d iterations, CPU work on %d threads, %d launches, "
      "%d ping-pong rounds\n",
      o.size_mib, o.reps, o.iterations, unimem_bench::cpu_threads(o), o.launches, o.rounds);
  try {
    using scenario = void (*)(const options&);
    const std::pair<const char*, scenario> scenarios[] = {
        {"pipeline", unimem_bench::pipeline},
        {"results-back", unimem_bench::results_back},
        {"pipeline-sweep", unimem_bench::pipeline_sweep},
        {"movement", unimem_bench::movement},
        {"steady-state", unimem_bench::steady_state},
        {"stream", unimem_bench::stream_bench},
        {"living-host", unimem_bench::living_host},
        {"launch", unimem_bench::launch_overhead},
        {"ping-pong", unimem_bench::ping_pong},
        {"two-gpus", unimem_bench::two_gpus},
        {"init", unimem_bench::init_bench},
        {"pool", unimem_bench::pool_bench},
        {"oversubscribe", unimem_bench::oversubscribe_bench},
        {"dlpack", unimem_bench::dlpack_bench},
    };
    for (const auto& sc : scenarios) {
      if (!o.only.empty() && o.only.find("," + std::string(sc.first) + ",") == std::string::npos) {
        continue;
      }
      if (std::string(sc.first) == "two-gpus" && unimem::device_count() < 2) {
        std::printf("two-GPU rows skipped: one GPU\n");
        continue;
      }
      sc.second(o);
    }
  } catch (const std::exception& e) {
    unimem_bench::progress_done();
    std::fprintf(stderr, "unimem-bench: %s\n", e.what());
    return 1;
  }
  unimem_bench::report(o);
  return 0;
}
