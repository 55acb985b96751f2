// unimem (internal): the property cache. Each device's unchanging properties are read once, on
// first use, into a lock-free list that lives as long as the process (late destructors may still
// ask); the buffers read it here, device and placement through core/device.hpp.
#pragma once

#include "../capabilities.hpp"
#include "../config.hpp"
#include "../error.hpp"
#include "atomic.hpp"
#include "backend/backend.hpp"

#include <type_traits>

UNIMEM_BEGIN_NAMESPACE
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
  cached_device(int device, call_site where) {
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
    placement = {properties.migrates_on_demand, properties.regime};
  }
  cached_device(const cached_device&) = delete;
  cached_device& operator=(const cached_device&) = delete;

  backend::native_properties native;
  device_properties properties;
  /// What placement decides by: the properties' own, unless a test pretends (test_support.hpp).
  struct {
    bool migrates;
    memory_regime regime;
  } placement;
  const cached_device* next = nullptr;  // the next device in the same list
};

/// Devices below this ordinal have a list of their own; the others share the last one. Entries
/// live as long as the process (late destructors may still ask).
constexpr int cached_devices = 64;
inline atomic_cell<const cached_device*>* property_cache() noexcept {
  static atomic_cell<const cached_device*> lists[cached_devices + 1];
  return lists;
}

/// The cache entry of device `id` (which must exist).
UNIMEM_DETAIL_OUTLINE const cached_device& cached_entry(int id, call_site where)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  atomic_cell<const cached_device*>& head =
      property_cache()[id >= 0 && id < cached_devices ? id : cached_devices];
  const cached_device* first = head.load();
  for (const cached_device* c = first; c != nullptr; c = c->next) {
    if (c->properties.device_id == id) return *c;
  }
  // First use: read (a failure throws, publishing nothing), then publish; of racing threads the
  // first to publish wins and the others drop their identical copies.
  cached_device* fresh = new cached_device(id, where);
  for (fresh->next = first; !head.compare_exchange(first, fresh); fresh->next = first) {
    for (const cached_device* c = first; c != fresh->next; c = c->next) {  // what came since
      if (c->properties.device_id == id) {
        delete fresh;
        return *c;
      }
    }
  }
  return *fresh;
}
#else
    ;
#endif

}  // namespace detail
UNIMEM_END_NAMESPACE
