// 2c. A living host (issue 36): BabelStream's triad a = b + s c over three managed arrays already
// on the GPU, launch + synchronise per iteration, tagged (out(a), in(b), in(c)) and untagged
// taking turns on the same buffers, while between launches the host
//   quiet         does nothing;
//   fresh-page    touches one fresh page of ordinary memory (mmap, write, munmap) on the
//                 launching thread;
//   busy-thread   has a second thread mapping, touching and unmapping 1 MiB of fresh memory all
//                 the time;
//   read-1-page, read-1pct, write-all
//                 reads one page of b, reads 1 % of b's pages (every 100th), writes every page
//                 of b (the same values): the tagged launch must move back what the host took,
//                 the untagged one takes it back by GPU faults.
// At 64 MiB and 2 GiB per array (--stream-mib). Only the launch and its synchronisation are
// timed. Where the UVM driver's counters can be read (NVIDIA), the bytes each launch moved to
// the GPU, and the bytes the host took, are reported. Raw beside: the triad over raw managed
// memory, and the same after prefetches of its three resident arrays (what a tag that knew
// nothing would cost); and what unimem's check costs (host_access::now()).
// Targets: quiet, fresh-page, busy-thread: tagged / untagged bandwidth >= 0.95; the host's
// touches of b: tagged no slower than untagged, and moving no more than the host took.
#include <unimem/unimem.hpp>

#include "harness.hpp"
#include "raw_runtime.hpp"
#include <unimem/placement/detail/uvm_counters.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>
#if defined(__unix__)
#include <sys/mman.h>
#endif

namespace {

constexpr double living_scalar = 0.4;
constexpr unsigned living_block = 1024;
constexpr std::size_t page_doubles = 4096 / sizeof(double);

__global__ void living_triad(double* a, const double* b, const double* c, double scalar,
                             std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) a[i] = b[i] + scalar * c[i];
}

__global__ void living_init(double* a, double* b, double* c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
}

/// One fresh 1 MiB mapping, every page written, unmapped: fresh memory, every time.
void fresh_memory(std::size_t bytes) {
#if defined(__unix__)
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  for (std::size_t i = 0; i < bytes; i += 4096) static_cast<volatile char*>(p)[i] = 1;
  munmap(p, bytes);
#else
  std::vector<char> v(bytes);
  for (std::size_t i = 0; i < bytes; i += 4096) static_cast<volatile char*>(v.data())[i] = 1;
#endif
}

enum class work { quiet, fresh_page, busy_thread, read_one_page, read_one_percent, write_all };
struct mode {
  work w;
  const char* name;
  bool touches_b;
};
constexpr mode modes[] = {
    {work::quiet, "quiet", false},
    {work::fresh_page, "fresh-page", false},
    {work::busy_thread, "busy-thread", false},
    {work::read_one_page, "read-1-page", true},
    {work::read_one_percent, "read-1pct", true},
    {work::write_all, "write-all", true},
};

/// What the host does between two launches (busy-thread's work is its thread's).
double host_work(work w, double* b, std::size_t n) {
  volatile double* vb = b;
  double sum = 0;
  switch (w) {
    case work::quiet:
    case work::busy_thread:
      break;
    case work::fresh_page:
      fresh_memory(4096);
      break;
    case work::read_one_page:
      sum += vb[n / 2 + 7];
      break;
    case work::read_one_percent:
      for (std::size_t i = 3; i < n; i += 100 * page_doubles) sum += vb[i];
      break;
    case work::write_all:
      for (std::size_t i = 0; i < n; i += page_doubles) vb[i] = 1.0;
      break;
  }
  return sum;
}

/// Iterations of each of tagged and untagged, by mode and size: the host's touches of every
/// page of 2 GiB cost about half a second an iteration.
int iterations_for(work w, bool large) {
  if (w == work::write_all) return large ? 5 : 10;
  if (w == work::read_one_percent) return large ? 10 : 20;
  return large ? 20 : 40;
}

struct side {
  std::vector<double> ms, moved_mib, took_mib;
};

void check_triad(const double* a, std::size_t n, const char* what) {
  std::size_t wrong = 0;
  const double gold = 1.0 + living_scalar * 2.0;
  for (std::size_t i = 0; i < n; ++i) wrong += std::fabs(a[i] - gold) > 1e-12;
  if (wrong != 0) {
    unimem_bench::fail(std::string("living-host ") + what + ": " + std::to_string(wrong) +
                       " wrong elements of a");
  }
}

}  // namespace

