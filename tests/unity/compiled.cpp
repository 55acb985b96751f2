// unimem_tests_compiled's translation unit (tests/CMakeLists.txt): these test files, compiled together.
#include "../test_error.cpp"
#include "../test_device.cpp"
#include "../test_launch.cpp"
