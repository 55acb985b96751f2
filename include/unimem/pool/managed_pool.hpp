/// @file
/// @brief managed_pool, and pool_buffer (<unimem/pool/pool_buffer.hpp>, included at the end). Not
/// in the umbrella header (it needs `<map>` and `<memory>`); the std::pmr resource is in
/// `<unimem/pool/managed_pool_resource.hpp>`.
#pragma once

#include "../core/argument_error.hpp"
#include "../core/config.hpp"
#include "../core/detail/backend/backend.hpp"
#include "../core/detail/owned_array.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../core/memory_kind.hpp"
#include "../core/stream_ref.hpp"
#include "detail/caching_pool.hpp"
#include "detail/pool_budget.hpp"
#include "detail/pool_core.hpp"
#include "detail/pool_runtime.hpp"
#include "detail/runtime_pool.hpp"
#include "managed_pool_options.hpp"
#include "pool_statistics.hpp"

#include <cstddef>
#include <memory>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

template <class T>
class pool_buffer;

/// @brief A pool of managed memory with stream-ordered allocation: allocate(bytes, s) and
/// deallocate(p, bytes, s) cost microseconds where cudaMallocManaged / hipMallocManaged and their
/// frees cost a hundred and more (docs/pitfalls.md); the memory is ordinary managed memory (CPU
/// and every GPU, migrating; views, access tags and placement calls work on it).
///
/// Stream order, as cudaMallocAsync's: memory allocated on s may be used by work queued on s after
/// the allocation, and by the host or other streams once s has reached it (s.synchronize(), or an
/// event recorded on s after it); memory deallocated on s may be used by work queued on s before
/// the deallocation, by nothing after it; other streams' work must be ordered before it (an event
/// s waits for). Use streams of the pool's device; the default stream (`{}`) is the pool's
/// device's, whichever device is current when the pool is called.
///
/// Behind it: the runtime's pool of managed memory where there is one (CUDA 13; a refusal at
/// construction selects the other), else unimem's caching allocator (HIP, CUDA 12 and older): size
/// classes (at most a quarter more than asked), a block freed on s reused on s at once and on
/// another stream once its free has completed; see uses_runtime_pool().
///
/// A GPU budget (managed_pool_options::gpu_budget; opt-in): the blocks past it are placed on the
/// host (preferred location host, accessed by the pool's GPU: read and written over the link,
/// never migrated), instead of competing for the GPU's memory with the others and thrashing;
/// statistics() says how many bytes are in each place.
///
/// Thread safety (docs/architecture.md, "The managed pool"): allocate(), allocate_for_host(),
/// deallocate(), trim(), trim_to(), statistics(), reset_peak(), release_threshold(),
/// set_release_threshold() and the queries may be called on one pool from any threads at once;
/// making a pool_buffer from the pool counts as an allocate(). A deallocate() may come from
/// another thread than its allocate(), and on another stream (in stream order, above). A
/// pool_buffer may be used, moved, swapped and destroyed on any thread at any time, also while its
/// pool is moved or ends: it shares the pool's state. Moving from the pool, assigning or swapping
/// it and its destruction are exclusive, as for any C++ object: no other call on that same pool
/// may run beside them (a call that still reaches the pool's state after its end throws
/// unimem::invalid_argument). Move-only; a moved-from pool throws unimem::invalid_argument when
/// used.
/// @code
///   unimem::managed_pool pool;                          // on the current device
///   for (int step = 0; step < steps; ++step) {
///     unimem::pool_buffer<float> tmp(n, pool, s);       // microseconds, not a cudaMallocManaged
///     unimem::launch(kernel, unimem::grid_for(n).on(s), unimem::out(tmp), n);
///   }                                                   // each tmp freed in the order of s
/// @endcode
class managed_pool {
 public:
  /// @brief A pool on the current device with the default options. @throws as below.
  explicit managed_pool(call_site where = call_site::current())
      : managed_pool(managed_pool_options(), where) {}
  /// @brief A pool on the current device.
  /// @throws unimem::error when there is no GPU ("no GPU was found") or the runtime fails (also
  /// in measuring the GPU budget's free memory).
  explicit managed_pool(const managed_pool_options& o, call_site where = call_site::current())
      : managed_pool(make(device::current(where), o, where)) {}
  /// @brief A pool on device d (its streams are d's). @throws unimem::error when the runtime fails.
  explicit managed_pool(const device& d, const managed_pool_options& o = managed_pool_options(),
                        call_site where = call_site::current())
      : managed_pool(make(d, o, where)) {}

