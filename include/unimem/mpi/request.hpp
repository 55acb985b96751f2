// unimem::mpi: unimem::mpi::request (a pending isend() or irecv(), RAII), its status, and wait_all().
/// @file
/// @brief unimem::mpi::request and status: a pending non-blocking operation, move-only.
#pragma once

#include <mpi.h>

#include "../unimem.hpp"
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

/// @cond INTERNAL
namespace detail {
/// When a send's MPI message goes out.
enum class posting {
  /// isend(): it may wait for the stream's work after the call returns (an event and the
  /// queue of deferred sends).
  deferrable,
  /// sendrecv(): the stream is synchronised and the message posted here (MPI_Isend), as
  /// hand-written staging does, without the event and the deferred queue (their bookkeeping
  /// cost 2-3 us a message).
  now,
  /// send(): as `now`, by a blocking MPI_Send, which completes the request (what raw code
  /// calls: no request of MPI's own to allocate and wait for).
  blocking,
};
}  // namespace detail
/// @endcond

/// @brief What a recv() got: its source, tag and element count.
struct status {
  /// @brief The sender's rank.
  int source = MPI_ANY_SOURCE;
  /// @brief The message's tag.
  int tag = MPI_ANY_TAG;
  /// @brief Elements received.
  std::size_t count = 0;
};

