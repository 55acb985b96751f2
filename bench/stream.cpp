// 2b. STREAM: BabelStream's five kernels (copy, mul, add, triad, dot) over three arrays of
// double already on the GPU, in a steady-state loop, the way BabelStream times them (host wall
// time around each launch and its stream synchronisation, so host overhead counts). Four
// variants in this one process, on one non-blocking stream; raw, untagged and tagged take turns
// kernel by kernel (untagged and tagged on the same buffers: each kernel run twice in a row
// leaves the arrays as once), so that drift of the GPU's clocks falls on all three alike:
//   raw       cudaMallocManaged/hipMallocManaged, prefetched to GPU 0 once, <<<>>> launches;
//   untagged  managed_buffer, unimem::prefetch to GPU 0 once, unimem::launch without tags;
//   tagged    the same, every launch tagged as a user would (in(a), out(c), ...): placed once,
//             a launch over buffers already there places nothing again (placement records);
//   mapped    tags with intent map: the arrays stay in host memory and the GPU reads them over
//             the bus (the wrong intent for data the GPU keeps using: the row shows its price).
// Every variant's arrays are checked after the run against BabelStream's gold values.
#include <unimem/unimem.hpp>

#include "harness.hpp"
#include "raw_runtime.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

namespace {

// BabelStream's start values, and its block sizes: TBSIZE 1024 for the streaming kernels; for
// dot 256 threads (a power of two: the tree reduction below needs one) in 4 blocks per
// multiprocessor.
constexpr double start_a = 0.1;
constexpr double start_b = 0.2;
constexpr double start_c = 0.0;
constexpr double start_scalar = 0.4;
constexpr unsigned stream_block = 1024;
constexpr unsigned dot_block = 256;
constexpr int warmup_iterations = 2;

__global__ void stream_init(double* a, double* b, double* c, double va, double vb, double vc,
                            std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) {
    a[i] = va;
    b[i] = vb;
    c[i] = vc;
  }
}

/// c = a
__global__ void stream_copy(const double* a, double* c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i];
}

/// b = scalar * c
__global__ void stream_mul(double* b, const double* c, double scalar, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) b[i] = scalar * c[i];
}

/// c = a + b
__global__ void stream_add(const double* a, const double* b, double* c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

/// a = b + scalar * c
__global__ void stream_triad(double* a, const double* b, const double* c, double scalar,
                             std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) a[i] = b[i] + scalar * c[i];
}

/// sums[block] = the block's share of sum(a * b): a grid-stride loop, then a shared-memory tree
/// reduction over the block's dot_block threads (any warp size: every step synchronises the
/// block). Launched with blockDim.x == dot_block.
__global__ void stream_dot(const double* a, const double* b, double* sums, std::size_t n) {
  __shared__ double tb_sum[dot_block];
  const unsigned local = threadIdx.x;
  const std::size_t stride = std::size_t(blockDim.x) * gridDim.x;
  double s = 0.0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + local; i < n; i += stride) {
    s += a[i] * b[i];
  }
  tb_sum[local] = s;
  for (unsigned offset = blockDim.x / 2; offset > 0; offset /= 2) {
    __syncthreads();
    if (local < offset) tb_sum[local] += tb_sum[local + offset];
  }
  if (local == 0) sums[blockIdx.x] = tb_sum[0];
}

enum kernel_index { k_copy, k_mul, k_add, k_triad, k_dot, kernel_count };
const char* const kernel_names[kernel_count] = {"copy", "mul", "add", "triad", "dot"};

double host_sum(const double* sums, unsigned blocks) {
  double s = 0.0;
  for (unsigned i = 0; i < blocks; ++i) s += sums[i];
  return s;
}

// ---------------------------------------------------------------- the variants

