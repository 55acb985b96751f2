// windows (issue 51): a loop's walk through managed ranges larger than the GPU. Host tests (every
// toolchain, no GPU, under ASan/UBSan in the sanitize build): the schedule (which windows are
// placed, moved back or let go, on which stream, after which event), the default window size,
// the host link's estimate, and the walk itself over a fake runtime for every kind of range (a
// view, a sub-range, a container with a placement record as managed_buffer and pool_buffer have,
// one without as managed_vector): roles by tag and fit, the calls in order, restarts, backward
// passes, the last partial window, errors that name the loop's line. GPU tests (skip without a
// GPU): correct results at 1.5x the GPU's free memory (a device allocation, the ballast, leaves
// 1 GiB free), for every buffer kind and view, both directions, restarted.
// Nothing here is timed: the speed is unimem-bench's (--only oversubscribe).
#include "test_support.hpp"

#include <unimem/allocator.hpp>
#include <unimem/managed_pool.hpp>
#include <unimem/placement/window.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/stat.h>
#include <unistd.h>
#endif

__global__ void win_triad(float* a, const float* b, const float* c, float q, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) a[i] = b[i] + q * c[i];
}
__global__ void win_add_from(int* dst, const int* src, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] += src[i];
}
__global__ void win_add_one(unimem::view<int> v) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < v.size()) v[i] += 1;
}
// sum += p[0, n): a grid-stride loop, a block's share reduced in shared memory, one atomic a
// block (launched with win_sum_block threads).
constexpr unsigned win_sum_block = 256;
__global__ void win_sum(const float* p, std::size_t n, unsigned long long* sum) {
  __shared__ unsigned long long part[win_sum_block];
  unsigned long long s = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(blockDim.x) * gridDim.x) {
    s += static_cast<unsigned long long>(p[i]);
  }
  part[threadIdx.x] = s;
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    __syncthreads();
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
  }
  if (threadIdx.x == 0) atomicAdd(sum, part[0]);
}

