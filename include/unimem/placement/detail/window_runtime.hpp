// unimem (internal): the runtime as a walk (window.hpp) uses it: unimem's placement path, its
// advice and intents, streams and events of the backend. basic_windows is a template over such
// a table; the tests hand it a fake with the same members (tests/test_window.cpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/backend/backend.hpp"
#include "../../core/detail/backend/events.hpp"
#include "../../core/detail/backend/pointers.hpp"
#include "../../core/device.hpp"
#include "../../core/error.hpp"
#include "../../core/event.hpp"
#include "../../core/stream.hpp"
#include "../../core/stream_ref.hpp"
#include "../budget.hpp"
#include "../intent.hpp"
#include "../location.hpp"
#include "../placement.hpp"
#include "../policy.hpp"
#include "host_access.hpp"
#include "ledger.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// The runtime as a walk uses it.
class window_runtime {
 public:
  /// The walk's device: the stream's, else the current one.
  int device_of(stream_ref s, call_site where) {
    const int d = device_for(no_device, s, "unimem::windows", "", where);
    return d != no_device ? d : current_device_id(where);
  }
  /// Whether placement moves pages on device d (may_place(): applied, not_needed on an APU,
  /// unsupported where pages cannot migrate and the policy is ignore; throw_error throws).
  hint_status placement(int d, call_site where) {
    return may_place({location::device(d), stream_ref(), "unimem::windows", where});
  }
  gpu_budget budget(int d, std::size_t reserve, call_site where) {
    return gpu_budget_of(d, reserve, where);
  }
  double link_bytes_per_second(int d) noexcept { return host_link_of(d).bytes_per_second; }
  std::uint64_t now() noexcept { return host_access::now(); }
  bool is_device_memory(const void* p) noexcept {
    return backend::memory_of(p) == backend::pointer_memory::device;
  }
  bool is_mapped(const placement_range& r, call_site where) {
    return detail::is_mapped(r.ptr, r.bytes, where);
  }
  bool is_read_mostly(const placement_range& r, call_site where) {
    return range_int(backend::range_attribute::read_mostly, r.ptr, r.bytes, where) != 0;
  }
  /// Read-mostly advice given (on) or withdrawn; false where the runtime takes none for this
  /// memory (CUDA 13's pools of managed memory; the unsupported_policy applies).
  bool read_mostly(const placement_range& r, bool on, call_site where) {
    return advise_range(r, advice::read_mostly, location::host(), on, where) == hint_status::applied;
  }
  /// Intent map for GPU d (preferred location host, accessed-by d); false where refused.
  bool map(const placement_range& r, int d, call_site where) {
    return set_intent_range(r, intent::map, location::device(d), where) == hint_status::applied;
  }
  void unmap(const placement_range& r, int d, call_site where) {
    (void)set_intent_range(r, intent::move, location::device(d), where);
  }
  /// `streams` non-blocking streams and `events` events (ordering only) on device d.
  void make(int d, int streams, int events, call_site where) {
    device_guard g(d, where);
    for (int i = 0; i < streams; ++i) {
      streams_.emplace_back(unimem::stream::blocking_mode::non_blocking, where);
    }
    for (int i = 0; i < events; ++i) {
      events_.emplace_back(unimem::event::timing_mode::disable_timing, where);
    }
  }
  stream_ref stream(int i) const noexcept { return streams_[static_cast<std::size_t>(i)].ref(); }
  backend::event_handle event(int i) const noexcept {
    return events_[static_cast<std::size_t>(i)].get();
  }
  /// Places r on GPU d on stream s, through the placement path (its record decides: nothing
  /// where it holds and the host touched none of it); whether anything was queued.
  bool place(const placement_range& r, int d, stream_ref s, call_site where) {
    host_access::span parts[touched_spans_max];
    const bool needed = still_needed(r, d, host_access::now(), parts) != 0;
    (void)detail::place(&r, 1, {location::device(d), s, "unimem::windows", where, true});
    return needed;
  }
  /// Moves r back to the host on stream s (announced: other records meeting it place again).
  void move_to_host(const placement_range& r, int d, stream_ref s, call_site where) {
    placement_range h = r;
    h.record = nullptr;
    (void)detail::place(&h, 1, {location::host(), s, "unimem::windows", where, true});
    ledger::moved(d, r.bytes, false);
  }
  void record(backend::event_handle e, stream_ref s, call_site where) {
    check(backend::event_record(e, s.get()), where);
  }
  void wait(stream_ref s, backend::event_handle e, call_site where) {
    check(backend::stream_wait_event(s.get(), e), where);
  }

 private:
  std::vector<unimem::stream> streams_;
  std::vector<unimem::event> events_;
};

}  // namespace detail
UNIMEM_END_NAMESPACE