/// Raw runtime calls: managed memory prefetched once, <<<>>> launches.
class raw_variant {
 public:
  raw_variant(std::size_t n, unsigned dot_blocks, raw_stream_t rs)
      : n_(n),
        grid_(unimem_bench::blocks_for(n, stream_block)),
        dot_blocks_(dot_blocks),
        rs_(rs) {
    for (double** p : {&a_, &b_, &c_}) {
      RAW_CHECK(RAW(MallocManaged)(reinterpret_cast<void**>(p), n * sizeof(double),
                                   RAW_ATTACH_GLOBAL));
    }
    sums_ = raw_pinned_array<double>(dot_blocks);
  }
  raw_variant(const raw_variant&) = delete;
  raw_variant& operator=(const raw_variant&) = delete;
  ~raw_variant() {
    for (double* p : {a_, b_, c_}) raw_free_device(p);
    raw_free_host(sums_);
  }

  void init() {
    stream_init<<<grid_, stream_block, 0, rs_>>>(a_, b_, c_, start_a, start_b, start_c, n_);
    RAW_CHECK(RAW(GetLastError)());
    for (const double* p : {a_, b_, c_}) raw_prefetch(p, n_ * sizeof(double), 0, rs_);
    sync();
  }
  void copy() {
    stream_copy<<<grid_, stream_block, 0, rs_>>>(a_, c_, n_);
    sync();
  }
  void mul() {
    stream_mul<<<grid_, stream_block, 0, rs_>>>(b_, c_, start_scalar, n_);
    sync();
  }
  void add() {
    stream_add<<<grid_, stream_block, 0, rs_>>>(a_, b_, c_, n_);
    sync();
  }
  void triad() {
    stream_triad<<<grid_, stream_block, 0, rs_>>>(a_, b_, c_, start_scalar, n_);
    sync();
  }
  double dot() {
    stream_dot<<<dot_blocks_, dot_block, 0, rs_>>>(a_, b_, sums_, n_);
    sync();
    return host_sum(sums_, dot_blocks_);
  }
  /// The arrays back in host memory for the check.
  void to_host() {
    RAW_CHECK(RAW(GetLastError)());
    for (const double* p : {a_, b_, c_}) raw_prefetch(p, n_ * sizeof(double), -1, rs_);
    sync();
  }
  const double* a() const { return a_; }
  const double* b() const { return b_; }
  const double* c() const { return c_; }

 private:
  void sync() { RAW_CHECK(RAW(StreamSynchronize)(rs_)); }

  std::size_t n_;
  unsigned grid_, dot_blocks_;
  raw_stream_t rs_;
  double* a_ = nullptr;
  double* b_ = nullptr;
  double* c_ = nullptr;
  double* sums_ = nullptr;
};

/// How the unimem variants pass the arrays to unimem::launch.
enum class tagging { none, move, map };

/// managed_buffers and unimem::launch. Each kernel call takes how the arrays are passed:
/// untagged, tagged (intent move, the default), or tagged with intent map. `arrays_mapped`: the
/// init kernel maps them (their pages are first touched in host memory), else they are
/// prefetched to GPU 0 once. The dot's partial sums are a pinned_buffer, passed untagged.
class unimem_variant {
 public:
  unimem_variant(std::size_t n, unsigned dot_blocks, const unimem::stream& s, bool arrays_mapped)
      : a_(n, unimem::uninitialized),
        b_(n, unimem::uninitialized),
        c_(n, unimem::uninitialized),
        sums_(dot_blocks),
        s_(s),
        cfg_(unimem::grid_for(n, stream_block).on(s)),
        dot_cfg_(unimem::dims(dot_blocks), unimem::dims(dot_block), 0, s),
        n_(n),
        dot_blocks_(dot_blocks),
        mapped_(arrays_mapped) {}

