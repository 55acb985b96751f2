/// @file
/// @brief unimem::mpi::request (a pending isend() or irecv(); the send and receive paths are
/// its constructors), status and wait_all().
#pragma once

#include <mpi.h>

#include "../core.hpp"
#include "../placement/placement.hpp"
#include "datatype.hpp"
#include "deferred.hpp"
#include "error.hpp"
#include "path.hpp"
#include "staging.hpp"

#include <cstddef>
#include <cstdio>
#include <exception>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {
class request;
/// @brief What a recv() got: its source, tag and element count.
struct status {
  /// @brief The sender's rank.
  int source = MPI_ANY_SOURCE;
  /// @brief The message's tag.
  int tag = MPI_ANY_TAG;
  /// @brief Elements received.
  std::size_t count = 0;
};
/// @cond INTERNAL
namespace detail {
/// When an operation's MPI call is made.
enum class posting {
  deferrable,  // isend(): once the GPU work before it is done, maybe after the call returns
  now,  // sendrecv(), irecv(): here; a send syncs its stream (no event, no queue: 2-3 us saved)
  blocking,  // send(), recv(): MPI_Send / MPI_Recv, no MPI request to allocate and wait for
};
/// Selects request's constructor of a send or of a receive.
struct send_t {};
struct receive_t {};
/// What a request owns but its deferred send.
struct operation {
  MPI_Request req = MPI_REQUEST_NULL;
  message_type type;
  staging block;  // the pinned staging block of a staged range
  status st;
  bool pending = false;
  bool receive = false;
  path route = path::direct;
  unsigned char* data = nullptr;  // the user's range
  std::size_t element_size = 1;
  std::size_t basic_per_element = 1;  // MPI basic elements in one element (MPI_Get_elements_x)
  ordering order{};
  optional_location back{};  // via_host receives: where to prefetch the range afterwards
};
/// wait_all's first argument: the request and the caller's call_site, filled in where the
/// request converts (a defaulted parameter cannot follow wait_all's pack).
struct first_request {
  first_request(request& r, call_site w = call_site::current()) noexcept  // NOLINT: converts
      : req(r), where(w) {}
  request& req;
  call_site where;
};
}  // namespace detail
/// @endcond
/// @brief A pending non-blocking operation (isend(), irecv()), move-only. wait() completes it,
/// and so does the destructor (MPI never writes into freed memory): declare it after the
/// buffers it uses, and touch the buffer from neither CPU nor GPU until it completes. An isend()
/// on a stream may return before its message is posted: test() posts it once the GPU work
/// before it is done, wait() waits for that work and posts it; see flush().
class request {
 public:
  /// @brief An empty, completed request.
  request() noexcept = default;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  /// @brief Takes over o's operation; o becomes empty.
  request(request&& o) noexcept { swap(o); }
  /// @brief Completes this request's operation (as the destructor does), then takes over o's.
  request& operator=(request&& o) noexcept {
    request(std::move(o)).swap(*this);
    return *this;
  }
  /// @brief Completes a pending operation; an error goes to stderr.
  ~request() {
    if (!pending()) return;
    try {
      (void)wait();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "unimem::mpi::request destroyed while pending: %s\n", e.what());
    }
  }
  /// @brief Swaps two requests.
  void swap(request& o) noexcept {
    std::swap(op_, o.op_);
    std::swap(deferred_, o.deferred_);
  }
  /// @brief True until the operation completed (wait(), or test() returned true).
  [[nodiscard]] bool pending() const noexcept { return op_.pending; }
  /// @brief Completes the operation: a send may reuse its buffer, a receive's data is in place.
  /// @return The status of a receive (source, tag, elements); of a send, the count sent.
  /// @throws unimem::mpi::error for MPI's failures (a message longer than the receive range:
  /// class MPI_ERR_TRUNCATE); unimem::error for the GPU's. The request completes either way.
  status wait(call_site where = call_site::current()) {
    if (wait_queued(where)) op_.order.stream().synchronize(where);
    return op_.st;
  }
  /// @brief Gives up (a receive is cancelled, a send completed; the range's contents are then
  /// undefined), for error paths where waiting could block for ever. Never throws.
  void cancel() noexcept {
    if (!pending()) return;
    if (deferred_) op_.req = deferred_.withdraw();  // nothing is sent if it was not posted
    detail::abandon(op_.req, op_.receive);
    op_.pending = false;
  }
  /// @brief Whether the operation has completed (MPI_Test; then as after wait()). Never blocks;
  /// posts the deferred sends (of any request) whose GPU work is done.
  /// @throws as wait().
  [[nodiscard]] bool test(call_site where = call_site::current()) {
    if (!pending()) return true;
    // Every ready deferred send: a loop testing a receive may await the answer to one of them.
    (void)detail::deferred().post(MPI_COMM_NULL, 0, nullptr, false);
    if (!deferred_.post()) return false;  // its GPU work (or an earlier send's) is not done
    adopt_deferred(where);
    int flag = 0;
    MPI_Status s;
    const int code = MPI_Test(&op_.req, &flag, &s);
    if (code == MPI_SUCCESS && flag == 0) return false;
    (void)complete(code, s, "MPI_Test", where);
    return true;
  }
  /// @cond INTERNAL
  /// The send path (isend, send, sendrecv). Nothing throws once an MPI request is pending.
  template <class T>
  request(detail::send_t, const detail::span<const T>& sp, int dest, int tag, MPI_Comm comm,
          ordering o, detail::posting when, call_site where) {
    detail::require_initialized("unimem::mpi::isend");
    if (dest == MPI_PROC_NULL) return;  // nothing is sent: complete at once, as in MPI
    start(sp, o, where);
    op_.st = status{dest, tag, sp.size};
    const std::size_t bytes = sp.size * sizeof(T);
    const stream_ref s = o.stream();
    const bool may_defer = when == detail::posting::deferrable && !s.is_default();
    if (op_.route == path::staged) {  // one copy out in stream order, then one message
      if (bytes > 0) {
        op_.block = detail::staging(bytes, where);
        detail::settle_for_copies(o, where);
        detail::copy_in_order(op_.block.get(), op_.data, bytes, s, where);
      }
      if (may_defer && defer(dest, tag, comm, where)) return;
      s.synchronize(where);
    } else if (op_.route == path::via_host) {
      (void)ready_for_host(view<const T>(sp.data, sp.size), s, where);
    } else if (may_defer && sp.kind != memory::pageable) {
      if (defer(dest, tag, comm, where)) return;  // MPI reads the range once s's work is done
      s.synchronize(where);
    } else {
      detail::settle(sp.kind, o, where);
    }
    (void)detail::deferred().post(comm, dest, nullptr, true);  // earlier sends to dest first
    if (when == detail::posting::blocking) {  // MPI_Send: complete when it returns
      detail::check(MPI_Send(buffer(), op_.type.count(), op_.type.type(), dest, tag, comm),
                    "MPI_Send", where);
      return;
    }
    detail::check(
        MPI_Isend(buffer(), op_.type.count(), op_.type.type(), dest, tag, comm, &op_.req),
        "MPI_Isend", where);
    op_.pending = true;
  }
  /// The receive path (irecv, recv, sendrecv); a blocking one returns complete.
  template <class T>
  request(detail::receive_t, const detail::span<T>& sp, int source, int tag, MPI_Comm comm,
          ordering o, detail::posting when, call_site where) {
    static_assert(!std::is_const<T>::value, "unimem::mpi: a receive range must not be const");
    detail::require_initialized("unimem::mpi::irecv");
    op_.receive = true;
    op_.st = status{source, tag, 0};
    if (source == MPI_PROC_NULL) {  // nothing arrives: complete at once, as in MPI
      op_.st.tag = MPI_ANY_TAG;
      return;
    }
    start(sp, o, where);
    const std::size_t bytes = sp.size * sizeof(T);
    if (op_.route == path::staged) {  // MPI writes the block; complete() copies it in
      if (bytes > 0) op_.block = detail::staging(bytes, where);
    } else if (op_.route == path::via_host) {
      if (bytes > 0) {
        const view<T> v(sp.data, sp.size);
        op_.back = last_prefetch_location(v, where);
        (void)ready_for_host(v, o.stream(), where);
      }
    } else {
      detail::settle(sp.kind, o, where);  // no GPU work still reads what MPI will overwrite
    }
    if (when == detail::posting::blocking) {
      flush();  // the peer may be waiting for a deferred send of this process
      MPI_Status s;
      const int code =
          MPI_Recv(buffer(), op_.type.count(), op_.type.type(), source, tag, comm, &s);
      (void)complete(code, s, "MPI_Recv", where);
      return;
    }
    detail::check(
        MPI_Irecv(buffer(), op_.type.count(), op_.type.type(), source, tag, comm, &op_.req),
        "MPI_Irecv", where);
    op_.pending = true;
  }
  /// @endcond

 private:
  template <class... Rest>
  friend void wait_all(detail::first_request first, Rest&... rest);

  template <class T>
  void start(const detail::span<T>& sp, ordering o, call_site where) {
    using U = std::remove_cv_t<T>;
    op_.route = detail::path_of(sp, o.host_ready(), where);
    op_.data = reinterpret_cast<unsigned char*>(const_cast<U*>(sp.data));
    op_.element_size = sizeof(U);
    op_.basic_per_element = detail::builtin_datatype<U>::value ? 1 : sizeof(U);
    op_.order = o;
    op_.type = detail::message_type(datatype<U>(where), sp.size, where);
  }
  /// Where MPI reads or writes: the staging buffer, or the range itself.
  unsigned char* buffer() const noexcept {
    return op_.route == path::staged ? op_.block.get() : op_.data;
  }
  /// Defers MPI_Isend until the stream's queued work is done; false (nothing deferred) when no
  /// event could be recorded there.
  bool defer(int dest, int tag, MPI_Comm comm, call_site where) {
    if (!deferred_.start(buffer(), op_.type.count(), op_.type.type(), dest, tag, comm,
                         op_.order.stream(), where)) {
      return false;
    }
    op_.pending = true;
    adopt_deferred(where);  // posted already if the work was done
    return true;
  }
  /// A posted deferred send's MPI request becomes this request's.
  /// @throws unimem::mpi::error when its MPI_Isend failed (the request is then complete).
  void adopt_deferred(call_site where) {
    if (!deferred_.posted()) return;
    int code = MPI_SUCCESS;
    op_.req = deferred_.withdraw(&code);
    if (code != MPI_SUCCESS) {
      op_.pending = false;
      detail::throw_mpi(code, "MPI_Isend", where, "sending");
    }
  }
  /// wait() but for the staged copy in: true when the stream must still be synchronised.
  bool wait_queued(call_site where) {
    if (!pending()) return false;
    flush();  // every deferred send first: the peer may be waiting for one of them
    adopt_deferred(where);
    MPI_Status s;
    const int code = MPI_Wait(&op_.req, &s);
    return complete(code, s, "MPI_Wait", where, false);
  }
  /// After MPI finished (or failed): a receive's count, staged copy in, prefetch back. The
  /// request is complete whatever happens. @return whether a copy in is queued, not waited for.
  bool complete(int code, const MPI_Status& s, const char* call, call_site where,
                bool wait_for_copy = true) {
    op_.pending = false;
    if (code != MPI_SUCCESS) {  // not MPI_ERR_IN_STATUS: one request, the status holds no more
      detail::throw_mpi(code, call, where, op_.receive ? "receiving into the range" : "sending");
    }
    if (!op_.receive) return false;
    op_.st.source = s.MPI_SOURCE;
    op_.st.tag = s.MPI_TAG;
    op_.st.count = op_.type.elements(s, op_.basic_per_element, where);
    const std::size_t bytes = op_.st.count * op_.element_size;
    const stream_ref stream = op_.order.stream();
    if (op_.route == path::via_host && op_.back.has_value() && op_.back->is_device() &&
        bytes > 0) {
      (void)prefetch(view<unsigned char>(op_.data, bytes), *op_.back, stream, where);
    }
    if (op_.route != path::staged || bytes == 0) return false;
    detail::settle_for_copies(op_.order, where);  // no GPU work still uses the range
    detail::copy_in_order(op_.data, op_.block.get(), bytes, stream, where);
    if (!wait_for_copy) return true;
    stream.synchronize(where);
    return false;
  }

  detail::operation op_;
  detail::deferred_handle deferred_;  // destroyed first: it waits for a copy into op_.block
};
/// @brief Completes every request given, in order, each even when an earlier one throws (the
/// first exception is rethrown at the end). Staged receives' copies in are waited for together,
/// one synchronisation a stream.
/// @throws as request::wait(), naming the line of the wait_all call.
template <class... Rest>
void wait_all(detail::first_request first, Rest&... rest) {
  static_assert(std::conjunction<std::is_same<Rest, request>...>::value,
                "unimem::mpi::wait_all takes unimem::mpi::request objects");
  request* const all[] = {&first.req, &rest...};
  const call_site where = first.where;
  std::exception_ptr failed;
  stream_ref owed[sizeof all / sizeof all[0]];
  std::size_t streams = 0;
  for (request* r : all) {
    try {
      if (r->wait_queued(where)) {
        const stream_ref s = r->op_.order.stream();
        bool known = false;
        for (std::size_t i = 0; i < streams && !known; ++i) known = owed[i] == s;
        if (!known) owed[streams++] = s;
      }
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  for (std::size_t i = 0; i < streams; ++i) {
    try {
      owed[i].synchronize(where);
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
}
/// @brief wait_all() of no request: nothing to do.
inline void wait_all() noexcept {}
}  // namespace mpi
UNIMEM_END_NAMESPACE