namespace window_tests {  // named: the unity translation units join anonymous namespaces

namespace ud = unimem::detail;
using op = ud::window_op;
using kind = ud::window_op::kind;
using ev = ud::window_op::event;

// ---------------------------------------------------------------- the schedule

op place(std::size_t w, int s) { return {kind::place, w, s, ev::none}; }
op record(ev e, std::size_t w, int s) { return {kind::record, w, s, e}; }
op wait(ev e, std::size_t w, int s) { return {kind::wait, w, s, e}; }
op back(std::size_t w, int s) { return {kind::move_back, w, s, ev::none}; }
op release(std::size_t w) { return {kind::release, w, -1, ev::none}; }

std::string text(const op& o) {
  static const char* kinds[] = {"place", "move_back", "release", "record", "wait"};
  static const char* events[] = {"", "ready", "done", "evicted", "begun"};
  return std::string(kinds[int(o.what)]) + " " + events[int(o.ev)] + " w" +
         std::to_string(o.window) + " s" + std::to_string(o.stream);
}
std::string text(const std::vector<op>& ops) {
  std::string t;
  for (const op& o : ops) t += text(o) + "; ";
  return t;
}

TEST(WindowPlan, AWalkThatFitsPlacesEachWindowAheadOnAlternatingStreams) {
  ud::window_plan p({5, 2, 2, false, false});
  std::vector<op> ops;
  p.begin(false, ops);
  EXPECT_EQ(ops, (std::vector<op>{place(0, 1), record(ev::ready, 0, 1), place(1, 2),
                                  record(ev::ready, 1, 2)}))
      << text(ops);
  ops.clear();
  p.enter(0, ops);
  EXPECT_EQ(ops, (std::vector<op>{wait(ev::ready, 0, 0)})) << text(ops);
  ops.clear();
  p.leave(0, ops);  // nothing goes back: the window two further is placed
  EXPECT_EQ(ops, (std::vector<op>{place(2, 1), record(ev::ready, 2, 1)})) << text(ops);
  for (std::size_t o = 1; o < 5; ++o) {
    ops.clear();
    p.enter(o, ops);
    EXPECT_EQ(ops, (std::vector<op>{wait(ev::ready, o, 0)})) << text(ops);
    ops.clear();
    p.leave(o, ops);
    if (o + 2 < 5) {
      const int s = 1 + int((o + 2) % 2);
      EXPECT_EQ(ops, (std::vector<op>{place(o + 2, s), record(ev::ready, o + 2, s)})) << text(ops);
    } else {
      EXPECT_TRUE(ops.empty()) << "no host synchronisation, nothing to join: " << text(ops);
    }
  }
}

TEST(WindowPlan, AWalkThatEvictsMovesEachWindowBackAfterItsKernels) {
  ud::window_plan p({4, 2, 2, true, true});
  EXPECT_EQ(p.evict_stream(), 3);
  std::vector<op> ops;
  p.begin(false, ops);
  EXPECT_EQ(ops, (std::vector<op>{place(0, 1), record(ev::ready, 0, 1), place(1, 2),
                                  record(ev::ready, 1, 2)}));
  ops.clear();
  p.enter(0, ops);
  p.leave(0, ops);
  EXPECT_EQ(ops, (std::vector<op>{wait(ev::ready, 0, 0), record(ev::done, 0, 0),
                                  wait(ev::done, 0, 3), back(0, 3), record(ev::evicted, 0, 3),
                                  place(2, 1), record(ev::ready, 2, 1)}))
      << text(ops);
  ops.clear();
  p.enter(1, ops);
  p.leave(1, ops);  // window 3 waits until window 0 is off the GPU
  EXPECT_EQ(ops, (std::vector<op>{wait(ev::ready, 1, 0), record(ev::done, 1, 0),
                                  wait(ev::done, 1, 3), back(1, 3), record(ev::evicted, 1, 3),
                                  wait(ev::evicted, 0, 2), place(3, 2), record(ev::ready, 3, 2)}))
      << text(ops);
  ops.clear();
  p.enter(2, ops);
  p.leave(2, ops);
  EXPECT_EQ(ops, (std::vector<op>{wait(ev::ready, 2, 0), record(ev::done, 2, 0),
                                  wait(ev::done, 2, 3), back(2, 3), record(ev::evicted, 2, 3)}))
      << text(ops);
  ops.clear();
  p.enter(3, ops);
  p.leave(3, ops);  // the last: the walk's stream waits for the last move back
  EXPECT_EQ(ops, (std::vector<op>{wait(ev::ready, 3, 0), record(ev::done, 3, 0),
                                  wait(ev::done, 3, 3), back(3, 3), record(ev::evicted, 3, 3),
                                  wait(ev::evicted, 3, 0)}))
      << text(ops);
}

TEST(WindowPlan, ReadOnlyAndMappedRangesAreLetGoWithoutAMove) {
  ud::window_plan p({3, 1, 1, true, false});
  std::vector<op> ops;
  p.begin(false, ops);
  p.enter(0, ops);
  p.leave(0, ops);
  EXPECT_EQ(ops, (std::vector<op>{place(0, 1), record(ev::ready, 0, 1), wait(ev::ready, 0, 0),
                                  release(0), place(1, 1), record(ev::ready, 1, 1)}))
      << text(ops);
  EXPECT_FALSE(p.placed(0));
  EXPECT_TRUE(p.placed(1));
}

TEST(WindowPlan, ABackwardPassStartsAtTheLastWindow) {
  ud::window_plan p({3, 1, 2, true, true});
  std::vector<op> ops;
  p.begin(true, ops);
  EXPECT_EQ(p.window_at(0), 2u);
  EXPECT_EQ(p.window_at(2), 0u);
  EXPECT_EQ(ops, (std::vector<op>{place(2, 1), record(ev::ready, 2, 1)})) << text(ops);
  ops.clear();
  p.enter(0, ops);
  p.leave(0, ops);
  EXPECT_EQ(ops, (std::vector<op>{wait(ev::ready, 2, 0), record(ev::done, 2, 0),
                                  wait(ev::done, 2, 3), back(2, 3), record(ev::evicted, 2, 3),
                                  place(1, 2), record(ev::ready, 1, 2)}))
      << text(ops);
  ops.clear();
  p.enter(1, ops);
  p.leave(1, ops);
  EXPECT_EQ(ops, (std::vector<op>{wait(ev::ready, 1, 0), record(ev::done, 1, 0),
                                  wait(ev::done, 1, 3), back(1, 3), record(ev::evicted, 1, 3),
                                  wait(ev::evicted, 2, 1), place(0, 1), record(ev::ready, 0, 1)}))
      << text(ops);
}

TEST(WindowPlan, ARestartMovesBackWhatAPassLeftEarlyOnTheGpu) {
  ud::window_plan p({6, 2, 2, true, true});
  std::vector<op> ops;
  p.begin(false, ops);
  p.enter(0, ops);
  p.leave(0, ops);  // window 2 placed; windows 1 and 2 are on the GPU, never left
  ops.clear();
  p.begin(false, ops);  // a new pass: window 1 is among its first two, window 2 is not
  EXPECT_EQ(ops, (std::vector<op>{record(ev::begun, 0, 0), wait(ev::begun, 0, 3), back(2, 3),
                                  record(ev::evicted, 2, 3), wait(ev::evicted, 2, 1), place(0, 1),
                                  record(ev::ready, 0, 1), wait(ev::evicted, 2, 2), place(1, 2),
                                  record(ev::ready, 1, 2)}))
      << text(ops);
  ops.clear();
  p.begin(true, ops);  // backward: windows 0 and 1 are stale, 5 and 4 come first
  EXPECT_EQ(ops, (std::vector<op>{record(ev::begun, 0, 0), wait(ev::begun, 0, 3), back(1, 3),
                                  record(ev::evicted, 1, 3), back(0, 3), record(ev::evicted, 0, 3),
                                  wait(ev::evicted, 0, 1), place(5, 1), record(ev::ready, 5, 1),
                                  wait(ev::evicted, 0, 2), place(4, 2), record(ev::ready, 4, 2)}))
      << text(ops);
}

TEST(WindowPlan, DepthBeyondTheWindowsPlacesAllAtOnce) {
  ud::window_plan p({2, 8, 3, false, false});
  std::vector<op> ops;
  p.begin(false, ops);
  EXPECT_EQ(ops, (std::vector<op>{place(0, 1), record(ev::ready, 0, 1), place(1, 2),
                                  record(ev::ready, 1, 2)}));
  ud::window_plan none({0, 2, 2, true, true});
  ops.clear();
  none.begin(false, ops);
  EXPECT_TRUE(ops.empty());
}

// Every geometry, both directions, restarts: the properties the runtime relies on. Each wait is
// for an event recorded earlier (a wait for one never recorded would be a no-op: an ordering
// lost); a window's kernels run after its placement; a move back runs after its kernels; the
// budget: when a stream places a window, the windows that may still be on the GPU as far as
// that stream knows (placed and not let go, or moved back by a move it has not waited for) are
// at most depth + 1 with this one (the default window size leaves room for depth + 2); the
// walk's stream waits for the last move back; nothing waits on the host (there is no such op).
TEST(WindowPlan, EveryGeometryKeepsItsOrderAndItsBudget) {
  int checked = 0;
  for (std::size_t count = 1; count <= 9; ++count) {
    for (int depth = 1; depth <= 4; ++depth) {
      for (int streams = 1; streams <= 3; ++streams) {
        for (int mode = 0; mode < 3; ++mode) {
          const bool evicts = mode > 0, moves_back = mode == 2;
          ud::window_plan p({count, depth, streams, evicts, moves_back});
          std::set<std::size_t> on_gpu;                // placed, not let go or moved back
          std::map<std::size_t, std::size_t> leaving;  // moved back: window -> its move's number
          std::map<std::pair<int, std::size_t>, int> recorded;  // (event, window) -> stream
          std::map<std::pair<int, std::size_t>, std::size_t> evicted_at;  // -> move number
          std::map<int, std::size_t> known;  // per stream: the moves back it has waited for
          std::size_t moves = 0, last_move = 0;
          for (int pass = 0; pass < 4; ++pass) {
            const bool backward = pass % 2 == 1;
            const std::size_t stop = pass == 2 ? count / 2 : count;  // the third leaves early
            for (std::size_t w = 0; w < count; ++w) recorded.erase({int(ev::ready), w});
            std::set<std::size_t> placed, ready, done_kernels;
            auto run = [&](const std::vector<op>& v, const std::string& where) {
              for (const op& o : v) {
                const std::string at = where + ": " + text(o);
                switch (o.what) {
                  case kind::place: {
                    ASSERT_GE(o.stream, 1) << at;
                    ASSERT_LE(o.stream, streams) << at;
                    placed.insert(o.window);
                    on_gpu.insert(o.window);
                    leaving.erase(o.window);
                    std::size_t resident = on_gpu.size();
                    for (const auto& l : leaving) resident += l.second > known[o.stream];
                    if (evicts) {
                      ASSERT_LE(resident, std::size_t(depth) + 1)
                          << at << ": more windows on the GPU than the budget";
                    }
                    break;
                  }
                  case kind::move_back:
                    ASSERT_TRUE(recorded.count({int(ev::done), o.window}) ||
                                recorded.count({int(ev::begun), 0}))
                        << at << ": moved back before its kernels were done";
                    ASSERT_EQ(o.stream, p.evict_stream()) << at;
                    on_gpu.erase(o.window);
                    last_move = ++moves;
                    leaving[o.window] = last_move;
                    break;
                  case kind::release:
                    on_gpu.erase(o.window);
                    break;
                  case kind::record:
                    recorded[{int(o.ev), o.window}] = o.stream;
                    if (o.ev == ev::evicted) evicted_at[{int(o.ev), o.window}] = last_move;
                    break;
                  case kind::wait:
                    ASSERT_TRUE(recorded.count({int(o.ev), o.window}))
                        << at << ": a wait for an event never recorded";
                    ASSERT_NE((recorded[{int(o.ev), o.window}]), o.stream)
                        << at << ": a stream waiting for itself";
                    if (o.ev == ev::ready) ready.insert(o.window);
                    if (o.ev == ev::evicted) {
                      known[o.stream] =
                          std::max(known[o.stream], evicted_at[{int(o.ev), o.window}]);
                    }
                    break;
                }
              }
            };
            std::vector<op> ops;
            p.begin(backward, ops);
            run(ops, "begin");
            for (std::size_t o = 0; o < stop && !::testing::Test::HasFatalFailure(); ++o) {
              const std::size_t w = p.window_at(o);
              ops.clear();
              p.enter(o, ops);
              run(ops, "enter " + std::to_string(o));
              ASSERT_TRUE(placed.count(w) && ready.count(w))
                  << "window " << w << "'s kernels before its placement";
              done_kernels.insert(w);
              ops.clear();
              p.leave(o, ops);
              run(ops, "leave " + std::to_string(o));
              if (moves_back && o + 1 == count) {
                ASSERT_FALSE(ops.empty());
                EXPECT_EQ(ops.back(), wait(ev::evicted, w, 0)) << "the loop's end joins";
              }
            }
            if (::testing::Test::HasFatalFailure()) return;
            if (evicts && stop == count) EXPECT_TRUE(on_gpu.empty()) << "all let go";
            if (stop == count) EXPECT_EQ(done_kernels.size(), count);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 9 * 4 * 3 * 3 * 4);
}

// ---------------------------------------------------------------- sizes, the link, the budget

ud::window_slot slot(std::size_t element_size, ud::window_role role = ud::window_role::moved_back) {
  ud::window_slot s;
  s.element_size = element_size;
  s.role = role;
  return s;
}

TEST(WindowSize, TheDefaultIsAboutEightMillisecondsOfTheLinkInWholeGranules) {
  const std::size_t gib = std::size_t{1} << 30, mib = std::size_t{1} << 20;
  const std::vector<ud::window_slot> floats = {slot(4), slot(4, ud::window_role::duplicated),
                                               slot(4, ud::window_role::mapped)};
  // PCIe 5.0 x16, 63 GB/s: 504 MB of the two placed ranges, 252 MB each, cut to 2 MiB granules.
  const std::size_t n = ud::default_window_elements(floats, gib, 63.0e9, 14 * gib, 2);
  EXPECT_EQ(n * 4 % (2 * mib), 0u);
  EXPECT_LE(n * 8, std::size_t(504e6));
  EXPECT_GT(n * 8, std::size_t(504e6) - 2 * 2 * mib);
  // Memory bounds it: depth + 2 windows fit the usable memory.
  const std::size_t m = ud::default_window_elements(floats, gib, 63.0e9, 512 * mib, 2);
  EXPECT_LE(m * 8 * 4, 512 * mib);
  EXPECT_EQ(m * 4 % (2 * mib), 0u);
  // A slow or unknown link: at least 64 MiB of the placed ranges.
  EXPECT_EQ(ud::default_window_elements(floats, gib, 1e9, 14 * gib, 2) * 8, 64 * mib);
  // Not more than all of them.
  EXPECT_EQ(ud::default_window_elements(floats, 1000, 63e9, 14 * gib, 2), 1000u);
  // 12-byte elements: granules of 2 MiB / 4 elements (6 MiB of them).
  const std::vector<ud::window_slot> twelve = {slot(12)};
  const std::size_t t = ud::default_window_elements(twelve, gib, 63e9, 14 * gib, 2);
  EXPECT_EQ(t % (512 * 1024), 0u);
  EXPECT_EQ(t * 12 % (2 * mib), 0u);
  // Almost no memory: one granule (the driver evicts others' pages for it), never less.
  EXPECT_EQ(ud::default_window_elements(floats, gib, 63e9, 16 * mib, 2), 524288u);
  EXPECT_EQ(ud::default_window_elements(floats, gib, 63e9, 64, 2), 524288u);
  EXPECT_EQ(ud::default_window_elements(floats, gib, 63e9, 0, 2), 524288u);
  // An odd element size: granules of 2 Mi elements (6 MiB of 3-byte elements).
  const std::vector<ud::window_slot> three = {slot(3)};
  EXPECT_EQ(ud::default_window_elements(three, gib, 63e9, 14 * gib, 2) % (2 * mib), 0u);
  // One whose granule would be over 64 MiB: whole elements, at least 2 MiB of them.
  const std::vector<ud::window_slot> huge = {slot(std::size_t{96} << 10 | 1)};
  const std::size_t h = ud::default_window_elements(huge, gib, 63e9, 14 * gib, 2);
  EXPECT_EQ(h, std::size_t(504e6) / ((std::size_t{96} << 10) | 1));
  EXPECT_EQ(ud::default_window_elements(huge, gib, 63e9, 64, 2), 22u) << "2 MiB: 22 elements";
  // Every range mapped: windows only cut the kernels' work, by all element sizes.
  const std::vector<ud::window_slot> mapped = {slot(4, ud::window_role::mapped)};
  EXPECT_EQ(ud::default_window_elements(mapped, gib, 1e9, 14 * gib, 2), 16 * mib);
}

TEST(WindowLink, SpeedsAndWidthsGiveEachGenerationsBandwidth) {
  EXPECT_DOUBLE_EQ(ud::link::parse_speed("32.0 GT/s PCIe\n"), 32.0);
  EXPECT_DOUBLE_EQ(ud::link::parse_speed("8 GT/s\n"), 8.0);
  EXPECT_DOUBLE_EQ(ud::link::parse_speed("2.5 GT/s"), 2.5);
  EXPECT_DOUBLE_EQ(ud::link::parse_speed("Unknown"), 0.0);
  EXPECT_DOUBLE_EQ(ud::link::parse_speed(nullptr), 0.0);
  EXPECT_NEAR(ud::link::pcie_bytes_per_second(32.0, 16) / 1e9, 63.015, 0.001);  // PCIe 5.0 x16
  EXPECT_NEAR(ud::link::pcie_bytes_per_second(16.0, 16) / 1e9, 31.508, 0.001);  // 4.0
  EXPECT_NEAR(ud::link::pcie_bytes_per_second(2.5, 1) / 1e9, 0.25, 1e-9);       // 1.0, 8b/10b
  EXPECT_NEAR(ud::link::pcie_bytes_per_second(64.0, 16) / 1e9, 121.0, 0.001);   // 6.0, FLIT
  EXPECT_EQ(ud::link::pcie_bytes_per_second(0.0, 16), 0.0);
  EXPECT_EQ(ud::link::pcie_bytes_per_second(32.0, 0), 0.0);
}

#if defined(__linux__)
TEST(WindowLink, SysfsIsReadAndAnUnreadableOneGivesTheAssumedLink) {
  char root[] = "/tmp/unimem_link_XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  const std::string dir = std::string(root) + "/0000:65:00.0";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  std::ofstream(dir + "/max_link_speed") << "32.0 GT/s PCIe\n";
  std::ofstream(dir + "/max_link_width") << "16\n";
  const ud::link::estimate e = ud::link::read_sysfs(root, "0000:65:00.0");
  EXPECT_TRUE(e.read);
  EXPECT_EQ(e.lanes, 16);
  EXPECT_NEAR(e.bytes_per_second / 1e9, 63.015, 0.001);
  const ud::link::estimate missing = ud::link::read_sysfs(root, "0000:66:00.0");
  EXPECT_FALSE(missing.read);
  EXPECT_NEAR(missing.bytes_per_second / 1e9, 31.508, 0.001);
  std::ofstream(dir + "/max_link_width") << "banana\n";
  EXPECT_FALSE(ud::link::read_sysfs(root, "0000:65:00.0").read) << "a width of none";
  std::remove((dir + "/max_link_speed").c_str());
  std::remove((dir + "/max_link_width").c_str());
  rmdir(dir.c_str());
  rmdir(root);
}
#endif

TEST(WindowBudget, UsableIsFreeLessTheReserve) {
  const std::size_t gib = std::size_t{1} << 30;
  EXPECT_EQ(unimem::default_reserve(140 * gib), 140 * gib / 64);
  EXPECT_EQ(unimem::default_reserve(4 * gib), std::size_t{256} << 20);
  unimem::gpu_budget b;
  b.free_memory = 16 * gib;
  b.reserve = 2 * gib;
  EXPECT_EQ(b.usable(), 14 * gib);
  EXPECT_TRUE(b.fits(14 * gib));
  EXPECT_FALSE(b.fits(14 * gib + 1));
  EXPECT_TRUE(b.fits(20 * gib, 6 * gib)) << "what is on the GPU already counts";
  b.reserve = 20 * gib;
  EXPECT_EQ(b.usable(), 0u);
  b.largest_placed = 24 * gib;
  b.free_before_largest = 16 * gib;
  EXPECT_TRUE(b.largest_did_not_fit());
  b.free_before_largest = 30 * gib;
  EXPECT_FALSE(b.largest_did_not_fit());
}

// ---------------------------------------------------------------- the walk over a fake runtime

/// A host container with a placement record: what managed_buffer and pool_buffer give a walk.
template <class T>
struct recorded_buffer {
  using memory_kind = unimem::managed_memory;
  std::vector<T> data;
  mutable ud::placement_record record;
  explicit recorded_buffer(std::size_t n) : data(n) {}
  friend unimem::view<T> unimem_view(recorded_buffer& b) { return {b.data.data(), b.data.size()}; }
  friend unimem::view<const T> unimem_view(const recorded_buffer& b) {
    return {b.data.data(), b.data.size()};
  }
  friend ud::placement_record* unimem_detail_placement_record(const recorded_buffer& b) noexcept {
    return &b.record;
  }
};
/// A range the fake runtime never touches, at an address of its own (gigabytes without memory).
template <class T>
struct far_buffer {
  using memory_kind = unimem::managed_memory;
  T* base;
  std::size_t n;
  mutable ud::placement_record record;
  far_buffer(int k, std::size_t size)
      : base(reinterpret_cast<T*>(std::uintptr_t{0x100000000000} + (std::uintptr_t(k) << 40))),
        n(size) {}
  friend unimem::view<T> unimem_view(far_buffer& b) { return {b.base, b.n}; }
  friend ud::placement_record* unimem_detail_placement_record(const far_buffer& b) noexcept {
    return &b.record;
  }
};
/// The same without a record: what managed_vector and a user's container give.
template <class T>
struct plain_container {
  std::vector<T> data;
  explicit plain_container(std::size_t n) : data(n) {}
  friend unimem::view<T> unimem_view(plain_container& b) { return {b.data.data(), b.data.size()}; }
};

/// What the fake runtime is told and what it saw.
struct fake_world {
  std::size_t free = std::size_t{16} << 30;
  std::size_t total = std::size_t{140} << 30;
  double link = 63e9;
  unimem::hint_status placement = unimem::hint_status::applied;
  bool advice_refused = false;
  bool map_throws = false;
  int fail_at = 0;  // the n-th stream-ordered call throws (0: none)
  int calls = 0;
  std::set<const void*> mapped, read_mostly;
  std::vector<std::pair<const void*, std::string>> names;  // a range's first byte and name
  std::vector<std::string> log;

  std::string name(const void* p) const {
    for (const auto& n : names) {
      if (n.first == p) return n.second;
    }
    return "?";
  }
};
constexpr std::uintptr_t walk_handle = 0x100;
unimem::stream_ref fake_stream(std::uintptr_t h) {
  return unimem::stream_ref(reinterpret_cast<unimem::stream_ref::native_handle_type>(h));
}

/// The runtime table a walk needs, over a fake_world: ranges by name, windows by their first
/// element (of `unit`-byte elements), streams s0 (the walk's), s1... (its own), events by index.
class fake_runtime {
 public:
  explicit fake_runtime(fake_world* w) : w_(w) {}
  int device_of(unimem::stream_ref, unimem::call_site) { return 0; }
  unimem::hint_status placement(int, unimem::call_site) { return w_->placement; }
  unimem::gpu_budget budget(int d, std::size_t reserve, unimem::call_site) {
    unimem::gpu_budget b;
    b.device_id = d;
    b.total_memory = w_->total;
    b.free_memory = w_->free;
    b.reserve = reserve != 0 ? reserve : unimem::default_reserve(w_->total);
    w_->log.push_back("budget");
    return b;
  }
  double link_bytes_per_second(int) noexcept { return w_->link; }
  std::uint64_t now() noexcept { return 1; }
  bool is_device_memory(const void*) noexcept { return false; }
  bool is_mapped(const ud::placement_range& r, unimem::call_site) { return w_->mapped.count(r.ptr) != 0; }
  bool is_read_mostly(const ud::placement_range& r, unimem::call_site) {
    return w_->read_mostly.count(r.ptr) != 0;
  }
  bool read_mostly(const ud::placement_range& r, bool on, unimem::call_site) {
    w_->log.push_back(std::string(on ? "read_mostly " : "not read_mostly ") + w_->name(r.ptr));
    if (w_->advice_refused) return false;
    if (on) {
      w_->read_mostly.insert(r.ptr);
    } else {
      w_->read_mostly.erase(r.ptr);
    }
    return true;
  }
  bool map(const ud::placement_range& r, int, unimem::call_site) {
    w_->log.push_back("map " + w_->name(r.ptr));
    if (w_->map_throws) {
      throw unimem::runtime_error(ud::backend::error_invalid_value, "fakeMap()", "f", 1);
    }
    if (w_->advice_refused) return false;
    w_->mapped.insert(r.ptr);
    if (r.record != nullptr) r.record->set(ud::placement_stamp::make(0, true, 1));
    return true;
  }
  void unmap(const ud::placement_range& r, int, unimem::call_site) {
    w_->log.push_back("unmap " + w_->name(r.ptr));
    w_->mapped.erase(r.ptr);
    if (r.record != nullptr) r.record->forget();
  }
  void make(int, int streams, int events, unimem::call_site) {
    w_->log.push_back("make " + std::to_string(streams) + " streams " + std::to_string(events) +
                      " events");
  }
  unimem::stream_ref stream(int i) const noexcept { return fake_stream(walk_handle + 1 + i); }
  int event(int i) const noexcept { return i; }
  bool place(const ud::placement_range& r, int d, unimem::stream_ref s, unimem::call_site where) {
    tick(where);
    const std::uint64_t here = ud::placement_stamp::make(d, false, 1);
    if (r.record != nullptr && r.record->holds(here)) return false;  // as the placement path
    if (r.record != nullptr) r.record->set(here);
    w_->log.push_back("place " + range(r) + " " + stream_name(s));
    return true;
  }
  void move_to_host(const ud::placement_range& r, int, unimem::stream_ref s, unimem::call_site where) {
    tick(where);
    w_->log.push_back("back " + range(r) + " " + stream_name(s));
  }
  void record(int e, unimem::stream_ref s, unimem::call_site where) {
    tick(where);
    w_->log.push_back("record e" + std::to_string(e) + " " + stream_name(s));
  }
  void wait(unimem::stream_ref s, int e, unimem::call_site where) {
    tick(where);
    w_->log.push_back(stream_name(s) + " waits e" + std::to_string(e));
  }

 private:
  void tick(unimem::call_site where) {
    if (++w_->calls == w_->fail_at) {
      throw unimem::runtime_error(ud::backend::error_invalid_value, "fakeCall()", where.file,
                                  where.line);
    }
  }
  static std::string stream_name(unimem::stream_ref s) {
    return "s" + std::to_string(reinterpret_cast<std::uintptr_t>(s.get()) - walk_handle);
  }
  std::string range(const ud::placement_range& r) const {
    // The range a window belongs to: the last name at or before it.
    const void* base = nullptr;
    std::string n = "?";
    for (const auto& x : w_->names) {
      if (x.first <= r.ptr && (base == nullptr || x.first > base)) {
        base = x.first;
        n = x.second;
      }
    }
    const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(r.ptr) -
                                                    static_cast<const char*>(base));
    return n + "@" + std::to_string(at) + "+" + std::to_string(r.bytes);
  }
  fake_world* w_;
};
using fake_windows = unimem::basic_windows<fake_runtime>;

std::string joined(const std::vector<std::string>& v) {
  std::string t;
  for (const std::string& s : v) t += s + "\n";
  return t;
}

/// Walks every window of a pass (forward or backward); returns the windows' (index, offset,
/// size) in order.
std::vector<std::vector<std::size_t>> walk_all(fake_windows& w, bool backward = false) {
  std::vector<std::vector<std::size_t>> seen;
  if (backward) {
    for (const unimem::window& x : w.backward()) seen.push_back({x.index(), x.offset(), x.size()});
  } else {
    for (const unimem::window& x : w) seen.push_back({x.index(), x.offset(), x.size()});
  }
  return seen;
}

TEST(WindowWalk, AWorkingSetThatFitsIsOneWindowPlacedOnceThenNothing) {
  fake_world world;
  recorded_buffer<float> a(1000), b(1000);
  world.names = {{a.data.data(), "a"}, {b.data.data(), "b"}};
  {
    fake_windows w(fake_runtime(&world), fake_stream(walk_handle), unimem::window_options(),
                   unimem::in(a), unimem::out(b));
    EXPECT_FALSE(w.evicts());
    EXPECT_EQ(w.size(), 1u);
    EXPECT_EQ(w.window_elements(), 1000u);
    world.log.clear();
    EXPECT_EQ(walk_all(w), (std::vector<std::vector<std::size_t>>{{0, 0, 1000}}));
    EXPECT_EQ(joined(world.log), "place a@0+4000 s1\nplace b@0+4000 s1\nrecord e0 s1\ns0 waits e0\n");
    // The buffers' own records hold now: a tag over them moves nothing either.
    EXPECT_TRUE(a.record.holds(ud::placement_stamp::make(0, false, 1)));
    world.log.clear();
    EXPECT_EQ(walk_all(w).size(), 1u);
    EXPECT_EQ(joined(world.log), "") << "the steady state makes no runtime call";
    world.log.clear();
  }
  EXPECT_EQ(joined(world.log), "record e12 s1\ns0 waits e12\nrecord e12 s2\ns0 waits e12\n")
      << "the end orders the walk's streams before its stream; no advice to withdraw";
}

TEST(WindowWalk, WindowsOfAWalkThatFitsStayPlacedAcrossPasses) {
  fake_world world;
  std::vector<double> x(10);
  recorded_buffer<double> y(10);
  world.names = {{x.data(), "x"}, {y.data.data(), "y"}};
  unimem::window_options o;
  o.window_elements = 4;
  fake_windows w(fake_runtime(&world), fake_stream(walk_handle), o,
                 unimem::in(unimem::view<double>(x.data(), x.size())), unimem::inout(y));
  EXPECT_EQ(w.size(), 3u);
  world.log.clear();
  // The last window is partial: its true size.
  EXPECT_EQ(walk_all(w), (std::vector<std::vector<std::size_t>>{{0, 0, 4}, {1, 4, 4}, {2, 8, 2}}));
  EXPECT_EQ(joined(world.log),
            "place x@0+32 s1\nplace y@0+32 s1\nrecord e0 s1\n"
            "place x@32+32 s2\nplace y@32+32 s2\nrecord e1 s2\n"
            "s0 waits e0\n"
            "place x@64+16 s1\nplace y@64+16 s1\nrecord e2 s1\n"
            "s0 waits e1\ns0 waits e2\n");
  EXPECT_TRUE(y.record.holds(ud::placement_stamp::make(0, false, 1)))
      << "every window of y placed: y's own record says so";
  world.log.clear();
  EXPECT_EQ(walk_all(w, true), (std::vector<std::vector<std::size_t>>{{2, 8, 2}, {1, 4, 4}, {0, 0, 4}}));
  EXPECT_EQ(joined(world.log), "") << "placed windows are not placed again";
}

TEST(WindowWalk, AWorkingSetThatDoesNotFitStreamsByTag) {
  fake_world world;
  world.free = std::size_t{3} << 30;  // 3 GiB free less a 2.2 GiB reserve: 0.8 GiB usable
  const std::size_t n = std::size_t{256} << 20;  // 1 GiB of floats per range
  far_buffer<float> a(0, n), b(1, n), c(2, n);
  const unimem::view<float> d(far_buffer<float>(3, n).base, n);  // a view: no record
  world.names = {{a.base, "a"}, {b.base, "b"}, {c.base, "c"}, {d.data(), "d"}};
  a.record.set(ud::placement_stamp::make(0, false, 1));  // a whole buffer placed before
  {
    fake_windows w(fake_runtime(&world), fake_stream(walk_handle), unimem::window_options(),
                   unimem::in(b), unimem::out(a), unimem::inout(c), unimem::out(d, unimem::intent::move));
    EXPECT_TRUE(w.evicts());
    EXPECT_TRUE(w.maps(a)) << "out(a): written straight to host memory";
    EXPECT_FALSE(w.maps(b));
    EXPECT_FALSE(a.record.holds(ud::placement_stamp::make(0, false, 1))) << "a is mapped now";
    // Three placed ranges (b duplicated, c and d moved back), 12 bytes an element: 4 windows in
    // the usable 0.8 GiB, 2 MiB granules of each range.
    const std::size_t per = w.window_elements();
    EXPECT_EQ(per * 4 % (std::size_t{2} << 20), 0u);
    // a's gigabyte on the GPU is the walk's to move: 4 GiB "free" less the reserve.
    EXPECT_LE(per * 12 * 4, (std::size_t{4} << 30) - unimem::default_reserve(world.total));
    EXPECT_EQ(w.size(), (n + per - 1) / per);
    EXPECT_EQ(joined(std::vector<std::string>(world.log.begin(), world.log.begin() + 4)),
              "budget\nmake 3 streams 13 events\nread_mostly b\nmap a\n")
        << "streams and events made before any advice is given";
    world.log.clear();
    std::size_t windows = 0;
    for (const unimem::window& x : w) {
      if (windows == 0) {
        const std::string first = joined(world.log);
        EXPECT_NE(first.find("place b@0+"), std::string::npos) << first;
        EXPECT_EQ(first.find("place a@"), std::string::npos) << "a mapped: never placed";
        EXPECT_NE(first.find("s0 waits e0"), std::string::npos) << first;
      }
      // Tags over the window's ranges carry its record: b's holds, so a tag moves nothing.
      const auto tb = unimem::in(x(b));
      ASSERT_NE(tb.record, nullptr);
      EXPECT_TRUE(tb.record->holds(ud::placement_stamp::make(0, false, 1)));
      const auto ta = unimem::out(x(a));
      EXPECT_TRUE(ta.record->holds(ud::placement_stamp::make(0, true, 1))) << "mapped, as a";
      ++windows;
    }
    EXPECT_EQ(windows, w.size());
    const std::string log = joined(world.log);
    // c and d go back, b and a never do; the end waits for the last move back.
    EXPECT_NE(log.find("back c@0+"), std::string::npos) << log;
    EXPECT_NE(log.find("back d@0+"), std::string::npos) << log;
    EXPECT_EQ(log.find("back b@"), std::string::npos) << log;
    EXPECT_EQ(log.find("back a@"), std::string::npos) << log;
    EXPECT_EQ(world.log.back(), "s0 waits e" + std::to_string(2 * 4 + (w.size() - 1) % 4));
    world.log.clear();
  }
  EXPECT_EQ(joined(world.log),
            "record e12 s1\ns0 waits e12\nrecord e12 s2\ns0 waits e12\nrecord e12 s3\n"
            "s0 waits e12\nnot read_mostly b\nunmap a\n")
      << "the walk's advice withdrawn at its end";
  EXPECT_TRUE(world.mapped.empty());
  EXPECT_TRUE(world.read_mostly.empty());
}

TEST(WindowWalk, MemoryThatTakesNoAdviceIsMovedBackInstead) {
  fake_world world;
  world.advice_refused = true;
  std::vector<int> a(100), b(100);
  world.names = {{a.data(), "a"}, {b.data(), "b"}};
  unimem::window_options o;
  o.eviction = unimem::window_eviction::always;
  o.window_elements = 50;
  o.depth = 1;
  o.transfer_streams = 1;
  fake_windows w(fake_runtime(&world), fake_stream(walk_handle), o,
                 unimem::in(unimem::view<int>(a.data(), 100)),
                 unimem::out(unimem::view<int>(b.data(), 100)));
  EXPECT_FALSE(w.maps(unimem::view<int>(b.data(), 100)));
  world.log.clear();
  EXPECT_EQ(walk_all(w).size(), 2u);
  EXPECT_EQ(joined(world.log),
            "place a@0+200 s1\nplace b@0+200 s1\nrecord e0 s1\ns0 waits e0\n"
            "record e3 s0\ns2 waits e3\nback a@0+200 s2\nback b@0+200 s2\nrecord e6 s2\n"
            "place a@200+200 s1\nplace b@200+200 s1\nrecord e1 s1\n"
            "s0 waits e1\nrecord e4 s0\ns2 waits e4\nback a@200+200 s2\nback b@200+200 s2\n"
            "record e7 s2\ns0 waits e7\n");
}

TEST(WindowWalk, AWalkWhoseMakingFailsLeavesNoAdviceBehind) {
  fake_world world;
  world.map_throws = true;
  std::vector<int> a(100), b(100);
  world.names = {{a.data(), "a"}, {b.data(), "b"}};
  unimem::window_options o;
  o.eviction = unimem::window_eviction::always;
  EXPECT_THROW(fake_windows(fake_runtime(&world), fake_stream(walk_handle), o,
                            unimem::in(unimem::view<int>(a.data(), 100)),
                            unimem::out(unimem::view<int>(b.data(), 100))),
               unimem::error);
  EXPECT_EQ(joined(world.log),
            "budget\nmake 3 streams 13 events\nread_mostly a\nmap b\nnot read_mostly a\n");
  EXPECT_TRUE(world.read_mostly.empty());
}

TEST(WindowWalk, ARangeMappedBeforeStaysMappedAndNothingMoves) {
  fake_world world;
  std::vector<float> a(64);
  world.names = {{a.data(), "a"}};
  world.mapped.insert(a.data());
  unimem::window_options o;
  o.window_elements = 16;
  fake_windows w(fake_runtime(&world), fake_stream(walk_handle), o,
                 unimem::inout(unimem::view<float>(a.data(), a.size())));
  world.log.clear();
  EXPECT_EQ(walk_all(w).size(), 4u);
  EXPECT_EQ(joined(world.log), "") << "intent map followed: the GPU works over the bus";
}

TEST(WindowWalk, RefusedArgumentsAndRangesNotOfTheWalk) {
  fake_world world;
  std::vector<float> a(10), b(11), c(10);
  const unimem::view<float> va(a.data(), 10), vb(b.data(), 11), vc(c.data(), 10);
  auto make = [&](auto&&... tags) {
    return fake_windows(fake_runtime(&world), fake_stream(walk_handle), unimem::window_options(),
                        tags...);
  };
  EXPECT_THROW(make(unimem::in(va), unimem::out(vb)), unimem::invalid_argument) << "lengths";
  EXPECT_THROW(make(unimem::in(va), unimem::out(va.subview(5, 5).subview(0, 5))),
               unimem::invalid_argument)
      << "lengths";
  EXPECT_THROW(make(unimem::in(va), unimem::out(va)), unimem::invalid_argument) << "overlap";
  unimem::window_options bad;
  bad.depth = 0;
  EXPECT_THROW(fake_windows(fake_runtime(&world), fake_stream(walk_handle), bad, unimem::in(va)),
               unimem::invalid_argument);
  bad.depth = 2;
  bad.transfer_streams = 17;
  EXPECT_THROW(fake_windows(fake_runtime(&world), fake_stream(walk_handle), bad, unimem::in(va)),
               unimem::invalid_argument);
  fake_windows w = make(unimem::in(va), unimem::inout(vc));
  for (const unimem::window& x : w) {
    EXPECT_THROW((void)x(vb), unimem::invalid_argument);
    EXPECT_THROW((void)x(unimem::view<float>(a.data(), 5)), unimem::invalid_argument)
        << "a part of a range is not the range";
    EXPECT_EQ(x(va).data(), a.data());
  }
  fake_windows moved(std::move(w));
  EXPECT_THROW((void)w.begin(), unimem::invalid_argument) << "a moved-from walk";
  EXPECT_EQ(walk_all(moved).size(), 1u);
  // No elements: no windows, no runtime call.
  world.log.clear();
  fake_windows empty = make(unimem::in(unimem::view<float>(a.data(), 0)));
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.status(), unimem::hint_status::empty);
  EXPECT_TRUE(walk_all(empty).empty());
  EXPECT_TRUE(world.log.empty()) << joined(world.log);
}

TEST(WindowWalk, SubRangesAndEveryKindOfRangeAreWalked) {
  fake_world world;
  world.free = std::size_t{3} << 30;
  recorded_buffer<int> buf(4000);  // as managed_buffer and pool_buffer: a record
  plain_container<int> vec(1000);  // as managed_vector: none
  std::vector<int> raw(1000);
  world.names = {{buf.data.data(), "buf"}, {vec.data.data(), "vec"}, {raw.data(), "raw"}};
  const unimem::view<int> part = unimem::to_view(buf).subview(1000, 1000);
  unimem::window_options o;
  o.eviction = unimem::window_eviction::always;
  o.window_elements = 300;
  fake_windows w(fake_runtime(&world), fake_stream(walk_handle), o, unimem::inout(part),
                 unimem::in(vec), unimem::out(unimem::view<int>(raw.data(), raw.size()), unimem::intent::move));
  EXPECT_EQ(w.size(), 4u);
  std::size_t total = 0;
  for (const unimem::window& x : w) {
    EXPECT_EQ(x(part).data(), buf.data.data() + 1000 + x.offset());
    EXPECT_EQ(x(vec).size(), x.size());
    total += x.size();
  }
  EXPECT_EQ(total, 1000u);
  const std::string log = joined(world.log);
  EXPECT_NE(log.find("place buf@4000+1200 s1"), std::string::npos) << "a sub-range's window: " << log;
  EXPECT_NE(log.find("back buf@7600+400 s3"), std::string::npos) << "its last, partial: " << log;
  EXPECT_EQ(log.find("back vec@"), std::string::npos) << "read-only: let go, not moved: " << log;
  EXPECT_NE(log.find("back raw@0+1200 s3"), std::string::npos) << log;
}

TEST(WindowWalk, ARestartAfterLeavingEarlyMovesBackWhatWasLeft) {
  fake_world world;
  std::vector<int> a(1000);
  world.names = {{a.data(), "a"}};
  unimem::window_options o;
  o.eviction = unimem::window_eviction::always;
  o.window_elements = 100;
  fake_windows w(fake_runtime(&world), fake_stream(walk_handle), o,
                 unimem::inout(unimem::view<int>(a.data(), a.size())));
  auto it = w.begin();
  ++it;  // window 0 left: window 2 placed; windows 1 and 2 are on the GPU
  world.log.clear();
  auto again = w.begin();
  EXPECT_EQ(joined(world.log),
            "record e12 s0\ns3 waits e12\nback a@800+400 s3\nrecord e10 s3\n"
            "s1 waits e10\nplace a@0+400 s1\nrecord e0 s1\ns2 waits e10\n")
      << "window 2 moved back, window 0 (moved back before) placed, window 1 still there";
  EXPECT_THROW(++it, unimem::invalid_argument) << "an iterator of the pass that ended";
  (void)*again;
}

TEST(WindowWalk, AFailedCallEndsThePassAndNamesTheLineOfTheLoop) {
  for (int fail = 1; fail <= 12; ++fail) {
    fake_world world;
    std::vector<int> a(1000);
    world.names = {{a.data(), "a"}};
    unimem::window_options o;
    o.eviction = unimem::window_eviction::always;
    o.window_elements = 250;
    fake_windows w(fake_runtime(&world), fake_stream(walk_handle), o,
                   unimem::inout(unimem::view<int>(a.data(), a.size())));
    world.fail_at = fail;
    int line = 0, seen = 0;
    try {
      line = __LINE__ + 1;
      for (const unimem::window& x : w) seen += x.size() != 0;
      ADD_FAILURE() << "call " << fail << " failed without an error";
    } catch (const unimem::error& e) {
      EXPECT_EQ(e.line(), line) << "call " << fail << ": " << e.what();
    }
    EXPECT_LT(seen, 4);
    world.fail_at = 0;  // the walk goes on: a new pass works
    EXPECT_EQ(walk_all(w).size(), 4u) << "after call " << fail << " failed";
  }
}

TEST(WindowWalk, ADeviceThatCannotMigrateGetsItsWindowsAndNoCall) {
  for (const auto status : {unimem::hint_status::unsupported, unimem::hint_status::not_needed}) {
    fake_world world;
    world.placement = status;
    std::vector<int> a(100);
    unimem::window_options o;
    o.window_elements = 30;
    world.log.clear();
    fake_windows w(fake_runtime(&world), fake_stream(walk_handle), o,
                   unimem::inout(unimem::view<int>(a.data(), a.size())));
    EXPECT_EQ(w.status(), status);
    EXPECT_EQ(walk_all(w, true).size(), 4u);
    EXPECT_TRUE(world.log.empty()) << joined(world.log);
  }
}

// ---------------------------------------------------------------- on a GPU

/// A device allocation that leaves about `leave` bytes of device 0 free (none where less is
/// free already).
struct ballast {
  explicit ballast(std::size_t leave) {
    const std::size_t free = unimem::device(0).free_memory();
    if (free > leave) hold = unimem::device_buffer<char>(free - leave, unimem::uninitialized);
  }
  unimem::device_buffer<char> hold;
};

// The triad and a sum over arrays 1.5x the GPU's free memory (a ballast leaves 1 GiB), forward
// and backward, twice (a restarted walk): results exact, the walk evicting.
TEST(WindowGpu, OversubscribedTriadAndSumAreExact) {
  UNIMEM_REQUIRE_GPU();
  if (!unimem::device(0).migrates_on_demand()) GTEST_SKIP() << "device 0 does not migrate pages";
  ballast b(std::size_t{1} << 30);
  unimem::window_options o;
  o.reserve_bytes = std::size_t{256} << 20;  // of the 1 GiB left, 768 MiB for the windows
  const unimem::gpu_budget budget = unimem::gpu_budget_of(0, o.reserve_bytes);
  const std::size_t n = budget.free_memory * 3 / 2 / 3 / sizeof(float);  // three arrays: 1.5x
  unimem::managed_buffer<float> a(n, unimem::uninitialized), x(n, unimem::uninitialized),
      y(n, unimem::uninitialized);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1024);
    y[i] = static_cast<float>(i % 7);
  }
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  unimem::windows walk(s, o, unimem::in(x), unimem::in(y), unimem::out(a));
  ASSERT_TRUE(walk.evicts()) << n * 12 << " bytes against " << budget.free_memory << " free";
  EXPECT_GT(walk.size(), 3u);
  for (int pass = 0; pass < 2; ++pass) {
    const float q = pass == 0 ? 2.0f : 3.0f;
    auto body = [&](const unimem::window& w) {
      unimem::launch(win_triad, unimem::grid_for(w.size()).on(s), unimem::out(w(a)), w(x), w(y),
                     q, w.size());
    };
    if (pass == 0) {
      for (const unimem::window& w : walk) body(w);
    } else {
      for (const unimem::window& w : walk.backward()) body(w);
    }
    s.synchronize();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      wrong += a[i] != static_cast<float>(i % 1024) + q * static_cast<float>(i % 7);
    }
    EXPECT_EQ(wrong, 0u) << "pass " << pass;
  }
  unimem::managed_buffer<unsigned long long> sum(1, 0ull);
  {
    unimem::windows reader(s, o, unimem::in(x));
    const unimem::launch_config cfg(unimem::dims(1024), unimem::dims(win_sum_block), 0, s);
    for (const unimem::window& w : reader) {
      unimem::launch(win_sum, cfg, w(x), w.size(), sum.data());
    }
    s.synchronize();
  }
  unsigned long long want = 0;
  for (std::size_t i = 0; i < n; ++i) want += i % 1024;
  EXPECT_EQ(sum[0], want);
  // What report() says of it: the working set was larger than what fits.
  const unimem::gpu_budget after = unimem::gpu_budget_of(0);
  EXPECT_GE(after.largest_placed, 3 * n * sizeof(float));
  const std::string r = unimem::report();
  if (after.largest_placed == 3 * n * sizeof(float)) {  // the walk's, not an earlier test's
    EXPECT_TRUE(after.largest_did_not_fit());
    EXPECT_NE(r.find("larger than what fits"), std::string::npos) << r;
  } else {
    EXPECT_NE(r.find("the largest range or working set unimem placed here"), std::string::npos)
        << r;
  }
}