  void init() {
    if (mapped_) {
      unimem::launch(stream_init, cfg_, unimem::out(a_, unimem::intent::map),
                     unimem::out(b_, unimem::intent::map), unimem::out(c_, unimem::intent::map),
                     start_a, start_b, start_c, n_);
    } else {
      unimem::launch(stream_init, cfg_, a_, b_, c_, start_a, start_b, start_c, n_);
      const unimem::location gpu0 = unimem::location::device(0);
      for (const auto* x : {&a_, &b_, &c_}) (void)unimem::prefetch(*x, gpu0, s_);
    }
    s_.synchronize();
  }
  template <tagging T>
  void copy() {
    if constexpr (T == tagging::none) {
      unimem::launch(stream_copy, cfg_, a_, c_, n_);
    } else if constexpr (T == tagging::move) {
      unimem::launch(stream_copy, cfg_, unimem::in(a_), unimem::out(c_), n_);
    } else {
      unimem::launch(stream_copy, cfg_, unimem::in(a_, unimem::intent::map),
                     unimem::out(c_, unimem::intent::map), n_);
    }
    s_.synchronize();
  }
  template <tagging T>
  void mul() {
    if constexpr (T == tagging::none) {
      unimem::launch(stream_mul, cfg_, b_, c_, start_scalar, n_);
    } else if constexpr (T == tagging::move) {
      unimem::launch(stream_mul, cfg_, unimem::out(b_), unimem::in(c_), start_scalar, n_);
    } else {
      unimem::launch(stream_mul, cfg_, unimem::out(b_, unimem::intent::map),
                     unimem::in(c_, unimem::intent::map), start_scalar, n_);
    }
    s_.synchronize();
  }
  template <tagging T>
  void add() {
    if constexpr (T == tagging::none) {
      unimem::launch(stream_add, cfg_, a_, b_, c_, n_);
    } else if constexpr (T == tagging::move) {
      unimem::launch(stream_add, cfg_, unimem::in(a_), unimem::in(b_), unimem::out(c_), n_);
    } else {
      unimem::launch(stream_add, cfg_, unimem::in(a_, unimem::intent::map),
                     unimem::in(b_, unimem::intent::map), unimem::out(c_, unimem::intent::map), n_);
    }
    s_.synchronize();
  }
  template <tagging T>
  void triad() {
    if constexpr (T == tagging::none) {
      unimem::launch(stream_triad, cfg_, a_, b_, c_, start_scalar, n_);
    } else if constexpr (T == tagging::move) {
      unimem::launch(stream_triad, cfg_, unimem::out(a_), unimem::in(b_), unimem::in(c_),
                     start_scalar, n_);
    } else {
      unimem::launch(stream_triad, cfg_, unimem::out(a_, unimem::intent::map),
                     unimem::in(b_, unimem::intent::map), unimem::in(c_, unimem::intent::map),
                     start_scalar, n_);
    }
    s_.synchronize();
  }
  template <tagging T>
  double dot() {
    if constexpr (T == tagging::none) {
      unimem::launch(stream_dot, dot_cfg_, a_, b_, sums_, n_);
    } else if constexpr (T == tagging::move) {
      unimem::launch(stream_dot, dot_cfg_, unimem::in(a_), unimem::in(b_), sums_, n_);
    } else {
      unimem::launch(stream_dot, dot_cfg_, unimem::in(a_, unimem::intent::map),
                     unimem::in(b_, unimem::intent::map), sums_, n_);
    }
    s_.synchronize();
    return host_sum(sums_.data(), dot_blocks_);
  }
  /// The arrays back in host memory for the check (mapped arrays are there already).
  void to_host() {
    for (const auto* x : {&a_, &b_, &c_}) (void)unimem::prefetch(*x, unimem::location::host(), s_);
    s_.synchronize();
  }
  const double* a() const { return a_.data(); }
  const double* b() const { return b_.data(); }
  const double* c() const { return c_.data(); }

 private:
  unimem::managed_buffer<double> a_, b_, c_;
  unimem::pinned_buffer<double> sums_;
  const unimem::stream& s_;
  unimem::launch_config cfg_, dot_cfg_;
  std::size_t n_;
  unsigned dot_blocks_;
  bool mapped_;
};

// ---------------------------------------------------------------- timing and the check

/// Each kernel's times of one variant, and the last dot's result.
struct samples {
  std::vector<double> ms[kernel_count];
  double dot = 0.0;
};

/// One way of running the five kernels: its name and a call per kernel (dot returns its sum).
struct runner {
  const char* name;
  void (*kernel[kernel_count - 1])(void*);
  double (*dot)(void*);
  void* target;
};

template <class V, tagging T>
runner unimem_runner(const char* name, V& v) {
  return {name,
          {[](void* p) { static_cast<V*>(p)->template copy<T>(); },
           [](void* p) { static_cast<V*>(p)->template mul<T>(); },
           [](void* p) { static_cast<V*>(p)->template add<T>(); },
           [](void* p) { static_cast<V*>(p)->template triad<T>(); }},
          [](void* p) { return static_cast<V*>(p)->template dot<T>(); },
          &v};
}

