// The report: the table of every row, the ratios that matter (with their targets, MET or
// MISSED) and the CSV when --csv names a file.
#include "harness.hpp"

#include <cstdio>
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
  std::printf("\n%-13s %-19s %-18s %-10s %12s %12s %12s  %s\n", "section", "strategy", "impl",
              "metric", "median", "min", "max", "unit");
  for (const row& r : rows()) {
    std::printf("%-13s %-19s %-18s %-10s %12.3f %12.3f %12.3f  %s\n", r.section.c_str(),
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
  add("pipeline gpu-phase: tags/unimem vs prefetch/raw (target <= 1.05)", "pipeline", "gpu-phase",
      {"tags", "unimem"}, {"prefetch", "raw"}, 1.05, true);
  add("pipeline gpu-phase: on-demand/raw vs tags/unimem (target >= 5)", "pipeline", "gpu-phase",
      {"on-demand", "raw"}, {"tags", "unimem"}, 5.0, false);
  add("pipeline gpu-phase: on-demand/unimem vs on-demand/raw", "pipeline", "gpu-phase",
      {"on-demand", "unimem"}, {"on-demand", "raw"});
  add("pipeline gpu-phase: on-demand/raw vs prefetch/raw", "pipeline", "gpu-phase",
      {"on-demand", "raw"}, {"prefetch", "raw"});
  add("pipeline cpu-read: on-demand/raw vs prefetch/raw", "pipeline", "cpu-read",
      {"on-demand", "raw"}, {"prefetch", "raw"});
  add("pipeline total: tags/unimem vs prefetch/raw", "pipeline", "total", {"tags", "unimem"},
      {"prefetch", "raw"});
  add("pipeline total: explicit-pageable/raw vs tags/unimem", "pipeline", "total",
      {"explicit-pageable", "raw"}, {"tags", "unimem"});
  add("pipeline total: explicit-pinned/raw vs tags/unimem", "pipeline", "total",
      {"explicit-pinned", "raw"}, {"tags", "unimem"});
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
  std::printf("\n%s\n", missed == 0 ? "all targets met" : (std::to_string(missed) + " target(s) missed").c_str());
}

}  // namespace unimem_bench
