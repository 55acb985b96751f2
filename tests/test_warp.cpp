// Warp intrinsics against a CPU reference for every lane (partial masks included), and warp and
// block reductions for sizes that are not multiples of the warp or the block.
#include "test_support.hpp"

#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace uw = unimem::warp;

// One result slot per (check, lane); -1 where a lane does not take part.
enum check : int {
  c_warp_size,
  c_shfl,
  c_shfl_w8,
  c_up,
  c_down,
  c_down_w16,
  c_xor1,
  c_xor2,
  c_xor4,
  c_xor8,
  c_xor16,
  c_xor_half,
  c_ballot,
  c_any,
  c_any_none,
  c_all,
  c_all_not,
  c_struct,
  c_double,
  c_low_shfl,
  c_low_ballot,
  c_low_all,
  c_low_any,
  c_even_shfl,
  c_even_ballot,
  c_even_all,
  c_even_any,
  c_checks
};

struct odd_struct {
  double a;
  int b;
  short c;
};

__global__ void warp_intrinsics(long long* out) {
  const int lane = uw::lane_id();
  const int w = uw::size();
  auto put = [&](int c, long long v) { out[c * w + lane] = v; };
  put(c_warp_size, w);
  put(c_shfl, uw::shfl(lane * 10, (lane + 3) % w));
  put(c_shfl_w8, uw::shfl(lane, 2, 8));
  put(c_up, uw::shfl_up(lane, 3u));
  put(c_down, uw::shfl_down(lane, 5u));
  put(c_down_w16, uw::shfl_down(lane, 3u, 16));
  put(c_xor1, uw::shfl_xor(lane, 1));
  put(c_xor2, uw::shfl_xor(lane, 2));
  put(c_xor4, uw::shfl_xor(lane, 4));
  put(c_xor8, uw::shfl_xor(lane, 8));
  put(c_xor16, uw::shfl_xor(lane, 16));
  put(c_xor_half, uw::shfl_xor(lane, w / 2));
  put(c_ballot, static_cast<long long>(uw::ballot(lane % 3 == 0)));
  put(c_any, uw::any(lane == 5));
  put(c_any_none, uw::any(false));
  put(c_all, uw::all(lane < w));
  put(c_all_not, uw::all(lane != 7));
  const odd_struct s{lane + 0.5, lane * 3, static_cast<short>(-lane)};
  const odd_struct got = uw::shfl(s, (lane + 1) % w);
  put(c_struct, (got.a == ((lane + 1) % w) + 0.5 && got.b == ((lane + 1) % w) * 3 &&
                 got.c == -((lane + 1) % w))
                    ? 1
                    : 0);
  put(c_double, static_cast<long long>(uw::shfl(lane * 1.25, w - 1 - lane) * 4));

  // Partial masks: the low half of the warp.
  const uw::lane_mask_t low = uw::first_lanes(w / 2);
  if (lane < w / 2) {
    put(c_low_shfl, uw::shfl(lane * 2, (lane + 1) % (w / 2), w, low));
    put(c_low_ballot, static_cast<long long>(uw::ballot(lane % 2 == 0, low)));
    put(c_low_all, uw::all(lane < w / 2, low));
    put(c_low_any, uw::any(lane == w / 2 - 1, low));
  } else {
    put(c_low_shfl, -1);
    put(c_low_ballot, -1);
    put(c_low_all, -1);
    put(c_low_any, -1);
  }
  // The even lanes.
  uw::lane_mask_t even = 0;
  for (int i = 0; i < w; i += 2) even |= uw::lane_mask_t{1} << i;
  if (lane % 2 == 0) {
    put(c_even_shfl, uw::shfl(lane, (lane + 2) % w, w, even));
    put(c_even_ballot, static_cast<long long>(uw::ballot(lane % 4 == 0, even)));
    put(c_even_all, uw::all(lane % 2 == 0, even));
    put(c_even_any, uw::any(lane == 6, even));
  } else {
    put(c_even_shfl, -1);
    put(c_even_ballot, -1);
    put(c_even_all, -1);
    put(c_even_any, -1);
  }
}

