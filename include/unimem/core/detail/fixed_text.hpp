// unimem: fixed_text, messages composed without allocating. Runtime-free.
#pragma once

#include "../config.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

/// The integers the message builders write in decimal (bool and char are not numbers there).
template <class T>
constexpr bool decimal_integer_v = std::is_integral<T>::value && !std::is_same<T, bool>::value &&
                                   !std::is_same<T, char>::value;

/// Writes v (negated when `negative`) in decimal, NUL-terminated, into digits[24]; out of line:
/// messages are cold paths, and one copy per program compiles faster than one per call site.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE void format_decimal(char* digits, bool negative,
                                                                 unsigned long long v) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  char reversed[24];
  std::size_t n = 0;
  do {
    reversed[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  std::size_t k = 0;
  if (negative) digits[k++] = '-';
  while (n != 0) digits[k++] = reversed[--n];
  digits[k] = '\0';
}
#else
    ;
#endif

/// Appends s to the `length` characters at out, cut at capacity - 1; serves every fixed_text<N>.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE void append_cut(
    char* out, std::size_t& length, std::size_t capacity, const char* s) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  while (s != nullptr && *s != '\0' && length + 1 < capacity) out[length++] = *s++;
  out[length] = '\0';
}
#else
    ;
#endif

/// At most N - 1 characters, longer text cut; no allocation (copying an exception never throws).
template <std::size_t N>
class fixed_text {
 public:
  fixed_text() noexcept = default;
  explicit fixed_text(const char* s) noexcept { append(s); }

  fixed_text& append(const char* s) noexcept {
    append_cut(text_, length_, N, s);
    return *this;
  }
  /// Appends an integer in decimal.
  template <class Integer, std::enable_if_t<decimal_integer_v<Integer>, int> = 0>
  fixed_text& append(Integer v) noexcept {
    const auto magnitude = static_cast<unsigned long long>(v);
    char digits[24];
    if constexpr (std::is_signed<Integer>::value) {
      format_decimal(digits, v < 0, v < 0 ? 0ull - magnitude : magnitude);
    } else {
      format_decimal(digits, false, magnitude);
    }
    return append(digits);
  }
  /// Appends anything with c_str() (text, another fixed_text).
  template <class Text, class = decltype(std::declval<const Text&>().c_str())>
  fixed_text& append(const Text& t) noexcept {
    return append(static_cast<const char*>(t.c_str()));
  }

  const char* c_str() const noexcept { return text_; }
  std::size_t size() const noexcept { return length_; }
  bool empty() const noexcept { return length_ == 0; }
  static constexpr std::size_t capacity = N;

 private:
  char text_[N] = {};
  std::size_t length_ = 0;
};

}  // namespace detail

UNIMEM_END_NAMESPACE
