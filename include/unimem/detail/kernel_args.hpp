// unimem: how launch() turns its arguments into kernel parameters (not a public header).
#pragma once

#include "../view.hpp"
#include "backend.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// Specialised with owner = true by each owning buffer type (managed_buffer, ...):
/// launch() passes owners as their view, never by value.
template <class T>
struct kernel_arg_traits {
  static constexpr bool owner = false;
  static constexpr bool tagged = false;
};

/// Base of kernel_arg_traits for owning containers: they reach kernels as their view.
struct owner_arg_traits {
  static constexpr bool owner = true;
  static constexpr bool tagged = false;
  template <class C>
  static auto view(C& c) noexcept {
    return unimem::view<std::remove_reference_t<decltype(*c.data())>>(c.data(), c.size());
  }
};

template <class T>
struct is_view : std::false_type {};
template <class T>
struct is_view<view<T>> : std::true_type {};

/// An owning buffer becomes its view (view<const T> through a const reference), an access
/// tag its range; anything else passes through unchanged.
template <class Arg>
constexpr decltype(auto) kernel_value(Arg&& a) noexcept {
  using traits = kernel_arg_traits<std::decay_t<Arg>>;
  if constexpr (traits::owner) {
    return traits::view(a);
  } else if constexpr (traits::tagged) {
    return traits::get(a);
  } else {
    return std::forward<Arg>(a);
  }
}

template <class Arg>
using kernel_value_t = decltype(kernel_value(std::declval<Arg>()));

/// A view reaches a view parameter as itself and a pointer parameter as its data().
template <class Param, class V>
constexpr Param to_parameter(V&& v) noexcept {
  using D = std::decay_t<V>;
  if constexpr (is_view<D>::value && !std::is_convertible<D, Param>::value) {
    return v.data();
  } else {
    return std::forward<V>(v);
  }
}

/// What launch() makes of one argument for one kernel parameter (pure traits, no errors).
template <class Arg, class Param>
struct argument_traits {
  using decayed = std::decay_t<Arg>;
  using value = std::decay_t<kernel_value_t<Arg>>;
  static constexpr bool owner = kernel_arg_traits<decayed>::owner;
  static constexpr bool temporary_owner = owner && !std::is_lvalue_reference<Arg>::value;
  static constexpr bool bad_parameter =
      std::is_reference<Param>::value || !std::is_trivially_copyable<Param>::value;
  static constexpr bool copyable = std::is_trivially_copyable<value>::value;
  static constexpr bool converts = [] {
    if constexpr (is_view<value>::value) {
      // A buffer or view reaches a view parameter, or a pointer parameter as its data(); never
      // a bool or an integer, which its pointer would also convert to.
      return std::is_convertible<value, Param>::value ||
             (std::is_pointer<Param>::value &&
              std::is_convertible<typename value::pointer, Param>::value);
    } else {
      return std::is_convertible<kernel_value_t<Arg>, Param>::value;
    }
  }();
  static constexpr bool ok = !temporary_owner && !bad_parameter && copyable && converts;
};

/// Instantiated only for a call that does not type-check, to say why in one message. The
/// compiler's note names this function with the argument's position I (from 0), the
/// argument's type and the parameter's type.
template <std::size_t I, class Arg, class Param>
constexpr void argument_check() {
  using t = argument_traits<Arg, Param>;
  static_assert(!t::temporary_owner,
                "unimem::launch: a temporary buffer cannot be a kernel argument: it would be "
                "freed before the kernel runs. Pass a named buffer (see argument_check<I, ...>).");
  static_assert(t::temporary_owner || !t::bad_parameter,
                "unimem::launch: kernel parameters must be trivially copyable values, not "
                "references (see argument_check<I, argument, parameter>).");
  static_assert(t::temporary_owner || t::bad_parameter || t::copyable,
                "unimem::launch: kernel arguments must be trivially copyable "
                "(see argument_check<I, argument, parameter>).");
  static_assert(t::temporary_owner || t::bad_parameter || !t::copyable || t::converts,
                "unimem::launch: argument I does not convert to the kernel's parameter type "
                "(see argument_check<I, argument, parameter>). A buffer converts to T* or "
                "view<T>, a const buffer only to const T* or view<const T>.");
}

template <class... Params>
struct parameter_list {
  template <class... Args>
  static constexpr bool accepts() {
    return (argument_traits<Args, Params>::ok && ...);
  }
  template <class... Args, std::size_t... I>
  static constexpr void diagnose(std::index_sequence<I...>) {
    (argument_check<I, Args, Params>(), ...);
  }
};

}  // namespace detail
UNIMEM_END_NAMESPACE
