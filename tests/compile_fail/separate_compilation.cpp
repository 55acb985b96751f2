// <unimem/compiled.hpp> defines unimem's out-of-line functions for separate compilation. Used
// wrongly it must stop with its own message: without UNIMEM_SEPARATE_COMPILATION (case 1), or
// after another unimem header, whose out-of-line functions were then read without their
// definitions (case 2). Case 0, the right use, compiles and links alone: the definitions and a
// program that uses them.
#ifndef UNIMEM_CASE
#error "define UNIMEM_CASE"
#elif UNIMEM_CASE == 0
#define UNIMEM_SEPARATE_COMPILATION 1
#include <unimem/compiled.hpp>
#elif UNIMEM_CASE == 1
#include <unimem/compiled.hpp>
#elif UNIMEM_CASE == 2
#define UNIMEM_SEPARATE_COMPILATION 1
#include <unimem/view.hpp>
#include <unimem/compiled.hpp>
#endif

#include <cstdio>

int main() {
  std::printf("%s\n", unimem::report().c_str());
  return 0;
}
