// Model-based test: seeded random sequences of operations over managed, device, pinned and pool
// buffers (pool_buffer from a managed_pool the executor owns for the sequence: the default pool
// for even seeds, the runtime's pool of managed memory on CUDA 13; unimem's caching allocator
// for odd seeds) and 2 to 4 streams, executed through unimem and checked against a plain host
// model (a std::vector<int> per buffer).
//
// Three parts, kept apart so that the host tests need no GPU:
// - the generator (generate()) turns a seed into a list of operations: allocations through every
//   constructor, frees, moves (construction into a free slot, assignment over a live buffer),
//   copies and fills, synchronous and on a stream, between random sub-ranges of any buffers
//   (within one buffer when the ranges do not overlap), kernels through each way launch() takes
//   a buffer (access tags with either intent, plain views, whole buffers), prefetches, advice,
//   intents, event waits, stream/event/device synchronisation and ready_for_host, and a living
//   host: the CPU writing and reading sub-ranges of host-accessible buffers through memory
//   (operator[] or the raw pointer; each read compared with the model at once), and faulting
//   fresh pages of ordinary memory on the executing thread or a second one. Pool buffers
//   are stream-ordered (as cudaMallocAsync): one is allocated on a stream s and filled there
//   with fill_async (its memory may be a block that earlier work on s still uses, so only work
//   ordered after that fill touches it), freed in the order of its stream (or of the stream
//   set_stream() names) once the host has waited for its work; they take no advice, no intent
//   and no mapped tags (CUDA 13's pools of managed memory take no advice). It orders
//   every sequence so that it is race-free and its result defined, with a vector clock per
//   stream (operations on a stream are numbered; a stream knows which numbers of the others are
//   ordered before its next work, the host which are complete):
//   * work queued on stream s that touches a buffer with work on another stream t not yet
//     ordered before s is preceded by an event recorded on t and waited for by s (four times in
//     five), or by the host waiting for t;
//   * a host-side operation on a buffer (synchronous copy or fill, a CPU read or write, advice,
//     intent, a check, a free, a move) is preceded by the host waiting for every stream with
//     work on it (stream synchronize, event synchronize, or device synchronize); faulting fresh
//     ordinary memory needs no order. Streams are assumed independent of the default stream
//     (non-blocking), although some of them are blocking ones.
//   After every point where the host waited, and after every host-side operation, the generator
//   places a check of each buffer that was touched since its last check and has no work left
//   (large buffers are checked one time in four there, and always before they are freed and at
//   the end).
// - the model (contents_model) applies an operation list to host vectors;
// - the executor runs the list through unimem; the test compares each checked buffer with the
//   model: managed, pool and pinned buffers read on the host, device buffers copied back with
//   unimem::copy; a host read is compared with the model's range at once. For the whole GPU
//   run a further thread keeps mapping, touching and unmapping fresh 1 MiB regions of ordinary
//   memory (never unimem's): a living host, whose faults have nothing to do with the buffers,
//   beside the CPU reads and writes that do (the placement records must hold through the first
//   and let go of what the second touched). A mismatch stops that seed and reports the seed,
//   the check (or the host read), the first differing element, the operations on that buffer
//   since its allocation, and the replay command.
//
// Environment: UNIMEM_MODEL_SEEDS (seeds 1, 2, ...; 20), UNIMEM_MODEL_OPS (operations per seed,
// checks not counted; 5000), UNIMEM_MODEL_SEED (only this seed), UNIMEM_MODEL_STREAMS (2 to 4;
// by default each seed draws its own). Replay a failure with the command it prints, e.g.
//   UNIMEM_MODEL_SEED=7 UNIMEM_MODEL_OPS=3120 unimem_tests --gtest_filter=ModelGpu.*
// (a shorter run of a seed is a prefix of a longer one, so the failing check comes last).
#include "test_support.hpp"

#include <unimem/managed_pool.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#include <sys/resource.h>
#endif

// ---- kernels: unsigned arithmetic, which wraps and never overflows ----

__global__ void model_update(int* p, std::size_t n, std::uint32_t mul, std::uint32_t add) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) {
    p[i] = static_cast<int>(static_cast<std::uint32_t>(p[i]) * mul + add +
                            static_cast<std::uint32_t>(i));
  }
}
__global__ void model_update_view(unimem::view<int> v, std::uint32_t mul, std::uint32_t add) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < v.size()) {
    v[i] = static_cast<int>(static_cast<std::uint32_t>(v[i]) * mul + add +
                            static_cast<std::uint32_t>(i));
  }
}
// Writes every element without reading it: the kernel for out() tags.
__global__ void model_write(int* p, std::size_t n, std::uint32_t mul, std::uint32_t add) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = static_cast<int>(static_cast<std::uint32_t>(i) * mul + add);
}
__global__ void model_combine(int* dst, const int* src, std::size_t n, std::uint32_t mul,
                              std::uint32_t add) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = static_cast<int>(static_cast<std::uint32_t>(src[i]) * mul + add);
}

namespace {

constexpr int kSlots = 8;  // buffers alive at once, at most
constexpr int kMaxStreams = 4;
constexpr std::uint32_t kMaxElements = 65536;
constexpr std::size_t kMaxLiveBytes = std::size_t{2} << 20;  // 8 x 64 Ki ints
constexpr std::uint32_t kLarge = 4096;  // larger buffers are checked less often

// ---- a PRNG that replays identically everywhere ----

/// splitmix64 (Steele, Lea and Flood): the same numbers for a seed on every platform and
/// standard library, unlike std::uniform_int_distribution.
class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n), n > 0, without modulo bias: draws below 2^64 mod n are rejected.
  std::uint32_t below(std::uint64_t n) {
    const std::uint64_t reject = (0 - n) % n;
    for (;;) {
      const std::uint64_t r = next();
      if (r >= reject) return static_cast<std::uint32_t>(r % n);
    }
  }
  bool percent(unsigned p) { return below(100) < p; }
  std::uint32_t bits32() { return static_cast<std::uint32_t>(next() >> 32); }

 private:
  std::uint64_t state_;
};

// ---- operations ----

// pool: a pool_buffer from the executor's managed_pool (managed memory, stream-ordered).
enum class memory : std::uint8_t { managed, device, pinned, pool };

enum class op_kind : std::uint8_t {
  allocate,        // a: a new buffer of mem, n elements, initialised by `how` (pool: on s)
  destroy,         // a: freed (a pool buffer with s >= 0: set_stream(s) first)
  move_construct,  // a (free) <- std::move(b)
  move_assign,     // a (live, same kind) = std::move(b)
  copy,            // a[a_off, +len) <- b[b_off, +len), synchronous
  copy_async,      // the same on stream s
  fill,            // a[a_off, +len) = value, synchronous
  fill_async,      // the same on stream s
  prefetch,        // managed or pool a[a_off, +len) to the device or the host, on stream s
  advise,          // managed a[a_off, +len): advice or its withdrawal (hint); not pool
  set_intent,      // managed a[a_off, +len): moved or mapped; not pool
  launch,          // kernel k on stream s over a[a_off, +len) (and b[b_off, +len) for combine)
  record_wait,     // event recorded on t, waited for by s
  stream_sync,     // s.synchronize()
  event_sync,      // event recorded on t, event.synchronize()
  device_sync,     // unimem::synchronize()
  ready_for_host,  // managed or pool a[a_off, +len), on stream s (s < 0: waits for the device)
  host_write,      // the CPU writes value into a[a_off, +len) through memory (not device memory)
  host_read,       // the CPU reads a[a_off, +len) through memory and compares it with the model
  host_faults,     // the host faults n fresh pages of ordinary memory (kOnAnotherThread: there)
  check,           // a compared with the model
};

enum class init : std::uint8_t {
  zeros,                     // buffer(n)
  value,                     // buffer(n, value)
  uninitialized_fill,        // buffer(n, uninitialized), fill(value)
  uninitialized_fill_async,  // buffer(n, uninitialized), fill_async(value, s); for pool memory
                             // pool_buffer(n, pool, s), fill_async(value, s): its only init
  iota,                      // buffer(first, last) from value, value + 1, ...
  first_touch_location,      // managed(n, first_touch(device, s)): zeros
  first_touch_stream,        // managed(n, first_touch(s)): zeros
};

enum class kernel : std::uint8_t { update, update_view, write, combine };

// How launch() receives a range. The tags are for managed and pool memory, the mapped ones for
// managed memory only.
enum class pass : std::uint8_t {
  view,          // a plain view (any memory)
  buffer,        // the whole buffer, untagged
  inout,         // inout(view)
  inout_mapped,  // inout(view, mapped): not pool
  inout_moved,   // inout(view, moved)
  inout_buffer,  // inout(buffer)
  out,           // out(view): model_write and combine's destination only
  out_mapped,    // out(view, mapped): not pool
  in,            // in(view): combine's source
  in_mapped,     // in(view, mapped): not pool
};

enum class hint : std::uint8_t {
  read_mostly,
  unset_read_mostly,
  prefer_device,
  prefer_host,
  unset_prefer_device,
  unset_prefer_host,
  accessed_by,
  unset_accessed_by,
};

// op::form bits: which of the API's spellings runs an operation.
constexpr std::uint8_t kWhole = 1;           // the whole buffer as its own type
constexpr std::uint8_t kWholeSource = 2;     // copy: the whole source buffer as its own type
constexpr std::uint8_t kToHost = 4;          // prefetch: to the host, not the device
constexpr std::uint8_t kMapped = 4;          // set_intent: mapped, not moved
constexpr std::uint8_t kNamedGpu = 8;        // set_intent: the GPU named
constexpr std::uint8_t kOnAnotherThread = 1;  // host_faults: on a second thread
constexpr std::uint8_t kOtherSpelling = 16;  // the other form: operator[] for data(), advice
                                             // without a location, a stream_ref for a stream

struct op {
  op_kind kind = op_kind::check;
  memory mem = memory::managed;  // allocate
  init how = init::zeros;        // allocate
  kernel k = kernel::update;     // launch
  pass target = pass::view;      // launch: the range written
  pass source = pass::view;      // launch, combine: the range read
  hint h = hint::read_mostly;    // advise
  std::uint8_t form = 0;         // kWhole, ...
  std::int8_t s = -1;            // the stream the work is queued on (or synchronised)
  std::int8_t t = -1;            // record_wait, event_sync: the stream the event is recorded on
  std::int8_t a = -1;            // the buffer acted on (written)
  std::int8_t b = -1;            // the source buffer (copy, combine, move)
  std::uint32_t n = 0;           // allocate: elements
  std::uint32_t a_off = 0, b_off = 0, len = 0;
  std::int32_t value = 0;          // fill, allocate
  std::uint32_t mul = 0, add = 0;  // launch
  std::uint16_t block = 0;         // launch: threads per block

  friend bool operator==(const op& x, const op& y) {
    return x.kind == y.kind && x.mem == y.mem && x.how == y.how && x.k == y.k &&
           x.target == y.target && x.source == y.source && x.h == y.h && x.form == y.form &&
           x.s == y.s && x.t == y.t && x.a == y.a && x.b == y.b && x.n == y.n &&
           x.a_off == y.a_off && x.b_off == y.b_off && x.len == y.len && x.value == y.value &&
           x.mul == y.mul && x.add == y.add && x.block == y.block;
  }
};

/// A seed's operations and what the executor needs to run them.
struct sequence {
  std::uint64_t seed = 0;
  int streams = 0;
  std::array<bool, kMaxStreams> blocking{};  // per stream: blocking (else non-blocking)
  std::size_t requested = 0;                 // the operations asked for (checks not counted)
  std::size_t tail = 0;  // index of the closing device synchronisation and final checks
  std::vector<op> ops;
};

const char* name(memory m) {
  switch (m) {
    case memory::managed: return "managed_buffer";
    case memory::device: return "device_buffer";
    case memory::pinned: return "pinned_buffer";
    case memory::pool: return "pool_buffer";
  }
  return "?";
}

/// The passes that set the mapped intent: for managed memory only (not pool memory).
bool mapped(pass p) {
  return p == pass::inout_mapped || p == pass::out_mapped || p == pass::in_mapped;
}

const char* name(pass p) {
  switch (p) {
    case pass::view: return "view";
    case pass::buffer: return "buffer";
    case pass::inout: return "inout(view)";
    case pass::inout_mapped: return "inout(view, mapped)";
    case pass::inout_moved: return "inout(view, moved)";
    case pass::inout_buffer: return "inout(buffer)";
    case pass::out: return "out(view)";
    case pass::out_mapped: return "out(view, mapped)";
    case pass::in: return "in(view)";
    case pass::in_mapped: return "in(view, mapped)";
  }
  return "?";
}

const char* name(hint h) {
  switch (h) {
    case hint::read_mostly: return "advise read_mostly";
    case hint::unset_read_mostly: return "unadvise read_mostly";
    case hint::prefer_device: return "advise preferred_location device";
    case hint::prefer_host: return "advise preferred_location host";
    case hint::unset_prefer_device: return "unadvise preferred_location device";
    case hint::unset_prefer_host: return "unadvise preferred_location host";
    case hint::accessed_by: return "advise accessed_by device";
    case hint::unset_accessed_by: return "unadvise accessed_by device";
  }
  return "?";
}

std::string range(int slot, std::uint32_t off, std::uint32_t len) {
  std::ostringstream r;
  r << "B" << slot << "[" << off << "," << off + len << ")";
  return r.str();
}

