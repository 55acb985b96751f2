// A temporary unimem::stream must not become a stream_ref that outlives it: the stream is
// destroyed at the end of the statement and the runtime reuses its handle for the next stream.
// Each UNIMEM_CASE must fail to compile with unimem's message; case 0 must compile.
#include <unimem/unimem.hpp>

__global__ void stream_lifetime_kernel(int* p) {
  if (p != nullptr) *p = 1;
}

int main() {
  auto cfg = unimem::grid_for(0);
#ifndef UNIMEM_CASE
#error "define UNIMEM_CASE"
#elif UNIMEM_CASE == 0  // control: named streams are fine
  unimem::stream s;
  const auto on_s = cfg.on(s);
  const unimem::launch_config direct(unimem::dims(1), unimem::dims(1), 0, s);
  const auto ft = unimem::first_touch(unimem::location::device(0), s);
  cfg.stream = s;
  unimem::launch(stream_lifetime_kernel, on_s, nullptr);
  (void)direct;
  (void)ft;
#elif UNIMEM_CASE == 1  // launch_config::on
  const auto kept = cfg.on(unimem::stream());
  unimem::launch(stream_lifetime_kernel, kept, nullptr);
#elif UNIMEM_CASE == 2  // launch_config's constructor
  const unimem::launch_config kept(unimem::dims(1), unimem::dims(1), 0, unimem::stream());
  (void)kept;
#elif UNIMEM_CASE == 3  // first_touch
  const auto ft = unimem::first_touch(unimem::location::device(0), unimem::stream());
  (void)ft;
#elif UNIMEM_CASE == 4  // assigning the member
  cfg.stream = unimem::stream();
#elif UNIMEM_CASE == 5  // ref() of a temporary
  const unimem::stream_ref r = unimem::stream().ref();
  (void)r;
#endif
  (void)cfg;
  return 0;
}
