/// @file
/// @brief GPUs: device_count(), device, device_properties (read once per device and cached),
/// memory_regime, device_guard, pick_device(), synchronize(_all_devices)(), versions, report().
#pragma once

#include "config.hpp"
#include "detail/atomic.hpp"
#include "detail/backend/backend.hpp"
#include "detail/host_access.hpp"
#include "error.hpp"
#include "location.hpp"
#include "version.hpp"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

UNIMEM_BEGIN_NAMESPACE
/// @brief The number of GPUs the runtime sees.
/// @return 0, not an error, when the machine has no GPU or no driver.
/// @throws unimem::error when the runtime fails for another reason.
inline int device_count(call_site where = call_site::current()) {
  int n = 0;
  const detail::backend::result r = detail::backend::device_count(&n);
  if (r.code == detail::backend::success) return n;
  if (detail::backend::means_no_gpu(r.code)) {
    (void)detail::backend::take_last_error();
    return 0;
  }
  detail::throw_error(r, where);
}

namespace detail {
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_invalid_device(
    int id, int count, const char* call, const char* id_prefix, call_site where)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  fixed_text<128> call_text(call);
  if (id_prefix != nullptr) call_text.append("(").append(id_prefix).append(id).append(")");
  fixed_text<64> context("device_count() is ");
  context.append(count);
  throw runtime_error(backend::error_invalid_device, call_text.c_str(), where.file, where.line,
                      context.c_str(), count == 0);
}
#else
    ;
#endif
/// Throws unimem::error (invalid device) unless 0 <= id < device_count(), naming `call`, or
/// `call(<id_prefix><id>)` with an id_prefix (e.g. "unimem::prefetch(device 7)").
inline void require_device(int id, const char* call, call_site where,
                           const char* id_prefix = nullptr) {
  const int n = device_count(where);
  if (id < 0 || id >= n) throw_invalid_device(id, n, call, id_prefix, where);
}
inline int current_device_id(call_site where) {
  int id = 0;
  check(backend::get_device(&id), where);
  return id;
}
}  // namespace detail

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

/// @brief A GPU's managed-memory capabilities as the runtime reports them (the base of
/// device_properties and of regime_attributes).
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

/// @brief The regime of a device with these attributes (no runtime call); an integrated GPU is
/// apu whatever XNACK says.
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

namespace detail {
/// The properties read from device attributes: a capability more is one field, one line here.
template <class F>
void for_each_attribute(device_properties& p, F&& f) {
  using a = backend::device_attribute;
  f(p.warp_size, a::warp_size);
  f(p.multiprocessors, a::multiprocessors);
  f(p.max_threads_per_block, a::max_threads_per_block);
  f(p.managed_memory, a::managed_memory);
  f(p.concurrent_managed_access, a::concurrent_managed_access);
  f(p.pageable_memory_access, a::pageable_memory_access);
  f(p.pageable_memory_access_uses_host_page_tables,
    a::pageable_memory_access_uses_host_page_tables);
  f(p.integrated, a::integrated);
  f(p.memory_clock_khz, a::memory_clock_khz);
  f(p.memory_bus_width_bits, a::memory_bus_width_bits);
}

/// A device's unchanging properties, read on first use (a query costs microseconds to ms).
/// Never copied nor freed: name and architecture point into `native` and are handed out.
struct cached_device {
  cached_device(int device, call_site where) : id(device) {
    check(backend::get_properties(native, device), where);
    for_each_attribute(properties, [&](auto& field, backend::device_attribute a) {
      int v = 0;
      check(backend::get_attribute(&v, a, device), where);
      field = static_cast<std::remove_reference_t<decltype(field)>>(v);
    });
    properties.device_id = device;
    properties.name = native.name;
    properties.architecture = native.architecture;
    properties.compute_major = native.major;
    properties.compute_minor = native.minor;
    properties.total_memory = native.total_memory;
    const regime_attributes a{properties, backend::migration_needs_xnack,
                              backend::xnack_enabled(native)};
    properties.migrates_on_demand = a.migrates_on_demand();
    properties.regime = regime_of(a);
  }
  cached_device(const cached_device&) = delete;
  cached_device& operator=(const cached_device&) = delete;

