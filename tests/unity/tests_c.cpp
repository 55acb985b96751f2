// A translation unit of unimem_tests (tests/CMakeLists.txt): these test files, compiled together.
#include "../test_migration.cpp"
#include "../test_host_access.cpp"
#include "../test_uvm_driver.cpp"
#include "../test_regressions.cpp"
#include "../test_window.cpp"
