/// @file
/// @brief unimem::mpi::error, a failed MPI call, and the checks every unimem::mpi call makes.
#pragma once

#include <mpi.h>

#include "../core/argument_error.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/detail/atomic.hpp"
#include "../core/detail/fixed_text.hpp"

#include <stdexcept>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {
/// @brief A failed MPI call: MPI's code, class and message, the call and the caller's file:line.
/// Also a unimem::error (whose code() is the runtime's "unknown error"; this class's code() is
/// MPI's), so `catch (const unimem::error&)` catches MPI's failures as well as the GPU's.
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
/// Whether MPI is live (initialised, not finalised): set by the first check that finds it so,
/// cleared when MPI_Finalize deletes MPI_COMM_SELF's attributes; a message reads one flag.
inline ::unimem::detail::atomic_cell<int>& mpi_live() noexcept {
  static ::unimem::detail::atomic_cell<int> live{0};
  return live;
}
/// MPI_Initialized and not yet MPI_Finalized: the calls below need it.
inline void require_initialized(const char* what) {
  if (mpi_live().load() != 0) return;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init == 0 || fin != 0) {
    unimem::detail::throw_refused<unimem::invalid_argument>(unimem::detail::refusal(what).append(
        ": MPI is not initialised (call MPI_Init or make a unimem::mpi::environment first)"));
  }
  MPI_Comm_delete_attr_function* const on_finalize = [](MPI_Comm, int, void*, void*) {
    mpi_live().store(0);
    return MPI_SUCCESS;
  };
  int key = MPI_KEYVAL_INVALID;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_finalize, &key, nullptr) == MPI_SUCCESS &&
      MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr) == MPI_SUCCESS) {
    mpi_live().store(1);  // otherwise asked again next time
  }
}
}  // namespace detail
}  // namespace mpi
UNIMEM_END_NAMESPACE
