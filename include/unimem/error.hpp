// unimem: errors. Every failed runtime call becomes a unimem::error that names the native call
// and the user's call site.
/// @file
/// @brief unimem::error, what every failed GPU runtime call throws, and UNIMEM_CHECK for your own
/// runtime calls.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "text.hpp"

#include <cstring>
#include <exception>

UNIMEM_BEGIN_NAMESPACE

/// @brief The runtime's own status type: hipError_t or cudaError_t.
using native_status = detail::backend::status;

namespace detail {
/// Writes unimem::error's message (see the class) into `out`.
UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void compose_error_message(
    fixed_text<1024>& out, native_status code, const char* call, const char* file, int line,
    const char* context, bool no_gpu) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  out.append("unimem: ");
  if (no_gpu) out.append("no GPU was found (device_count() == 0): ");
  out.append(call).append(" failed: ");
  const char* name = detail::backend::error_name(code);
  const char* text = detail::backend::error_string(code);
  out.append(name).append(" (").append(static_cast<int>(code)).append(")");
  if (name != nullptr && text != nullptr && std::strcmp(name, text) != 0) {
    // some runtimes (HIP 5) describe a status by its name
    out.append(": ").append(text);
  }
  out.append(" [").append(file).append(":").append(line).append("]");
  if (context != nullptr && *context != '\0') out.append(" (").append(context).append(")");
  if (detail::backend::is_sticky(code)) {
    out.append(
        "; this error is sticky: the GPU context is unusable and every later call fails the "
        "same way; restart the process");
  }
}
#else
    ;
#endif
}  // namespace detail

/// @brief A failed GPU runtime call: the native status, the call's text and where it was made.
///
/// what() names the failed call as written, the status's name and number, the runtime's text,
/// the file:line of the user's call into unimem (for UNIMEM_CHECK: of the check) and what
/// unimem was doing, e.g. for an allocation that ran out of memory:
/// "unimem: <the MallocManaged call> failed: <...ErrorOutOfMemory> (2): out of memory
/// [main.cpp:12] (managed_buffer: 1099511627776 bytes)".
/// When the machine has no usable GPU the message starts with "no GPU was found".
///
/// Derives from std::exception (catch it as that or as unimem::error). The message lives in
/// the object (at most message_capacity - 1 characters), so copying an error never allocates
/// or throws, and the header needs neither `<stdexcept>` nor `<string>`.
class error : public std::exception {
 public:
  /// @brief The longest what() kept, including the terminating zero.
  static constexpr std::size_t message_capacity = 1024;
  /// @brief The longest call() and file() kept, including the terminating zero.
  static constexpr std::size_t part_capacity = 256;

  /// @brief An error for a failed call; what() is composed from all the parts. unimem makes
  /// these; your own code rarely needs to.
  /// @param code    the runtime's status
  /// @param call    the call that failed, as written
  /// @param file    source file of the call (the user's call into unimem)
  /// @param line    source line of the call
  /// @param context what unimem was doing, or empty
  /// @param no_gpu  whether the machine has no usable GPU (changes the message)
  UNIMEM_DETAIL_COLD error(native_status code, const char* call, const char* file, int line,
                           const char* context = "", bool no_gpu = false) noexcept
      : code_(code), line_(line), no_gpu_(no_gpu), call_(call), file_(file) {
    detail::compose_error_message(message_, code, call, file, line, context, no_gpu);
  }

  /// @brief The whole message (see the class description).
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }
  /// @brief The native status (hipError_t or cudaError_t).
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
  /// @brief True for a sticky error (a kernel fault such as an illegal address): the GPU
  /// context is unusable, every later call fails the same way, and only a new process
  /// recovers. Destructors of unimem objects stay safe (they never throw).
  [[nodiscard]] bool sticky() const noexcept { return detail::backend::is_sticky(code_); }

 private:
  native_status code_;
  int line_;
  bool no_gpu_;
  detail::fixed_text<part_capacity> call_;
  detail::fixed_text<part_capacity> file_;
  static_assert(message_capacity == 1024, "compose_error_message writes a fixed_text<1024>");
  detail::fixed_text<message_capacity> message_;
};

namespace detail {

/// True when the runtime sees no usable GPU; never throws.
inline bool no_gpu_present() noexcept {
  int n = 0;
  const backend::result r = backend::device_count(&n);
  return r.code != backend::success || n == 0;
}

/// The cold path of check(): clears the runtime's last error (a sticky one stays) and throws.
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_error(backend::result r,
                                                                       call_site where,
                                                                       const char* context = "")
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  (void)backend::take_last_error();
  throw error(r.code, r.call, where.file, where.line, context, no_gpu_present());
}
#else
    ;
#endif

/// Throws unimem::error when the call failed.
inline void check(backend::result r, call_site where) {
  if (r.code != backend::success) throw_error(r, where);
}

/// Throws unimem::error with `status` for a failure unimem detects itself (no runtime call
/// failed): `call` names the unimem call, `context` says why.
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void fail(native_status status,
                                                                const char* call, call_site where,
                                                                const char* context)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  throw error(status, call, where.file, where.line, context, false);
}
#else
    ;
#endif

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