// Warp and block reductions of `in` (n values) in blocks of whatever shape the launch has.
__global__ void warp_reductions(const int* in, std::size_t n, long long* warp_sums,
                                long long* block_sums, int* block_max, float* block_fsum) {
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const std::size_t i = blockIdx.x * std::size_t(threads) + linear;
  const int v = i < n ? in[i] : 0;
  const long long ws = uw::reduce(static_cast<long long>(v));
  if (uw::lane_id() == 0) {
    const unsigned w = static_cast<unsigned>(uw::size());
    warp_sums[blockIdx.x * ((threads + w - 1) / w) + linear / w] = ws;
  }
  const long long bs = unimem::block::reduce(static_cast<long long>(v));
  const int bm = unimem::block::reduce(i < n ? v : -1000000, unimem::maximum{});
  const float bf = unimem::block::reduce(static_cast<float>(v) * 0.5f);
  if (linear == threads - 1) {  // every thread has the result: check the last one
    block_sums[blockIdx.x] = bs;
    block_max[blockIdx.x] = bm;
    block_fsum[blockIdx.x] = bf;
  }
}

TEST(Warp, HostSideConstantsAreConsistent) {
  static_assert(uw::max_size == 32 || uw::max_size == 64, "");
  static_assert(uw::min_size == 32, "");
  static_assert(sizeof(uw::lane_mask_t) * 8 == static_cast<std::size_t>(uw::max_size), "");
  static_assert(uw::full_mask == ~uw::lane_mask_t{0}, "");
  // In host code static_size is 32 on NVIDIA and, in an AMD build's host pass, the largest size
  // (host code asks the device: unimem::device::warp_size()).
#if !defined(__HIP_DEVICE_COMPILE__)  // (a HIP device pass also reads this host function)
  static_assert(uw::static_size == uw::max_size, "");
#endif
#if !defined(UNIMEM_DETAIL_HIP_AMD)
  static_assert(uw::size() == 32, "");
#endif
  static_assert(uw::first_lanes(0) == 0u, "");
  static_assert(uw::first_lanes(1) == 1u, "");
  static_assert(uw::first_lanes(16) == 0xffffu, "");
  static_assert(uw::first_lanes(32) == 0xffffffffu, "");
  static_assert(uw::first_lanes(uw::max_size) == uw::full_mask, "");
  static_assert(uw::first_lanes(1000) == uw::full_mask, "");
  static_assert(uw::first_lanes(-3) == 0u, "");
  SUCCEED();
}

TEST(WarpGpu, IntrinsicsMatchACpuReferenceOnEveryLane) {
  UNIMEM_REQUIRE_GPU();
  const int w = unimem::device(0).warp_size();
  unimem::managed_buffer<long long> out(static_cast<std::size_t>(c_checks * w), -2);
  unimem::launch(warp_intrinsics, unimem::launch_config(1, static_cast<unsigned>(w)), out);
  unimem::synchronize();
  auto at = [&](int c, int lane) { return out[static_cast<std::size_t>(c * w + lane)]; };
  std::uint64_t ballot = 0, low_ballot = 0, even_ballot = 0;
  for (int l = 0; l < w; ++l) {
    if (l % 3 == 0) ballot |= std::uint64_t{1} << l;
    if (l < w / 2 && l % 2 == 0) low_ballot |= std::uint64_t{1} << l;
    if (l % 4 == 0) even_ballot |= std::uint64_t{1} << l;
  }
  for (int l = 0; l < w; ++l) {
    SCOPED_TRACE("lane " + std::to_string(l) + " of " + std::to_string(w));
    EXPECT_EQ(at(c_warp_size, l), w) << "warp::size in device code differs from the device's";
    EXPECT_EQ(at(c_shfl, l), ((l + 3) % w) * 10);
    EXPECT_EQ(at(c_shfl_w8, l), (l / 8) * 8 + 2);
    EXPECT_EQ(at(c_up, l), l >= 3 ? l - 3 : l);
    EXPECT_EQ(at(c_down, l), l + 5 < w ? l + 5 : l);
    EXPECT_EQ(at(c_down_w16, l), l % 16 + 3 < 16 ? l + 3 : l);
    EXPECT_EQ(at(c_xor1, l), l ^ 1);
    EXPECT_EQ(at(c_xor2, l), l ^ 2);
    EXPECT_EQ(at(c_xor4, l), l ^ 4);
    EXPECT_EQ(at(c_xor8, l), l ^ 8);
    EXPECT_EQ(at(c_xor16, l), l ^ 16);
    EXPECT_EQ(at(c_xor_half, l), l ^ (w / 2));
    EXPECT_EQ(static_cast<std::uint64_t>(at(c_ballot, l)), ballot);
    EXPECT_EQ(at(c_any, l), 1);
    EXPECT_EQ(at(c_any_none, l), 0);
    EXPECT_EQ(at(c_all, l), 1);
    EXPECT_EQ(at(c_all_not, l), 0);
    EXPECT_EQ(at(c_struct, l), 1);
    EXPECT_EQ(at(c_double, l), static_cast<long long>((w - 1 - l) * 1.25 * 4));
    if (l < w / 2) {
      EXPECT_EQ(at(c_low_shfl, l), ((l + 1) % (w / 2)) * 2);
      EXPECT_EQ(static_cast<std::uint64_t>(at(c_low_ballot, l)), low_ballot);
      EXPECT_EQ(at(c_low_all, l), 1);
      EXPECT_EQ(at(c_low_any, l), 1);
    } else {
      EXPECT_EQ(at(c_low_shfl, l), -1);
    }
    if (l % 2 == 0) {
      EXPECT_EQ(at(c_even_shfl, l), (l + 2) % w);
      EXPECT_EQ(static_cast<std::uint64_t>(at(c_even_ballot, l)), even_ballot);
      EXPECT_EQ(at(c_even_all, l), 1);
      EXPECT_EQ(at(c_even_any, l), 1);
    } else {
      EXPECT_EQ(at(c_even_ballot, l), -1);
    }
  }
}

