// unimem (internal): the host-access log as placement uses it: now() (the newest entry after
// taking in the host's doings: the driver's events, or the page-fault count), decide() (which
// signal, tried again after passing errors), announce(), touched_since(), and describe() for
// report(). The rooms under it: region.hpp (memory and memfd), fork.hpp (this copy, fork()),
// tracker.hpp (the driver's queue); the kernel (uvm/kernel.hpp) where it is built.
#pragma once

#include "tracker.hpp"
#include "../uvm/kernel.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace host_access {
/// A passing reason is tried again after retry_faults further page faults of the process (a
/// runtime start takes thousands; a try costs 200 us to their 3.6 ms), then after twice as many
/// each time (at most max_backoff times as many), max_tries times in all.
constexpr std::uint64_t retry_faults = 1024;
constexpr int max_tries = 16, max_backoff_shift = 10;

#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
/// attach_with() on the kernel, as UNIMEM_HOST_ACCESS allows, away from the UVM files this
/// process inherited; this copy closes the tracker in a child after fork().
UNIMEM_DETAIL_OUTLINE int attach_uvm_events(region* r) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  const char* setting = std::getenv("UNIMEM_HOST_ACCESS");
  const bool faults_only = setting != nullptr && std::strcmp(setting, "uvm-cpu-faults") == 0;
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  copy_state& c = this_copy();
  const int tools = attach_with(r, uvm::real_driver(), !faults_only, c.inherited,
                                c.inherited_count);
  if (tools >= 0) {
    c.tracker = tools;
    c.uvm_dup = r->uvm_dup.load();
  }
  return tools;
#else
  (void)faults_only;
  r->why.store(static_cast<int>(reason::compiled_out));
  return refused;
#endif
}
#else
    ;
#endif
#else
inline int attach_uvm_events(region*) noexcept { return refused; }
#endif

/// Takes in new page faults (under the lock; not on uvm_events). Tries attach() at the first look
/// where the log is shared and UNIMEM_HOST_ACCESS allows; after a passing reason again later,
/// backing off. f: the count now() just read (the count only grows: one older than what another
/// thread took in changes nothing).
inline void decide(region* r, int (*attach)(region*), std::uint64_t f) noexcept {
  if (f <= r->faults_seen.load()) return;
  r->faults_seen.store(f);
  append(r, 0, everywhere, false);
  r->source.store(static_cast<int>(signal::page_faults));
  const std::uint64_t at = r->retry_at.load();
  if (at == 0 || f < at) return;
  const char* setting = std::getenv("UNIMEM_HOST_ACCESS");
  if (setting != nullptr && std::strcmp(setting, "page-faults") == 0) {
    r->why.store(static_cast<int>(reason::disabled));
    r->retry_at.store(0);
    return;
  }
  const int tracker = attach(r);
  if (tracker >= 0) {
    r->retry_at.store(0);
    r->tries.store(0);
    switch_to(r, signal::uvm_events);
    return;
  }
  const int tries = r->tries.load() + 1;
  r->tries.store(tries);
  const int shift = tries - 1 < max_backoff_shift ? tries - 1 : max_backoff_shift;
  r->retry_at.store(tracker == try_again && tries < max_tries ? f + (retry_faults << shift) : 0);
}

/// The system page this copy's log was laid out for.
inline std::size_t this_copys_page() noexcept {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  const std::size_t page = this_copy().page;
  return page != 0 ? page : system_page();
#else
  return 4096;
#endif
}

/// The newest entry's number after taking in the host's doings (what a record made now keeps):
/// a few loads (uvm_events) or one getrusage while nothing happened. Tests may give r, attach()
/// and the page size the queue was laid out for.
inline std::uint64_t now(region* r = the_region(), int (*attach)(region*) = attach_uvm_events,
                         std::size_t page = 0) noexcept {
  if (r == nullptr) return host_faults();
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  if (r->source.load() == static_cast<int>(signal::uvm_events)) {
    if (page == 0) page = this_copys_page();
    control_page c{};
    int version = 0;
    if (!queue_view(r, page, &c, &version)) {  // the shared memory went wrong: trust it no more
      spin_guard g(r->lock);
      if (r->source.load() == static_cast<int>(signal::uvm_events) &&
          !queue_view(r, page, &c, &version)) {
        switch_to(r, signal::page_faults);
        r->why.store(static_cast<int>(reason::log_corrupt));
        r->retry_at.store(0);
      }
    } else if (c.put() != (r->queue_get.load() & queue_mask) ||
               c.dropped() != r->dropped_seen.load()) {
      spin_guard g(r->lock);
      drain(r, page);
    }
    return r->newest.load();
  }
#else
  (void)page;
#endif
  const std::uint64_t f = host_faults();
  if (f != r->faults_seen.load()) {
    spin_guard g(r->lock);
    if (r->source.load() != static_cast<int>(signal::uvm_events)) decide(r, attach, f);
  }
  return r->newest.load();
}

/// The signal the process uses (undecided before its first placement), and why.
inline signal source() noexcept {
  region* r = the_region();
  return r == nullptr ? signal::page_faults : static_cast<signal>(r->source.load());
}
inline reason why() noexcept {
  region* r = the_region();
  return r == nullptr ? reason::compiled_out : static_cast<reason>(r->why.load());
}

/// Whether the process's tracker talks to module version v in a layout proven on this driver
/// by the self-check (decides first, as a placement would).
inline bool proven(std::uint64_t v) noexcept {
  region* r = the_region();
  (void)now(r);
  return r != nullptr && r->module_version.load() == v &&
         r->proof_of_layout.load() == static_cast<int>(proof::checked);
}

