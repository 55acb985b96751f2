/// @file
/// @brief unimem::mpi::environment, local_rank() and use_local_device().
#pragma once

#include <mpi.h>

#include "../core.hpp"
#include "../placement/placement.hpp"
#include "error.hpp"
#include "staging.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace mpi {
/// @brief Frees the pinned staging buffers kept for reuse (as ~environment does); their bytes.
inline std::size_t release_staging() noexcept { return detail::pool().release(); }
/// @brief This process's rank among `comm`'s ranks on its node: the usual index of its GPU.
/// @throws unimem::mpi::error.
inline int local_rank(MPI_Comm comm = MPI_COMM_WORLD, call_site where = call_site::current()) {
  detail::require_initialized("unimem::mpi::local_rank");
  int rank = 0;
  detail::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", where);
  MPI_Comm node = MPI_COMM_NULL;
  detail::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
                "MPI_Comm_split_type", where);
  int local = 0;
  const int rc = MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  detail::check(rc, "MPI_Comm_rank", where);
  return local;
}
/// @brief Makes GPU local_rank(comm) % device_count() current on this thread and returns it.
/// @throws unimem::error without a GPU ("no GPU was found"); unimem::mpi::error.
inline device use_local_device(MPI_Comm comm = MPI_COMM_WORLD,
                               call_site where = call_site::current()) {
  const int local = local_rank(comm, where);
  const int n = device_count(where);
  device d(n == 0 ? 0 : local % n, where);  // none: unimem::error, "no GPU was found"
  d.make_current(where);
  return d;
}
/// @brief MPI for a program's lifetime, made once in main(): initialises MPI unless it is, makes
/// MPI_COMM_WORLD and MPI_COMM_SELF (and communicators made from them) return errors for
/// unimem::mpi to throw, and finalises MPI when destroyed if it initialised it.
class environment {
 public:
  /// @brief Initialises MPI with at least `required` thread support.
  /// @throws unimem::mpi::error when MPI cannot be initialised or gives less thread support.
  environment(int& argc, char**& argv, int required = MPI_THREAD_FUNNELED,
              call_site where = call_site::current()) {
    int init = 0;
    MPI_Initialized(&init);
    if (init == 0) {
      detail::check(MPI_Init_thread(&argc, &argv, required, &provided_), "MPI_Init_thread", where);
      owner_ = true;
    } else {
      MPI_Query_thread(&provided_);
    }
    detail::check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                  "MPI_Comm_set_errhandler", where);
    detail::check(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN),
                  "MPI_Comm_set_errhandler", where);
    if (provided_ < required) {
      if (owner_) MPI_Finalize();
      owner_ = false;
      detail::throw_mpi(MPI_ERR_OTHER, "MPI_Init_thread", where,
                        "this MPI does not give the thread support asked for");
    }
  }
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;
  /// @brief Frees the staging buffers and, if this object initialised MPI, finalises it.
  ~environment() {
    (void)release_staging();
    int fin = 0;
    MPI_Finalized(&fin);
    if (owner_ && fin == 0) MPI_Finalize();
  }
  /// @brief This process's rank in MPI_COMM_WORLD.
  [[nodiscard]] int rank() const noexcept {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }
  /// @brief The number of ranks in MPI_COMM_WORLD.
  [[nodiscard]] int size() const noexcept {
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
  /// @brief The thread support MPI gives.
  [[nodiscard]] int thread_support() const noexcept { return provided_; }

 private:
  bool owner_ = false;
  int provided_ = MPI_THREAD_SINGLE;
};
}  // namespace mpi
UNIMEM_END_NAMESPACE
