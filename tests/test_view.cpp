// view<T> (host tests).
#include "test_support.hpp"

#include <numeric>
#include <stdexcept>
#include <type_traits>
#include <vector>

static_assert(std::is_trivially_copyable<unimem::view<float>>::value, "");
static_assert(std::is_trivially_copyable<unimem::view<const double>>::value, "");
static_assert(std::is_standard_layout<unimem::view<int>>::value, "");
static_assert(sizeof(unimem::view<int>) == sizeof(int*) + sizeof(std::size_t), "");
static_assert(std::is_convertible<unimem::view<int>, unimem::view<const int>>::value, "");
static_assert(!std::is_convertible<unimem::view<const int>, unimem::view<int>>::value, "");
static_assert(!std::is_convertible<unimem::view<int>, unimem::view<long>>::value, "");

TEST(View, DefaultIsEmpty) {
  const unimem::view<float> v;
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.size(), 0u);
  EXPECT_EQ(v.data(), nullptr);
  EXPECT_EQ(v.begin(), v.end());
}

TEST(View, AccessAndIteration) {
  std::vector<int> host(10);
  std::iota(host.begin(), host.end(), 0);
  const unimem::view<int> v(host.data(), host.size());
  EXPECT_EQ(v.size(), 10u);
  EXPECT_EQ(v.size_bytes(), 10 * sizeof(int));
  EXPECT_EQ(v[3], 3);
  v[3] = 30;
  EXPECT_EQ(host[3], 30);
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0), 45 + 27);
  const unimem::view<const int> c = v;
  EXPECT_EQ(c.data(), host.data());
  EXPECT_EQ(c.size(), v.size());
}

TEST(View, Subview) {
  std::vector<int> host(10, 1);
  const unimem::view<int> v(host.data(), host.size());
  const unimem::view<int> s = v.subview(2, 5);
  EXPECT_EQ(s.data(), host.data() + 2);
  EXPECT_EQ(s.size(), 5u);
  EXPECT_EQ(v.subview(4).size(), 6u);
  EXPECT_EQ(v.subview(10).size(), 0u);
  EXPECT_EQ(v.subview(10, 0).size(), 0u);
  EXPECT_THROW(v.subview(11), unimem::argument_error);
  EXPECT_THROW(v.subview(5, 6), unimem::argument_error);
  EXPECT_THROW(v.subview(1, std::size_t(-1)), unimem::argument_error);  // no wrap-around
}
