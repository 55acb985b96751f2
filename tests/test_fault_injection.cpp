// Fault injection: every runtime call unimem makes, failed in turn (docs/reliability.md).
//
// This file is built into its own program, unimem_fault_tests, with UNIMEM_FAULT_INJECTION
// defined (detail/backend/fault.hpp): there every runtime call is counted, and an armed plan
// makes the N-th one fail with a chosen status without reaching the runtime. For each scenario
// (each buffer kind with each constructor, copies between every pair of kinds, fills, placement,
// first touch, tagged launches with both intents, streams and events, allocators and pmr
// resources, the managed pool with each implementation, two GPUs where present) the sweep runs
// it with call 1 failing, then call 2, and so on, each with four statuses (out of memory,
// invalid value, not supported, launch failure), until the scenario completes without reaching
// the armed call. After each run:
//   - the failure surfaced: a unimem::error carrying the injected status, or a hint_status that
//     is not `applied`, or the failed call is a release (a free or destroy: destructors never
//     throw; the release is made and only its report fails);
//   - nothing leaked: the runtime holds exactly what it held before (the ledger counts device
//     and managed allocations, pinned allocations, streams, events and memory pools), the
//     GPU's free memory is back (within the runtime's 2 MiB allocation granule), no mapped
//     range is left;
//   - objects left behind are valid (their contents are checked or read) and destructible;
//   - the scenario then runs again without a fault and succeeds.
// A release that fails is the one failure a program cannot see (destructors swallow it); the
// sweep counts them apart.
#include "test_support.hpp"

#include <unimem/allocator.hpp>
#include <unimem/managed_pool.hpp>
#include <unimem/managed_pool_resource.hpp>
#include <unimem/memory_resource.hpp>
#include <unimem/placement/window.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <memory_resource>
#include <optional>
#include <set>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#if !defined(UNIMEM_FAULT_INJECTION)
#error "test_fault_injection.cpp is built with UNIMEM_FAULT_INJECTION (tests/CMakeLists.txt)"
#endif

namespace fault = unimem::detail::fault;
namespace backend = unimem::detail::backend;
using unimem::location;

__global__ void fi_fill(int* p, std::size_t n, int base) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = base + static_cast<int>(i);
}
__global__ void fi_add(const int* a, const int* b, int* c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void fi_increment(int* p, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) p[i] += 1;
}

namespace {

// ---- host tests: the plan itself (they run without a GPU too) ----

TEST(FaultInjection, ThePlanFailsExactlyTheNthCall) {
  int n = -1;
  fault::arm(2, static_cast<int>(backend::error_out_of_memory));
  const backend::result first = backend::device_count(&n);
  const backend::result second = backend::device_count(&n);
  const backend::result third = backend::device_count(&n);
  fault::disarm();
  EXPECT_NE(first.code, backend::error_out_of_memory);  // made: whatever the machine answers
  EXPECT_EQ(second.code, backend::error_out_of_memory);
  EXPECT_NE(third.code, backend::error_out_of_memory);
  EXPECT_EQ(fault::calls(), 3);
  EXPECT_EQ(fault::fired(), 1);
  ASSERT_NE(fault::fired_call(), nullptr);
  EXPECT_NE(std::string(fault::fired_call()).find("GetDeviceCount"), std::string::npos)
      << fault::fired_call();
  // What the library throws for it names the call and the injected status.
  fault::arm(1, static_cast<int>(backend::error_invalid_value));
  try {
    (void)unimem::device_count();
    ADD_FAILURE() << "device_count() did not report the injected failure";
  } catch (const unimem::error& e) {
    EXPECT_EQ(e.code(), backend::error_invalid_value) << e.what();
  }
  fault::disarm();
}

TEST(FaultInjection, DisarmedCallsAreOnlyCounted) {
  fault::arm(0, static_cast<int>(backend::error_out_of_memory));
  int n = -1;
  for (int i = 0; i < 5; ++i) (void)backend::device_count(&n);
  EXPECT_EQ(fault::calls(), 5);
  EXPECT_EQ(fault::fired(), 0);
}

// ---- the sweep ----

// The ledger is the exact check of what the runtime holds for the process. The GPU's free
// memory is a coarse one: the driver keeps physical memory of freed managed allocations for
// reuse, tens of MiB that come and go with the allocation pattern (scripts/probes/
// free_memory_drift.cu; docs/reliability.md). A leak of the sweep's buffers (12 KB each, one
// per run) would not show in it at all; the bound catches a leak of large allocations.
constexpr long long coarse_bound = 256ll << 20;
long long largest_drift = 0;

const backend::status statuses[] = {backend::error_out_of_memory, backend::error_invalid_value,
                                    backend::error_not_supported,
#if defined(UNIMEM_BACKEND_HIP)
                                    hipErrorLaunchFailure
#else
                                    cudaErrorLaunchFailure
#endif
};

/// What one run of a scenario did.
class run_context {
 public:
  run_context(long long fail_at, backend::status s) : fail_at_(fail_at), status_(s) {}

  /// Runs f with the plan armed and records how it ended.
  template <class F>
  void armed(F&& f) {
    fault::arm(fail_at_, static_cast<int>(status_));
    try {
      f();
    } catch (const unimem::error& e) {
      threw_ = true;
      code_ = e.code();
      what_ = e.what();
      line_ = e.line();
    } catch (const std::exception& e) {
      threw_ = true;
      other_ = true;
      what_ = e.what();
    }
    fault::disarm();
    fired_ = fault::fired() > 0;
    calls_ = fault::calls();
    if (fired_) call_ = fault::fired_call();
  }
  /// Records what a placement call answered.
  void hint(unimem::hint_status h) { not_applied_ += h != unimem::hint_status::applied; }
  /// Records a check of the contents (made outside the armed part).
  void expect(bool ok, const char* what) {
    if (!ok) problems_.push_back(what);
  }

