// A translation unit of unimem_tests (tests/CMakeLists.txt): these test files, compiled together.
#include "../test_error.cpp"
#include "../test_device.cpp"
#include "../test_no_gpu.cpp"
#include "../test_view.cpp"
#include "../test_launch_config.cpp"
#include "../test_warp.cpp"
