// Compiled with -std=c++14 by ctest (compile.cxx14_is_refused): unimem must stop with its own
// one-line message, not a wall of template errors.
#include <unimem/unimem.hpp>

int main() { return 0; }
