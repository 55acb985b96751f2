// Shared helpers for unimem's tests (written once, built for every toolchain).
#pragma once

#include <unimem/unimem.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace unimem_test {

inline bool has_gpu() { return unimem::device_count() > 0; }

/// ctest sets this when it hides every GPU (CUDA_VISIBLE_DEVICES=-1, HIP_VISIBLE_DEVICES=-1):
/// the no-GPU tests must then run, not skip.
inline bool expect_no_gpu() {
  const char* v = std::getenv("UNIMEM_TEST_EXPECT_NO_GPU");
  return v != nullptr && std::string(v) == "1";
}

/// Whether accessed_by() (a std::vector of locations) lists `l`.
inline bool lists(const unimem::location_list& by, unimem::location l) {
  return std::find(by.begin(), by.end(), l) != by.end();
}

/// Pretends device `id` cannot migrate managed pages for the scope (the real answer after it).
struct pretend_no_migration {
  explicit pretend_no_migration(int id) : id_(id) {
    unimem::detail::set_migration_capability_for_testing(id_, 0);
  }
  ~pretend_no_migration() { unimem::detail::set_migration_capability_for_testing(id_, -1); }
  pretend_no_migration(const pretend_no_migration&) = delete;
  pretend_no_migration& operator=(const pretend_no_migration&) = delete;
  int id_;
};

/// Pretends device `id` is in unified-memory regime r for the scope (placement answers as it
/// would there); the real regime after it.
struct pretend_regime {
  pretend_regime(int id, unimem::memory_regime r) : id_(id) {
    unimem::detail::set_regime_for_testing(id_, r);
  }
  ~pretend_regime() { unimem::detail::forget_regime_for_testing(id_); }
  pretend_regime(const pretend_regime&) = delete;
  pretend_regime& operator=(const pretend_regime&) = delete;
  int id_;
};

/// Runs attempt() until one run took no page fault in the process from start to end, and returns
/// that run's verdict (false, with a failure, when none of 10 was quiet). A fault anywhere makes
/// every placement record stop holding by design (detail/placement_record.hpp), so only a quiet
/// run shows what the records decide; a run another fault disturbed (a lazy allocation, a new
/// thread's stack) says nothing.
template <class F>
bool in_a_quiet_run(F&& attempt) {
  for (int i = 0; i < 10; ++i) {
    const std::uint64_t f0 = unimem::detail::host_faults();
    const bool verdict = attempt();
    if (unimem::detail::host_faults() == f0) return verdict;
  }
  ADD_FAILURE() << "no run of 10 was free of page faults";
  return false;
}

}  // namespace unimem_test

/// Skips the current test, with the reason, on a machine without a GPU.
#define UNIMEM_REQUIRE_GPU()                                                              \
  do {                                                                                    \
    if (!::unimem_test::has_gpu())                                                        \
      GTEST_SKIP() << "no GPU: unimem::device_count() == 0 (" << unimem::backend_name() \
                   << ")";                                                                \
  } while (0)

/// Skips the current test when a GPU is visible, unless ctest asked for the no-GPU path.
#define UNIMEM_REQUIRE_NO_GPU()                                                              \
  do {                                                                                       \
    if (::unimem_test::has_gpu()) {                                                          \
      ASSERT_FALSE(::unimem_test::expect_no_gpu())                                           \
          << "UNIMEM_TEST_EXPECT_NO_GPU=1 but device_count() = " << unimem::device_count(); \
      GTEST_SKIP() << "a GPU is visible; ctest runs these tests again with every GPU hidden"; \
    }                                                                                        \
  } while (0)
