/// @file
/// @brief unimem::mpi::flush() and the deferred sends behind isend() on a stream, whose
/// MPI_Isend is posted once the GPU work before it is done (internal).
#pragma once

#include <mpi.h>

#include "../core.hpp"
#include "../core/detail/backend/events.hpp"
#include "../placement/placement.hpp"
#include "../core/detail/atomic.hpp"
#include "error.hpp"

#include <cstddef>
#include <mutex>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {
namespace detail {
namespace backend = ::unimem::detail::backend;
/// A send whose MPI_Isend waits for an event, owned by a deferred_handle.
struct deferred_send {
  const void* buffer;
  int count;
  MPI_Datatype type;
  int dest;
  int tag;
  MPI_Comm comm;
  backend::event_handle ready;  // recorded after the work MPI must wait for
  int device;                   // the event's device (events go back to a cache per device)
  MPI_Request request = MPI_REQUEST_NULL;
  int code = MPI_SUCCESS;                          // MPI_Isend's result, once posted
  ::unimem::detail::atomic_cell<int> posted{0};  // set after request and code
  deferred_send* next = nullptr;                   // the queue's links, while listed
  deferred_send* prev = nullptr;
  bool listed = false;
};
/// The process's deferred sends in isend() order (non-overtaking: each is posted after every
/// earlier one to its peer and communicator) and a cache of their events, under one mutex. One
/// per shared library that uses unimem::mpi (docs/distributed.md). A mutex, not unimem's
/// spin_guard: a blocking post holds it across event waits and MPI_Isend, where waiters sleep.
class deferred_queue {
 public:
  /// An event of device d, cached or new; null when the runtime refuses.
  backend::event_handle take_event(int d) noexcept {
    {
      const std::lock_guard<std::mutex> g(mutex_);
      for (std::size_t i = 0; i < cached_; ++i) {
        if (events_[i].device == d) {
          const backend::event_handle e = events_[i].event;
          events_[i] = events_[--cached_];
          return e;
        }
      }
    }
    backend::event_handle e = nullptr;
    const backend::result r = backend::event_create(&e, false);
    if (r.code != backend::success) {
      backend::forget_if_last(r.code);
      return nullptr;
    }
    return e;
  }
  /// Gives an event back to the cache (64 at most; the rest destroyed).
  void give_event(backend::event_handle e, int d) noexcept {
    if (e == nullptr) return;
    {
      const std::lock_guard<std::mutex> g(mutex_);
      if (cached_ < cache_size) {
        events_[cached_++] = {e, d};
        return;
      }
    }
    (void)backend::event_destroy(e);
  }
  /// Lists s (its event recorded) last, and posts it at once if its work is done.
  void add(deferred_send* s) noexcept {
    const std::lock_guard<std::mutex> g(mutex_);
    s->prev = tail_;
    s->next = nullptr;
    (tail_ != nullptr ? tail_->next : head_) = s;
    tail_ = s;
    s->listed = true;
    listed_.fetch_add(1);
    (void)post_listed(s->comm, s->dest, s, false);
  }
  /// Removes s unposted (a cancelled request: nothing is sent).
  void withdraw(deferred_send* s) noexcept {
    const std::lock_guard<std::mutex> g(mutex_);
    unlink(s);
  }
  /// Posts listed sends in order: those to (comm, dest), or all for MPI_COMM_NULL; with `upto`,
  /// up to and including it. blocking: waits for each event; else stops at the first not done.
  /// With none listed it locks nothing. @return whether every send it had to post is posted.
  bool post(MPI_Comm comm, int dest, const deferred_send* upto, bool blocking) noexcept {
    if (listed_.load() == 0) return true;
    const std::lock_guard<std::mutex> g(mutex_);
    return post_listed(comm, dest, upto, blocking);
  }

