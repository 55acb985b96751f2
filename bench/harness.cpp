#include "harness.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace unimem_bench {
namespace {

std::vector<row> g_rows;
int g_noted_missed = 0;
std::string g_noted_where;

}  // namespace

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

void add_row(const std::string& section, const std::string& strategy, const std::string& impl,
             const std::string& metric, const std::string& unit, const std::vector<double>& v) {
  g_rows.push_back({section, strategy, impl, metric, unit, summarize(v)});
}

const std::vector<row>& rows() { return g_rows; }

void note_missed_targets(const std::string& section, int n) {
  if (n <= 0) return;
  g_noted_missed += n;
  g_noted_where += (g_noted_where.empty() ? "" : ", ") + section + ": " + std::to_string(n);
}

int noted_missed_targets(std::string* where) {
  if (where != nullptr) *where = g_noted_where;
  return g_noted_missed;
}

const row* find_row(const std::string& section, const std::string& strategy,
                    const std::string& impl, const std::string& metric) {
  for (const row& r : g_rows) {
    if (r.section == section && r.strategy == strategy && r.impl == impl && r.metric == metric) {
      return &r;
    }
  }
  return nullptr;
}

int cpu_threads(const options& o) {
  if (o.threads > 0) return o.threads;
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::min(8u, cores == 0 ? 1u : cores));
}

void parallel_for(int threads, std::size_t n, void (*f)(void*, std::size_t, std::size_t),
                  void* context) {
  const std::size_t parts = static_cast<std::size_t>(std::max(1, threads));
  if (parts == 1 || n < parts) {
    f(context, 0, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(parts - 1);
  const std::size_t step = (n + parts - 1) / parts;
  for (std::size_t p = 1; p < parts; ++p) {
    const std::size_t b = std::min(n, p * step), e = std::min(n, (p + 1) * step);
    pool.emplace_back([=] { f(context, b, e); });
  }
  f(context, 0, std::min(n, step));
  for (std::thread& t : pool) t.join();
}

namespace {
struct init_args {
  float* a;
  float* b;
};
/// A parallel read: each part writes its result to its own slot, 8 doubles apart (no false
/// sharing); parts are parallel_for's, `step` elements each.
struct read_args {
  read_args(const float* data, std::size_t n, int threads)
      : c(data),
        step(std::max<std::size_t>(1, (n + std::max(1, threads) - 1) / std::max(1, threads))),
        partial(8 * static_cast<std::size_t>(std::max(1, threads))) {}
  double& slot(std::size_t lo) { return partial[8 * (lo / step)]; }
  double total() const {
    double t = 0;
    for (std::size_t p = 0; p < partial.size(); p += 8) t += partial[p];
    return t;
  }
  const float* c;
  std::size_t step;
  std::vector<double> partial;
};
}  // namespace

void cpu_init(float* a, float* b, std::size_t n, int threads) {
  init_args args{a, b};
  parallel_for(threads, n, [](void* ctx, std::size_t lo, std::size_t hi) {
    auto* x = static_cast<init_args*>(ctx);
    for (std::size_t i = lo; i < hi; ++i) {
      x->a[i] = static_cast<float>(i % 1024);
      x->b[i] = 2.0f * static_cast<float>(i % 1024);
    }
  }, &args);
}

std::size_t cpu_check(const float* c, std::size_t n, int threads) {
  read_args args(c, n, threads);
  parallel_for(threads, n, [](void* ctx, std::size_t lo, std::size_t hi) {
    auto* x = static_cast<read_args*>(ctx);
    std::size_t wrong = 0;
    for (std::size_t i = lo; i < hi; ++i) wrong += x->c[i] != 3.0f * static_cast<float>(i % 1024);
    x->slot(lo) = static_cast<double>(wrong);
  }, &args);
  return static_cast<std::size_t>(args.total());
}

double cpu_sum(const float* c, std::size_t n, int threads) {
  read_args args(c, n, threads);
  parallel_for(threads, n, [](void* ctx, std::size_t lo, std::size_t hi) {
    auto* x = static_cast<read_args*>(ctx);
    double sum = 0;
    for (std::size_t i = lo; i < hi; ++i) sum += x->c[i];
    x->slot(lo) = sum;
  }, &args);
  return args.total();
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
