// Devices and the report (host tests run everywhere; property checks need a GPU).
#include "test_support.hpp"

#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

TEST(Device, CountNeverThrowsForAMissingGpu) {
  int n = -1;
  EXPECT_NO_THROW(n = unimem::device_count());
  EXPECT_GE(n, 0);
  EXPECT_EQ(unimem::devices().size(), static_cast<std::size_t>(n));
}

// Names, versions and the report come as standard types (issue 25: no string type of unimem's).
static_assert(std::is_same<decltype(unimem::report()), std::string>::value, "");
static_assert(std::is_same<decltype(unimem::runtime_version()), std::string>::value, "");
static_assert(std::is_same<decltype(unimem::driver_version()), std::string>::value, "");
static_assert(std::is_same<decltype(unimem::devices()), std::vector<unimem::device>>::value, "");
static_assert(std::is_same<decltype(unimem::device_properties::name), const char*>::value, "");
static_assert(std::is_same<decltype(std::declval<unimem::device>().name()), const char*>::value,
              "");
static_assert(std::is_same<decltype(unimem::to_string(unimem::location::host())), std::string>::value,
              "");
static_assert(std::is_same<unimem::location_list, std::vector<unimem::location>>::value, "");

TEST(Device, AnswersAreStandardTypes) {
  const std::string line = std::string("report: ") + unimem::report();  // std::string + report
  EXPECT_EQ(line.rfind("report: unimem ", 0), 0u) << line;
  EXPECT_FALSE(unimem::runtime_version().empty());
  EXPECT_FALSE(unimem::driver_version().empty());
  EXPECT_EQ(unimem::to_string(unimem::location::device(12)), "device 12");
  EXPECT_EQ(unimem::to_string(unimem::location::host()) + "!", "host!");
  std::set<std::string> names;
  std::unordered_map<std::string, int> by_name;
  for (const unimem::device& d : unimem::devices()) {
    names.insert(d.name());
    ++by_name[d.architecture()];
  }
  EXPECT_LE(names.size(), unimem::devices().size());
  const unimem::device_properties empty{};
  EXPECT_STREQ(empty.name, "");
  EXPECT_STREQ(empty.architecture, "");
  EXPECT_EQ(empty.peak_bandwidth_gbps(), 0.0);
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
    const std::string arch = p.architecture;
    SCOPED_TRACE(std::string(p.name) + " " + arch);
    EXPECT_NE(p.name[0], '\0');
    EXPECT_TRUE(arch.rfind("sm_", 0) == 0 || arch.rfind("gfx", 0) == 0);
    EXPECT_TRUE(p.warp_size == 32 || p.warp_size == 64);
    EXPECT_EQ(p.warp_size, d.warp_size());
    EXPECT_GT(p.multiprocessors, 0);
    EXPECT_GE(p.max_threads_per_block, 256);
    EXPECT_GT(p.total_memory, 0u);
    EXPECT_GT(p.free_memory, 0u);
    EXPECT_LE(p.free_memory, p.total_memory);
    // The names point into the property cache: the same pointer each time, for the program.
    EXPECT_EQ(p.name, d.name());
    EXPECT_EQ(p.architecture, d.architecture());
    EXPECT_EQ(d.name(), unimem::device(d.device_id()).name());
    EXPECT_EQ(p.migrates_on_demand, d.migrates_on_demand());
    EXPECT_TRUE(p.managed_memory);
    if (arch.rfind("sm_", 0) == 0) {
      // NVIDIA: migration is exactly concurrentManagedAccess.
      EXPECT_EQ(p.migrates_on_demand, p.concurrent_managed_access);
      EXPECT_EQ(arch, "sm_" + std::to_string(p.compute_major) + std::to_string(p.compute_minor));
    }
  }
}

// What peak bandwidth needs: the memory bus width and clock, read as device attributes (CUDA 13
// has no cudaDeviceProp::memoryClockRate). An H200 (HBM3e) is rated 4.8 TB/s.
TEST(DeviceGpu, MemoryBusAndPeakBandwidth) {
  UNIMEM_REQUIRE_GPU();
  for (const unimem::device& d : unimem::devices()) {
    const unimem::device_properties p = d.properties();
    SCOPED_TRACE(std::string(p.name) + ": " + std::to_string(p.memory_bus_width_bits) + " bits at " +
                 std::to_string(p.memory_clock_khz) + " kHz");
    EXPECT_GT(p.memory_bus_width_bits, 0);
    EXPECT_GT(p.memory_clock_khz, 0);
    EXPECT_EQ(p.memory_bus_width_bits, d.memory_bus_width_bits());
    EXPECT_EQ(p.memory_clock_khz, d.memory_clock_khz());
    const double expected = 2.0 * p.memory_clock_khz * 1000.0 * p.memory_bus_width_bits / 8 / 1e9;
    EXPECT_DOUBLE_EQ(p.peak_bandwidth_gbps(), expected);
    EXPECT_GT(p.peak_bandwidth_gbps(), 100.0);     // any discrete GPU unimem runs on
    EXPECT_LT(p.peak_bandwidth_gbps(), 100000.0);  // not a unit mistake (100 TB/s)
  }
}

TEST(DeviceGpu, GuardRestoresTheCurrentDevice) {
  UNIMEM_REQUIRE_GPU();
  const int before = unimem::device::current().device_id();
  {
    unimem::device_guard g(unimem::device_count() - 1);
    EXPECT_EQ(unimem::device::current().device_id(), unimem::device_count() - 1);
  }
  EXPECT_EQ(unimem::device::current().device_id(), before);
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
  EXPECT_NE(r.find("peak bandwidth"), std::string::npos) << r;
}
