// The parent project's own GoogleTest, built by its own compiler settings; it links the
// parent's library, which links unimem::unimem.
#include "square.hpp"

#include <unimem/device.hpp>

#include <gtest/gtest.h>

TEST(Parent, SquaresOnTheGpu) {
  if (unimem::device_count() == 0) GTEST_SKIP() << "no GPU here: built and linked";
  unimem::managed_buffer<int> v{1, 2, 3, 4};
  parent::square(v);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 4);
  EXPECT_EQ(v[2], 9);
  EXPECT_EQ(v[3], 16);
}
