// Each UNIMEM_CASE must fail to compile with one readable unimem message from unimem/dlpack.hpp;
// case 0 is the control that must compile. Built by ctest (tests/CMakeLists.txt).
#include <unimem/dlpack.hpp>
#include <unimem/unimem.hpp>

#include <utility>

struct not_a_number {
  int a, b;
};

int main() {
  unimem::managed_buffer<float> b;
#ifndef UNIMEM_CASE
#error "define UNIMEM_CASE"
#elif UNIMEM_CASE == 0  // control: element types DLPack describes, a buffer moved in
  static_assert(unimem::dlpack::dtype_of<const unsigned char>().bits == 8, "");
  DLManagedTensorVersioned* t = unimem::dlpack::to_dlpack(std::move(b));
  unimem::dlpack::tensor<float> imported(t);
#elif UNIMEM_CASE == 1  // an element type DLPack cannot describe
  (void)unimem::dlpack::dtype_of<long double>();
#elif UNIMEM_CASE == 2  // a struct as a tensor's element type
  unimem::dlpack::tensor<not_a_number> imported(static_cast<DLManagedTensor*>(nullptr));
#elif UNIMEM_CASE == 3  // a buffer the caller still owns
  (void)unimem::dlpack::to_dlpack(b);
#endif
  return 0;
}