runner raw_runner(raw_variant& v) {
  return {"raw",
          {[](void* p) { static_cast<raw_variant*>(p)->copy(); },
           [](void* p) { static_cast<raw_variant*>(p)->mul(); },
           [](void* p) { static_cast<raw_variant*>(p)->add(); },
           [](void* p) { static_cast<raw_variant*>(p)->triad(); }},
          [](void* p) { return static_cast<raw_variant*>(p)->dot(); },
          &v};
}

/// warmup_iterations untimed, then `iterations` timed iterations of the five kernels in
/// BabelStream's order; each kernel is run by every runner in turn (the order of the runners
/// rotates from one iteration to the next) and timed from before its launch until its stream
/// synchronisation returned (for dot: until the host has summed the partial sums). One result
/// per runner.
std::vector<samples> measure(std::vector<runner>& runners, int iterations) {
  std::vector<samples> r(runners.size());
  // Written before the loop: the loop allocates nothing and touches no new page (a page fault
  // would make every placement record of the process stop holding, placement_record.hpp).
  for (samples& x : r) {
    for (std::vector<double>& m : x.ms) m.assign(static_cast<std::size_t>(iterations), 0.0);
  }
  const std::size_t count = runners.size();
  for (int i = -warmup_iterations; i < iterations; ++i) {
    const std::size_t first = static_cast<std::size_t>(i + warmup_iterations) % count;
    for (int k = 0; k < kernel_count; ++k) {
      for (std::size_t j = 0; j < count; ++j) {
        const std::size_t v = (first + j) % count;
        runner& x = runners[v];
        const double t = unimem_bench::time_ms([&] {
          if (k == k_dot) {
            r[v].dot = x.dot(x.target);
          } else {
            x.kernel[k](x.target);
          }
        });
        if (i >= 0) r[v].ms[k][static_cast<std::size_t>(i)] = t;
      }
    }
  }
  return r;
}

/// The mean of |x[i] - gold| over the array, read on `threads` threads; each part writes its
/// own slot, 8 doubles apart (parallel_for's parts are `step` elements each).
struct error_args {
  error_args(const double* data, double g, std::size_t n, int threads)
      : x(data),
        gold(g),
        step(std::max<std::size_t>(1, (n + static_cast<std::size_t>(threads) - 1) /
                                          static_cast<std::size_t>(threads))),
        partial(8 * static_cast<std::size_t>(threads), 0.0) {}
  const double* x;
  double gold;
  std::size_t step;
  std::vector<double> partial;
};

double mean_abs_error(const double* x, double gold, std::size_t n, int threads) {
  threads = std::max(1, threads);
  error_args args(x, gold, n, threads);
  unimem_bench::parallel_for(threads, n, [](void* ctx, std::size_t lo, std::size_t hi) {
    auto* e = static_cast<error_args*>(ctx);
    double sum = 0.0;
    for (std::size_t i = lo; i < hi; ++i) sum += std::fabs(e->x[i] - e->gold);
    e->partial[8 * (lo / e->step)] = sum;
  }, &args);
  double total = 0.0;
  for (std::size_t p = 0; p < args.partial.size(); p += 8) total += args.partial[p];
  return total / static_cast<double>(n);
}