  bool fired() const { return fired_; }
  bool threw() const { return threw_; }
  bool threw_other() const { return other_; }
  backend::status code() const { return code_; }
  const std::string& what() const { return what_; }
  int line() const { return line_; }
  const std::string& call() const { return call_; }
  int not_applied() const { return not_applied_; }
  long long calls() const { return calls_; }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  long long fail_at_;
  backend::status status_;
  bool fired_ = false, threw_ = false, other_ = false;
  backend::status code_{};
  std::string what_, call_;
  int not_applied_ = 0;
  int line_ = 0;
  long long calls_ = 0;
  std::vector<std::string> problems_;
};

using scenario_fn = std::function<void(run_context&)>;
struct scenario {
  std::string name;
  scenario_fn run;
};

/// What the runtime holds for the process, and the GPU's free memory.
struct holdings {
  long long held[fault::resource_count] = {};
  std::size_t free_memory = 0;
};
holdings now() {
  unimem::synchronize_all_devices();
  holdings h;
  for (int r = 0; r < fault::resource_count; ++r) h.held[r] = fault::held(fault::resource(r));
  h.free_memory = unimem::device(0).free_memory();
  return h;
}
std::string compare(const holdings& before, const holdings& after) {
  static const char* names[] = {"device/managed allocations", "pinned allocations", "streams",
                                "events", "memory pools"};
  static_assert(sizeof(names) / sizeof(names[0]) == fault::resource_count, "a name per resource");
  std::string out;
  for (int r = 0; r < fault::resource_count; ++r) {
    if (before.held[r] != after.held[r]) {
      out += std::string(names[r]) + " " + std::to_string(before.held[r]) + " -> " +
             std::to_string(after.held[r]) + "; ";
    }
  }
  const long long drift =
      static_cast<long long>(before.free_memory) - static_cast<long long>(after.free_memory);
  largest_drift = std::max(largest_drift, drift);
  if (drift > coarse_bound) {
    out += "GPU free memory " + std::to_string(before.free_memory) + " -> " +
           std::to_string(after.free_memory) + "; ";
  }
  return out;
}

struct sweep_totals {
  long long runs = 0, surfaced = 0, as_hint = 0, releases = 0, fallbacks = 0, clean_runs = 0;
  long long max_calls = 0;
  std::set<std::string> fallback_calls;
};

/// Calls made only by destructors, which never throw (docs/reliability.md): a release (it is
/// made; only its report fails) or the restore of the caller's current device.
bool absorbed_by_destructor(const std::string& call) {
  return call.find("Free") != std::string::npos || call.find("Destroy") != std::string::npos ||
         call.find("SetDevice") != std::string::npos;
}
/// Queries whose failure has a documented answer that the caller takes a safe path on.
const char* fallback_for(const std::string& scenario, const std::string& call, backend::status s) {
  if ((call == "cuMemsetD32Async" || call == "cuMemsetD16Async") &&
      s == backend::error_not_supported) {
    return "\"driver memset unreachable\": the pattern is written by copies instead";
  }
  if (call == "cuDevicePrimaryCtxGetState") {
    return "\"unknown\": the device is synchronised as if it had a context";
  }
  // managed_pool: the runtime's pool refused, a free whose point cannot be recorded, and out of
  // memory with free blocks in the cache. The last two only in the pool's scenarios: elsewhere
  // a failed event record or allocation must reach the caller.
  if (call.find("MemPoolCreate") != std::string::npos &&
      (s == backend::error_not_supported || s == backend::error_invalid_value)) {
    return "\"the runtime refused a managed pool\": unimem's caching allocator serves";
  }
  // A map tag where the runtime takes no advice (CUDA 13's pools of managed memory): the launch
  // moves the pages instead, as unsupported_policy::ignore says; only launches have no status.
  if (scenario.rfind("launch", 0) == 0 && call.find("MemAdvise(") != std::string::npos &&
      s == backend::error_not_supported) {
    return "\"the runtime takes no advice for this memory\": a map tag moves the pages instead";
  }
  const bool pool = scenario.rfind("managed_pool", 0) == 0;
  if (pool && call.find("EventRecord(") != std::string::npos) {
    return "\"the free's point unknown\": the pool waits for the stream and keeps the block";
  }
  if (pool && call.find("MallocManaged(") != std::string::npos &&
      s == backend::error_out_of_memory) {
    return "\"out of memory\": the pool's free blocks go back to the runtime, then once more";
  }
  if (call == "cudaPointerGetAttributes") {
    return "\"unknown\": the copy lets the runtime infer its direction";
  }
  // windows: the host link's estimate (a default window's size) where the runtime does not say
  // where the GPU sits; the walk's end (a destructor: it never throws) ordering its streams and
  // withdrawing its advice.
  if (scenario.rfind("windows", 0) == 0 && call.find("DeviceGetPCIBusId(") != std::string::npos) {
    return "\"the GPU's PCI address unknown\": the host link is taken to be PCIe 4.0 x16";
  }
  if (scenario.rfind("windows", 0) == 0 && call.find("MemAdvise") != std::string::npos &&
      s == backend::error_not_supported) {
    return "\"the runtime takes no advice for this memory\": the walk moves the range back "
           "instead of keeping a read-only copy or mapping it";
  }
  if (scenario.rfind("windows: destroyed", 0) == 0 &&
      (call.find("EventRecord(") != std::string::npos ||
       call.find("StreamWaitEvent(") != std::string::npos ||
       call.find("MemAdvise") != std::string::npos ||
       call.find("MemRangeGetAttribute(") != std::string::npos ||
       call.find("GetDevice(") != std::string::npos)) {
    return "\"the walk's end\": its destructor never throws (the streams' work completes, the "
           "advice stays)";
  }
  return nullptr;
}

/// Runs one scenario with call 1, 2, ... failing (each with every status) until it completes
/// without reaching the armed call; every outcome is checked.
void sweep(const scenario& sc, sweep_totals& t) {
  {  // a clean run first: lazy runtime state (modules, pools, caches) is made before the baseline
    run_context warm(0, statuses[0]);
    sc.run(warm);
    ASSERT_FALSE(warm.threw()) << sc.name << ": the clean run threw: " << warm.what();
    ASSERT_TRUE(warm.problems().empty()) << sc.name << ": " << warm.problems().front();
  }
  const holdings base = now();
  const long long limit = 10000;
  for (long long n = 1; n < limit; ++n) {
    bool completed = false;
    for (backend::status s : statuses) {
      run_context c(n, s);
      sc.run(c);
      ++t.runs;
      if (!c.fired()) {  // the scenario made fewer than n calls: the sweep is over
        EXPECT_FALSE(c.threw()) << sc.name << " (no fault) threw: " << c.what();
        t.max_calls = std::max(t.max_calls, c.calls());
        completed = true;
        break;
      }
      const std::string where = sc.name + ", call " + std::to_string(n) + " (" + c.call() +
                                ") failing with " + backend::error_name(s);
      if (c.threw()) {
        EXPECT_FALSE(c.threw_other()) << where << ": not a unimem::error: " << c.what();
        EXPECT_EQ(c.code(), s) << where << ": " << c.what();
        ++t.surfaced;
      } else if (c.not_applied() > 0) {
        ++t.as_hint;
      } else if (absorbed_by_destructor(c.call())) {
        ++t.releases;
      } else if (const char* why = fallback_for(sc.name, c.call(), s)) {
        ++t.fallbacks;
        t.fallback_calls.insert(std::string(c.call()) + ": " + why);
      } else {
        ADD_FAILURE() << where << ": the failure vanished (no error, no hint_status)";
      }
      for (const std::string& p : c.problems()) ADD_FAILURE() << where << ": " << p;
      const std::string leak = compare(base, now());
      EXPECT_TRUE(leak.empty()) << where << ": left behind: " << leak;
      run_context again(0, s);  // and it works again
      sc.run(again);
      ++t.clean_runs;
      EXPECT_FALSE(again.threw()) << where << ": the next clean run threw: " << again.what();
      for (const std::string& p : again.problems()) ADD_FAILURE() << where << ", clean: " << p;
      if (::testing::Test::HasFailure()) return;  // one scenario's first failure is enough
    }
    if (completed) return;
  }
  ADD_FAILURE() << sc.name << ": still reaching the armed call after " << limit << " calls";
}

// ---- scenarios ----

constexpr std::size_t n = 3000;

template <class Range>
bool all_equal(const Range& r, int v) {
  for (const auto& x : r)
    if (x != v) return false;
  return true;
}
template <class Range>
bool iota_from(const Range& r, int base) {
  int i = 0;
  for (const auto& x : r)
    if (x != base + i++) return false;
  return true;
}
template <class T>
std::vector<T> read(const unimem::device_buffer<T>& d) {
  return d.template to<std::vector<T>>();
}

/// Constructing each buffer kind with each constructor; what is built is checked.
void add_constructors(std::vector<scenario>& out) {
  const std::vector<int> src(n, 5);
  out.push_back({"managed_buffer(n)", [](run_context& c) {
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] { b.emplace(n); });
                   if (b) c.expect(all_equal(*b, 0), "not zero");
                 }});
  out.push_back({"managed_buffer(n) from gpu_value_init_min_bytes (zeroed by the GPU)",
                 [](run_context& c) {
                   constexpr std::size_t large = unimem::gpu_value_init_min_bytes / sizeof(int);
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] { b.emplace(large); });
                   if (b) c.expect(all_equal(*b, 0), "not zero");
                 }});
  out.push_back({"managed_buffer(n, uninitialized)", [](run_context& c) {
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] { b.emplace(n, unimem::uninitialized); });
                   if (b) c.expect(b->size() == n, "wrong size");
                 }});
  out.push_back({"managed_buffer(n, value)", [](run_context& c) {
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] { b.emplace(n, 7); });
                   if (b) c.expect(all_equal(*b, 7), "not 7");
                 }});
  out.push_back({"managed_buffer{list}", [](run_context& c) {
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] { b.emplace(std::initializer_list<int>{1, 2, 3}); });
                   if (b) c.expect(iota_from(*b, 1), "not 1 2 3");
                 }});
  out.push_back({"managed_buffer(first, last)", [src](run_context& c) {
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] { b.emplace(src.begin(), src.end()); });
                   if (b) c.expect(all_equal(*b, 5), "not 5");
                 }});
  out.push_back({"managed_buffer(n, host_attached)", [](run_context& c) {
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] { b.emplace(n, unimem::host_attached); });
                   if (b) c.expect(all_equal(*b, 0), "not zero");
                 }});
  out.push_back({"managed_buffer(n, first_touch(device 0, stream))", [](run_context& c) {
                   unimem::stream s;
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] { b.emplace(n, unimem::first_touch(location::device(0), s)); });
                   if (b) c.expect(all_equal(*b, 0), "not zero");
                 }});
  out.push_back({"managed_buffer(n, first_touch(host))", [](run_context& c) {
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] { b.emplace(n, unimem::first_touch(location::host())); });
                   if (b) c.expect(all_equal(*b, 0), "not zero");
                 }});
  out.push_back({"managed_buffer(n, first_touch(device 0), uninitialized) + kernel",
                 [](run_context& c) {
                   std::optional<unimem::managed_buffer<int>> b;
                   c.armed([&] {
                     b.emplace(n, unimem::first_touch(location::device(0)), unimem::uninitialized);
                     unimem::launch(fi_fill, unimem::grid_for(n), unimem::out(*b), n, 3);
                     c.hint(unimem::ready_for_host(*b));
                   });
                   if (b && !c.threw()) c.expect(iota_from(*b, 3), "kernel result wrong");
                 }});
  out.push_back({"device_buffer(n)", [](run_context& c) {
                   std::optional<unimem::device_buffer<int>> b;
                   c.armed([&] { b.emplace(n); });
                   if (b) c.expect(all_equal(read(*b), 0), "not zero");
                 }});
  out.push_back({"device_buffer(n, uninitialized)", [](run_context& c) {
                   std::optional<unimem::device_buffer<int>> b;
                   c.armed([&] { b.emplace(n, unimem::uninitialized); });
                   if (b) c.expect(read(*b).size() == n, "wrong size");
                 }});
  out.push_back({"device_buffer(n, value)", [](run_context& c) {
                   std::optional<unimem::device_buffer<int>> b;
                   c.armed([&] { b.emplace(n, 7); });
                   if (b) c.expect(all_equal(read(*b), 7), "not 7");
                 }});
  out.push_back({"device_buffer{list}", [](run_context& c) {
                   std::optional<unimem::device_buffer<int>> b;
                   c.armed([&] { b.emplace(std::initializer_list<int>{1, 2, 3}); });
                   if (b) c.expect(iota_from(read(*b), 1), "not 1 2 3");
                 }});
  out.push_back({"device_buffer(first, last)", [src](run_context& c) {
                   std::optional<unimem::device_buffer<int>> b;
                   c.armed([&] { b.emplace(src.begin(), src.end()); });
                   if (b) c.expect(all_equal(read(*b), 5), "not 5");
                 }});
  out.push_back({"pinned_buffer(n)", [](run_context& c) {
                   std::optional<unimem::pinned_buffer<int>> b;
                   c.armed([&] { b.emplace(n); });
                   if (b) c.expect(all_equal(*b, 0), "not zero");
                 }});
  out.push_back({"pinned_buffer(n, uninitialized)", [](run_context& c) {
                   std::optional<unimem::pinned_buffer<int>> b;
                   c.armed([&] { b.emplace(n, unimem::uninitialized); });
                   if (b) c.expect(b->size() == n, "wrong size");
                 }});
  out.push_back({"pinned_buffer(n, value)", [](run_context& c) {
                   std::optional<unimem::pinned_buffer<int>> b;
                   c.armed([&] { b.emplace(n, 7); });
                   if (b) c.expect(all_equal(*b, 7), "not 7");
                 }});
  out.push_back({"pinned_buffer{list}", [](run_context& c) {
                   std::optional<unimem::pinned_buffer<int>> b;
                   c.armed([&] { b.emplace(std::initializer_list<int>{1, 2, 3}); });
                   if (b) c.expect(iota_from(*b, 1), "not 1 2 3");
                 }});
  out.push_back({"pinned_buffer(first, last)", [src](run_context& c) {
                   std::optional<unimem::pinned_buffer<int>> b;
                   c.armed([&] { b.emplace(src.begin(), src.end()); });
                   if (b) c.expect(all_equal(*b, 5), "not 5");
                 }});
  out.push_back({"buffers moved and move-assigned", [](run_context& c) {
                   unimem::managed_buffer<int> m(10, 1);
                   unimem::device_buffer<int> d(10, 2);
                   unimem::pinned_buffer<int> p(10, 3);
                   c.armed([&] {
                     unimem::managed_buffer<int> m2(std::move(m));
                     m = unimem::managed_buffer<int>(20, 4);  // the old one freed
                     unimem::device_buffer<int> d2(std::move(d));
                     d = unimem::device_buffer<int>(20, 5);
                     unimem::pinned_buffer<int> p2(std::move(p));
                     p = unimem::pinned_buffer<int>(20, 6);
                   });
                   c.expect(m.empty() || m.size() == 20, "managed left half-moved");
                   if (m.size() == 20) c.expect(all_equal(m, 4), "managed not 4");
                   if (d.size() == 20) c.expect(all_equal(read(d), 5), "device not 5");
                   if (p.size() == 20) c.expect(all_equal(p, 6), "pinned not 6");
                 }});
}

