// unimem: argument_error, what unimem throws for arguments it cannot accept (a sub-range
// outside a view, a block of size 0, a size beyond max_size(), copies of different sizes). It
// needs only <exception>: no unimem header includes <string> or <stdexcept>, which would
// otherwise add half again to the compile time of a small translation unit
// (scripts/compile_time.sh).
/// @file
/// @brief argument_error, what unimem throws for arguments it cannot accept, before any
/// runtime call. Runtime-free; needs only the standard header `<exception>`.
#pragma once

#include "config.hpp"
#include "text.hpp"

#include <cstddef>
#include <exception>

UNIMEM_BEGIN_NAMESPACE

/// @brief A call was given an argument it cannot accept; what() names the call and the values.
///
/// Thrown before anything happens: by the value types (view::subview, grid_for), by the
/// buffers and allocators for sizes beyond max_size() and for at() outside the buffer, by
/// copies between ranges of different sizes, by launches with an empty block and by advice
/// that needs a location. Derives from std::exception (not std::invalid_argument: that would
/// need `<stdexcept>`, and with it `<string>`, in every translation unit; see
/// docs/architecture.md, "Compile time"). Calls on the GPU runtime throw unimem::error.
class argument_error : public std::exception {
 public:
  /// @brief An error with the message `what` (truncated to capacity - 1 characters).
  explicit argument_error(const char* what) noexcept { text_.append(what); }

  /// @brief The message: the call and the values it refused (at most capacity - 1 characters).
  [[nodiscard]] const char* what() const noexcept override { return text_.c_str(); }

  /// @brief Appends to the message, without allocating: a C string, an integer in decimal, or
  /// a text (unimem::text or anything with c_str()). Accepts what fixed_text::append accepts
  /// (whatever its capacity).
  template <class Part, class = decltype(std::declval<detail::fixed_text<8>&>().append(
                            std::declval<const Part&>()))>
  argument_error& append(const Part& part) noexcept {
    text_.append(part);
    return *this;
  }

  /// @brief The longest message kept, including the terminating zero.
  static constexpr std::size_t capacity = 512;

 private:
  detail::fixed_text<capacity> text_;
};

UNIMEM_END_NAMESPACE
