// unimem::mpi: Point to point: send, recv, isend, irecv and sendrecv over any range, each one ordinary MPI
// message of the element type and the range's count.
/// @file
/// @brief unimem::mpi::send, recv, isend, irecv and sendrecv.
#pragma once

#include <mpi.h>

#include "../unimem.hpp"
#include "error.hpp"
#include "request.hpp"
#include "staging.hpp"

#include <cstddef>
#include <exception>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {

/// @cond INTERNAL
template <class T>
request isend_impl(const detail::span<const T>& sp, int dest, int tag, MPI_Comm comm,
                   stream_ref s, call_site where, detail::posting when) {
  using U = std::remove_cv_t<T>;
  detail::require_initialized("unimem::mpi::isend");
  request r;
  if (dest == MPI_PROC_NULL) return r;  // nothing is sent: complete at once, as in MPI
  r.start(request::kind::send, sp, s, where);
  r.st_ = status{dest, tag, sp.size};
  const std::size_t bytes = sp.size * sizeof(U);
  const bool may_defer = when == detail::posting::deferrable;
  if (r.op_.route == path::staged) {
    // One copy out in stream order, then one MPI message from the pinned buffer: what a
    // hand-written staging does. On a stream, the message is posted once the copy is done
    // (request::test(), wait(), flush()), and isend returns at once.
    if (bytes > 0) r.staging_ = detail::staging(bytes, where);
    detail::settle_for_copies(s, where);
    if (bytes > 0) detail::copy_in_order(r.staging_.get(), r.op_.data, bytes, s, where);
    if (may_defer && !s.is_default() && r.defer_send(s, dest, tag, comm, where)) return r;
    s.synchronize(where);
  } else if (r.op_.route == path::via_host) {
    (void)ready_for_host(view<const U>(sp.data, sp.size), s, where);
  } else if (!s.is_default() && sp.kind != memory::pageable) {
    // MPI reads the range itself once the work queued on s is done.
    if (may_defer && r.defer_send(s, dest, tag, comm, where)) return r;
    s.synchronize(where);
  } else {
    detail::settle(sp.kind, s, where);
  }
  r.post_send(dest, tag, comm, when == detail::posting::blocking, where);
  return r;
}

// blocking (recv()): MPI_Recv instead of MPI_Irecv, and the request returned complete, with
// its data in place.
template <class T>
request irecv_impl(const detail::span<T>& sp, int source, int tag, MPI_Comm comm, stream_ref s,
                   call_site where, bool blocking) {
  static_assert(!std::is_const<T>::value, "unimem::mpi: a receive range must not be const");
  detail::require_initialized("unimem::mpi::irecv");
  request r;
  if (source == MPI_PROC_NULL) {  // nothing arrives: complete at once, as in MPI
    r.st_ = status{MPI_PROC_NULL, MPI_ANY_TAG, 0};
    return r;
  }
  r.start(request::kind::recv, sp, s, where);
  r.st_ = status{source, tag, 0};
  const std::size_t bytes = sp.size * sizeof(T);
  if (r.op_.route == path::staged) {
    // MPI writes the pinned block; the copy into the range waits in wait() for the GPU's
    // work (stream order, or every GPU's without a stream).
    if (bytes > 0) r.staging_ = detail::staging(bytes, where);
  } else if (r.op_.route == path::via_host) {
    if (bytes > 0) {
      const view<T> v(sp.data, sp.size);
      r.op_.back = last_prefetch_location(v, where);
      (void)ready_for_host(v, s, where);
    }
  } else {
    detail::settle(sp.kind, s, where);  // no GPU work still reads what MPI will overwrite
  }
  if (blocking) {
    r.receive_now(source, tag, comm, where);
    return r;
  }
  detail::check(MPI_Irecv(r.buffer(), r.type_.count(), r.type_.type(), source, tag, comm,
                          &r.req_),
                "MPI_Irecv", where);
  r.op_.pending = true;
  return r;
}
/// @endcond

/// @brief Starts sending `range` (a unimem buffer, a view, managed_vector, std::vector, an
/// array) to rank `dest` with `tag`. Work queued on `s` is done before MPI reads the range
/// (without a stream: every GPU's work, except for pageable memory). The range must stay
/// unchanged until the request completes. The message is one ordinary MPI message (any
/// MPI_Recv of the element type receives it).
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
                            stream_ref s = {}, call_site where = call_site::current()) {
  static_assert(detail::outlives_request_v<R>,
                "unimem::mpi::isend: a temporary container would be freed while MPI still reads "
                "it; keep it in a variable until the request completes (a view may be temporary)");
  return isend_impl(detail::const_span_of(range), dest, tag, comm, s, where,
                    detail::posting::deferrable);
}

/// @brief Starts receiving into `range` from rank `source` with `tag`. Once the request
/// completes the data is in the range; GPU work queued on `s` before this call is done before
/// MPI writes (without a stream: every GPU's, except for pageable memory). Any MPI message of
/// the element type and at most the range's count matches (unimem's or a plain MPI_Send);
/// source and tag may be MPI_ANY_SOURCE / MPI_ANY_TAG.
/// @throws unimem::mpi::error, unimem::error, unimem::argument_error.
template <class R>
[[nodiscard]] request irecv(R&& range, int source, int tag, MPI_Comm comm = MPI_COMM_WORLD,
                            stream_ref s = {}, call_site where = call_site::current()) {
  static_assert(detail::outlives_request_v<R>,
                "unimem::mpi::irecv: a temporary container would be freed while MPI still writes "
                "it; keep it in a variable until the request completes (a view may be temporary)");
  return irecv_impl(detail::span_of(range), source, tag, comm, s, where, false);
}

/// @brief Sends `range` to `dest` and returns when the range may be reused (isend() + wait()).
/// @throws as isend().
template <class R>
void send(const R& range, int dest, int tag, MPI_Comm comm = MPI_COMM_WORLD, stream_ref s = {},
          call_site where = call_site::current()) {
  (void)isend_impl(detail::const_span_of(range), dest, tag, comm, s, where,
                   detail::posting::blocking)
      .wait(where);
}

/// @brief Receives into `range` and returns when the data is there. `source` and `tag` may be
/// MPI_ANY_SOURCE / MPI_ANY_TAG; the status names the sender, the tag and the element count (a
/// message shorter than the range is fine, as in MPI; a longer one is unimem::mpi::error of
/// class MPI_ERR_TRUNCATE).
/// @throws as irecv().
template <class R>
status recv(R&& range, int source, int tag, MPI_Comm comm = MPI_COMM_WORLD, stream_ref s = {},
            call_site where = call_site::current()) {
  return irecv_impl(detail::span_of(range), source, tag, comm, s, where, true).wait(where);
}

/// @brief Sends `out` to `dest` and receives `in` from `source` at once (no deadlock between two
/// ranks that exchange); returns when both are done, with the receive's status.
/// @throws as isend() and irecv().
template <class Out, class In>
status sendrecv(const Out& out, int dest, int send_tag, In&& in, int source, int recv_tag,
                MPI_Comm comm = MPI_COMM_WORLD, stream_ref s = {},
                call_site where = call_site::current()) {
  request rx = irecv_impl(detail::span_of(in), source, recv_tag, comm, s, where, false);
  request tx;
  try {
    tx = isend_impl(detail::const_span_of(out), dest, send_tag, comm, s, where,
                    detail::posting::now);
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
