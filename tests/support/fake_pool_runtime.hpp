// A fake GPU runtime for managed_pool's host tests (issue 54): the table of static functions the
// pool's policies are templates over (include/unimem/pool/detail/pool_runtime.hpp), over host
// memory and host threads, with the CUDA programming guide's rules for streams and events:
// - two devices; each thread has a current device (0 at first); the default stream (a null
//   handle) is the current device's;
// - each stream is a host thread running its queue in order: work on memory (a "kernel": host
//   code that writes the bytes), event recordings, waits for a recording, and gates the test
//   opens (a busy stream);
// - an event belongs to the device current when it was made; recording it on a stream of
//   another device fails; a stream may wait for another device's event; a query and a
//   synchronisation answer for the event's latest recording;
// - HIP's rule (hip_rules): recording an event again while its last recording is pending is
//   undefined: counted as a violation, and the older recording goes on answering (the worst HIP
//   allows: "either outstanding recording may save state into the event");
// - cudaFree waits for the work queued on the memory; a pool of managed memory reuses memory
//   freed on the same stream at once, on another stream once the free has completed;
// - ownership: each allocation the test receives is a generation of its memory (own()); work or
//   host use of a generation that begins before every earlier generation's work has ended is an
//   overlap: a block used by two owners at once, the race a pool must never make;
// - fault injection: the next calls of a kind, or calls at random at a rate, fail (a release is
//   made anyway, then reports the failure);
// - advice (the GPU budget's, issue 51): kept with each allocation of cudaMallocManaged (its
//   preferred location and the devices with accessed-by), refused as not supported for a runtime
//   pool's memory, as CUDA 13 does; each device's free and total memory, as the test sets them;
// - a ledger of the memory, events and pools held.
// Host code only: unimem_tests (every toolchain) and tsan.host_tests build it; the tests' shared
// helpers (pools of either policy over the fake, the ledger's check) are at the end.
#pragma once

