// unimem (internal, runtime-free): what each copy of unimem keeps for itself (its mapping of the
// process's log, the descriptors it opened for it), made at the first use, and fork(): the child
// waits on no lock a thread of its parent held, makes its own log, closes what its parent's copy
// opened, and never attaches a tracker to a UVM file it inherited (the parent's va space).
#pragma once

#include "region.hpp"

#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
#include <pthread.h>
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace host_access {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
/// The UVM descriptors a child after fork() inherited, at most this many named (more: none of
/// the process's UVM descriptors is taken for its own).
constexpr int max_inherited = 16;

/// What each copy of unimem keeps for itself: its mapping of the log, and the descriptors it
/// made (which a child after fork() closes: every copy registers one fork handler).
struct copy_state {
  atomic_cell<region*> log;
  atomic_cell<int> making;    // the process whose thread makes the log (0: none): making_guard
  region* parents = nullptr;  // in a child after fork(): the parent's log, to unmap
  std::size_t page = 0;       // the system's page size, as the log was laid out for it
  int memfd = -1, tracker = -1, uvm_dup = -1;
  bool fork_handler = false;
  int inherited[max_inherited] = {};  // in a child: the UVM descriptors open at fork()
  int inherited_count = 0;            // how many (-1: more than max_inherited)
};
inline copy_state& this_copy() noexcept {
  static copy_state c;
  return c;
}

/// Holds a copy's `making` lock for a scope. The lock names the process of its holder, so that a
/// child after fork() takes over a lock that a thread of its parent held at fork() (that thread
/// is not in the child: it would never let go).
class making_guard {
 public:
  explicit making_guard(atomic_cell<int>& cell) noexcept : cell_(cell) {
    const int me = static_cast<int>(getpid());
    for (int spins = 0;; ++spins) {
      int seen = 0;
      if (cell_.compare_exchange(seen, me)) return;
      if (seen != me && cell_.compare_exchange(seen, me)) return;  // the parent's holder
      if (spins > 64) sched_yield();
    }
  }
  ~making_guard() { cell_.store(0); }
  making_guard(const making_guard&) = delete;
  making_guard& operator=(const making_guard&) = delete;

 private:
  atomic_cell<int>& cell_;
};

/// In the child of a fork(): forget the parent's log (its memory is still shared with the
/// parent: never written here), close what this copy opened for it, release a lock a parent's
/// thread held, and note the UVM descriptors inherited. Async-signal-safe.
inline void after_fork_in_child() noexcept {
  copy_state& c = this_copy();
  c.making.store(0);
  region* r = c.log.load();
  c.parents = r;
  c.log.store(nullptr);
  // Only what the parent's log still names (another copy may have replaced the tracker; a
  // descriptor both copies close is closed once, the other close fails harmlessly).
  if (r != nullptr && c.tracker >= 0 && c.tracker == r->tracker_fd.load()) close(c.tracker);
  if (r != nullptr && c.uvm_dup >= 0 && c.uvm_dup == r->uvm_dup.load()) close(c.uvm_dup);
  if (c.memfd >= 0) close(c.memfd);
  c.memfd = c.tracker = c.uvm_dup = -1;
#if defined(UNIMEM_DETAIL_UVM_DRIVER)
  int fds[max_inherited + 1];
  const int n = uvm::fds_linked_to("/dev/nvidia-uvm", fds, max_inherited + 1);
  for (int i = 0; i < n && i < max_inherited; ++i) c.inherited[i] = fds[i];
  c.inherited_count = n > max_inherited ? -1 : n;
#endif
}

/// This copy's log, made at its first use (and again in a child after fork()): the shared one
/// where the fork handler is in place, else a private one.
UNIMEM_DETAIL_OUTLINE region* this_copys_region() noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  copy_state& c = this_copy();
  making_guard g(c.making);
  if (region* r = c.log.load()) return r;
  if (!c.fork_handler) c.fork_handler = pthread_atfork(nullptr, nullptr, after_fork_in_child) == 0;
  const std::size_t page = system_page();
  c.page = page;
  if (c.parents != nullptr) munmap(c.parents, offsets_for(page).bytes);
  c.parents = nullptr;
  int memfd = -1;
  region* r = c.fork_handler ? make_region(page, &memfd) : private_region(page);
  c.memfd = memfd;
  c.log.store(r);
  return r;
}
#else
    ;
#endif
#endif  // UNIMEM_DETAIL_HOST_ACCESS_LOG

/// The process's log as this copy maps it (null off Linux, or where no memory could be mapped).
inline region* the_region() noexcept {
#if defined(UNIMEM_DETAIL_HOST_ACCESS_LOG)
  region* r = this_copy().log.load();
  return r != nullptr ? r : this_copys_region();
#else
  return nullptr;
#endif
}
}  // namespace host_access
}  // namespace detail
UNIMEM_END_NAMESPACE
