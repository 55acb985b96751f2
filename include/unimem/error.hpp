/// @file
/// @brief unimem::error, what every failed GPU runtime call throws, and UNIMEM_CHECK for your
/// own runtime calls.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/atomic.hpp"
#include "detail/fixed_text.hpp"

#include <cstddef>
#include <cstring>
#include <new>
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
}  // namespace detail

namespace detail {
/// Immutable, reference-counted strings back to back ("a\0b\0c\0"). Copying never throws nor
/// allocates; if the one allocation fails the parts read as "".
class shared_parts {
 public:
  shared_parts() noexcept = default;
  UNIMEM_DETAIL_COLD shared_parts(const char* a, const char* b, const char* c) noexcept {
    const char* parts[3] = {a != nullptr ? a : "", b != nullptr ? b : "", c != nullptr ? c : ""};
    std::size_t lengths[3];
    std::size_t total = 0;
    for (int k = 0; k < 3; ++k) total += (lengths[k] = std::strlen(parts[k])) + 1;
    void* raw = ::operator new(sizeof(header) + total, std::nothrow);
    if (raw == nullptr) return;
    head_ = ::new (raw) header{};
    char* out = chars();
    for (int k = 0; k < 3; ++k) {
      std::memcpy(out, parts[k], lengths[k] + 1);
      out += lengths[k] + 1;
    }
  }
  shared_parts(const shared_parts& other) noexcept : head_(other.head_) { retain(); }
  shared_parts& operator=(const shared_parts& other) noexcept {
    if (head_ != other.head_) {
      release();
      head_ = other.head_;
      retain();
    }
    return *this;
  }
  ~shared_parts() { release(); }

  [[nodiscard]] const char* part(int k) const noexcept {
    if (head_ == nullptr) return "";
    const char* p = chars();
    for (; k > 0; --k) p += std::strlen(p) + 1;
    return p;
  }

 private:
  struct header {
    atomic_cell<std::size_t> references{1};
  };
  char* chars() const noexcept { return reinterpret_cast<char*>(head_ + 1); }
  void retain() const noexcept {
    if (head_ != nullptr) head_->references.fetch_add(1);
  }
  void release() noexcept {
    if (head_ != nullptr && head_->references.fetch_add(static_cast<std::size_t>(-1)) == 1) {
      head_->~header();
      ::operator delete(static_cast<void*>(head_));
    }
    head_ = nullptr;
  }
  header* head_ = nullptr;
};
}  // namespace detail

/// @brief What every failed GPU runtime call throws: catch it as `const unimem::error&` for the
/// native status, the failed call and the user's file:line.
///
/// An interface mixed into a standard exception (as boost::exception): out of memory throws
/// unimem::out_of_memory, a `std::bad_alloc`; other failures unimem::runtime_error (and
/// unimem::mpi::error), a `std::runtime_error`. Why: docs/architecture.md, "Errors: unimem's
/// interfaces beside the standard's classes". what() names the failed call, the status's name and
/// number, the runtime's text, the user's file:line (for UNIMEM_CHECK: the check's) and what unimem
/// was doing, e.g. "unimem: <the MallocManaged call> failed: <...ErrorOutOfMemory> (2): out of
/// memory [main.cpp:12] (managed_buffer: 1099511627776 bytes)"; without a usable GPU it starts "no
/// GPU was found". Copying never throws (the parts are shared). Catch by reference: the interface
/// is abstract.
class error {
 public:
  /// @brief The whole message.
  [[nodiscard]] virtual const char* what() const noexcept = 0;
  /// @brief The native status (hipError_t or cudaError_t); for a unimem::mpi::error, "unknown
  /// error" (mpi::error::code() is MPI's code).
  [[nodiscard]] native_status code() const noexcept { return code_; }
  /// @brief The status's name, e.g. "cudaErrorInvalidConfiguration".
  [[nodiscard]] const char* code_name() const noexcept {
    return detail::backend::error_name(code_);
  }
  /// @brief The failed call as written in the source.
  [[nodiscard]] const char* call() const noexcept { return parts_.part(0); }
  /// @brief The source file of the call into unimem that failed (the caller's, not unimem's).
  [[nodiscard]] const char* file() const noexcept { return parts_.part(1); }
  /// @brief The source line of that call.
  [[nodiscard]] int line() const noexcept { return line_; }
  /// @brief True when the failure happened on a machine with no usable GPU or driver.
  [[nodiscard]] bool no_gpu() const noexcept { return no_gpu_; }
  /// @brief A sticky error (a kernel fault, e.g. an illegal address): every later call fails the
  /// same way and only a new process recovers; unimem's destructors stay safe.
  [[nodiscard]] bool sticky() const noexcept { return detail::backend::is_sticky(code_); }

 protected:
  /// @brief The parts; `message` is kept only for classes whose standard base holds none.
  error(native_status code, const char* call, const char* file, int line, bool no_gpu,
        const char* message = "") noexcept
      : parts_(call, file, message), code_(code), line_(line), no_gpu_(no_gpu) {}
  error(const error&) noexcept = default;  ///< Copies share the parts: no allocation.
  error& operator=(const error&) noexcept = default;  ///< Copy assignment, as std exceptions.
  virtual ~error() = default;
  /// @brief The message kept by the constructor ("" when none was given).
  [[nodiscard]] const char* kept_message() const noexcept { return parts_.part(2); }

 private:
  detail::shared_parts parts_;
  native_status code_;
  int line_;
  bool no_gpu_;
};

/// @brief A failed GPU runtime call other than out of memory: a `std::runtime_error` and a
/// unimem::error.
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
      : error(code, call, file, line, no_gpu,
              detail::error_message(code, call, file, line, context, no_gpu).c_str()) {}
  /// @brief The whole message.
  [[nodiscard]] const char* what() const noexcept override {
    const char* m = kept_message();
    return *m != '\0' ? m : "unimem: out of memory";
  }
};

namespace detail {
/// True when the runtime sees no usable GPU; never throws.
inline bool no_gpu_present() noexcept {
  int n = 0;
  const backend::result r = backend::device_count(&n);
  return r.code != backend::success || n == 0;
}

/// Throws out_of_memory for the runtime's out-of-memory status, else runtime_error.
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_status(native_status status,
                                                                        const char* call,
                                                                        call_site where,
                                                                        const char* context,
                                                                        bool no_gpu)
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
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_error(backend::result r,
                                                                       call_site where,
                                                                       const char* context = "")
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  (void)backend::take_last_error();
  throw_status(r.code, r.call, where, context, no_gpu_present());
}
#else
    ;
#endif

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
  throw_status(status, call, where, context, false);
}
#else
    ;
#endif

/// A stream or event query's answer: false for "not ready", true for success, else throws.
/// Where the runtime records "not ready" as the last error (HIP on AMD), only that is cleared:
/// an error the caller's own calls left pending stays.
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