/// One kind of buffer as a copy's end, made outside the armed part.
enum class kind { managed, device, pinned, vector };
const char* name_of(kind k) {
  switch (k) {
    case kind::managed: return "managed";
    case kind::device: return "device";
    case kind::pinned: return "pinned";
    case kind::vector: return "std::vector";
  }
  return "?";
}
struct any_buffer {
  kind k;
  unimem::managed_buffer<int> m;
  unimem::device_buffer<int> d;
  unimem::pinned_buffer<int> p;
  std::vector<int> v;
  any_buffer(kind k_, int value) : k(k_) {
    switch (k) {
      case kind::managed: m = unimem::managed_buffer<int>(n, value); break;
      case kind::device: d = unimem::device_buffer<int>(n, value); break;
      case kind::pinned: p = unimem::pinned_buffer<int>(n, value); break;
      case kind::vector: v.assign(n, value); break;
    }
  }
  unimem::view<int> view() {
    switch (k) {
      case kind::managed: return m.view();
      case kind::device: return d.view();
      case kind::pinned: return p.view();
      case kind::vector: break;
    }
    return {v.data(), v.size()};
  }
  std::vector<int> contents() {
    if (k == kind::device) return read(d);
    const unimem::view<int> x = view();
    return std::vector<int>(x.begin(), x.end());
  }
};