  managed_pool(const managed_pool&) = delete;             ///< Not copyable: owns its memory.
  managed_pool& operator=(const managed_pool&) = delete;  ///< Not copyable: owns its memory.
  /// @brief Takes the other pool; the other is left empty (moved-from).
  managed_pool(managed_pool&& other) noexcept = default;
  /// @brief Releases this pool (as the destructor does) and takes the other.
  managed_pool& operator=(managed_pool&& other) noexcept {
    managed_pool(std::move(other)).swap(*this);
    return *this;
  }
  /// @brief Returns everything the pool holds to the runtime; never throws. Allocations of
  /// allocate() still out, which nothing can give back any more, are freed with it (after the
  /// device's work, which it waits for); a pool_buffer's memory stays valid until the buffer goes
  /// (it may outlive its pool), and the runtime's pool with it.
  ~managed_pool() {
    if (core_ != nullptr) core_->close();
  }
  /// @brief Exchanges the two pools.
  void swap(managed_pool& other) noexcept { std::swap(core_, other.core_); }
  /// @brief `bytes` of managed memory in the order of stream s (see the class): aligned to at
  /// least 256 bytes; nullptr for 0 bytes (no runtime call).
  /// @throws unimem::length_error above PTRDIFF_MAX bytes (before any runtime call);
  /// unimem::out_of_memory (a std::bad_alloc) when memory runs out; unimem::error when the
  /// runtime fails otherwise; unimem::invalid_argument on a moved-from pool.
  [[nodiscard]] void* allocate(std::size_t bytes, stream_ref s = {},
                               call_site where = call_site::current()) {
    return allocate_on(bytes, s, false, "allocate", where);
  }
  /// @brief As allocate() (and throws as it does), and the host may use the memory at once: memory
  /// freed by work still queued on s waits for that free (caching allocator) or for s.
  [[nodiscard]] void* allocate_for_host(std::size_t bytes, stream_ref s = {},
                                        call_site where = call_site::current()) {
    return allocate_on(bytes, s, true, "allocate_for_host", where);
  }
  /// @brief Gives p back in the order of stream s; ignores pointers this pool did not hand out.
  void deallocate(void* p, std::size_t bytes, stream_ref s = {}) noexcept {
    (void)bytes;  // the pool knows each allocation's size
    if (p != nullptr && core_ != nullptr) core_->deallocate(p, s.get(), 0);
  }
  /// @brief Returns every free block to the runtime: trim_to(0) (the memory in use stays).
  /// @throws unimem::error when the runtime fails.
  void trim(call_site where = call_site::current()) { checked("trim").trim_to(0, where); }
  /// @brief Returns free memory to the runtime until the pool holds at most `keep` bytes (the
  /// caching allocator waits for queued frees; the runtime's pool keeps what it cannot release).
  /// @throws unimem::error when the runtime fails.
  void trim_to(std::size_t keep, call_site where = call_site::current()) {
    checked("trim_to").trim_to(keep, where);
  }
  /// @brief Bytes in use, their peak, bytes held from the runtime, allocations in use, and of
  /// those the bytes placed on the host by the GPU budget, as of one moment (bytes held never
  /// below bytes in use).
  /// @throws unimem::error when the runtime cannot report its pool's memory.
  [[nodiscard]] pool_statistics statistics(call_site where = call_site::current()) const {
    return checked("statistics").statistics(where);
  }
  /// @brief Starts the peak over from the bytes in use now.
  void reset_peak() { checked("reset_peak").reset_peak(); }
  /// @brief The release threshold (see managed_pool_options).
  [[nodiscard]] std::size_t release_threshold() const {
    return checked("release_threshold").release_threshold();
  }
  /// @brief Changes the release threshold (see managed_pool_options).
  /// @throws unimem::error when the runtime refuses it.
  void set_release_threshold(std::size_t bytes, call_site where = call_site::current()) {
    checked("set_release_threshold").set_release_threshold(bytes, where);
  }
  /// @brief True when the runtime's pool serves (CUDA 13), false for the caching allocator.
  [[nodiscard]] bool uses_runtime_pool() const { return checked("uses_runtime_pool").runtime(); }
  /// @brief "the runtime's pool of managed memory" or "unimem's caching allocator".
  [[nodiscard]] const char* implementation_name() const {
    return uses_runtime_pool() ? "the runtime's pool of managed memory"
                               : "unimem's caching allocator";
  }
  /// @brief Why the caching allocator serves: the runtime's refusal, or "not supported" where not
  /// tried (HIP, CUDA 12 and older, use_runtime_pool false); success for the runtime's pool.
  [[nodiscard]] native_status runtime_pool_status() const {
    return checked("runtime_pool_status").status();
  }
  /// @brief The device whose streams the pool serves.
  [[nodiscard]] int device_id() const { return checked("device_id").device_id(); }
  /// @brief False for a moved-from pool.
  [[nodiscard]] explicit operator bool() const noexcept { return core_ != nullptr; }