#include <unimem/pool/managed_pool.hpp>

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fake_gpu {
namespace ub = unimem::detail::backend;

constexpr int device_count = 2;

/// The calls that can be made to fail.
enum class call : int {
  malloc, free, event_create, event_destroy, event_record, event_query, event_synchronize,
  stream_wait_event, stream_synchronize, device_synchronize, set_device, pool_create,
  pool_destroy, pool_threshold, pool_reserved, pool_trim, pool_allocate, pool_free, advise,
  mem_get_info, count_
};

/// The advice an allocation carries: its preferred location (none, host or a device) and the
/// devices with accessed-by advice (bit d; the host: bit device_count).
struct advice_state {
  static constexpr int none = -2, host = -1;
  int preferred = none;
  unsigned accessed_by = 0;
  bool on_host_for(int d) const { return preferred == host && (accessed_by & (1u << d)) != 0; }
  bool ordinary() const { return preferred == none && accessed_by == 0; }
};

/// What the fake saw: the first four stay 0 with a correct pool; then what is held now.
struct findings {
  long overlaps = 0;        // a generation's use began before an earlier one's work ended
  long rerecords = 0;       // hip_rules: an event recorded again while its last one was pending
  long unknown_memory = 0;  // work on, or a free of, memory the fake does not hold
  long bad_handles = 0;     // a destroyed event or pool used, or destroyed again
  long injected = 0;        // failures injected
  long memory = 0, events = 0, pools = 0;  // held now
};

/// One recording of an event: done once its stream has run up to it.
struct mark {
  bool done = false;
};
/// A gate in a stream's queue: the stream stops there until the test opens it.
struct gate {
  bool open = false;
};
using gate_ptr = std::shared_ptr<gate>;
/// A runtime pool of managed memory (opaque to the pool).
struct pool_state;

class world {
 public:
  static world& get() {
    static world w;
    return w;
  }

  // ---- the test's side ----
  void begin(bool hip_rules) {
    std::lock_guard<std::mutex> l(m_);
    hip_rules_ = hip_rules;
    f_ = findings();
    for (long& n : next_fail_) n = 0;
    for (long& n : fail_after_) n = 0;
    for (long& n : calls_) n = 0;
    rate_ = 0;
    injected_status_ = ub::error_unknown;
    on_threshold_ = nullptr;
    before_reserved_ = nullptr;
    for (int d = 0; d < device_count; ++d) {
      default_[d] = add_stream(d);
      free_[d] = std::size_t{12} << 30;
      total_[d] = std::size_t{16} << 30;
    }
    current_device() = 0;
  }
  /// Opens every gate, lets the streams run dry, stops them and frees what is left.
  void end() {
    std::unique_lock<std::mutex> l(m_);
    for (auto& s : streams_) {
      for (op& o : s->queue) {
        if (o.kind == op::hold) o.g->open = true;
      }
    }
    cv_.notify_all();
    cv_.wait(l, [&] { return quiet(); });
    for (auto& s : streams_) s->quit = true;
    cv_.notify_all();
    l.unlock();
    for (auto& s : streams_) s->worker.join();
    l.lock();
    for (auto& b : blocks_) std::free(b.first);
    blocks_.clear();
    streams_.clear();
    events_.clear();
    pools_.clear();
    current_device() = 0;
  }
  /// A new stream of device d.
  ub::stream_handle make_stream(int d) {
    std::lock_guard<std::mutex> l(m_);
    return handle(add_stream(d));
  }
  /// Stops stream s at this point of its queue until open() (a busy stream).
  gate_ptr hold(ub::stream_handle s) {
    std::lock_guard<std::mutex> l(m_);
    auto g = std::make_shared<gate>();
    op o;
    o.kind = op::hold;
    o.g = g;
    enqueue(resolve(s), std::move(o));
    return g;
  }
  void open(const gate_ptr& g) {
    std::lock_guard<std::mutex> l(m_);
    g->open = true;
    cv_.notify_all();
  }
  /// A new generation of memory p: the test has just received it from the pool.
  std::uint64_t own(void* p) {
    std::lock_guard<std::mutex> l(m_);
    const auto it = blocks_.find(p);
    if (it == blocks_.end()) {
      ++f_.unknown_memory;
      return 0;
    }
    return ++it->second.gen;
  }
  /// Work of generation `gen` on `bytes` of p, queued on stream s.
  void launch(ub::stream_handle s, void* p, std::size_t bytes, std::uint64_t gen) {
    std::lock_guard<std::mutex> l(m_);
    const auto it = blocks_.find(p);
    if (it == blocks_.end()) {
      ++f_.unknown_memory;
      return;
    }
    ++it->second.unfinished[gen];
    ++it->second.ops;
    op o;
    o.kind = op::work;
    o.p = p;
    o.bytes = bytes;
    o.gen = gen;
    enqueue(resolve(s), std::move(o));
  }
  /// The host writes `bytes` of p as generation `gen`.
  void host_use(void* p, std::size_t bytes, std::uint64_t gen) {
    {
      std::lock_guard<std::mutex> l(m_);
      const auto it = blocks_.find(p);
      if (it == blocks_.end()) {
        ++f_.unknown_memory;
        return;
      }
      if (older_unfinished(it->second, gen)) ++f_.overlaps;
    }
    std::memset(p, static_cast<int>(gen & 0xff), bytes);
  }
  /// Waits until no stream can run anything (each is empty, or stopped at a gate or a wait).
  void settle() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return quiet(); });
  }
  /// Waits until every stream's queue is empty (no gate may be left closed).
  void drain() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] {
      for (auto& s : streams_) {
        if (s->running || !s->queue.empty()) return false;
      }
      return true;
    });
  }
  /// The memory of pools destroyed while frees were pending, released once those completed.
  void collect() {
    drain();
    std::unique_lock<std::mutex> l(m_);
    for (auto& p : pools_) try_release(*p, l);
  }
  findings seen() {
    std::lock_guard<std::mutex> l(m_);
    return f_;
  }
  /// Device d's free and total memory from now on (begin(): 12 GiB free of 16 GiB).
  void set_memory(int d, std::size_t free, std::size_t total) {
    std::lock_guard<std::mutex> l(m_);
    free_[d] = free;
    total_[d] = total;
  }
  /// The advice memory p carries (p: an allocation's start; none where unknown).
  advice_state advice_of(const void* p) {
    std::lock_guard<std::mutex> l(m_);
    const auto it = blocks_.find(const_cast<void*>(p));
    return it == blocks_.end() ? advice_state() : it->second.advice;
  }
  /// The next n calls of kind c fail, once `after` more have succeeded.
  void fail_next(call c, long n = 1, long after = 0) {
    std::lock_guard<std::mutex> l(m_);
    next_fail_[static_cast<int>(c)] = n;
    fail_after_[static_cast<int>(c)] = after;
  }
  /// The status injected failures carry from now on (begin(): error_unknown).
  void fail_with(ub::status st) {
    std::lock_guard<std::mutex> l(m_);
    injected_status_ = st;
  }
  /// From now on each call but get_device fails with probability per_mille / 1000.
  void fail_at_rate(unsigned per_mille, std::uint64_t seed) {
    std::lock_guard<std::mutex> l(m_);
    rate_ = per_mille;
    random_ = seed * 0x9e3779b97f4a7c15ull + 1;
  }
  /// Called (outside the fake's lock) after each release threshold a pool sets has landed.
  void on_threshold(std::function<void(std::size_t)> f) {
    std::lock_guard<std::mutex> l(m_);
    on_threshold_ = std::move(f);
  }
  /// Called (outside the fake's lock) as each read of a pool's reserved bytes begins.
  void before_reserved(std::function<void()> f) {
    std::lock_guard<std::mutex> l(m_);
    before_reserved_ = std::move(f);
  }
  /// The runtime pool made last, and the release threshold a runtime pool holds.
  pool_state* last_pool() {
    std::lock_guard<std::mutex> l(m_);
    return pools_.empty() ? nullptr : pools_.back().get();
  }
  std::size_t threshold_of(const pool_state* p);
  /// Number of calls of kind c made since begin().
  long calls(call c) {
    std::lock_guard<std::mutex> l(m_);
    return calls_[static_cast<int>(c)];
  }

  // ---- the runtime's side (runtime<> below) ----
  static int& current_device() {
    thread_local int d = 0;
    return d;
  }
  ub::result get_device(int* id) {
    *id = current_device();
    return ok("cudaGetDevice (fake)");
  }
  ub::result set_device(int id) {
    std::lock_guard<std::mutex> l(m_);
    if (fires(call::set_device)) return injected("cudaSetDevice (fake)");
    if (id < 0 || id >= device_count) return {ub::error_invalid_device, "cudaSetDevice (fake)"};
    current_device() = id;
    return ok("cudaSetDevice (fake)");
  }
  ub::result malloc_managed(void** p, std::size_t bytes) {
    std::lock_guard<std::mutex> l(m_);
    *p = nullptr;
    if (fires(call::malloc)) return {ub::error_out_of_memory, "cudaMallocManaged (fake)"};
    *p = new_memory(bytes, nullptr);
    return ok("cudaMallocManaged (fake)");
  }
  ub::result free(void* p) {
    std::unique_lock<std::mutex> l(m_);
    const bool failed = fires(call::free);
    if (blocks_.count(p) == 0 || blocks_[p].pool != nullptr) {
      ++f_.unknown_memory;
      return {ub::error_invalid_value, "cudaFree (fake): not memory of cudaMallocManaged"};
    }
    release_memory(p, l);
    return failed ? injected("cudaFree (fake)") : ok("cudaFree (fake)");
  }
  ub::result event_create(ub::event_handle* e) {
    std::lock_guard<std::mutex> l(m_);
    if (fires(call::event_create)) return injected("cudaEventCreateWithFlags (fake)");
    events_.push_back(std::make_unique<event_state>());
    events_.back()->device = current_device();
    *e = reinterpret_cast<ub::event_handle>(events_.back().get());
    ++f_.events;
    return ok("cudaEventCreateWithFlags (fake)");
  }
  ub::result event_destroy(ub::event_handle e) {
    std::lock_guard<std::mutex> l(m_);
    const bool failed = fires(call::event_destroy);
    event_state* ev = usable(e);
    if (ev == nullptr) return {ub::error_invalid_value, "cudaEventDestroy (fake)"};
    ev->destroyed = true;
    --f_.events;
    return failed ? injected("cudaEventDestroy (fake)") : ok("cudaEventDestroy (fake)");
  }
  ub::result event_record(ub::event_handle e, ub::stream_handle s) {
    std::lock_guard<std::mutex> l(m_);
    if (fires(call::event_record)) return injected("cudaEventRecord (fake)");
    event_state* ev = usable(e);
    if (ev == nullptr) return {ub::error_invalid_value, "cudaEventRecord (fake)"};
    stream_state* st = resolve(s);
    if (st->device != ev->device) {
      return {ub::error_invalid_value,
              "cudaEventRecord (fake): the event and the stream belong to different devices"};
    }
    if (hip_rules_ && ev->last && !ev->last->done) {
      ++f_.rerecords;  // undefined: the outstanding recording goes on answering
      return ok("hipEventRecord (fake)");
    }
    ev->last = std::make_shared<mark>();
    op o;
    o.kind = op::record;
    o.m = ev->last;
    enqueue(st, std::move(o));
    return ok("cudaEventRecord (fake)");
  }
  ub::result event_query(ub::event_handle e) {
    std::lock_guard<std::mutex> l(m_);
    if (fires(call::event_query)) return injected("cudaEventQuery (fake)");
    event_state* ev = usable(e);
    if (ev == nullptr) return {ub::error_invalid_value, "cudaEventQuery (fake)"};
    if (!ev->last || ev->last->done) return ok("cudaEventQuery (fake)");
    return {ub::error_not_ready, "cudaEventQuery (fake)"};
  }
  ub::result event_synchronize(ub::event_handle e) {
    std::unique_lock<std::mutex> l(m_);
    if (fires(call::event_synchronize)) return injected("cudaEventSynchronize (fake)");
    event_state* ev = usable(e);
    if (ev == nullptr) return {ub::error_invalid_value, "cudaEventSynchronize (fake)"};
    const std::shared_ptr<mark> m = ev->last;
    cv_.wait(l, [&] { return !m || m->done; });
    return ok("cudaEventSynchronize (fake)");
  }
  ub::result stream_wait_event(ub::stream_handle s, ub::event_handle e) {
    std::lock_guard<std::mutex> l(m_);
    if (fires(call::stream_wait_event)) return injected("cudaStreamWaitEvent (fake)");
    event_state* ev = usable(e);
    if (ev == nullptr) return {ub::error_invalid_value, "cudaStreamWaitEvent (fake)"};
    if (ev->last && !ev->last->done) {  // another device's event too
      op o;
      o.kind = op::wait;
      o.m = ev->last;
      enqueue(resolve(s), std::move(o));
    }
    return ok("cudaStreamWaitEvent (fake)");
  }
  ub::result stream_synchronize(ub::stream_handle s) {
    std::unique_lock<std::mutex> l(m_);
    if (fires(call::stream_synchronize)) return injected("cudaStreamSynchronize (fake)");
    stream_state* st = resolve(s);
    const std::uint64_t target = st->queued;
    cv_.wait(l, [&] { return st->finished >= target; });
    return ok("cudaStreamSynchronize (fake)");
  }
  ub::result device_synchronize() {
    std::unique_lock<std::mutex> l(m_);
    if (fires(call::device_synchronize)) return injected("cudaDeviceSynchronize (fake)");
    const int d = current_device();
    std::vector<std::pair<stream_state*, std::uint64_t>> targets;
    for (auto& s : streams_) {
      if (s->device == d) targets.emplace_back(s.get(), s->queued);
    }
    cv_.wait(l, [&] {
      for (const auto& t : targets) {
        if (t.first->finished < t.second) return false;
      }
      return true;
    });
    return ok("cudaDeviceSynchronize (fake)");
  }
  ub::result mem_get_info(std::size_t* free, std::size_t* total) {
    std::lock_guard<std::mutex> l(m_);
    if (fires(call::mem_get_info)) return injected("cudaMemGetInfo (fake)");
    *free = free_[current_device()];
    *total = total_[current_device()];
    return ok("cudaMemGetInfo (fake)");
  }
  /// Advice for all of an allocation (the pool advises whole blocks only).
  ub::result advise(const void* p, std::size_t bytes, ub::mem_advice a, ub::native_location to) {
    std::lock_guard<std::mutex> l(m_);
    if (fires(call::advise)) return injected("cudaMemAdvise (fake)");
    const auto it = blocks_.find(const_cast<void*>(p));
    if (it == blocks_.end() || it->second.bytes > bytes) {
      ++f_.unknown_memory;
      return {ub::error_invalid_value, "cudaMemAdvise (fake): not a whole allocation"};
    }
    if (it->second.pool != nullptr) {
      return {ub::error_not_supported, "cudaMemAdvise (fake): a runtime pool's memory"};
    }
    if (!to.host && (to.id < 0 || to.id >= device_count)) {
      return {ub::error_invalid_device, "cudaMemAdvise (fake)"};
    }
    advice_state& st = it->second.advice;
    const unsigned bit = 1u << (to.host ? device_count : to.id);
    using m = ub::mem_advice;
    if (a == m::set_preferred_location) st.preferred = to.host ? advice_state::host : to.id;
    if (a == m::unset_preferred_location) st.preferred = advice_state::none;
    if (a == m::set_accessed_by) st.accessed_by |= bit;
    if (a == m::unset_accessed_by) st.accessed_by &= ~bit;
    return ok("cudaMemAdvise (fake)");
  }
  ub::result pool_create(pool_state** out);
  ub::result pool_destroy(pool_state* p);
  ub::result pool_set_release_threshold(pool_state* p, std::size_t bytes);
  ub::result pool_reserved(pool_state* p, std::size_t* bytes);
  ub::result pool_trim(pool_state* p, std::size_t keep);
  ub::result pool_allocate(void** out, std::size_t bytes, pool_state* p, ub::stream_handle s);
  ub::result pool_free(void* mem, ub::stream_handle s);

 private:
  friend struct pool_state;
  struct op {
    enum kind_t { work, record, wait, hold } kind = work;
    void* p = nullptr;  // work: `bytes` of p, as generation `gen`
    std::size_t bytes = 0;
    std::uint64_t gen = 0;
    std::shared_ptr<mark> m;  // record: completes it; wait: waits for it
    gate_ptr g;               // hold
  };
  struct stream_state {
    int device = 0;
    std::deque<op> queue;
    bool running = false;  // an op taken from the queue is being run
    bool quit = false;
    std::uint64_t queued = 0, finished = 0;
    std::thread worker;
  };
  struct event_state {
    int device = 0;
    std::shared_ptr<mark> last;  // its latest recording (null: never recorded)
    bool destroyed = false;
  };
  struct memory_state {
    std::size_t bytes = 0;
    pool_state* pool = nullptr;  // a runtime pool's memory, else cudaMallocManaged's
    std::uint64_t gen = 0;       // the generation now
    std::map<std::uint64_t, long> unfinished;  // work queued or running, by generation
    long ops = 0;
    advice_state advice;
  };

  static ub::result ok(const char* call) { return {ub::success, call}; }
  ub::result injected(const char* call) { return {injected_status_, call}; }
  ub::result destroyed_pool(const char* call) {
    ++f_.bad_handles;
    return {ub::error_invalid_value, call};
  }
  static ub::stream_handle handle(stream_state* s) { return reinterpret_cast<ub::stream_handle>(s); }
  /// Counts a call and says whether it fails (the lock held).
  bool fires(call c) {
    ++calls_[static_cast<int>(c)];
    long& next = next_fail_[static_cast<int>(c)];
    long& after = fail_after_[static_cast<int>(c)];
    bool fail = next > 0 && after == 0;
    if (next > 0 && after > 0) --after;
    if (fail) --next;
    if (!fail && rate_ > 0) {
      random_ ^= random_ << 13;
      random_ ^= random_ >> 7;
      random_ ^= random_ << 17;
      fail = random_ % 1000 < rate_;
    }
    if (fail) ++f_.injected;
    return fail;
  }
  stream_state* add_stream(int d) {
    streams_.push_back(std::make_unique<stream_state>());
    stream_state* s = streams_.back().get();
    s->device = d;
    s->worker = std::thread([this, s] { run(s); });
    return s;
  }
  stream_state* resolve(ub::stream_handle s) {
    return s == nullptr ? default_[current_device()] : reinterpret_cast<stream_state*>(s);
  }
  event_state* usable(ub::event_handle e) {
    auto* ev = reinterpret_cast<event_state*>(e);
    if (ev == nullptr || ev->destroyed) {
      ++f_.bad_handles;
      return nullptr;
    }
    return ev;
  }
  void enqueue(stream_state* s, op&& o) {
    s->queue.push_back(std::move(o));
    ++s->queued;
    cv_.notify_all();
  }
  static bool runnable(const stream_state& s) {
    if (s.queue.empty()) return false;
    const op& o = s.queue.front();
    return o.kind == op::wait ? o.m->done : o.kind == op::hold ? o.g->open : true;
  }
  bool quiet() const {
    for (const auto& s : streams_) {
      if (s->running || runnable(*s)) return false;
    }
    return true;
  }
  static bool older_unfinished(const memory_state& m, std::uint64_t gen) {
    for (const auto& u : m.unfinished) {
      if (u.first < gen && u.second > 0) return true;
    }
    return false;
  }
  void run(stream_state* s) {
    std::unique_lock<std::mutex> l(m_);
    for (;;) {
      cv_.wait(l, [&] { return s->quit || runnable(*s); });
      if (!runnable(*s)) return;
      op o = std::move(s->queue.front());
      s->queue.pop_front();
      s->running = true;
      if (o.kind == op::work) {
        memory_state& m = blocks_[o.p];  // held: free waits for its work
        if (older_unfinished(m, o.gen)) ++f_.overlaps;
        l.unlock();
        std::memset(o.p, static_cast<int>(o.gen & 0xff), o.bytes);
        l.lock();
        memory_state& after = blocks_[o.p];
        if (--after.unfinished[o.gen] == 0) after.unfinished.erase(o.gen);
        --after.ops;
      } else if (o.kind == op::record) {
        o.m->done = true;
      }
      s->running = false;
      ++s->finished;
      cv_.notify_all();
    }
  }
  void* new_memory(std::size_t bytes, pool_state* pool) {
    const std::size_t rounded = (bytes + 255) / 256 * 256;
    void* p = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
    memory_state& m = blocks_[p];
    m.bytes = bytes;
    m.pool = pool;
    ++f_.memory;
    return p;
  }
  /// Frees p once its work is done (the lock held by l).
  void release_memory(void* p, std::unique_lock<std::mutex>& l) {
    cv_.wait(l, [&] { return blocks_[p].ops == 0; });
    std::free(p);
    blocks_.erase(p);
    --f_.memory;
  }
  void try_release(pool_state& p, std::unique_lock<std::mutex>& l);

  std::mutex m_;
  std::condition_variable cv_;
  bool hip_rules_ = false;
  ub::status injected_status_ = ub::error_unknown;
  findings f_;
  long next_fail_[static_cast<int>(call::count_)] = {};
  long fail_after_[static_cast<int>(call::count_)] = {};
  long calls_[static_cast<int>(call::count_)] = {};
  unsigned rate_ = 0;
  std::uint64_t random_ = 1;
  std::size_t free_[device_count] = {}, total_[device_count] = {};
  std::function<void(std::size_t)> on_threshold_;
  std::function<void()> before_reserved_;
  std::vector<std::unique_ptr<stream_state>> streams_;
  stream_state* default_[device_count] = {};
  std::vector<std::unique_ptr<event_state>> events_;  // kept to the end: handles stay readable
  std::vector<std::unique_ptr<pool_state>> pools_;
  std::map<void*, memory_state> blocks_;
};

