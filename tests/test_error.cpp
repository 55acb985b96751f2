// unimem::error and UNIMEM_CHECK (host tests: they run with or without a GPU).
#include "test_support.hpp"

#include <cstdint>
#include <limits>
#include <new>
#include <sstream>
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

// The hierarchy: every catch clause a user writes catches what it names, and only once.
template <class Thrown, class Handler>
constexpr bool catchable_as = std::is_base_of<Handler, Thrown>::value &&
                              std::is_convertible<const Thrown*, const Handler*>::value;
// runtime failures
static_assert(catchable_as<unimem::runtime_error, unimem::error>, "");
static_assert(catchable_as<unimem::runtime_error, std::runtime_error>, "");
static_assert(catchable_as<unimem::runtime_error, std::exception>, "");
static_assert(!catchable_as<unimem::runtime_error, std::bad_alloc>, "");
static_assert(!catchable_as<unimem::runtime_error, std::logic_error>, "");
// out of memory
static_assert(catchable_as<unimem::out_of_memory, unimem::error>, "");
static_assert(catchable_as<unimem::out_of_memory, std::bad_alloc>, "");
static_assert(catchable_as<unimem::out_of_memory, std::exception>, "");
static_assert(!catchable_as<unimem::out_of_memory, std::runtime_error>, "");
// refused arguments
static_assert(catchable_as<unimem::length_error, unimem::argument_error>, "");
static_assert(catchable_as<unimem::length_error, std::length_error>, "");
static_assert(catchable_as<unimem::out_of_range, unimem::argument_error>, "");
static_assert(catchable_as<unimem::out_of_range, std::out_of_range>, "");
static_assert(catchable_as<unimem::invalid_argument, unimem::argument_error>, "");
static_assert(catchable_as<unimem::invalid_argument, std::invalid_argument>, "");
static_assert(catchable_as<unimem::length_error, std::logic_error>, "");
static_assert(catchable_as<unimem::out_of_range, std::logic_error>, "");
static_assert(catchable_as<unimem::invalid_argument, std::logic_error>, "");
static_assert(catchable_as<unimem::length_error, std::exception>, "");
static_assert(catchable_as<unimem::out_of_range, std::exception>, "");
static_assert(catchable_as<unimem::invalid_argument, std::exception>, "");
static_assert(!catchable_as<unimem::length_error, unimem::error>, "");
static_assert(!catchable_as<unimem::invalid_argument, std::runtime_error>, "");
// the interfaces are not objects of their own: they cannot be thrown or caught by value
static_assert(std::is_abstract<unimem::error>::value, "");
static_assert(std::is_abstract<unimem::argument_error>::value, "");
// copying never throws (throw and std::exception_ptr copy), and the objects stay small
static_assert(std::is_nothrow_copy_constructible<unimem::runtime_error>::value, "");
static_assert(std::is_nothrow_copy_constructible<unimem::out_of_memory>::value, "");
static_assert(std::is_nothrow_copy_constructible<unimem::length_error>::value, "");
// (the call and the file each kept as the standard keeps a message: two std::runtime_error)
static_assert(sizeof(unimem::runtime_error) <= 3 * sizeof(std::runtime_error) + 4 * sizeof(void*),
              "");

namespace {
// Which of the handlers users write catch `throw_it`'s exception, as a string of letters:
// u unimem::error, r std::runtime_error, b std::bad_alloc, a unimem::argument_error,
// l std::logic_error, e std::exception. Each handler is tried on its own.
template <class Throw>
std::string caught_by(Throw throw_it) {
  std::string s;
  try { throw_it(); } catch (const unimem::error&) { s += 'u'; } catch (...) {}
  try { throw_it(); } catch (const std::runtime_error&) { s += 'r'; } catch (...) {}
  try { throw_it(); } catch (const std::bad_alloc&) { s += 'b'; } catch (...) {}
  try { throw_it(); } catch (const unimem::argument_error&) { s += 'a'; } catch (...) {}
  try { throw_it(); } catch (const std::logic_error&) { s += 'l'; } catch (...) {}
  try { throw_it(); } catch (const std::exception&) { s += 'e'; } catch (...) {}
  return s;
}
}  // namespace

TEST(Error, IsARuntimeError) {
  const unimem::runtime_error e(unimem::detail::backend::error_invalid_value, "someCall(1, 2)",
                                "file.cpp", 42, "doing something");
  const unimem::error& u = e;
  const std::string what = u.what();
  EXPECT_STREQ(u.what(), static_cast<const std::runtime_error&>(e).what());
  EXPECT_EQ(u.code(), unimem::detail::backend::error_invalid_value);
  EXPECT_STREQ(u.call(), "someCall(1, 2)");
  EXPECT_STREQ(u.file(), "file.cpp");
  EXPECT_EQ(u.line(), 42);
  EXPECT_FALSE(u.no_gpu());
  EXPECT_NE(what.find("someCall(1, 2) failed"), std::string::npos) << what;
  EXPECT_NE(what.find(e.code_name()), std::string::npos) << what;
  EXPECT_NE(what.find("file.cpp:42"), std::string::npos) << what;
  EXPECT_NE(what.find("doing something"), std::string::npos) << what;
  EXPECT_EQ(what.find("no GPU"), std::string::npos) << what;
}

