/// @file
/// @brief argument_error, what unimem throws for arguments it cannot accept, before any
/// runtime call: as unimem::length_error, unimem::out_of_range or unimem::invalid_argument,
/// each also the standard exception of the same name. Runtime-free.
#pragma once

#include "config.hpp"
#include "detail/fixed_text.hpp"

#include <stdexcept>

UNIMEM_BEGIN_NAMESPACE

/// @brief A call was given an argument it cannot accept; what() names the call and the values.
///
/// Thrown before anything happens: by the value types (view::subview, grid_for), by the
/// buffers and allocators for sizes beyond max_size() and for at() outside the buffer, by
/// copies between ranges of different sizes, by launches with an empty block and by advice
/// that needs a location. Calls on the GPU runtime throw unimem::error.
///
/// unimem::argument_error is the interface every refused argument carries, beside the
/// standard logic error that fits, which each thrown object also is:
/// - unimem::length_error (a `std::length_error`): a size beyond a limit (max_size(), the
///   grid's largest extent);
/// - unimem::out_of_range (a `std::out_of_range`): an index or sub-range outside a buffer or
///   view (at(), subview);
/// - unimem::invalid_argument (a `std::invalid_argument`): every other refused value (an
///   empty block, ranges of different sizes, advice without a location).
/// So `catch (const unimem::argument_error&)`, `catch (const std::logic_error&)` and the
/// three standard names each catch what they name. (argument_error cannot itself derive from
/// std::logic_error: the three classes would then hold two, and `catch (const
/// std::logic_error&)` would match none of them.) Catch it by reference.
class argument_error {
 public:
  /// @brief The message: the call and the values it refused.
  [[nodiscard]] virtual const char* what() const noexcept = 0;

 protected:
  argument_error() noexcept = default;
  /// @brief Copyable, as exceptions must be (the derived std classes copy their parts).
  argument_error(const argument_error&) noexcept = default;
  /// @brief Copy assignment, as the std exception classes have.
  argument_error& operator=(const argument_error&) noexcept = default;
  virtual ~argument_error() = default;
};

/// @brief A size beyond a limit: a `std::length_error` and a unimem::argument_error.
class length_error : public std::length_error, public argument_error {
 public:
  /// @brief An error with the message `what`.
  explicit length_error(const char* what) : std::length_error(what) {}
  /// @brief The message.
  [[nodiscard]] const char* what() const noexcept override { return std::length_error::what(); }
};

/// @brief An index or sub-range outside a buffer or view: a `std::out_of_range` and a
/// unimem::argument_error.
class out_of_range : public std::out_of_range, public argument_error {
 public:
  /// @brief An error with the message `what`.
  explicit out_of_range(const char* what) : std::out_of_range(what) {}
  /// @brief The message.
  [[nodiscard]] const char* what() const noexcept override { return std::out_of_range::what(); }
};

/// @brief Any other argument unimem cannot accept: a `std::invalid_argument` and a
/// unimem::argument_error.
class invalid_argument : public std::invalid_argument, public argument_error {
 public:
  /// @brief An error with the message `what`.
  explicit invalid_argument(const char* what) : std::invalid_argument(what) {}
  /// @brief The message.
  [[nodiscard]] const char* what() const noexcept override {
    return std::invalid_argument::what();
  }
};

namespace detail {

/// A refused argument's message, composed without allocating (cut at 511 characters):
/// `throw_refused<unimem::out_of_range>(refusal("unimem::view::subview: ").append(n))`.
using refusal = fixed_text<512>;

/// Throws Error (length_error, out_of_range or invalid_argument) with the message; cold, never
/// inlined into the caller's fast path.
template <class Error>
[[noreturn]] UNIMEM_DETAIL_COLD void throw_refused(const refusal& message) {
  throw Error(message.c_str());
}

}  // namespace detail

UNIMEM_END_NAMESPACE
