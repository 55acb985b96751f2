/// @file
/// @brief unimem::error, what every failed GPU runtime call throws; UNIMEM_CHECK for your own.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/fixed_text.hpp"

#include <cstring>
#include <stdexcept>

UNIMEM_BEGIN_NAMESPACE
/// @brief The runtime's own status type: hipError_t or cudaError_t.
using native_status = detail::backend::status;

namespace detail {
/// unimem::error's message (see the class), at most 1023 characters.
UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE fixed_text<1024> error_message(
    native_status code, const char* call, const char* file, int line, const char* context,
    bool no_gpu) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  fixed_text<1024> out("unimem: ");
  if (no_gpu) out.append("no GPU was found (device_count() == 0): ");
  out.append(call).append(" failed: ");
  const char* name = detail::backend::error_name(code);
  const char* text = detail::backend::error_string(code);
  out.append(name).append(" (").append(static_cast<int>(code)).append(")");
  if (name != nullptr && text != nullptr && std::strcmp(name, text) != 0) {  // HIP 5: the name
    out.append(": ").append(text);
  }
  out.append(" [").append(file).append(":").append(line).append("]");
  if (context != nullptr && *context != '\0') out.append(" (").append(context).append(")");
  if (detail::backend::is_sticky(code)) {
    out.append(
        "; this error is sticky: the GPU context is unusable and every later call fails the "
        "same way; restart the process");
  }
  return out;
}
#else
    ;
#endif

/// An immutable string kept as the standard library keeps an exception's message: copies share
/// it, never throw nor allocate (no count of unimem's own); "" where it could not be made (OOM).
class kept_text {
 public:
  UNIMEM_DETAIL_COLD explicit kept_text(const char* s) noexcept : text_(keep(s)) {}
  [[nodiscard]] const char* c_str() const noexcept { return text_.what(); }

 private:
  static std::runtime_error keep(const char* s) noexcept {
    try {
      return std::runtime_error(s != nullptr ? s : "");
    } catch (...) {  // std::bad_alloc: the part reads ""
      static const std::runtime_error none("");
      return none;
    }
  }
  std::runtime_error text_;
};
}  // namespace detail

/// @brief What every failed GPU runtime call throws: catch it as `const unimem::error&` for the
/// native status, the failed call and the user's file:line.
///
/// An interface mixed into a standard exception: out of memory throws unimem::out_of_memory, a
/// `std::bad_alloc`; other failures unimem::runtime_error (and unimem::mpi::error), a
/// `std::runtime_error` (why: docs/architecture.md, "Errors: unimem's interfaces beside the
/// standard's classes"). what() names the failed call, the status's name, number and text, the
/// user's file:line (UNIMEM_CHECK's for it) and what unimem was doing (an example is in
/// docs/architecture.md, "Errors name your line"); without a usable GPU it starts "no GPU was
/// found". Copying never throws (the texts are shared). Catch by reference: it is abstract.
class error {
 public:
  /// @brief The whole message.
  [[nodiscard]] virtual const char* what() const noexcept = 0;
  /// @brief The native status (hipError_t or cudaError_t); "unknown error" for an mpi::error.
  [[nodiscard]] native_status code() const noexcept { return code_; }
  /// @brief The status's name, e.g. "cudaErrorInvalidConfiguration".
  [[nodiscard]] const char* code_name() const noexcept {
    return detail::backend::error_name(code_);
  }
  /// @brief The failed call as written in the source.
  [[nodiscard]] const char* call() const noexcept { return call_.c_str(); }
  /// @brief The source file of the call into unimem that failed (the caller's, not unimem's).
  [[nodiscard]] const char* file() const noexcept { return file_.c_str(); }
  /// @brief The source line of that call.
  [[nodiscard]] int line() const noexcept { return line_; }
  /// @brief True when the failure happened on a machine with no usable GPU or driver.
  [[nodiscard]] bool no_gpu() const noexcept { return no_gpu_; }
  /// @brief A sticky error (a kernel fault, e.g. an illegal address): every later call fails the
  /// same way and only a new process recovers; unimem's destructors stay safe.
  [[nodiscard]] bool sticky() const noexcept { return detail::backend::is_sticky(code_); }

