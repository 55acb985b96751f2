// Compiled by a plain C++ compiler: no kernels and no launch(), but managed memory and the
// device API work. Exits 0 on success, 1 on a wrong result.
#include <unimem/unimem.hpp>

#include <cstdio>
#include <numeric>
#include <string>

#if defined(__CUDACC__) || defined(__HIP__) || defined(__HIPCC__)
#error "this file must be compiled by a plain C++ compiler"
#endif

int main() {
  std::printf("%s", unimem::report().c_str());
  if (unimem::device_count() == 0) {
    try {
      unimem::managed_buffer<int> b(16);
      std::printf("FAILED: a managed_buffer was allocated without a GPU\n");
      return 1;
    } catch (const unimem::error& e) {
      const bool ok = std::string(e.what()).find("no GPU was found") != std::string::npos;
      std::printf("%s: no GPU, and the buffer reports it: %s\n", ok ? "OK" : "FAILED", e.what());
      return ok ? 0 : 1;
    }
  }
  unimem::managed_buffer<long> b(1000);
  std::iota(b.begin(), b.end(), 1L);
  const long sum = std::accumulate(b.begin(), b.end(), 0L);
  const unimem::device d = unimem::device::current();
  d.synchronize();
  const bool ok = sum == 500500L && d.name()[0] != '\0' && d.warp_size() >= 32;
  std::printf("%s: sum %ld on %s (%s)\n", ok ? "OK" : "FAILED", sum, d.name(), d.architecture());
  return ok ? 0 : 1;
}