  backend::native_properties native;
  device_properties properties;
  int id;
  const cached_device* next = nullptr;  // the next device in the same list
};

/// Devices below this ordinal have a list of their own; the others share overflow_cache's.
constexpr int cached_devices = 64;
/// The lock-free lists; entries live as long as the process (late destructors may still ask).
inline atomic_cell<const cached_device*>* property_cache() noexcept {
  static atomic_cell<const cached_device*> slots[cached_devices];
  return slots;
}
inline atomic_cell<const cached_device*>& overflow_cache() noexcept {
  static atomic_cell<const cached_device*> head;
  return head;
}

/// The cached properties of device `id` (which must exist).
UNIMEM_DETAIL_OUTLINE const device_properties& cached_properties(int id, call_site where)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  atomic_cell<const cached_device*>& head =
      id >= 0 && id < cached_devices ? property_cache()[id] : overflow_cache();
  const cached_device* first = head.load();
  for (const cached_device* c = first; c != nullptr; c = c->next) {
    if (c->id == id) return c->properties;
  }
  // First use: read (a failure throws, publishing nothing), then publish; of racing threads the
  // first to publish wins and the others drop their identical copies.
  cached_device* fresh = new cached_device(id, where);
  for (fresh->next = first; !head.compare_exchange(first, fresh); fresh->next = first) {
    for (const cached_device* c = first; c != fresh->next; c = c->next) {  // what came since
      if (c->id == id) {
        delete fresh;
        return c->properties;
      }
    }
  }
  return fresh->properties;
}
#else
    ;
#endif

/// Test hooks per device below cached_devices, kept as value + 1 (0: the real answer).
/// set_migration_capability_for_testing(id, 1/0/-1): can, cannot migrate / forget.
/// set_regime_for_testing(id, r): placement answers as in regime r (device::regime() stays real)
/// until forget_regime_for_testing(id); that also sets device_migrates() (apu leaves it).
inline atomic_cell<signed char>* migration_overrides() noexcept {
  static atomic_cell<signed char> values[cached_devices];
  return values;
}
inline atomic_cell<signed char>* regime_overrides() noexcept {
  static atomic_cell<signed char> values[cached_devices];
  return values;
}
inline void store_override(atomic_cell<signed char>* cells, int id, int value) noexcept {
  if (id >= 0 && id < cached_devices) cells[id].store(static_cast<signed char>(value));
}
inline int override_value(atomic_cell<signed char>* cells, int id) noexcept {
  return id >= 0 && id < cached_devices ? cells[id].load() : 0;
}
inline void set_migration_capability_for_testing(int id, int value) noexcept {
  store_override(migration_overrides(), id, value < 0 ? 0 : value + 1);
}
inline void set_regime_for_testing(int id, memory_regime r) noexcept {
  store_override(regime_overrides(), id, static_cast<int>(r) + 1);
}
inline void forget_regime_for_testing(int id) noexcept {
  store_override(regime_overrides(), id, 0);
}

/// Whether device `id` migrates managed pages on demand (cached; the test hooks win).
inline bool device_migrates(int id, call_site where) {
  const int pretended = override_value(migration_overrides(), id);
  if (pretended != 0) return pretended == 2;
  switch (static_cast<memory_regime>(override_value(regime_overrides(), id) - 1)) {
    case memory_regime::no_migration:
    case memory_regime::no_managed_memory: return false;
    case memory_regime::discrete_migrating:
    case memory_regime::hmm:
    case memory_regime::coherent: return true;
    default: return cached_properties(id, where).migrates_on_demand;  // apu, or no pretence
  }
}

/// The regime placement decides by for device `id` (cached; the test hook wins).
inline memory_regime device_regime(int id, call_site where) {
  const int pretended = override_value(regime_overrides(), id);
  return pretended != 0 ? static_cast<memory_regime>(pretended - 1)
                        : cached_properties(id, where).regime;
}
}  // namespace detail

/// @brief A GPU, by ordinal; cheap to copy, holds no runtime resources. Accessors read the cached
/// device_properties; free_memory() and compute_mode() are read on each call.
class device {
 public:
  /// @brief The GPU with ordinal `id`.
  /// @throws unimem::error (invalid device) unless 0 <= id < device_count().
  explicit device(int id, call_site where = call_site::current()) : id_(id) {
    detail::require_device(id, "unimem::device", where, "");
  }

  /// @brief The calling thread's current device.
  static device current(call_site where = call_site::current()) {
    return device(detail::current_device_id(where), unchecked{});
  }

  /// @brief The ordinal.
  [[nodiscard]] int device_id() const noexcept { return id_; }

