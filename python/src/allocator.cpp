// libunimem_allocator: the memory of PyTorch and CuPy from unimem::managed_pool, one pool per GPU
// (docs/python.md). Plain C symbols, loaded by torch's CUDAPluggableAllocator, CuPy's
// CFunctionAllocator and the package's ctypes layer (python/unimem/_native.py); no Python here.
//
// Errors. A failed allocation leaves its reason in this thread's last error (unimem_last_error)
// and then, by what its caller does with a null pointer:
//   unimem_torch_alloc             returns nullptr: torch's MemPool (route B) checks it and raises
//                                  torch.OutOfMemoryError after freeing its cache and retrying;
//                                  unimem.cupy's Python allocator raises CuPy's OutOfMemoryError.
//   unimem_torch_alloc_or_throw    throws the C++ exception (std::bad_alloc for out of memory),
//                                  as torch's own allocators do from the same call: its caller,
//                                  torch's change_current_allocator (route A), is C++ that would
//                                  use a null pointer unchecked, and torch turns the exception
//                                  into a Python exception at the operation that allocated.
//   unimem_cupy_malloc             stops the process with the reason on stderr: its caller (CuPy's
//                                  CFunctionAllocator, Cython) uses the pointer unchecked, and an
//                                  exception cannot cross its C frames.
// No other symbol lets an exception out.
// Streams. torch allocates on its current stream and frees on the allocation's stream: the pool
// orders reuse by them. unimem_allocator_record_stream() adds streams a free must also wait for
// (torch's record_stream, which route A ignores).
#include <unimem/device.hpp>
#include <unimem/event.hpp>
#include <unimem/managed_pool.hpp>
#include <unimem/memory_resource.hpp>
#include <unimem/placement.hpp>
#include <unimem/stream.hpp>
#include <unimem/version.hpp>
#include <unimem/view.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#define UNIMEM_C_API extern "C" __attribute__((visibility("default")))

using stream_handle = unimem::stream_ref::native_handle_type;  // cudaStream_t / hipStream_t

/// What went wrong: the values of unimem_last_error() (python/unimem/_native.py reads them).
enum unimem_allocator_status : int {
  unimem_ok = 0,
  unimem_out_of_memory = 1,
  unimem_invalid_argument = 2,
  unimem_runtime_error = 3,
};

/// The allocator's options, fixed when its first pool is made (unimem_allocator_configure).
struct unimem_allocator_options {
  std::uint32_t size;                 ///< sizeof(unimem_allocator_options), for later versions
  std::uint32_t flags;                ///< unimem_option_* bits
  std::uint64_t prefetch_min_bytes;   ///< prefetch allocations of at least this many bytes
  std::uint64_t limit_bytes;          ///< bytes in use per GPU past which allocations fail; 0: none
  std::uint64_t release_threshold;    ///< managed_pool_options::release_threshold
  /// managed_pool_options::gpu_budget (issue 51): 0 none, UINT64_MAX the GPU's free memory when
  /// the pool is made less the margin, else bytes
  std::uint64_t gpu_budget_bytes;
  std::uint64_t gpu_budget_margin;    ///< bytes; UINT64_MAX: managed_pool_options::default_margin
};
enum : std::uint32_t {
  unimem_option_runtime_pool = 1u,  ///< managed_pool_options::use_runtime_pool
  unimem_option_prefetch = 2u,      ///< prefetch new allocations to their GPU on their stream
};