/// A runtime pool of managed memory: memory freed on a stream is reused on that stream at once,
/// on another once the free has completed.
struct pool_state {
  struct freed {
    void* p;
    std::size_t bytes;  // capacity
    const void* stream;
    std::shared_ptr<mark> m;
  };
  int device = 0;
  std::size_t threshold = 0, reserved = 0;
  bool destroyed = false, released = false;
  std::vector<freed> free;  // the newest last
  std::map<void*, std::size_t> live;  // capacity of each allocation out
};

inline std::size_t world::threshold_of(const pool_state* p) {
  std::lock_guard<std::mutex> l(m_);
  return p->threshold;
}
inline ub::result world::pool_create(pool_state** out) {
  std::lock_guard<std::mutex> l(m_);
  if (fires(call::pool_create)) return injected("cudaMemPoolCreate (fake)");
  pools_.push_back(std::make_unique<pool_state>());
  pools_.back()->device = current_device();
  *out = pools_.back().get();
  ++f_.pools;
  return ok("cudaMemPoolCreate (fake)");
}
inline ub::result world::pool_destroy(pool_state* p) {
  std::unique_lock<std::mutex> l(m_);
  const bool failed = fires(call::pool_destroy);
  if (p == nullptr || p->destroyed) {
    ++f_.bad_handles;
    return {ub::error_invalid_value, "cudaMemPoolDestroy (fake)"};
  }
  p->destroyed = true;  // released once its memory is all free and its frees have completed
  try_release(*p, l);
  return failed ? injected("cudaMemPoolDestroy (fake)") : ok("cudaMemPoolDestroy (fake)");
}
inline ub::result world::pool_set_release_threshold(pool_state* p, std::size_t bytes) {
  std::function<void(std::size_t)> hook;
  {
    std::lock_guard<std::mutex> l(m_);
    if (fires(call::pool_threshold)) return injected("cudaMemPoolSetAttribute (fake)");
    if (p->destroyed) return destroyed_pool("cudaMemPoolSetAttribute (fake)");
    p->threshold = bytes;
    hook = on_threshold_;
  }
  if (hook) hook(bytes);
  return ok("cudaMemPoolSetAttribute (fake)");
}
inline ub::result world::pool_reserved(pool_state* p, std::size_t* bytes) {
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> l(m_);
    hook = before_reserved_;
  }
  if (hook) hook();
  std::lock_guard<std::mutex> l(m_);
  if (fires(call::pool_reserved)) return injected("cudaMemPoolGetAttribute (fake)");
  if (p->destroyed) return destroyed_pool("cudaMemPoolGetAttribute (fake)");
  *bytes = p->reserved;
  return ok("cudaMemPoolGetAttribute (fake)");
}
inline ub::result world::pool_trim(pool_state* p, std::size_t keep) {
  std::unique_lock<std::mutex> l(m_);
  if (fires(call::pool_trim)) return injected("cudaMemPoolTrimTo (fake)");
  if (p->destroyed) return destroyed_pool("cudaMemPoolTrimTo (fake)");
  for (std::size_t i = 0; i < p->free.size() && p->reserved > keep;) {
    if (!p->free[i].m->done) {
      ++i;
      continue;
    }
    const pool_state::freed f = p->free[i];
    p->free.erase(p->free.begin() + static_cast<std::ptrdiff_t>(i));
    p->reserved -= f.bytes;
    release_memory(f.p, l);
  }
  return ok("cudaMemPoolTrimTo (fake)");
}
inline ub::result world::pool_allocate(void** out, std::size_t bytes, pool_state* p,
                                       ub::stream_handle s) {
  std::lock_guard<std::mutex> l(m_);
  *out = nullptr;
  if (fires(call::pool_allocate)) return {ub::error_out_of_memory, "cudaMallocFromPoolAsync (fake)"};
  if (p->destroyed) return destroyed_pool("cudaMallocFromPoolAsync (fake)");
  const stream_state* st = resolve(s);
  for (std::size_t i = p->free.size(); i-- > 0;) {
    const pool_state::freed& f = p->free[i];
    if (f.bytes < bytes || (f.stream != st && !f.m->done)) continue;
    *out = f.p;
    p->live[f.p] = f.bytes;
    p->free.erase(p->free.begin() + static_cast<std::ptrdiff_t>(i));
    return ok("cudaMallocFromPoolAsync (fake)");
  }
  *out = new_memory(bytes, p);
  p->reserved += (bytes + 255) / 256 * 256;
  p->live[*out] = (bytes + 255) / 256 * 256;  // its capacity, in granules of 256 bytes
  return ok("cudaMallocFromPoolAsync (fake)");
}
inline ub::result world::pool_free(void* mem, ub::stream_handle s) {
  std::unique_lock<std::mutex> l(m_);
  const bool failed = fires(call::pool_free);
  const auto it = blocks_.find(mem);
  pool_state* p = it == blocks_.end() ? nullptr : it->second.pool;
  if (p == nullptr || p->live.count(mem) == 0) {
    ++f_.unknown_memory;
    return {ub::error_invalid_value, "cudaFreeAsync (fake)"};
  }
  stream_state* st = resolve(s);
  auto m = std::make_shared<mark>();
  op o;
  o.kind = op::record;
  o.m = m;
  enqueue(st, std::move(o));
  p->free.push_back({mem, p->live[mem], st, m});
  p->live.erase(mem);
  try_release(*p, l);
  return failed ? injected("cudaFreeAsync (fake)") : ok("cudaFreeAsync (fake)");
}
inline void world::try_release(pool_state& p, std::unique_lock<std::mutex>& l) {
  if (!p.destroyed || p.released || !p.live.empty()) return;
  for (std::size_t i = 0; i < p.free.size();) {
    if (!p.free[i].m->done) {
      ++i;
      continue;
    }
    void* mem = p.free[i].p;
    p.reserved -= p.free[i].bytes;
    p.free.erase(p.free.begin() + static_cast<std::ptrdiff_t>(i));
    release_memory(mem, l);
  }
  if (p.free.empty()) {
    p.released = true;
    --f_.pools;
  }
}

