// Shared helpers for unimem's tests (written once, built for every toolchain).
#pragma once

#include <unimem/unimem.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

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

/// For the scope, placement decides for device `id` by what the test says, not what the device
/// is: the property cache's placement view (core/detail/property_cache.hpp), which only tests
/// change; device(id)'s properties stay real. The real answer after the scope.
class pretend_placement {
 public:
  explicit pretend_placement(int id)
      : entry_(const_cast<unimem::detail::cached_device&>(
            unimem::detail::cached_entry(id, unimem::call_site::current()))),
        saved_migrates_(entry_.placement.migrates),
        saved_regime_(entry_.placement.regime) {}
  ~pretend_placement() {
    entry_.placement.migrates = saved_migrates_;
    entry_.placement.regime = saved_regime_;
  }
  pretend_placement(const pretend_placement&) = delete;
  pretend_placement& operator=(const pretend_placement&) = delete;

 protected:
  unimem::detail::cached_device& entry_;

 private:
  bool saved_migrates_;
  unimem::memory_regime saved_regime_;
};

/// Pretends device `id` cannot migrate managed pages for the scope.
struct pretend_no_migration : pretend_placement {
  explicit pretend_no_migration(int id) : pretend_placement(id) {
    entry_.placement.migrates = false;
  }
};

/// Pretends device `id` is in unified-memory regime r for the scope (placement answers as it
/// would there; migration follows the regime, an APU leaves it).
struct pretend_regime : pretend_placement {
  pretend_regime(int id, unimem::memory_regime r) : pretend_placement(id) {
    entry_.placement.regime = r;
    using m = unimem::memory_regime;
    if (r == m::no_migration || r == m::no_managed_memory) entry_.placement.migrates = false;
    if (r == m::discrete_migrating || r == m::hmm || r == m::coherent) {
      entry_.placement.migrates = true;
    }
  }
};

/// Runs attempt() until one run left the host-access log as it found it (no entry added from
/// start to end), and returns that run's verdict (false, with a failure, when none of 10 was
/// quiet). Where the log learns from the process's page-fault count (signal page_faults), a
/// fault anywhere makes every placement record stop holding by design
/// (detail/host_access.hpp), so only a quiet run shows what the records decide; a run another
/// fault disturbed (a lazy allocation, a new thread's stack) says nothing.
template <class F>
bool in_a_quiet_run(F&& attempt) {
  for (int i = 0; i < 10; ++i) {
    const std::uint64_t e0 = unimem::detail::host_access::now();
    const bool verdict = attempt();
    if (unimem::detail::host_access::now() == e0) return verdict;
  }
  ADD_FAILURE() << "no run of 10 left the host-access log as it was";
  return false;
}

/// The 4 KiB pages of [p, p + bytes) that the CPU holds mapped now (mincore: exact on managed
/// memory, 0 after a prefetch to a GPU, the pages of a CPU fault after one), or -1 where mincore
/// is not available.
inline long cpu_resident_pages(const void* p, std::size_t bytes) {
#if defined(__linux__)
  const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p) & ~(page - 1);
  const std::uintptr_t hi = reinterpret_cast<std::uintptr_t>(p) + bytes;
  std::vector<unsigned char> v((hi - lo + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(lo), hi - lo, v.data()) != 0) return -1;
  long n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
#else
  (void)p;
  (void)bytes;
  return -1;
#endif
}

/// Whether the process learns host touches from the UVM driver's CPU-fault events (NVIDIA);
/// else from its page-fault count (detail/host_access.hpp).
inline bool host_access_is_exact() {
  (void)unimem::detail::host_access::now();  // decided
  return unimem::detail::host_access::source() ==
         unimem::detail::host_access::signal::uvm_events;
}

/// Faults `pages` fresh 4 KiB pages of ordinary memory on the calling thread: a region mapped
/// for the call, each page written, then unmapped, so that every page is a page fault of the
/// process that has nothing to do with unimem's buffers. False when no memory was mapped.
/// Without mmap, a std::vector touched page by page (whose pages the allocator may reuse).
inline bool fault_fresh_memory(std::size_t pages) {
  constexpr std::size_t page = 4096;
  const std::size_t bytes = pages * page;
#if defined(__linux__)
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  for (std::size_t i = 0; i < bytes; i += page) static_cast<volatile char*>(p)[i] = 1;
  munmap(p, bytes);
#else
  std::vector<char> fresh(bytes);
  for (std::size_t i = 0; i < bytes; i += page) static_cast<volatile char*>(fresh.data())[i] = 1;
#endif
  return true;
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