/// One GPU's figures (unimem_allocator_statistics()); unknown ones are UINT64_MAX.
struct unimem_allocator_stats {
  std::uint32_t size;                 ///< sizeof(unimem_allocator_stats)
  std::int32_t pool_made;             ///< 0: nothing allocated on this GPU yet
  std::uint64_t bytes_in_use;         ///< asked for and not yet freed
  std::uint64_t peak_bytes_in_use;    ///< since the pool was made or the last reset
  std::uint64_t bytes_held;           ///< held from the runtime: in use and cached
  std::uint64_t allocations;          ///< live allocations
  std::uint64_t allocations_total;    ///< allocations served since the pool was made
  std::uint64_t failures;             ///< allocations refused since the pool was made
  std::uint64_t prefetches;           ///< prefetches queued on allocation
  std::uint64_t limit_bytes;          ///< UINT64_MAX: none
  std::uint64_t device_free_bytes;    ///< the runtime's free memory of the GPU, now
  std::uint64_t device_total_bytes;   ///< the GPU's memory
  std::uint64_t device_free_at_pool_bytes;  ///< device_free_bytes when the pool was made
  /// The pool's bytes held on each side of its GPU budget (issue 51): ordinary blocks (which
  /// the budget counts) and blocks placed on the host; UINT64_MAX where the pool has no budget.
  std::uint64_t placed_on_gpu_bytes;
  std::uint64_t placed_on_host_bytes;
  std::uint64_t host_bytes_in_use;    ///< of bytes_in_use, on the host; UINT64_MAX: no budget
  std::uint64_t gpu_budget_bytes;     ///< the pool's budget; UINT64_MAX: none
  std::int32_t uses_runtime_pool;     ///< 1: the runtime's pool of managed memory serves
  std::int32_t reserved;
};

namespace {

constexpr std::uint64_t unknown = std::numeric_limits<std::uint64_t>::max();
constexpr int max_devices = 128;  // torch's device indices are 8-bit

// ---- this thread's last error ----

struct last_error {
  int status = unimem_ok;
  char message[1024] = {};
};
thread_local last_error t_last;

void set_error(int status, const char* message) noexcept {
  t_last.status = status;
  std::snprintf(t_last.message, sizeof t_last.message, "%s", message);
}

/// Records the exception in flight as this thread's last error; returns its status.
int record_current_exception() noexcept {
  try {
    throw;
  } catch (const unimem::out_of_memory& e) {
    set_error(unimem_out_of_memory, e.what());
  } catch (const unimem::length_error& e) {  // a size no allocation can have: out of memory too,
    set_error(unimem_out_of_memory, e.what());  // as torch's caching allocator says
  } catch (const unimem::argument_error& e) {
    set_error(unimem_invalid_argument, e.what());
  } catch (const std::bad_alloc& e) {
    set_error(unimem_out_of_memory, e.what());
  } catch (const std::invalid_argument& e) {
    set_error(unimem_invalid_argument, e.what());
  } catch (const std::exception& e) {
    set_error(unimem_runtime_error, e.what());
  } catch (...) {
    set_error(unimem_runtime_error, "unimem allocator: an unknown exception");
  }
  return t_last.status;
}

[[noreturn]] void stop(const char* caller, std::size_t size, int device) noexcept {
  std::fprintf(stderr,
               "unimem: %s could not allocate %zu bytes on GPU %d: %s\n"
               "unimem: its caller uses the pointer without checking it (a null pointer would "
               "become the memory of a tensor, whose first kernel ends the GPU context), so the "
               "process stops here. unimem.cupy.use() raises an exception instead; see "
               "docs/python.md, \"Errors\".\n",
               caller, size, device, t_last.message);
  std::fflush(stderr);
  std::abort();
}

// ---- options ----

struct settings {
  std::mutex mutex;                   // around `options` and `frozen`
  unimem_allocator_options options{sizeof(unimem_allocator_options),
                                   unimem_option_runtime_pool | unimem_option_prefetch,
                                   std::uint64_t(2) << 20, 0, unknown, 0, unknown};
  bool frozen = false;                // a pool was made with `options`
  std::atomic<std::uint32_t> flags{options.flags};
  std::atomic<std::uint64_t> prefetch_min{options.prefetch_min_bytes};
  std::atomic<std::uint64_t> limit{unknown};
};
settings& config() {
  static settings* s = new settings();  // never destroyed: frees may come at interpreter exit
  return *s;
}

void check_options(const unimem_allocator_options& o) {
  if (o.size != sizeof(unimem_allocator_options)) {
    throw std::invalid_argument("unimem_allocator_configure: options of another version (size " +
                                std::to_string(o.size) + ", this library's " +
                                std::to_string(sizeof(unimem_allocator_options)) + ")");
  }
  if ((o.flags & ~(unimem_option_runtime_pool | unimem_option_prefetch)) != 0) {
    throw std::invalid_argument("unimem_allocator_configure: unknown flags " +
                                std::to_string(o.flags));
  }
}

bool same(const unimem_allocator_options& a, const unimem_allocator_options& b) noexcept {
  return a.flags == b.flags && a.prefetch_min_bytes == b.prefetch_min_bytes &&
         a.limit_bytes == b.limit_bytes && a.release_threshold == b.release_threshold &&
         a.gpu_budget_bytes == b.gpu_budget_bytes && a.gpu_budget_margin == b.gpu_budget_margin;
}

// ---- one pool per GPU ----

struct device_state {
  device_state(int id, const unimem::managed_pool_options& o)
      : free_at_start(unimem::device(id).free_memory()),  // before the pool measures its budget
        pool(unimem::device(id), o),
        id(id),
        budgeted(pool.statistics().has_gpu_budget) {}