/// What report() says of the log: the signal in use and why, and the UVM module's version with
/// the layout unimem talks to it in and how that layout was trusted. Decides nothing and opens
/// no driver (a log not made yet, or not decided yet, is "decided at the first placement").
struct description { char text[640]; };
inline void append_text(description& d, const char* s) noexcept {
  std::strncat(d.text, s, sizeof d.text - std::strlen(d.text) - 1);
}
inline void append_version(description& d, std::uint64_t v) noexcept {
  const std::size_t used = std::strlen(d.text);
  const unsigned patch = static_cast<unsigned>(v & 0xffffu);
  std::snprintf(d.text + used, sizeof d.text - used, patch != 0 ? "%u.%u.%02u" : "%u.%u",
                uvm::branch_of(v), static_cast<unsigned>((v >> 16) & 0xffffu), patch);
}
inline description describe() noexcept {
  description d{};
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  region* r = this_copy().log.load();
#else
  region* r = nullptr;
#endif
  const signal s = r != nullptr ? static_cast<signal>(r->source.load()) : signal::undecided;
  const reason w = r != nullptr ? static_cast<reason>(r->why.load()) : reason::undecided;
  if (s == signal::undecided) {
    append_text(d, "placement records: how host touches are learnt is decided at the first "
                   "placement\n");
  } else {
    append_text(d, "placement records: host touches learnt from ");
    append_text(d, s == signal::uvm_events
                       ? "the UVM driver's CPU-fault and migration events ("
                       : "the process's page-fault count: any fault places tagged buffers again (");
    append_text(d, to_string(w));
    const bool passing = w == reason::no_module || w == reason::no_uvm_fd_yet ||
                         w == reason::tools_busy || w == reason::tracker_lost ||
                         (w == reason::self_check_failed &&
                          r->proof_of_layout.load() == static_cast<int>(proof::no_probe));
    if (s == signal::page_faults && passing) {
      const int tries = r->tries.load();
      char note[96];
      std::snprintf(note, sizeof note, r->retry_at.load() != 0 ? "; looked %d time%s, again later"
                                                               : "; looked %d time%s, given up",
                    tries, tries == 1 ? "" : "s");
      if (w == reason::tools_busy) {
        const std::size_t used = std::strlen(note);
        std::snprintf(note + used, sizeof note - used, ", errno %d", r->error.load());
      }
      append_text(d, note);
    }
    append_text(d, ")\n");
  }
  append_text(d, "  UVM tools interface: ");
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  std::uint64_t v = 0;
  const uvm::match m = uvm::module_layout(uvm::real_driver(), &v);
  if (m.how == uvm::match::unreadable) {
    append_text(d, "no NVIDIA UVM module loaded\n");
    return d;
  }
  if (m.how == uvm::match::unparseable) {
    append_text(d, "the UVM module's version text is not a version (not used)\n");
    return d;
  }
  append_text(d, "module ");
  append_version(d, v);
  append_text(d, m.how == uvm::match::read ? ", in the layout read at "
                                           : ", not a version read: in the layout read at ");
  append_version(d, m.found->first);
  append_text(d, " to ");
  append_version(d, m.found->newest);
  if (m.how != uvm::match::read) {
    const bool ours = r != nullptr && r->module_version.load() == v;
    append_text(d, ", ");
    append_text(d, to_string(ours ? static_cast<proof>(r->proof_of_layout.load()) : proof::none));
  }
  append_text(d, "\n");
#else
  append_text(d, "not built (UNIMEM_NO_PRIVATE_DRIVER_INTERFACE, or not Linux)\n");
#endif
  return d;
}

/// After unimem moved data (a prefetch costs microseconds; this, a system call): whether the
/// tracker still watches the runtime's UVM file (see check_tracker()).
inline void check_after_move() noexcept {
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  region* r = the_region();
  if (r == nullptr || r->source.load() != static_cast<int>(signal::uvm_events)) return;
  spin_guard g(r->lock);
  check_tracker(r, uvm::real_driver());
  copy_state& c = this_copy();
  if (c.tracker == r->tracker_fd.load() && c.tracker >= 0) c.uvm_dup = r->uvm_dup.load();
#endif
}

/// Says that unimem moved or re-advised [p, p + bytes) without a record: every record meeting it,
/// in every copy, places its whole buffer again. A private log also faults on purpose.
inline void announce(const void* p, std::size_t bytes) noexcept {
  region* r = the_region();
  if (r != nullptr) {
    const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p);
    spin_guard g(r->lock);
    append(r, lo, lo + bytes, true);
  }
  if (r == nullptr || r->shared == 0) fault_on_purpose();
}

/// touched_in(the process's log, ...).
inline int touched_since(std::uint64_t since, std::uint64_t upto, std::uintptr_t lo,
                         std::uintptr_t hi, std::uintptr_t merge_gap, span* out,
                         int max) noexcept {
  return touched_in(the_region(), since, upto, lo, hi, merge_gap, out, max);
}

/// Test hook: switch_to(s); false for uvm_events without a tracker (page_faults then lasts).
inline bool use_signal_for_testing(signal s) noexcept {
  region* r = the_region();
  if (r == nullptr || s == signal::undecided) return false;
  (void)now();  // decided
  spin_guard g(r->lock);
  if (s == signal::uvm_events && r->tracker_fd.load() < 0) return false;
  switch_to(r, s);
  return true;
}
}  // namespace host_access
}  // namespace detail
UNIMEM_END_NAMESPACE