// The ledger counts what unimem moves: a prefetch to the GPU, and back with ready_for_host.
TEST(WindowGpu, TheLedgerCountsWhatUnimemMoved) {
  UNIMEM_REQUIRE_GPU();
  if (!unimem::device(0).migrates_on_demand()) GTEST_SKIP() << "device 0 does not migrate pages";
  const std::size_t n = (std::size_t{64} << 20) / sizeof(int);
  unimem::managed_buffer<int> a(n, 1);
  unimem::stream s(unimem::device(0));
  const unimem::gpu_budget before = unimem::gpu_budget_of(0);
  ASSERT_EQ(unimem::prefetch(a, unimem::location::device(0), s), unimem::hint_status::applied);
  s.synchronize();
  const unimem::gpu_budget placed = unimem::gpu_budget_of(0);
  EXPECT_GE(placed.moved_to_gpu - before.moved_to_gpu, n * sizeof(int));
  (void)unimem::ready_for_host(a, s);
  const unimem::gpu_budget back = unimem::gpu_budget_of(0);
  EXPECT_GE(back.moved_to_host - placed.moved_to_host, n * sizeof(int));
  EXPECT_GT(back.free_memory, 0u);
  EXPECT_EQ(back.reserve, unimem::default_reserve(back.total_memory));
  EXPECT_EQ(back.usable(), back.free_memory > back.reserve ? back.free_memory - back.reserve : 0);
  const unimem::host_link l = unimem::host_link_of(0);
  EXPECT_GT(l.bytes_per_second, 0.0);
  EXPECT_GT(l.lanes, 0);
}