  const std::uint64_t free_at_start;  // the GPU's free memory when the pool was made
  unimem::managed_pool pool;
  const int id;
  const bool budgeted;  // the pool has a GPU budget: its blocks past it are on the host
  std::atomic<std::uint64_t> in_use{0};  // for the limit (the pool keeps its own figures)
  std::atomic<std::uint64_t> served{0}, failures{0}, prefetches{0};
  std::once_flag free_stream_made;
  std::unique_ptr<unimem::stream> free_stream;  // frees that wait for recorded streams
};

std::atomic<device_state*> g_states[max_devices];

int gpu_count() {
  static const int n = unimem::device_count();  // 0 without a GPU; retried if it throws
  return n;
}

void check_device(int device) {
  const int n = gpu_count();
  if (device < 0 || device >= n) {
    throw std::invalid_argument("unimem allocator: no GPU " + std::to_string(device) + " (" +
                                std::to_string(n) + (n == 1 ? " GPU" : " GPUs") + " found)");
  }
}

/// A size option from its 64-bit field: UINT64_MAX is the largest size_t (managed_pool_options'
/// "no limit", gpu_free_memory and default_margin alike).
std::size_t as_size(std::uint64_t v) {
  return v == unknown ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(v);
}

/// The state of `device`, made at first use with the options (then fixed).
device_state& state(int device) {
  check_device(device);
  if (device >= max_devices) {
    throw std::invalid_argument("unimem allocator: GPU " + std::to_string(device) +
                                " is past the " + std::to_string(max_devices) + " it serves");
  }
  device_state* s = g_states[device].load(std::memory_order_acquire);
  if (s != nullptr) return *s;
  settings& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  s = g_states[device].load(std::memory_order_relaxed);
  if (s == nullptr) {
    unimem::managed_pool_options o;
    o.use_runtime_pool = (c.options.flags & unimem_option_runtime_pool) != 0;
    o.release_threshold = as_size(c.options.release_threshold);
    o.gpu_budget = as_size(c.options.gpu_budget_bytes);  // UINT64_MAX: gpu_free_memory
    o.gpu_budget_margin = as_size(c.options.gpu_budget_margin);  // UINT64_MAX: default_margin
    s = new device_state(device, o);  // never destroyed, as the options
    c.frozen = true;
    g_states[device].store(s, std::memory_order_release);
  }
  return *s;
}

/// The limit's refusal: out of memory, as the runtime's (std::bad_alloc).
class limit_reached : public std::bad_alloc {
 public:
  explicit limit_reached(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

device_state* existing(int device) noexcept {
  return device >= 0 && device < max_devices ? g_states[device].load(std::memory_order_acquire)
                                             : nullptr;
}

/// `size` bytes from `device`'s pool in the order of `stream`: within the limit, tried once more
/// after the pool gave its free memory back and the GPU finished its frees, prefetched to the GPU
/// on `stream` where asked.
void* allocate(std::size_t size, int device, stream_handle stream) {
  device_state& s = state(device);
  settings& c = config();
  const std::uint64_t limit = c.limit.load(std::memory_order_relaxed);
  const std::uint64_t before = s.in_use.fetch_add(size, std::memory_order_relaxed);
  try {
    if (limit != unknown && (before + size > limit || before + size < before)) {
      throw limit_reached("unimem allocator: out of memory: the limit is " +
                          std::to_string(limit) + " bytes on GPU " + std::to_string(device) +
                          ", " + std::to_string(before) + " are in use and " +
                          std::to_string(size) + " more were asked for");
    }
    const unimem::stream_ref on(stream, device);
    void* p = nullptr;
    try {
      p = s.pool.allocate(size, on);
    } catch (const unimem::out_of_memory&) {
      unimem::device(device).synchronize();  // frees queued on other streams complete
      s.pool.trim_to(0);
      p = s.pool.allocate(size, on);
    }
    if ((c.flags.load(std::memory_order_relaxed) & unimem_option_prefetch) != 0 &&
        size >= c.prefetch_min.load(std::memory_order_relaxed)) {
      const unimem::view<unsigned char> bytes(static_cast<unsigned char*>(p), size);
      try {
        // A block the GPU budget placed on the host stays there: a prefetch would move it (one
        // range query, 0.2 us, for the allocations a prefetch is considered for).
        const unimem::optional_location preferred =
            s.budgeted ? unimem::preferred_location(bytes) : unimem::optional_location();
        if (!(preferred && *preferred == unimem::location::host()) &&
            unimem::prefetch(bytes, unimem::location::device(device), on) ==
                unimem::hint_status::applied) {
          s.prefetches.fetch_add(1, std::memory_order_relaxed);
        }
      } catch (const unimem::error&) {
        // A hint: the memory is allocated all the same, and the GPU faults it in instead. A
        // runtime that has failed for good fails the caller's next call as well.
      }
    }
    s.served.fetch_add(1, std::memory_order_relaxed);
    return p;
  } catch (...) {
    s.in_use.fetch_sub(size, std::memory_order_relaxed);
    s.failures.fetch_add(1, std::memory_order_relaxed);
    throw;
  }
}

// ---- streams a free waits for (record_stream) ----

struct recorded_streams {
  std::mutex mutex;
  std::unordered_map<void*, std::vector<stream_handle>> streams;  // by allocation
  std::atomic<std::size_t> count{0};                              // streams.size()
};
recorded_streams& recorded() {
  static recorded_streams* r = new recorded_streams();
  return *r;
}

std::vector<stream_handle> take_recorded(void* p) {
  recorded_streams& r = recorded();
  if (r.count.load(std::memory_order_acquire) == 0) return {};
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.streams.find(p);
  if (it == r.streams.end()) return {};
  std::vector<stream_handle> out = std::move(it->second);
  r.streams.erase(it);
  r.count.store(r.streams.size(), std::memory_order_release);
  return out;
}

/// Gives p back in the order of `stream`, and of `others` where the caller recorded any: then on
/// the GPU's own free stream after both (the allocation's stream is not held up).
void deallocate(void* p, std::size_t size, int device, stream_handle stream,
                const std::vector<stream_handle>& others) noexcept {
  device_state* s = existing(device);
  if (s == nullptr) return;  // not ours: the pool ignores foreign pointers, so do we
  // The limit's count takes the size the caller gives back (torch passes the allocation's); it
  // never goes below zero, whatever a caller passes.
  std::uint64_t was = s->in_use.load(std::memory_order_relaxed);
  while (!s->in_use.compare_exchange_weak(was, was > size ? was - size : 0,
                                          std::memory_order_relaxed)) {
  }
  if (others.empty()) {
    s->pool.deallocate(p, size, unimem::stream_ref(stream, device));
    return;
  }
  try {
    std::call_once(s->free_stream_made, [s] {
      s->free_stream = std::make_unique<unimem::stream>(
          unimem::device(s->id), unimem::stream::blocking_mode::non_blocking);
    });
    const unimem::stream_ref free_on = *s->free_stream;
    unimem::device_guard g(device);
    for (std::size_t i = 0; i <= others.size(); ++i) {
      unimem::event done(unimem::event::timing_mode::disable_timing);
      done.record(i == 0 ? stream : others[i - 1]);
      free_on.wait(done);  // the event may go: the wait holds what it recorded
    }
    s->pool.deallocate(p, size, free_on);
  } catch (...) {  // no event or stream: wait here for them all, then free on the allocation's
    (void)record_current_exception();
    for (stream_handle o : others) {
      try {
        unimem::stream_ref(o, device).synchronize();
      } catch (...) {
        (void)record_current_exception();
      }
    }
    s->pool.deallocate(p, size, unimem::stream_ref(stream, device));
  }
}

unimem_allocator_options current_options() {
  settings& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.options;
}

}  // namespace

// ---- the C symbols ----

/// Sets the options of every pool the allocator will make; refused (unimem_invalid_argument) once
/// a pool exists unless they are the same.
UNIMEM_C_API int unimem_allocator_configure(const unimem_allocator_options* o) noexcept {
  try {
    if (o == nullptr) throw std::invalid_argument("unimem_allocator_configure: no options");
    check_options(*o);
    settings& c = config();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.frozen && !same(c.options, *o)) {
      throw std::invalid_argument(
          "unimem allocator: its options are fixed once it has made a pool (it has allocated "
          "already, with other options); configure it before the first allocation");
    }
    c.options = *o;
    c.flags.store(o->flags);
    c.prefetch_min.store(o->prefetch_min_bytes);
    c.limit.store(o->limit_bytes == 0 ? unknown : o->limit_bytes);
    return unimem_ok;
  } catch (...) {
    return record_current_exception();
  }
}

/// The options in force (or that the first pool will take).
UNIMEM_C_API int unimem_allocator_options_in_force(unimem_allocator_options* out) noexcept {
  try {
    if (out == nullptr) throw std::invalid_argument("unimem_allocator_options_in_force: null");
    *out = current_options();
    return unimem_ok;
  } catch (...) {
    return record_current_exception();
  }
}

/// torch's pluggable allocator, for callers that check the pointer (torch.cuda.MemPool): `size`
/// bytes on GPU `device` in the order of `stream`; nullptr for 0 bytes, and on failure (the
/// reason in unimem_last_error()).
UNIMEM_C_API void* unimem_torch_alloc(std::size_t size, int device,
                                      stream_handle stream) noexcept {
  if (size == 0) return nullptr;
  try {
    return allocate(size, device, stream);
  } catch (...) {
    (void)record_current_exception();
    return nullptr;
  }
}

/// As unimem_torch_alloc, for torch's change_current_allocator (route A), which uses the pointer
/// unchecked: a failure throws its exception (after noting it as this thread's last error), which
/// torch's C++ passes on to Python as it does its own allocators' (a RuntimeError or MemoryError
/// whose message is unimem's). Never call it from C or through ctypes.
UNIMEM_C_API void* unimem_torch_alloc_or_throw(std::size_t size, int device,
                                               stream_handle stream) {
  if (size == 0) return nullptr;
  try {
    return allocate(size, device, stream);
  } catch (...) {
    (void)record_current_exception();
    throw;
  }
}

/// torch's free: p (from unimem_torch_alloc*) back in the order of `stream`, the allocation's, and
/// of the streams unimem_allocator_record_stream() added. Null and foreign pointers are ignored.
UNIMEM_C_API void unimem_torch_free(void* p, std::size_t size, int device,
                                    stream_handle stream) noexcept {
  if (p == nullptr) return;
  try {
    deallocate(p, size, device, stream, take_recorded(p));
  } catch (...) {
    (void)record_current_exception();
    deallocate(p, size, device, stream, {});
  }
}

/// Adds `stream` to the streams p's free waits for (torch's Tensor.record_stream, which route A
/// does not pass on): p is reused only after the work queued on `stream` before the free.
UNIMEM_C_API int unimem_allocator_record_stream(void* p, int device,
                                                stream_handle stream) noexcept {
  try {
    if (p == nullptr) {
      throw std::invalid_argument("unimem_allocator_record_stream: a null pointer");
    }
    (void)state(device);
    recorded_streams& r = recorded();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::vector<stream_handle>& v = r.streams[p];
    bool known = false;
    for (stream_handle s : v) known = known || s == stream;
    if (!known) v.push_back(stream);
    r.count.store(r.streams.size(), std::memory_order_release);
    return unimem_ok;
  } catch (...) {
    return record_current_exception();
  }
}

// CuPy's sizes come back at free only through this table (its free passes none).
namespace {
std::mutex g_cupy_mutex;
std::unordered_map<void*, std::size_t> g_cupy_sizes;
}  // namespace

/// CuPy's CFunctionAllocator: `size` bytes on GPU `device` in the order of the default stream
/// (CuPy passes none); `param` is not read. CuPy uses the pointer unchecked: a failure stops the
/// process (unimem.cupy.use() raises CuPy's OutOfMemoryError instead).
UNIMEM_C_API void* unimem_cupy_malloc(void* param, std::size_t size, int device) noexcept {
  (void)param;
  if (size == 0) return nullptr;
  void* p = nullptr;
  try {
    p = allocate(size, device, nullptr);
    std::lock_guard<std::mutex> lock(g_cupy_mutex);
    g_cupy_sizes[p] = size;
  } catch (...) {
    (void)record_current_exception();
    if (p != nullptr) deallocate(p, size, device, nullptr, {});
    stop("CuPy's CFunctionAllocator (unimem_cupy_malloc)", size, device);
  }
  return p;
}

/// CuPy's free: p back in the order of the default stream.
UNIMEM_C_API void unimem_cupy_free(void* param, void* p, int device) noexcept {
  (void)param;
  if (p == nullptr) return;
  std::size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(g_cupy_mutex);
    auto it = g_cupy_sizes.find(p);
    if (it == g_cupy_sizes.end()) return;
    size = it->second;
    g_cupy_sizes.erase(it);
  }
  deallocate(p, size, device, nullptr, {});
}

