// Each UNIMEM_CASE must fail to compile with one readable unimem::launch message;
// case 0 is the control that must compile. Built by ctest (tests/CMakeLists.txt).
#include <unimem/unimem.hpp>

#include <string>
#include <vector>

__global__ void takes_floats(float* out, const float* in, std::size_t n) {
  if (n > 0) out[0] = in[0];
}
__global__ void takes_int(int x) { (void)x; }
__global__ void takes_bool(bool b) { (void)b; }

int main() {
  unimem::managed_buffer<float> f;
  unimem::managed_buffer<int> i;
  const unimem::managed_buffer<float>& cf = f;
  const auto cfg = unimem::grid_for(0);
#ifndef UNIMEM_CASE
#error "define UNIMEM_CASE"
#elif UNIMEM_CASE == 0  // control: valid calls
  unimem::launch(takes_floats, cfg, f, cf, f.size());
  unimem::launch(takes_floats, cfg, f.view(), f, 0);
  unimem::launch(takes_int, cfg, 3u);
  unimem::launch(takes_bool, cfg, f.size() != 0);
  unimem::device_buffer<float> d;  // tags over device memory: nothing to place, accepted
  const unimem::device_buffer<float>& cd = d;
  unimem::launch(takes_floats, cfg, unimem::out(d), unimem::in(cd), 0);
  unimem::launch(takes_floats, cfg, unimem::inout(d, unimem::intent::map), unimem::in(d), 0);
#elif UNIMEM_CASE == 1  // wrong element type
  unimem::launch(takes_floats, cfg, i, f, 0);
#elif UNIMEM_CASE == 2  // const buffer to a non-const pointer
  unimem::launch(takes_floats, cfg, cf, f, 0);
#elif UNIMEM_CASE == 3  // temporary buffer
  unimem::launch(takes_floats, cfg, unimem::managed_buffer<float>(), f, 0);
#elif UNIMEM_CASE == 4  // wrong number of arguments
  unimem::launch(takes_floats, cfg, f, f);
#elif UNIMEM_CASE == 5  // not trivially copyable
  unimem::launch(takes_int, cfg, std::string("x"));
#elif UNIMEM_CASE == 6  // a buffer for a bool parameter (its pointer would convert to true)
  unimem::launch(takes_bool, cfg, f);
#elif UNIMEM_CASE == 7  // a tagged buffer for a bool parameter
  unimem::launch(takes_bool, cfg, unimem::in(f));
#elif UNIMEM_CASE == 8  // a std::vector: host memory the GPU cannot reach
  std::vector<float> host(4);
  unimem::launch(takes_floats, cfg, host, f, 4);
#elif UNIMEM_CASE == 9  // an access tag on pinned memory, which never moves
  unimem::pinned_buffer<float> p;
  unimem::launch(takes_floats, cfg, f, unimem::in(p), 4);
#elif UNIMEM_CASE == 10  // a tag over a device buffer is still checked: const for a writable pointer
  unimem::device_buffer<float> d;
  unimem::launch(takes_floats, cfg, unimem::in(d), f, 0);
#endif
  (void)i;
  return 0;
}