 protected:
  /// @brief A pool over `core`, the stream-ordered allocator behind it (the constructors above
  /// choose one; a test gives its own), shared with the buffers from the pool.
  explicit managed_pool(std::shared_ptr<detail::pool_core> core) noexcept
      : core_(std::move(core)) {}

 private:
  template <class T>
  friend class pool_buffer;

  static std::shared_ptr<detail::pool_core> make(const device& d, const managed_pool_options& o,
                                                 call_site where) {
    detail::require_device(d.device_id(), "unimem::managed_pool", where);  // "no GPU was found"
    const std::size_t budget = budget_of(d, o, where);
    native_status why = detail::backend::error_not_supported;  // not tried
#if UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL
    if (o.use_runtime_pool) {
      auto c = detail::runtime_pool<detail::pool_runtime>::make(d.device_id(), o.release_threshold,
                                                                where, why, budget);
      if (c != nullptr) return c;
    }
#endif
    return std::make_shared<detail::caching_pool<detail::pool_runtime>>(
        d.device_id(), o.release_threshold, why, budget);
  }
  /// The GPU budget the options ask for: none where the GPU's managed memory does not migrate
  /// (one memory for both, or pages that never move: nothing to place).
  static std::size_t budget_of(const device& d, const managed_pool_options& o, call_site where) {
    if (o.gpu_budget == 0) return detail::no_gpu_budget;
    const memory_regime r = d.regime(where);
    if (r == memory_regime::apu || r == memory_regime::no_migration ||
        r == memory_regime::no_managed_memory) {
      return detail::no_gpu_budget;
    }
    return detail::measured_gpu_budget<detail::pool_runtime>(d.device_id(), o.gpu_budget,
                                                             o.gpu_budget_margin, where);
  }
  detail::pool_core& checked(const char* what) const { return checked(core_, what); }
  static detail::pool_core& checked(const std::shared_ptr<detail::pool_core>& core,
                                    const char* what) {
    if (core == nullptr) {
      detail::throw_refused<invalid_argument>(
          detail::refusal("unimem::managed_pool::")
              .append(what)
              .append(": the pool was moved from (it holds no memory)"));
    }
    return *core;
  }
  void* allocate_on(std::size_t bytes, stream_ref s, bool for_host, const char* what,
                    call_site where) {
    detail::pool_core& c = checked(what);
    (void)detail::checked_bytes(bytes, 1, for_host ? "managed_pool::allocate_for_host"
                                                   : "managed_pool::allocate");
    return bytes == 0 ? nullptr : c.allocate(bytes, s.get(), for_host, where, nullptr);
  }

  std::shared_ptr<detail::pool_core> core_;  // shared with the buffers from it
};

UNIMEM_END_NAMESPACE

#include "pool_buffer.hpp"  // part of this header since 0.3 (issue 28)