/// copy and copy_async between every pair of kinds (std::vector to std::vector excepted).
void add_copies(std::vector<scenario>& out) {
  const kind kinds[] = {kind::managed, kind::device, kind::pinned, kind::vector};
  for (kind to : kinds) {
    for (kind from : kinds) {
      if (to == kind::vector && from == kind::vector) continue;
      for (bool async : {false, true}) {
        const std::string name = std::string(async ? "copy_async " : "copy ") + name_of(from) +
                                 " -> " + name_of(to);
        out.push_back({name, [to, from, async](run_context& c) {
                         any_buffer dst(to, 0), src(from, 9);
                         unimem::stream s(unimem::stream::blocking_mode::non_blocking);
                         c.armed([&] {
                           if (async) {
                             unimem::copy_async(dst.view(), src.view(), s);
                             s.synchronize();
                           } else {
                             unimem::copy(dst.view(), src.view());
                           }
                         });
                         const std::vector<int> got = dst.contents();  // readable whatever happened
                         if (!c.threw()) c.expect(all_equal(got, 9), "copy incomplete");
                         c.expect(all_equal(src.contents(), 9), "the source changed");
                       }});
      }
    }
  }
}

struct twelve_bytes {
  int a, b, c;
};

/// fill and fill_async of each kind, with 1-, 2-, 4- and 12-byte elements.
void add_fills(std::vector<scenario>& out) {
  for (kind k : {kind::managed, kind::device, kind::pinned}) {
    for (bool async : {false, true}) {
      const std::string name =
          std::string(async ? "fill_async " : "fill ") + name_of(k) + " (int, 1-byte pattern)";
      out.push_back({name, [k, async](run_context& c) {
                       any_buffer b(k, 0);
                       unimem::stream s(unimem::stream::blocking_mode::non_blocking);
                       c.armed([&] {
                         if (async) {
                           unimem::fill_async(b.view(), 0x01010101, s);
                           s.synchronize();
                         } else {
                           unimem::fill(b.view(), 0x01010101);
                         }
                       });
                       if (!c.threw()) c.expect(all_equal(b.contents(), 0x01010101), "not filled");
                     }});
      out.push_back({std::string(async ? "fill_async " : "fill ") + name_of(k) + " (int)",
                     [k, async](run_context& c) {
                       any_buffer b(k, 0);
                       unimem::stream s;
                       c.armed([&] {
                         if (async) {
                           unimem::fill_async(b.view(), 123456, s);
                           s.synchronize();
                         } else {
                           unimem::fill(b.view(), 123456);
                         }
                       });
                       if (!c.threw()) c.expect(all_equal(b.contents(), 123456), "not filled");
                     }});
    }
  }
  out.push_back({"fill managed (short)", [](run_context& c) {
                   unimem::managed_buffer<short> b(n, short{0});
                   c.armed([&] { unimem::fill(b, short{-3}); });
                   if (!c.threw()) c.expect(all_equal(b, -3), "not filled");
                 }});
  out.push_back({"fill_async device (12-byte struct)", [](run_context& c) {
                   unimem::device_buffer<twelve_bytes> b(n, unimem::uninitialized);
                   unimem::stream s;
                   c.armed([&] {
                     unimem::fill_async(b, twelve_bytes{1, 2, 3}, s);
                     s.synchronize();
                   });
                   if (!c.threw()) {
                     bool ok = true;
                     for (const twelve_bytes& x : b.to<std::vector<twelve_bytes>>())
                       ok = ok && x.a == 1 && x.b == 2 && x.c == 3;
                     c.expect(ok, "not filled");
                   }
                 }});
  out.push_back({"fill pinned (char)", [](run_context& c) {
                   unimem::pinned_buffer<char> b(n, 'a');
                   c.armed([&] { unimem::fill(b, 'z'); });
                   if (!c.threw()) c.expect(all_equal(b, 'z'), "not filled");
                 }});
}

/// Prefetch, advice, intents, queries, attach, ready_for_host of managed memory.
void add_placement(std::vector<scenario>& out) {
  out.push_back({"prefetch to device and back (stream)", [](run_context& c) {
                   unimem::managed_buffer<int> b(n, 4);
                   unimem::stream s;
                   c.armed([&] {
                     c.hint(unimem::prefetch(b, location::device(0), s));
                     c.hint(unimem::prefetch(b, location::host(), s));
                     s.synchronize();
                   });
                   c.expect(all_equal(b, 4), "contents changed");
                 }});
  out.push_back({"advice set, queried, unset", [](run_context& c) {
                   unimem::managed_buffer<int> b(n, 4);
                   c.armed([&] {
                     c.hint(unimem::advise(b, unimem::advice::read_mostly));
                     (void)unimem::is_read_mostly(b.view());
                     c.hint(unimem::unadvise(b, unimem::advice::read_mostly));
                     c.hint(unimem::advise(b, unimem::advice::preferred_location,
                                           location::device(0)));
                     (void)unimem::preferred_location(b.view());
                     c.hint(unimem::unadvise(b, unimem::advice::preferred_location,
                                             location::device(0)));
                     c.hint(unimem::advise(b, unimem::advice::accessed_by, location::device(0)));
                     (void)unimem::accessed_by(b.view());
                     c.hint(unimem::unadvise(b, unimem::advice::accessed_by, location::device(0)));
                     (void)unimem::last_prefetch_location(b.view());
                   });
                   c.expect(all_equal(b, 4), "contents changed");
                 }});
  out.push_back({"set_intent mapped then moved, intent_of", [](run_context& c) {
                   unimem::managed_buffer<int> b(n, 4);
                   c.armed([&] {
                     c.hint(unimem::set_intent(b, unimem::intent::map));
                     c.hint(unimem::set_intent(b, unimem::intent::move));
                   });
                   c.expect(all_equal(b, 4), "contents changed");
                 }});
  out.push_back({"attach single, host, global", [](run_context& c) {
                   unimem::managed_buffer<int> b(n, 4);
                   unimem::stream s;
                   c.armed([&] {
                     unimem::attach(b, s, unimem::attach_mode::single);
                     s.synchronize();
                     unimem::attach(b, s, unimem::attach_mode::host);
                     s.synchronize();
                     unimem::attach(b, s, unimem::attach_mode::global);
                     s.synchronize();
                   });
                   unimem::stream fresh;
                   // A valid state afterwards.
                   unimem::attach(b, fresh, unimem::attach_mode::global);
                   fresh.synchronize();
                   c.expect(all_equal(b, 4), "contents changed");
                 }});
  out.push_back({"device queries", [](run_context& c) {
                   c.armed([&] {
                     const unimem::device d = unimem::device(0);
                     (void)d.properties();
                     (void)d.free_memory();
                     (void)unimem::migrates_on_demand(location::device(0));
                     (void)unimem::device::current();
                   });
                 }});
}