/// One readable line, e.g. "#4711 copy_async s2: B3[10,200) <- B1[0,190)".
std::string describe(const op& o, std::size_t index) {
  std::ostringstream r;
  r << "#" << index << " ";
  const int s = o.s, t = o.t, a = o.a, b = o.b;
  const std::string ra = range(a, o.a_off, o.len), rb = range(b, o.b_off, o.len);
  switch (o.kind) {
    case op_kind::allocate:
      r << "allocate B" << a << ": " << name(o.mem) << " of " << o.n << " ints, ";
      switch (o.how) {
        case init::zeros: r << "zeros"; break;
        case init::value: r << "all " << o.value; break;
        case init::uninitialized_fill: r << "uninitialized, then fill " << o.value; break;
        case init::uninitialized_fill_async:
          if (o.mem == memory::pool) r << "allocated on s" << s << ", ";
          r << "uninitialized, then fill_async s" << s << " " << o.value;
          if (o.mem == memory::pool) r << ((o.form & kWhole) ? " (buffer)" : " (view)");
          break;
        case init::iota:
          r << "from the values " << o.value << ", " << o.value << " + 1, ...";
          break;
        case init::first_touch_location: r << "first_touch(device, s" << s << "): zeros"; break;
        case init::first_touch_stream: r << "first_touch(s" << s << "): zeros"; break;
      }
      break;
    case op_kind::destroy:
      r << "destroy B" << a;
      if (s >= 0) r << " (set_stream s" << s << " first)";
      break;
    case op_kind::move_construct: r << "move-construct B" << a << " from B" << b; break;
    case op_kind::move_assign: r << "move-assign B" << a << " = B" << b; break;
    case op_kind::copy:
    case op_kind::copy_async:
      r << (o.kind == op_kind::copy ? "copy" : "copy_async s");
      if (o.kind == op_kind::copy_async) r << s;
      r << ": " << ((o.form & kWhole) ? "B" + std::to_string(a) + " (buffer)" : ra) << " <- "
        << ((o.form & kWholeSource) ? "B" + std::to_string(b) + " (buffer)" : rb);
      break;
    case op_kind::fill:
    case op_kind::fill_async:
      r << (o.kind == op_kind::fill ? "fill" : "fill_async s");
      if (o.kind == op_kind::fill_async) r << s;
      r << ": " << ((o.form & kWhole) ? "B" + std::to_string(a) + " (buffer)" : ra) << " = "
        << o.value;
      break;
    case op_kind::prefetch:
      r << "prefetch s" << s << ": " << ra << " -> " << ((o.form & kToHost) ? "host" : "device")
        << ((o.form & kWhole) ? " (prefetch(buffer))" : "");
      break;
    case op_kind::advise:
      r << name(o.h) << ": " << ra << ((o.form & kWhole) ? " (buffer)" : "");
      break;
    case op_kind::set_intent:
      r << "set_intent " << ((o.form & kMapped) ? "mapped" : "moved")
        << ((o.form & kNamedGpu) ? " on the device" : "") << ": " << ra
        << ((o.form & kWhole) ? " (buffer)" : "");
      break;
    case op_kind::launch:
      r << "launch s" << s << ": ";
      switch (o.k) {
        case kernel::update: r << "update " << ra << " as " << name(o.target); break;
        case kernel::update_view: r << "update_view " << ra << " as " << name(o.target); break;
        case kernel::write: r << "write " << ra << " as " << name(o.target); break;
        case kernel::combine:
          r << "combine " << ra << " as " << name(o.target) << " <- " << rb << " as "
            << name(o.source);
          break;
      }
      r << ", mul " << o.mul << " add " << o.add << ", block " << o.block;
      break;
    case op_kind::record_wait: r << "record s" << t << ", wait s" << s; break;
    case op_kind::stream_sync: r << "synchronize s" << s; break;
    case op_kind::event_sync: r << "record s" << t << ", event synchronize"; break;
    case op_kind::device_sync: r << "synchronize the device"; break;
    case op_kind::ready_for_host:
      r << "ready_for_host";
      if (s >= 0) r << " s" << s;
      r << ": " << ra
        << ((o.form & kWhole) ? " (ready_for_host(buffer))" : "");
      if (s < 0) r << " (waits for the device)";
      break;
    case op_kind::host_write:
      r << "host writes " << ra << " = " << o.value
        << ((o.form & kOtherSpelling) ? " (operator[])" : " (data())");
      break;
    case op_kind::host_read:
      r << "host reads " << ra << ((o.form & kOtherSpelling) ? " (operator[])" : " (data())");
      break;
    case op_kind::host_faults:
      r << "host faults " << o.n << " fresh pages"
        << ((o.form & kOnAnotherThread) ? " on another thread" : "");
      break;
    case op_kind::check: r << "check B" << a; break;
  }
  return r.str();
}

// ---- the generator ----

/// Turns a seed into a race-free operation list (see the comment at the top of the file).
/// Operation generation only: nothing here needs a GPU.
class generator {
 public:
  generator(std::uint64_t seed, int streams_override) : rng_(seed) {
    seq_.seed = seed;
    const int drawn = 2 + static_cast<int>(rng_.below(3));
    streams_ = streams_override >= 2 && streams_override <= kMaxStreams ? streams_override : drawn;
    seq_.streams = streams_;
    for (int i = 0; i < kMaxStreams; ++i) seq_.blocking[i] = i != 0 && rng_.below(4) == 0;
  }

  sequence run(std::size_t operations) {
    seq_.requested = operations;
    while (count_ < operations) step();
    // The tail: wait for everything, then check every buffer not checked since its last change.
    seq_.tail = seq_.ops.size();
    op o;
    o.kind = op_kind::device_sync;
    emit(o);
    done_ = queued_;
    for (int x = 0; x < kSlots; ++x) {
      if (slots_[x].live && slots_[x].dirty) emit_check(x);
    }
    return seq_;
  }

 private:
  struct shape {
    bool live = false;
    memory mem = memory::managed;
    std::uint32_t n = 0;
    // Per stream: the number of its last queued operation that touched the buffer (0: none).
    std::array<std::uint32_t, kMaxStreams> last{};
    bool dirty = false;  // touched since its last check
  };

  // ---- bookkeeping: a vector clock per stream ----

  void emit(const op& o) {
    seq_.ops.push_back(o);
    if (o.kind != op_kind::check) ++count_;
  }
  /// The operations of stream t ordered before the next work queued on s.
  std::uint32_t ordered(int s, int t) const { return std::max(waits_[s][t], done_[t]); }
  bool clean(int x) const {
    for (int t = 0; t < streams_; ++t) {
      if (slots_[x].last[t] > done_[t]) return false;
    }
    return true;
  }
  /// Work on stream s that touches x (and y) was queued.
  void queued(int s, int x, int y = -1) {
    waits_[s][s] = ++queued_[s];
    for (int z : {x, y}) {
      if (z < 0) continue;
      slots_[z].last[s] = queued_[s];
      slots_[z].dirty = true;
    }
  }
  /// The host waited for all work queued so far on stream s.
  void host_waited(int s) {
    for (int u = 0; u < streams_; ++u) done_[u] = std::max(done_[u], waits_[s][u]);
  }

  void record_wait(int t, int s) {
    op o;
    o.kind = op_kind::record_wait;
    o.t = static_cast<std::int8_t>(t);
    o.s = static_cast<std::int8_t>(s);
    o.form = rng_.percent(50) ? kOtherSpelling : 0;
    emit(o);
    for (int u = 0; u < streams_; ++u) waits_[s][u] = std::max(waits_[s][u], waits_[t][u]);
  }
  /// A synchronisation of the host: the operation, its effect, then the checks it allows.
  void synchronize(const op& o) {
    emit(o);
    if (o.kind == op_kind::stream_sync) host_waited(o.s);
    if (o.kind == op_kind::event_sync) host_waited(o.t);
    if (o.kind == op_kind::device_sync) done_ = queued_;
    emit_checks();
  }
  /// The host waits for stream t, one of three ways.
  void synchronize_stream(int t) {
    op o;
    const std::uint32_t r = rng_.below(10);
    if (r < 6) {
      o.kind = op_kind::stream_sync;
      o.s = static_cast<std::int8_t>(t);
      o.form = rng_.percent(50) ? kOtherSpelling : 0;
    } else if (r < 9) {
      o.kind = op_kind::event_sync;
      o.t = static_cast<std::int8_t>(t);
    } else {
      o.kind = op_kind::device_sync;
    }
    synchronize(o);
  }
  /// Work on stream s is about to touch x: order it after the other streams' work on x.
  void order_for(int s, int x) {
    for (int t = 0; t < streams_; ++t) {
      if (t == s || slots_[x].last[t] <= ordered(s, t)) continue;
      if (rng_.below(5) != 0) {
        record_wait(t, s);
      } else {
        synchronize_stream(t);
      }
    }
  }
  /// The host is about to touch x: wait for every stream with work on it.
  void quiesce(int x) {
    for (int t = 0; t < streams_; ++t) {
      if (slots_[x].last[t] > done_[t]) synchronize_stream(t);
    }
  }
  void emit_check(int x) {
    op o;
    o.kind = op_kind::check;
    o.a = static_cast<std::int8_t>(x);
    emit(o);
    slots_[x].dirty = false;
  }
  /// Checks the buffers touched since their last check whose work is all complete (large ones
  /// one time in four: they stay marked, and are checked before they are freed or at the end).
  void emit_checks() {
    for (int x = 0; x < kSlots; ++x) {
      const shape& b = slots_[x];
      if (!b.live || !b.dirty || !clean(x)) continue;
      if (b.n > kLarge && rng_.below(4) != 0) continue;
      emit_check(x);
    }
  }

  // ---- choices ----

  int stream() { return static_cast<int>(rng_.below(static_cast<std::uint64_t>(streams_))); }
  /// A random slot x for which p(x, slots_[x]) holds; -1 when there is none.
  template <class Predicate>
  int pick(Predicate&& p) {
    int candidates[kSlots];
    int count = 0;
    for (int x = 0; x < kSlots; ++x) {
      if (p(x, slots_[x])) candidates[count++] = x;
    }
    return count == 0 ? -1 : candidates[rng_.below(static_cast<std::uint64_t>(count))];
  }
  int pick_live() {
    return pick([](int, const shape& b) { return b.live; });
  }
  /// A buffer of managed_buffer's: the one kind that takes advice and intents.
  int pick_managed() {
    return pick([](int, const shape& b) { return b.live && b.mem == memory::managed; });
  }
  /// A buffer of managed memory, managed_buffer's or a pool's: prefetch and ready_for_host.
  int pick_placeable() {
    return pick([](int, const shape& b) { return b.live && placeable(b.mem); });
  }
  static bool placeable(memory m) { return m == memory::managed || m == memory::pool; }
  /// Mostly small sizes, sometimes up to 64 Ki; sometimes the size of a live buffer, so that
  /// whole buffers can be copied as their own types.
  std::uint32_t pick_size() {
    if (rng_.percent(15)) {
      const int x = pick_live();
      if (x >= 0) return slots_[x].n;
    }
    const std::uint32_t r = rng_.below(100);
    if (r < 65) return 1 + rng_.below(256);
    if (r < 90) return 1 + rng_.below(kLarge);
    return 1 + rng_.below(kMaxElements);
  }
  /// A length of at most m (m > 0): short, any, or all of it.
  std::uint32_t pick_length(std::uint32_t m) {
    const std::uint32_t r = rng_.below(10);
    if (r < 3) return 1 + rng_.below(std::min<std::uint32_t>(m, 16));
    if (r < 7) return 1 + rng_.below(m);
    return m;
  }
  /// A sub-range of buffer x into o.a_off and o.len: the whole buffer one time in five.
  void pick_range(int x, op& o) {
    const std::uint32_t n = slots_[x].n;
    if (rng_.percent(20)) {
      o.a_off = 0;
      o.len = n;
      return;
    }
    o.len = pick_length(n);
    o.a_off = rng_.below(n - o.len + 1);
  }
  /// Ranges of the same length in o.a (at a_off) and o.b (at b_off); within one buffer, two
  /// that do not overlap. False when none fits (one buffer of one element).
  bool pick_two_ranges(op& o) {
    const std::uint32_t na = slots_[o.a].n, nb = slots_[o.b].n;
    if (o.a == o.b) {
      if (na < 2) return false;
      o.len = pick_length(na / 2);
      const std::uint32_t first = rng_.below(na - 2 * o.len + 1);
      const std::uint32_t second = first + o.len + rng_.below(na - 2 * o.len - first + 1);
      const bool swap = rng_.percent(50);
      o.a_off = swap ? second : first;
      o.b_off = swap ? first : second;
      return true;
    }
    if (na == nb && rng_.percent(30)) {
      o.len = na;
      o.a_off = o.b_off = 0;
      return true;
    }
    o.len = pick_length(std::min(na, nb));
    o.a_off = rng_.below(na - o.len + 1);
    o.b_off = rng_.below(nb - o.len + 1);
    return true;
  }
  bool whole(int x, std::uint32_t off, std::uint32_t len) const {
    return off == 0 && len == slots_[x].n;
  }
  /// The source of a copy or a combine: another buffer, or (one time in six) the same one.
  int pick_source(int a) {
    if (slots_[a].n >= 2 && rng_.below(6) == 0) return a;
    return pick_live();
  }

  // ---- the operations ----