 protected:
  /// @brief The parts.
  error(native_status code, const char* call, const char* file, int line, bool no_gpu) noexcept
      : call_(call), file_(file), code_(code), line_(line), no_gpu_(no_gpu) {}
  error(const error&) noexcept = default;  ///< Copies share the texts: no allocation.
  error& operator=(const error&) noexcept = default;  ///< Copy assignment, as std exceptions.
  virtual ~error() = default;

 private:
  detail::kept_text call_, file_;
  native_status code_;
  int line_;
  bool no_gpu_;
};

/// @brief A failed runtime call, not out of memory: a `std::runtime_error` and a unimem::error.
class runtime_error : public std::runtime_error, public error {
 public:
  /// @brief An error for a failed call; `context`: what unimem was doing, or empty; `no_gpu`: the
  /// machine has no usable GPU. UNIMEM_CHECK makes these for your runtime calls.
  runtime_error(native_status code, const char* call, const char* file, int line,
                const char* context = "", bool no_gpu = false)
      : std::runtime_error(detail::error_message(code, call, file, line, context, no_gpu).c_str()),
        error(code, call, file, line, no_gpu) {}
  /// @brief The whole message.
  [[nodiscard]] const char* what() const noexcept override { return std::runtime_error::what(); }
};

/// @brief Out of memory, from any call: a `std::bad_alloc` (as Allocator requires) and an error.
class out_of_memory : public std::bad_alloc, public error {
 public:
  /// @brief As runtime_error's constructor.
  out_of_memory(native_status code, const char* call, const char* file, int line,
                const char* context = "", bool no_gpu = false) noexcept
      : error(code, call, file, line, no_gpu),
        message_(detail::error_message(code, call, file, line, context, no_gpu).c_str()) {}
  /// @brief The whole message.
  [[nodiscard]] const char* what() const noexcept override {
    const char* m = message_.c_str();
    return *m != '\0' ? m : "unimem: out of memory";
  }

 private:
  detail::kept_text message_;  // std::bad_alloc keeps none
};

namespace detail {
/// True when the runtime sees no usable GPU; never throws.
inline bool no_gpu_present() noexcept {
  int n = 0;
  const backend::result r = backend::device_count(&n);
  return r.code != backend::success || n == 0;
}

/// Throws out_of_memory for the runtime's out-of-memory status, else runtime_error; called directly
/// where unimem detects a failure itself (`call`: the unimem call, `context`: why).
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void fail(
    native_status status, const char* call, call_site where, const char* context,
    bool no_gpu = false)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  if (status == backend::error_out_of_memory) {
    throw out_of_memory(status, call, where.file, where.line, context, no_gpu);
  }
  throw runtime_error(status, call, where.file, where.line, context, no_gpu);
}
#else
    ;
#endif

/// The cold path of check(): clears the runtime's last error (a sticky one stays) and throws.
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_error(
    backend::result r, call_site where, const char* context = "")
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  (void)backend::take_last_error();
  fail(r.code, r.call, where, context, no_gpu_present());
}
#else
    ;
#endif

inline void check(backend::result r, call_site where) {
  if (r.code != backend::success) throw_error(r, where);
}

/// A stream or event query's answer: false for "not ready", true for success, else throws. Only
/// our "not ready" is cleared as last error (HIP on AMD records it), not one the caller left.
inline bool query_ready(backend::result r, call_site where) {
  if (r.code == backend::error_not_ready) {
    backend::forget_if_last(r.code);
    return false;
  }
  check(r, where);
  return true;
}
}  // namespace detail
UNIMEM_END_NAMESPACE

/// @brief Checks a raw runtime call of your own: throws unimem::error when it fails.
/// @code
///   UNIMEM_CHECK(my_runtime_call(args));   // e.g. your own hip/cuda MemsetAsync
/// @endcode
#define UNIMEM_CHECK(...) \
  ::unimem::detail::check(UNIMEM_DETAIL_NATIVE(__VA_ARGS__), ::unimem::call_site{__FILE__, __LINE__})