  /// @brief The marketing name, e.g. "NVIDIA H200" (see device_properties::name).
  [[nodiscard]] const char* name(call_site where = call_site::current()) const {
    return cached(where).name; }
  /// @brief sm_90 on NVIDIA; the full target on AMD, e.g. gfx90a:sramecc+:xnack-.
  [[nodiscard]] const char* architecture(call_site where = call_site::current()) const {
    return cached(where).architecture; }
  /// @brief Global memory in bytes.
  [[nodiscard]] std::size_t total_memory(call_site where = call_site::current()) const {
    return cached(where).total_memory; }
  /// @brief Free memory now, as the runtime reports it (creates the device's context).
  [[nodiscard]] std::size_t free_memory(call_site where = call_site::current()) const;

  /// @brief Lanes per warp (wavefront): 32 on NVIDIA, 64 or 32 on AMD.
  [[nodiscard]] int warp_size(call_site where = call_site::current()) const {
    return cached(where).warp_size; }
  /// @brief Multiprocessors (compute units on AMD).
  [[nodiscard]] int multiprocessors(call_site where = call_site::current()) const {
    return cached(where).multiprocessors; }
  /// @brief The most threads one block may have.
  [[nodiscard]] int max_threads_per_block(call_site where = call_site::current()) const {
    return cached(where).max_threads_per_block; }
  /// @brief The device can allocate managed memory.
  [[nodiscard]] bool managed_memory(call_site where = call_site::current()) const {
    return cached(where).managed_memory; }
  /// @brief The runtime reports concurrent managed access (see memory_capabilities).
  [[nodiscard]] bool concurrent_managed_access(call_site where = call_site::current()) const {
    return cached(where).concurrent_managed_access; }
  /// @brief The GPU can access pageable host memory coherently.
  [[nodiscard]] bool pageable_memory_access(call_site where = call_site::current()) const {
    return cached(where).pageable_memory_access; }
  /// @brief The GPU accesses pageable host memory through the host's page tables (ATS).
  [[nodiscard]] bool pageable_memory_access_uses_host_page_tables(
      call_site where = call_site::current()) const {
    return cached(where).pageable_memory_access_uses_host_page_tables; }
  /// @brief The GPU is integrated: one physical memory with the host.
  [[nodiscard]] bool integrated(call_site where = call_site::current()) const {
    return cached(where).integrated; }
  /// @brief Whether managed pages migrate to this GPU on access (see device_properties).
  [[nodiscard]] bool migrates_on_demand(call_site where = call_site::current()) const {
    return cached(where).migrates_on_demand; }
  /// @brief The unified-memory regime (see to_string(), describe()).
  [[nodiscard]] memory_regime regime(call_site where = call_site::current()) const {
    return cached(where).regime; }
  /// @brief The global memory bus width in bits.
  [[nodiscard]] int memory_bus_width_bits(call_site where = call_site::current()) const {
    return cached(where).memory_bus_width_bits; }
  /// @brief The peak memory clock in kHz.
  [[nodiscard]] int memory_clock_khz(call_site where = call_site::current()) const {
    return cached(where).memory_clock_khz; }
  /// @brief Who may use the device now (read on each call: an administrator may change it).
  [[nodiscard]] unimem::compute_mode compute_mode(call_site where = call_site::current()) const {
    using detail::backend::device_attribute;
    int v = 0;  // the runtimes number the modes as compute_mode's enumerators
    detail::check(detail::backend::get_attribute(&v, device_attribute::compute_mode, id_), where);
    return v >= 1 && v <= 3 ? static_cast<unimem::compute_mode>(v) : unimem::compute_mode::shared;
  }

  /// @brief All properties at once: the cached ones, free_memory() and compute_mode().
  [[nodiscard]] device_properties properties(call_site where = call_site::current()) const {
    device_properties p = cached(where);
    p.free_memory = free_memory(where);
    p.compute_mode = compute_mode(where);
    return p;
  }

  /// @brief Makes this the calling thread's current device.
  void make_current(call_site where = call_site::current()) const {
    detail::check(detail::backend::set_device(id_), where);
  }

  /// @brief Waits for all work on this device.
  void synchronize(call_site where = call_site::current()) const;

  /// @brief Same ordinal.
  friend bool operator==(const device& a, const device& b) noexcept { return a.id_ == b.id_; }
  /// @brief Different ordinals.
  friend bool operator!=(const device& a, const device& b) noexcept { return a.id_ != b.id_; }

 private:
  friend std::vector<device> devices(call_site);
  struct unchecked {};
  device(int id, unchecked) noexcept : id_(id) {}

