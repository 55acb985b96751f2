// unimem's fault injection, for unimem's own tests only (docs/reliability.md): the program
// unimem_fault_tests defines UNIMEM_FAULT_INJECTION and has this folder on its include path, and
// core/detail/backend/common.hpp includes this header there instead of its plain call macros.
// Every runtime call passes fires() first: calls are counted, and an armed plan fails the N-th
// with its status instead of making it; a release is made anyway, then reports the status. A
// ledger counts what the runtime holds for the process, so a test sees exactly that a failed
// operation left nothing behind. Users' builds contain none of it
// (fault_injection.absent_from_users_builds).
#pragma once

#if !defined(UNIMEM_FAULT_INJECTION)
#error "unimem_fault_injection.hpp is for unimem's fault-injection test build only"
#endif

#include <unimem/core/config.hpp>

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

/// True when this call is the one the plan fails.
#define UNIMEM_DETAIL_FAULT_FIRES(call) ::unimem::detail::fault::fires(call)
// The call is counted, and the N-th one fails without being made.
#define UNIMEM_DETAIL_INJECTED(call)                                                        \
  ::unimem::detail::backend::result {                                                       \
    static_cast<::unimem::detail::backend::status>(::unimem::detail::fault::status()), call \
  }
#define UNIMEM_DETAIL_NATIVE_TEXT(text, ...)                           \
  (::unimem::detail::fault::fires(text) ? UNIMEM_DETAIL_INJECTED(text) \
                                        : ::unimem::detail::backend::result{(__VA_ARGS__), text})
// A release is always made (the runtime then holds nothing) and may then report the failure.
#define UNIMEM_DETAIL_RELEASE_TEXT(held, kind, text, ...)                                     \
  ::unimem::detail::backend::released(::unimem::detail::backend::result{(__VA_ARGS__), text}, \
                                      (held), ::unimem::detail::fault::resource::kind)
#define UNIMEM_DETAIL_INJECTION_POINT(call)                                        \
  do {                                                                             \
    if (::unimem::detail::fault::fires(call)) return UNIMEM_DETAIL_INJECTED(call); \
  } while (0)

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
// UNIMEM_DETAIL_MADE(call, out, kind): a call that made `*out` (memory, a stream, an event);
// counted in the ledger, and a release takes it off (then may fail).
#define UNIMEM_DETAIL_MADE(r, out, kind) \
  ::unimem::detail::backend::made(r, out, ::unimem::detail::fault::resource::kind)
template <class Result, class Handle>
Result made(Result r, Handle* out, fault::resource kind) noexcept {
  if (static_cast<int>(r.code) == 0 && *out != nullptr) fault::count(kind, 1);
  return r;
}
template <class Result>
Result released(Result r, bool held, fault::resource kind) noexcept {
  if (held && static_cast<int>(r.code) == 0) fault::count(kind, -1);
  if (fault::fires(r.call)) r.code = static_cast<decltype(r.code)>(fault::status());
  return r;
}
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