 private:
  // Under the lock: sends post in order, and no owner frees one while another thread posts it.
  bool post_listed(MPI_Comm comm, int dest, const deferred_send* upto, bool blocking) noexcept {
    for (;;) {
      if (upto != nullptr && !upto->listed) return true;
      deferred_send* s = head_;
      while (s != nullptr && comm != MPI_COMM_NULL && (s->comm != comm || s->dest != dest)) {
        s = s->next;
      }
      if (s == nullptr) return true;
      const backend::result r =
          blocking ? backend::event_synchronize(s->ready) : backend::event_query(s->ready);
      if (!blocking && r.code == backend::error_not_ready) return false;
      // A failed event posts anyway: the owner meets the GPU's error at its next sync.
      if (r.code != backend::success) backend::forget_if_last(r.code);
      unlink(s);
      s->code = MPI_Isend(s->buffer, s->count, s->type, s->dest, s->tag, s->comm, &s->request);
      s->posted.store(1);
      if (s == upto) return true;
    }
  }
  void unlink(deferred_send* s) noexcept {
    if (!s->listed) return;
    (s->prev != nullptr ? s->prev->next : head_) = s->next;
    (s->next != nullptr ? s->next->prev : tail_) = s->prev;
    s->next = s->prev = nullptr;
    s->listed = false;
    listed_.fetch_add(static_cast<std::size_t>(-1));
  }

  static constexpr std::size_t cache_size = 64;
  struct cached_event {
    backend::event_handle event;
    int device;
  };
  deferred_send* head_ = nullptr;
  deferred_send* tail_ = nullptr;
  ::unimem::detail::atomic_cell<std::size_t> listed_{0};  // read without the lock
  cached_event events_[cache_size] = {};
  std::size_t cached_ = 0;
  std::mutex mutex_;
};

inline deferred_queue& deferred() {
  static deferred_queue* q = new deferred_queue();  // never destroyed: requests destroyed at
  return *q;                                        // exit time still find it
}
/// A request's deferred send, move-only; destroyed unposted, it is withdrawn (nothing sent).
class deferred_handle {
 public:
  deferred_handle() noexcept = default;
  deferred_handle(deferred_handle&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  deferred_handle& operator=(deferred_handle&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~deferred_handle() { (void)withdraw(); }
  /// Lists the send behind an event recorded on s; false, nothing listed, where none can be
  /// recorded (a stream of another device than the current one).
  bool start(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
             stream_ref s, call_site where) {
    const int d = ::unimem::detail::current_device_id(where);
    const backend::event_handle e = deferred().take_event(d);
    if (e == nullptr) return false;
    const backend::result r = backend::event_record(e, s.get());
    if (r.code != backend::success) {
      backend::forget_if_last(r.code);
      deferred().give_event(e, d);
      return false;
    }
    p_ = new deferred_send{buffer, count, type, dest, tag, comm, e, d};
    deferred().add(p_);
    return true;
  }
  /// True while a send is held.
  explicit operator bool() const noexcept { return p_ != nullptr; }
  /// Posts the send if its GPU work is done; whether it is posted (true with none held).
  bool post() noexcept { return p_ == nullptr || deferred().post(p_->comm, p_->dest, p_, false); }
  /// True once the held send is posted.
  bool posted() const noexcept { return p_ != nullptr && p_->posted.load() != 0; }
  /// Empties the handle, withdrawing an unposted send; freed once its GPU work is done (a copy
  /// into the staging block may be queued). @return the MPI request if posted (MPI_Isend's
  /// result in *code), else MPI_REQUEST_NULL.
  MPI_Request withdraw(int* code = nullptr) noexcept {
    if (p_ == nullptr) return MPI_REQUEST_NULL;
    if (!posted()) deferred().withdraw(p_);  // under the queue's lock: posted() is final then
    const bool sent = posted();
    if (!sent) {
      const backend::result w = backend::event_synchronize(p_->ready);
      if (w.code != backend::success) backend::forget_if_last(w.code);
    }
    if (code != nullptr) *code = sent ? p_->code : MPI_SUCCESS;
    const MPI_Request r = sent ? p_->request : MPI_REQUEST_NULL;
    deferred().give_event(p_->ready, p_->device);
    delete std::exchange(p_, nullptr);
    return r;
  }

 private:
  deferred_send* p_ = nullptr;
};
}  // namespace detail
/// @brief Waits for the GPU work before every deferred isend() and posts them. Call it before
/// blocking in a plain MPI call on a peer that waits for one of those messages; unimem::mpi's
/// calls that may block (wait(), recv(), send(), collectives) do it themselves.
inline void flush() noexcept { (void)detail::deferred().post(MPI_COMM_NULL, 0, nullptr, true); }
}  // namespace mpi
UNIMEM_END_NAMESPACE
