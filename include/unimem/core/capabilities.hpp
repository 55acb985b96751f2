/// @file
/// @brief What a GPU can do with managed memory, as plain runtime-free values: memory_regime and
/// regime_of() (pure), memory_capabilities, compute_mode, device_properties (all unimem reads).
#pragma once

#include "config.hpp"

#include <cstddef>

UNIMEM_BEGIN_NAMESPACE

/// @brief Who may use a GPU (set by the administrator, e.g. nvidia-smi -c).
enum class compute_mode {
  shared,             ///< Any number of processes and threads (the usual mode).
  exclusive_thread,   ///< One thread at a time (deprecated by NVIDIA).
  prohibited,         ///< No process may use the device.
  exclusive_process,  ///< One process at a time.
};

/// @brief The unified-memory regime of a GPU: how managed and malloc'd memory behave there, which
/// decides what to allocate and which placement hints do anything. regime_of() derives it,
/// to_string() names it, describe() explains it; docs/pitfalls.md\#unified-memory-regimes.
enum class memory_regime {
  /// A discrete GPU whose managed pages migrate on demand, without access to pageable host
  /// memory (an H200 on x86 without HMM). Prefetch and advice move pages.
  discrete_migrating,
  /// HMM: managed pages migrate, and kernels may also use malloc'd memory, which the OS migrates
  /// or maps on fault (NVIDIA: CUDA >= 12.2, open kernel modules; AMD: XNACK on an HMM kernel).
  hmm,
  /// Hardware coherence through the host's page tables (ATS; Grace Hopper over NVLink-C2C):
  /// malloc'd memory is as usable by kernels as managed memory.
  coherent,
  /// One physical memory for the CPU and the GPU (MI300A, Jetson): nothing migrates; prefetch,
  /// preferred_location and read_mostly advice answer hint_status::not_needed.
  apu,
  /// Managed memory exists but its pages never move (AMD without XNACK, CUDA without concurrent
  /// managed access): prefetch and advice answer hint_status::unsupported.
  no_migration,
  no_managed_memory,  ///< The device cannot allocate managed memory at all.
};

/// @brief A GPU's managed-memory capabilities (base of device_properties, regime_attributes).
struct memory_capabilities {
  bool managed_memory = false;  ///< The device can allocate managed memory.
  /// @brief CPU and GPU may access managed memory concurrently. On NVIDIA this makes pages
  /// migrate; on AMD it reads 1 even where they never do (see migration_needs_xnack).
  bool concurrent_managed_access = false;
  bool pageable_memory_access = false;  ///< The GPU can access malloc'd host memory coherently.
  /// @brief ... and does so through the host's own page tables (ATS, Grace Hopper).
  bool pageable_memory_access_uses_host_page_tables = false;
  bool integrated = false;  ///< One physical memory with the host (MI300A, Jetson).
};

/// @brief What regime_of() derives memory_regime from (pure: testable without a GPU).
struct regime_attributes : memory_capabilities {
  /// @brief Managed pages migrate only with XNACK (page-fault retry): true on AMD.
  bool migration_needs_xnack = false;
  bool xnack_enabled = false;  ///< XNACK is on (AMD: xnack+ in the architecture, HSA_XNACK=1).
  /// @brief Managed pages migrate on touch: NVIDIA concurrent access; AMD pageable access or XNACK.
  [[nodiscard]] constexpr bool migrates_on_demand() const noexcept {
    return migration_needs_xnack ? (pageable_memory_access || xnack_enabled)
                                 : concurrent_managed_access;
  }
};

/// @brief The regime of a device with these attributes (no runtime call); integrated: always apu.
/// @code
///   unimem::regime_attributes h200;  // the H200: managed 1, concurrent 1, pageable 0
///   h200.managed_memory = h200.concurrent_managed_access = true;
///   assert(unimem::regime_of(h200) == unimem::memory_regime::discrete_migrating);
/// @endcode
[[nodiscard]] constexpr memory_regime regime_of(const regime_attributes& a) noexcept {
  if (!a.managed_memory) return memory_regime::no_managed_memory;
  if (a.integrated) return memory_regime::apu;
  if (!a.migrates_on_demand()) return memory_regime::no_migration;
  if (a.pageable_memory_access) {
    return a.pageable_memory_access_uses_host_page_tables ? memory_regime::coherent
                                                          : memory_regime::hmm;
  }
  return memory_regime::discrete_migrating;
}

/// @brief Everything unimem knows about one GPU, read at one moment.
struct device_properties : memory_capabilities {
  int device_id = 0;  ///< The device ordinal.
  /// @brief The marketing name, e.g. "NVIDIA H200", in a cache valid until the program ends.
  const char* name = "";
  /// @brief sm_90 on NVIDIA; the full target on AMD, e.g. gfx90a:sramecc+:xnack- (in the cache).
  const char* architecture = "";
  int compute_major = 0;  ///< The major compute capability (9 for sm_90).
  int compute_minor = 0;  ///< The minor compute capability (0 for sm_90).
  int warp_size = 0;  ///< Lanes per warp (wavefront): 32 on NVIDIA, 64 or 32 on AMD.
  int multiprocessors = 0;  ///< Multiprocessors (compute units on AMD).
  int max_threads_per_block = 0;  ///< The most threads one block may have.
  std::size_t total_memory = 0;  ///< Global memory in bytes.
  std::size_t free_memory = 0;  ///< Free global memory in bytes when the properties were read.
  /// @brief Managed pages migrate on touch; where false, prefetch and advice cannot move data.
  bool migrates_on_demand = false;
  /// @brief The unified-memory regime: regime_of() the memory_capabilities (and XNACK on AMD).
  memory_regime regime = memory_regime::no_managed_memory;
  /// @brief Who may use the device (read when the properties are read).
  unimem::compute_mode compute_mode = unimem::compute_mode::shared;
  int memory_bus_width_bits = 0;  ///< Memory bus width in bits (6144 on an H200, 8192 on MI300X).
  int memory_clock_khz = 0;  ///< The peak memory clock in kHz, as the runtime reports it.
  /// @brief The theoretical peak memory bandwidth in GB/s (10^9 B/s): 2 transfers per clock
  /// (DDR, HBM) * memory_clock_khz * memory_bus_width_bits / 8; 0 where either is unknown.
  [[nodiscard]] double peak_bandwidth_gbps() const noexcept {
    return 2.0 * memory_clock_khz * 1e3 * (memory_bus_width_bits / 8.0) / 1e9;
  }
};

UNIMEM_END_NAMESPACE