/// GPU `device`'s figures; the pool's are zero where it has allocated nothing yet.
UNIMEM_C_API int unimem_allocator_statistics(int device,
                                             unimem_allocator_stats* out) noexcept {
  try {
    if (out == nullptr || out->size != sizeof(unimem_allocator_stats)) {
      throw std::invalid_argument("unimem_allocator_statistics: a null or other-version result");
    }
    check_device(device);
    unimem_allocator_stats r{};
    r.size = sizeof r;
    r.limit_bytes = config().limit.load();
    r.placed_on_gpu_bytes = r.placed_on_host_bytes = r.host_bytes_in_use = unknown;
    r.gpu_budget_bytes = unknown;
    const unimem::device d(device);
    r.device_free_bytes = d.free_memory();
    r.device_total_bytes = d.total_memory();
    if (device_state* s = existing(device)) {
      const unimem::pool_statistics p = s->pool.statistics();
      r.pool_made = 1;
      r.bytes_in_use = p.bytes_in_use;
      r.peak_bytes_in_use = p.peak_bytes_in_use;
      r.bytes_held = p.bytes_held;
      r.allocations = p.allocations;
      r.allocations_total = s->served.load();
      r.failures = s->failures.load();
      r.prefetches = s->prefetches.load();
      r.uses_runtime_pool = s->pool.uses_runtime_pool() ? 1 : 0;
      if (p.has_gpu_budget) {
        r.placed_on_gpu_bytes = p.gpu_bytes_held();
        r.placed_on_host_bytes = p.host_bytes_held;
        r.host_bytes_in_use = p.host_bytes_in_use;
        r.gpu_budget_bytes = p.gpu_budget;
      }
      r.device_free_at_pool_bytes = s->free_at_start;
    }
    *out = r;
    return unimem_ok;
  } catch (...) {
    return record_current_exception();
  }
}

