// The no-GPU path: a normal situation, reported with clear errors, never a crash.
#include "test_support.hpp"

#include <string>

TEST(NoGpu, DeviceCountIsZero) {
  UNIMEM_REQUIRE_NO_GPU();
  EXPECT_EQ(unimem::device_count(), 0);
  EXPECT_TRUE(unimem::devices().empty());
}

TEST(NoGpu, ManagedBufferThrowsNoGpuFound) {
  UNIMEM_REQUIRE_NO_GPU();
  try {
    unimem::managed_buffer<float> b(1000);
    FAIL() << "constructing a managed_buffer without a GPU did not throw";
  } catch (const unimem::error& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU was found"), std::string::npos) << e.what();
    EXPECT_TRUE(e.no_gpu());
    EXPECT_NE(e.code(), unimem::native_status{});  // not success
    EXPECT_NE(std::string(e.call()).find("MallocManaged"), std::string::npos) << e.call();
  }
  EXPECT_THROW((void)unimem::managed_buffer<int>({1, 2, 3}), unimem::error);
  EXPECT_THROW((void)unimem::managed_buffer<int>(10, unimem::uninitialized), unimem::error);
}

TEST(NoGpu, ZeroSizeBufferNeedsNoGpu) {
  UNIMEM_REQUIRE_NO_GPU();
  unimem::managed_buffer<double> b(0);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.data(), nullptr);
}

TEST(NoGpu, DeviceObjectsThrow) {
  UNIMEM_REQUIRE_NO_GPU();
  try {
    unimem::device d(0);
    FAIL() << "unimem::device(0) did not throw without a GPU";
  } catch (const unimem::error& e) {
    EXPECT_TRUE(e.no_gpu());
    EXPECT_NE(std::string(e.what()).find("no GPU was found"), std::string::npos) << e.what();
  }
  EXPECT_THROW(unimem::synchronize(), unimem::error);
  EXPECT_NO_THROW(unimem::synchronize_all_devices());  // no GPU: nothing to wait for
  unimem::managed_buffer<int> empty;
  EXPECT_EQ(unimem::ready_for_host(empty), unimem::hint_status::empty);  // no runtime call
}

// A failed read of a device's properties publishes nothing: each query reads again and throws
// again, in the slot of a low ordinal as in the list beyond the slots.
TEST(NoGpu, PropertyCacheKeepsNoFailedRead) {
  UNIMEM_REQUIRE_NO_GPU();
  for (int id : {0, 0, unimem::detail::cached_devices, unimem::detail::cached_devices}) {
    SCOPED_TRACE(id);
    try {
      (void)unimem::detail::cached_properties(id, unimem::call_site::current());
      FAIL() << "reading the properties of device " << id << " without a GPU did not throw";
    } catch (const unimem::error& e) {
      EXPECT_TRUE(e.no_gpu()) << e.what();
    }
    EXPECT_THROW((void)unimem::detail::device_migrates(id, unimem::call_site::current()),
                 unimem::error);
  }
}

__global__ void no_gpu_kernel(float* p) {
  if (p != nullptr) *p = 1.0f;
}

TEST(NoGpu, OccupancyThrowsNoGpuFound) {
  UNIMEM_REQUIRE_NO_GPU();
  try {
    (void)unimem::max_potential_block_size(no_gpu_kernel);
    FAIL() << "max_potential_block_size without a GPU did not throw";
  } catch (const unimem::error& e) {
    EXPECT_TRUE(e.no_gpu()) << e.what();
    EXPECT_NE(std::string(e.what()).find("no GPU was found"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.call()).find("OccupancyMaxPotentialBlockSize"), std::string::npos)
        << e.call();
  }
  EXPECT_THROW((void)unimem::grid_for(no_gpu_kernel, 1000), unimem::error);
}

TEST(NoGpu, ReportSaysSo) {
  UNIMEM_REQUIRE_NO_GPU();
  const std::string r = unimem::report();
  EXPECT_NE(r.find("no GPU was found"), std::string::npos) << r;
  EXPECT_NE(r.find(unimem::backend_name()), std::string::npos) << r;
}
