# The test files unimem_tsan_tests compiles (relative to tests/): host code only.
set(unimem_tsan_sources
  test_host_access.cpp
  test_pool_fake_runtime.cpp
  test_pool_budget.cpp
  test_uvm_driver.cpp)