/// Starts GPU `device`'s peak over from the bytes in use now.
UNIMEM_C_API int unimem_allocator_reset_peak(int device) noexcept {
  try {
    check_device(device);
    if (device_state* s = existing(device)) s->pool.reset_peak();
    return unimem_ok;
  } catch (...) {
    return record_current_exception();
  }
}

/// Returns GPU `device`'s cached memory to the runtime until its pool holds at most `keep` bytes
/// (torch.cuda.empty_cache() does not reach a pluggable allocator).
UNIMEM_C_API int unimem_allocator_trim(int device, std::uint64_t keep) noexcept {
  try {
    check_device(device);
    if (device_state* s = existing(device)) s->pool.trim_to(static_cast<std::size_t>(keep));
    return unimem_ok;
  } catch (...) {
    return record_current_exception();
  }
}

/// This thread's last error: its status (unimem_ok when none), its message copied into
/// `message` (truncated to `capacity`, NUL-terminated) where given.
UNIMEM_C_API int unimem_last_error(char* message, std::size_t capacity) noexcept {
  if (message != nullptr && capacity > 0) {
    std::snprintf(message, capacity, "%s", t_last.status == unimem_ok ? "" : t_last.message);
  }
  return t_last.status;
}

/// Forgets this thread's last error.
UNIMEM_C_API void unimem_clear_last_error(void) noexcept { set_error(unimem_ok, ""); }

