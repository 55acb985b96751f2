// Two shared libraries built with -fvisibility=hidden use unimem on the same buffers (issue 24):
// placement records, intents and the out() guarantee must hold across them, with no table that
// one library keeps and the other cannot see. GPU tests; they skip without a GPU.
#include "libs.hpp"

#include "../test_support.hpp"

#include <cstdint>

namespace {

constexpr std::size_t n = std::size_t{8} << 20;  // 32 MiB of floats

std::size_t count_not(const shared_buffer& x, float v) {
  std::size_t wrong = 0;
  for (float e : x) wrong += e != v;
  return wrong;
}

}  // namespace

TEST(SharedLibrariesGpu, ReadMostlyBufferOverwrittenByTheOtherLibraryReadsBackWhole) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;
  shared_buffer x(n, 1.0f);
  lib_a_read_mostly_and_read(x, s);  // A: read-mostly advice, read on the host and the GPU
  for (float value : {2.0f, 3.0f, 4.0f}) {
    lib_b_launch_out(x, value, s);  // B: out(x), every element overwritten
    s.synchronize();
    EXPECT_EQ(count_not(x, value), 0u) << "the host read stale copies after B's kernel";
  }
}

TEST(SharedLibrariesGpu, APlacementInOneLibraryHoldsInTheOther) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;
  shared_buffer x(n, 1.0f);
  const unimem::detail::backend::native_location host{true, -1};
  const bool b_trusted_a = unimem_test::in_a_quiet_run([&] {
    lib_a_launch_in(x, s);  // A places x on the GPU and records it in x
    s.synchronize();
    // Behind both libraries' backs, with no page fault: x's pages go to the host.
    unimem::detail::check(
        unimem::detail::backend::prefetch(x.data(), x.size_bytes(), host, s.get()),
        {__FILE__, __LINE__});
    s.synchronize();
    lib_b_launch_in(x, s);  // B reads A's record in x: already placed, nothing to do
    s.synchronize();
    return unimem::last_prefetch_location(x) == unimem::location::host();
  });
  EXPECT_TRUE(b_trusted_a) << "library B placed again what library A had placed";
}

TEST(SharedLibrariesGpu, PagesOneLibraryMovesThroughAViewAreSeenByTheOther) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;
  shared_buffer x(n, 1.0f);
  lib_b_launch_in(x, s);  // B places x (its record in x)
  s.synchronize();
  lib_a_ready_view(x, s);  // A moves half of x to the host through a view (no record)
  EXPECT_EQ(unimem::last_prefetch_location(x.view().subview(0, n / 2)), unimem::location::host());
  lib_b_launch_in(x, s);  // B must place x again: A's move made every record stop holding
  s.synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(x.view().subview(0, n / 2)),
            unimem::location::device(0));
}

TEST(SharedLibrariesGpu, AnIntentSetInOneLibraryIsFollowedByTheOther) {
  UNIMEM_REQUIRE_GPU();
  unimem::stream s;
  shared_buffer x(n, 1.0f);
  lib_b_launch_in(x, s);
  s.synchronize();
  lib_a_map_view(x);  // A maps x through a view: advice in the runtime, nothing in a table
  EXPECT_EQ(lib_b_get_intent(x), unimem::intent::map);
  lib_b_launch_in(x, s);  // B's plain tag follows the intent: x stays in host memory
  s.synchronize();
  EXPECT_EQ(unimem::preferred_location(x), unimem::location::host());
  EXPECT_TRUE(unimem_test::lists(unimem::accessed_by(x), unimem::location::device(0)));
  lib_b_launch_out(x, 5.0f, s);
  s.synchronize();
  EXPECT_EQ(count_not(x, 5.0f), 0u);
}