  void step() {
    int live = 0, managed = 0, with_managed_memory = 0;  // the last: managed or pool
    int host_accessible = 0;
    for (const shape& b : slots_) {
      live += b.live;
      managed += b.live && b.mem == memory::managed;
      with_managed_memory += b.live && placeable(b.mem);
      host_accessible += b.live && b.mem != memory::device;
    }
    struct weighted {
      op_kind kind;
      unsigned weight;
    };
    const weighted choices[] = {
        {op_kind::allocate, live == kSlots ? 0u : (live < 3 ? 30u : 5u)},
        {op_kind::destroy, live == 0 ? 0u : (live < 3 ? 1u : 3u)},
        {op_kind::move_construct, live == 0 ? 0u : 3u},  // or move_assign
        {op_kind::copy, live == 0 ? 0u : 6u},
        {op_kind::copy_async, live == 0 ? 0u : 14u},
        {op_kind::fill, live == 0 ? 0u : 4u},
        {op_kind::fill_async, live == 0 ? 0u : 8u},
        {op_kind::prefetch, with_managed_memory == 0 ? 0u : 6u},
        {op_kind::advise, managed == 0 ? 0u : 3u},
        {op_kind::set_intent, managed == 0 ? 0u : 2u},
        {op_kind::launch, live == 0 ? 0u : 16u},
        {op_kind::record_wait, 3u},
        {op_kind::stream_sync, 3u},
        {op_kind::event_sync, 2u},
        {op_kind::device_sync, 1u},
        {op_kind::ready_for_host, with_managed_memory == 0 ? 0u : 3u},
        {op_kind::host_write, host_accessible == 0 ? 0u : 4u},
        {op_kind::host_read, host_accessible == 0 ? 0u : 4u},
        {op_kind::host_faults, 3u},
    };
    unsigned total = 0;
    for (const weighted& w : choices) total += w.weight;
    unsigned r = rng_.below(total);
    op_kind kind = op_kind::check;
    for (const weighted& w : choices) {
      if (r < w.weight) {
        kind = w.kind;
        break;
      }
      r -= w.weight;
    }
    switch (kind) {
      case op_kind::allocate: allocate(); break;
      case op_kind::destroy: destroy(); break;
      case op_kind::move_construct:
      case op_kind::move_assign: move(); break;
      case op_kind::copy:
      case op_kind::copy_async: copy(kind); break;
      case op_kind::fill:
      case op_kind::fill_async: fill(kind); break;
      case op_kind::prefetch: prefetch(); break;
      case op_kind::advise: advise(); break;
      case op_kind::set_intent: set_intent(); break;
      case op_kind::launch: launch(); break;
      case op_kind::record_wait: {
        const int s = stream();
        const int t = (s + 1 + static_cast<int>(rng_.below(streams_ - 1))) % streams_;
        record_wait(t, s);
        break;
      }
      case op_kind::stream_sync:
      case op_kind::event_sync:
      case op_kind::device_sync: {
        op o;
        o.kind = kind;
        if (kind == op_kind::stream_sync) o.s = static_cast<std::int8_t>(stream());
        if (kind == op_kind::event_sync) o.t = static_cast<std::int8_t>(stream());
        synchronize(o);
        break;
      }
      case op_kind::ready_for_host: ready_for_host(); break;
      case op_kind::host_write:
      case op_kind::host_read: host_touch(kind); break;
      case op_kind::host_faults: {
        op o;
        o.kind = op_kind::host_faults;
        o.n = rng_.percent(70) ? 1 + rng_.below(4) : 16 + rng_.below(512);
        if (rng_.percent(40)) o.form |= kOnAnotherThread;
        emit(o);
        break;
      }
      case op_kind::check: break;
    }
  }

  /// The CPU writes or reads part of a buffer it can reach, through memory: a host-side
  /// operation, ordered like a synchronous fill (the host waits for the buffer's work first).
  void host_touch(op_kind kind) {
    op o;
    o.kind = kind;
    o.a = static_cast<std::int8_t>(
        pick([](int, const shape& b) { return b.live && b.mem != memory::device; }));
    pick_range(o.a, o);
    if (rng_.percent(50)) o.form |= kOtherSpelling;
    o.value = static_cast<std::int32_t>(rng_.bits32());
    quiesce(o.a);
    emit(o);
    if (kind == op_kind::host_write) {
      slots_[o.a].dirty = true;
      emit_checks();
    }
  }

  void allocate() {
    const int x = pick([](int, const shape& b) { return !b.live; });
    std::size_t live_bytes = 0;
    for (const shape& b : slots_) live_bytes += b.live ? b.n * sizeof(int) : 0;
    op o;
    o.kind = op_kind::allocate;
    o.a = static_cast<std::int8_t>(x);
    const std::uint32_t r = rng_.below(100);
    o.mem = r < 38   ? memory::managed
            : r < 68 ? memory::device
            : r < 83 ? memory::pinned
                     : memory::pool;  // 17 in 100
    o.n = std::min<std::uint32_t>(
        pick_size(), static_cast<std::uint32_t>((kMaxLiveBytes - live_bytes) / sizeof(int)));
    if (o.n == 0) return;  // the memory budget is spent (it cannot be with 8 x 64 Ki)
    if (o.mem == memory::pool) {
      // Allocated on s, its contents undefined: filled on s, through the buffer or a view.
      o.how = init::uninitialized_fill_async;
      if (rng_.percent(50)) o.form |= kWhole;
    } else {
      const unsigned inits = o.mem == memory::managed ? 7 : 5;
      o.how = static_cast<init>(rng_.below(inits));
    }
    o.value = static_cast<std::int32_t>(rng_.below(2000001)) - 1000000;
    if (rng_.percent(10)) o.value = rng_.percent(50) ? 0 : -1;  // one repeated byte: memset
    const bool on_stream = o.how == init::uninitialized_fill_async ||
                           o.how == init::first_touch_location || o.how == init::first_touch_stream;
    const int s = stream();
    if (on_stream) o.s = static_cast<std::int8_t>(s);
    emit(o);
    shape& b = slots_[x];
    b = shape{};
    b.live = true;
    b.mem = o.mem;
    b.n = o.n;
    b.dirty = true;
    if (on_stream) queued(s, x);
    if (o.how == init::first_touch_location || o.how == init::first_touch_stream) {
      host_waited(s);  // the constructor waits for its stream
    }
    emit_checks();
  }

  void destroy() {
    const int x = pick_live();
    quiesce(x);
    if (slots_[x].dirty) emit_check(x);
    op o;
    o.kind = op_kind::destroy;
    o.a = static_cast<std::int8_t>(x);
    // A pool buffer is freed in the order of its stream; the host waited for all its work, so
    // any stream will do: one time in two set_stream() names another.
    if (slots_[x].mem == memory::pool && rng_.percent(50)) o.s = static_cast<std::int8_t>(stream());
    emit(o);
    slots_[x] = shape{};
  }

  void move() {
    const int from = pick_live();
    const memory kind = slots_[from].mem;
    const int free_slot = pick([](int, const shape& b) { return !b.live; });
    const int same_kind =
        pick([&](int x, const shape& b) { return x != from && b.live && b.mem == kind; });
    const bool assign = same_kind >= 0 && (free_slot < 0 || rng_.percent(50));
    if (!assign && free_slot < 0) return;
    const int to = assign ? same_kind : free_slot;
    quiesce(from);
    if (assign) {
      quiesce(to);
      if (slots_[to].dirty) emit_check(to);  // its contents are freed
    }
    op o;
    o.kind = assign ? op_kind::move_assign : op_kind::move_construct;
    o.a = static_cast<std::int8_t>(to);
    o.b = static_cast<std::int8_t>(from);
    emit(o);
    slots_[to] = slots_[from];
    slots_[from] = shape{};
    emit_checks();
  }

  void copy(op_kind kind) {
    op o;
    o.kind = kind;
    o.a = static_cast<std::int8_t>(pick_live());
    o.b = static_cast<std::int8_t>(pick_source(o.a));
    if (!pick_two_ranges(o)) return;
    if (o.a != o.b && whole(o.a, o.a_off, o.len) && rng_.percent(50)) o.form |= kWhole;
    if (o.a != o.b && whole(o.b, o.b_off, o.len) && rng_.percent(50)) o.form |= kWholeSource;
    if (kind == op_kind::copy) {
      quiesce(o.a);
      quiesce(o.b);
      emit(o);
      slots_[o.a].dirty = true;
      emit_checks();
      return;
    }
    const int s = stream();
    o.s = static_cast<std::int8_t>(s);
    order_for(s, o.a);
    order_for(s, o.b);
    emit(o);
    queued(s, o.a, o.b);
  }

  void fill(op_kind kind) {
    op o;
    o.kind = kind;
    o.a = static_cast<std::int8_t>(pick_live());
    pick_range(o.a, o);
    if (whole(o.a, o.a_off, o.len) && rng_.percent(50)) o.form |= kWhole;
    o.value = static_cast<std::int32_t>(rng_.bits32());
    if (rng_.percent(15)) {  // one repeated byte: the byte memset
      o.value = rng_.percent(50) ? 0 : 0x01010101 * static_cast<int>(rng_.below(128));
    }
    if (kind == op_kind::fill) {
      quiesce(o.a);
      emit(o);
      slots_[o.a].dirty = true;
      emit_checks();
      return;
    }
    const int s = stream();
    o.s = static_cast<std::int8_t>(s);
    order_for(s, o.a);
    emit(o);
    queued(s, o.a);
  }

  void prefetch() {
    op o;
    o.kind = op_kind::prefetch;
    o.a = static_cast<std::int8_t>(pick_placeable());
    pick_range(o.a, o);
    if (rng_.percent(40)) o.form |= kToHost;
    if (whole(o.a, o.a_off, o.len) && rng_.percent(60)) o.form |= kWhole;  // prefetch(buffer)
    const int s = stream();
    o.s = static_cast<std::int8_t>(s);
    order_for(s, o.a);
    emit(o);
    queued(s, o.a);
  }

  // Advice and intents apply at once, outside stream order: the generator treats them as
  // host-side operations (the buffer has no work in flight).
  void advise() {
    op o;
    o.kind = op_kind::advise;
    o.a = static_cast<std::int8_t>(pick_managed());
    pick_range(o.a, o);
    o.h = static_cast<hint>(rng_.below(8));
    if (whole(o.a, o.a_off, o.len) && rng_.percent(50)) o.form |= kWhole;
    if (rng_.percent(50)) o.form |= kOtherSpelling;  // read_mostly: the form without a location
    quiesce(o.a);
    emit(o);
    slots_[o.a].dirty = true;
    emit_checks();
  }

  void set_intent() {
    op o;
    o.kind = op_kind::set_intent;
    o.a = static_cast<std::int8_t>(pick_managed());
    pick_range(o.a, o);
    if (rng_.percent(60)) o.form |= kMapped;
    if (rng_.percent(50)) o.form |= kNamedGpu;
    if (whole(o.a, o.a_off, o.len) && rng_.percent(50)) o.form |= kWhole;
    quiesce(o.a);
    emit(o);
    slots_[o.a].dirty = true;
    emit_checks();
  }

  /// A way to pass the written range of a launch to kernel k.
  pass pick_target(int x, kernel k, bool whole_range) {
    pass choices[8];
    int n = 0;
    choices[n++] = pass::view;
    if (whole_range) choices[n++] = pass::buffer;
    if (placeable(slots_[x].mem)) {
      const bool reads = k == kernel::update || k == kernel::update_view;
      const bool may_map = slots_[x].mem == memory::managed;  // a pool's memory: no mapped tags
      choices[n++] = pass::inout;
      if (may_map) choices[n++] = pass::inout_mapped;
      if (reads) choices[n++] = pass::inout_moved;
      if (reads && whole_range) choices[n++] = pass::inout_buffer;
      if (!reads) choices[n++] = pass::out;
      if (!reads && may_map) choices[n++] = pass::out_mapped;
    }
    return choices[rng_.below(static_cast<std::uint64_t>(n))];
  }
  pass pick_source_pass(int x, bool whole_range) {
    pass choices[4];
    int n = 0;
    choices[n++] = pass::view;
    if (whole_range) choices[n++] = pass::buffer;
    if (placeable(slots_[x].mem)) {
      choices[n++] = pass::in;
      if (slots_[x].mem == memory::managed) choices[n++] = pass::in_mapped;
    }
    return choices[rng_.below(static_cast<std::uint64_t>(n))];
  }

  void launch() {
    op o;
    o.kind = op_kind::launch;
    o.a = static_cast<std::int8_t>(pick_live());
    const std::uint32_t r = rng_.below(100);
    if (r < 35) {
      o.k = kernel::update;
    } else if (r < 50) {
      o.k = kernel::update_view;
    } else if (r < 70) {
      o.k = kernel::write;
    } else {
      o.k = kernel::combine;
    }
    if (o.k == kernel::combine) {
      o.b = static_cast<std::int8_t>(pick_source(o.a));
      if (!pick_two_ranges(o)) return;
      o.source = pick_source_pass(o.b, o.a != o.b && whole(o.b, o.b_off, o.len));
      o.target = pick_target(o.a, o.k, o.a != o.b && whole(o.a, o.a_off, o.len));
    } else {
      pick_range(o.a, o);
      o.target = pick_target(o.a, o.k, whole(o.a, o.a_off, o.len));
    }
    o.mul = rng_.bits32();
    o.add = rng_.bits32();
    static constexpr std::uint16_t blocks[] = {32, 64, 128, 256, 512, 1024};
    o.block = blocks[rng_.below(6)];
    const int s = stream();
    o.s = static_cast<std::int8_t>(s);
    order_for(s, o.a);
    if (o.b >= 0) order_for(s, o.b);
    emit(o);
    queued(s, o.a, o.b);
  }

  void ready_for_host() {
    op o;
    o.kind = op_kind::ready_for_host;
    o.a = static_cast<std::int8_t>(pick_placeable());
    pick_range(o.a, o);
    if (whole(o.a, o.a_off, o.len) && rng_.percent(50)) o.form |= kWhole;  // ready_for_host(b)
    if (rng_.percent(30)) {  // no stream: it waits for the device first
      emit(o);
      done_ = queued_;
      emit_checks();
      return;
    }
    // On stream s: every write to the range must be ordered before s; it waits for s.
    const int s = stream();
    o.s = static_cast<std::int8_t>(s);
    order_for(s, o.a);
    emit(o);
    queued(s, o.a);
    host_waited(s);
    emit_checks();
  }

  rng rng_;
  sequence seq_;
  int streams_ = 2;
  std::size_t count_ = 0;  // operations emitted, checks not counted
  std::array<shape, kSlots> slots_{};
  std::array<std::uint32_t, kMaxStreams> queued_{};  // operations queued on each stream
  // waits_[s][t]: operations of stream t ordered before the next work on s (waits_[s][s] is
  // queued_[s]).
  std::array<std::array<std::uint32_t, kMaxStreams>, kMaxStreams> waits_{};
  std::array<std::uint32_t, kMaxStreams> done_{};  // operations the host knows complete
};

sequence generate(std::uint64_t seed, std::size_t operations, int streams_override = 0) {
  return generator(seed, streams_override).run(operations);
}

// ---- the model ----

std::uint32_t as_unsigned(int v) { return static_cast<std::uint32_t>(v); }
int as_int(std::uint32_t v) { return static_cast<int>(v); }  // modular (defined since C++20)