/// The runtime table over the world (pool/detail/pool_runtime.hpp's); HipRules: HIP's rule for
/// events recorded again (the world must be begun with the same).
template <bool HipRules>
struct runtime {
  using stream = ub::stream_handle;
  using event = ub::event_handle;
  using mem_pool = pool_state*;
  static constexpr bool rerecords_pending_events = !HipRules;
  static world& w() { return world::get(); }

  static bool is_default_stream(stream s) noexcept { return s == nullptr; }
  static ub::result get_device(int* id) noexcept { return w().get_device(id); }
  static ub::result set_device(int id) noexcept { return w().set_device(id); }
  static ub::result device_synchronize() noexcept { return w().device_synchronize(); }
  static ub::result malloc_managed(void** p, std::size_t bytes) noexcept {
    return w().malloc_managed(p, bytes);
  }
  static ub::result free(void* p) noexcept { return w().free(p); }
  static ub::result event_create(event* e) noexcept { return w().event_create(e); }
  static ub::result event_destroy(event e) noexcept { return w().event_destroy(e); }
  static ub::result event_record(event e, stream s) noexcept { return w().event_record(e, s); }
  static ub::result event_query(event e) noexcept { return w().event_query(e); }
  static ub::result event_synchronize(event e) noexcept { return w().event_synchronize(e); }
  static ub::result stream_wait_event(stream s, event e) noexcept {
    return w().stream_wait_event(s, e);
  }
  static ub::result stream_synchronize(stream s) noexcept { return w().stream_synchronize(s); }
  static ub::result mem_get_info(std::size_t* free, std::size_t* total) noexcept {
    return w().mem_get_info(free, total);
  }
  static ub::result advise(const void* p, std::size_t bytes, ub::mem_advice a,
                           ub::native_location l) noexcept {
    return w().advise(p, bytes, a, l);
  }
  static void forget(ub::status) noexcept {}
  [[noreturn]] static void fail(ub::result r, unimem::call_site where, const char* context) {
    unimem::detail::fail(r.code, r.call, where, context);
  }
  [[noreturn]] static void fail_allocation(ub::result r, std::size_t, unimem::call_site where) {
    unimem::detail::fail(r.code != ub::success ? r.code : ub::error_invalid_value, r.call, where,
                         "managed_pool (fake runtime)");
  }
  /// As CUDA's (backend::refuses_managed_pool): a runtime without managed pools answers so.
  static bool refuses_pool(ub::status s) noexcept {
    return s == ub::error_not_supported || s == ub::error_invalid_value;
  }
  static ub::result pool_create(mem_pool* p) noexcept { return w().pool_create(p); }
  static ub::result pool_destroy(mem_pool p) noexcept { return w().pool_destroy(p); }
  static ub::result pool_set_release_threshold(mem_pool p, std::size_t bytes) noexcept {
    return w().pool_set_release_threshold(p, bytes);
  }
  static ub::result pool_reserved(mem_pool p, std::size_t* bytes) noexcept {
    return w().pool_reserved(p, bytes);
  }
  static ub::result pool_trim(mem_pool p, std::size_t keep) noexcept { return w().pool_trim(p, keep); }
  static ub::result pool_allocate(void** out, std::size_t bytes, mem_pool p, stream s) noexcept {
    return w().pool_allocate(out, bytes, p, s);
  }
  static ub::result pool_free(void* mem, stream s) noexcept { return w().pool_free(mem, s); }
};

