// unimem: text, the string type of unimem's answers (a device's name, the report), and the
// fixed-capacity message the exceptions are built in. Runtime-free, and free of <string>:
// <string> (and <stdexcept>, which includes it) costs a small CUDA translation unit about half
// its compile time again under nvcc (scripts/compile_time.sh), so no unimem header includes it.
/// @file
/// @brief unimem::text, an owning, NUL-terminated string that converts to std::string (or any
/// string type) where you need one. Runtime-free; needs no `<string>`.
#pragma once

#include "config.hpp"

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

/// The integers the message builders write in decimal (bool and char are not numbers there).
template <class T>
constexpr bool decimal_integer_v = std::is_integral<T>::value && !std::is_same<T, bool>::value &&
                                   !std::is_same<T, char>::value;

/// Writes v (negated when `negative`) in decimal, NUL-terminated, into digits[24]. Out of line:
/// messages and reports are cold paths, and one copy per program compiles faster than one per
/// call site.
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

/// The decimal digits of an integer, NUL-terminated (no allocation).
struct decimal {
  char digits[24];

  template <class Integer, std::enable_if_t<std::is_integral<Integer>::value, int> = 0>
  explicit decimal(Integer value) noexcept {
    if constexpr (std::is_signed<Integer>::value) {
      format_decimal(digits, value < 0,
                     value < 0 ? 0ull - static_cast<unsigned long long>(value)
                               : static_cast<unsigned long long>(value));
    } else {
      format_decimal(digits, false, static_cast<unsigned long long>(value));
    }
  }
  const char* c_str() const noexcept { return digits; }
};

/// Appends the C string s to the `length` characters at out, keeping at most capacity - 1 and
/// the terminating zero. One out-of-line copy serves every fixed_text<N>.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE void append_cut(char* out, std::size_t& length,
                                                             std::size_t capacity,
                                                             const char* s) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  while (s != nullptr && *s != '\0' && length + 1 < capacity) out[length++] = *s++;
  out[length] = '\0';
}
#else
    ;
#endif

/// A message of at most N - 1 characters built without allocating (exceptions carry one, so
/// that copying them never throws); longer text is cut.
template <std::size_t N>
class fixed_text {
 public:
  fixed_text() noexcept = default;
  explicit fixed_text(const char* s) noexcept { append(s); }

