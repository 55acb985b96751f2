// mpi_costs: what each step of a small MPI message costs on its own, for the bookkeeping a
// message of unimem::mpi may or may not afford (its path, the MPI-init check, a lock, the
// stream wait). Raw CUDA + MPI, no unimem.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/mpi_costs.cu -o mpi_costs
//        $(mpicxx --showme:compile) $(mpicxx --showme:link) && mpiexec -n 2 ./mpi_costs
// (one command line)
//
// Part 1, per call, on rank 0 while rank 1 waits (median of 21 blocks of 2,000 calls, in ns):
// the runtime queries that decide a message's path (cudaGetDevice, cudaPointerGetAttributes
// of managed, device and pinned memory, cudaMemRangeGetAttributes with one and with two
// attributes over 4 KiB of GPU-resident managed memory), the driver's cuPointerGetAttributes and
// cuMemRangeGetAttributes that those wrap, the range query right after a copy into the range
// (as a ping-pong's next send meets it), getrusage (what a placement record's check costs),
// cudaStreamSynchronize of an idle stream, cudaStreamQuery, cudaEventRecord, MPI_Initialized with
// MPI_Finalized (the check before each message, now one cached flag), a std::mutex locked and
// unlocked, an atomic load, MPI_Get_elements_x of a receive's status.
// Part 2, a 4 KiB ping-pong between the ranks from pinned memory, blocking MPI_Send/MPI_Recv
// with and without a cudaStreamSynchronize of an idle stream before each call (what a stream's
// order costs), against MPI_Isend/MPI_Irecv + MPI_Wait, and the same staged from managed
// memory (one cudaMemcpyAsync + cudaStreamSynchronize each way) with and without the two
// queries per message; blocks interleaved, median of 21, in us per round trip.
#include "probe.hpp"

#include <mpi.h>
#include <sys/resource.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace {

int g_rank = 0;

// Driver entry points in plain types (cuda.h is not included): cuPointerGetAttributes and
// cuMemRangeGetAttributes, which the runtime calls wrap.
using ptr_attrs_fn = int (*)(unsigned, int*, void**, unsigned long long);
using range_attrs_fn = int (*)(void**, size_t*, int*, size_t, unsigned long long, size_t);
template <class Fn>
Fn driver(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CK(cudaGetDriverEntryPointByVersion(name, &p, 11080, cudaEnableDefault, &found));
  return reinterpret_cast<Fn>(p);
}

template <class F>
double ns_per_call(F&& f, int calls = 2000) {
  std::vector<double> v;
  for (int rep = 0; rep < 21; ++rep) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < calls; ++i) f();
    v.push_back(us_since(t0) * 1000.0 / calls);
  }
  return median(v);
}

}  // namespace