  const device_properties& cached(call_site where) const {
    return detail::cached_properties(id_, where);
  }

  int id_;
};

namespace detail {
/// Makes a device current again at the end of a scope, ignoring a failure; nothing until armed.
class device_restore {
 public:
  device_restore() noexcept = default;
  device_restore(const device_restore&) = delete;
  device_restore& operator=(const device_restore&) = delete;
  ~device_restore() {
    if (id_ != no_device) (void)backend::set_device(id_);
  }
  void arm(int id) noexcept { id_ = id; }

 private:
  int id_ = no_device;
};
}  // namespace detail

/// @brief Makes a device current for a scope and restores the previous one on exit.
/// @code
///   { unimem::device_guard g(1); unimem::launch(k, cfg, a); }  // runs on GPU 1
/// @endcode
class device_guard {
 public:
  /// @brief Makes d current until the end of the scope.
  explicit device_guard(const device& d, call_site where = call_site::current()) {
    int previous = 0;
    detail::check(detail::backend::get_device(&previous), where);
    restore_.arm(previous);  // also when d is current: the scope may change the device
    if (previous != d.device_id()) detail::check(detail::backend::set_device(d.device_id()), where);
  }
  /// @brief Makes device `id` current until the end of the scope.
  /// @throws unimem::error for an invalid id.
  explicit device_guard(int id, call_site where = call_site::current())
      : device_guard(device(id, where), where) {}
  device_guard(const device_guard&) = delete;  ///< Not copyable: it restores the device once.
  device_guard& operator=(const device_guard&) = delete;  ///< Not copyable.
  /// @brief Makes the previous device current again; never throws (a failure is ignored).
  ~device_guard() = default;

 private:
  detail::device_restore restore_;
};

inline std::size_t device::free_memory(call_site where) const {
  device_guard g(*this, where);
  std::size_t free = 0, total = 0;
  detail::check(detail::backend::mem_get_info(&free, &total), where);
  return free;
}

inline void device::synchronize(call_site where) const {
  device_guard g(*this, where);
  detail::check(detail::backend::device_synchronize(), where);
}

/// @brief What pick_device() maximises.
enum class device_criterion {
  /// The most multiprocessors, then the most memory: the fastest GPU for compute-bound work
  /// among mixed GPUs (the samples' findCudaDevice).
  most_multiprocessors,
  most_memory,       ///< The most global memory, then the most multiprocessors.
  most_free_memory,  ///< The most free memory now (a shared machine), then multiprocessors.
};

/// @brief The best usable device by `criterion` (prohibited ones skipped, ties to the lowest
/// ordinal). It does not make it current: `unimem::pick_device().make_current();`.
/// @throws unimem::error (no device) when there is no usable GPU.
inline device pick_device(device_criterion criterion = device_criterion::most_multiprocessors,
                          call_site where = call_site::current()) {
  const int n = device_count(where);
  int best = no_device;
  std::pair<std::size_t, std::size_t> best_key;  // compared as (first, then second)
  for (int id = 0; id < n; ++id) {
    const device d(id, where);
    if (d.compute_mode(where) == compute_mode::prohibited) continue;
    const auto sms = static_cast<std::size_t>(d.multiprocessors());
    std::pair<std::size_t, std::size_t> key(sms, d.total_memory());  // most_multiprocessors
    if (criterion == device_criterion::most_memory) key = {d.total_memory(), sms};
    if (criterion == device_criterion::most_free_memory) key = {d.free_memory(where), sms};
    if (best == no_device || key > best_key) {
      best = id;
      best_key = key;
    }
  }
  if (best == no_device) {
    detail::fixed_text<96> context(n == 0 ? "device_count() is 0" : "all ");
    if (n != 0) context.append(n).append(" devices are in compute mode prohibited");
    throw runtime_error(detail::backend::error_invalid_device, "unimem::pick_device", where.file,
                        where.line, context.c_str(), n == 0);
  }
  return device(best, where);
}

/// @brief All GPUs the runtime sees, in ordinal order (empty without a GPU).
/// @code
///   for (const unimem::device& d : unimem::devices()) std::printf("%s\n", d.name());
/// @endcode
inline std::vector<device> devices(call_site where = call_site::current()) {
  const int n = device_count(where);
  std::vector<device> all;
  all.reserve(static_cast<std::size_t>(n));
  for (int id = 0; id < n; ++id) all.push_back(device(id, device::unchecked{}));
  return all;
}


