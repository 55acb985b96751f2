#include "harness.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace unimem_bench {
namespace {

std::vector<row> g_rows;

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

}  // namespace

void add_row(const std::string& section, const std::string& strategy, const std::string& impl,
             const std::string& metric, const std::string& unit, const std::vector<double>& v) {
  g_rows.push_back({section, strategy, impl, metric, unit, summarize(v)});
}

const std::vector<row>& rows() { return g_rows; }

const row* find_row(const std::string& section, const std::string& strategy,
                    const std::string& impl, const std::string& metric) {
  for (const row& r : g_rows) {
    if (r.section == section && r.strategy == strategy && r.impl == impl && r.metric == metric) {
      return &r;
    }
  }
  return nullptr;
}

void progress(const std::string& what) {
  std::fprintf(stderr, "\r%-78s", what.c_str());
  std::fflush(stderr);
}

void progress_done() {
  std::fprintf(stderr, "\r%-78s\r", "");
  std::fflush(stderr);
}

void fail(const std::string& what) {
  progress_done();
  std::fprintf(stderr, "unimem-bench: WRONG RESULT: %s\n", what.c_str());
  std::exit(1);
}

}  // namespace unimem_bench
