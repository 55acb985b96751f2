// A translation unit of unimem_tests (tests/CMakeLists.txt): these test files, compiled together.
#include "../test_managed_pool.cpp"
#include "../test_dlpack.cpp"
#include "../test_multi_gpu.cpp"
#include "../test_reliability.cpp"
#include "../test_pool_fake_runtime.cpp"
#include "../test_pool_budget.cpp"
