// unimem: GPUs, their managed-memory capabilities, and a one-call report.
#pragma once

#include "detail/backend.hpp"
#include "error.hpp"
#include "version.hpp"

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

UNIMEM_BEGIN_NAMESPACE

/// @brief The number of GPUs the runtime sees.
/// @return 0, not an error, when the machine has no GPU or no driver.
/// @throws unimem::error when the runtime fails for another reason.
inline int device_count() {
  int n = 0;
  const detail::backend::result r = detail::backend::device_count(&n);
  if (r.code == detail::backend::success) return n;
  if (detail::backend::means_no_gpu(r.code)) {
    (void)detail::backend::take_last_error();
    return 0;
  }
  detail::throw_error(r, __FILE__, __LINE__);
}

namespace detail {
/// Throws unimem::error (invalid device) naming `call` unless 0 <= id < device_count().
inline void require_device(int id, const std::string& call) {
  const int n = device_count();
  if (id < 0 || id >= n) {
    throw error(backend::error_invalid_device, call, __FILE__, __LINE__,
                "device_count() is " + std::to_string(n), n == 0);
  }
}
}  // namespace detail

/// @brief Everything unimem knows about one GPU, read at one moment.
struct device_properties {
  int id = 0;
  std::string name;
  /// sm_90 on NVIDIA; the full target on AMD, e.g. gfx90a:sramecc+:xnack-.
  std::string architecture;
  int compute_major = 0;
  int compute_minor = 0;
  int warp_size = 0;
  int multiprocessors = 0;
  int max_threads_per_block = 0;
  std::size_t total_memory = 0;
  std::size_t free_memory = 0;
  /// The device can allocate managed memory.
  bool managed_memory = false;
  /// The runtime reports that CPU and GPU may access managed memory concurrently.
  bool concurrent_managed_access = false;
  /// The GPU can access pageable (malloc'd) host memory coherently.
  bool pageable_memory_access = false;
  /// Managed pages migrate to the processor that touches them. CUDA: concurrentManagedAccess.
  /// AMD: pageableMemoryAccess or xnack+ (concurrentManagedAccess is 1 there even when pages
  /// never move). Where this is false, prefetch and advice cannot move data.
  bool migrates_on_demand = false;
};

/// @brief A GPU, by ordinal. Cheap to copy; holds no runtime resources.
class device {
 public:
  /// @throws unimem::error (invalid device) unless 0 <= id < device_count().
  explicit device(int id) : id_(id) {
    detail::require_device(id, "unimem::device(" + std::to_string(id) + ")");
  }

  /// @brief The calling thread's current device.
  static device current() {
    int id = 0;
    UNIMEM_DETAIL_CHECK(detail::backend::get_device(&id));
    return device(id, unchecked{});
  }

  [[nodiscard]] int id() const noexcept { return id_; }

  [[nodiscard]] std::string name() const { return native_properties().name; }
  [[nodiscard]] std::string architecture() const { return native_properties().architecture; }
  [[nodiscard]] std::size_t total_memory() const { return native_properties().total_memory; }
  /// @brief Free memory now, as the runtime reports it (creates the device's context).
  [[nodiscard]] std::size_t free_memory() const;

  [[nodiscard]] int warp_size() const { return attribute(detail::backend::device_attribute::warp_size); }
  [[nodiscard]] int multiprocessors() const {
    return attribute(detail::backend::device_attribute::multiprocessors);
  }
  [[nodiscard]] int max_threads_per_block() const {
    return attribute(detail::backend::device_attribute::max_threads_per_block);
  }
  [[nodiscard]] bool managed_memory() const {
    return attribute(detail::backend::device_attribute::managed_memory) != 0;
  }
  [[nodiscard]] bool concurrent_managed_access() const {
    return attribute(detail::backend::device_attribute::concurrent_managed_access) != 0;
  }
  [[nodiscard]] bool pageable_memory_access() const {
    return attribute(detail::backend::device_attribute::pageable_memory_access) != 0;
  }
  /// @brief Whether managed pages migrate to this GPU on access (see device_properties).
  [[nodiscard]] bool migrates_on_demand() const {
    return detail::backend::migrates_on_demand(native_properties(), concurrent_managed_access(),
                                               pageable_memory_access());
  }

  /// @brief All properties at once.
  [[nodiscard]] device_properties properties() const;

  /// @brief Makes this the calling thread's current device.
  void make_current() const { UNIMEM_DETAIL_CHECK(detail::backend::set_device(id_)); }

  /// @brief Waits for all work on this device.
  void synchronize() const;

  friend bool operator==(const device& a, const device& b) noexcept { return a.id_ == b.id_; }
  friend bool operator!=(const device& a, const device& b) noexcept { return a.id_ != b.id_; }

 private:
  struct unchecked {};
  device(int id, unchecked) noexcept : id_(id) {}

  int attribute(detail::backend::device_attribute a) const {
    int v = 0;
    UNIMEM_DETAIL_CHECK(detail::backend::get_attribute(&v, a, id_));
    return v;
  }
  detail::backend::native_properties native_properties() const {
    detail::backend::native_properties p;
    UNIMEM_DETAIL_CHECK(detail::backend::get_properties(p, id_));
    return p;
  }

  int id_;
};

