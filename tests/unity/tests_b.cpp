// A translation unit of unimem_tests (tests/CMakeLists.txt): these test files, compiled together.
#include "../test_launch.cpp"
#include "../test_explicit.cpp"
#include "../test_managed_buffer.cpp"
#include "../test_architecture.cpp"