/// BabelStream's check: the gold values from the same kernels applied to scalars on the host
/// (`total` iterations, warm-up included), the mean absolute error of each array relative to its
/// gold value, and the dot's relative error, each within 1e-8; fail() otherwise.
template <class V>
void check(const V& v, double dot, std::size_t n, int total, const std::string& what,
           int threads) {
  double ga = start_a, gb = start_b, gc = start_c;
  for (int i = 0; i < total; ++i) {
    gc = ga;
    gb = start_scalar * gc;
    gc = ga + gb;
    ga = gb + start_scalar * gc;
  }
  const double gold_sum = ga * gb * static_cast<double>(n);
  constexpr double tolerance = 1e-8;
  const struct {
    const char* name;
    const double* x;
    double gold;
  } arrays[] = {{"a", v.a(), ga}, {"b", v.b(), gb}, {"c", v.c(), gc}};
  for (const auto& arr : arrays) {
    const double err = mean_abs_error(arr.x, arr.gold, n, threads) / std::fabs(arr.gold);
    if (!(err <= tolerance)) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    ": array %s, mean relative error %.3e (gold %.17g, %s[0] %.17g)",
                    arr.name, err, arr.gold, arr.name, arr.x[0]);
      unimem_bench::fail("stream " + what + buf);
    }
  }
  const double dot_err = std::fabs((dot - gold_sum) / gold_sum);
  if (!(dot_err <= tolerance)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, ": dot %.17g, gold %.17g, relative error %.3e", dot, gold_sum,
                  dot_err);
    unimem_bench::fail("stream " + what + buf);
  }
}

/// Adds one runner's rows at one size.
void add_rows(const samples& r, const char* name, const std::string& size) {
  for (int k = 0; k < kernel_count; ++k) {
    unimem_bench::add_row("stream", std::string(kernel_names[k]) + "-" + size, name, "time", "ms",
                          r.ms[k]);
  }
}

}  // namespace

namespace unimem_bench {

void stream_bench(const options& o) {
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const raw_stream_t rs = s.get();
  const unsigned dot_blocks = 4u * static_cast<unsigned>(unimem::device(0).multiprocessors());
  const int threads = cpu_threads(o);
  for (const std::size_t mib : o.stream_mib) {
    const std::size_t n = mib * (std::size_t{1} << 20) / sizeof(double);
    // The raw and the unimem arrays exist together: six arrays, with a quarter more as margin.
    const std::size_t need = 6 * n * sizeof(double);
    const std::size_t free_bytes = unimem::device(0).free_memory();
    if (free_bytes < need + need / 4) {
      std::printf("stream %zu MiB skipped: 6 arrays need %zu MiB with a 25%% margin, device 0 has "
                  "%zu MiB free\n",
                  mib, (need + need / 4) >> 20, free_bytes >> 20);
      continue;
    }
    // BabelStream runs 100 iterations; here 200 of the small size (each about 1 ms for the
    // three variants) and 40 of the large (about 25 ms each). Intent map reads over the bus:
    // fewer.
    const bool large = mib >= 1024;
    const int iterations = large ? 40 : 200;
    const int mapped_iterations = large ? 3 : 5;
    const std::string size = std::to_string(mib) + "MiB";
    {
      progress("[stream] " + size + " per array, raw, untagged and tagged in turn, " +
               std::to_string(iterations) + " iterations");
      raw_variant raw(n, dot_blocks, rs);
      unimem_variant um(n, dot_blocks, s, false);
      raw.init();
      um.init();
      std::vector<runner> runners = {raw_runner(raw),
                                     unimem_runner<unimem_variant, tagging::none>("untagged", um),
                                     unimem_runner<unimem_variant, tagging::move>("tagged", um)};
      const std::vector<samples> r = measure(runners, iterations);
      raw.to_host();
      um.to_host();
      const int total = warmup_iterations + iterations;
      check(raw, r[0].dot, n, total, "raw " + size, threads);
      check(um, r[1].dot, n, total, "untagged " + size, threads);
      check(um, r[2].dot, n, total, "tagged " + size, threads);
      progress_done();
      add_rows(r[0], "raw", size);
      add_rows(r[1], "untagged", size);
      add_rows(r[2], "tagged", size);
    }
    {
      progress("[stream] " + size + " per array, mapped, " + std::to_string(mapped_iterations) +
               " iterations");
      unimem_variant mapped(n, dot_blocks, s, true);
      mapped.init();
      std::vector<runner> runners = {unimem_runner<unimem_variant, tagging::map>("mapped", mapped)};
      const std::vector<samples> r = measure(runners, mapped_iterations);
      mapped.to_host();
      check(mapped, r[0].dot, n, warmup_iterations + mapped_iterations, "mapped " + size, threads);
      progress_done();
      add_rows(r[0], "mapped", size);
    }
  }
}

}  // namespace unimem_bench
