// unimem: spin_guard (not public), the lock of the host-access log and the pools; nothing in the
// core's buffers, copies and launches takes one.
#pragma once

#include "../config.hpp"
#include "atomic.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sched.h>
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// Holds a spin lock (a cell, 0 when free) for a scope: unimem's one lock (no <mutex>), for short
/// critical sections. A waiter yields after 64 spins, so that a preempted holder can finish.
class spin_guard {
 public:
  explicit spin_guard(atomic_cell<int>& cell) noexcept : cell_(cell) {
    for (;;) {
      int expected = 0;
      if (cell_.compare_exchange(expected, 1)) return;
      for (int spins = 0; cell_.load() != 0;) {
#if defined(__unix__) || defined(__APPLE__)
        if (++spins > 64) sched_yield();
#endif
      }
    }
  }
  ~spin_guard() { cell_.store(0); }
  spin_guard(const spin_guard&) = delete;
  spin_guard& operator=(const spin_guard&) = delete;

 private:
  atomic_cell<int>& cell_;
};
}  // namespace detail
UNIMEM_END_NAMESPACE