/// "CUDA", "HIP (AMD)" or "HIP (NVIDIA)": the backend the library was built for.
UNIMEM_C_API const char* unimem_allocator_backend(void) noexcept { return unimem::backend_name(); }

/// unimem's version, e.g. "0.3.0" (UNIMEM_VERSION_STRING).
UNIMEM_C_API const char* unimem_allocator_version(void) noexcept { return UNIMEM_VERSION_STRING; }

/// The GPUs the library's runtime sees (0 without one); -1 when the runtime fails.
UNIMEM_C_API int unimem_allocator_device_count(void) noexcept {
  try {
    return gpu_count();
  } catch (...) {
    (void)record_current_exception();
    return -1;
  }
}

// The function types the callers declare: torch's CUDAPluggableAllocator (MallocFuncType and
// FreeFuncType; hipified on ROCm, with hipStream_t) and CuPy's CFunctionAllocator
// (malloc_func_type and free_func_type). A symbol that drifts from them fails the build.
namespace {
using torch_malloc = void*(std::size_t, int, stream_handle);
using torch_free = void(void*, std::size_t, int, stream_handle);
using cupy_malloc = void*(void*, std::size_t, int);
using cupy_free = void(void*, void*, int);
template <class Symbol, class Caller>
constexpr bool matches = std::is_convertible<Symbol, Caller*>::value;
static_assert(matches<decltype(&unimem_torch_alloc), torch_malloc> &&
                  matches<decltype(&unimem_torch_alloc_or_throw), torch_malloc> &&
                  matches<decltype(&unimem_torch_free), torch_free>,
              "unimem's torch symbols must match torch's pluggable allocator");
static_assert(matches<decltype(&unimem_cupy_malloc), cupy_malloc> &&
                  matches<decltype(&unimem_cupy_free), cupy_free>,
              "unimem's CuPy symbols must match CuPy's CFunctionAllocator");
}  // namespace