namespace unimem_bench {

void living_host(const options& o) {
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const raw_stream_t rs = s.get();
  const unimem::detail::uvm_counters uvm;
  int missed = 0;
  struct line {
    std::string label;
    double ratio, target;
    bool at_most;
    std::string note;
  };
  std::vector<line> lines;
  for (const std::size_t mib : o.stream_mib) {
    const std::size_t n = mib * (std::size_t{1} << 20) / sizeof(double);
    const std::size_t need = 6 * n * sizeof(double);
    if (unimem::device(0).free_memory() < need + need / 4) {
      std::printf("living-host %zu MiB skipped: 6 arrays need %zu MiB with a 25%% margin\n", mib,
                  (need + need / 4) >> 20);
      continue;
    }
    const bool large = mib >= 1024;
    const std::string size = std::to_string(mib) + "MiB";
    const unsigned grid = blocks_for(n, living_block);
    const auto cfg = unimem::launch_config(grid, living_block, 0, s);
    unimem::managed_buffer<double> a(n, unimem::uninitialized), b(n, unimem::uninitialized),
        c(n, unimem::uninitialized);
    unimem::launch(living_init, cfg, unimem::out(a), unimem::out(b), unimem::out(c), n);
    double* ra = nullptr;
    double* rb = nullptr;
    double* rc = nullptr;
    RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&ra), n * sizeof(double), RAW_ATTACH_GLOBAL));
    RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&rb), n * sizeof(double), RAW_ATTACH_GLOBAL));
    RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(&rc), n * sizeof(double), RAW_ATTACH_GLOBAL));
    for (double* p : {ra, rb, rc}) raw_prefetch(p, n * sizeof(double), 0, rs);
    living_init<<<grid, living_block, 0, rs>>>(ra, rb, rc, n);
    RAW_CHECK(RAW(StreamSynchronize)(rs));

    auto tagged = [&] {
      unimem::launch(living_triad, cfg, unimem::out(a), unimem::in(b), unimem::in(c),
                     living_scalar, n);
      s.synchronize();
    };
    auto untagged = [&] {
      unimem::launch(living_triad, cfg, a, b, c, living_scalar, n);
      s.synchronize();
    };
    auto raw = [&] {
      living_triad<<<grid, living_block, 0, rs>>>(ra, rb, rc, living_scalar, n);
      RAW_CHECK(RAW(StreamSynchronize)(rs));
    };
    auto raw_prefetched = [&] {
      for (double* p : {ra, rb, rc}) raw_prefetch(p, n * sizeof(double), 0, rs);
      living_triad<<<grid, living_block, 0, rs>>>(ra, rb, rc, living_scalar, n);
      RAW_CHECK(RAW(StreamSynchronize)(rs));
    };
    tagged();  // placed once
    untagged();
    raw();

    for (const mode& m : modes) {
      const int iterations = iterations_for(m.w, large);
      progress("[living-host] " + size + " per array, " + m.name + ", " +
               std::to_string(iterations) + " iterations each");
      std::atomic<bool> stop{false};
      std::thread busy;
      if (m.w == work::busy_thread) {
        busy = std::thread([&stop] {
          while (!stop.load(std::memory_order_relaxed)) fresh_memory(std::size_t{1} << 20);
        });
      }
      side t, u;
      double sink = 0;
      auto one = [&](side& x, auto&& launch) {
        const std::uint64_t d0 = uvm.to_host();
        sink += host_work(m.w, b.data(), n);
        const std::uint64_t h0 = uvm.to_gpu(), d1 = uvm.to_host();
        x.ms.push_back(time_ms(launch));
        x.moved_mib.push_back(static_cast<double>(uvm.to_gpu() - h0) / 1048576.0);
        x.took_mib.push_back(static_cast<double>(d1 - d0) / 1048576.0);
      };
      for (int i = -2; i < iterations; ++i) {  // two untimed turns first; the order alternates
        if (i % 2 == 0) {
          one(t, tagged);
          one(u, untagged);
        } else {
          one(u, untagged);
          one(t, tagged);
        }
        if (i < 0) t = u = side{};
      }
      side r, rp;
      if (m.w == work::quiet) {
        for (int i = 0; i < iterations; ++i) {
          one(r, raw);
          one(rp, raw_prefetched);
        }
      }
      stop.store(true);
      if (busy.joinable()) busy.join();
      if (sink < 0) std::printf("%g\n", sink);  // keeps the host's reads
      const std::string strategy = std::string(m.name) + "-" + size;
      add_row("living-host", strategy, "tagged", "time", "ms", t.ms);
      add_row("living-host", strategy, "untagged", "time", "ms", u.ms);
      if (uvm.available()) {
        add_row("living-host", strategy, "tagged", "moved-to-gpu", "MiB", t.moved_mib);
        add_row("living-host", strategy, "untagged", "moved-to-gpu", "MiB", u.moved_mib);
        add_row("living-host", strategy, "tagged", "host-took", "MiB", t.took_mib);
      }
      if (m.w == work::quiet) {
        add_row("living-host", strategy, "raw", "time", "ms", r.ms);
        add_row("living-host", strategy, "raw-prefetch-3", "time", "ms", rp.ms);
      }
      const double tm = summarize(t.ms).median, um = summarize(u.ms).median;
      char note[160] = "";
      if (uvm.available()) {
        std::snprintf(note, sizeof note, "  (%.1f ms vs %.1f; moved %.2f MiB, untagged %.2f, host took %.2f)",
                      tm, um, summarize(t.moved_mib).median, summarize(u.moved_mib).median,
                      summarize(t.took_mib).median);
      } else {
        std::snprintf(note, sizeof note, "  (%.3f ms vs %.3f)", tm, um);
      }
      if (!m.touches_b) {
        lines.push_back({"living-host " + strategy + ": tagged / untagged bandwidth (target >= 0.95)",
                         um / tm, 0.95, false, note});
      } else {
        lines.push_back({"living-host " + strategy + ": untagged / tagged time (target >= 1.00)",
                         um / tm, 1.0, false, note});
        if (uvm.available()) {
          const double moved = summarize(t.moved_mib).median, took = summarize(t.took_mib).median;
          lines.push_back({"living-host " + strategy + ": tagged moved / host took (target <= 1.00)",
                           took > 0 ? moved / took : (moved > 0 ? 1e9 : 0.0), 1.0, true, ""});
        }
      }
      if (m.w == work::quiet) {
        const double rm = summarize(r.ms).median, rpm = summarize(rp.ms).median;
        char raw_note[160];
        std::snprintf(raw_note, sizeof raw_note,
                      "  (raw kernel %.3f ms; with 3 resident prefetches %.3f ms)", rm, rpm);
        lines.push_back({"living-host " + strategy + ": untagged / raw bandwidth", rm / um, 0, false,
                         raw_note});
      }
    }
    progress_done();
    unimem::ready_for_host(a, s);
    check_triad(a.data(), n, ("unimem " + size).c_str());
    RAW_CHECK(RAW(DeviceSynchronize)());
    check_triad(ra, n, ("raw " + size).c_str());
    for (double* p : {ra, rb, rc}) raw_free_device(p);
  }
  // What the check itself costs, on this process's signal.
  namespace ha = unimem::detail::host_access;
  const int calls = 1000000;
  volatile std::uint64_t acc = 0;
  const double check_ns = time_ms([&] {
                            for (int i = 0; i < calls; ++i) acc = acc + ha::now();
                          }) * 1e6 / calls;
  std::printf("\nliving host: host touches learnt from %s (%s); the check (host_access::now()) "
              "costs %.2f ns a launch\n",
              ha::to_string(ha::source()), ha::to_string(ha::why()), check_ns);
  if (!uvm.available()) std::printf("  (no UVM driver counters here: bytes moved not reported)\n");
  for (const line& l : lines) {
    std::string verdict;
    if (l.target > 0) {
      const bool ok = l.at_most ? l.ratio <= l.target : l.ratio >= l.target;
      verdict = ok ? "  MET" : "  MISSED";
      missed += !ok;
    }
    std::printf("  %-78s %8.3f%s%s\n", l.label.c_str(), l.ratio, verdict.c_str(), l.note.c_str());
  }
  note_missed_targets("living-host", missed);
}

}  // namespace unimem_bench