  fixed_text& append(const char* s) noexcept {
    append_cut(text_, length_, N, s);
    return *this;
  }
  template <class Integer, std::enable_if_t<decimal_integer_v<Integer>, int> = 0>
  fixed_text& append(Integer v) noexcept {
    return append(decimal(v).c_str());
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

/// @brief An owning, NUL-terminated string: what unimem's queries return (device::name(),
/// report(), runtime_version(), ...).
///
/// It converts implicitly to std::string, std::string_view or any string type constructible
/// from (const char*, size_t), compares by content with C strings and string types, and
/// prints with `<<`; c_str() feeds printf. unimem's headers do not include `<string>`
/// (see docs/architecture.md, "Compile time"): this type is how they hand out text.
/// @code
///   std::printf("%s\n", unimem::device(0).name().c_str());
///   std::string name = unimem::device(0).name();
///   if (unimem::device(0).name() == "NVIDIA H200") { ... }
/// @endcode
class text {
 public:
  /// @brief Size and position type.
  using size_type = std::size_t;
  /// @brief Character type.
  using value_type = char;
  /// @brief Iterator over the characters (read-only).
  using const_iterator = const char*;
  /// @brief Iterator over the characters (read-only).
  using iterator = const char*;

  /// @brief The empty text.
  text() noexcept = default;
  /// @brief A copy of the C string `s` (nullptr gives the empty text).
  text(const char* s) : text(s, s != nullptr ? std::strlen(s) : 0) {}  // NOLINT: like std::string
  /// @brief A copy of the n characters at s.
  text(const char* s, size_type n) { append(s, n); }
  /// @brief A copy.
  text(const text& other) : text(other.data(), other.size()) {}
  /// @brief Takes other's characters; other is left empty.
  text(text&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  /// @brief Copy assignment.
  text& operator=(const text& other) {
    if (this != &other) text(other).swap(*this);
    return *this;
  }
  /// @brief Move assignment; other is left empty.
  text& operator=(text&& other) noexcept {
    text(std::move(other)).swap(*this);
    return *this;
  }
  /// @brief Frees the characters.
  ~text() { delete[] data_; }

  /// @brief The characters, NUL-terminated (never nullptr).
  [[nodiscard]] const char* c_str() const noexcept { return data_ != nullptr ? data_ : ""; }
  /// @brief The characters, NUL-terminated (never nullptr).
  [[nodiscard]] const char* data() const noexcept { return c_str(); }
  /// @brief The number of characters.
  [[nodiscard]] size_type size() const noexcept { return size_; }
  /// @brief The number of characters.
  [[nodiscard]] size_type length() const noexcept { return size_; }
  /// @brief True when there are no characters.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// @brief The first character.
  [[nodiscard]] const_iterator begin() const noexcept { return c_str(); }
  /// @brief Past the last character.
  [[nodiscard]] const_iterator end() const noexcept { return c_str() + size_; }
  /// @brief The character at i (unchecked).
  [[nodiscard]] char operator[](size_type i) const noexcept { return c_str()[i]; }
  /// @brief True when the text begins with `s`.
  [[nodiscard]] bool starts_with(const char* s) const noexcept {
    return s != nullptr && std::strncmp(c_str(), s, std::strlen(s)) == 0;
  }
  /// @brief True when `s` occurs in the text.
  [[nodiscard]] bool contains(const char* s) const noexcept {
    return s != nullptr && std::strstr(c_str(), s) != nullptr;
  }

  /// @brief Appends n characters.
  UNIMEM_DETAIL_NOINLINE text& append(const char* s, size_type n) {
    if (n == 0) return *this;
    reserve(size_ + n);
    std::memcpy(data_ + size_, s, n);
    size_ += n;
    data_[size_] = '\0';
    return *this;
  }
  /// @brief Appends a C string.
  text& append(const char* s) { return s != nullptr ? append(s, std::strlen(s)) : *this; }
  /// @brief Appends another text.
  text& append(const text& t) { return append(t.data(), t.size()); }
  /// @brief Appends an integer in decimal.
  template <class Integer, std::enable_if_t<detail::decimal_integer_v<Integer>, int> = 0>
  text& append(Integer v) {
    return append(detail::decimal(v).c_str());
  }
  /// @brief Appends (a C string, a text, an integer in decimal).
  template <class T>
  text& operator+=(const T& v) {
    return append(v);
  }
  /// @brief Appends one character.
  text& operator+=(char c) { return append(&c, 1); }

  /// @brief Converts to std::string, std::string_view or any string type constructible from
  /// (const char*, size_t).
  template <class String,
            std::enable_if_t<!std::is_same<String, text>::value && !std::is_arithmetic<String>::value &&
                                 std::is_constructible<String, const char*, size_type>::value,
                             int> = 0>
  operator String() const {  // NOLINT: implicit on purpose, where std::string is expected
    return String(data(), size());
  }

  /// @brief Swaps the characters of two texts.
  void swap(text& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  /// @brief Same characters.
  friend bool operator==(const text& a, const text& b) noexcept {
    return a.size_ == b.size_ && std::memcmp(a.c_str(), b.c_str(), a.size_) == 0;
  }
  /// @brief Same characters as the C string.
  friend bool operator==(const text& a, const char* b) noexcept {
    return b != nullptr && std::strlen(b) == a.size_ && std::memcmp(a.c_str(), b, a.size_) == 0;
  }
  /// @brief Same characters as the C string.
  friend bool operator==(const char* a, const text& b) noexcept { return b == a; }
  /// @brief Same characters as a string type (std::string, std::string_view, ...).
  template <class String, class = decltype(std::declval<const String&>().data()),
            class = decltype(std::declval<const String&>().size()),
            std::enable_if_t<!std::is_same<String, text>::value, int> = 0>
  friend bool operator==(const text& a, const String& b) noexcept {
    return static_cast<size_type>(b.size()) == a.size_ &&
           std::memcmp(a.c_str(), b.data(), a.size_) == 0;
  }
  /// @brief Same characters as a string type.
  template <class String, class = decltype(std::declval<const String&>().data()),
            class = decltype(std::declval<const String&>().size()),
            std::enable_if_t<!std::is_same<String, text>::value, int> = 0>
  friend bool operator==(const String& a, const text& b) noexcept {
    return b == a;
  }
  /// @brief Different characters.
  template <class Other>
  friend auto operator!=(const text& a, const Other& b) noexcept -> decltype(a == b) {
    return !(a == b);
  }
  /// @brief Different characters.
  template <class Other, std::enable_if_t<!std::is_same<Other, text>::value, int> = 0>
  friend auto operator!=(const Other& a, const text& b) noexcept -> decltype(b == a) {
    return !(b == a);
  }

  /// @brief Writes the characters to an output stream (std::ostream or any type with
  /// `<<` for const char*).
  template <class Stream, class = decltype(std::declval<Stream&>() << "")>
  friend Stream& operator<<(Stream& out, const text& t) {
    out << t.c_str();
    return out;
  }

 private:
  void reserve(size_type n) {
    if (n < capacity_) return;
    size_type grown = capacity_ * 2 > n + 1 ? capacity_ * 2 : n + 1;
    if (grown < 32) grown = 32;
    char* fresh = new char[grown];
    if (size_ != 0) std::memcpy(fresh, data_, size_);
    fresh[size_] = '\0';
    delete[] data_;
    data_ = fresh;
    capacity_ = grown;
  }

  char* data_ = nullptr;
  size_type size_ = 0;
  size_type capacity_ = 0;
};

UNIMEM_END_NAMESPACE
