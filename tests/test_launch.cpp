// launch(): argument conversion, errors, and data kept intact across CPU and GPU with no copy.
#include "test_support.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

__global__ void launch_test_vector_add(const float* a, const float* b, float* c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void launch_test_scale_view(unimem::view<float> v, unimem::view<const float> src,
                                       float factor) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < v.size()) v[i] = src[i] * factor;
}

// Reads what the CPU wrote, writes something the CPU checks.
__global__ void launch_test_round(std::uint32_t* data, std::size_t n, std::uint32_t round) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] = data[i] * 3u + round;
}

struct params {
  int offset;
  double scale;
  char tag;
};

__global__ void launch_test_mixed(int* out, params p, long long big, unsigned char small,
                                  const int* in) {
  out[0] = p.offset + static_cast<int>(p.scale * 2) + p.tag + static_cast<int>(big >> 40) + small +
           in[0];
}

__global__ void launch_test_touch(int* flag) { *flag = 1; }

namespace {

std::size_t count_wrong_sums(const unimem::managed_buffer<float>& c, std::size_t n) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += c[i] != 3.0f * static_cast<float>(i % 4096);
  return wrong;
}

}  // namespace

// ---- host tests: no runtime call is made ----

TEST(Launch, EmptyGridIsANoOp) {
  // An empty grid launches nothing and makes no runtime call: it succeeds with or without a GPU.
  unimem::managed_buffer<float> a, b, c;
  EXPECT_NO_THROW(unimem::launch(launch_test_vector_add, unimem::grid_for(0), a, b, c, 0u));
  EXPECT_NO_THROW(
      unimem::launch(launch_test_touch, unimem::launch_config({0, 1, 1}, {32}), nullptr));
}

TEST(Launch, ZeroBlockExtentThrowsInvalidArgument) {
  EXPECT_THROW(unimem::launch(launch_test_touch, unimem::launch_config({1}, {0}), nullptr),
               unimem::argument_error);
  EXPECT_THROW(unimem::launch(launch_test_touch, unimem::launch_config({0}, {32, 0}), nullptr),
               unimem::argument_error);
}

TEST(Launch, ArgumentConversionsAtCompileTime) {
  using namespace unimem::detail;
  using buf = unimem::managed_buffer<float>;
  static_assert(std::is_same<kernel_value_t<buf&>, unimem::view<float>>::value, "");
  static_assert(std::is_same<kernel_value_t<const buf&>, unimem::view<const float>>::value, "");
  static_assert(argument_traits<buf&, float*>::ok, "");
  static_assert(argument_traits<buf&, const float*>::ok, "");
  static_assert(argument_traits<const buf&, const float*>::ok, "");
  static_assert(argument_traits<buf&, unimem::view<float>>::ok, "");
  static_assert(argument_traits<buf&, unimem::view<const float>>::ok, "");
  static_assert(argument_traits<const buf&, unimem::view<const float>>::ok, "");
  static_assert(argument_traits<unimem::view<float>, float*>::ok, "");
  static_assert(argument_traits<int, long>::ok, "");
  static_assert(argument_traits<const std::size_t&, std::size_t>::ok, "");
  static_assert(argument_traits<params&, params>::ok, "");
  static_assert(argument_traits<std::nullptr_t, int*>::ok, "");
  SUCCEED();
}

TEST(Launch, TagsOverDeviceBuffersPassTheirViews) {
  // Device memory never moves: a tag over it is the buffer's view (nothing to place, no record,
  // no runtime call), so one launch line serves managed and device builds.
  using namespace unimem::detail;
  using dbuf = unimem::device_buffer<float>;
  using in_tag = decltype(unimem::in(std::declval<const dbuf&>()));
  using out_tag = decltype(unimem::out(std::declval<dbuf&>()));
  using inout_tag = decltype(unimem::inout(std::declval<dbuf&>(), unimem::intent::map));
  static_assert(std::is_same<in_tag, unimem::view<const float>>::value, "");
  static_assert(std::is_same<out_tag, unimem::view<float>>::value, "");
  static_assert(std::is_same<inout_tag, unimem::view<float>>::value, "");
  static_assert(!has_launch_hook<in_tag>::value && !has_launch_hook<out_tag>::value, "launch() places nothing");
  static_assert(argument_traits<in_tag, const float*>::ok, "");
  static_assert(!argument_traits<in_tag, float*>::ok, "in() is read-only");
  static_assert(argument_traits<out_tag, float*>::ok, "");
  static_assert(argument_traits<inout_tag, unimem::view<float>>::ok, "");
  // Managed buffers keep their tags, with the placement record.
  using mbuf = unimem::managed_buffer<float>;
  static_assert(has_launch_hook<decltype(unimem::in(std::declval<const mbuf&>()))>::value, "");
  unimem::device_buffer<float> empty;
  EXPECT_EQ(unimem::out(empty).data(), nullptr);
  EXPECT_NO_THROW(unimem::launch(launch_test_vector_add, unimem::grid_for(0), unimem::in(empty),
                                 unimem::in(empty), unimem::out(empty), 0u));
}