/// The contents of every slot, as a sequential program would leave them.
class contents_model {
 public:
  void apply(const op& o) {
    std::vector<int>& a = data_[slot(o.a)];
    switch (o.kind) {
      case op_kind::allocate:
        a.assign(o.n, 0);
        if (o.how == init::value || o.how == init::uninitialized_fill ||
            o.how == init::uninitialized_fill_async) {
          std::fill(a.begin(), a.end(), o.value);
        }
        if (o.how == init::iota) std::iota(a.begin(), a.end(), o.value);
        break;
      case op_kind::destroy: std::vector<int>().swap(a); break;
      case op_kind::move_construct:
      case op_kind::move_assign:
        a = std::move(data_[slot(o.b)]);
        std::vector<int>().swap(data_[slot(o.b)]);
        break;
      case op_kind::copy:
      case op_kind::copy_async: {
        const std::vector<int>& b = data_[slot(o.b)];
        const std::vector<int> from(b.begin() + o.b_off, b.begin() + o.b_off + o.len);
        std::copy(from.begin(), from.end(), a.begin() + o.a_off);
        break;
      }
      case op_kind::fill:
      case op_kind::fill_async:
      case op_kind::host_write:
        std::fill(a.begin() + o.a_off, a.begin() + o.a_off + o.len, o.value);
        break;
      case op_kind::launch:
        for (std::uint32_t i = 0; i < o.len; ++i) {
          int& v = a[o.a_off + i];
          switch (o.k) {
            case kernel::update:
            case kernel::update_view: v = as_int(as_unsigned(v) * o.mul + o.add + i); break;
            case kernel::write: v = as_int(i * o.mul + o.add); break;
            case kernel::combine:
              v = as_int(as_unsigned(data_[slot(o.b)][o.b_off + i]) * o.mul + o.add);
              break;
          }
        }
        break;
      default: break;  // placement, synchronisation and checks leave the contents alone
    }
  }
  const std::vector<int>& of(int x) const { return data_[slot(x)]; }

 private:
  static std::size_t slot(int x) { return x < 0 ? 0 : static_cast<std::size_t>(x); }
  std::array<std::vector<int>, kSlots> data_;
};

// ---- reports ----

/// The non-check operations up to and including index `at`: UNIMEM_MODEL_OPS for a replay that
/// ends with it (the whole run when it is in the closing tail).
std::size_t replay_operations(const sequence& seq, std::size_t at) {
  if (at >= seq.tail) return seq.requested;
  std::size_t n = 0;
  for (std::size_t i = 0; i <= at && i < seq.ops.size(); ++i) {
    n += seq.ops[i].kind != op_kind::check;
  }
  return n;
}

std::string replay_command(const sequence& seq, std::size_t at, int streams_override) {
  std::ostringstream r;
  r << "UNIMEM_MODEL_SEED=" << seq.seed << " UNIMEM_MODEL_OPS=" << replay_operations(seq, at);
  if (streams_override != 0) r << " UNIMEM_MODEL_STREAMS=" << streams_override;
  r << " unimem_tests --gtest_filter=ModelGpu.*";
  return r.str();
}

/// The operations that touched the buffer in `slot` at index `at`, from its allocation on,
/// following it back through moves (oldest first).
std::vector<std::size_t> history(const sequence& seq, std::size_t at, int slot) {
  std::array<bool, kSlots> tracked{};
  tracked[static_cast<std::size_t>(slot)] = true;
  std::vector<std::size_t> found;
  for (std::size_t i = std::min(at + 1, seq.ops.size()); i-- > 0;) {
    const op& o = seq.ops[i];
    const bool on_a = o.a >= 0 && tracked[static_cast<std::size_t>(o.a)];
    const bool on_b = o.b >= 0 && tracked[static_cast<std::size_t>(o.b)];
    if (!on_a && !on_b) continue;
    found.push_back(i);
    if ((o.kind == op_kind::move_construct || o.kind == op_kind::move_assign) && on_a) {
      tracked[static_cast<std::size_t>(o.a)] = false;  // before the move it was in b
      tracked[static_cast<std::size_t>(o.b)] = true;
    }
    if (o.kind == op_kind::allocate && on_a) tracked[static_cast<std::size_t>(o.a)] = false;
    if (std::none_of(tracked.begin(), tracked.end(), [](bool b) { return b; })) break;
  }
  std::reverse(found.begin(), found.end());
  return found;
}

/// Compares a checked buffer with the model: an empty string when they agree, else the report
/// (seed, check, first differing element, the buffer's operations, the replay command). For a
/// host read at `at`, expected and actual are the range it read (from its a_off on).
std::string compare_with_model(const sequence& seq, std::size_t at,
                               const std::vector<int>& expected, const int* actual,
                               std::size_t actual_size, int streams_override) {
  std::size_t differ = 0, first = 0;
  if (actual_size == expected.size()) {
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (actual[i] == expected[i]) continue;
      if (differ++ == 0) first = i;
    }
    if (differ == 0) return {};
  }
  const int slot = seq.ops[at].a;
  const bool host_read = seq.ops[at].kind == op_kind::host_read;
  const std::size_t base = host_read ? seq.ops[at].a_off : 0;  // of expected[0] in the buffer
  std::size_t previous = at;
  while (previous > 0 && seq.ops[previous].kind == op_kind::check) --previous;
  const std::vector<std::size_t> ops = history(seq, at, slot);
  memory kind = memory::managed;
  if (!ops.empty() && seq.ops[ops.front()].kind == op_kind::allocate) {
    kind = seq.ops[ops.front()].mem;
  }
  std::ostringstream r;
  r << "model mismatch: seed " << seq.seed << " (" << seq.streams << " streams), "
    << (host_read ? "host read #" : "check #") << at;
  if (!host_read && seq.ops[previous].kind != op_kind::check) {
    r << " after operation #" << previous;
  }
  r << "\nbuffer B" << slot << ": " << name(kind);
  if (host_read) {
    r << ", elements [" << base << "," << base + expected.size() << ") read by the host; ";
  } else {
    r << " of " << expected.size() << " ints; ";
  }
  if (actual_size != expected.size()) {
    r << "it has " << actual_size << " elements, the model " << expected.size() << "\n";
  } else {
    r << differ << (differ == 1 ? " element differs" : " elements differ")
      << "; the first: element " << base + first << ", expected " << expected[first]
      << ", actual " << actual[first] << "\n";
  }
  constexpr std::size_t shown = 60;
  r << "operations on B" << slot << " since it was allocated";
  if (ops.size() > shown) r << " (the last " << shown << " of " << ops.size() << ")";
  r << ":\n";
  for (std::size_t i = ops.size() > shown ? ops.size() - shown : 0; i < ops.size(); ++i) {
    r << "  " << describe(seq.ops[ops[i]], ops[i]) << "\n";
  }
  r << "replay: " << replay_command(seq, at, streams_override);
  return r.str();
}

// ---- the executor ----

using unimem_test::fault_fresh_memory;

struct totals {
  std::uint64_t ops = 0, seeds = 0, checks = 0, elements = 0, launches = 0, copies = 0,
                async_copies = 0, fills = 0, allocations = 0, pool_allocations = 0,
                runtime_pool_seeds = 0, frees = 0, moves = 0, placement = 0, waits = 0,
                synchronisations = 0, host_writes = 0, host_reads = 0, host_fault_ops = 0;
};

/// The pool of a seed's pool buffers: the default one for even seeds (the runtime's pool of
/// managed memory on CUDA 13), unimem's caching allocator for odd seeds (on HIP and CUDA 12 and
/// older both are the caching allocator).
unimem::managed_pool_options pool_options(std::uint64_t seed) {
  unimem::managed_pool_options o;
  if (seed % 2 != 0) o.use_runtime_pool = false;
  return o;
}

/// Runs operations through unimem (the GPU side of the test).
class executor {
 public:
  explicit executor(const sequence& seq)
      : device_(unimem::device::current().device_id()),
        concurrent_(unimem::device::current().concurrent_managed_access()),
        pool_(pool_options(seq.seed)) {
    for (int i = 0; i < seq.streams; ++i) {
      streams_.emplace_back(seq.blocking[static_cast<std::size_t>(i)]
                                ? unimem::stream::blocking_mode::blocking
                                : unimem::stream::blocking_mode::non_blocking);
      events_.emplace_back(unimem::event::timing_mode::disable_timing);
    }
  }
  executor(const executor&) = delete;
  executor& operator=(const executor&) = delete;
  /// Whether the pool is the runtime's (for the summary).
  bool runtime_pool() const { return pool_.uses_runtime_pool(); }

  /// After a failure work may still be queued: wait for it before the buffers are freed (the
  /// streams, then the pool, are destroyed after them).
  ~executor() {
    try {
      unimem::synchronize();
    } catch (const std::exception&) {  // reported where it happened
    }
  }

  void run(const op& o, totals& sum) {
    switch (o.kind) {
      case op_kind::allocate:
        allocate(o);
        ++sum.allocations;
        sum.pool_allocations += o.mem == memory::pool;
        break;
      case op_kind::destroy: {
        slot_buffers& b = at(o.a);  // a live slot
        if (o.s >= 0) {
          if (!b.pool) throw std::logic_error("set_stream for a buffer not from a pool");
          b.pool->set_stream(stream(o.s));
        }
        slots_[slot(o.a)] = slot_buffers{};  // a pool buffer: freed in the order of its stream
        ++sum.frees;
        break;
      }
      case op_kind::move_construct:
      case op_kind::move_assign:
        move(o);
        ++sum.moves;
        break;
      case op_kind::copy:
      case op_kind::copy_async:
        copy(o);
        ++(o.kind == op_kind::copy ? sum.copies : sum.async_copies);
        break;
      case op_kind::fill:
      case op_kind::fill_async:
        fill(o);
        ++sum.fills;
        break;
      case op_kind::prefetch:
        prefetch(o);
        ++sum.placement;
        break;
      case op_kind::advise:
        advise(o);
        ++sum.placement;
        break;
      case op_kind::set_intent:
        set_intent(o);
        ++sum.placement;
        break;
      case op_kind::launch:
        launch(o);
        ++sum.launches;
        break;
      case op_kind::record_wait:
        events_[stream_index(o.t)].record(stream(o.t));
        if (o.form & kOtherSpelling) {
          stream(o.s).wait(events_[stream_index(o.t)]);
        } else {
          streams_[stream_index(o.s)].wait(events_[stream_index(o.t)]);
        }
        ++sum.waits;
        break;
      case op_kind::stream_sync:
        if (o.form & kOtherSpelling) {
          stream(o.s).synchronize();
        } else {
          streams_[stream_index(o.s)].synchronize();
        }
        ++sum.synchronisations;
        break;
      case op_kind::event_sync:
        events_[stream_index(o.t)].record(stream(o.t));
        events_[stream_index(o.t)].synchronize();
        ++sum.synchronisations;
        break;
      case op_kind::device_sync:
        unimem::synchronize();
        ++sum.synchronisations;
        break;
      case op_kind::ready_for_host:
        ready_for_host(o);
        ++sum.placement;
        break;
      case op_kind::host_write:
        host_write(o);
        ++sum.host_writes;
        break;
      case op_kind::host_read: ++sum.host_reads; break;  // host_read()
      case op_kind::host_faults: {
        bool faulted = false;
        if (o.form & kOnAnotherThread) {
          std::thread t([&] { faulted = fault_fresh_memory(o.n); });
          t.join();
        } else {
          faulted = fault_fresh_memory(o.n);
        }
        if (!faulted) throw std::runtime_error("no fresh memory could be mapped");
        ++sum.host_fault_ops;
        break;
      }
      case op_kind::check: break;  // read()
    }
  }

  /// What the CPU reads of a[a_off, +len) (host_read), element by element through memory: the
  /// buffer's operator[] (kOtherSpelling) or the raw pointer from data(); valid until the next
  /// call.
  const int* host_read(const op& o) {
    if (!concurrent_) unimem::synchronize();  // the CPU may not touch it while kernels run
    scratch_.resize(o.len);
    visit_host_accessible(o.a, [&](const auto& b) {
      if (o.form & kOtherSpelling) {
        for (std::uint32_t i = 0; i < o.len; ++i) scratch_[i] = b[o.a_off + i];
      } else {
        const volatile int* p = b.data() + o.a_off;
        for (std::uint32_t i = 0; i < o.len; ++i) scratch_[i] = p[i];
      }
    });
    return scratch_.data();
  }

  /// The contents of buffer x as the host sees them; valid until the next call.
  const int* read(int x, std::size_t& n) {
    slot_buffers& b = at(x);
    if (b.managed) {
      if (!concurrent_) unimem::synchronize();  // the CPU may not touch it while kernels run
      n = b.managed->size();
      return b.managed->data();
    }
    if (b.pool) {
      if (!concurrent_) unimem::synchronize();
      n = b.pool->size();
      return b.pool->data();
    }
    if (b.pinned) {
      n = b.pinned->size();
      return b.pinned->data();
    }
    scratch_ = b.device->to<std::vector<int>>();
    n = scratch_.size();
    return scratch_.data();
  }

 private:
  struct slot_buffers {
    std::optional<unimem::managed_buffer<int>> managed;
    std::optional<unimem::device_buffer<int>> device;
    std::optional<unimem::pinned_buffer<int>> pinned;
    std::optional<unimem::pool_buffer<int>> pool;  // from pool_
  };

  static std::size_t slot(int x) { return static_cast<std::size_t>(x); }
  static std::size_t stream_index(int s) { return static_cast<std::size_t>(s); }
  unimem::stream_ref stream(int s) const { return streams_[stream_index(s)].ref(); }
  unimem::location gpu() const { return unimem::location::device(device_); }

