/// @file
/// @brief GPUs: device_count(), device (its properties read once and cached), device_guard,
/// synchronize(), synchronize_all_devices(), backend_name().
#pragma once

#include "capabilities.hpp"
#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/backend/device.hpp"
#include "detail/property_cache.hpp"
#include "device_count.hpp"
#include "error.hpp"

#include <cstddef>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
struct unchecked_id {};  ///< device(id, unchecked_id{}): an id known to be valid
/// The cached properties of device `id` (which must exist).
inline const device_properties& cached_properties(int id, call_site where) {
  return cached_entry(id, where).properties;
}
/// Whether placement may move pages for device `id`: it migrates them on demand (cached).
inline bool device_migrates(int id, call_site where) {
  return cached_entry(id, where).placement.migrates;
}
/// The unified-memory regime placement decides by for device `id` (cached).
inline memory_regime device_regime(int id, call_site where) {
  return cached_entry(id, where).placement.regime;
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

  /// @brief Device `id`, not checked (unimem's own use, where the id is known to be valid).
  device(int id, detail::unchecked_id) noexcept : id_(id) {}

  /// @brief The calling thread's current device.
  static device current(call_site where = call_site::current()) {
    return device(detail::current_device_id(where), detail::unchecked_id{});
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

  const device_properties& cached(call_site where) const {
    return detail::cached_properties(id_, where);
  }

  int id_;
};


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


UNIMEM_END_NAMESPACE
