// unimem::error and UNIMEM_CHECK (host tests: they run with or without a GPU).
#include "test_support.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>

// What a user's own raw runtime call looks like on each backend.
#if defined(UNIMEM_BACKEND_HIP)
#define RAW_SET_DEVICE hipSetDevice
#define RAW_SUCCESS hipSuccess
#else
#define RAW_SET_DEVICE cudaSetDevice
#define RAW_SUCCESS cudaSuccess
#endif

TEST(Error, IsARuntimeError) {
  static_assert(std::is_base_of<std::runtime_error, unimem::error>::value, "");
  const unimem::error e(unimem::detail::backend::error_invalid_value, "someCall(1, 2)", "file.cpp",
                        42, "doing something");
  const std::string what = e.what();
  EXPECT_EQ(e.code(), unimem::detail::backend::error_invalid_value);
  EXPECT_EQ(e.call(), "someCall(1, 2)");
  EXPECT_EQ(e.file(), "file.cpp");
  EXPECT_EQ(e.line(), 42);
  EXPECT_FALSE(e.no_gpu());
  EXPECT_NE(what.find("someCall(1, 2) failed"), std::string::npos) << what;
  EXPECT_NE(what.find(e.code_name()), std::string::npos) << what;
  EXPECT_NE(what.find("file.cpp:42"), std::string::npos) << what;
  EXPECT_NE(what.find("doing something"), std::string::npos) << what;
  EXPECT_EQ(what.find("no GPU"), std::string::npos) << what;
}

TEST(Error, CheckPassesSuccessThrough) { EXPECT_NO_THROW(UNIMEM_CHECK(RAW_SUCCESS)); }

TEST(Error, CheckThrowsForAFailedRawCall) {
  // An invalid device fails on every machine: with a GPU (invalid ordinal) and without one.
  const int line = __LINE__ + 2;
  try {
    UNIMEM_CHECK(RAW_SET_DEVICE(-1));
    FAIL() << "UNIMEM_CHECK did not throw";
  } catch (const unimem::error& e) {
    EXPECT_NE(e.code(), RAW_SUCCESS);
    EXPECT_NE(e.call().find("SetDevice(-1)"), std::string::npos) << e.call();
    EXPECT_NE(e.file().find("test_error.cpp"), std::string::npos) << e.file();
    EXPECT_EQ(e.line(), line);
    EXPECT_EQ(e.no_gpu(), !unimem_test::has_gpu());
  }
}

TEST(Error, ThrownErrorDoesNotLinger) {
  // A failed call's (non-sticky) error is cleared when unimem throws, so the next checked call
  // is not blamed for it.
  EXPECT_THROW(UNIMEM_CHECK(RAW_SET_DEVICE(-1)), unimem::error);
  if (unimem_test::has_gpu()) {
    EXPECT_NO_THROW(unimem::synchronize());
  }
}