  slot_buffers& at(int x) {
    slot_buffers& b = slots_[slot(x)];
    if (!b.managed && !b.device && !b.pinned && !b.pool) {
      throw std::logic_error("the generator used an empty slot");
    }
    return b;
  }
  /// Calls f with buffer x as its own type.
  template <class F>
  void visit(int x, F&& f) {
    slot_buffers& b = at(x);
    if (b.managed) {
      f(*b.managed);
    } else if (b.device) {
      f(*b.device);
    } else if (b.pinned) {
      f(*b.pinned);
    } else {
      f(*b.pool);
    }
  }
  unimem::view<int> view_of(int x) {
    unimem::view<int> v;
    visit(x, [&](auto& buffer) { v = buffer.view(); });
    return v;
  }
  unimem::managed_buffer<int>& managed(int x) {
    slot_buffers& b = at(x);
    if (!b.managed) throw std::logic_error("the generator asked for a managed buffer");
    return *b.managed;
  }
  /// Calls f with buffer x, a managed_buffer or a pool_buffer (managed memory either way).
  template <class F>
  void visit_managed_memory(int x, F&& f) {
    visit(x, [&](auto& b) {
      using buffer_type = std::decay_t<decltype(b)>;
      if constexpr (std::is_same<buffer_type, unimem::managed_buffer<int>>::value ||
                    std::is_same<buffer_type, unimem::pool_buffer<int>>::value) {
        f(b);
      } else {
        throw std::logic_error("the generator asked for managed memory");
      }
    });
  }
  /// Calls f with buffer x, which the CPU can reach through memory (managed, pinned or pool
  /// memory; not a device_buffer).
  template <class F>
  void visit_host_accessible(int x, F&& f) {
    visit(x, [&](auto& b) {
      using buffer_type = std::decay_t<decltype(b)>;
      if constexpr (std::is_same<buffer_type, unimem::device_buffer<int>>::value) {
        throw std::logic_error("the generator asked the host to touch device memory");
      } else {
        f(b);
      }
    });
  }
  template <class Buffer>
  Buffer make(const op& o) {
    switch (o.how) {
      case init::zeros: return Buffer(o.n);
      case init::value: return Buffer(o.n, o.value);
      case init::uninitialized_fill: {
        Buffer b(o.n, unimem::uninitialized);
        unimem::fill(b, o.value);
        return b;
      }
      case init::uninitialized_fill_async: {
        Buffer b(o.n, unimem::uninitialized);
        unimem::fill_async(b, o.value, stream(o.s));
        return b;
      }
      case init::iota: {
        std::vector<int> values(o.n);
        std::iota(values.begin(), values.end(), o.value);
        return Buffer(values.begin(), values.end());
      }
      case init::first_touch_location:
      case init::first_touch_stream: break;
    }
    throw std::logic_error("first_touch for a buffer that is not managed");
  }
  void allocate(const op& o) {
    slot_buffers& b = slots_[slot(o.a)];
    b = slot_buffers{};
    switch (o.mem) {
      case memory::pool: {
        // In the order of s: only work queued on s after it may touch the memory at first.
        if (o.how != init::uninitialized_fill_async) {
          throw std::logic_error("a pool buffer not filled on its stream");
        }
        unimem::pool_buffer<int>& p = b.pool.emplace(o.n, pool_, stream(o.s));
        if (o.form & kWhole) {
          unimem::fill_async(p, o.value, stream(o.s));
        } else {
          unimem::fill_async(p.view(), o.value, stream(o.s));
        }
        break;
      }
      case memory::managed:
        if (o.how == init::first_touch_location) {
          b.managed.emplace(o.n, unimem::first_touch(gpu(), stream(o.s)));
        } else if (o.how == init::first_touch_stream) {
          b.managed.emplace(o.n, unimem::first_touch(stream(o.s)));
        } else {
          b.managed.emplace(make<unimem::managed_buffer<int>>(o));
        }
        break;
      case memory::device: b.device.emplace(make<unimem::device_buffer<int>>(o)); break;
      case memory::pinned: b.pinned.emplace(make<unimem::pinned_buffer<int>>(o)); break;
    }
  }

  /// Moves between two optionals of one buffer type; the moved-from buffer must be empty.
  template <class Buffer>
  static void move_buffer(std::optional<Buffer>& to, std::optional<Buffer>& from, bool assign) {
    if (assign) {
      *to = std::move(*from);
    } else {
      to.emplace(std::move(*from));
    }
    const bool emptied = from->empty() && from->size() == 0 && from->data() == nullptr;
    from.reset();
    if (!emptied) throw std::logic_error("a moved-from buffer is not empty");
  }
  void move(const op& o) {
    slot_buffers& from = at(o.b);
    slot_buffers& to = slots_[slot(o.a)];
    const bool assign = o.kind == op_kind::move_assign;
    if (assign && ((from.managed.has_value() != to.managed.has_value()) ||
                   (from.device.has_value() != to.device.has_value()) ||
                   (from.pool.has_value() != to.pool.has_value()))) {
      throw std::logic_error("move assignment between buffers of different kinds");
    }
    if (from.managed) move_buffer(to.managed, from.managed, assign);
    if (from.device) move_buffer(to.device, from.device, assign);
    if (from.pinned) move_buffer(to.pinned, from.pinned, assign);
    if (from.pool) move_buffer(to.pool, from.pool, assign);
  }

  template <class Dst, class Src>
  void copy_one(const op& o, Dst& dst, const Src& src) {
    if (o.kind == op_kind::copy) {
      unimem::copy(dst, src);
    } else {
      unimem::copy_async(dst, src, stream(o.s));
    }
  }
  void copy(const op& o) {
    unimem::view<int> dst = view_of(o.a).subview(o.a_off, o.len);
    const unimem::view<const int> src = view_of(o.b).subview(o.b_off, o.len);
    const bool whole_dst = (o.form & kWhole) != 0, whole_src = (o.form & kWholeSource) != 0;
    if (whole_dst && whole_src) {
      visit(o.a, [&](auto& d) { visit(o.b, [&](auto& s) { copy_one(o, d, s); }); });
    } else if (whole_dst) {
      visit(o.a, [&](auto& d) { copy_one(o, d, src); });
    } else if (whole_src) {
      visit(o.b, [&](auto& s) { copy_one(o, dst, s); });
    } else {
      copy_one(o, dst, src);
    }
  }

  template <class Range>
  void fill_one(const op& o, Range& r) {
    if (o.kind == op_kind::fill) {
      unimem::fill(r, o.value);
    } else {
      unimem::fill_async(r, o.value, stream(o.s));
    }
  }
  void fill(const op& o) {
    if (o.form & kWhole) {
      visit(o.a, [&](auto& b) { fill_one(o, b); });
    } else {
      unimem::view<int> v = view_of(o.a).subview(o.a_off, o.len);
      fill_one(o, v);
    }
  }

  /// A placement call on a non-empty range must not answer hint_status::empty.
  static void expect_not_empty(unimem::hint_status status) {
    if (status == unimem::hint_status::empty) {
      throw std::logic_error("hint_status::empty for a range that is not empty");
    }
  }

  void prefetch(const op& o) {
    const unimem::location l = (o.form & kToHost) ? unimem::location::host() : gpu();
    visit_managed_memory(o.a, [&](auto& b) {
      if (o.form & kWhole) {
        expect_not_empty(unimem::prefetch(b, l, stream(o.s)));
      } else {
        expect_not_empty(unimem::prefetch(b.view().subview(o.a_off, o.len), l, stream(o.s)));
      }
    });
  }

  void advise(const op& o) {
    unimem::advice a = unimem::advice::read_mostly;
    unimem::location l = gpu();
    bool set = true;
    switch (o.h) {
      case hint::read_mostly: break;
      case hint::unset_read_mostly: set = false; break;
      case hint::prefer_device: a = unimem::advice::preferred_location; break;
      case hint::prefer_host:
        a = unimem::advice::preferred_location;
        l = unimem::location::host();
        break;
      case hint::unset_prefer_device:
        a = unimem::advice::preferred_location;
        set = false;
        break;
      case hint::unset_prefer_host:
        a = unimem::advice::preferred_location;
        l = unimem::location::host();
        set = false;
        break;
      case hint::accessed_by: a = unimem::advice::accessed_by; break;
      case hint::unset_accessed_by:
        a = unimem::advice::accessed_by;
        set = false;
        break;
    }
    unimem::managed_buffer<int>& b = managed(o.a);
    const bool no_location = a == unimem::advice::read_mostly && (o.form & kOtherSpelling) != 0;
    const unimem::view<int> v = b.view().subview(o.a_off, o.len);
    const bool whole_buffer = (o.form & kWhole) != 0;
    unimem::hint_status status;
    if (whole_buffer && no_location) {
      status = set ? unimem::advise(b, a) : unimem::unadvise(b, a);
    } else if (whole_buffer) {
      status = set ? unimem::advise(b, a, l) : unimem::unadvise(b, a, l);
    } else if (no_location) {
      status = set ? unimem::advise(v, a) : unimem::unadvise(v, a);
    } else {
      status = set ? unimem::advise(v, a, l) : unimem::unadvise(v, a, l);
    }
    expect_not_empty(status);
  }

  void set_intent(const op& o) {
    const unimem::intent i = (o.form & kMapped) ? unimem::intent::map : unimem::intent::move;
    unimem::managed_buffer<int>& b = managed(o.a);
    const bool named = (o.form & kNamedGpu) != 0;
    const unimem::view<int> v = b.view().subview(o.a_off, o.len);
    if ((o.form & kWhole) && named) {
      expect_not_empty(unimem::set_intent(b, i, gpu()));
    } else if (o.form & kWhole) {
      expect_not_empty(unimem::set_intent(b, i));
    } else if (named) {
      expect_not_empty(unimem::set_intent(v, i, gpu()));
    } else {
      expect_not_empty(unimem::set_intent(v, i));
    }
  }

  void ready_for_host(const op& o) {
    visit_managed_memory(o.a, [&](auto& b) {
      const unimem::view<int> v = b.view().subview(o.a_off, o.len);
      if (o.form & kWhole) {  // ready_for_host(buffer[, s])
        expect_not_empty(o.s < 0 ? unimem::ready_for_host(b)
                                 : unimem::ready_for_host(b, stream(o.s)));
      } else if (o.s < 0) {
        expect_not_empty(unimem::ready_for_host(v));
      } else {
        expect_not_empty(unimem::ready_for_host(v, stream(o.s)));
      }
    });
  }

  /// Calls f with the range o.a[a_off, +len) as launch() should receive it (o.target).
  template <class F>
  void with_target(const op& o, F&& f) {
    auto v = [&] { return view_of(o.a).subview(o.a_off, o.len); };  // tags take views by value
    switch (o.target) {
      case pass::view: f(v()); break;
      case pass::buffer: visit(o.a, [&](auto& b) { f(b); }); break;
      case pass::inout: f(unimem::inout(v())); break;
      case pass::inout_mapped: f(unimem::inout(v(), unimem::intent::map)); break;
      case pass::inout_moved: f(unimem::inout(v(), unimem::intent::move)); break;
      case pass::inout_buffer:
        visit_managed_memory(o.a, [&](auto& b) { f(unimem::inout(b)); });
        break;
      case pass::out: f(unimem::out(v())); break;
      case pass::out_mapped: f(unimem::out(v(), unimem::intent::map)); break;
      case pass::in:
      case pass::in_mapped: throw std::logic_error("in() for a range the kernel writes");
    }
  }
  /// Calls f with the range o.b[b_off, +len) as launch() should receive it (o.source).
  template <class F>
  void with_source(const op& o, F&& f) {
    auto v = [&] { return unimem::view<const int>(view_of(o.b).subview(o.b_off, o.len)); };
    switch (o.source) {
      case pass::view: f(v()); break;
      case pass::buffer: visit(o.b, [&](auto& b) { f(std::as_const(b)); }); break;
      case pass::in: f(unimem::in(v())); break;
      case pass::in_mapped: f(unimem::in(v(), unimem::intent::map)); break;
      default: throw std::logic_error("a source passed as a written range");
    }
  }
  /// The CPU writes value into a[a_off, +len) through memory: the buffer's operator[]
  /// (kOtherSpelling) or the raw pointer from data().
  void host_write(const op& o) {
    if (!concurrent_) unimem::synchronize();  // the CPU may not touch it while kernels run
    visit_host_accessible(o.a, [&](auto& b) {
      if (o.form & kOtherSpelling) {
        for (std::uint32_t i = 0; i < o.len; ++i) b[o.a_off + i] = o.value;
      } else {
        volatile int* p = b.data() + o.a_off;
        for (std::uint32_t i = 0; i < o.len; ++i) p[i] = o.value;
      }
    });
  }
  void launch(const op& o) {
    if ((mapped(o.target) && at(o.a).pool) || (o.b >= 0 && mapped(o.source) && at(o.b).pool)) {
      throw std::logic_error("a mapped tag for pool memory");
    }
    const unimem::launch_config cfg = unimem::grid_for(o.len, o.block).on(stream(o.s));
    const std::size_t n = o.len;
    switch (o.k) {
      case kernel::update:
        with_target(o, [&](auto&& t) {
          unimem::launch(model_update, cfg, std::forward<decltype(t)>(t), n, o.mul, o.add);
        });
        break;
      case kernel::update_view:
        with_target(o, [&](auto&& t) {
          unimem::launch(model_update_view, cfg, std::forward<decltype(t)>(t), o.mul, o.add);
        });
        break;
      case kernel::write:
        with_target(o, [&](auto&& t) {
          unimem::launch(model_write, cfg, std::forward<decltype(t)>(t), n, o.mul, o.add);
        });
        break;
      case kernel::combine:
        with_target(o, [&](auto&& t) {
          with_source(o, [&](auto&& s) {
            unimem::launch(model_combine, cfg, std::forward<decltype(t)>(t),
                           std::forward<decltype(s)>(s), n, o.mul, o.add);
          });
        });
        break;
    }
  }

  int device_;
  bool concurrent_;
  std::vector<unimem::stream> streams_;
  std::vector<unimem::event> events_;
  unimem::managed_pool pool_;  // after the streams, before the buffers: destroyed between them
  std::array<slot_buffers, kSlots> slots_;
  std::vector<int> scratch_;
};

// ---- settings ----

struct settings {
  std::uint64_t first_seed = 1;
  std::uint64_t seeds = 20;
  std::size_t ops = 5000;
  int streams = 0;  // 0: each seed draws 2 to 4
};

std::uint64_t environment_number(const char* name, std::uint64_t fallback, bool* set = nullptr) {
  const char* v = std::getenv(name);
  if (set != nullptr) *set = false;
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0') {
    ADD_FAILURE() << name << "=" << v << " is not a number; using " << fallback;
    return fallback;
  }
  if (set != nullptr) *set = true;
  return n;
}

