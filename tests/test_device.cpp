// Devices and the report (host tests run everywhere; property checks need a GPU).
#include "test_support.hpp"

#include <string>

TEST(Device, CountNeverThrowsForAMissingGpu) {
  int n = -1;
  EXPECT_NO_THROW(n = unimem::device_count());
  EXPECT_GE(n, 0);
  EXPECT_EQ(unimem::devices().size(), n);
}

TEST(Device, InvalidIdsThrow) {
  const int n = unimem::device_count();
  for (int bad : {-1, n, n + 1, 1 << 20}) {
    try {
      unimem::device d(bad);
      FAIL() << "unimem::device(" << bad << ") did not throw";
    } catch (const unimem::error& e) {
      EXPECT_EQ(e.code(), unimem::detail::backend::error_invalid_device);
      EXPECT_NE(std::string(e.what()).find("unimem::device(" + std::to_string(bad) + ")"),
                std::string::npos)
          << e.what();
    }
    EXPECT_THROW(unimem::device_guard g(bad), unimem::error);
  }
}

TEST(Device, ReportNamesTheBackend) {
  const std::string r = unimem::report();
  EXPECT_NE(r.find(std::string("backend ") + unimem::backend_name()), std::string::npos) << r;
  EXPECT_NE(r.find(UNIMEM_VERSION_STRING), std::string::npos) << r;
}

TEST(DeviceGpu, Properties) {
  UNIMEM_REQUIRE_GPU();
  for (const unimem::device& d : unimem::devices()) {
    const unimem::device_properties p = d.properties();
    SCOPED_TRACE(std::string(p.name) + " " + std::string(p.architecture));
    EXPECT_FALSE(p.name.empty());
    EXPECT_TRUE(p.architecture.starts_with("sm_") || p.architecture.starts_with("gfx"));
    EXPECT_TRUE(p.warp_size == 32 || p.warp_size == 64);
    EXPECT_EQ(p.warp_size, d.warp_size());
    EXPECT_GT(p.multiprocessors, 0);
    EXPECT_GE(p.max_threads_per_block, 256);
    EXPECT_GT(p.total_memory, 0u);
    EXPECT_GT(p.free_memory, 0u);
    EXPECT_LE(p.free_memory, p.total_memory);
    EXPECT_EQ(p.name, d.name());
    EXPECT_EQ(p.architecture, d.architecture());
    EXPECT_EQ(p.migrates_on_demand, d.migrates_on_demand());
    EXPECT_TRUE(p.managed_memory);
    if (p.architecture.starts_with("sm_")) {
      // NVIDIA: migration is exactly concurrentManagedAccess.
      EXPECT_EQ(p.migrates_on_demand, p.concurrent_managed_access);
      EXPECT_EQ(p.architecture,
                "sm_" + std::to_string(p.compute_major) + std::to_string(p.compute_minor));
    }
  }
}

TEST(DeviceGpu, GuardRestoresTheCurrentDevice) {
  UNIMEM_REQUIRE_GPU();
  const int before = unimem::device::current().id();
  {
    unimem::device_guard g(unimem::device_count() - 1);
    EXPECT_EQ(unimem::device::current().id(), unimem::device_count() - 1);
  }
  EXPECT_EQ(unimem::device::current().id(), before);
  unimem::device(0).synchronize();
  unimem::synchronize();
}

TEST(DeviceGpu, ReportListsEveryDevice) {
  UNIMEM_REQUIRE_GPU();
  const std::string r = unimem::report();
  for (int i = 0; i < unimem::device_count(); ++i) {
    EXPECT_NE(r.find("device " + std::to_string(i) + ": " + std::string(unimem::device(i).name())),
              std::string::npos)
        << r;
  }
  EXPECT_NE(r.find("migrates on demand"), std::string::npos) << r;
}