// ---- GPU tests ----

namespace {
// The one launch line of a program built over managed_buffer or over device_buffer.
template <class Buffer>
void tagged_vector_add(const Buffer& a, const Buffer& b, Buffer& c, std::size_t n) {
  unimem::launch(launch_test_vector_add, unimem::grid_for(n), unimem::in(a), unimem::in(b),
                 unimem::out(c), n);
}
}  // namespace

TEST(LaunchGpu, TaggedLaunchOverDeviceBuffers) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = (1 << 20) + 5;
  std::vector<float> ha(n), hb(n), hc(n, -1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    ha[i] = static_cast<float>(i % 4096);
    hb[i] = 2.0f * static_cast<float>(i % 4096);
  }
  unimem::device_buffer<float> a(ha.begin(), ha.end()), b(hb.begin(), hb.end());
  unimem::device_buffer<float> c(n, unimem::uninitialized);
  tagged_vector_add(a, b, c, n);
  unimem::synchronize();
  unimem::copy(hc, c);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += hc[i] != 3.0f * static_cast<float>(i % 4096);
  EXPECT_EQ(wrong, 0u);

  // Views of device memory carry no memory kind: their tags ask the runtime once, and place
  // nothing either (whole views and a sub-range).
  unimem::device_buffer<float> c2(n);
  auto a_view = a.view();
  auto c2_view = c2.view();
  unimem::launch(launch_test_vector_add, unimem::grid_for(n), unimem::in(a_view),
                 unimem::in(b.view()), unimem::out(c2_view), n);
  unimem::launch(launch_test_vector_add, unimem::grid_for(16), unimem::in(a_view.subview(16, 16)),
                 unimem::in(b.view().subview(16, 16)), unimem::inout(c2_view.subview(0, 16)),
                 std::size_t{16});
  unimem::synchronize();
  unimem::copy(hc, c2);
  wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = i < 16 ? i + 16 : i;  // the first 16 hold the sums of 16..31
    wrong += hc[i] != 3.0f * static_cast<float>(j % 4096);
  }
  EXPECT_EQ(wrong, 0u);

  // The same line over managed buffers places them (tags) and computes the same.
  unimem::managed_buffer<float> ma(ha.begin(), ha.end()), mb(hb.begin(), hb.end());
  unimem::managed_buffer<float> mc(n, unimem::uninitialized);
  tagged_vector_add(ma, mb, mc, n);
  unimem::synchronize();
  EXPECT_EQ(count_wrong_sums(mc, n), 0u);
}

class VectorAdd : public ::testing::TestWithParam<std::size_t> {};

TEST_P(VectorAdd, EveryElementIsRight) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = GetParam();
  unimem::managed_buffer<float> a(n), b(n), c(n, unimem::uninitialized);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 4096);
    b[i] = 2.0f * static_cast<float>(i % 4096);
  }
  unimem::launch(launch_test_vector_add, unimem::grid_for(n), a, b, c, n);
  unimem::synchronize();
  EXPECT_EQ(count_wrong_sums(c, n), 0u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, VectorAdd,
                         ::testing::Values(std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20,
                                           std::size_t{1} << 26));

TEST(LaunchGpu, HundredRoundTripsWithoutCopies) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = (1 << 20) + 3;  // not a multiple of the block
  unimem::managed_buffer<std::uint32_t> data(n, unimem::uninitialized);
  std::uint32_t* const where = data.data();
  for (std::uint32_t round = 0; round < 100; ++round) {
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<std::uint32_t>(i) + round;  // CPU
    unimem::launch(launch_test_round, unimem::grid_for(n), data, n, round);              // GPU
    unimem::synchronize();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {  // CPU reads what the GPU wrote
      wrong += data[i] != (static_cast<std::uint32_t>(i) + round) * 3u + round;
    }
    ASSERT_EQ(wrong, 0u) << "round " << round;
  }
  EXPECT_EQ(data.data(), where);  // the same allocation throughout
}

TEST(LaunchGpu, ViewsAndConstBuffers) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 5000;
  unimem::managed_buffer<float> out(n);
  unimem::managed_buffer<float> in(n, 1.5f);
  const unimem::managed_buffer<float>& const_in = in;
  unimem::launch(launch_test_scale_view, unimem::grid_for(n, 128), out, const_in, 4.0f);
  unimem::synchronize();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 6.0f) << i;

  // A view passed explicitly, and a sub-range of it.
  auto part = out.view().subview(1000, 10);
  unimem::launch(launch_test_scale_view, unimem::grid_for(part.size()), part,
                 std::as_const(in).view(), -1.0f);
  unimem::synchronize();
  EXPECT_EQ(out[999], 6.0f);
  EXPECT_EQ(out[1000], -1.5f);
  EXPECT_EQ(out[1009], -1.5f);
  EXPECT_EQ(out[1010], 6.0f);
}