settings settings_from_environment() {
  settings s;
  s.seeds = environment_number("UNIMEM_MODEL_SEEDS", s.seeds);
  s.ops = static_cast<std::size_t>(environment_number("UNIMEM_MODEL_OPS", s.ops));
  bool one = false;
  const std::uint64_t seed = environment_number("UNIMEM_MODEL_SEED", 0, &one);
  if (one) {
    s.first_seed = seed;
    s.seeds = 1;
  }
  s.streams = static_cast<int>(environment_number("UNIMEM_MODEL_STREAMS", 0));
  if (s.streams != 0 && (s.streams < 2 || s.streams > kMaxStreams)) {
    ADD_FAILURE() << "UNIMEM_MODEL_STREAMS must be 2 to " << kMaxStreams;
    s.streams = 0;
  }
  return s;
}

/// Runs one seed; an empty string when every check passed, else the report. `fatal`: an
/// exception was thrown (the device may be unusable: stop all seeds).
std::string run_sequence(const sequence& seq, int streams_override, totals& sum, bool& fatal) {
  contents_model model;
  executor ex(seq);
  ++sum.seeds;
  sum.runtime_pool_seeds += ex.runtime_pool();
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const op& o = seq.ops[i];
    try {
      ex.run(o, sum);
      model.apply(o);
      if (o.kind == op_kind::host_read) {
        const int* seen = ex.host_read(o);
        const std::vector<int>& whole = model.of(o.a);
        const std::vector<int> expected(whole.begin() + o.a_off,
                                        whole.begin() + o.a_off + o.len);
        std::string report = compare_with_model(seq, i, expected, seen, o.len, streams_override);
        if (!report.empty()) return report;
      }
      if (o.kind != op_kind::check) {
        ++sum.ops;
        continue;
      }
      std::size_t n = 0;
      const int* actual = ex.read(o.a, n);
      ++sum.checks;
      sum.elements += n;
      std::string report = compare_with_model(seq, i, model.of(o.a), actual, n, streams_override);
      if (!report.empty()) return report;
    } catch (const std::exception& e) {
      fatal = true;
      std::ostringstream r;
      r << "seed " << seq.seed << " (" << seq.streams << " streams): " << describe(o, i)
        << " threw: " << e.what() << "\nreplay: " << replay_command(seq, i, streams_override);
      return r.str();
    }
  }
  return {};
}

// ---- an independent check of the ordering rules (for the host test) ----

/// Replays a sequence with explicit sets of operations instead of the generator's vector
/// clocks, and returns the first operation that breaks a rule (empty: none): queued work
/// touching a buffer with work on another stream that is neither complete nor ordered before
/// it by an event wait; a host-side operation on a buffer with work not known complete; and
/// the shape of each operation (live slots, ranges inside their buffers, no overlap within
/// one buffer, managed-only calls on managed buffers, memory budget; pool buffers allocated
/// and filled on one stream, set_stream only for them, and none of advice, intents, mapped
/// tags and member calls pool_buffer has not).
std::string ordering_violation(const sequence& seq) {
  struct buffer {
    memory mem;
    std::uint32_t n;
    std::vector<std::size_t> work;  // the queued operations that touched it
  };
  std::vector<buffer> buffers;
  std::array<int, kSlots> in_slot;
  in_slot.fill(-1);
  std::vector<int> work_stream;  // per queued operation: its stream
  std::vector<char> complete;    // per queued operation: the host knows it done
  std::vector<std::vector<char>> before(static_cast<std::size_t>(seq.streams));  // ordered before s
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const op& o = seq.ops[i];
    const std::string where = describe(o, i) + ": ";
    auto live = [&](int x) {
      return x >= 0 && x < kSlots && in_slot[static_cast<std::size_t>(x)] >= 0;
    };
    auto buf = [&](int x) -> buffer& {
      return buffers[static_cast<std::size_t>(in_slot[static_cast<std::size_t>(x)])];
    };
    auto stream_ok = [&](int s) { return s >= 0 && s < seq.streams; };
    auto inside = [&](int x, std::uint32_t off) {
      return o.len > 0 && off <= buf(x).n && o.len <= buf(x).n - off;
    };
    auto idle = [&](int x) {
      for (std::size_t w : buf(x).work) {
        if (!complete[w]) return false;
      }
      return true;
    };
    auto host_waits = [&](int s) {
      const std::vector<char>& b = before[static_cast<std::size_t>(s)];
      for (std::size_t w = 0; w < b.size(); ++w) complete[w] = complete[w] || b[w];
    };
    // Queues work on s touching x (and y); the error, if the order is not guaranteed.
    auto queue = [&](int s, int x, int y) -> std::string {
      std::vector<char>& mine = before[static_cast<std::size_t>(s)];
      for (int z : {x, y}) {
        if (z < 0) continue;
        for (std::size_t w : buf(z).work) {
          if (!complete[w] && work_stream[w] != s && !mine[w]) {
            return "touches B" + std::to_string(z) + ", which has unsynchronised work on s" +
                   std::to_string(work_stream[w]);
          }
        }
      }
      const std::size_t w = work_stream.size();
      work_stream.push_back(s);
      complete.push_back(0);
      for (std::vector<char>& b : before) b.push_back(0);
      mine[w] = 1;
      buf(x).work.push_back(w);
      if (y >= 0 && y != x) buf(y).work.push_back(w);
      return {};
    };
    std::string error;
    switch (o.kind) {
      case op_kind::allocate: {
        if (o.a < 0 || o.a >= kSlots || live(o.a)) return where + "allocates into a used slot";
        if (o.n == 0 || o.n > kMaxElements) return where + "bad size";
        std::size_t bytes = o.n * sizeof(int);
        int count = 1;
        for (int x = 0; x < kSlots; ++x) {
          if (!live(x)) continue;
          bytes += buf(x).n * sizeof(int);
          ++count;
        }
        if (bytes > kMaxLiveBytes || count > kSlots) return where + "over the memory budget";
        const bool managed_only =
            o.how == init::first_touch_location || o.how == init::first_touch_stream;
        if (managed_only && o.mem != memory::managed) return where + "first_touch not managed";
        if (o.mem == memory::pool && o.how != init::uninitialized_fill_async) {
          return where + "a pool buffer not filled on the stream it is allocated on";
        }
        if (o.mem != memory::pool && o.form != 0) return where + "a form for an allocation";
        in_slot[static_cast<std::size_t>(o.a)] = static_cast<int>(buffers.size());
        buffers.push_back({o.mem, o.n, {}});
        if (o.how == init::uninitialized_fill_async || managed_only) {
          if (!stream_ok(o.s)) return where + "bad stream";
          error = queue(o.s, o.a, -1);
          if (managed_only) host_waits(o.s);
        }
        break;
      }
      case op_kind::destroy:
        if (!live(o.a)) return where + "frees an empty slot";
        if (!idle(o.a)) return where + "frees a buffer with pending work";
        if (o.s >= 0 && buf(o.a).mem != memory::pool) return where + "set_stream not for a pool";
        if (o.s >= 0 && !stream_ok(o.s)) return where + "bad stream";
        in_slot[static_cast<std::size_t>(o.a)] = -1;
        break;
      case op_kind::move_construct:
      case op_kind::move_assign: {
        const bool assign = o.kind == op_kind::move_assign;
        if (!live(o.b) || o.a < 0 || o.a >= kSlots || o.a == o.b || live(o.a) != assign) {
          return where + "bad slots";
        }
        if (!idle(o.b) || (assign && !idle(o.a))) return where + "moves with pending work";
        if (assign && buf(o.a).mem != buf(o.b).mem) return where + "assigns across kinds";
        in_slot[static_cast<std::size_t>(o.a)] = in_slot[static_cast<std::size_t>(o.b)];
        in_slot[static_cast<std::size_t>(o.b)] = -1;
        break;
      }
      case op_kind::copy:
      case op_kind::copy_async:
      case op_kind::fill:
      case op_kind::fill_async:
      case op_kind::launch: {
        const bool two = o.kind == op_kind::copy || o.kind == op_kind::copy_async ||
                         (o.kind == op_kind::launch && o.k == kernel::combine);
        if (!live(o.a) || !inside(o.a, o.a_off)) return where + "bad destination range";
        if (o.kind != op_kind::launch && (o.form & kWhole) &&
            (o.a_off != 0 || o.len != buf(o.a).n)) {
          return where + "a part passed as a whole buffer";
        }
        if (two && (!live(o.b) || !inside(o.b, o.b_off))) return where + "bad source range";
        if (two && o.a == o.b && o.a_off < o.b_off + o.len && o.b_off < o.a_off + o.len) {
          return where + "overlapping ranges in one buffer";
        }
        if ((o.form & kWholeSource) && (o.b_off != 0 || o.len != buf(o.b).n)) {
          return where + "a part passed as a whole buffer";
        }
        if (o.kind == op_kind::launch) {
          auto managed_memory = [&](int x) {
            return buf(x).mem == memory::managed || buf(x).mem == memory::pool;
          };
          const bool tagged = o.target != pass::view && o.target != pass::buffer;
          if (tagged && !managed_memory(o.a)) return where + "tags unmanaged memory";
          if (two && o.source != pass::view && o.source != pass::buffer &&
              !managed_memory(o.b)) {
            return where + "tags unmanaged memory";
          }
          if ((mapped(o.target) && buf(o.a).mem == memory::pool) ||
              (two && mapped(o.source) && buf(o.b).mem == memory::pool)) {
            return where + "a mapped tag for pool memory";
          }
          if ((o.target == pass::buffer || o.target == pass::inout_buffer) &&
              (o.a_off != 0 || o.len != buf(o.a).n)) {
            return where + "a part passed as a whole buffer";
          }
        }
        const bool queued = o.kind == op_kind::copy_async || o.kind == op_kind::fill_async ||
                            o.kind == op_kind::launch;
        if (!queued) {
          if (!idle(o.a) || (two && !idle(o.b))) return where + "host-side on pending work";
          break;
        }
        if (!stream_ok(o.s)) return where + "bad stream";
        error = queue(o.s, o.a, two ? o.b : -1);
        break;
      }
      case op_kind::prefetch:
      case op_kind::advise:
      case op_kind::set_intent:
      case op_kind::ready_for_host:
        if (!live(o.a) || !inside(o.a, o.a_off)) return where + "bad range";
        if (buf(o.a).mem != memory::managed && buf(o.a).mem != memory::pool) {
          return where + "placement of unmanaged memory";
        }
        if (buf(o.a).mem == memory::pool) {
          if (o.kind == op_kind::advise) return where + "advice for pool memory";
          if (o.kind == op_kind::set_intent) return where + "an intent for pool memory";
        }
        if ((o.form & kWhole) && (o.a_off != 0 || o.len != buf(o.a).n)) {
          return where + "a part passed as a whole buffer";
        }
        if (o.kind == op_kind::advise || o.kind == op_kind::set_intent) {
          if (!idle(o.a)) return where + "host-side on pending work";
        } else if (o.kind == op_kind::ready_for_host && o.s < 0) {
          std::fill(complete.begin(), complete.end(), 1);  // waits for the device first
        } else {
          if (!stream_ok(o.s)) return where + "bad stream";
          error = queue(o.s, o.a, -1);
          if (o.kind == op_kind::ready_for_host) {
            host_waits(o.s);
            if (!idle(o.a)) return where + "ready_for_host left work on the buffer";
          }
        }
        break;
      case op_kind::record_wait: {
        if (!stream_ok(o.s) || !stream_ok(o.t) || o.s == o.t) return where + "bad streams";
        std::vector<char>& s = before[static_cast<std::size_t>(o.s)];
        const std::vector<char>& t = before[static_cast<std::size_t>(o.t)];
        for (std::size_t w = 0; w < s.size(); ++w) s[w] = s[w] || t[w];
        break;
      }
      case op_kind::stream_sync:
        if (!stream_ok(o.s)) return where + "bad stream";
        host_waits(o.s);
        break;
      case op_kind::event_sync:
        if (!stream_ok(o.t)) return where + "bad stream";
        host_waits(o.t);
        break;
      case op_kind::device_sync: std::fill(complete.begin(), complete.end(), 1); break;
      case op_kind::host_write:
      case op_kind::host_read:
        if (!live(o.a) || !inside(o.a, o.a_off)) return where + "bad range";
        if (buf(o.a).mem == memory::device) return where + "the host touches device memory";
        if (!idle(o.a)) return where + "host-side on pending work";
        break;
      case op_kind::host_faults:
        if (o.n == 0) return where + "no pages";
        break;
      case op_kind::check:
        if (!live(o.a)) return where + "checks an empty slot";
        if (!idle(o.a)) return where + "checks a buffer with pending work";
        break;
    }
    if (!error.empty()) return where + error;
  }
  return {};
}

}  // namespace

// ---- host tests ----

namespace {
op make_op(op_kind kind, int a = -1, std::uint32_t off = 0, std::uint32_t len = 0) {
  op o;
  o.kind = kind;
  o.a = static_cast<std::int8_t>(a);
  o.a_off = off;
  o.len = len;
  return o;
}
op make_allocation(int a, memory m, std::uint32_t n, init how, int value = 0) {
  op o = make_op(op_kind::allocate, a);
  o.mem = m;
  o.n = n;
  o.how = how;
  o.value = value;
  return o;
}
op on_stream(op o, int s) {
  o.s = static_cast<std::int8_t>(s);
  return o;
}
op record_then_wait(int t, int s) {
  op o = make_op(op_kind::record_wait);
  o.t = static_cast<std::int8_t>(t);
  o.s = static_cast<std::int8_t>(s);
  return o;
}
}  // namespace