/// @brief A pending non-blocking operation (isend(), irecv()), move-only. wait() completes it;
/// a request destroyed while pending is completed by its destructor (it cannot be dropped and
/// leave MPI writing into freed memory), so declare it after the buffers it uses. The buffer
/// must not be touched by the CPU or the GPU until the request completes.
///
/// An isend() on a stream may return before its MPI message is posted: the message waits for
/// the GPU work before it (the stream's work, the copy out to pinned memory). test() posts it
/// once that work is done; wait() waits for the work and posts it; see flush().
class request {
 public:
  /// @brief An empty, completed request.
  request() noexcept = default;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  /// @brief Takes over o's operation; o becomes empty.
  request(request&& o) noexcept { swap(o); }
  /// @brief Completes this request's own operation first (as the destructor does), then takes
  /// over o's.
  request& operator=(request&& o) noexcept {
    request(std::move(o)).swap(*this);
    return *this;
  }
  /// @brief Completes a pending operation; an error is written to stderr, since a destructor
  /// cannot throw.
  ~request() {
    if (pending()) {
      try {
        (void)wait();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "unimem::mpi::request destroyed while pending: %s\n", e.what());
      }
    }
    if (deferred_ != nullptr) {  // only where wait() failed before it took the send over
      detail::deferred().withdraw(deferred_);
      release_deferred();
    }
  }
  /// @brief Swaps two requests.
  void swap(request& o) noexcept {
    std::swap(req_, o.req_);
    std::swap(type_, o.type_);
    std::swap(staging_, o.staging_);
    std::swap(st_, o.st_);
    std::swap(op_, o.op_);
    std::swap(deferred_, o.deferred_);
  }

  /// @brief True until the operation completed (wait(), or test() returned true).
  [[nodiscard]] bool pending() const noexcept { return op_.pending; }

  /// @brief Completes the operation: a send may reuse its buffer, a receive's data is in place
  /// (for staged receives, copied in on the stream and waited for).
  /// @return The status of a receive (source, tag, elements); of a send, the count sent.
  /// @throws unimem::mpi::error for MPI's failures (a message longer than the receive range:
  /// class MPI_ERR_TRUNCATE); unimem::error for the GPU's. The request is completed either way.
  status wait(call_site where = call_site::current()) {
    if (wait_queued(where)) op_.stream.synchronize(where);
    return st_;
  }

  /// @brief Gives the operation up: a receive's message is cancelled (MPI_Cancel), a send is
  /// completed; the range is then free and its contents undefined. For error paths where
  /// waiting could block for ever (the peer failed). Never throws.
  void cancel() noexcept {
    if (!pending()) return;
    if (deferred_ != nullptr) {
      detail::deferred().withdraw(deferred_);  // nothing is sent if it was not posted
      req_ = deferred_->posted ? deferred_->request : MPI_REQUEST_NULL;
      release_deferred();  // after its copy: the staging block may go back to the pool
    }
    detail::abandon(req_, op_.direction == kind::recv);
    op_.pending = false;
  }

  /// @brief Whether the operation has completed (MPI_Test); once true, the request is complete
  /// as after wait(). Never blocks; posts the deferred sends (of any request) whose GPU work is
  /// done.
  /// @throws as wait().
  [[nodiscard]] bool test(call_site where = call_site::current()) {
    if (!pending()) return true;
    // Progress for every deferred send whose GPU work is done, not only this request's: a
    // loop that tests a receive may be waiting for the answer to one of them.
    (void)detail::deferred().post(MPI_COMM_NULL, 0, nullptr, false);
    if (deferred_ != nullptr &&
        !detail::deferred().post(deferred_->comm, deferred_->dest, deferred_, false)) {
      return false;  // the GPU work before the message (or an earlier one's) is not done
    }
    adopt_deferred(where);
    int flag = 0;
    MPI_Status s;
    const int code = MPI_Test(&req_, &flag, &s);
    if (code == MPI_SUCCESS && flag == 0) return false;
    complete(code, s, "MPI_Test", where);
    return true;
  }

 private:
  enum class kind {
    send,  ///< isend()
    recv,  ///< irecv()
  };
  struct operation {
    bool pending = false;
    kind direction = kind::send;
    path route = path::direct;
    unsigned char* data = nullptr;  // the user's range
    std::size_t count = 0;          // elements of the range
    std::size_t element_size = 1;
    std::size_t basic_per_element = 1;  // MPI basic elements in one element (MPI_Get_elements_x)
    stream_ref stream{};
    optional_location back{};  // via_host receives: where to prefetch the range afterwards
  };

  template <class T>
  friend request isend_impl(const detail::span<const T>&, int, int, MPI_Comm, stream_ref,
                            call_site, detail::posting);
  template <class T>
  friend request irecv_impl(const detail::span<T>&, int, int, MPI_Comm, stream_ref, call_site,
                            bool);

  /// What isend_impl and irecv_impl share: the operation's description and its MPI datatype.
  template <class T>
  void start(kind k, const detail::span<T>& sp, stream_ref s, call_site where) {
    using U = std::remove_cv_t<T>;
    op_.direction = k;
    op_.route = detail::path_of(sp, where);
    op_.data = reinterpret_cast<unsigned char*>(const_cast<U*>(sp.data));
    op_.count = sp.size;
    op_.element_size = sizeof(U);
    op_.basic_per_element = detail::builtin_datatype<U>::value ? 1 : sizeof(U);
    op_.stream = s;
    type_ = detail::message_type(datatype<U>(where), sp.size, where);
  }

  /// Where MPI reads or writes: the staging buffer, or the range itself.
  unsigned char* buffer() const noexcept {
    return op_.route == path::staged ? staging_.get() : op_.data;
  }

  template <class... Requests>
  friend void wait_all(Requests&... rs);

  /// wait() up to the staged copy in, which is queued on op_.stream and not waited for.
  /// @return whether that stream must still be synchronised before the data is in place.
  bool wait_queued(call_site where) {
    if (!pending()) return false;
    // Every deferred send of the process first (this one among them): the peer this wait
    // depends on may be waiting for one of them.
    flush();
    adopt_deferred(where);
    MPI_Status s;
    const int code = MPI_Wait(&req_, &s);
    return complete(code, s, "MPI_Wait", where, false);
  }

  /// After MPI_Wait or MPI_Test said the message is done (or failed): a receive's count, its
  /// staged copy in (waited for when wait_for_copy), its prefetch back. The request is
  /// complete whatever happens. @return whether a copy in is queued and not waited for.
  bool complete(int code, const MPI_Status& s, const char* call, call_site where,
                bool wait_for_copy = true) {
    op_.pending = false;
    if (code != MPI_SUCCESS) {
      // MPI_ERR_IN_STATUS cannot come from a single request; the status holds no more.
      detail::throw_mpi(code, call, where,
                        op_.direction == kind::recv ? "receiving into the range" : "sending");
    }
    if (op_.direction == kind::send) return false;
    st_.source = s.MPI_SOURCE;
    st_.tag = s.MPI_TAG;
    MPI_Count elements = 0;
    detail::check(MPI_Get_elements_x(&s, type_.type(), &elements), "MPI_Get_elements_x", where);
    const auto basic = static_cast<MPI_Count>(op_.basic_per_element);
    if (elements == MPI_UNDEFINED || elements < 0 || elements % basic != 0) {
      detail::throw_mpi(MPI_ERR_TYPE, "unimem::mpi::recv", where,
                        "the message is not a whole number of elements of the receive range");
    }
    st_.count = static_cast<std::size_t>(elements / basic);
    const std::size_t bytes = st_.count * op_.element_size;
    bool queued = false;
    if (op_.route == path::staged && bytes > 0) {
      detail::settle_for_copies(op_.stream, where);  // no GPU work still uses the range
      detail::copy_in_order(op_.data, staging_.get(), bytes, op_.stream, where);
      queued = true;
    }
    if (op_.route == path::via_host && op_.back.has_value() && op_.back->is_device() &&
        bytes > 0) {
      (void)prefetch(view<unsigned char>(op_.data, bytes), *op_.back, op_.stream, where);
    }
    if (queued && wait_for_copy) {
      op_.stream.synchronize(where);
      return false;
    }
    return queued;
  }

  /// Defers this send's MPI_Isend until the work now queued on s is done (an event recorded
  /// on s); posts it at once if that work is already done. False when no event could be
  /// recorded on s (a stream of another device than the current one): nothing deferred.
  bool defer_send(stream_ref s, int dest, int tag, MPI_Comm comm, call_site where) {
    const int d = ::unimem::detail::current_device_id(where);
    detail::deferred_send* const p = new detail::deferred_send();
    const detail::be::event_handle e = detail::deferred().take_event(d);
    if (e == nullptr) {
      delete p;
      return false;
    }
    const detail::be::result r = detail::be::event_record(e, s.get());
    if (r.code != detail::be::success) {
      detail::be::forget_if_last(r.code);
      detail::deferred().give_event(e, d);
      delete p;
      return false;
    }
    p->buffer = buffer();
    p->count = type_.count();
    p->type = type_.type();
    p->dest = dest;
    p->tag = tag;
    p->comm = comm;
    p->ready = e;
    p->device = d;
    deferred_ = p;
    detail::deferred().add(p);
    op_.pending = true;
    (void)detail::deferred().post(comm, dest, p, false);  // at once if the work is done
    adopt_deferred(where);
    return true;
  }

  /// Posts this send now (earlier deferred sends to the same peer first: MPI's order). With
  /// `blocking`, by MPI_Send, which completes the request before it returns.
  void post_send(int dest, int tag, MPI_Comm comm, bool blocking, call_site where) {
    (void)detail::deferred().post(comm, dest, nullptr, true);
    if (blocking) {
      detail::check(MPI_Send(buffer(), type_.count(), type_.type(), dest, tag, comm), "MPI_Send",
                    where);
      return;  // complete: op_.pending stays false
    }
    detail::check(MPI_Isend(buffer(), type_.count(), type_.type(), dest, tag, comm, &req_),
                  "MPI_Isend", where);
    op_.pending = true;
  }

  /// Receives this request's message now by a blocking MPI_Recv, after every deferred send of
  /// the process (the peer may be waiting for one of them, as in wait()); then completes the
  /// request (a staged receive's copy in waited for).
  void receive_now(int source, int tag, MPI_Comm comm, call_site where) {
    flush();
    op_.pending = true;  // complete() ends it, whatever MPI_Recv says
    MPI_Status s;
    const int code = MPI_Recv(buffer(), type_.count(), type_.type(), source, tag, comm, &s);
    (void)complete(code, s, "MPI_Recv", where);
  }

  /// A deferred send that has been posted (by anyone): its MPI request becomes this request's.
  /// @throws unimem::mpi::error when its MPI_Isend failed (the request is then complete).
  void adopt_deferred(call_site where) {
    if (deferred_ == nullptr || !deferred_->posted) return;
    req_ = deferred_->request;
    const int code = deferred_->code;
    release_deferred();
    if (code != MPI_SUCCESS) {
      op_.pending = false;
      detail::throw_mpi(code, "MPI_Isend", where, "sending");
    }
  }
  /// Drops the deferred send (posted or withdrawn) once the GPU work before it is done: a
  /// copy into the staging block may still be queued when it was never posted.
  void release_deferred() noexcept {
    if (!deferred_->posted) {
      const detail::be::result r = detail::be::event_synchronize(deferred_->ready);
      if (r.code != detail::be::success) detail::be::forget_if_last(r.code);
    }
    detail::deferred().give_event(deferred_->ready, deferred_->device);
    delete std::exchange(deferred_, nullptr);
  }

  MPI_Request req_ = MPI_REQUEST_NULL;
  detail::message_type type_;
  detail::staging staging_;
  status st_;
  operation op_;
  detail::deferred_send* deferred_ = nullptr;  // owned: an isend waiting for the GPU
};

/// @brief Completes every request given (in order; each completes even when an earlier one
/// throws, and the first exception is rethrown after all are complete). The staged receives'
/// copies in are queued as their messages arrive and waited for together at the end, one
/// synchronisation a stream.
template <class... Requests>
void wait_all(Requests&... rs) {
  std::exception_ptr first;
  stream_ref owed[sizeof...(Requests) > 0 ? sizeof...(Requests) : 1];
  std::size_t streams = 0;
  auto one = [&](request& r) {
    try {
      if (r.wait_queued(call_site::current())) {
        bool known = false;
        for (std::size_t i = 0; i < streams && !known; ++i) known = owed[i] == r.op_.stream;
        if (!known) owed[streams++] = r.op_.stream;
      }
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  };
  (one(rs), ...);
  for (std::size_t i = 0; i < streams; ++i) {
    try {
      owed[i].synchronize();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace mpi
UNIMEM_END_NAMESPACE
