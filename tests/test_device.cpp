// Devices and the report (host tests run everywhere; property checks need a GPU).
#include "test_support.hpp"

#include <algorithm>
#include <iterator>
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

// Names, versions and the report come as standard types (no string type of unimem's).
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

// The cached properties are what the runtime answers: each attribute of the list read again.
TEST(DeviceGpu, CachedAttributesAreTheRuntimes) {
  UNIMEM_REQUIRE_GPU();
  for (const unimem::device& d : unimem::devices()) {
    unimem::device_properties p = d.properties();
    SCOPED_TRACE(p.name);
    unimem::detail::for_each_attribute(p, [&](auto& field,
                                              unimem::detail::backend::device_attribute a) {
      int v = 0;
      ASSERT_EQ(unimem::detail::backend::get_attribute(&v, a, d.device_id()).code,
                unimem::detail::backend::success);
      EXPECT_EQ(field, static_cast<std::remove_reference_t<decltype(field)>>(v))
          << "attribute " << static_cast<int>(a);
    });
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
  // What fits on each GPU and its host link (issue 51).
  std::size_t fits = 0, links = 0;
  for (std::size_t at = r.find("  what fits: "); at != std::string::npos;
       at = r.find("  what fits: ", at + 1)) {
    ++fits;
  }
  for (std::size_t at = r.find("  host link: PCIe "); at != std::string::npos;
       at = r.find("  host link: PCIe ", at + 1)) {
    ++links;
  }
  EXPECT_EQ(fits, static_cast<std::size_t>(unimem::device_count())) << r;
  EXPECT_EQ(links, static_cast<std::size_t>(unimem::device_count())) << r;
}

// ---- the unified-memory regime ----

namespace {

using unimem::memory_regime;

// The attributes of one platform, in regime_attributes' order.
constexpr unimem::regime_attributes attributes(bool managed, bool concurrent, bool pageable,
                                               bool host_page_tables, bool integrated,
                                               bool needs_xnack, bool xnack) {
  unimem::regime_attributes a;
  a.managed_memory = managed;
  a.concurrent_managed_access = concurrent;
  a.pageable_memory_access = pageable;
  a.pageable_memory_access_uses_host_page_tables = host_page_tables;
  a.integrated = integrated;
  a.migration_needs_xnack = needs_xnack;
  a.xnack_enabled = xnack;
  return a;
}

constexpr memory_regime all_regimes[] = {
    memory_regime::discrete_migrating, memory_regime::hmm,          memory_regime::coherent,
    memory_regime::apu,                memory_regime::no_migration, memory_regime::no_managed_memory};

}  // namespace

// regime_of() is constexpr: the H200's regime is known at compile time.
static_assert(unimem::regime_of(attributes(true, true, false, false, false, false, false)) ==
                  memory_regime::discrete_migrating,
              "");
static_assert(noexcept(unimem::regime_of(unimem::regime_attributes{})), "");
// The capabilities are declared once: the properties and the regime's attributes both have them.
static_assert(std::is_base_of<unimem::memory_capabilities, unimem::device_properties>::value, "");
static_assert(std::is_base_of<unimem::memory_capabilities, unimem::regime_attributes>::value, "");
constexpr unimem::memory_capabilities gh200{true, true, true, true, false};
static_assert(unimem::regime_of(unimem::regime_attributes{gh200, false, false}) ==
                  memory_regime::coherent,
              "regime_attributes: a GPU's memory_capabilities, then XNACK");

// The property cache is filled from for_each_attribute: every field it names is a distinct
// field of device_properties read from a distinct attribute, and every memory capability is
// among them (a capability missing from the list would never be read).
TEST(Device, EachAttributeIsReadOnce) {
  using unimem::detail::backend::device_attribute;
  unimem::device_properties p;
  std::set<const void*> fields;
  std::set<int> attributes_read;
  int visited = 0;
  unimem::detail::for_each_attribute(p, [&](auto& field, device_attribute a) {
    ++visited;
    fields.insert(&field);
    attributes_read.insert(static_cast<int>(a));
    EXPECT_NE(a, device_attribute::compute_mode);  // read on each call, never cached
  });
  EXPECT_EQ(fields.size(), static_cast<std::size_t>(visited));
  EXPECT_EQ(attributes_read.size(), static_cast<std::size_t>(visited));
  const void* const read[] = {&p.managed_memory, &p.concurrent_managed_access,
                              &p.pageable_memory_access,
                              &p.pageable_memory_access_uses_host_page_tables, &p.integrated,
                              &p.warp_size, &p.multiprocessors, &p.max_threads_per_block,
                              &p.memory_bus_width_bits, &p.memory_clock_khz};
  for (const void* field : read) EXPECT_EQ(fields.count(field), 1u);
}

TEST(MemoryRegime, EachPlatformFromItsAttributes) {
  struct platform {
    const char* name;
    unimem::regime_attributes a;
    memory_regime expected;
    bool migrates;
  };
  //                     managed concurrent pageable host-pt integrated needs-xnack xnack
  const platform table[] = {
      {"H200, x86, no HMM (measured: Addressing Mode None, pageableMemoryAccess 0)",
       attributes(true, true, false, false, false, false, false), memory_regime::discrete_migrating,
       true},
      {"x86 + open kernel modules, CUDA >= 12.2 (HMM)",
       attributes(true, true, true, false, false, false, false), memory_regime::hmm, true},
      {"GH200 (ATS over NVLink-C2C)", attributes(true, true, true, true, false, false, false),
       memory_regime::coherent, true},
      {"Jetson Orin (integrated)", attributes(true, true, false, false, true, false, false),
       memory_regime::apu, true},
      {"MI300A, xnack-", attributes(true, true, false, false, true, true, false), memory_regime::apu,
       false},
      {"MI300A, xnack+ (HSA_XNACK=1)", attributes(true, true, true, false, true, true, true),
       memory_regime::apu, true},
      {"MI250X, xnack- (concurrent managed access 1 all the same)",
       attributes(true, true, false, false, false, true, false), memory_regime::no_migration,
       false},
      {"MI250X, xnack+ on an HMM kernel", attributes(true, true, true, false, false, true, true),
       memory_regime::hmm, true},
      {"AMD, xnack+ without pageable access", attributes(true, true, false, false, false, true, true),
       memory_regime::discrete_migrating, true},
      {"GeForce on Windows (no concurrent managed access)",
       attributes(true, false, false, false, false, false, false), memory_regime::no_migration,
       false},
      {"no managed memory", attributes(false, false, false, false, false, false, false),
       memory_regime::no_managed_memory, false},
      {"no managed memory, integrated", attributes(false, false, false, false, true, false, false),
       memory_regime::no_managed_memory, false},
  };
  for (const platform& p : table) {
    EXPECT_EQ(unimem::to_string(unimem::regime_of(p.a)), unimem::to_string(p.expected)) << p.name;
    EXPECT_EQ(p.a.migrates_on_demand(), p.migrates) << p.name;
  }
}

// migrates_on_demand and the regime never disagree: every regime that moves pages migrates, the
// regime that cannot does not (all 128 combinations of the attributes).
TEST(MemoryRegime, AgreesWithMigratesOnDemand) {
  int seen[6] = {};
  for (int bits = 0; bits < 128; ++bits) {
    const auto bit = [bits](int i) { return (bits >> i & 1) != 0; };
    const unimem::regime_attributes a =
        attributes(bit(0), bit(1), bit(2), bit(3), bit(4), bit(5), bit(6));
    const memory_regime r = unimem::regime_of(a);
    ++seen[static_cast<int>(r)];
    SCOPED_TRACE("attribute bits " + std::to_string(bits) + ": " + unimem::to_string(r));
    switch (r) {
      case memory_regime::discrete_migrating:
      case memory_regime::hmm:
      case memory_regime::coherent: EXPECT_TRUE(a.migrates_on_demand()); break;
      case memory_regime::no_migration: EXPECT_FALSE(a.migrates_on_demand()); break;
      case memory_regime::apu: EXPECT_TRUE(a.integrated && a.managed_memory); break;
      case memory_regime::no_managed_memory: EXPECT_FALSE(a.managed_memory); break;
    }
    if (r == memory_regime::coherent || r == memory_regime::hmm) {
      EXPECT_TRUE(a.pageable_memory_access);
    }
  }
  for (int i = 0; i < 6; ++i) EXPECT_GT(seen[i], 0) << "regime " << i << " never chosen";
}

TEST(MemoryRegime, NamesAndDescriptions) {
  static_assert(std::is_same<decltype(unimem::to_string(memory_regime::apu)), std::string>::value,
                "to_string returns a std::string, as for every other type");
  static_assert(noexcept(unimem::describe(memory_regime::apu)), "");
  std::set<std::string> names, descriptions;
  for (memory_regime r : all_regimes) {
    const std::string name = unimem::to_string(r);
    const std::string text = unimem::describe(r);
    SCOPED_TRACE(name);
    EXPECT_NE(name, "?");
    EXPECT_NE(text, "?");
    names.insert(name);
    descriptions.insert(text);
    // Three lines: what the regime is, what to allocate, what the hints do.
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
    EXPECT_NE(text.back(), '\n');
    EXPECT_NE(text.find("allocate"), std::string::npos) << text;
  }
  EXPECT_EQ(names.size(), std::size(all_regimes));
  const char* const spelled[] = {"discrete_migrating", "hmm", "coherent",
                                 "apu", "no_migration", "no_managed_memory"};
  for (std::size_t i = 0; i < std::size(all_regimes); ++i) {
    EXPECT_EQ(unimem::to_string(all_regimes[i]), spelled[i]);  // each name its enumerator's
  }
  EXPECT_NE(std::string(unimem::describe(memory_regime::coherent)).find("page tables"),
            std::string::npos);
  EXPECT_NE(std::string(unimem::describe(memory_regime::hmm)).find("HMM"), std::string::npos);
  EXPECT_NE(std::string(unimem::describe(memory_regime::no_managed_memory))
                .find("cannot allocate managed memory"),
            std::string::npos);
  EXPECT_EQ(unimem::to_string(static_cast<memory_regime>(6)), "?");
  EXPECT_STREQ(unimem::describe(static_cast<memory_regime>(-1)), "?");
  EXPECT_EQ(descriptions.size(), std::size(all_regimes));
  EXPECT_EQ(unimem::to_string(memory_regime::discrete_migrating), "discrete_migrating");
  EXPECT_EQ(unimem::to_string(memory_regime::coherent) + "!", "coherent!");
  EXPECT_NE(std::string(unimem::describe(memory_regime::apu)).find("not_needed"),
            std::string::npos);
  EXPECT_NE(std::string(unimem::describe(memory_regime::no_migration)).find("unsupported"),
            std::string::npos);
  EXPECT_EQ(unimem::device_properties{}.regime, memory_regime::no_managed_memory);
}

// The regime each GPU reports agrees with its attributes and is cached with them. On the H200
// (CUDA 13, x86, no HMM): discrete_migrating with concurrent managed access 1, pageable memory
// access 0, host page tables 0, integrated 0.
TEST(DeviceGpu, RegimeAgreesWithTheAttributes) {
  UNIMEM_REQUIRE_GPU();
  for (const unimem::device& d : unimem::devices()) {
    const unimem::device_properties p = d.properties();
    SCOPED_TRACE(std::string(p.name) + " " + p.architecture + ": " + unimem::to_string(p.regime));
    EXPECT_EQ(p.regime, d.regime());
    EXPECT_EQ(p.integrated, d.integrated());
    EXPECT_EQ(p.pageable_memory_access_uses_host_page_tables,
              d.pageable_memory_access_uses_host_page_tables());
    const unimem::regime_attributes a{
        p, unimem::detail::backend::migration_needs_xnack,
        std::string(p.architecture).find("xnack+") != std::string::npos};
    EXPECT_EQ(unimem::to_string(unimem::regime_of(a)), unimem::to_string(p.regime));
    EXPECT_EQ(a.migrates_on_demand(), p.migrates_on_demand);
    // ATS implies pageable access: no runtime reports the one without the other.
    if (p.pageable_memory_access_uses_host_page_tables) EXPECT_TRUE(p.pageable_memory_access);
    if (std::string(p.name).find("H200") != std::string::npos) {
      EXPECT_EQ(p.regime, memory_regime::discrete_migrating);
      EXPECT_TRUE(p.managed_memory);
      EXPECT_TRUE(p.concurrent_managed_access);
      EXPECT_FALSE(p.pageable_memory_access);
      EXPECT_FALSE(p.pageable_memory_access_uses_host_page_tables);
      EXPECT_FALSE(p.integrated);
      EXPECT_TRUE(p.migrates_on_demand);
    }
  }
  const std::string r = unimem::report();
  EXPECT_NE(r.find("unified-memory regime: " + unimem::to_string(unimem::device(0).regime())),
            std::string::npos)
      << r;
}