TEST(Model, GeneratorReplaysTheSameSequenceForASeed) {
  const sequence a = generate(11, 3000), again = generate(11, 3000), other = generate(12, 3000);
  EXPECT_EQ(a.streams, again.streams);
  EXPECT_EQ(a.blocking, again.blocking);
  EXPECT_TRUE(a.ops == again.ops) << "seed 11 gave two different sequences";
  EXPECT_FALSE(a.ops == other.ops) << "seeds 11 and 12 gave the same sequence";
  EXPECT_GE(a.ops.size(), 3000u);

  // A shorter run is a prefix of a longer one up to its closing tail, and the operation count
  // a report prints for an operation regenerates the run up to it: what makes
  // UNIMEM_MODEL_OPS=<k> replay a failure.
  const sequence shorter = generate(11, 1000);
  ASSERT_LE(shorter.tail, a.ops.size());
  EXPECT_TRUE(std::equal(shorter.ops.begin(),
                         shorter.ops.begin() + static_cast<std::ptrdiff_t>(shorter.tail),
                         a.ops.begin()));
  for (std::size_t at : {std::size_t{0}, std::size_t{777}, shorter.tail - 1}) {
    const std::size_t k = replay_operations(a, at);
    const sequence replay = generate(11, k);
    ASSERT_GT(replay.tail, at) << "operation #" << at << ", UNIMEM_MODEL_OPS=" << k;
    EXPECT_TRUE(std::equal(replay.ops.begin(),
                           replay.ops.begin() + static_cast<std::ptrdiff_t>(at) + 1, a.ops.begin()))
        << "operation #" << at << ", UNIMEM_MODEL_OPS=" << k;
  }
  EXPECT_EQ(replay_operations(a, a.ops.size() - 1), 3000u) << "the tail replays the whole run";

  // The streams: 2 to 4, drawn by the seed unless the environment fixes them.
  std::array<int, kMaxStreams + 1> seen{};
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const int n = generate(seed, 1).streams;
    ASSERT_GE(n, 2);
    ASSERT_LE(n, kMaxStreams);
    ++seen[static_cast<std::size_t>(n)];
  }
  EXPECT_GT(seen[2], 0);
  EXPECT_GT(seen[3], 0);
  EXPECT_GT(seen[4], 0);
  EXPECT_EQ(generate(11, 10, 3).streams, 3);

  // Every kind of operation, initialisation, kernel and way of passing a range occurs.
  std::array<int, static_cast<std::size_t>(op_kind::check) + 1> kinds{};  // check: the last
  std::array<int, 7> inits{};
  std::array<int, 4> kernels{};
  std::array<int, 10> passes{};
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    for (const op& o : generate(seed, 5000).ops) {
      ++kinds[static_cast<std::size_t>(o.kind)];
      if (o.kind == op_kind::allocate) ++inits[static_cast<std::size_t>(o.how)];
      if (o.kind != op_kind::launch) continue;
      ++kernels[static_cast<std::size_t>(o.k)];
      ++passes[static_cast<std::size_t>(o.target)];
      if (o.k == kernel::combine) ++passes[static_cast<std::size_t>(o.source)];
    }
  }
  for (std::size_t i = 0; i < kinds.size(); ++i) EXPECT_GT(kinds[i], 0) << "operation kind " << i;
  for (std::size_t i = 0; i < inits.size(); ++i) EXPECT_GT(inits[i], 0) << "init " << i;
  for (std::size_t i = 0; i < kernels.size(); ++i) EXPECT_GT(kernels[i], 0) << "kernel " << i;
  for (std::size_t i = 0; i < passes.size(); ++i) EXPECT_GT(passes[i], 0) << "pass " << i;
}

TEST(Model, PoolBuffersTakeTheirShareAndEveryOperationAllowedForThem) {
  // Every memory kind is allocated, pool buffers about one time in six; and what may happen to
  // a pool buffer does: each way of filling it at allocation, set_stream before a free, moves,
  // copies and fills from and to it, prefetch and ready_for_host in both spellings allowed,
  // and the unmapped tags.
  std::array<int, 4> memories{};
  int pool_whole_fill = 0, pool_view_fill = 0, pool_set_stream = 0, pool_moves = 0,
      pool_copies = 0, pool_fills = 0, pool_prefetches = 0, pool_ready = 0, pool_whole_placed = 0;
  std::array<int, 10> pool_passes{};
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    std::array<memory, kSlots> in_slot{};  // the kind in each slot, followed through moves
    for (const op& o : generate(seed, 5000).ops) {
      const bool on_pool = o.a >= 0 && in_slot[static_cast<std::size_t>(o.a)] == memory::pool;
      const bool from_pool = o.b >= 0 && in_slot[static_cast<std::size_t>(o.b)] == memory::pool;
      switch (o.kind) {
        case op_kind::allocate:
          in_slot[static_cast<std::size_t>(o.a)] = o.mem;
          ++memories[static_cast<std::size_t>(o.mem)];
          if (o.mem == memory::pool) ++((o.form & kWhole) ? pool_whole_fill : pool_view_fill);
          break;
        case op_kind::destroy: pool_set_stream += on_pool && o.s >= 0; break;
        case op_kind::move_construct:
        case op_kind::move_assign:
          pool_moves += from_pool;
          in_slot[static_cast<std::size_t>(o.a)] = in_slot[static_cast<std::size_t>(o.b)];
          break;
        case op_kind::copy:
        case op_kind::copy_async: pool_copies += on_pool || from_pool; break;
        case op_kind::fill:
        case op_kind::fill_async: pool_fills += on_pool; break;
        case op_kind::prefetch:
        case op_kind::ready_for_host:
          if (on_pool) ++(o.kind == op_kind::prefetch ? pool_prefetches : pool_ready);
          pool_whole_placed += on_pool && (o.form & kWhole) != 0;
          break;
        case op_kind::launch:
          if (on_pool) ++pool_passes[static_cast<std::size_t>(o.target)];
          if (o.k == kernel::combine && from_pool) {
            ++pool_passes[static_cast<std::size_t>(o.source)];
          }
          break;
        default: break;
      }
    }
  }
  const int allocations = std::accumulate(memories.begin(), memories.end(), 0);
  for (std::size_t i = 0; i < memories.size(); ++i) {
    EXPECT_GT(memories[i], 0) << name(static_cast<memory>(i));
  }
  EXPECT_GT(memories[static_cast<std::size_t>(memory::pool)] * 100, allocations * 12)
      << "pool buffers: " << memories[static_cast<std::size_t>(memory::pool)] << " of "
      << allocations << " allocations";
  EXPECT_LT(memories[static_cast<std::size_t>(memory::pool)] * 100, allocations * 23)
      << "pool buffers: " << memories[static_cast<std::size_t>(memory::pool)] << " of "
      << allocations << " allocations";
  for (int count : {pool_whole_fill, pool_view_fill, pool_set_stream, pool_moves, pool_copies,
                    pool_fills, pool_prefetches, pool_ready, pool_whole_placed}) {
    EXPECT_GT(count, 0) << pool_whole_fill << " " << pool_view_fill << " " << pool_set_stream
                        << " " << pool_moves << " " << pool_copies << " " << pool_fills << " "
                        << pool_prefetches << " " << pool_ready << " " << pool_whole_placed;
  }
  for (pass p : {pass::view, pass::buffer, pass::inout, pass::inout_moved, pass::inout_buffer,
                 pass::out, pass::in}) {
    EXPECT_GT(pool_passes[static_cast<std::size_t>(p)], 0) << name(p) << " of a pool buffer";
  }
  for (pass p : {pass::inout_mapped, pass::out_mapped, pass::in_mapped}) {
    EXPECT_EQ(pool_passes[static_cast<std::size_t>(p)], 0) << name(p) << " of a pool buffer";
  }
  // How a report shows them.
  sequence seq;
  seq.seed = 8;
  seq.streams = 2;
  seq.requested = 3;
  op destroy = on_stream(make_op(op_kind::destroy, 3), 0);
  seq.ops = {on_stream(make_allocation(3, memory::pool, 10, init::uninitialized_fill_async, 5), 1),
             on_stream(make_op(op_kind::stream_sync), 1), make_op(op_kind::check, 3), destroy};
  seq.tail = seq.ops.size();
  EXPECT_EQ(ordering_violation(seq), "");
  EXPECT_EQ(describe(seq.ops[0], 0),
            "#0 allocate B3: pool_buffer of 10 ints, allocated on s1, uninitialized, then "
            "fill_async s1 5 (view)");
  EXPECT_EQ(describe(destroy, 3), "#3 destroy B3 (set_stream s0 first)");
  const std::vector<int> expected(10, 5);
  std::vector<int> actual = expected;
  actual[7] = 4;
  const std::string report = compare_with_model(seq, 2, expected, actual.data(), 10, 0);
  EXPECT_NE(report.find("buffer B3: pool_buffer of 10 ints; 1 element differs; the first: "
                        "element 7, expected 5, actual 4\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("replay: UNIMEM_MODEL_SEED=8 UNIMEM_MODEL_OPS=2 unimem_tests"),
            std::string::npos)
      << report;
}

TEST(Model, TheCheckerReportsSeedElementAndReplay) {
  sequence seq;
  seq.seed = 4242;
  seq.streams = 3;
  seq.requested = 7;
  op update = on_stream(make_op(op_kind::launch, 1, 0, 20), 0);
  update.k = kernel::update;
  update.target = pass::inout_mapped;
  update.mul = 3;
  update.add = 7;
  update.block = 64;
  op copy = on_stream(make_op(op_kind::copy_async, 1, 10, 50), 0);
  copy.b = 2;
  copy.b_off = 0;
  op fill = on_stream(make_op(op_kind::fill_async, 2, 0, 50), 1);
  fill.value = 9;
  seq.ops = {
      make_allocation(1, memory::managed, 100, init::value, 5),  // #0
      make_allocation(2, memory::device, 50, init::zeros),       // #1
      fill,                                                      // #2
      record_then_wait(1, 0),                                    // #3
      copy,                                                      // #4
      update,                                                    // #5
      on_stream(make_op(op_kind::stream_sync), 0),               // #6
      make_op(op_kind::check, 1),                                // #7
  };
  seq.tail = seq.ops.size();  // no closing tail
  EXPECT_EQ(ordering_violation(seq), "");

  contents_model model;
  for (const op& o : seq.ops) model.apply(o);
  const std::vector<int>& expected = model.of(1);
  ASSERT_EQ(expected.size(), 100u);
  EXPECT_EQ(expected[0], 5 * 3 + 7);        // updated: 5 * 3 + 7 + 0
  EXPECT_EQ(expected[19], 9 * 3 + 7 + 19);  // copied 9, then updated
  EXPECT_EQ(expected[42], 9);               // copied
  EXPECT_EQ(expected[59], 9);
  EXPECT_EQ(expected[60], 5);

  std::vector<int> actual = expected;
  EXPECT_EQ(compare_with_model(seq, 7, expected, actual.data(), actual.size(), 0), "");
  actual[42] = -123;
  const std::string report = compare_with_model(seq, 7, expected, actual.data(), actual.size(), 0);
  for (const char* text : {
           "seed 4242 (3 streams), check #7 after operation #6\n",
           "buffer B1: managed_buffer of 100 ints; 1 element differs; the first: element 42, "
           "expected 9, actual -123\n",
           "  #0 allocate B1: managed_buffer of 100 ints, all 5\n",
           "  #4 copy_async s0: B1[10,60) <- B2[0,50)\n",
           "  #5 launch s0: update B1[0,20) as inout(view, mapped), mul 3 add 7, block 64\n",
           "  #7 check B1\n",
           "replay: UNIMEM_MODEL_SEED=4242 UNIMEM_MODEL_OPS=7 unimem_tests "
           "--gtest_filter=ModelGpu.*",
       }) {
    EXPECT_NE(report.find(text), std::string::npos) << "no \"" << text << "\" in:\n" << report;
  }
  // Only B1's operations: B2's allocation and fill and the synchronisation are left out.
  for (const char* text : {"#1 ", "#2 ", "#3 ", "#6 "}) {
    EXPECT_EQ(report.find(text), std::string::npos) << text << " in:\n" << report;
  }

  // A size mismatch is reported too, and a fixed stream count is part of the replay command.
  const std::string shorter = compare_with_model(seq, 7, expected, actual.data(), 99, 3);
  EXPECT_NE(shorter.find("it has 99 elements, the model 100"), std::string::npos) << shorter;
  EXPECT_NE(shorter.find("UNIMEM_MODEL_OPS=7 UNIMEM_MODEL_STREAMS=3 unimem_tests"),
            std::string::npos)
      << shorter;

  // The history follows a buffer through a move back to its allocation.
  op moved = make_op(op_kind::move_construct, 5);
  moved.b = 1;
  seq.ops.push_back(moved);                       // #8
  seq.ops.push_back(make_op(op_kind::check, 5));  // #9
  seq.tail = seq.ops.size();
  const std::string after_move = compare_with_model(seq, 9, expected, actual.data(), 100, 0);
  for (const char* text :
       {"check #9 after operation #8\n", "buffer B5: managed_buffer", "  #0 allocate B1",
        "  #5 launch s0", "  #8 move-construct B5 from B1\n", "UNIMEM_MODEL_OPS=8 "}) {
    EXPECT_NE(after_move.find(text), std::string::npos) << "no \"" << text << "\" in:\n"
                                                        << after_move;
  }
}