int main(int argc, char** argv) {
  CK(cudaSetDevice(0));  // both ranks on GPU 0, the context made before MPI starts
  CK(cudaFree(nullptr));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const int peer = 1 - g_rank;
  const std::size_t bytes = 4096;
  double *m, *d, *p, *h;
  CK(cudaMallocManaged(&m, 1 << 20));
  CK(cudaMalloc(&d, 1 << 20));
  CK(cudaMallocHost(&p, 1 << 20));
  CK(cudaMallocHost(&h, 1 << 20));
  CK(cudaMemsetAsync(m, 0, 1 << 20, s));
  CK(cudaMemPrefetchAsync(m, 1 << 20, on_device(0), 0, s));
  CK(cudaStreamSynchronize(s));
  cudaEvent_t ev;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));

  if (g_rank == 0) {
    int dev = 0;
    cudaPointerAttributes a{};
    int pref = 0, last = 0;
    void* values[2] = {&pref, &last};
    size_t sizes[2] = {sizeof(int), sizeof(int)};
    cudaMemRangeAttribute attrs[2] = {cudaMemRangeAttributePreferredLocation,
                                      cudaMemRangeAttributeLastPrefetchLocation};
    rusage ru{};
    std::mutex mutex;
    std::atomic<int> flag{1};
    volatile int sink = 0;  // keeps the loads
    MPI_Status status{};  // a receive's, of 512 doubles (below)
    {
      MPI_Request r;
      MPI_Irecv(p, 512, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r);
      MPI_Wait(&r, &status);
    }
    const auto ptr_attrs = driver<ptr_attrs_fn>("cuPointerGetAttributes");
    const auto range_attrs = driver<range_attrs_fn>("cuMemRangeGetAttributes");
    std::vector<double> after_copy;
    std::printf("per call, ns (median of 21 blocks of 2,000):\n");
    const std::pair<const char*, std::function<void()>> rows[] = {
        {"cudaGetDevice", [&] { CK(cudaGetDevice(&dev)); }},
        {"cudaPointerGetAttributes(managed)", [&] { CK(cudaPointerGetAttributes(&a, m)); }},
        {"cudaPointerGetAttributes(device)", [&] { CK(cudaPointerGetAttributes(&a, d)); }},
        {"cudaPointerGetAttributes(pinned)", [&] { CK(cudaPointerGetAttributes(&a, p)); }},
        {"cudaMemRangeGetAttribute(1, 4 KiB)",
         [&] {
           CK(cudaMemRangeGetAttribute(&pref, sizeof(int), cudaMemRangeAttributePreferredLocation,
                                       m, bytes));
         }},
        {"cudaMemRangeGetAttributes(2, 4 KiB)",
         [&] { CK(cudaMemRangeGetAttributes(values, sizes, attrs, 2, m, bytes)); }},
        {"cudaMemRangeGetAttributes(2, 1 MiB)",
         [&] { CK(cudaMemRangeGetAttributes(values, sizes, attrs, 2, m, 1 << 20)); }},
        {"cuPointerGetAttributes(type+managed)",
         [&] {
           int which[2] = {2, 8};  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE, _IS_MANAGED
           unsigned type = 0, managed = 0;
           void* out[2] = {&type, &managed};
           if (ptr_attrs(2, which, out, reinterpret_cast<unsigned long long>(m)) != 0) {
             std::exit(2);
           }
         }},
        {"cuMemRangeGetAttributes(2, 4 KiB)",
         [&] {
           int which[2] = {2, 4};  // PREFERRED_LOCATION, LAST_PREFETCH_LOCATION
           if (range_attrs(values, sizes, which, 2, reinterpret_cast<unsigned long long>(m),
                           bytes) != 0) {
             std::exit(3);
           }
         }},
        {"cudaMemRangeGetAttributes(2) after a copy in",
         [&] {
           CK(cudaMemcpyAsync(m, h, bytes, cudaMemcpyDefault, s));
           CK(cudaStreamSynchronize(s));
           const auto t0 = clock_type::now();
           CK(cudaMemRangeGetAttributes(values, sizes, attrs, 2, m, bytes));
           after_copy.push_back(us_since(t0) * 1000.0);
         }},
        {"getrusage(RUSAGE_SELF)", [&] { getrusage(RUSAGE_SELF, &ru); }},
        {"cudaStreamSynchronize(idle)", [&] { CK(cudaStreamSynchronize(s)); }},
        {"cudaStreamQuery(idle)", [&] { CK(cudaStreamQuery(s)); }},
        {"cudaEventRecord", [&] { CK(cudaEventRecord(ev, s)); }},
        {"MPI_Initialized", [&] {
           int f = 0;
           MPI_Initialized(&f);
         }},
        {"MPI_Initialized + MPI_Finalized", [&] {
           int f = 0, g = 0;
           MPI_Initialized(&f);
           MPI_Finalized(&g);
         }},
        {"std::mutex lock + unlock", [&] { const std::lock_guard<std::mutex> hold(mutex); }},
        {"std::atomic<int> load (acquire)", [&] { sink += flag.load(std::memory_order_acquire); }},
        {"MPI_Get_elements_x", [&] {
           MPI_Count c = 0;
           MPI_Get_elements_x(&status, MPI_DOUBLE, &c);
           sink += static_cast<int>(c);
         }},
    };
    for (const auto& r : rows) std::printf("  %-40s %8.1f\n", r.first, ns_per_call(r.second));
    std::printf("  %-40s %8.1f  (the query alone, median)\n",
                "cudaMemRangeGetAttributes(2) after a copy", median(after_copy));
    std::fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // Part 2: ping-pong at 4 KiB and 16 KiB.
  const int tag = 3, rounds = 500;
  int n = 0;  // elements a message, set for each size below
  auto send_blocking = [&](double* b) { MPI_Send(b, n, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD); };
  auto recv_blocking = [&](double* b) {
    MPI_Recv(b, n, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  };
  auto send_nb = [&](double* b) {
    MPI_Request r;
    MPI_Isend(b, n, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  };
  auto recv_nb = [&](double* b) {
    MPI_Request r;
    MPI_Irecv(b, n, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &r);
    MPI_Status st;
    MPI_Wait(&r, &st);
    MPI_Count c = 0;
    MPI_Get_elements_x(&st, MPI_DOUBLE, &c);
  };
  auto queries = [&] {
    cudaPointerAttributes a{};
    CK(cudaPointerGetAttributes(&a, m));
    int dev = 0;
    CK(cudaGetDevice(&dev));
    int pref = 0, last = 0;
    void* values[2] = {&pref, &last};
    size_t sizes[2] = {sizeof(int), sizeof(int)};
    cudaMemRangeAttribute attrs[2] = {cudaMemRangeAttributePreferredLocation,
                                      cudaMemRangeAttributeLastPrefetchLocation};
    CK(cudaMemRangeGetAttributes(values, sizes, attrs, 2, m, n * sizeof(double)));
  };
  struct variant {
    const char* name;
    std::function<void()> send, recv;
  };
  auto staged_send = [&](bool q, bool blocking) {
    if (q) queries();
    CK(cudaMemcpyAsync(h, m, n * sizeof(double), cudaMemcpyDefault, s));
    CK(cudaStreamSynchronize(s));
    blocking ? send_blocking(h) : send_nb(h);
  };
  auto staged_recv = [&](bool q, bool blocking) {
    if (q) queries();
    blocking ? recv_blocking(h) : recv_nb(h);
    CK(cudaMemcpyAsync(m, h, n * sizeof(double), cudaMemcpyDefault, s));
    CK(cudaStreamSynchronize(s));
  };
  auto synced = [&](auto call) {
    return [&, call] {
      CK(cudaStreamSynchronize(s));
      call(p);
    };
  };
  const std::vector<variant> variants = {
      {"pinned, MPI_Send/MPI_Recv", [&] { send_blocking(p); }, [&] { recv_blocking(p); }},
      {"pinned, stream sync + MPI_Send/MPI_Recv", synced(send_blocking), synced(recv_blocking)},
      {"pinned, Isend/Irecv + Wait", [&] { send_nb(p); }, [&] { recv_nb(p); }},
      {"managed staged, blocking", [&] { staged_send(false, true); },
       [&] { staged_recv(false, true); }},
      {"managed staged, Isend/Irecv + Wait", [&] { staged_send(false, false); },
       [&] { staged_recv(false, false); }},
      {"managed staged, blocking + queries", [&] { staged_send(true, true); },
       [&] { staged_recv(true, true); }},
      {"managed staged, nb + queries", [&] { staged_send(true, false); },
       [&] { staged_recv(true, false); }},
  };
  for (const std::size_t b : {std::size_t{4096}, std::size_t{16384}}) {
    n = static_cast<int>(b / sizeof(double));
    std::vector<std::vector<double>> us(variants.size());
    for (int rep = 0; rep < 21; ++rep) {
      for (std::size_t k = 0; k < variants.size(); ++k) {
        const std::size_t which = (k + rep) % variants.size();
        const variant& v = variants[which];
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = clock_type::now();
        for (int r = 0; r < rounds; ++r) {
          if (g_rank == 0) {
            v.send();
            v.recv();
          } else {
            v.recv();
            v.send();
          }
        }
        us[which].push_back(us_since(t0) / rounds);
      }
    }
    if (g_rank == 0) {
      std::printf("ping-pong %zu KiB, us per round trip (median of 21 blocks of %d):\n",
                  b / 1024, rounds);
      for (std::size_t k = 0; k < variants.size(); ++k) {
        std::printf("  %-40s %8.2f\n", variants[k].name, median(us[k]));
      }
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
