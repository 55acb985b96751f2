/// @file
/// @brief Runtime-free: argument_error and its three exceptions, thrown before any runtime call.
#pragma once

#include "config.hpp"
#include "detail/fixed_text.hpp"

#include <stdexcept>

UNIMEM_BEGIN_NAMESPACE

/// @brief A call was given an argument it cannot accept (before anything happened; the GPU
/// runtime's failures throw unimem::error); what() names the call and the values.
///
/// Each thrown object is also the standard logic error that fits: unimem::length_error (a size
/// beyond a limit), unimem::out_of_range (an index or sub-range outside a buffer or view) or
/// unimem::invalid_argument (any other), so a catch of this interface, of std::logic_error or of
/// the standard class catches it (why an interface: docs/architecture.md, "Errors: unimem's
/// interfaces beside the standard's classes"). Catch it by reference.
class argument_error {
 public:
  /// @brief The message: the call and the values it refused.
  [[nodiscard]] virtual const char* what() const noexcept = 0;

 protected:
  argument_error() noexcept = default;
  argument_error(const argument_error&) noexcept = default;  ///< Copyable, as exceptions must be.
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

/// @brief An index or range outside a buffer or view: a `std::out_of_range` and an argument_error.
class out_of_range : public std::out_of_range, public argument_error {
 public:
  /// @brief An error with the message `what`.
  explicit out_of_range(const char* what) : std::out_of_range(what) {}
  /// @brief The message.
  [[nodiscard]] const char* what() const noexcept override { return std::out_of_range::what(); }
};

/// @brief Any other refused argument: a `std::invalid_argument` and a unimem::argument_error.
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

/// Throws Error with the message; cold, kept out of the caller's fast path.
template <class Error>
[[noreturn]] UNIMEM_DETAIL_COLD void throw_refused(const refusal& message) {
  throw Error(message.c_str());
}

}  // namespace detail

UNIMEM_END_NAMESPACE
