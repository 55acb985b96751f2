// unimem: the transfer engine behind every prefetch of the placement path (placement.hpp): it
// decides, from measurements, whether a prefetch goes to the runtime as one call or as chunks
// spread over a small pool of streams, forked from and joined back into the caller's stream
// with events, so that stream order is what one call would give. Not a public header.
//
// What the measurements chose (two H200s, driver 580; docs/pitfalls.md section 12, the probes
// scripts/probes/prefetch_sweep.cu and prefetch_threads.cu):
//   - host -> GPU: one call. Chunks over 2-8 streams (47.5-48.5 GB/s), over 2-16 host threads
//     (46.5-48.0) or through the batch call (42.9-47.6) were never faster than one call
//     (48.0-48.7 GB/s, 0.86-0.88 of a pinned copy); chunks on one stream are much slower.
//   - GPU -> host: one call. Every split was as slow or slower (12-19 GB/s).
//   - GPU -> GPU: chunks of 64 MiB over 4 streams for ranges of 128 MiB and more: 5.8-10.2 ms
//     for 1 GiB against 7.9-10.0 ms for one call (up to 26 % faster, never slower by more
//     than the runs' noise).
// A range counts as GPU-resident when the runtime's last prefetch of it went to another GPU
// (one range query, 1.5-6 us, only for ranges of 128 MiB and more); pages that reached a GPU
// by faults alone move in one call.
#pragma once

#include <cstddef>

#include "../config.hpp"
#include "atomic.hpp"
#include "backend/backend.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// The engine's settings, chosen by measurement (above).
struct transfer_settings {
  static constexpr std::size_t min_split_bytes = std::size_t{128} << 20;
  static constexpr std::size_t chunk_bytes = std::size_t{64} << 20;
  static constexpr int streams = 4;
  static constexpr int max_devices = 64;  ///< devices beyond this move in one call
};

/// How many prefetches the engine split, and into how many chunks (for tests and reports).
struct transfer_counters {
  atomic_cell<long> split_calls{0};
  atomic_cell<long> chunks{0};
  static void add(atomic_cell<long>& c, long n) noexcept {
    long seen = c.load();
    while (!c.compare_exchange(seen, seen + n)) {
    }
  }
};
inline transfer_counters& transfer_statistics() noexcept {
  static transfer_counters c;
  return c;
}

/// The pool of streams of each device, made at the first split towards it and kept for the life
/// of the process (destroying streams during static destruction would race the runtime's own
/// teardown). Made under a spin lock; read without it once made.
class transfer_pool {
 public:
  constexpr transfer_pool() noexcept = default;

  /// The streams of the current device `device`, or nullptr when they cannot be made (then the
  /// prefetch goes as one call).
  const backend::stream_handle* streams_of(int device) noexcept {
    if (device < 0 || device >= transfer_settings::max_devices) return nullptr;
    slot& s = slots_[device];
    if (s.ready.load() != 0) return s.streams;
    const spin_guard l(lock_);
    if (s.ready.load() == 0) {
      int made = 0;
      for (; made < transfer_settings::streams; ++made) {
        const backend::result r = backend::stream_create(&s.streams[made], true);
        if (r.code != backend::success) {
          backend::forget_if_last(r.code);
          break;
        }
      }
      if (made == transfer_settings::streams) {
        s.ready.store(1);
      } else {
        for (int i = 0; i < made; ++i) (void)backend::stream_destroy(s.streams[i]);
      }
    }
    return s.ready.load() != 0 ? s.streams : nullptr;
  }

 private:
  struct slot {
    atomic_cell<int> ready{0};
    backend::stream_handle streams[transfer_settings::streams] = {};
  };
  atomic_cell<int> lock_{0};
  slot slots_[transfer_settings::max_devices] = {};
};
inline transfer_pool& transfer_streams() noexcept {
  static transfer_pool pool;
  return pool;
}

/// Events made for one split prefetch and destroyed when it has been queued (the runtime frees
/// an event still pending once it completes).
struct transfer_events {
  backend::event_handle start = nullptr;
  backend::event_handle done[transfer_settings::streams] = {};
  bool made = false;
  transfer_events() noexcept {
    if (!make(start)) return;
    for (backend::event_handle& e : done) {
      if (!make(e)) return;
    }
    made = true;
  }
  ~transfer_events() {
    if (start != nullptr) (void)backend::event_destroy(start);
    for (backend::event_handle e : done) {
      if (e != nullptr) (void)backend::event_destroy(e);
    }
  }
  transfer_events(const transfer_events&) = delete;
  transfer_events& operator=(const transfer_events&) = delete;

 private:
  static bool make(backend::event_handle& e) noexcept {
    const backend::result r = backend::event_create(&e, false);
    if (r.code == backend::success) return true;
    backend::forget_if_last(r.code);
    e = nullptr;
    return false;
  }
};

/// Queues the prefetch of [p, p + bytes) to `to` on stream s, a stream of the current device
/// `current_device`, as chunks over that device's pool, forked from s and joined back into it.
/// Returns false, having queued nothing, when the pool or the events cannot be made (the caller
/// then makes one call). When a chunk's prefetch fails, the streams already given work are still
/// joined into s (stream order holds) and that status is returned in *failed.
inline bool split_prefetch(const void* p, std::size_t bytes, backend::native_location to,
                           int current_device, backend::stream_handle s,
                           backend::result* failed) noexcept {
  const backend::stream_handle* pool = transfer_streams().streams_of(current_device);
  if (pool == nullptr) return false;
  transfer_events ev;
  if (!ev.made) return false;
  const backend::result forked = backend::event_record(ev.start, s);
  if (forked.code != backend::success) {
    backend::forget_if_last(forked.code);
    return false;
  }
  constexpr int n = transfer_settings::streams;
  for (int i = 0; i < n; ++i) {
    const backend::result r = backend::stream_wait_event(pool[i], ev.start);
    if (r.code != backend::success) {  // nothing queued yet on the pool: one call instead
      backend::forget_if_last(r.code);
      return false;
    }
  }
  const char* base = static_cast<const char*>(p);
  long chunks = 0;
  *failed = backend::result{backend::success, ""};
  for (std::size_t off = 0; off < bytes; off += transfer_settings::chunk_bytes, ++chunks) {
    const std::size_t len =
        bytes - off < transfer_settings::chunk_bytes ? bytes - off : transfer_settings::chunk_bytes;
    const backend::result r = backend::prefetch(base + off, len, to, pool[chunks % n]);
    if (r.code != backend::success) {
      *failed = r;
      break;
    }
  }
  for (int i = 0; i < n; ++i) {  // join: s waits for every pool stream's work
    backend::result r = backend::event_record(ev.done[i], pool[i]);
    if (r.code == backend::success) r = backend::stream_wait_event(s, ev.done[i]);
    if (r.code != backend::success) {
      // The order cannot be kept on the GPU: keep it on the host (wait for the pool stream).
      backend::forget_if_last(r.code);
      const backend::result w = backend::stream_synchronize(pool[i]);
      if (w.code != backend::success && failed->code == backend::success) *failed = w;
    }
  }
  transfer_counters::add(transfer_statistics().split_calls, 1);
  transfer_counters::add(transfer_statistics().chunks, chunks);
  return true;
}

}  // namespace detail
UNIMEM_END_NAMESPACE