TEST(Model, GeneratedSequencesObeyTheOrderingRules) {
  for (std::uint64_t seed : {1u, 2u, 3u, 77u}) {
    const sequence seq = generate(seed, 20000);
    EXPECT_EQ(ordering_violation(seq), "") << "seed " << seed;
    std::size_t waits = 0, syncs = 0, checks = 0;
    for (const op& o : seq.ops) {
      waits += o.kind == op_kind::record_wait;
      syncs += o.kind == op_kind::stream_sync || o.kind == op_kind::event_sync ||
               o.kind == op_kind::device_sync;
      checks += o.kind == op_kind::check;
    }
    EXPECT_GT(waits, 500u) << "seed " << seed;
    EXPECT_GT(syncs, 500u) << "seed " << seed;
    EXPECT_GT(checks, 1000u) << "seed " << seed;
  }
  for (int streams = 2; streams <= kMaxStreams; ++streams) {
    EXPECT_EQ(ordering_violation(generate(5, 5000, streams)), "") << streams << " streams";
  }
  // The sequences ModelGpu runs with the same environment (UNIMEM_MODEL_SEEDS, ...).
  const settings cfg = settings_from_environment();
  for (std::uint64_t i = 0; i < cfg.seeds; ++i) {
    const std::uint64_t seed = cfg.first_seed + i;
    EXPECT_EQ(ordering_violation(generate(seed, cfg.ops, cfg.streams)), "") << "seed " << seed;
  }

  // The independent checker can fail: work on a second stream without an event wait, and a
  // host-side check of a buffer with pending work; with the wait or the synchronisation in
  // between, both are fine.
  sequence base;
  base.seed = 1;
  base.streams = 2;
  op fill = on_stream(make_op(op_kind::fill_async, 0, 0, 64), 0);
  fill.value = 1;
  base.ops = {make_allocation(0, memory::managed, 64, init::zeros), fill};
  op update = on_stream(make_op(op_kind::launch, 0, 0, 64), 1);
  update.block = 32;

  sequence race = base;
  race.ops.push_back(update);
  EXPECT_NE(ordering_violation(race).find("touches B0, which has unsynchronised work on s0"),
            std::string::npos)
      << ordering_violation(race);
  race.ops.insert(race.ops.end() - 1, record_then_wait(0, 1));
  EXPECT_EQ(ordering_violation(race), "");

  sequence early = base;
  early.ops.push_back(make_op(op_kind::check, 0));
  EXPECT_NE(ordering_violation(early).find("checks a buffer with pending work"), std::string::npos)
      << ordering_violation(early);
  early.ops.insert(early.ops.end() - 1, on_stream(make_op(op_kind::stream_sync), 0));
  EXPECT_EQ(ordering_violation(early), "");

  // A pool buffer: allocated and filled on s0, so work on s1 must wait for s0 and the host
  // must too; it takes no advice, intents, mapped tags, other inits or member calls.
  sequence pool;
  pool.seed = 1;
  pool.streams = 2;
  pool.ops = {on_stream(make_allocation(0, memory::pool, 64, init::uninitialized_fill_async, 3),
                        0)};
  sequence pool_race = pool;
  pool_race.ops.push_back(update);
  EXPECT_NE(ordering_violation(pool_race).find("touches B0, which has unsynchronised work on s0"),
            std::string::npos)
      << ordering_violation(pool_race);
  sequence pool_early = pool;
  pool_early.ops.push_back(make_op(op_kind::check, 0));
  EXPECT_NE(ordering_violation(pool_early).find("checks a buffer with pending work"),
            std::string::npos)
      << ordering_violation(pool_early);
  pool.ops.push_back(on_stream(make_op(op_kind::stream_sync), 0));
  pool.ops.push_back(make_op(op_kind::check, 0));
  EXPECT_EQ(ordering_violation(pool), "");
  op tagged = on_stream(make_op(op_kind::launch, 0, 0, 64), 1);
  tagged.block = 32;
  for (pass p : {pass::inout, pass::inout_moved, pass::inout_buffer}) {
    sequence fine = pool;
    tagged.target = p;
    fine.ops.push_back(tagged);
    EXPECT_EQ(ordering_violation(fine), "") << name(p);
  }
  op whole_prefetch = on_stream(make_op(op_kind::prefetch, 0, 0, 64), 1);
  whole_prefetch.form = kWhole;
  op whole_ready = make_op(op_kind::ready_for_host, 0, 0, 64);
  whole_ready.form = kWhole;
  op set_stream = on_stream(make_op(op_kind::destroy, 0), 1);
  for (const op& allowed : {whole_prefetch, whole_ready, set_stream}) {
    sequence fine = pool;
    fine.ops.push_back(allowed);
    EXPECT_EQ(ordering_violation(fine), "") << describe(allowed, fine.ops.size() - 1);
  }
  std::vector<std::pair<op, const char*>> forbidden;
  forbidden.emplace_back(make_op(op_kind::advise, 0, 0, 64), "advice for pool memory");
  forbidden.emplace_back(make_op(op_kind::set_intent, 0, 0, 64), "an intent for pool memory");
  for (pass p : {pass::inout_mapped, pass::out_mapped}) {
    tagged.target = p;
    forbidden.emplace_back(tagged, "a mapped tag for pool memory");
  }
  op mapped_source = on_stream(make_op(op_kind::launch, 1, 0, 64), 1);
  mapped_source.k = kernel::combine;
  mapped_source.b = 0;
  mapped_source.source = pass::in_mapped;
  mapped_source.block = 32;
  forbidden.emplace_back(mapped_source, "a mapped tag for pool memory");
  for (init how : {init::zeros, init::value, init::uninitialized_fill, init::iota,
                   init::first_touch_location, init::first_touch_stream}) {
    const bool managed_only = how == init::first_touch_location || how == init::first_touch_stream;
    forbidden.emplace_back(on_stream(make_allocation(2, memory::pool, 8, how), 0),
                           managed_only ? "first_touch not managed"
                                        : "a pool buffer not filled on the stream");
  }
  op not_a_pool = on_stream(make_op(op_kind::destroy, 1), 0);
  forbidden.emplace_back(not_a_pool, "set_stream not for a pool");
  for (const auto& f : forbidden) {
    sequence bad = pool;
    bad.ops.push_back(make_allocation(1, memory::managed, 64, init::zeros));
    bad.ops.push_back(f.first);
    const std::string error = ordering_violation(bad);
    EXPECT_NE(error.find(f.second), std::string::npos)
        << describe(f.first, bad.ops.size() - 1) << ": \"" << error << "\", not \"" << f.second
        << "\"";
  }
}

TEST(Model, LivingHostOperationsTakeTheirShare) {
  std::size_t writes = 0, reads = 0, faults = 0, on_thread = 0, through_index = 0, ops = 0;
  std::array<std::size_t, 4> touched_kind{};
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const sequence seq = generate(seed, 3000);
    std::array<memory, kSlots> kind{};
    for (const op& o : seq.ops) {
      if (o.kind == op_kind::check) continue;
      ++ops;
      if (o.kind == op_kind::allocate) kind[static_cast<std::size_t>(o.a)] = o.mem;
      if ((o.kind == op_kind::move_construct || o.kind == op_kind::move_assign)) {
        kind[static_cast<std::size_t>(o.a)] = kind[static_cast<std::size_t>(o.b)];
      }
      if (o.kind == op_kind::host_write || o.kind == op_kind::host_read) {
        const memory m = kind[static_cast<std::size_t>(o.a)];
        EXPECT_NE(m, memory::device) << describe(o, 0);
        ++touched_kind[static_cast<std::size_t>(m)];
        ++(o.kind == op_kind::host_write ? writes : reads);
        through_index += (o.form & kOtherSpelling) != 0;
      }
      if (o.kind == op_kind::host_faults) {
        ++faults;
        on_thread += (o.form & kOnAnotherThread) != 0;
        EXPECT_GT(o.n, 0u);
      }
    }
    EXPECT_EQ(ordering_violation(seq), "") << "seed " << seed;
  }
  // About 4 + 4 + 3 in the weights' total of some 120: a few percent each.
  EXPECT_GT(writes, ops / 100);
  EXPECT_GT(reads, ops / 100);
  EXPECT_GT(faults, ops / 100);
  EXPECT_GT(on_thread, faults / 5);
  EXPECT_LT(on_thread, faults * 4 / 5);
  EXPECT_GT(through_index, (writes + reads) / 5);
  EXPECT_LT(through_index, (writes + reads) * 4 / 5);
  for (memory m : {memory::managed, memory::pinned, memory::pool}) {
    EXPECT_GT(touched_kind[static_cast<std::size_t>(m)], 0u) << name(m);
  }
  // The rule the generator follows, seen failing: a host write to a buffer with pending work,
  // and one to device memory.
  sequence bad;
  bad.seed = 1;
  bad.streams = 2;
  bad.ops.push_back(make_allocation(0, memory::managed, 64, init::zeros));
  bad.ops.push_back(make_allocation(1, memory::device, 64, init::zeros));
  op fill_on_s0 = on_stream(make_op(op_kind::fill_async, 0, 0, 64), 0);
  bad.ops.push_back(fill_on_s0);
  sequence pending = bad;
  pending.ops.push_back(make_op(op_kind::host_write, 0, 0, 8));
  EXPECT_NE(ordering_violation(pending).find("host-side on pending work"), std::string::npos);
  sequence device = bad;
  device.ops.push_back(make_op(op_kind::host_read, 1, 0, 8));
  EXPECT_NE(ordering_violation(device).find("the host touches device memory"), std::string::npos);
  pending.ops.insert(pending.ops.end() - 1, on_stream(make_op(op_kind::stream_sync), 0));
  EXPECT_EQ(ordering_violation(pending), "");

  // A host read that differs from the model is reported as a check is, with the element's index
  // in the buffer, and replays up to the read.
  sequence seq;
  seq.seed = 31;
  seq.streams = 2;
  seq.requested = 4;
  op write = make_op(op_kind::host_write, 2, 10, 20);
  write.value = 7;
  op read = make_op(op_kind::host_read, 2, 20, 20);
  read.form = kOtherSpelling;
  op fresh = make_op(op_kind::host_faults);
  fresh.n = 3;
  fresh.form = kOnAnotherThread;
  seq.ops = {make_allocation(2, memory::pinned, 100, init::value, 5), write, fresh, read};
  seq.tail = seq.ops.size();
  EXPECT_EQ(ordering_violation(seq), "");
  EXPECT_EQ(describe(write, 1), "#1 host writes B2[10,30) = 7 (data())");
  EXPECT_EQ(describe(fresh, 2), "#2 host faults 3 fresh pages on another thread");
  EXPECT_EQ(describe(read, 3), "#3 host reads B2[20,40) (operator[])");
  contents_model model;
  for (const op& o : seq.ops) model.apply(o);
  const std::vector<int>& whole = model.of(2);
  ASSERT_EQ(whole.size(), 100u);
  EXPECT_EQ(whole[9], 5);
  EXPECT_EQ(whole[10], 7);
  EXPECT_EQ(whole[29], 7);
  EXPECT_EQ(whole[30], 5);
  const std::vector<int> expected(whole.begin() + 20, whole.begin() + 40);
  std::vector<int> actual = expected;
  EXPECT_EQ(compare_with_model(seq, 3, expected, actual.data(), actual.size(), 0), "");
  actual[5] = 5;  // element 25: the write not seen
  const std::string report = compare_with_model(seq, 3, expected, actual.data(), actual.size(), 0);
  for (const char* text : {
           "seed 31 (2 streams), host read #3\n",
           "buffer B2: pinned_buffer, elements [20,40) read by the host; 1 element differs; the "
           "first: element 25, expected 7, actual 5\n",
           "  #1 host writes B2[10,30) = 7 (data())\n",
           "  #3 host reads B2[20,40) (operator[])\n",
           "replay: UNIMEM_MODEL_SEED=31 UNIMEM_MODEL_OPS=4 unimem_tests",
       }) {
    EXPECT_NE(report.find(text), std::string::npos) << "no \"" << text << "\" in:\n" << report;
  }
  EXPECT_EQ(report.find("#2 "), std::string::npos) << report;  // no buffer: not in its history
}

TEST(Model, FreshMemoryFaultsEachPage) {
  // What host_faults and the living host do: every page of the region is a fresh page fault,
  // however often it is done (memory a std::vector gets back from the heap would fault once).
  ASSERT_TRUE(fault_fresh_memory(4));
#if defined(__linux__)
  auto minor_faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<long>(u.ru_minflt);
  };
  const long before = minor_faults();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(fault_fresh_memory(16));
  EXPECT_GE(minor_faults() - before, 160);
#endif
}

// ---- the GPU test ----

/// A thread that keeps faulting fresh ordinary memory for its lifetime (1 MiB regions mapped,
/// every page written, then unmapped: never unimem's memory), joined when it goes out of scope,
/// also when the test stops early: the living host the sequences run beside.
class faulting_thread {
 public:
  faulting_thread()
      : thread_([this] {
          while (!stop_.load(std::memory_order_relaxed)) {
            if (fault_fresh_memory(256)) ++rounds_;  // 256 pages of 4 KiB
          }
        }) {}
  ~faulting_thread() {
    stop_.store(true);
    thread_.join();
  }
  faulting_thread(const faulting_thread&) = delete;
  faulting_thread& operator=(const faulting_thread&) = delete;
  unsigned long long rounds() const { return rounds_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<unsigned long long> rounds_{0};
  std::thread thread_;
};

TEST(ModelGpu, RandomSequencesMatchAHostModel) {
  UNIMEM_REQUIRE_GPU();
  const settings cfg = settings_from_environment();
  totals sum;
  const faulting_thread living_host;
  for (std::uint64_t i = 0; i < cfg.seeds; ++i) {
    const sequence seq = generate(cfg.first_seed + i, cfg.ops, cfg.streams);
    bool fatal = false;
    const std::string failure = run_sequence(seq, cfg.streams, sum, fatal);
    if (!failure.empty()) ADD_FAILURE() << failure;
    if (fatal) break;
  }
  std::printf(
      "model: %llu operations over %llu seeds (first seed %llu), %llu checks, %llu elements "
      "compared, %llu kernel launches, %llu copies (%llu synchronous), %llu fills, %llu "
      "allocations (%llu pool buffers; %llu seeds on the runtime's pool), %llu frees, %llu "
      "moves, %llu placement calls, %llu event waits, %llu synchronisations; the host wrote "
      "%llu and read %llu ranges, faulted fresh pages %llu times, and a second thread faulted "
      "1 MiB of fresh memory %llu times\n",
      static_cast<unsigned long long>(sum.ops), static_cast<unsigned long long>(sum.seeds),
      static_cast<unsigned long long>(cfg.first_seed), static_cast<unsigned long long>(sum.checks),
      static_cast<unsigned long long>(sum.elements), static_cast<unsigned long long>(sum.launches),
      static_cast<unsigned long long>(sum.copies + sum.async_copies),
      static_cast<unsigned long long>(sum.copies), static_cast<unsigned long long>(sum.fills),
      static_cast<unsigned long long>(sum.allocations),
      static_cast<unsigned long long>(sum.pool_allocations),
      static_cast<unsigned long long>(sum.runtime_pool_seeds),
      static_cast<unsigned long long>(sum.frees),
      static_cast<unsigned long long>(sum.moves), static_cast<unsigned long long>(sum.placement),
      static_cast<unsigned long long>(sum.waits),
      static_cast<unsigned long long>(sum.synchronisations),
      static_cast<unsigned long long>(sum.host_writes),
      static_cast<unsigned long long>(sum.host_reads),
      static_cast<unsigned long long>(sum.host_fault_ops), living_host.rounds());
}