// ---- the benchmark's baseline: what most code does ----

namespace {
unimem::managed_memory_resource& naive_resource() {
  static unimem::managed_memory_resource* r = new unimem::managed_memory_resource();
  return *r;
}
}  // namespace

/// A naive pluggable allocator, for benchmarks only: one managed allocation per tensor
/// (cudaMallocManaged / hipMallocManaged through unimem's managed_memory_resource), freed at
/// once (the runtime's free waits for the GPU). A failure throws, as route A's symbol does.
UNIMEM_C_API void* unimem_naive_managed_alloc(std::size_t size, int device,
                                              stream_handle stream) {
  (void)device;
  (void)stream;
  if (size == 0) return nullptr;
  try {
    return naive_resource().allocate(size, 256);
  } catch (...) {
    (void)record_current_exception();
    throw;
  }
}

static_assert(matches<decltype(&unimem_naive_managed_alloc), torch_malloc>,
              "the naive allocator is a pluggable allocator too");

/// The naive allocator's free.
UNIMEM_C_API void unimem_naive_managed_free(void* p, std::size_t size, int device,
                                            stream_handle stream) noexcept {
  (void)device;
  (void)stream;
  if (p == nullptr) return;
  try {
    naive_resource().deallocate(p, size, 256);
  } catch (...) {
    (void)record_current_exception();
  }
}
