// unimem::mpi: A failed MPI call: unimem::mpi::error (MPI's code, class and message, the call and the
// caller's file:line), and the checks every unimem::mpi call makes.
/// @file
/// @brief unimem::mpi::error, a failed MPI call as a std::runtime_error and a unimem::error.
#pragma once

#include <mpi.h>

#include "../argument_error.hpp"
#include "../config.hpp"
#include "../error.hpp"
#include "../detail/fixed_text.hpp"

#include <stdexcept>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {

/// @brief A failed MPI call: MPI's error code and class, MPI's own message, the call and the
/// file:line of the caller's call into unimem::mpi. A `std::runtime_error` and a
/// unimem::error (whose code() is the runtime's "unknown error" status: read this class's
/// code() for MPI's), so `catch (const unimem::error&)` catches failures of MPI as well as of
/// the GPU runtime.
class error : public std::runtime_error, public unimem::error {
 public:
  /// @brief Builds the message "unimem::mpi: CALL failed: MPI's message (code C, class K)
  /// [file:line] (context)".
  UNIMEM_DETAIL_COLD error(int code, const char* call, call_site where, const char* context = "")
      : error(code, class_of(code), call, where, context) {}
  /// @brief The whole message.
  [[nodiscard]] const char* what() const noexcept override { return std::runtime_error::what(); }
  /// @brief MPI's error code (MPI_ERR_RANK, ... or an implementation's own code).
  [[nodiscard]] int code() const noexcept { return code_; }
  /// @brief MPI_Error_class of the code.
  [[nodiscard]] int error_class() const noexcept { return class_; }

 private:
  error(int code, int cls, const char* call, call_site where, const char* context)
      : std::runtime_error(message(code, cls, call, where, context).c_str()),
        unimem::error(unimem::detail::backend::error_unknown, call, where.file, where.line,
                      false),
        code_(code),
        class_(cls) {}
  static int class_of(int code) noexcept {
    int cls = code;
    if (MPI_Error_class(code, &cls) != MPI_SUCCESS) cls = code;
    return cls;
  }
  static unimem::detail::fixed_text<1024> message(int code, int cls, const char* call,
                                                  call_site where, const char* context) noexcept {
    char text[MPI_MAX_ERROR_STRING + 1] = {};
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
      std::snprintf(text, sizeof text, "MPI error %d", code);
    }
    unimem::detail::fixed_text<1024> m("unimem::mpi: ");
    m.append(call).append(" failed: ").append(text);
    m.append(" (code ").append(code).append(", class ").append(cls).append(")");
    m.append(" [").append(where.file).append(":").append(where.line).append("]");
    if (context != nullptr && *context != '\0') m.append(" (").append(context).append(")");
    return m;
  }

  int code_;
  int class_;
};

namespace detail {
[[noreturn]] UNIMEM_DETAIL_COLD inline void throw_mpi(int code, const char* call,
                                                      call_site where, const char* context = "") {
  throw error(code, call, where, context);
}
inline void check(int code, const char* call, call_site where, const char* context = "") {
  if (code != MPI_SUCCESS) throw_mpi(code, call, where, context);
}
/// MPI_Initialized and not yet MPI_Finalized: the calls below need it.
inline void require_initialized(const char* what) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init == 0 || fin != 0) {
    unimem::detail::throw_refused<unimem::invalid_argument>(unimem::detail::refusal(what).append(": MPI is not initialised (call MPI_Init or make a "
                                      "unimem::mpi::environment first)"));
  }
}
}  // namespace detail

}  // namespace mpi
UNIMEM_END_NAMESPACE
