/// @file
/// @brief What each memory_regime means: to_string() names it, describe() explains it for a
/// program (docs/pitfalls.md\#unified-memory-regimes).
#pragma once

#include "../core/capabilities.hpp"
#include "../core/config.hpp"

#include <cstddef>
#include <string>

UNIMEM_BEGIN_NAMESPACE

namespace detail {
/// Each regime's name and describe() text, in the enumerators' order.
struct regime_text {
  const char* name;
  const char* description;
};
inline constexpr regime_text regime_texts[] = {
    {"discrete_migrating",
     "managed pages migrate on demand between host memory and this GPU's own memory\n"
     "allocate managed memory (managed_buffer) for data both sides use; malloc'd memory is not "
     "reachable from kernels\n"
     "prefetch, advice and access tags move pages ahead of the faults: use them"},
    {"hmm",
     "managed pages migrate on demand, and kernels may use malloc'd memory too (HMM: the OS "
     "migrates or maps it on fault)\n"
     "allocate managed memory for data the GPU works on; malloc'd memory works in kernels, each "
     "first touch a fault\n"
     "prefetch, advice and access tags apply to managed memory as on a discrete GPU"},
    {"coherent",
     "the GPU reads and writes host memory coherently through the host's page tables (ATS, e.g. "
     "Grace Hopper)\n"
     "allocate as you like: malloc'd memory works in kernels as it is; managed memory still "
     "moves to the GPU's memory where prefetched\n"
     "prefetch and preferred_location advice move pages; accessed_by sets up mappings"},
    {"apu",
     "CPU and GPU share one physical memory (an APU: MI300A, Jetson): nothing migrates\n"
     "allocate managed memory (on MI300A device memory is host-readable too); malloc'd memory "
     "reaches an AMD GPU only with HSA_XNACK=1\n"
     "prefetch, preferred_location and read_mostly advice are no-ops: hint_status::not_needed; "
     "accessed_by is passed on"},
    {"no_migration",
     "managed memory exists but its pages never move (AMD without XNACK, or no concurrent "
     "managed access)\n"
     "for data kernels use heavily allocate device memory (device_buffer) and copy; on AMD, "
     "HSA_XNACK=1 turns migration on where the GPU supports it\n"
     "prefetch and advice cannot move pages: hint_status::unsupported (see "
     "unimem::unsupported_policy)"},
    {"no_managed_memory",
     "the device cannot allocate managed memory: managed_buffer throws unimem::error\n"
     "allocate device memory (device_buffer) and pinned host memory, and copy\n"
     "no placement hint applies"},
};
static_assert(sizeof regime_texts / sizeof regime_texts[0] ==
                  static_cast<std::size_t>(memory_regime::no_managed_memory) + 1,
              "one text per memory_regime");
constexpr regime_text text_of(memory_regime r) noexcept {
  const auto i = static_cast<std::size_t>(r);
  return i <= static_cast<std::size_t>(memory_regime::no_managed_memory) ? regime_texts[i]
                                                                          : regime_text{"?", "?"};
}
}  // namespace detail

/// @brief The enumerator's name, e.g. "discrete_migrating".
inline std::string to_string(memory_regime r) { return detail::text_of(r).name; }

/// @brief What the regime means for a program, in three lines separated by '\n' (no final
/// one): what it is, which memory to allocate, which placement hints do anything.
[[nodiscard]] inline const char* describe(memory_regime r) noexcept {
  return detail::text_of(r).description;
}

UNIMEM_END_NAMESPACE
