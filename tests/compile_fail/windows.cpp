// Each UNIMEM_CASE must fail to compile with one readable unimem message from windows
// (placement/window.hpp); case 0 is the control that must compile: a walk over tagged ranges of
// every kind, its windows' ranges tagged as temporaries. Built by ctest (tests/CMakeLists.txt).
#include <unimem/allocator.hpp>
#include <unimem/managed_pool.hpp>
#include <unimem/placement/window.hpp>
#include <unimem/unimem.hpp>

__global__ void compile_fail_windows_kernel(const float* a, float* b, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) b[i] = a[i];
}

int main() {
  unimem::managed_buffer<float> m;
  unimem::pool_buffer<float> p;
  unimem::managed_vector<float> v;
  unimem::stream s;
#ifndef UNIMEM_CASE
#error "define UNIMEM_CASE"
#elif UNIMEM_CASE == 0  // control
  unimem::windows walk(s, unimem::in(m), unimem::out(p), unimem::inout(v));
  for (const unimem::window& w : walk) {
    unimem::launch(compile_fail_windows_kernel, unimem::grid_for(w.size()).on(s), unimem::in(w(m)),
                   unimem::out(w(p)), w.size());
  }
  for (const auto& w : walk.backward()) (void)w.size();
#elif UNIMEM_CASE == 1  // a range without its access tag
  unimem::windows walk(s, unimem::in(m), p);
#elif UNIMEM_CASE == 2  // a temporary stream: destroyed before the walk's work
  unimem::windows walk(unimem::stream(), unimem::in(m));
#endif
  return 0;
}