/// @brief Waits for all work on the calling thread's current device.
/// @throws unimem::error carrying any asynchronous kernel error.
inline void synchronize(call_site where = call_site::current()) {
  detail::check(detail::backend::device_synchronize(), where);
}

/// @brief Waits for all work on the current device and each with a context; unused ones are not
/// initialised (on NVIDIA that costs time and GPU memory on every rank of a multi-GPU job), save
/// where the runtime cannot tell (AMD). The current device stays.
/// @throws unimem::error carrying any asynchronous kernel error.
inline void synchronize_all_devices(call_site where = call_site::current()) {
  const int n = device_count(where);
  if (n == 0) return;
  const int current = detail::current_device_id(where);
  for (int id = 0; id < n; ++id) {
    if (id != current && detail::backend::context_active(id) == 0) continue;
    device(id, where).synchronize(where);
  }
}

/// @brief The name of the backend unimem was compiled for: "CUDA", "HIP (AMD)", "HIP (NVIDIA)".
inline const char* backend_name() noexcept { return detail::backend::name(); }

namespace detail {
/// The version the runtime (or, with `driver`, the driver) reports, as text.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE std::string version_text(bool driver)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  int v = 0;
  const backend::result r = driver ? backend::driver_version(&v) : backend::runtime_version(&v);
  if (r.code == backend::success && v > 0) return backend::version_string(v).c_str();
  backend::forget_if_last(r.code);
  return driver ? "none" : backend::version_string(backend::linked_runtime_version()).c_str();
}
#else
    ;
#endif
}  // namespace detail

/// @brief The runtime's version, e.g. "13.0" or "6.2.41133" (the CUDA runtime's under HIP on
/// NVIDIA); where it cannot be asked (CUDA 11 without a driver or GPU), the linked runtime's.
inline std::string runtime_version() { return detail::version_text(false); }

/// @brief The driver's version, or "none" when no driver is installed.
inline std::string driver_version() { return detail::version_text(true); }

/// @brief A text report of the backend, versions and every GPU with its managed-memory
/// capabilities and memory bus; with no GPU, one line saying so and why.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE std::string report()
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  std::string s("unimem " UNIMEM_VERSION_STRING ", backend ");
  s.append(backend_name()).append(" (headers ").append(detail::backend::compiled_version().c_str());
  s.append("), runtime ").append(runtime_version()).append(", driver ").append(driver_version());
  s.append("\n");
  int raw = 0;
  const detail::backend::result r = detail::backend::device_count(&raw);
  const int n = device_count();
  if (n == 0) {
    s.append("no GPU was found");
    if (r.code != detail::backend::success) {
      const char* name = detail::backend::error_name(r.code);
      const char* what = detail::backend::error_string(r.code);
      s.append(" (").append(r.call).append(": ").append(name);
      if (std::strcmp(name, what) != 0) s.append(": ").append(what);
      s.append(")");
    }
    return s.append("\n").append(detail::host_access::describe().text);
  }
  constexpr double gib = 1024.0 * 1024 * 1024;
  const auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  for (int i = 0; i < n; ++i) {
    const device_properties p = device(i).properties();
    char text[1024];  // name and architecture are at most 255 characters each
    std::snprintf(text, sizeof text,
                  "device %d: %s, %s, %d multiprocessors, warp size %d, memory %.1f GiB free of "
                  "%.1f GiB\n  memory bus: %d bits at %d kHz, peak bandwidth %.1f GB/s\n"
                  "  managed memory: %s, concurrent managed access: %s, pageable memory access: "
                  "%s, migrates on demand: %s\n  unified-memory regime: %s (uses host page "
                  "tables: %s, integrated: %s)\n",
                  i, p.name, p.architecture, p.multiprocessors, p.warp_size,
                  static_cast<double>(p.free_memory) / gib,
                  static_cast<double>(p.total_memory) / gib,
                  p.memory_bus_width_bits, p.memory_clock_khz, p.peak_bandwidth_gbps(),
                  yes_no(p.managed_memory), yes_no(p.concurrent_managed_access),
                  yes_no(p.pageable_memory_access), yes_no(p.migrates_on_demand),
                  detail::text_of(p.regime).name,
                  yes_no(p.pageable_memory_access_uses_host_page_tables), yes_no(p.integrated));
    s.append(text);
  }
  s.append(detail::host_access::describe().text);
  return s;
}
#else
    ;
#endif
UNIMEM_END_NAMESPACE
