// unimem: how launch() turns its arguments into kernel parameters (pure traits; not public).
// unimem_launch_argument(arg), found by ADL, gives the object launch() works with: the kernel gets
// its kernel_value() (else it), and its `using launch_session = S;` makes one S per launch from
// the launch_context (S::add takes each such argument; S runs before the kernel and after).
// Without the hook a container reaches kernels as its view, anything else as itself.
#pragma once

#include "../config.hpp"
#include "../kernel_argument.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

// Called from outside unimem, where no unimem_launch_argument is declared: ADL alone finds it.
namespace unimem_detail_adl {
template <class A>
constexpr auto launch_argument_hook(A&& a) noexcept(noexcept(unimem_launch_argument(
    std::forward<A>(a)))) -> decltype(unimem_launch_argument(std::forward<A>(a))) {
  return unimem_launch_argument(std::forward<A>(a));
}
}  // namespace unimem_detail_adl

UNIMEM_BEGIN_NAMESPACE
namespace detail {
template <class A, class = void>
struct has_launch_hook : std::false_type {};
template <class A>
struct has_launch_hook<
    A, std::void_t<decltype(::unimem_detail_adl::launch_argument_hook(std::declval<A>()))>>
    : std::true_type {};

/// What launch() works with for one argument: the hook's object, a container's view, or it.
template <class Arg>
constexpr decltype(auto) launch_argument(Arg&& a) noexcept {
  using D = std::decay_t<Arg>;
  if constexpr (has_launch_hook<Arg>::value) {
    return ::unimem_detail_adl::launch_argument_hook(std::forward<Arg>(a));
  } else if constexpr (!is_view<D>::value && viewable_v<std::remove_reference_t<Arg>>) {
    return to_view(a);
  } else {
    return std::forward<Arg>(a);
  }
}
template <class Arg>
using launch_argument_t = std::decay_t<decltype(launch_argument(std::declval<Arg>()))>;

template <class O, class = void>
struct has_kernel_value : std::false_type {};
template <class O>
struct has_kernel_value<O, std::void_t<decltype(std::declval<const O&>().kernel_value())>>
    : std::true_type {};
/// The value an argument hands the kernel: its launch object's kernel_value(), else the object.
template <class Arg>
constexpr decltype(auto) kernel_value(Arg&& a) noexcept {
  if constexpr (has_kernel_value<launch_argument_t<Arg>>::value) {
    return launch_argument(std::forward<Arg>(a)).kernel_value();
  } else {
    return launch_argument(std::forward<Arg>(a));
  }
}
template <class Arg>
using kernel_value_t = decltype(kernel_value(std::declval<Arg>()));

/// The launch session an argument's object names (void: none).
template <class O, class = void>
struct session_of {
  using type = void;
};
template <class O>
struct session_of<O, std::void_t<typename O::launch_session>> {
  using type = typename O::launch_session;
};
template <class Arg>
using session_t = typename session_of<launch_argument_t<Arg>>::type;

/// The distinct launch sessions of a launch's arguments, each made once (a base each).
template <class... S>
struct session_list {};
template <class List, class... S>
struct distinct_sessions {
  using type = List;
};
template <class... In, class S, class... More>
struct distinct_sessions<session_list<In...>, S, More...>
    : distinct_sessions<
          std::conditional_t<std::is_void<S>::value || (std::is_same<In, S>::value || ...),
                             session_list<In...>, session_list<In..., S>>,
          More...> {};

template <class List>
struct sessions;
template <class... S>
struct sessions<session_list<S...>> : S... {
  static constexpr bool none = sizeof...(S) == 0;
  template <class Context>
  explicit sessions(const Context& c) : S(c)... {}
  /// Hands an argument's object to its session (objects without one add nothing).
  template <class O>
  void add(const O& o) {
    using own = typename session_of<O>::type;
    if constexpr (!std::is_void<own>::value) static_cast<own&>(*this).add(o);
  }
  void before_launch() { (S::before_launch(), ...); }
  void after_launch() { (S::after_launch(), ...); }
};
template <class... Args>
using sessions_t =
    sessions<typename distinct_sessions<session_list<>, session_t<Args>...>::type>;

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
/// A host container that did not opt in (std::vector, std::array; a string is not one).
template <class T, class = void>
struct is_host_container : std::false_type {};
template <class T, class = void>
struct is_string : std::false_type {};
template <class T>
struct is_string<T, std::void_t<typename T::traits_type>> : std::true_type {};
template <class T>
struct is_host_container<T, std::void_t<decltype(std::declval<T&>().data()),
                                        decltype(std::declval<T&>().size()),
                                        typename T::value_type>>
    : std::bool_constant<!is_view<T>::value && !viewable_v<T> && !is_string<T>::value> {};
/// What launch() makes of one argument for one kernel parameter (pure traits, no errors).
template <class Arg, class Param>
struct argument_traits {
  using decayed = std::decay_t<Arg>;
  using value = std::decay_t<kernel_value_t<Arg>>;
  static constexpr bool container = !is_view<decayed>::value && !has_launch_hook<Arg>::value &&
                                    viewable_v<std::remove_reference_t<Arg>>;
  static constexpr bool temporary_owner = container && !std::is_lvalue_reference<Arg>::value &&
                                          !std::is_trivially_copyable<decayed>::value;
  static constexpr bool host_container = is_host_container<decayed>::value;
  static constexpr bool bad_parameter =
      std::is_reference<Param>::value || !std::is_trivially_copyable<Param>::value;
  static constexpr bool copyable = std::is_trivially_copyable<value>::value;
  static constexpr bool converts = [] {
    if constexpr (is_view<value>::value) {
      // A view or pointer parameter; never a bool or integer, which a pointer converts to too.
      return std::is_convertible<value, Param>::value ||
             (std::is_pointer<Param>::value &&
              std::is_convertible<typename value::pointer, Param>::value);
    } else {
      return std::is_convertible<kernel_value_t<Arg>, Param>::value;
    }
  }();
  static constexpr bool ok = !temporary_owner && !bad_parameter && copyable && converts;
};

/// Instantiated only for a call that does not type-check; the compiler's note names it with the
/// argument's position I (from 0), its type and the parameter's.
template <std::size_t I, class Arg, class Param>
constexpr void argument_check() {
  using t = argument_traits<Arg, Param>;
  static_assert(!t::temporary_owner,
                "unimem::launch: a temporary buffer cannot be a kernel argument: it would be "
                "freed before the kernel runs. Pass a named buffer (see argument_check<I, ...>).");
  static_assert(t::temporary_owner || !t::bad_parameter,
                "unimem::launch: kernel parameters must be trivially copyable values, not "
                "references (see argument_check<I, argument, parameter>).");
  static_assert(t::temporary_owner || t::bad_parameter || !t::host_container,
                "unimem::launch: argument I is a host container (a std::vector?): its memory is "
                "not accessible to the GPU. Use unimem::managed_vector<T> (<unimem/allocator.hpp>) "
                "or a managed_buffer<T>, "
                "or pass a unimem::view of managed memory (see argument_check<I, ...>).");
  static_assert(t::temporary_owner || t::bad_parameter || t::host_container || t::copyable,
                "unimem::launch: kernel arguments must be trivially copyable "
                "(see argument_check<I, argument, parameter>).");
  static_assert(t::temporary_owner || t::bad_parameter || t::host_container || !t::copyable ||
                    t::converts,
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
