// Two GPUs: placement with device ids and launches on a chosen device. Skips unless two GPUs.
#include "test_support.hpp"

#include <cstdint>

__global__ void multi_gpu_add(int* data, std::size_t n, int delta) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) data[i] += delta;
}

__global__ void multi_gpu_spin(std::uint64_t cycles) {
  const long long start = clock64();
  while (static_cast<std::uint64_t>(clock64() - start) < cycles) {
  }
}

#define UNIMEM_REQUIRE_TWO_GPUS()                                                         \
  do {                                                                                    \
    if (unimem::device_count() < 2)                                                       \
      GTEST_SKIP() << "needs two GPUs; unimem::device_count() == " << unimem::device_count(); \
  } while (0)

using unimem::location;

TEST(MultiGpu, PrefetchToSecondGpuThenRunThere) {
  UNIMEM_REQUIRE_TWO_GPUS();
  const std::size_t n = (16 << 20) + 5;
  unimem::managed_buffer<int> b(n, 1);
  unimem::prefetch(b, location::device(1));
  unimem::launch(multi_gpu_add, unimem::grid_for(n).on_device(1), b, n, 2);
  unimem::device(1).synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(1));
  EXPECT_EQ(unimem::device::current().device_id(), 0);  // on_device() did not leak
  unimem::ready_for_host(b);
  for (std::size_t i = 0; i < n; i += 1013) ASSERT_EQ(b[i], 3);
  EXPECT_EQ(b[n - 1], 3);
}

TEST(MultiGpu, AccessedByWithPreferredLocationKeepsDataIntact) {
  UNIMEM_REQUIRE_TWO_GPUS();
  const std::size_t n = 8 << 20;
  unimem::managed_buffer<int> b(n, 10);
  unimem::advise(b, unimem::advice::preferred_location, location::device(0));
  unimem::advise(b, unimem::advice::accessed_by, location::device(1));
  unimem::prefetch(b, location::device(0));
  unimem::synchronize();
  {
    unimem::device_guard on1(1);  // the scoped form of on_device()
    unimem::launch(multi_gpu_add, unimem::grid_for(n), b, n, 5);  // GPU1 works remotely
    unimem::synchronize();
  }
  EXPECT_EQ(unimem::preferred_location(b), location::device(0));
  const auto by = unimem::accessed_by(b);
  ASSERT_EQ(by.size(), 1u);
  EXPECT_EQ(by[0], location::device(1));
  unimem::launch(multi_gpu_add, unimem::grid_for(n), b, n, 1);  // and GPU0 locally
  unimem::synchronize();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += b[i] != 16;
  EXPECT_EQ(wrong, 0u);
}

TEST(MultiGpu, TagsFollowTheLaunchDevice) {
  UNIMEM_REQUIRE_TWO_GPUS();
  const std::size_t n = 1 << 22;
  unimem::managed_buffer<int> b(n, 0);
  unimem::stream s1(unimem::device(1));
  unimem::launch(multi_gpu_add, unimem::grid_for(n).on(s1).on_device(1), unimem::inout(b), n, 7);
  s1.synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(1));
  unimem::launch(multi_gpu_add, unimem::grid_for(n), unimem::inout(b), n, 1);
  unimem::synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(0));
  unimem::ready_for_host(b);
  for (std::size_t i = 0; i < n; i += 997) ASSERT_EQ(b[i], 8);
}

TEST(MultiGpu, FirstTouchOnTheSecondGpu) {
  UNIMEM_REQUIRE_TWO_GPUS();
  unimem::managed_buffer<int> b(1 << 20, unimem::first_touch(location::device(1)));
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(1));
  EXPECT_EQ(unimem::device::current().device_id(), 0);
  unimem::ready_for_host(b);
  for (std::size_t i = 0; i < b.size(); i += 101) ASSERT_EQ(b[i], 0);
}

TEST(MultiGpu, MappedIntentServesBothGpusAndMovedUndoesBoth) {
  UNIMEM_REQUIRE_TWO_GPUS();
  const std::size_t n = (8 << 20) + 1;
  unimem::managed_buffer<int> b(n, 1);
  unimem::launch(multi_gpu_add, unimem::grid_for(n), unimem::inout(b, unimem::intent::map), n, 2);
  unimem::launch(multi_gpu_add, unimem::grid_for(n).on_device(1),
                 unimem::inout(b, unimem::intent::map), n, 4);
  unimem::synchronize_all_devices();
  EXPECT_EQ(unimem::get_intent(b), unimem::intent::map);
  EXPECT_EQ(unimem::preferred_location(b), location::host());
  const auto by = unimem::accessed_by(b);
  EXPECT_TRUE(unimem_test::lists(by, location::device(0)));
  EXPECT_TRUE(unimem_test::lists(by, location::device(1)));
  EXPECT_FALSE(unimem::last_prefetch_location(b).has_value());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += b[i] != 7;
  EXPECT_EQ(wrong, 0u);
  // Moved, on GPU1: both GPUs' advice withdrawn, the data moves to GPU1.
  unimem::launch(multi_gpu_add, unimem::grid_for(n).on_device(1),
                 unimem::inout(b, unimem::intent::move), n, 1);
  unimem::device(1).synchronize();
  EXPECT_TRUE(unimem::accessed_by(b).empty());
  EXPECT_FALSE(unimem::preferred_location(b).has_value());
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(1));
  unimem::ready_for_host(b);
  EXPECT_EQ(b[n - 1], 8);
}

TEST(MultiGpu, PlacementRecordsFollowTheBufferFromGpuToGpu) {
  UNIMEM_REQUIRE_TWO_GPUS();
  const std::size_t n = (4 << 20) + 1;
  unimem::managed_buffer<int> b(n, 0);
  unimem::stream s0(unimem::device(0)), s1(unimem::device(1));
  auto add_on = [&](unimem::stream& s, int v) {
    unimem::launch(multi_gpu_add, unimem::grid_for(n).on(s), unimem::inout(b), n, v);
    s.synchronize();
  };
  add_on(s0, 1);
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(0));
  add_on(s1, 2);  // the record says GPU0: the launch on GPU1 moves the buffer there
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(1));
  add_on(s0, 4);  // and back
  EXPECT_EQ(unimem::last_prefetch_location(b), location::device(0));
  // A view moved to GPU1 (pages no record describes, one GPU of several): every record stops
  // holding, so b's next launch on GPU0 places it again, whatever b's record said.
  (void)unimem::prefetch(b.view().subview(0, 1000), location::device(1), s1);
  s1.synchronize();
  EXPECT_EQ(unimem::last_prefetch_location(b.view().subview(0, 1000)), location::device(1));
  add_on(s0, 8);
  EXPECT_EQ(unimem::last_prefetch_location(b.view().subview(0, 1000)), location::device(0));
  unimem::ready_for_host(b);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += b[i] != 15;
  EXPECT_EQ(wrong, 0u);
}
