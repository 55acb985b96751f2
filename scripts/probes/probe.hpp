// probe.hpp: what the raw CUDA probes in this folder share (they include it by its relative
// name, so each still builds alone: nvcc -O2 -std=c++17 -arch=sm_90 scripts/probes/<probe>.cu).
// No unimem: the probes measure the runtime itself.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
