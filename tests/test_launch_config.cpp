// launch_config and grid_for arithmetic (host tests).
#include "test_support.hpp"

#include <cstdint>
#include <limits>
#include <stdexcept>

namespace {

void expect_covers(std::size_t n, unsigned block) {
  const unimem::launch_config c = unimem::grid_for(n, block);
  EXPECT_EQ(c.block, unimem::dims(block, 1, 1));
  EXPECT_EQ(c.grid.y, 1u);
  EXPECT_EQ(c.grid.z, 1u);
  EXPECT_GE(c.threads(), n) << "n = " << n;                        // covers n
  if (n > 0) EXPECT_LT(c.threads() - block, std::uint64_t{n});    // with no spare block
  EXPECT_EQ(c.shared_bytes, 0u);
  EXPECT_TRUE(c.stream.is_default());
}

}  // namespace

TEST(GridFor, Zero) {
  const unimem::launch_config c = unimem::grid_for(0);
  EXPECT_EQ(c.grid.x, 0u);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.threads(), 0u);
  EXPECT_EQ(c.block.x, 256u);
}

TEST(GridFor, SmallSizes) {
  EXPECT_EQ(unimem::grid_for(1).grid.x, 1u);
  EXPECT_EQ(unimem::grid_for(255).grid.x, 1u);
  EXPECT_EQ(unimem::grid_for(256).grid.x, 1u);
  EXPECT_EQ(unimem::grid_for(257).grid.x, 2u);
  for (std::size_t n : {1u, 255u, 256u, 257u, 1000u, 65536u}) expect_covers(n, 256);
}

TEST(GridFor, BeyondThirtyTwoBits) {
  const std::size_t n = (std::size_t{1} << 32) + 1;
  const unimem::launch_config c = unimem::grid_for(n);
  EXPECT_EQ(c.grid.x, 16777217u);  // ceil((2^32 + 1) / 256)
  expect_covers(n, 256);
  EXPECT_FALSE(c.empty());
}

TEST(GridFor, OtherBlockSizes) {
  for (unsigned block : {1u, 32u, 64u, 128u, 1024u}) {
    for (std::size_t n : {1u, 31u, 33u, 1000u, 1u << 20}) expect_covers(n, block);
  }
  EXPECT_EQ(unimem::grid_for(1000, 64).grid.x, 16u);
}

TEST(GridFor, RejectsBadInput) {
  EXPECT_THROW(unimem::grid_for(10, 0), unimem::argument_error);
  // 2^31 - 1 blocks is the limit of grid.x.
  const std::size_t limit = std::size_t{0x7fffffff} * 256;
  EXPECT_NO_THROW(unimem::grid_for(limit));
  EXPECT_THROW(unimem::grid_for(limit + 1), unimem::argument_error);
  EXPECT_THROW(unimem::grid_for(std::numeric_limits<std::size_t>::max()), unimem::argument_error);
  EXPECT_THROW(unimem::grid_for(std::numeric_limits<std::size_t>::max(), 1), unimem::argument_error);
}

TEST(LaunchConfig, Defaults) {
  const unimem::launch_config c;
  EXPECT_EQ(c.grid, unimem::dims(1));
  EXPECT_EQ(c.block, unimem::dims(1));
  EXPECT_EQ(c.shared_bytes, 0u);
  EXPECT_EQ(c.stream, unimem::default_stream);
  EXPECT_FALSE(c.names_device());  // the stream's device, else the current one
  EXPECT_EQ(c.device_id, unimem::no_device);
  EXPECT_TRUE(c.on_device(-1).names_device());
  EXPECT_EQ(c.on_device(-1).device_id, -1);  // kept as given: launching with it throws
  EXPECT_EQ(c.on_device(3).device_id, 3);
  unimem::launch_config set;
  set.device_id = 2;  // the member, written directly, names the device too
  EXPECT_TRUE(set.names_device());
  EXPECT_EQ(set.device_id, 2);
}

TEST(LaunchConfig, ThreeDimensionsAndModifiers) {
  const unimem::launch_config c({4, 3, 2}, {8, 8, 4});
  EXPECT_EQ(c.grid.volume(), 24u);
  EXPECT_EQ(c.block.volume(), 256u);
  EXPECT_EQ(c.threads(), 24u * 256u);
  EXPECT_FALSE(c.empty());
  EXPECT_TRUE(unimem::launch_config({4, 0, 2}, {8}).empty());
  const unimem::launch_config s = c.with_shared_bytes(4096);
  EXPECT_EQ(s.shared_bytes, 4096u);
  EXPECT_EQ(s.grid, c.grid);
  EXPECT_EQ(c.shared_bytes, 0u);  // the original is unchanged
}

TEST(LaunchConfig, DimsFromNativeDim3) {
  const dim3 native(5, 6, 7);
  const unimem::dims d = native;
  EXPECT_EQ(d, unimem::dims(5, 6, 7));
  EXPECT_EQ(d.volume(), 210u);
  // Volumes do not overflow 32 bits.
  EXPECT_EQ(unimem::dims(65536, 65536, 2).volume(), std::uint64_t{1} << 33);
}
