// unimem (internal): the runtime as managed_pool's policies (caching_pool, runtime_pool) see it:
// a table of static functions (alpaka's style) the policies are templates over. pool_runtime
// forwards to core/detail/backend/, the only place that names the runtime; unimem's host tests
// give the policies a fake runtime with the same table (tests/support/fake_pool_runtime.hpp:
// streams as threads, the programming guide's device rules, fault injection), so that what the
// pool asks of the runtime is tested without a GPU. Users' builds contain only this table.
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/backend/backend.hpp"
#include "../../core/detail/backend/device.hpp"
#include "../../core/detail/backend/events.hpp"
#include "../../core/detail/backend/placement.hpp"
#include "../../core/detail/backend/pool.hpp"
#include "../../core/error.hpp"
#include "../../core/memory_kind.hpp"

#include <cstddef>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// The real runtime's table: each call returns the runtime's backend::result; fail() and
/// fail_allocation() throw unimem::error for one.
struct pool_runtime {
  using stream = backend::stream_handle;
  using event = backend::event_handle;
  /// Whether an event may be recorded again while its last recording is pending.
  static constexpr bool rerecords_pending_events = backend::rerecording_a_pending_event_is_defined;

  /// A handle naming the current device's default stream (legacy, per-thread, or null).
  static bool is_default_stream(stream s) noexcept {
    return s == nullptr || s == backend::legacy_stream() || s == backend::per_thread_stream();
  }
  static backend::result get_device(int* id) noexcept { return backend::get_device(id); }
  static backend::result set_device(int id) noexcept { return backend::set_device(id); }
  static backend::result device_synchronize() noexcept { return backend::device_synchronize(); }
  /// The current device's free and total memory.
  static backend::result mem_get_info(std::size_t* free, std::size_t* total) noexcept {
    return backend::mem_get_info(free, total);
  }
  /// Advice for managed memory (the GPU budget's: pool/detail/pool_budget.hpp).
  static backend::result advise(const void* p, std::size_t bytes, backend::mem_advice a,
                                backend::native_location l) noexcept {
    return backend::advise(p, bytes, a, l);
  }
  static backend::result malloc_managed(void** p, std::size_t bytes) noexcept {
    return backend::malloc_managed(p, bytes);
  }
  /// Frees managed memory; the runtime waits for the device's work first.
  static backend::result free(void* p) noexcept { return backend::free(p); }
  /// An event without timing, of the current device.
  static backend::result event_create(event* e) noexcept { return backend::event_create(e, false); }
  static backend::result event_destroy(event e) noexcept { return backend::event_destroy(e); }
  static backend::result event_record(event e, stream s) noexcept {
    return backend::event_record(e, s);
  }
  static backend::result event_query(event e) noexcept { return backend::event_query(e); }
  static backend::result event_synchronize(event e) noexcept {
    return backend::event_synchronize(e);
  }
  static backend::result stream_wait_event(stream s, event e) noexcept {
    return backend::stream_wait_event(s, e);
  }
  static backend::result stream_synchronize(stream s) noexcept {
    return backend::stream_synchronize(s);
  }
  /// Clears the runtime's last error where it is this status (a failure handled here).
  static void forget(backend::status s) noexcept { backend::forget_if_last(s); }
  [[noreturn]] static void fail(backend::result r, call_site where, const char* context) {
    throw_error(r, where, context);
  }
  [[noreturn]] static void fail_allocation(backend::result r, std::size_t bytes, call_site where) {
    throw_allocation_error(r, bytes, "managed_pool", where);
  }

#if UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL
  using mem_pool = backend::mem_pool_handle;
  static bool refuses_pool(backend::status s) noexcept { return backend::refuses_managed_pool(s); }
  /// A pool of managed memory (made with the device current).
  static backend::result pool_create(mem_pool* pool) noexcept {
    return backend::managed_pool_create(pool);
  }
  /// Destroys the pool now, or once its allocations still out are freed.
  static backend::result pool_destroy(mem_pool pool) noexcept {
    return backend::managed_pool_destroy(pool);
  }
  static backend::result pool_set_release_threshold(mem_pool pool, std::size_t bytes) noexcept {
    return backend::managed_pool_set_release_threshold(pool, bytes);
  }
  static backend::result pool_reserved(mem_pool pool, std::size_t* bytes) noexcept {
    unsigned long long reserved = 0;
    const backend::result r = backend::managed_pool_reserved(pool, &reserved);
    *bytes = static_cast<std::size_t>(reserved);
    return r;
  }
  static backend::result pool_trim(mem_pool pool, std::size_t keep) noexcept {
    return backend::managed_pool_trim(pool, keep);
  }
  static backend::result pool_allocate(void** p, std::size_t bytes, mem_pool pool,
                                       stream s) noexcept {
    return backend::malloc_from_pool(p, bytes, pool, s);
  }
  static backend::result pool_free(void* p, stream s) noexcept { return backend::free_async(p, s); }
#endif
};

/// Makes device `id` current for a scope where `needed`: the policies' calls on a default stream,
/// which names the current device's, so that a pool's default stream is its own device's whichever
/// is current. Never throws: failure() says why the device could not be made current.
template <class R>
class pool_device_scope {
 public:
  pool_device_scope(int id, bool needed) noexcept {
    if (!needed) return;
    int now = 0;
    failure_ = R::get_device(&now);
    if (failure_.code == backend::success && now != id) {
      failure_ = R::set_device(id);
      if (failure_.code == backend::success) previous_ = now;
    }
    if (failure_.code != backend::success) R::forget(failure_.code);
  }
  pool_device_scope(const pool_device_scope&) = delete;
  pool_device_scope& operator=(const pool_device_scope&) = delete;
  ~pool_device_scope() {
    if (previous_ >= 0) (void)R::set_device(previous_);
  }
  bool ok() const noexcept { return failure_.code == backend::success; }
  /// Success, or the call that failed.
  backend::result failure() const noexcept { return failure_; }

 private:
  backend::result failure_{backend::success, ""};
  int previous_ = -1;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
