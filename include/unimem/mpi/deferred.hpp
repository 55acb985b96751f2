// unimem::mpi: sends whose MPI message waits for the GPU. isend() on a stream queues what must
// happen before MPI may read the range (the copy out to pinned memory, or the stream's own work)
// and returns; the MPI_Isend is posted once that work is done. Internal, except flush().
/// @file
/// @brief unimem::mpi::flush() and the deferred sends behind isend() (internal).
#pragma once

#include <mpi.h>

#include "../unimem.hpp"
#include "error.hpp"

#include <cstddef>
#include <mutex>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {

namespace detail {

namespace be = ::unimem::detail::backend;

/// A send whose MPI_Isend waits for an event: owned by its request (a stable address), listed
/// in the process's queue of deferred sends until it is posted or withdrawn.
struct deferred_send {
  const void* buffer = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int dest = MPI_PROC_NULL;
  int tag = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  be::event_handle ready = nullptr;  // recorded after the work MPI must wait for
  int device = -1;                   // the event's device (events go back to a cache per device)
  MPI_Request request = MPI_REQUEST_NULL;
  bool posted = false;
  int code = MPI_SUCCESS;  // MPI_Isend's result, once posted
  deferred_send* next = nullptr;  // the queue's links, while listed
  deferred_send* prev = nullptr;
  bool listed = false;
};

/// The deferred sends of the process, in the order their isend() calls were made (MPI's
/// non-overtaking rule: a send is posted only after every earlier one to the same peer on the
/// same communicator), and a cache of the events they use. Not keyed by address; one per
/// shared library that uses unimem::mpi (order across two libraries is each library's own: see
/// docs/distributed.md).
class deferred_queue {
 public:
  /// An event of device d from the cache, or a new one; null when the runtime refuses.
  be::event_handle take_event(int d) noexcept {
    {
      const std::lock_guard<std::mutex> g(mutex_);
      for (std::size_t i = 0; i < cached_; ++i) {
        if (events_[i].device == d) {
          const be::event_handle e = events_[i].event;
          events_[i] = events_[--cached_];
          return e;
        }
      }
    }
    be::event_handle e = nullptr;
    const be::result r = be::event_create(&e, false);
    if (r.code != be::success) {
      be::forget_if_last(r.code);
      return nullptr;
    }
    return e;
  }
  /// Gives an event back to the cache (64 kept at most; the rest destroyed).
  void give_event(be::event_handle e, int d) noexcept {
    if (e == nullptr) return;
    {
      const std::lock_guard<std::mutex> g(mutex_);
      if (cached_ < cache_size) {
        events_[cached_++] = {e, d};
        return;
      }
    }
    (void)be::event_destroy(e);
  }

  /// Lists s (its event recorded) after every send listed before.
  void add(deferred_send* s) noexcept {
    const std::lock_guard<std::mutex> g(mutex_);
    s->prev = tail_;
    s->next = nullptr;
    (tail_ != nullptr ? tail_->next : head_) = s;
    tail_ = s;
    s->listed = true;
  }
  /// Removes s unposted (a cancelled request: nothing is sent).
  void withdraw(deferred_send* s) noexcept {
    const std::lock_guard<std::mutex> g(mutex_);
    unlink(s);
  }

  /// Posts listed sends in the order they were listed: those to (comm, dest), or every one
  /// when comm is MPI_COMM_NULL; with `upto`, only up to and including upto (nothing once upto
  /// is posted). blocking: waits for each one's event; otherwise stops at the first whose work
  /// is not done. The lock is held throughout, so that sends are posted in the listed order and
  /// the owner of a send never frees it while another thread posts it.
  /// @return whether every send it had to post is posted.
  bool post(MPI_Comm comm, int dest, const deferred_send* upto, bool blocking) noexcept {
    const std::lock_guard<std::mutex> g(mutex_);
    for (;;) {
      if (upto != nullptr && !upto->listed) return true;
      deferred_send* s = head_;
      while (s != nullptr && comm != MPI_COMM_NULL && (s->comm != comm || s->dest != dest)) {
        s = s->next;
      }
      if (s == nullptr) return true;
      const be::result r = blocking ? be::event_synchronize(s->ready) : be::event_query(s->ready);
      if (!blocking && r.code == be::error_not_ready) return false;
      // A failed event (a fault of the GPU) posts the message anyway: the request's owner
      // meets the GPU's error at its own next synchronisation.
      if (r.code != be::success) be::forget_if_last(r.code);
      unlink(s);
      s->code = MPI_Isend(s->buffer, s->count, s->type, s->dest, s->tag, s->comm, &s->request);
      s->posted = true;
      if (s == upto) return true;
    }
  }

 private:
  void unlink(deferred_send* s) noexcept {
    if (!s->listed) return;
    (s->prev != nullptr ? s->prev->next : head_) = s->next;
    (s->next != nullptr ? s->next->prev : tail_) = s->prev;
    s->next = s->prev = nullptr;
    s->listed = false;
  }

  static constexpr std::size_t cache_size = 64;
  struct cached_event {
    be::event_handle event;
    int device;
  };
  deferred_send* head_ = nullptr;
  deferred_send* tail_ = nullptr;
  cached_event events_[cache_size] = {};
  std::size_t cached_ = 0;
  std::mutex mutex_;
};

inline deferred_queue& deferred() {
  static deferred_queue* q = new deferred_queue();  // never destroyed: requests destroyed at
  return *q;                                        // exit time still find it
}

}  // namespace detail

/// @brief Posts every unimem::mpi send still waiting for the GPU work before it (isend() on a
/// stream returns before its copy out is done; its MPI message is posted when that work is done,
/// at the latest by the next unimem::mpi call that may block). Waits for that work. Call it
/// before blocking in a plain MPI call on a peer that waits for one of those messages; unimem's
/// own wait(), recv(), send() and collectives call it themselves.
inline void flush() noexcept { (void)detail::deferred().post(MPI_COMM_NULL, 0, nullptr, true); }

}  // namespace mpi
UNIMEM_END_NAMESPACE