/// Tagged launches (moved and mapped intents), device buffers, containers.
void add_launches(std::vector<scenario>& out) {
  out.push_back({"launch with in/in/out tags (moved), ready_for_host", [](run_context& c) {
                   unimem::managed_buffer<int> a(n, 1), b(n, 2), r(n, 0);
                   unimem::stream s;
                   c.armed([&] {
                     unimem::launch(fi_add, unimem::grid_for(n).on(s), unimem::in(a),
                                    unimem::in(b), unimem::out(r), n);
                     c.hint(unimem::ready_for_host(r, s));
                   });
                   if (!c.threw()) c.expect(all_equal(r, 3), "wrong sum");
                   c.expect(all_equal(a, 1) && all_equal(b, 2), "an input changed");
                 }});
  out.push_back({"launch with mapped tags, ready_for_host", [](run_context& c) {
                   unimem::managed_buffer<int> a(n, 1), b(n, 2), r(n, 0);
                   unimem::stream s;
                   c.armed([&] {
                     unimem::launch(fi_add, unimem::grid_for(n).on(s),
                                    unimem::in(a, unimem::intent::map),
                                    unimem::in(b, unimem::intent::map),
                                    unimem::out(r, unimem::intent::map), n);
                     c.hint(unimem::ready_for_host(r, s));
                   });
                   if (!c.threw()) c.expect(all_equal(r, 3), "wrong sum");
                   c.expect(all_equal(a, 1) && all_equal(b, 2), "an input changed");
                 }});
  out.push_back({"launch over buffers passed directly, then synchronize", [](run_context& c) {
                   unimem::managed_buffer<int> a(n, 1);
                   unimem::device_buffer<int> b(n, 2);
                   unimem::device_buffer<int> r(n, 0);
                   c.armed([&] {
                     unimem::launch(fi_add, unimem::grid_for(n), a, b, r, n);
                     unimem::synchronize();
                   });
                   if (!c.threw()) c.expect(all_equal(read(r), 3), "wrong sum");
                 }});
  out.push_back({"launch over a managed_vector (tags), inout", [](run_context& c) {
                   unimem::managed_vector<int> v(n, 0);
                   c.armed([&] {
                     v.push_back(0);  // grows: a new allocation, the old one freed
                     unimem::launch(fi_fill, unimem::grid_for(v.size()), unimem::inout(v),
                                    v.size(), 10);
                     c.hint(unimem::ready_for_host(v));
                   });
                   if (!c.threw()) c.expect(iota_from(v, 10), "kernel result wrong");
                 }});
}

/// Streams, events, allocators and pmr resources.
void add_streams_and_allocators(std::vector<scenario>& out) {
  out.push_back({"streams and events: record, wait, query, elapsed", [](run_context& c) {
                   unimem::managed_buffer<int> b(n, 0);
                   c.armed([&] {
                     unimem::stream s1(unimem::stream::blocking_mode::non_blocking);
                     unimem::stream s2(unimem::device(0));
                     unimem::event start, stop(unimem::event::timing_mode::timing);
                     start.record(s1);
                     unimem::launch(fi_fill, unimem::grid_for(n).on(s1), unimem::out(b), n, 1);
                     stop.record(s1);
                     s2.wait(stop);
                     s2.synchronize();
                     (void)stop.ready();
                     (void)s1.ready();
                     stop.synchronize();
                     (void)unimem::elapsed_ms(start, stop);
                     c.hint(unimem::ready_for_host(b, s2));
                   });
                   if (!c.threw()) c.expect(iota_from(b, 1), "kernel result wrong");
                 }});
  out.push_back({"pmr resources: managed, pinned, device", [](run_context& c) {
                   unimem::managed_memory_resource managed;
                   unimem::pinned_memory_resource pinned;
                   unimem::device_memory_resource device_resource;
                   c.armed([&] {
                     std::pmr::vector<int> a(n, 3, &managed);
                     std::pmr::vector<int> b(n, 4, &pinned);
                     void* p = device_resource.allocate(4096, 256);
                     device_resource.deallocate(p, 4096, 256);
                     a.resize(2 * n, 5);
                     c.expect(a[0] == 3 && a[2 * n - 1] == 5 && b[n - 1] == 4, "pmr contents");
                   });
                 }});
  out.push_back({"managed_allocator: allocate, deallocate", [](run_context& c) {
                   unimem::managed_allocator<double> alloc;
                   c.armed([&] {
                     double* p = alloc.allocate(1000);
                     p[999] = 1.5;
                     alloc.deallocate(p, 1000);
                   });
                 }});
}

/// managed_pool (issue 28): each implementation's runtime calls, pool_buffer, the pmr resource.
void add_managed_pool(std::vector<scenario>& out) {
  out.push_back({"managed_pool (the runtime's pool where there is one): use, reuse, statistics, trim",
                 [](run_context& c) {
                   unimem::stream s;
                   c.armed([&] {
                     unimem::managed_pool pool;
                     {
                       unimem::pool_buffer<int> a(n, pool, s);
                       unimem::launch(fi_fill, unimem::grid_for(n).on(s), a, n, 1);
                     }
                     unimem::pool_buffer<int> b(n, pool, s);
                     unimem::launch(fi_fill, unimem::grid_for(n).on(s), b, n, 2);
                     s.synchronize();
                     c.expect(iota_from(b, 2), "kernel result wrong");
                     (void)pool.statistics();
                     pool.trim_to(0);
                   });
                 }});
  out.push_back({"managed_pool caching allocator: two streams, threshold 0, trim",
                 [](run_context& c) {
                   unimem::stream s1(unimem::stream::blocking_mode::non_blocking);
                   unimem::stream s2(unimem::stream::blocking_mode::non_blocking);
                   c.armed([&] {
                     unimem::managed_pool_options o;
                     o.use_runtime_pool = false;
                     o.release_threshold = 0;
                     unimem::managed_pool pool(o);
                     {
                       unimem::pool_buffer<int> a(n, pool, s1);  // freed on s1
                       unimem::launch(fi_fill, unimem::grid_for(n).on(s1), a, n, 1);
                     }
                     unimem::pool_buffer<int> b(n, pool, s1);  // reused on s1 at once
                     unimem::launch(fi_fill, unimem::grid_for(n).on(s1), b, n, 3);
                     {
                       unimem::pool_buffer<int> d(2 * n, pool, s2);
                       unimem::launch(fi_fill, unimem::grid_for(2 * n).on(s2), d, 2 * n, 1);
                     }
                     s2.synchronize();
                     unimem::pool_buffer<int> e(2 * n, pool, s1);  // d's block: its free is done
                     unimem::launch(fi_fill, unimem::grid_for(2 * n).on(s1), e, 2 * n, 4);
                     {
                       unimem::pool_buffer<int> g(4 * n, pool, s2);
                       unimem::launch(fi_fill, unimem::grid_for(4 * n).on(s2), g, 4 * n, 1);
                     }
                     s2.synchronize();
                     unimem::pool_buffer<int> h(8 * n, pool, s1);  // g's block goes back first
                     unimem::launch(fi_fill, unimem::grid_for(8 * n).on(s1), h, 8 * n, 5);
                     {
                       unimem::pool_buffer<int> k(n, pool, s2);  // a new block, freed on s2
                       unimem::launch(fi_fill, unimem::grid_for(n).on(s2), k, n, 1);
                     }
                     s1.synchronize();
                     c.expect(iota_from(b, 3) && iota_from(e, 4) && iota_from(h, 5),
                              "kernel result wrong");
                     pool.trim_to(0);  // waits for k's free on s2
                     (void)pool.statistics();
                   });
                 }});
  out.push_back({"managed_pool with a GPU budget, both implementations: a block past it on the "
                 "host, used, freed; one taken back to the GPU (issue 51)",
                 [](run_context& c) {
                   unimem::stream s;
                   c.armed([&] {
                     for (const bool runtime : {true, false}) {
                       unimem::managed_pool_options o;
                       o.use_runtime_pool = runtime;
                       o.gpu_budget = 12288;  // one block of n ints (its size class)
                       unimem::managed_pool pool(o);
                       unimem::pool_buffer<int> a(n, pool, s);  // within the budget
                       {
                         unimem::pool_buffer<int> b(n, pool, s);  // past it: on the host
                         unimem::launch(fi_fill, unimem::grid_for(n).on(s), unimem::out(b), n, 2);
                         s.synchronize();
                         c.expect(iota_from(b, 2), "kernel result wrong (on the host)");
                       }
                       a = unimem::pool_buffer<int>();
                       s.synchronize();
                       pool.trim_to(12288);  // a's block goes: the caching one takes b's back
                       unimem::pool_buffer<int> d(n, pool, s);
                       unimem::launch(fi_fill, unimem::grid_for(n).on(s), unimem::out(d), n, 3);
                       s.synchronize();
                       c.expect(iota_from(d, 3), "kernel result wrong");
                       (void)pool.statistics();
                       d = unimem::pool_buffer<int>();
                       s.synchronize();
                       pool.trim_to(0);
                     }
                   });
                 }});
  out.push_back({"managed_pool_resource: a pmr vector grows, both implementations",
                 [](run_context& c) {
                   unimem::stream s;
                   c.armed([&] {
                     for (const bool runtime : {true, false}) {
                       unimem::managed_pool_options o;
                       o.use_runtime_pool = runtime;
                       unimem::managed_pool pool(o);
                       unimem::managed_pool_resource resource(pool, s);
                       std::pmr::vector<int> v(&resource);
                       for (int i = 0; i < 3000; ++i) v.push_back(i);
                       c.expect(v[0] == 0 && v[2999] == 2999, "pmr contents");
                     }
                   });
                 }});
}

