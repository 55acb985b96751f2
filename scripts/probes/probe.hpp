// probe.hpp: what the raw CUDA probes in this folder share (they include it by its relative
// name, so each still builds alone: nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/<probe>.cu).
// No unimem: the probes measure the runtime itself.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

// Stops the probe, naming the call, its error and the line, when a runtime call fails.
#define CK(x)                                                                            \
  do {                                                                                   \
    const cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

using clock_type = std::chrono::steady_clock;

inline double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}
inline double us_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
inline cudaMemLocation on_device(int id) {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeDevice;
  l.id = id;
  return l;
}
inline cudaMemLocation on_host() {
  cudaMemLocation l{};
  l.type = cudaMemLocationTypeHost;
  return l;
}

// Writes one byte in every 4 KiB page of [p, p + bytes) on 8 threads: every page becomes
// resident on the host (CPU-written managed memory, as a program's CPU produces it).
inline void cpu_write(char* p, std::size_t bytes) {
  std::vector<std::thread> workers;
  for (int k = 0; k < 8; ++k) {
    workers.emplace_back([=] {
      for (std::size_t i = bytes * k / 8; i < bytes * (k + 1) / 8; i += 4096) p[i] = char(k);
    });
  }
  for (auto& w : workers) w.join();
}

// The two arguments of the sweeping probes, [MiB] [repetitions], and the GPU count; GPU 0 is
// made current.
struct probe_args {
  std::size_t mib;
  int reps;
  std::size_t bytes;
  int devices;
};
inline probe_args parse_args(int argc, char** argv, std::size_t default_mib, int default_reps) {
  probe_args a{argc > 1 ? std::strtoull(argv[1], nullptr, 10) : default_mib,
               argc > 2 ? std::atoi(argv[2]) : default_reps, 0, 0};
  a.bytes = a.mib << 20;
  CK(cudaGetDeviceCount(&a.devices));
  CK(cudaSetDevice(0));
  return a;
}