/// @brief Makes a device current for a scope and restores the previous one on exit.
///
/// @code
///   { unimem::device_guard g(1); unimem::launch(k, cfg, a); }  // runs on GPU 1
/// @endcode
class device_guard {
 public:
  explicit device_guard(const device& d) {
    UNIMEM_DETAIL_CHECK(detail::backend::get_device(&previous_));
    if (previous_ != d.id()) UNIMEM_DETAIL_CHECK(detail::backend::set_device(d.id()));
  }
  /// @throws unimem::error for an invalid id.
  explicit device_guard(int id) : device_guard(device(id)) {}
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard() { (void)detail::backend::set_device(previous_); }

 private:
  int previous_ = 0;
};

inline std::size_t device::free_memory() const {
  device_guard g(*this);
  std::size_t free = 0, total = 0;
  UNIMEM_DETAIL_CHECK(detail::backend::mem_get_info(&free, &total));
  return free;
}

inline void device::synchronize() const {
  device_guard g(*this);
  UNIMEM_DETAIL_CHECK(detail::backend::device_synchronize());
}

inline device_properties device::properties() const {
  const detail::backend::native_properties n = native_properties();
  device_properties p;
  p.id = id_;
  p.name = n.name;
  p.architecture = n.architecture;
  p.compute_major = n.major;
  p.compute_minor = n.minor;
  p.total_memory = n.total_memory;
  p.free_memory = free_memory();
  p.warp_size = warp_size();
  p.multiprocessors = multiprocessors();
  p.max_threads_per_block = max_threads_per_block();
  p.managed_memory = managed_memory();
  p.concurrent_managed_access = concurrent_managed_access();
  p.pageable_memory_access = pageable_memory_access();
  p.migrates_on_demand = detail::backend::migrates_on_demand(n, p.concurrent_managed_access,
                                                             p.pageable_memory_access);
  return p;
}

/// @brief All GPUs the runtime sees (empty without a GPU).
inline std::vector<device> devices() {
  std::vector<device> all;
  const int n = device_count();
  all.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) all.emplace_back(i);
  return all;
}

/// @brief Waits for all work on the calling thread's current device.
/// @throws unimem::error, which carries any asynchronous kernel error.
inline void synchronize() { UNIMEM_DETAIL_CHECK(detail::backend::device_synchronize()); }

/// @brief Waits for all work on every GPU that may have some: each device with a context.
///
/// A device this process never used has no context and so no work; it is skipped rather than
/// initialised (on NVIDIA, initialising costs time and GPU memory on every rank of a multi-GPU
/// job). Where the runtime cannot tell (AMD), every device is synchronised.
/// The calling thread's current device is left as it was.
/// @throws unimem::error, which carries any asynchronous kernel error.
/// Without a GPU there is nothing to wait for: it returns.
inline void synchronize_all_devices() {
  const int n = device_count();
  if (n == 0) return;
  int current = 0;
  UNIMEM_DETAIL_CHECK(detail::backend::get_device(&current));
  for (int id = 0; id < n; ++id) {
    if (id != current && detail::backend::context_active(id) == 0) continue;
    device(id).synchronize();
  }
}

/// @brief The name of the backend unimem was compiled for: "CUDA", "HIP (AMD)", "HIP (NVIDIA)".
inline const char* backend_name() noexcept { return detail::backend::name(); }

/// @brief The runtime's version as it reports it, e.g. "13.0" or "6.2.41133"; "none" when the
/// runtime cannot say.
inline std::string runtime_version() {
  int v = 0;
  const detail::backend::result r = detail::backend::runtime_version(&v);
  return r.code == detail::backend::success && v > 0 ? detail::backend::version_string(v) : "none";
}

/// @brief The driver's version, or "none" when no driver is installed.
inline std::string driver_version() {
  int v = 0;
  const detail::backend::result r = detail::backend::driver_version(&v);
  return r.code == detail::backend::success && v > 0 ? detail::backend::version_string(v) : "none";
}

namespace detail {
inline std::string gib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}
inline const char* yes_no(bool b) noexcept { return b ? "yes" : "no"; }
}  // namespace detail

/// @brief A text report of the backend, versions and every GPU with its managed-memory
/// capabilities; with no GPU it says so (and why) in one line.
inline std::string report() {
  std::string s = "unimem " UNIMEM_VERSION_STRING ", backend " + std::string(backend_name()) +
                  " (headers " + detail::backend::compiled_version() + "), runtime " +
                  runtime_version() + ", driver " + driver_version() + "\n";
  int raw = 0;
  const detail::backend::result r = detail::backend::device_count(&raw);
  const int n = device_count();
  if (n == 0) {
    s += "no GPU was found";
    if (r.code != detail::backend::success) {
      s += std::string(" (") + r.call + ": " + detail::backend::error_name(r.code) + ": " +
           detail::backend::error_string(r.code) + ")";
    }
    return s + "\n";
  }
  for (int i = 0; i < n; ++i) {
    const device_properties p = device(i).properties();
    s += "device " + std::to_string(i) + ": " + p.name + ", " + p.architecture + ", " +
         std::to_string(p.multiprocessors) + " multiprocessors, warp size " +
         std::to_string(p.warp_size) + ", memory " + detail::gib(p.free_memory) + " free of " +
         detail::gib(p.total_memory) + "\n";
    s += std::string("  managed memory: ") + detail::yes_no(p.managed_memory) +
         ", concurrent managed access: " + detail::yes_no(p.concurrent_managed_access) +
         ", pageable memory access: " + detail::yes_no(p.pageable_memory_access) +
         ", migrates on demand: " + detail::yes_no(p.migrates_on_demand) + "\n";
  }
  return s;
}

UNIMEM_END_NAMESPACE