/// Whether p[0, n) is i + 1 over a prefix of whole windows and i after it: what a walk that adds
/// one to each window leaves when a call fails (no element lost, none changed twice).
bool incremented_prefix(const unimem::managed_buffer<int>& p, std::size_t window) {
  std::size_t i = 0;
  while (i < p.size() && p[i] == static_cast<int>(i) + 1) ++i;
  if (i % window != 0 && i != p.size()) return false;
  for (; i < p.size(); ++i) {
    if (p[i] != static_cast<int>(i)) return false;
  }
  return true;
}
unimem::managed_buffer<int> iota_buffer() {
  unimem::managed_buffer<int> b(n, unimem::uninitialized);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<int>(i);
  return b;
}

/// windows: a walk that moves its windows back (inout, in, out(move)), one that keeps them over
/// two passes with tags over its windows, one with the default window size (the host link
/// asked) destroyed in the armed part. A failure leaves every element as it was or once done
/// (whole windows, in order), and the error names the line that made the walk or ran its loop.
void add_windows(std::vector<scenario>& out) {
  out.push_back({"windows: evicting, inout/in/out(move), a kernel per window", [](run_context& c) {
                   unimem::managed_buffer<int> a = iota_buffer(), b(n, 2), r(n, 0);
                   unimem::stream s;
                   std::unique_ptr<unimem::windows> walk;  // made at the line below
                   unimem::window_options o;
                   o.eviction = unimem::window_eviction::always;
                   o.window_elements = 1000;
                   const int first = __LINE__ + 2, last = first + 7;  // the lines of the armed part
                   c.armed([&] {
                     walk.reset(new unimem::windows(s, o, unimem::inout(a), unimem::in(b),
                                                    unimem::out(r, unimem::intent::move)));
                     for (const unimem::window& w : *walk) {
                       const auto cfg = unimem::grid_for(w.size()).on(s);
                       unimem::launch(fi_increment, cfg, w(a), w.size());
                       unimem::launch(fi_add, cfg, w(b), w(b), unimem::out(w(r)), w.size());
                     }
                     s.synchronize();
                   });
                   walk.reset();  // its end, outside the armed part
                   s.synchronize();
                   if (c.threw()) {  // the walk's, its loop's, a launch's or the synchronisation's
                     c.expect(c.line() >= first && c.line() <= last,
                              "the error does not name a line of the user's code");
                   }
                   c.expect(incremented_prefix(a, 1000), "an element lost or done twice");
                   c.expect(all_equal(b, 2), "a read-only range changed");
                   if (!c.threw()) c.expect(all_equal(r, 4), "wrong result");
                 }});
  out.push_back({"windows: fitting, two passes, tags over its windows", [](run_context& c) {
                   unimem::managed_buffer<int> a = iota_buffer();
                   unimem::stream s;
                   std::unique_ptr<unimem::windows> walk;  // made at the line below
                   unimem::window_options o;
                   o.eviction = unimem::window_eviction::never;
                   o.window_elements = 1000;
                   c.armed([&] {
                     walk.reset(new unimem::windows(s, o, unimem::inout(a)));
                     auto body = [&](const unimem::window& w) {
                       unimem::launch(fi_increment, unimem::grid_for(w.size()).on(s),
                                      unimem::inout(w(a)), w.size());
                     };
                     for (const unimem::window& w : *walk) body(w);
                     for (const unimem::window& w : walk->backward()) body(w);
                     s.synchronize();
                   });
                   walk.reset();
                   s.synchronize();
                   if (!c.threw()) {
                     std::size_t wrong = 0;
                     for (std::size_t i = 0; i < n; ++i) wrong += a[i] != static_cast<int>(i) + 2;
                     c.expect(wrong == 0, "wrong result");
                   }
                 }});
  out.push_back({"windows: destroyed in the armed part, the default window size",
                 [](run_context& c) {
                   unimem::managed_buffer<int> a = iota_buffer(), b(n, 2);
                   unimem::stream s;
                   unimem::window_options o;
                   o.eviction = unimem::window_eviction::always;  // the link is asked
                   c.armed([&] {
                     unimem::windows walk(s, o, unimem::inout(a), unimem::in(b));
                     for (const unimem::window& w : walk) {
                       unimem::launch(fi_increment, unimem::grid_for(w.size()).on(s), w(a),
                                      w.size());
                     }
                     s.synchronize();
                   });
                   s.synchronize();
                   c.expect(incremented_prefix(a, n), "an element lost or done twice");
                   c.expect(all_equal(b, 2), "a read-only range changed");
                 }});
}

/// Two GPUs: copies between them, placement on the second, a stream of the second.
void add_two_gpus(std::vector<scenario>& out) {
  out.push_back({"two GPUs: device copy, prefetch and launch on GPU 1", [](run_context& c) {
                   unimem::device_buffer<int> on0(n, 8);
                   std::optional<unimem::device_buffer<int>> on1;
                   unimem::managed_buffer<int> m(n, 0);
                   c.armed([&] {
                     {
                       const unimem::device_guard g(unimem::device(1));
                       on1.emplace(n, unimem::uninitialized);
                     }
                     unimem::copy(on1->view(), on0.view());
                     unimem::stream s1(unimem::device(1));
                     c.hint(unimem::prefetch(m, location::device(1), s1));
                     unimem::launch(fi_fill, unimem::grid_for(n).on(s1), unimem::out(m), n, 2);
                     c.hint(unimem::ready_for_host(m, s1));
                   });
                   if (!c.threw()) {
                     c.expect(all_equal(read(*on1), 8), "GPU 1 copy wrong");
                     c.expect(iota_from(m, 2), "GPU 1 kernel wrong");
                   }
                 }});
}

