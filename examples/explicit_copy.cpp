// explicit_copy: the seed's vector_add done the explicit way, for data that should not be
// left to page migration: pinned host buffers, device buffers, copies on a stream, and events
// that time each phase.
#include <unimem/unimem.hpp>

#include <cstdio>
#include <exception>

__global__ void vector_add(const float* a, const float* b, float* c, std::size_t n) {
  std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  if (unimem::device_count() == 0) {
    std::fprintf(stderr, "explicit_copy: no GPU was found; this example needs one.\n");
    return 2;
  }
  try {
    const std::size_t n = std::size_t{1} << 26;  // 256 MiB per array
    unimem::pinned_buffer<float> a(n, unimem::uninitialized), b(n, unimem::uninitialized),
        c(n, unimem::uninitialized);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i % 1000);
      b[i] = 2.0f * static_cast<float>(i % 1000);
    }
    unimem::device_buffer<float> da(n, unimem::uninitialized), db(n, unimem::uninitialized),
        dc(n, unimem::uninitialized);
    unimem::stream s(unimem::stream::blocking_mode::non_blocking);
    unimem::event start, copied_in, computed, copied_out;

    start.record(s);
    unimem::copy_async(da, a, s);
    unimem::copy_async(db, b, s);
    copied_in.record(s);
    unimem::launch(vector_add, unimem::grid_for(n).on(s), da, db, dc, n);
    computed.record(s);
    unimem::copy_async(c, dc, s);
    copied_out.record(s);
    s.synchronize();

    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += c[i] != 3.0f * static_cast<float>(i % 1000);
    const double gb = static_cast<double>(n * sizeof(float)) / 1e9;
    const float in_ms = unimem::elapsed_ms(start, copied_in);
    const float kernel_ms = unimem::elapsed_ms(copied_in, computed);
    const float out_ms = unimem::elapsed_ms(computed, copied_out);
    std::printf("explicit_copy: %zu floats per array on %s\n", n,
                unimem::device::current().name());
    std::printf("  host -> device  %8.3f ms  (%.1f GB/s)\n", in_ms, 2 * gb / (in_ms / 1e3));
    std::printf("  kernel          %8.3f ms  (%.1f GB/s)\n", kernel_ms, 3 * gb / (kernel_ms / 1e3));
    std::printf("  device -> host  %8.3f ms  (%.1f GB/s)\n", out_ms, gb / (out_ms / 1e3));
    if (wrong != 0) {
      std::fprintf(stderr, "explicit_copy: FAILED, %zu wrong elements\n", wrong);
      return 1;
    }
    std::printf("explicit_copy: all elements correct\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "explicit_copy: %s\n", e.what());
    return 1;
  }
}