TEST(WarpGpu, ReductionsForSizesThatAreNotMultiples) {
  UNIMEM_REQUIRE_GPU();
  const int w = unimem::device(0).warp_size();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-1000, 1000);
  const std::vector<unimem::dims> blocks = {{1},  {7},   {31},  {32},     {33},      {63},
                                            {64}, {65},  {100}, {255},    {256},     {1000},
                                            {1024}, {10, 7}, {5, 5, 5}, {32, 3}};
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{12345}}) {
    unimem::managed_buffer<int> in(n);
    for (auto& v : in) v = dist(rng);
    for (const unimem::dims& b : blocks) {
      const unsigned threads = b.x * b.y * b.z;
      SCOPED_TRACE("n " + std::to_string(n) + ", block " + std::to_string(b.x) + "x" +
                   std::to_string(b.y) + "x" + std::to_string(b.z));
      const unsigned grid = static_cast<unsigned>((n + threads - 1) / threads);
      const unsigned warps = (threads + w - 1) / w;
      unimem::managed_buffer<long long> warp_sums(std::size_t{grid} * warps, -7);
      unimem::managed_buffer<long long> block_sums(grid);
      unimem::managed_buffer<int> block_max(grid);
      unimem::managed_buffer<float> block_fsum(grid);
      unimem::launch(warp_reductions, unimem::launch_config(grid, b), in, n, warp_sums,
                     block_sums, block_max, block_fsum);
      unimem::synchronize();
      for (unsigned g = 0; g < grid; ++g) {
        long long sum = 0;
        int mx = -1000000;
        for (unsigned t = 0; t < threads; ++t) {
          const std::size_t i = std::size_t{g} * threads + t;
          if (i < n) {
            sum += in[i];
            mx = std::max(mx, in[i]);
          }
        }
        ASSERT_EQ(block_sums[g], sum) << "block " << g;
        ASSERT_EQ(block_max[g], mx) << "block " << g;
        // |values| <= 500 after halving, at most 1024 of them: exact in float.
        ASSERT_EQ(block_fsum[g], static_cast<float>(sum) * 0.5f) << "block " << g;
        for (unsigned k = 0; k < warps; ++k) {
          long long ws = 0;
          for (unsigned t = k * w; t < std::min(threads, (k + 1) * w); ++t) {
            const std::size_t i = std::size_t{g} * threads + t;
            if (i < n) ws += in[i];
          }
          ASSERT_EQ(warp_sums[std::size_t{g} * warps + k], ws) << "block " << g << " warp " << k;
        }
      }
    }
  }
}