// Every kind of range a walk takes, evicting in small windows: managed_buffer, pool_buffer (one
// read and written, one read only: read-mostly advice, or moved back where the runtime's pool
// takes no advice), managed_vector, a sub-range view; forward, backward, restarted after leaving
// early; every element exactly once per pass.
TEST(WindowGpu, EveryBufferKindAndViewIsWalked) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = (std::size_t{8} << 20) + 123;  // 32 MiB of int and a partial window
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  unimem::managed_pool pool;
  unimem::managed_buffer<int> m(n, 0);
  unimem::pool_buffer<int> p(n, pool, s), q(n, pool, s);
  unimem::managed_vector<int> v(n, 0);
  unimem::managed_buffer<int> big(3 * n, 0);
  const unimem::view<int> part = big.view().subview(n, n);
  unimem::fill_async(p, 0, s);
  unimem::fill_async(q, 1, s);
  unimem::window_options o;
  o.eviction = unimem::window_eviction::always;
  o.window_elements = std::size_t{1} << 20;
  unimem::windows walk(s, o, unimem::inout(m), unimem::inout(p), unimem::inout(v),
                       unimem::inout(part), unimem::in(q));
  EXPECT_EQ(walk.size(), 9u);
  auto body = [&](const unimem::window& w) {
    const auto cfg = unimem::grid_for(w.size()).on(s);
    unimem::launch(win_add_from, cfg, unimem::inout(w(m)), unimem::in(w(q)), w.size());
    unimem::launch(win_add_one, cfg, w(p));
    unimem::launch(win_add_one, cfg, unimem::inout(w(v)));
    unimem::launch(win_add_one, cfg, w(part));
  };
  for (const unimem::window& w : walk) body(w);
  for (const unimem::window& w : walk.backward()) {  // left after its first window's placement
    (void)w;
    break;
  }
  for (const unimem::window& w : walk) body(w);  // restarted: what was left goes back first
  for (const unimem::window& w : walk.backward()) body(w);
  s.synchronize();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    wrong += m[i] != 3;
    wrong += p[i] != 3;
    wrong += v[i] != 3;
    wrong += big[n + i] != 3;
    wrong += big[i] != 0;
    wrong += big[2 * n + i] != 0;
    wrong += q[i] != 1;
  }
  EXPECT_EQ(wrong, 0u);
}

// A working set that fits is one window, and a tag over the buffer after the walk moves nothing
// it placed (its record holds).
TEST(WindowGpu, AWalkThatFitsLeavesTheBuffersPlaced) {
  UNIMEM_REQUIRE_GPU();
  if (!unimem::device(0).migrates_on_demand()) GTEST_SKIP() << "device 0 does not migrate pages";
  const std::size_t n = std::size_t{1} << 20;
  unimem::managed_buffer<int> a(n, 1);
  unimem::stream s;
  {
    unimem::windows walk(s, unimem::inout(a));
    EXPECT_FALSE(walk.evicts());
    EXPECT_EQ(walk.size(), 1u);
  }
  // The form of docs/porting.md: a walk made for one loop.
  for (const unimem::window& w : unimem::windows(s, unimem::inout(a))) {
    unimem::launch(win_add_one, unimem::grid_for(w.size()).on(s), w(a));
  }
  s.synchronize();
  EXPECT_EQ(ud::placement_stamp::device_of(unimem_detail_placement_record(a)->stamp()),
            s.device_id());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += a[i] != 2;
  EXPECT_EQ(wrong, 0u);
}

}  // namespace window_tests