/// The world for a test's scope: begun with the rules, ended (streams run dry) at the end.
class session {
 public:
  explicit session(bool hip_rules = false) { world::get().begin(hip_rules); }
  ~session() { world::get().end(); }
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  world* operator->() const { return &world::get(); }
};

// ---- what the tests over the fake share ----

/// The pool's policies.
enum class policy { caching, runtime };
inline const char* name_of(policy p) {
  return p == policy::caching ? "caching allocator" : "runtime pool";
}
constexpr std::size_t no_limit = std::numeric_limits<std::size_t>::max();

/// The state of a pool of `kind` on `device` over the fake runtime (HIP's rules or CUDA's), with
/// a release threshold and a GPU budget (unimem::detail::no_gpu_budget: none).
template <bool Hip = false>
std::shared_ptr<unimem::detail::pool_core> make_state(
    policy kind, int device = 0, std::size_t threshold = no_limit,
    std::size_t budget = unimem::detail::no_gpu_budget) {
  using R = runtime<Hip>;
  if (kind == policy::caching) {
    return std::make_shared<unimem::detail::caching_pool<R>>(device, threshold,
                                                            ub::error_not_supported, budget);
  }
  ub::status why{};
  return unimem::detail::runtime_pool<R>::make(device, threshold, unimem::call_site::current(),
                                               why, budget);
}
/// A managed_pool over a state the test made (managed_pool's constructor for tests).
struct pool_over : unimem::managed_pool {
  explicit pool_over(std::shared_ptr<unimem::detail::pool_core> state)
      : managed_pool(std::move(state)) {}
};
template <bool Hip = false>
unimem::managed_pool make_pool(policy kind, int device = 0, std::size_t threshold = no_limit,
                               std::size_t budget = unimem::detail::no_gpu_budget) {
  return pool_over(make_state<Hip>(kind, device, threshold, budget));
}

/// Every ledger entry 0 once the streams ran dry: nothing leaked, nothing misused.
inline void expect_clean(const session& gpu) {
  gpu->collect();
  const findings f = gpu->seen();
  EXPECT_EQ(f.overlaps, 0) << "memory used by two owners at once";
  EXPECT_EQ(f.rerecords, 0) << "an event recorded again while its last recording was pending";
  EXPECT_EQ(f.unknown_memory, 0);
  EXPECT_EQ(f.bad_handles, 0);
  EXPECT_EQ(f.memory, 0) << "memory leaked";
  EXPECT_EQ(f.events, 0) << "events leaked";
  EXPECT_EQ(f.pools, 0) << "a runtime pool never released";
}

}  // namespace fake_gpu
