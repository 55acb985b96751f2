/// @file
/// @brief unimem::mpi::send, recv, isend, irecv and sendrecv over any range.
#pragma once

#include <mpi.h>

#include "../core.hpp"
#include "../placement/placement.hpp"
#include "error.hpp"
#include "path.hpp"
#include "request.hpp"
#include "staging.hpp"

#include <cstddef>
#include <exception>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {
/// @brief Starts sending `range` (a unimem buffer, a view, managed_vector, std::vector, an
/// array) to rank `dest` with `tag`, as one ordinary MPI message; the range must stay unchanged
/// until the request completes. MPI reads it after the work `s` names (see ordering).
///
/// With a stream, isend queues any copy out to pinned memory on `s` and returns; the message is
/// posted once that work is done, by test(), wait(), any unimem::mpi call that may block, or
/// flush() (call it before blocking in plain MPI on a peer that awaits this message), in isend
/// order per peer and communicator. Without a stream it waits here and posts at once.
/// @throws unimem::mpi::error, unimem::error, unimem::argument_error (MPI not initialised).
template <class R>
[[nodiscard]] request isend(R&& range, int dest, int tag, MPI_Comm comm = MPI_COMM_WORLD,
                            ordering s = {}, call_site where = call_site::current()) {
  static_assert(detail::outlives_request_v<R>,
                "unimem::mpi::isend: a temporary container would be freed while MPI still reads "
                "it; keep it in a variable until the request completes (a view may be temporary)");
  return request(detail::send_t{}, detail::const_span_of(range), dest, tag, comm, s,
                 detail::posting::deferrable, where);
}
/// @brief Starts receiving into `range` from rank `source` (or MPI_ANY_SOURCE) with `tag` (or
/// MPI_ANY_TAG); MPI writes after the work `s` names (see ordering). Any MPI message of the
/// element type and at most the range's count matches, unimem's or a plain MPI_Send.
/// @throws unimem::mpi::error, unimem::error, unimem::argument_error.
template <class R>
[[nodiscard]] request irecv(R&& range, int source, int tag, MPI_Comm comm = MPI_COMM_WORLD,
                            ordering s = {}, call_site where = call_site::current()) {
  static_assert(detail::outlives_request_v<R>,
                "unimem::mpi::irecv: a temporary container would be freed while MPI still writes "
                "it; keep it in a variable until the request completes (a view may be temporary)");
  return request(detail::receive_t{}, detail::span_of(range), source, tag, comm, s,
                 detail::posting::now, where);
}
/// @brief Sends `range` to `dest` and returns when it may be reused: one MPI_Send once the work
/// `s` names is done.
/// @code
///   unimem::mpi::send(buf, peer, tag, MPI_COMM_WORLD, s);  // after the work queued on s
///   unimem::mpi::send(host_vec, peer, tag, MPI_COMM_WORLD, unimem::mpi::host_ready);  // now
/// @endcode
/// @throws as isend().
template <class R>
void send(const R& range, int dest, int tag, MPI_Comm comm = MPI_COMM_WORLD, ordering s = {},
          call_site where = call_site::current()) {
  (void)request(detail::send_t{}, detail::const_span_of(range), dest, tag, comm, s,
                detail::posting::blocking, where);
}
/// @brief Receives into `range` and returns when the data is there, as irecv(). A shorter
/// message is fine; a longer one is unimem::mpi::error of class MPI_ERR_TRUNCATE.
/// @throws as irecv().
template <class R>
status recv(R&& range, int source, int tag, MPI_Comm comm = MPI_COMM_WORLD, ordering s = {},
            call_site where = call_site::current()) {
  return request(detail::receive_t{}, detail::span_of(range), source, tag, comm, s,
                 detail::posting::blocking, where)
      .wait(where);
}
/// @brief Sends `out` and receives `in` at once (two ranks that exchange cannot deadlock);
/// returns when both are done, with the receive's status.
/// @throws as isend() and irecv().
template <class Out, class In>
status sendrecv(const Out& out, int dest, int send_tag, In&& in, int source, int recv_tag,
                MPI_Comm comm = MPI_COMM_WORLD, ordering s = {},
                call_site where = call_site::current()) {
  request rx(detail::receive_t{}, detail::span_of(in), source, recv_tag, comm, s,
             detail::posting::now, where);
  request tx;
  try {
    tx = request(detail::send_t{}, detail::const_span_of(out), dest, send_tag, comm, s,
                 detail::posting::now, where);
  } catch (...) {
    rx.cancel();  // not wait(): the peer may never send
    throw;
  }
  std::exception_ptr failed;
  status st;
  try {
    st = rx.wait(where);
  } catch (...) {
    failed = std::current_exception();
  }
  try {
    (void)tx.wait(where);
  } catch (...) {
    if (!failed) failed = std::current_exception();
  }
  if (failed) std::rethrow_exception(failed);
  return st;
}
}  // namespace mpi
UNIMEM_END_NAMESPACE