void run_sweep(const char* group, void (*add)(std::vector<scenario>&)) {
  std::vector<scenario> scenarios;
  add(scenarios);
  sweep_totals t;
  largest_drift = 0;
  for (const scenario& sc : scenarios) {
    sweep(sc, t);
    if (::testing::Test::HasFailure()) break;
  }
  std::printf(
      "fault sweep %s: %zu scenarios, %lld injected failures survived (%lld as unimem::error "
      "with the injected status, %lld as a hint_status, %lld failed releases absorbed by "
      "destructors, %lld absorbed by documented fallbacks), %lld clean reruns, up to %lld runtime "
      "calls per scenario\n",
      group, scenarios.size(), t.surfaced + t.as_hint + t.releases + t.fallbacks, t.surfaced,
      t.as_hint, t.releases, t.fallbacks, t.clean_runs, t.max_calls);
  std::printf("  largest drop of the GPU's free memory after a run: %.1f MiB\n",
              static_cast<double>(largest_drift) / 1048576.0);
  if (t.fallbacks > 0) std::printf("  the fallbacks:\n");
  for (const std::string& f : t.fallback_calls) std::printf("    %s\n", f.c_str());
}

// Tags over device memory place nothing: a tagged launch over device buffers makes exactly the
// runtime calls of the untagged one (the launch itself).
TEST(FaultCountGpu, TagsOverDeviceBuffersMakeNoRuntimeCall) {
  UNIMEM_REQUIRE_GPU();
  const std::size_t n = 1000;
  unimem::device_buffer<int> a(n), b(n), c(n);
  const auto cfg = unimem::grid_for(n);
  unimem::launch(fi_add, cfg, a, b, c, n);  // the runtime's first launch of this kernel
  unimem::synchronize();
  fault::arm(0, 0);
  unimem::launch(fi_add, cfg, a, b, c, n);
  const long long untagged = fault::calls();
  fault::arm(0, 0);
  unimem::launch(fi_add, cfg, unimem::in(a), unimem::in(b), unimem::out(c), n);
  const long long tagged = fault::calls();
  unimem::synchronize();
  EXPECT_EQ(tagged, untagged);
  EXPECT_EQ(untagged, 1) << "an untagged launch on the default stream is one runtime call";
}

// Memory a pool hands out again keeps its placement record, with the runtime's pool and with
// the caching allocator:
// - the record a pool_buffer starts with is the one the last owner of the same memory left
//   (whatever the runtime or the process does meanwhile);
// - a tagged launch over buffers whose records hold makes exactly the runtime calls of an
//   untagged one (no prefetch of pages already there), and one over memory new to the pool
//   prefetches (more calls). Whether a record holds depends on the host-access log
//   (host_access.hpp), which, on the page_faults signal, every fault of the process moves (the
//   runtime's own threads too): a round is judged only when the log did not move from before
//   the records were checked to after the launch (place() reads it in between), and the
//   caching allocator, which makes no runtime allocation between rounds, must have such rounds.
TEST(FaultCountGpu, TaggedLaunchOverReusedPoolMemoryPrefetchesNothing) {
  UNIMEM_REQUIRE_GPU();
  namespace ud = unimem::detail;
  for (const bool runtime_pool : {true, false}) {
    unimem::managed_pool_options o;
    o.use_runtime_pool = runtime_pool;
    unimem::managed_pool pool(o);
    if (runtime_pool && !pool.uses_runtime_pool()) continue;  // no runtime pool here
    SCOPED_TRACE(pool.implementation_name());
    unimem::stream s(unimem::stream::blocking_mode::non_blocking);
    const int device = unimem::device::current().device_id();
    const std::size_t n = std::size_t{1} << 20;
    const auto cfg = unimem::grid_for(n).on(s);
    {
      unimem::managed_buffer<int> w(n);  // the runtime's first launch of the kernel here
      unimem::launch(fi_add, cfg, w, w, w, n);
      s.synchronize();
    }
    std::vector<std::pair<const void*, std::uint64_t>> left;  // what the last round left
    int carried = 0, judged = 0;
    for (int round = 0; round < 8; ++round) {
      unimem::pool_buffer<int> a(n, pool, s), b(n, pool, s), c(n, pool, s);
      const unimem::pool_buffer<int>* bufs[] = {&a, &b, &c};
      for (const auto* x : bufs) {
        const std::uint64_t stamp = unimem_detail_placement_record(*x)->stamp();
        bool known = false;
        for (const auto& l : left) {
          if (l.first == x->data()) {
            EXPECT_EQ(stamp, l.second) << "round " << round << ": the last owner's record";
            known = true;
            ++carried;
          }
        }
        if (!known) {
          EXPECT_EQ(stamp, 0u) << "round " << round << ": memory new to the pool has no record";
        }
      }
      fault::arm(0, 0);
      unimem::launch(fi_add, cfg, a, b, c, n);
      const long long untagged = fault::calls();
      const std::uint64_t f0 = ud::host_access::now();
      bool all_hold = true, none_holds = true;
      for (const auto* x : bufs) {
        const bool holds = unimem_detail_placement_record(*x)->holds(
            ud::placement_stamp::make(device, false, f0));
        all_hold = all_hold && holds;
        none_holds = none_holds && !holds;
      }
      fault::arm(0, 0);
      unimem::launch(fi_add, cfg, unimem::in(a), unimem::in(b), unimem::out(c), n);
      const long long tagged = fault::calls();
      const std::uint64_t f1 = ud::host_access::now();
      s.synchronize();
      if (f0 == f1 && all_hold) {
        EXPECT_EQ(tagged, untagged) << "round " << round << ": records hold, nothing to move";
        ++judged;
      } else if (f0 == f1 && none_holds) {
        EXPECT_GT(tagged, untagged) << "round " << round << ": nothing known, all placed";
      }
      left.clear();
      for (const auto* x : bufs) {
        left.emplace_back(x->data(), unimem_detail_placement_record(*x)->stamp());
        EXPECT_NE(left.back().second, 0u) << "the tagged launch recorded its placement";
      }
    }  // each round's buffers go back in the order of s
    std::printf("  %s: %d records carried over to the same memory, %d of 7 reused rounds with "
                "every record holding\n",
                pool.implementation_name(), carried, judged);
    if (!runtime_pool) {
      EXPECT_EQ(carried, 21) << "the caching allocator hands each block back on its stream";
      EXPECT_GT(judged, 0) << "no round without a page fault: the records were never tested";
    }
  }
}