TEST(LaunchGpu, ScalarsAndStructsByValue) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<int> out(1);
  const unimem::managed_buffer<int> in{100};
  const params p{1, 10.0, 3};
  unimem::launch(launch_test_mixed, unimem::launch_config(1, 1), out, p, 5LL << 40,
                 static_cast<unsigned char>(7), in);
  unimem::synchronize();
  EXPECT_EQ(out[0], 1 + 20 + 3 + 5 + 7 + 100);
}

TEST(LaunchGpu, BadConfigThrowsAndLaterLaunchesWork) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<int> flag(1);
  try {
    unimem::launch(launch_test_touch, unimem::launch_config(1, 4096), flag);
    FAIL() << "a launch with 4096 threads per block did not throw";
  } catch (const unimem::error& e) {
    EXPECT_NE(e.code(), unimem::native_status{});
    EXPECT_NE(std::string(e.call()).find("LaunchKernel"), std::string::npos) << e.call();
    EXPECT_NE(std::string(e.what()).find("block (4096, 1, 1)"), std::string::npos) << e.what();
    EXPECT_FALSE(e.no_gpu());
  }
  // Too much dynamic shared memory is rejected the same way.
  EXPECT_THROW(unimem::launch(launch_test_touch,
                              unimem::launch_config(1, 32).with_shared_bytes(std::size_t{1} << 30),
                              flag),
               unimem::error);
  EXPECT_EQ(flag[0], 0);  // nothing ran

  // The errors did not linger: the next launch and synchronisation succeed.
  unimem::launch(launch_test_touch, unimem::launch_config(1, 1), flag);
  EXPECT_NO_THROW(unimem::synchronize());
  EXPECT_EQ(flag[0], 1);
  const std::size_t n = 300;
  unimem::managed_buffer<float> a(n, 1.0f), b(n, 2.0f), c(n);
  unimem::launch(launch_test_vector_add, unimem::grid_for(n), a, b, c, n);
  unimem::synchronize();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], 3.0f);
}

TEST(OccupancyGpu, BlockSizeIsWholeWarpsWithinTheDeviceLimit) {
  UNIMEM_REQUIRE_GPU();
  const unimem::device d = unimem::device::current();
  const unimem::potential_block_size p = unimem::max_potential_block_size(launch_test_vector_add);
  EXPECT_GT(p.block_size, 0u);
  EXPECT_EQ(p.block_size % static_cast<unsigned>(d.warp_size()), 0u) << p.block_size;
  EXPECT_LE(p.block_size, static_cast<unsigned>(d.max_threads_per_block()));
  EXPECT_GT(p.min_grid_size, 0u);
  const auto limited = unimem::max_potential_block_size(launch_test_vector_add, 0, 64);
  EXPECT_GT(limited.block_size, 0u);
  EXPECT_LE(limited.block_size, 64u);
  const auto with_shared = unimem::max_potential_block_size(launch_test_vector_add, 1024);
  EXPECT_GT(with_shared.block_size, 0u);
  // Dynamic shared memory no block can have: unimem::error, and later calls work.
  EXPECT_THROW((void)unimem::max_potential_block_size(launch_test_vector_add, std::size_t{1} << 30),
               unimem::error);
  EXPECT_EQ(unimem::max_potential_block_size(launch_test_vector_add).block_size, p.block_size);
}

TEST(OccupancyGpu, GridForAKernelCoversNAndComputes) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = (1 << 20) + 7;  // not a multiple of any block size
  const unsigned block = unimem::max_potential_block_size(launch_test_vector_add).block_size;
  const unimem::launch_config cfg = unimem::grid_for(launch_test_vector_add, n);
  EXPECT_EQ(cfg.block, unimem::dims(block));
  EXPECT_EQ(cfg.grid.x, (n + block - 1) / block);
  EXPECT_EQ(cfg.shared_bytes, 0u);
  EXPECT_EQ(unimem::grid_for(launch_test_vector_add, n, 256).shared_bytes, 256u);
  EXPECT_TRUE(unimem::grid_for(launch_test_vector_add, 0).empty());
  unimem::managed_buffer<float> a(n), b(n), c(n, unimem::uninitialized);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 4096);
    b[i] = 2.0f * static_cast<float>(i % 4096);
  }
  unimem::launch(launch_test_vector_add, cfg, unimem::in(a), unimem::in(b), unimem::out(c), n);
  unimem::synchronize();
  EXPECT_EQ(count_wrong_sums(c, n), 0u);
}

TEST(LaunchGpu, EmptyGridLeavesDataAlone) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<int> flag(1);
  unimem::launch(launch_test_touch, unimem::launch_config({0}, {64}), flag);
  unimem::synchronize();
  EXPECT_EQ(flag[0], 0);
}