// Each class of error, thrown as unimem throws it, is caught by exactly the handlers it names.
TEST(Error, EachClassIsCaughtByTheHandlersItNames) {
  const unimem::call_site here = unimem::call_site::current();
  // a failed runtime call
  EXPECT_EQ(caught_by([&] {
              unimem::detail::fail(unimem::detail::backend::error_invalid_value, "f()", here, "");
            }),
            "ure");
  // the runtime's out of memory
  EXPECT_EQ(caught_by([&] {
              unimem::detail::fail(unimem::detail::backend::error_out_of_memory, "f()", here, "");
            }),
            "ube");
  // a size beyond max_size(), an index outside, an empty block
  EXPECT_EQ(caught_by([] { unimem::managed_buffer<float> b(std::numeric_limits<std::size_t>::max() / 2); }),
            "ale");
  EXPECT_EQ(caught_by([] { (void)unimem::view<int>(nullptr, 3).subview(2, 5); }), "ale");
  EXPECT_EQ(caught_by([] { (void)unimem::grid_for(100, 0); }), "ale");
}

// The standard names, one per kind of refused argument.
TEST(Error, RefusedArgumentsAreTheStandardLogicErrorThatFits) {
  EXPECT_THROW(unimem::managed_buffer<float> b(std::numeric_limits<std::size_t>::max() / 2),
               std::length_error);
  EXPECT_THROW(unimem::device_buffer<double> b(std::numeric_limits<std::size_t>::max() / 4),
               std::length_error);
  EXPECT_THROW((void)unimem::view<int>(nullptr, 3).subview(4), std::out_of_range);
  EXPECT_THROW((void)unimem::grid_for(100, 0), std::invalid_argument);
  EXPECT_THROW((void)unimem::grid_for(std::uint64_t{1} << 62, 32), std::length_error);
  try {
    (void)unimem::view<int>(nullptr, 3).subview(2, 5);
    FAIL() << "subview did not throw";
  } catch (const unimem::argument_error& e) {
    EXPECT_STREQ(e.what(), "unimem::view::subview: [2, 2 + 5) is outside a view of 3 elements");
  }
}

// Out of memory is what the standard's allocators throw, and a unimem::error with the status.
TEST(Error, OutOfMemoryIsABadAllocWithTheStatus) {
  try {
    unimem::detail::fail(unimem::detail::backend::error_out_of_memory, "someAlloc(n)",
                         unimem::call_site::current(), "managed_buffer: 5 bytes");
    FAIL() << "fail did not throw";
  } catch (const std::bad_alloc& b) {
    const auto* e = dynamic_cast<const unimem::error*>(&b);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->code(), unimem::detail::backend::error_out_of_memory);
    EXPECT_STREQ(e->call(), "someAlloc(n)");
    EXPECT_STREQ(b.what(), e->what());
    EXPECT_NE(std::string(b.what()).find("managed_buffer: 5 bytes"), std::string::npos)
        << b.what();
  }
}

// Copies share the message (as std::runtime_error's do) and keep parts of any length; the
// message itself is cut at 1023 characters, never overrun.
TEST(Error, CopiesWithoutThrowingAndKeepsLongParts) {
  const std::string long_call(5000, 'c');
  const std::string long_file(5000, 'f');
  const unimem::runtime_error e(unimem::detail::backend::error_invalid_value, long_call.c_str(),
                                long_file.c_str(), 7, long_call.c_str());
  const unimem::runtime_error copy = e;
  EXPECT_STREQ(copy.what(), e.what());
  EXPECT_EQ(std::string(copy.call()), long_call);
  EXPECT_EQ(std::string(copy.file()), long_file);
  EXPECT_EQ(std::string(e.what()).size(), 1023u);
  EXPECT_EQ(std::string(e.what()).rfind("unimem: ", 0), 0u);
  unimem::out_of_memory m(unimem::detail::backend::error_out_of_memory, "a()", "b.cpp", 1);
  const unimem::out_of_memory m2 = m;
  m = m2;  // assignment shares too
  EXPECT_STREQ(m.what(), m2.what());
  EXPECT_STREQ(m.call(), "a()");

  unimem::detail::refusal r("unimem::x: ");
  r.append(std::numeric_limits<long long>::min()).append(" ").append(std::uint64_t{18446744073709551615u});
  EXPECT_STREQ(r.c_str(), "unimem::x: -9223372036854775808 18446744073709551615");
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
