// streaming: data that switches between CPU and GPU every step, the case where unified memory is
// said to lose to explicit copies. The CPU produces a frame, the GPU transforms it, the CPU
// consumes the result, step after step on the same buffers. Keeping both buffers in host memory
// and letting the GPU read and write them over the bus (intent `map`) moves nothing back and
// forth; moving them (the default) migrates every page twice per step. The program runs both
// ways, checks every element of every step, and prints the time per step of each.
// Usage: streaming [MiB per buffer, default 256] [steps, default 20]
#include <unimem/device.hpp>          // device_count()
#include <unimem/launch.hpp>          // launch(), grid_for(), in(), out(), intent
#include <unimem/managed_buffer.hpp>  // managed_buffer
#include <unimem/placement.hpp>       // set_intent()
#include <unimem/stream.hpp>          // stream

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

__global__ void transform(const float* in, float* out, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}

namespace {

/// Runs `steps` steps with the given intent; returns milliseconds per step, or -1 on a wrong
/// result.
double run(std::size_t n, int steps, unimem::intent how) {
  unimem::managed_buffer<float> frame(n, unimem::uninitialized), result(n, unimem::uninitialized);
  // Known when the buffers are made: say it now, while no page exists (cheapest).
  unimem::set_intent(frame, how);
  unimem::set_intent(result, how);
  unimem::stream s;
  const auto t0 = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    for (std::size_t i = 0; i < n; ++i) frame[i] = static_cast<float>((i + step) % 4096);  // CPU
    // Plain tags follow each buffer's intent: mapped ones are not moved, moved ones are.
    unimem::launch(transform, unimem::grid_for(n).on(s), unimem::in(frame), unimem::out(result),
                   n);
    unimem::ready_for_host(result, s);  // mapped: nothing to move; moved: back to the host
    for (std::size_t i = 0; i < n; ++i) {                                                // CPU
      if (result[i] != 2.0f * static_cast<float>((i + step) % 4096) + 1.0f) {
        std::fprintf(stderr, "streaming: step %d, element %zu: %g is wrong\n", step, i, result[i]);
        return -1;
      }
    }
  }
  const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
  return ms.count() / steps;
}

}  // namespace

int main(int argc, char** argv) {
  if (unimem::device_count() == 0) {
    std::fprintf(stderr, "streaming: no GPU was found; this example needs one (unimem-info "
                         "says why).\n");
    return 2;
  }
  const long mib = argc > 1 ? std::atol(argv[1]) : 256;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  if (mib <= 0 || mib > 4096 || steps <= 0) {
    std::fprintf(stderr, "usage: streaming [MiB per buffer, 1-4096] [steps > 0]\n");
    return 2;
  }
  try {
    const std::size_t n = static_cast<std::size_t>(mib) << 18;  // floats in mib MiB
    const double mapped = run(n, steps, unimem::intent::map);
    const double moved = run(n, steps, unimem::intent::move);
    if (mapped < 0 || moved < 0) return 1;
    std::printf("streaming: %d steps of %ld MiB in and out, every element checked\n", steps, mib);
    std::printf("  mapped (stays in host memory): %8.2f ms per step\n", mapped);
    std::printf("  moved (migrates every step):   %8.2f ms per step (%.2fx)\n", moved,
                moved / mapped);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "streaming: %s\n", e.what());
    return 1;
  }
}
