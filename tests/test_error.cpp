// unimem::error and UNIMEM_CHECK (host tests: they run with or without a GPU).
#include "test_support.hpp"

#include <cstdint>
#include <limits>
#include <sstream>
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
  static_assert(std::is_base_of<std::exception, unimem::error>::value, "");
  const unimem::error e(unimem::detail::backend::error_invalid_value, "someCall(1, 2)", "file.cpp",
                        42, "doing something");
  const std::string what = e.what();
  EXPECT_EQ(e.code(), unimem::detail::backend::error_invalid_value);
  EXPECT_STREQ(e.call(), "someCall(1, 2)");
  EXPECT_STREQ(e.file(), "file.cpp");
  EXPECT_EQ(e.line(), 42);
  EXPECT_FALSE(e.no_gpu());
  EXPECT_NE(what.find("someCall(1, 2) failed"), std::string::npos) << what;
  EXPECT_NE(what.find(e.code_name()), std::string::npos) << what;
  EXPECT_NE(what.find("file.cpp:42"), std::string::npos) << what;
  EXPECT_NE(what.find("doing something"), std::string::npos) << what;
  EXPECT_EQ(what.find("no GPU"), std::string::npos) << what;
}

// An error carries its message in the object: copying it (as throw and std::exception_ptr do)
// never allocates or throws, and over-long parts are cut, never overrun.
TEST(Error, CopiesWithoutThrowingAndCutsLongParts) {
  static_assert(std::is_nothrow_copy_constructible<unimem::error>::value, "");
  static_assert(std::is_nothrow_copy_constructible<unimem::argument_error>::value, "");
  const std::string long_call(5000, 'c');
  const std::string long_file(5000, 'f');
  const unimem::error e(unimem::detail::backend::error_invalid_value, long_call.c_str(),
                        long_file.c_str(), 7, long_call.c_str());
  const unimem::error copy = e;
  EXPECT_STREQ(copy.what(), e.what());
  EXPECT_EQ(std::string(e.call()), long_call.substr(0, unimem::error::part_capacity - 1));
  EXPECT_EQ(std::string(e.file()), long_file.substr(0, unimem::error::part_capacity - 1));
  EXPECT_EQ(std::string(e.what()).size(), unimem::error::message_capacity - 1);
  EXPECT_EQ(std::string(e.what()).rfind("unimem: ", 0), 0u);

  unimem::argument_error a("unimem::x: ");
  a.append(std::numeric_limits<long long>::min()).append(" ").append(std::uint64_t{18446744073709551615u});
  EXPECT_STREQ(a.what(), "unimem::x: -9223372036854775808 18446744073709551615");
  for (int i = 0; i < 100; ++i) a.append("0123456789");
  EXPECT_EQ(std::string(a.what()).size(), unimem::argument_error::capacity - 1);
}

// unimem::text, what device names and the report come as (no <string> in unimem's headers).
TEST(Text, BehavesLikeAStringWhereUsersNeedOne) {
  unimem::text empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_STREQ(empty.c_str(), "");
  unimem::text t("device ");
  t.append(3).append(": ").append(std::size_t{80}) += " GiB";
  EXPECT_EQ(t, "device 3: 80 GiB");
  EXPECT_NE(t, "device 3");
  EXPECT_EQ(t.size(), 16u);
  EXPECT_TRUE(t.contains("80 GiB"));
  EXPECT_TRUE(t.starts_with("device 3"));
  EXPECT_FALSE(t.starts_with("device 30"));
  EXPECT_FALSE(t.contains("81"));
  const std::string s = t;  // converts where std::string is expected
  EXPECT_EQ(s, "device 3: 80 GiB");
  EXPECT_EQ(t, s);
  EXPECT_EQ(s, t);
  std::ostringstream out;
  out << t;
  EXPECT_EQ(out.str(), s);
  unimem::text moved = std::move(t);
  EXPECT_EQ(moved, s);
  EXPECT_TRUE(t.empty());  // NOLINT(bugprone-use-after-move): a moved-from text is empty
  unimem::text copy = moved;
  copy += '!';
  EXPECT_EQ(copy, s + "!");
  EXPECT_EQ(moved, s);
  unimem::text grown;  // grows through many reallocations
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    grown.append("ab");
    expected += "ab";
  }
  EXPECT_EQ(grown, expected);
  EXPECT_EQ(unimem::to_string(unimem::location::device(12)), "device 12");
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
    EXPECT_NE(std::string(e.call()).find("SetDevice(-1)"), std::string::npos) << e.call();
    EXPECT_NE(std::string(e.file()).find("test_error.cpp"), std::string::npos) << e.file();
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
