// unimem: fault injection for unimem's own tests (docs/reliability.md), empty unless
// UNIMEM_FAULT_INJECTION is defined (unimem_fault_tests). Every runtime call passes fires()
// first: calls are counted, and an armed plan fails the N-th with its status instead of making
// it; a release is made anyway, then reports the status. A ledger counts what the runtime holds
// for the process, so a test sees exactly that a failed operation left nothing behind.
#pragma once

#include "../../config.hpp"

#if defined(UNIMEM_FAULT_INJECTION)

#include <atomic>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace fault {
/// What the ledger counts (memory_pool: the runtime's memory pools that managed_pool creates).
enum class resource { device_memory, pinned_memory, stream, event, memory_pool, count_ };
constexpr int resource_count = static_cast<int>(resource::count_);
/// The process's plan and counters (calls are counted from any thread).
struct state {
  std::atomic<long long> calls{0};    // runtime calls counted since arm()
  std::atomic<long long> fail_at{0};  // the call number that fails; 0: none
  std::atomic<int> status{0};         // the status it fails with (the backend's status, as int)
  std::atomic<long long> fired{0};    // failures injected since arm()
  std::atomic<const char*> fired_call{nullptr};  // the text of the last call that was failed
  std::atomic<long long> held[resource_count] = {};
};

inline state& plan() noexcept {
  static state s;
  return s;
}
/// Counts one call and says whether it is the one to fail (it is counted as fired).
inline bool fires(const char* call) noexcept {
  state& s = plan();
  const long long n = s.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n != s.fail_at.load(std::memory_order_relaxed)) return false;
  s.fired.fetch_add(1, std::memory_order_relaxed);
  s.fired_call.store(call, std::memory_order_relaxed);
  return true;
}
/// Restarts counting; call `n` (1: the next) fails with `status`. n = 0 disarms.
inline void arm(long long n, int status) noexcept {
  state& s = plan();
  s.status.store(status, std::memory_order_relaxed);
  s.fired.store(0, std::memory_order_relaxed);
  s.fired_call.store(nullptr, std::memory_order_relaxed);
  s.calls.store(0, std::memory_order_relaxed);
  s.fail_at.store(n, std::memory_order_seq_cst);
}
inline void disarm() noexcept { plan().fail_at.store(0, std::memory_order_seq_cst); }
inline long long calls() noexcept { return plan().calls.load(); }
inline long long fired() noexcept { return plan().fired.load(); }
inline const char* fired_call() noexcept { return plan().fired_call.load(); }
inline int status() noexcept { return plan().status.load(); }
/// What the runtime holds for this process, by kind.
inline long long held(resource r) noexcept { return plan().held[static_cast<int>(r)].load(); }
inline void count(resource r, long long delta) noexcept {
  plan().held[static_cast<int>(r)].fetch_add(delta, std::memory_order_relaxed);
}
}  // namespace fault
}  // namespace detail
UNIMEM_END_NAMESPACE

/// In a test build: true when this call is the one the plan fails.
#define UNIMEM_DETAIL_FAULT_FIRES(call) ::unimem::detail::fault::fires(call)

#else

#define UNIMEM_DETAIL_FAULT_FIRES(call) false

#endif
