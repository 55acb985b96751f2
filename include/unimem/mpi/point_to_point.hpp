/// @file
/// @brief unimem::mpi::send, recv, isend, irecv and sendrecv over any range, each one ordinary
/// MPI message of the element type and the range's count.
#pragma once

#include <mpi.h>

#include "../unimem.hpp"
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
/// array) to rank `dest` with `tag`. Work queued on stream `s` is done before MPI reads the
/// range (without a stream: every GPU's work, except for pageable memory; with
/// unimem::mpi::host_ready: nothing). The range must stay unchanged until the request
/// completes. The message is one ordinary MPI message (any MPI_Recv of the element type
/// receives it).
///
/// With a stream, isend does not wait for the GPU: it queues the copy out to pinned memory
/// (staged ranges) on `s` and returns; the MPI message is posted once the work before it is
/// done, by the request's test() or wait(), by any unimem::mpi call that may block, or by
/// flush(). Messages to one peer on one communicator are posted in the order of the isend
/// calls. Before blocking in a plain MPI call on a peer that waits for this message, call
/// flush(). Without a stream, the GPU's work is waited for here and the message posted at once.
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

/// @brief Starts receiving into `range` from rank `source` with `tag`. Once the request
/// completes the data is in the range; GPU work queued on `s` before this call is done before
/// MPI writes (without a stream: every GPU's, except for pageable memory; with
/// unimem::mpi::host_ready: none). Any MPI message of the element type and at most the range's
/// count matches (unimem's or a plain MPI_Send); source and tag may be MPI_ANY_SOURCE /
/// MPI_ANY_TAG.
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

/// @brief Sends `range` to `dest` and returns when the range may be reused: one MPI_Send once
/// the work `s` names is done (a stream's, every GPU's, or none: host_ready).
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

/// @brief Receives into `range` and returns when the data is there. `source` and `tag` may be
/// MPI_ANY_SOURCE / MPI_ANY_TAG; the status names the sender, the tag and the element count (a
/// message shorter than the range is fine, as in MPI; a longer one is unimem::mpi::error of
/// class MPI_ERR_TRUNCATE).
/// @throws as irecv().
template <class R>
status recv(R&& range, int source, int tag, MPI_Comm comm = MPI_COMM_WORLD, ordering s = {},
            call_site where = call_site::current()) {
  return request(detail::receive_t{}, detail::span_of(range), source, tag, comm, s,
                 detail::posting::blocking, where)
      .wait(where);
}

/// @brief Sends `out` to `dest` and receives `in` from `source` at once (no deadlock between two
/// ranks that exchange); returns when both are done, with the receive's status.
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
