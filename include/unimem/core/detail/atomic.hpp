// unimem: atomic_cell (not public), for process-wide flags and caches, placement records and the
// locks of spin_guard.hpp. GCC, Clang and nvcc's host compilers use the __atomic builtins (<atomic>
// costs a small CUDA TU about 5 % more compile time, scripts/compile_time.sh); others std::atomic.
#pragma once

#include "../config.hpp"

#include <type_traits>

#if !defined(__GNUC__) && !defined(__clang__)
#include <atomic>
#define UNIMEM_DETAIL_STD_ATOMIC 1
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// An integer or pointer read and written atomically: acquire loads, release stores, acq_rel
/// compare_exchange (on failure reads the value into `expected`) and fetch_add (returns the old).
template <class T>
class atomic_cell {
  static_assert(std::is_integral<T>::value || std::is_pointer<T>::value,
                "atomic_cell holds integers and pointers");

 public:
  constexpr atomic_cell() noexcept : value_() {}
  constexpr explicit atomic_cell(T v) noexcept : value_(v) {}
  atomic_cell(const atomic_cell&) = delete;
  atomic_cell& operator=(const atomic_cell&) = delete;

#if defined(UNIMEM_DETAIL_STD_ATOMIC)
  T load() const noexcept { return value_.load(std::memory_order_acquire); }
  void store(T v) noexcept { value_.store(v, std::memory_order_release); }
  bool compare_exchange(T& expected, T desired) noexcept {
    return value_.compare_exchange_strong(expected, desired, std::memory_order_acq_rel,
                                          std::memory_order_acquire);
  }
  T fetch_add(T d) noexcept { return value_.fetch_add(d, std::memory_order_acq_rel); }

 private:
  std::atomic<T> value_;
#else
  T load() const noexcept { return __atomic_load_n(&value_, __ATOMIC_ACQUIRE); }
  void store(T v) noexcept { __atomic_store_n(&value_, v, __ATOMIC_RELEASE); }
  bool compare_exchange(T& expected, T desired) noexcept {
    return __atomic_compare_exchange_n(&value_, &expected, desired, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
  }
  T fetch_add(T d) noexcept { return __atomic_fetch_add(&value_, d, __ATOMIC_ACQ_REL); }

 private:
  T value_;
#endif
};

}  // namespace detail
UNIMEM_END_NAMESPACE
