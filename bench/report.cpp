// The report: the table of every row, the ratios that matter (with their targets, MET or
// MISSED) and the CSV when --csv names a file.
#include "harness.hpp"

#include <cstddef>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

namespace unimem_bench {
namespace {

struct comparison {
  std::string label;
  const row* num;
  const row* den;
  double target;   // 0: none
  bool at_most;    // target is an upper bound on the ratio (else a lower bound)
};

/// One side of a ratio: a strategy and its implementation.
struct side {
  const char* strategy;
  const char* impl;
};

double ratio(const comparison& c) { return c.num->s.median / c.den->s.median; }

}  // namespace

void report(const options& o) {
  std::printf("\n%-13s %-19s %-18s %-11s %12s %12s %12s  %s\n", "section", "strategy", "impl",
              "metric", "median", "min", "max", "unit");
  for (const row& r : rows()) {
    std::printf("%-13s %-19s %-18s %-11s %12.3f %12.3f %12.3f  %s\n", r.section.c_str(),
                r.strategy.c_str(), r.impl.c_str(), r.metric.c_str(), r.s.median, r.s.min,
                r.s.max, r.unit.c_str());
  }

  // num / den of one metric of one section; left out when either row is missing.
  std::vector<comparison> cs;
  auto add = [&](const std::string& label, const char* section, const char* metric, side num,
                 side den, double target = 0, bool at_most = true) {
    const row* n = find_row(section, num.strategy, num.impl, metric);
    const row* d = find_row(section, den.strategy, den.impl, metric);
    if (n != nullptr && d != nullptr) cs.push_back({label, n, d, target, at_most});
  };
  // The best of several rows (the smallest median) against one row; the label names the winner.
  auto add_best = [&](const std::string& label, const char* section, const char* metric,
                      std::initializer_list<side> nums, side den, double target, bool at_most) {
    const row* best = nullptr;
    for (const side& c : nums) {
      const row* r = find_row(section, c.strategy, c.impl, metric);
      if (r != nullptr && (best == nullptr || r->s.median < best->s.median)) best = r;
    }
    const row* d = find_row(section, den.strategy, den.impl, metric);
    if (best != nullptr && d != nullptr) {
      cs.push_back({label + " [" + best->strategy + "]", best, d, target, at_most});
    }
  };
  // The pipeline: steady state (iterations 2..N on the same buffers) unless said otherwise.
  // The target is judged from the end of the CPU's writes until it has read c (gpu+read), the
  // span issue 12's figures measure; with the CPU's writes (the same work for every strategy
  // that writes host memory) the ratio is printed beside it.
  add_best("pipeline gpu+read: best unimem intent vs explicit-pinned/raw (target <= 0.90)",
           "pipeline", "gpu+read",
           {{"tags", "unimem"}, {"mapped", "unimem"}, {"mapped-at-alloc", "unimem"}},
           {"explicit-pinned", "raw"}, 0.90, true);
  add_best("pipeline total incl. CPU writes: best unimem intent vs explicit-pinned/raw", "pipeline",
           "total", {{"tags", "unimem"}, {"mapped", "unimem"}, {"mapped-at-alloc", "unimem"}},
           {"explicit-pinned", "raw"}, 0, true);
  add_best("pipeline first iteration, allocation included: best unimem vs explicit-pinned/raw "
           "(target <= 0.60)",
           "pipeline", "first",
           {{"tags", "unimem"}, {"mapped", "unimem"}, {"mapped-at-alloc", "unimem"}},
           {"explicit-pinned", "raw"}, 0.60, true);
  add("pipeline first iteration: mapped-at-alloc/unimem vs host-mapped/raw", "pipeline", "first",
      {"mapped-at-alloc", "unimem"}, {"host-mapped", "raw"});
  // The pitfall of section 1 and the tags' price, judged as since they were set: the GPU phase
  // of freshly allocated buffers the CPU has just written (the first iteration); the steady
  // state beside them.
  add("pipeline gpu-phase, first iteration: tags/unimem vs prefetch/raw (target <= 1.05)",
      "pipeline", "gpu-first", {"tags", "unimem"}, {"prefetch", "raw"}, 1.05, true);
  add("pipeline gpu-phase, first iteration: on-demand/raw vs tags/unimem (target >= 5)",
      "pipeline", "gpu-first", {"on-demand", "raw"}, {"tags", "unimem"}, 5.0, false);
  add("pipeline gpu-phase, steady state: tags/unimem vs prefetch/raw", "pipeline", "gpu-phase",
      {"tags", "unimem"}, {"prefetch", "raw"});
  add("pipeline gpu-phase, steady state: on-demand/raw vs tags/unimem", "pipeline", "gpu-phase",
      {"on-demand", "raw"}, {"tags", "unimem"});
  add("pipeline total: mapped/unimem vs host-mapped/raw", "pipeline", "total", {"mapped", "unimem"},
      {"host-mapped", "raw"});
  add("pipeline total: mapped/unimem vs tags/unimem", "pipeline", "total", {"mapped", "unimem"},
      {"tags", "unimem"});
  add("pipeline gpu+read: host-mapped/raw vs explicit-pinned/raw", "pipeline", "gpu+read",
      {"host-mapped", "raw"}, {"explicit-pinned", "raw"});
  add("pipeline total: tags/unimem vs prefetch/raw", "pipeline", "total", {"tags", "unimem"},
      {"prefetch", "raw"});
  add("pipeline gpu-phase: on-demand/unimem vs on-demand/raw", "pipeline", "gpu-phase",
      {"on-demand", "unimem"}, {"on-demand", "raw"});
  add("pipeline total: explicit-pageable/raw vs explicit-pinned/raw", "pipeline", "total",
      {"explicit-pageable", "raw"}, {"explicit-pinned", "raw"});
  add("pipeline first iteration: mapped/unimem vs host-mapped/raw", "pipeline", "first",
      {"mapped", "unimem"}, {"host-mapped", "raw"});
  add_best("results back, launch until the CPU has read it: best unimem vs explicit/raw (target "
           "<= 1.2)",
           "results-back", "until-read", {{"tags", "unimem"}, {"mapped", "unimem"}},
           {"explicit", "raw"}, 1.2, true);
  add("results back: tags/unimem vs explicit/raw", "results-back", "until-read",
      {"tags", "unimem"}, {"explicit", "raw"});
  add("results back: prefetch-back/raw vs explicit/raw", "results-back", "until-read",
      {"prefetch-back", "raw"}, {"explicit", "raw"});
  add("results back: on-demand/raw vs explicit/raw", "results-back", "until-read",
      {"on-demand", "raw"}, {"explicit", "raw"});
  add("steady-state kernel: managed_buffer+unimem vs device memory+raw (target <= 1.02)",
      "steady-state", "kernel", {"managed-prefetched", "unimem"}, {"device-memory", "raw"}, 1.02,
      true);
  add("ping-pong one value: managed/raw vs explicit copies", "ping-pong", "round",
      {"one-value", "raw-managed"}, {"one-value", "raw-explicit-copy"});
  add("ping-pong one value: managed/unimem vs managed/raw", "ping-pong", "round",
      {"one-value", "unimem-managed"}, {"one-value", "raw-managed"});
  add("ping-pong one page: managed/raw vs explicit copies", "ping-pong", "round",
      {"one-page", "raw-managed"}, {"one-page", "raw-explicit-copy"});
  for (const char* st : {"on-demand", "prefetch", "accessed-by"}) {
    add(std::string("two GPUs ") + st + ": unimem vs raw", "two-gpus", "gpu1-phase",
        {st, "unimem"}, {st, "raw"});
  }
  add("two GPUs: on-demand/raw vs prefetch/raw", "two-gpus", "gpu1-phase", {"on-demand", "raw"},
      {"prefetch", "raw"});
  add_best("two GPUs, GPU1 over data on GPU0: best unimem intent vs peer-copy/raw (target <= 1.0)",
           "two-gpus", "gpu1-phase", {{"prefetch", "unimem"}, {"mapped", "unimem"}},
           {"peer-copy", "raw"}, 1.0, true);
  add("two GPUs, moving the array GPU0 -> GPU1: unimem prefetch vs one raw prefetch",
      "two-gpus", "move", {"move-to-gpu1", "unimem"}, {"move-to-gpu1", "raw"});

  // Moving data: unimem's host -> GPU prefetch at --size-mib against a pinned copy, and
  // the other direction; the crossover of mapping vs moving; the pipeline by size.
  const std::string at = std::to_string(o.size_mib) + "MiB";
  // The ceiling of a prefetch is the runtime's own prefetch (on the H200 it moves 0.88 of a
  // pinned copy's bandwidth): unimem is judged against that; the pinned copy is for reference.
  add("movement " + at + " host->GPU: unimem prefetch vs raw prefetch, bandwidth (target >= 0.98)",
      "movement", at.c_str(), {"h2d-prefetch", "unimem"}, {"h2d-prefetch", "raw"}, 0.98, false);
  add("movement " + at + " host->GPU: unimem prefetch vs pinned copy, bandwidth", "movement",
      at.c_str(), {"h2d-prefetch", "unimem"}, {"h2d-pinned-copy", "raw"});
  add("movement " + at + " host->GPU: raw prefetch vs pinned copy, bandwidth", "movement",
      at.c_str(), {"h2d-prefetch", "raw"}, {"h2d-pinned-copy", "raw"});
  add("movement " + at + " GPU->host: unimem ready_for_host vs pinned copy, bandwidth",
      "movement", at.c_str(), {"d2h-ready-for-host", "unimem"}, {"d2h-pinned-copy", "raw"});
  for (const char* k : {"k=1", "k=2", "k=4", "k=8", "k=16"}) {
    add(std::string("crossover, kernel reading its input ") + k + " times: mapped vs moved",
        "crossover", k, {"mapped", "unimem"}, {"moved", "unimem"});
  }
  for (std::size_t mib = 4; mib <= o.size_mib; mib *= 4) {
    const std::string m = std::to_string(mib) + "MiB";
    add("pipeline sweep " + m + " x3, gpu+read: mapped/unimem vs explicit-pinned/raw",
        "pipeline-sweep", m.c_str(), {"mapped", "unimem"}, {"explicit-pinned", "raw"});
  }

  // STREAM (stream.cpp): rows are times, and a kernel moves the same bytes in every variant, so
  // X's bandwidth over Y's is Y's time over X's: num = Y's time row, den = X's, and a bandwidth
  // target "X / Y >= t" is a lower bound on that ratio (at_most false).
  const char* const stream_kernels[] = {"copy", "mul", "add", "triad", "dot"};
  // The arrays each kernel reads or writes, BabelStream's count of the bytes it moves.
  const int stream_arrays[] = {2, 2, 3, 3, 2};
  for (const std::size_t mib : o.stream_mib) {
    for (const char* k : stream_kernels) {
      const std::string st = std::string(k) + "-" + std::to_string(mib) + "MiB";
      const std::string label = std::string("stream ") + k + " " + std::to_string(mib) + "MiB: ";
      add(label + "tagged / untagged bandwidth (target >= 0.98)", "stream", "time",
          {st.c_str(), "untagged"}, {st.c_str(), "tagged"}, 0.98, false);
      add(label + "untagged / raw bandwidth", "stream", "time", {st.c_str(), "raw"},
          {st.c_str(), "untagged"});
      add(label + "mapped / raw bandwidth", "stream", "time", {st.c_str(), "raw"},
          {st.c_str(), "mapped"});
    }
  }

  // Value initialisation (init.cpp): each strategy's time over the CPU zero-fill (the
  // default of unimem 0.1), for each size and each first use of the array.
  const char* const init_works[] = {"gpu-writes", "gpu-reads", "cpu-writes"};
  for (const std::size_t kib : o.init_kib) {
    const std::string size = init_size_label(kib);
    const std::string cpu_zero = "cpu-zero/" + size;
    for (const char* w : init_works) {
      for (const char* st : {"default", "gpu-zero", "uninit"}) {
        const std::string strategy = std::string(st) + "/" + size;
        add("init " + size + " " + w + ": " + st + "/unimem vs cpu-zero/unimem", "init", w,
            {strategy.c_str(), "unimem"}, {cpu_zero.c_str(), "unimem"});
      }
    }
  }

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
  // STREAM bandwidth, GB/s (10^9 bytes a second), from each variant's median time.
  for (const std::size_t mib : o.stream_mib) {
    for (int k = 0; k < 5; ++k) {
      const std::string st = std::string(stream_kernels[k]) + "-" + std::to_string(mib) + "MiB";
      const double bytes = static_cast<double>(stream_arrays[k]) * static_cast<double>(mib) *
                           static_cast<double>(std::size_t{1} << 20);
      std::string line;
      for (const char* impl : {"raw", "untagged", "tagged", "mapped"}) {
        const row* r = find_row("stream", st, impl, "time");
        if (r == nullptr || !(r->s.median > 0)) continue;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s%s %.1f", line.empty() ? "" : ", ", impl,
                      bytes / r->s.median * 1e-6);
        line += buf;
      }
      if (line.empty()) continue;
      const std::string label = std::string("stream ") + stream_kernels[k] + " " +
                                std::to_string(mib) + "MiB bandwidth, GB/s";
      std::printf("  %-86s %s\n", label.c_str(), line.c_str());
    }
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
  // DLPack: what unimem adds to a tensor built, or taken, by hand.
  for (const char* op : {"export+delete", "import+delete"}) {
    const row* r = find_row("dlpack", op, "raw", "1-D");
    const row* u = find_row("dlpack", op, "unimem", "1-D");
    if (r == nullptr || u == nullptr) continue;
    const double d = u->s.median - r->s.median;
    const bool ok = d <= 1.0;
    missed += !ok;
    const std::string label = std::string("dlpack ") + op + ": unimem - by hand (target <= +1 us)";
    std::printf("  %-86s %+8.3f us%s\n", label.c_str(), d, ok ? "  MET" : "  MISSED");
  }
  // What intent map costs: per launch once remembered, and the advice at its first launch.
  const row* am = find_row("launch", "4-arg-mapped-tags", "unimem", "enqueue");
  if (ar != nullptr && am != nullptr) {
    std::printf("  %-86s %+8.3f us\n",
                "launch: unimem with 3 mapped tags (advice remembered) - raw, 4-argument kernel",
                am->s.median - ar->s.median);
  }
  // Tags whose ranges are already in place cost what the record check costs (issue 24).
  const row* ap = find_row("launch", "4-arg-placed-tags", "unimem", "enqueue");
  if (au != nullptr && ap != nullptr) {
    std::printf("  %-86s %+8.3f us\n",
                "launch: unimem with 3 tags over buffers in place - unimem untagged",
                ap->s.median - au->s.median);
  }
  const row* av = find_row("launch", "4-arg-device-view-tags", "unimem", "enqueue");
  if (ar != nullptr && av != nullptr) {
    std::printf("  %-86s %+8.3f us\n",
                "launch: unimem with 3 tags over views of device memory - raw, 4-argument kernel",
                av->s.median - ar->s.median);
  }
  const row* mf = find_row("pipeline", "mapped", "unimem", "gpu-first");
  const row* ms = find_row("pipeline", "mapped", "unimem", "gpu-phase");
  if (mf != nullptr && ms != nullptr) {
    std::printf("  %-86s %+8.3f ms\n",
                "pipeline: mapped/unimem first launch (advice for 3 arrays) - later launches",
                mf->s.median - ms->s.median);
  }

  // The init section side by side: median ms of unimem / raw and their ratio, per strategy.
  bool init_header = false;
  for (const std::size_t kib : o.init_kib) {
    const std::string size = init_size_label(kib);
    for (const char* w : init_works) {
      std::string line;
      for (const char* st : {"default", "cpu-zero", "gpu-zero", "uninit", "gpu-memset"}) {
        const std::string strategy = std::string(st) + "/" + size;
        const row* u = find_row("init", strategy, "unimem", w);
        const row* r = find_row("init", strategy, "raw", w);
        char buf[96];
        if (u != nullptr && r != nullptr && r->s.median > 0) {
          std::snprintf(buf, sizeof buf, "  %-10s %9.2f /%9.2f (%.2f)", st, u->s.median,
                        r->s.median, u->s.median / r->s.median);
        } else if (u != nullptr) {
          std::snprintf(buf, sizeof buf, "  %-10s %9.2f /%9s       ", st, u->s.median, "-");
        } else if (r != nullptr) {
          std::snprintf(buf, sizeof buf, "  %-10s %9s /%9.2f", st, "-", r->s.median);
        } else {
          continue;
        }
        line += buf;
      }
      if (line.empty()) continue;
      if (!init_header) {
        std::printf("\ninit: a new managed_buffer<float>'s value initialisation, median ms from "
                    "the allocation, unimem / raw (unimem/raw)\n");
        init_header = true;
      }
      std::printf("  %-8s %-11s%s\n", size.c_str(), w, line.c_str());
    }
  }

  FILE* csv = o.csv.empty() ? nullptr : std::fopen(o.csv.c_str(), "w");
  if (csv != nullptr) {
    std::fprintf(csv, "section,strategy,impl,metric,unit,median,min,max\n");
    for (const row& r : rows()) {
      std::fprintf(csv, "%s,%s,%s,%s,%s,%.6f,%.6f,%.6f\n", r.section.c_str(), r.strategy.c_str(),
                   r.impl.c_str(), r.metric.c_str(), r.unit.c_str(), r.s.median, r.s.min, r.s.max);
    }
    for (const comparison& c : cs) {
      std::fprintf(csv, "ratio,\"%s\",,,,%.6f,,\n", c.label.c_str(), ratio(c));
    }
    std::fclose(csv);
    std::printf("\nCSV written to %s\n", o.csv.c_str());
  }
  // Sections that print and judge their own ratios (pool) count here too.
  std::string where;
  const int noted = noted_missed_targets(&where);
  missed += noted;
  std::printf("\n%s%s\n",
              missed == 0 ? "all targets met" : (std::to_string(missed) + " target(s) missed").c_str(),
              noted > 0 ? (" (" + where + ")").c_str() : "");
}

}  // namespace unimem_bench
