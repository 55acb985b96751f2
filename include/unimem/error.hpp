// unimem: errors. Every failed runtime call becomes a unimem::error that names the native call
// and the user's call site.
/// @file
/// @brief unimem::error, what every failed GPU runtime call throws, and UNIMEM_CHECK for your own
/// runtime calls.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

/// @brief The runtime's own status type: hipError_t or cudaError_t.
using native_status = detail::backend::status;

/// @brief A failed GPU runtime call: the native status, the call's text and where it was made.
///
/// what() names the failed call as written, the status's name and number, the runtime's text,
/// the file:line of the user's call into unimem (for UNIMEM_CHECK: of the check) and what
/// unimem was doing, e.g. for an allocation that ran out of memory:
/// "unimem: <the MallocManaged call> failed: <...ErrorOutOfMemory> (2): out of memory
/// [main.cpp:12] (managed_buffer: 1099511627776 bytes)".
/// When the machine has no usable GPU the message starts with "no GPU was found".
class error : public std::runtime_error {
 public:
  /// @brief An error for a failed call; what() is composed from all the parts. unimem makes
  /// these; your own code rarely needs to.
  /// @param code    the runtime's status
  /// @param call    the call that failed, as written
  /// @param file    source file of the call (the user's call into unimem)
  /// @param line    source line of the call
  /// @param context what unimem was doing, or empty
  /// @param no_gpu  whether the machine has no usable GPU (changes the message)
  error(native_status code, std::string call, std::string file, int line,
        const std::string& context = {}, bool no_gpu = false)
      : std::runtime_error(compose(code, call, file, line, context, no_gpu)),
        code_(code),
        call_(std::move(call)),
        file_(std::move(file)),
        line_(line),
        no_gpu_(no_gpu) {}

  /// @brief The native status (hipError_t or cudaError_t).
  [[nodiscard]] native_status code() const noexcept { return code_; }
  /// @brief The status's name, e.g. "cudaErrorInvalidConfiguration".
  [[nodiscard]] const char* code_name() const noexcept {
    return detail::backend::error_name(code_);
  }
  /// @brief The failed call as written in the source.
  [[nodiscard]] const std::string& call() const noexcept { return call_; }
  /// @brief The source file of the call into unimem that failed (the caller's, not unimem's).
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  /// @brief The source line of that call.
  [[nodiscard]] int line() const noexcept { return line_; }
  /// @brief True when the failure happened on a machine with no usable GPU or driver.
  [[nodiscard]] bool no_gpu() const noexcept { return no_gpu_; }
  /// @brief True for a sticky error (a kernel fault such as an illegal address): the GPU
  /// context is unusable, every later call fails the same way, and only a new process
  /// recovers. Destructors of unimem objects stay safe (they never throw).
  [[nodiscard]] bool sticky() const noexcept { return detail::backend::is_sticky(code_); }

 private:
  static std::string compose(native_status code, const std::string& call, const std::string& file,
                             int line, const std::string& context, bool no_gpu) {
    std::string m = "unimem: ";
    if (no_gpu) m += "no GPU was found (device_count() == 0): ";
    m += call;
    m += " failed: ";
    const char* name = detail::backend::error_name(code);
    const char* text = detail::backend::error_string(code);
    m += name;
    m += " (" + std::to_string(static_cast<int>(code)) + ")";
    if (std::strcmp(name, text) != 0) {  // some runtimes (HIP 5) describe a status by its name
      m += ": ";
      m += text;
    }
    m += " [" + file + ":" + std::to_string(line) + "]";
    if (!context.empty()) m += " (" + context + ")";
    if (detail::backend::is_sticky(code)) {
      m += "; this error is sticky: the GPU context is unusable and every later call fails the "
           "same way; restart the process";
    }
    return m;
  }

  native_status code_;
  std::string call_;
  std::string file_;
  int line_;
  bool no_gpu_;
};

namespace detail {

/// True when the runtime sees no usable GPU; never throws.
inline bool no_gpu_present() noexcept {
  int n = 0;
  const backend::result r = backend::device_count(&n);
  return r.code != backend::success || n == 0;
}

/// The cold path of check(): clears the runtime's last error (a sticky one stays) and throws.
[[noreturn]] inline void throw_error(backend::result r, call_site where,
                                     const std::string& context = {}) {
  (void)backend::take_last_error();
  throw error(r.code, r.call, where.file, where.line, context, no_gpu_present());
}

/// Throws unimem::error when the call failed.
inline void check(backend::result r, call_site where) {
  if (r.code != backend::success) throw_error(r, where);
}

/// Throws unimem::error with `status` for a failure unimem detects itself (no runtime call
/// failed): `call` names the unimem call, `context` says why.
[[noreturn]] inline void fail(native_status status, const char* call, call_site where,
                              const std::string& context) {
  throw error(status, call, where.file, where.line, context, false);
}

/// The answer of a stream or event query: false for "not ready", true for success; anything
/// else throws. Where the runtime records "not ready" as the last error (HIP on AMD does), that
/// record, and only that one, is cleared: an error the caller's own runtime calls left pending
/// stays for the caller to read.
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
///
/// @code
///   UNIMEM_CHECK(my_runtime_call(args));   // e.g. your own hip/cuda MemsetAsync
/// @endcode
#define UNIMEM_CHECK(...) \
  ::unimem::detail::check(UNIMEM_DETAIL_NATIVE(__VA_ARGS__), ::unimem::call_site{__FILE__, __LINE__})
