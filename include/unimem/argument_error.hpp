// unimem: argument_error, what the runtime-free value types throw for arguments they cannot
// accept (a sub-range outside a view, a block of size 0, a grid too large). It needs only
// <exception>: the value-type headers stay free of <string> and <stdexcept>, which would
// otherwise double the compile time of a small translation unit (see scripts/compile_time.sh).
/// @file
/// @brief argument_error, what the runtime-free value types throw for arguments they cannot
/// accept. Needs only the standard header `<exception>`.
#pragma once

#include "config.hpp"

#include <cstddef>
#include <exception>

UNIMEM_BEGIN_NAMESPACE

/// @brief A call was given an argument it cannot accept; what() names the call and the values.
///
/// Thrown by the value types (view::subview, grid_for) before anything happens. Derives from
/// std::exception; calls on the GPU runtime throw unimem::error, and buffers and copies throw
/// the standard exceptions they document (std::length_error, std::invalid_argument).
class argument_error : public std::exception {
 public:
  /// @brief An error with the message `what` (truncated to capacity - 1 characters).
  explicit argument_error(const char* what) noexcept { append(what); }

  /// @brief The message: the call and the values it refused (at most capacity - 1 characters).
  [[nodiscard]] const char* what() const noexcept override { return text_; }

  /// @brief Appends text to the message (the message is built without allocating).
  argument_error& append(const char* s) noexcept {
    while (s != nullptr && *s != '\0' && length_ + 1 < capacity) text_[length_++] = *s++;
    text_[length_] = '\0';
    return *this;
  }
  /// @brief Appends a number in decimal.
  argument_error& append(unsigned long long v) noexcept {
    char digits[24];
    std::size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    char reversed[24];
    for (std::size_t i = 0; i < n; ++i) reversed[i] = digits[n - 1 - i];
    reversed[n] = '\0';
    return append(static_cast<const char*>(reversed));
  }

  /// @brief The longest message kept, including the terminating zero.
  static constexpr std::size_t capacity = 256;

 private:
  char text_[capacity] = {};
  std::size_t length_ = 0;
};

UNIMEM_END_NAMESPACE