// After the host touched some of a placed buffer, the next tagged launch prefetches just the
// touched blocks, one call per span (blocks closer than placement's merge gap share one call),
// and nothing once they are back; faults on ordinary memory, on this thread or another, cost
// no call. Needs the UVM driver's CPU-fault events (host_access.hpp). On the page-fault signal
// (forced last) any fault of the process places every buffer again.
TEST(FaultCountGpu, TaggedLaunchPrefetchesOnlyWhatTheHostTouched) {
  UNIMEM_REQUIRE_GPU();
  namespace ha = unimem::detail::host_access;
  if (!unimem_test::host_access_is_exact()) {
    GTEST_SKIP() << "host touches are learnt from the process's page-fault count here (no UVM "
                    "driver events)";
  }
  const std::size_t n = (std::size_t{64} << 20) / sizeof(int);  // 32 blocks of 2 MiB
  const std::size_t per_block = ha::block_bytes / sizeof(int);
  unimem::managed_buffer<int> a(n, 1), b(n, 2), c(n, 0);
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  const auto cfg = unimem::grid_for(n).on(s);
  auto tagged = [&] {
    fault::arm(0, 0);
    unimem::launch(fi_add, cfg, unimem::in(a), unimem::in(b), unimem::out(c), n);
    const long long k = fault::calls();
    s.synchronize();
    return k;
  };
  auto untagged = [&] {
    fault::arm(0, 0);
    unimem::launch(fi_add, cfg, a, b, c, n);
    const long long k = fault::calls();
    s.synchronize();
    return k;
  };
  (void)tagged();  // placed, whole
  const long long base = untagged();
  EXPECT_EQ(tagged(), base) << "all resident: the calls of an untagged launch";
  (void)unimem_test::fault_fresh_memory(1);
  EXPECT_EQ(tagged(), base) << "after a fault on one fresh page of ordinary memory";
  std::thread other([] {
    for (int k = 0; k < 64; ++k) {
      (void)unimem_test::fault_fresh_memory(256);  // 1 MiB, every page a fault
    }
  });
  other.join();
  EXPECT_EQ(tagged(), base) << "after another thread allocated and touched 64 MiB";
  b[3 * per_block + 5] = 2;
  EXPECT_EQ(tagged(), base + 1) << "one touched block: one prefetch";
  EXPECT_EQ(tagged(), base) << "once it is back: nothing";
  const volatile int* ra = a.data();
  (void)ra[1];  // a read of a's first block
  b[3 * per_block] = 2;
  b[5 * per_block + 7] = 2;  // two blocks apart: the same call as block 3
  b[30 * per_block] = 2;     // 25 blocks further: a call of its own
  EXPECT_EQ(tagged(), base + 3) << "a's block, b's blocks 3-5 and b's block 30";
  EXPECT_EQ(tagged(), base);
  // The page-fault signal, as where no UVM driver events exist: no fault, nothing to do; any
  // fault, every range placed again.
  // (Placing a range whole also asks the runtime whether it is mapped: more than one call.)
  ASSERT_TRUE(ha::use_signal_for_testing(ha::signal::page_faults));
  const long long whole = tagged();
  EXPECT_GT(whole, base + 3) << "nothing known of the past: every range placed whole";
  (void)unimem_test::fault_fresh_memory(1);
  EXPECT_EQ(tagged(), whole) << "a fault anywhere";
  ASSERT_TRUE(ha::use_signal_for_testing(ha::signal::uvm_events));
  EXPECT_EQ(tagged(), whole) << "nothing known of the past";
  EXPECT_EQ(tagged(), base);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += c[i] != 3;
  EXPECT_EQ(wrong, 0u);
}

// A walk whose working set fits, in four windows: its first pass places them; each later pass
// costs what its launches cost (one runtime call each), tagged over the windows or not: the
// windows' records hold. Judged on a run the host-access log did not move in (the page-fault
// signal places everything again after any fault of the process, by design).
TEST(FaultCountGpu, AWalkThatFitsCostsItsLaunchesOnly) {
  UNIMEM_REQUIRE_GPU();
  if (!unimem::device(0).migrates_on_demand()) GTEST_SKIP() << "device 0 does not migrate pages";
  const std::size_t n = std::size_t{1} << 20;
  unimem::managed_buffer<int> a(n, 0), b(n, 1);
  unimem::stream s(unimem::stream::blocking_mode::non_blocking);
  unimem::window_options o;
  o.window_elements = n / 4;
  unimem::windows walk(s, o, unimem::in(b), unimem::inout(a));
  ASSERT_FALSE(walk.evicts());
  auto pass = [&] {
    fault::arm(0, 0);
    for (const unimem::window& w : walk) {
      unimem::launch(fi_add, unimem::grid_for(w.size()).on(s), unimem::in(w(b)), w(b),
                     unimem::inout(w(a)), w.size());
    }
    const long long k = fault::calls();
    s.synchronize();
    return k;
  };
  const long long first = pass();
  EXPECT_GT(first, 4) << "the first pass places the windows";
  EXPECT_TRUE(unimem_test::in_a_quiet_run([&] { return pass() == 4; }))
      << "a later pass: its four launches and nothing else";
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += a[i] != 2;
  EXPECT_EQ(wrong, 0u);
}

// The ledger's exact count under concurrency: what eight threads allocate, create and free,
// round after round, leaves the runtime holding exactly what it held before (the free-memory
// evidence of StressGpu.EightThreadsAllocatePrefetchLaunchFree, without the runtime's pools).
TEST(FaultLedgerGpu, EightThreadsLeaveNothingHeld) {
  UNIMEM_REQUIRE_GPU();
  const holdings before = now();
  std::atomic<int> failures{0};
  std::atomic<long long> wrong{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t) {
    pool.emplace_back([&, t] {
      try {
        for (int r = 0; r < 1000; ++r) {
          unimem::stream s(unimem::stream::blocking_mode::non_blocking);
          unimem::event e(unimem::event::timing_mode::disable_timing);
          unimem::managed_buffer<int> m(1000 + t, unimem::uninitialized);
          unimem::device_buffer<int> d(1000 + t, 1);
          unimem::pinned_buffer<int> p(1000 + t, 0);
          unimem::prefetch(m, location::device(0), s);
          unimem::launch(fi_fill, unimem::grid_for(m.size()).on(s), unimem::out(m), m.size(), r);
          e.record(s);
          e.synchronize();
          unimem::copy_async(p, d, s);
          unimem::ready_for_host(m, s);
          wrong += m[999] != r + 999;
          wrong += p[999] != 1;
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "thread %d: %s\n", t, e.what());
        ++failures;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  const std::string left = compare(before, now());
  EXPECT_TRUE(left.empty()) << left;
  std::printf("ledger: 8 threads x 1000 rounds; held before and after: %lld/%lld/%lld/%lld "
              "(device+managed, pinned, streams, events)\n",
              fault::held(fault::resource::device_memory), fault::held(fault::resource::pinned_memory),
              fault::held(fault::resource::stream), fault::held(fault::resource::event));
}

TEST(FaultSweepGpu, Constructors) {
  UNIMEM_REQUIRE_GPU();
  run_sweep("constructors", add_constructors);
}
TEST(FaultSweepGpu, CopiesBetweenEveryPairOfKinds) {
  UNIMEM_REQUIRE_GPU();
  run_sweep("copies", add_copies);
}
TEST(FaultSweepGpu, Fills) {
  UNIMEM_REQUIRE_GPU();
  run_sweep("fills", add_fills);
}
TEST(FaultSweepGpu, PlacementAdviceIntentsQueries) {
  UNIMEM_REQUIRE_GPU();
  run_sweep("placement", add_placement);
}
TEST(FaultSweepGpu, TaggedLaunches) {
  UNIMEM_REQUIRE_GPU();
  run_sweep("launches", add_launches);
}
TEST(FaultSweepGpu, StreamsEventsAllocators) {
  UNIMEM_REQUIRE_GPU();
  run_sweep("streams/allocators", add_streams_and_allocators);
}
TEST(FaultSweepGpu, ManagedPool) {
  UNIMEM_REQUIRE_GPU();
  run_sweep("managed pool", add_managed_pool);
}
TEST(FaultSweepGpu, Windows) {
  UNIMEM_REQUIRE_GPU();
  run_sweep("windows", add_windows);
}
TEST(FaultSweepGpu, TwoGpus) {
  UNIMEM_REQUIRE_GPU();
  if (unimem::device_count() < 2) GTEST_SKIP() << "one GPU: the two-GPU scenarios need two";
  run_sweep("two GPUs", add_two_gpus);
}

}  // namespace
