// Each UNIMEM_CASE must fail to compile with one readable unimem message from the access tags
// (access.hpp); case 0 is the control that must compile: the same tags and placement calls over
// every kind of range. Built by ctest (tests/CMakeLists.txt).
#include <unimem/allocator.hpp>
#include <unimem/managed_pool.hpp>
#include <unimem/unimem.hpp>

int main() {
  unimem::managed_buffer<float> m;
  const unimem::managed_buffer<float>& cm = m;
  unimem::pool_buffer<float> p;
  unimem::managed_vector<float> v;
  const unimem::location gpu = unimem::location::device(0);
#ifndef UNIMEM_CASE
#error "define UNIMEM_CASE"
#elif UNIMEM_CASE == 0  // control: one spelling for every range
  (void)unimem::in(cm);
  (void)unimem::out(m, unimem::intent::map);
  (void)unimem::inout(p);
  (void)unimem::in(v, unimem::intent::move);
  (void)unimem::out(m.view());  // a temporary view owns nothing
  (void)unimem::prefetch(p, gpu);
  (void)unimem::advise(p, unimem::advice::read_mostly);
  (void)unimem::preferred_location(v);
  (void)unimem::ready_for_host(m.view().subview(0, 0));
  unimem::attach(cm, unimem::default_stream);
#elif UNIMEM_CASE == 1  // a temporary buffer: freed before the kernel runs
  (void)unimem::in(unimem::managed_buffer<float>());
#elif UNIMEM_CASE == 2  // a temporary pool buffer, with an intent
  (void)unimem::out(unimem::pool_buffer<float>(), unimem::intent::map);
#elif UNIMEM_CASE == 3  // out() of a const buffer
  (void)unimem::out(cm);
#elif UNIMEM_CASE == 4  // inout() of a view of const elements
  (void)unimem::inout(cm.view(), unimem::intent::move);
#elif UNIMEM_CASE == 5  // a tag over pinned memory, which never moves
  unimem::pinned_buffer<float> pinned;
  (void)unimem::in(pinned);
#endif
  (void)gpu;
  return 0;
}
