// unimem: the extension point that makes a container a kernel argument and an access-tag
// target. Runtime-free.
//
// A container opts in by providing, where argument-dependent lookup finds it (its own namespace,
// or as a hidden friend), a function `unimem_view` that returns the unimem::view of its elements:
//
//   namespace mylib {
//   template <class T> class managed_array {            // any contiguous container
//     ...
//     friend unimem::view<T> unimem_view(managed_array& a) { return {a.data(), a.size()}; }
//     friend unimem::view<const T> unimem_view(const managed_array& a) { return {a.data(), a.size()}; }
//   };
//   }
//   unimem::launch(kernel, cfg, arr, unimem::in(arr));  // arr reaches a T* or view<T> parameter
//
// launch() passes such a container as its view (a const container as a view of const
// elements); a temporary container that owns its memory (not trivially copyable) is refused at
// compile time, since it would be freed before the kernel runs. A container that also declares
// `using memory_kind = ...;` (a unimem memory kind, see memory_kind.hpp) tells copy() and the
// access tags where its memory lives. unimem's own buffers and managed_vector use this hook.
//
// One concept, one name per role: the type view<T>; the member .view() of unimem's buffers (a
// const buffer gives a view<const T>); the free function to_view(x), the view of anything that
// has one, which is what code calls; and unimem_view, the customization point a container
// defines and nothing calls but to_view (as a type's own swap is found through std::swap, or
// its begin through std::ranges::begin). The hook keeps its prefixed name so that ADL never
// picks up an unrelated function that happens to be called to_view.
/// @file
/// @brief The extension point that makes a container a kernel argument and an access-tag target:
/// the customization point `unimem_view(c)`, a function that argument-dependent lookup finds,
/// returning the container's view (see the comment at the top of this header and
/// docs/architecture.md); and to_view(x), the one function code calls for the view of a view,
/// a buffer or an opted-in container. Runtime-free.
#pragma once

#include "config.hpp"
#include "view.hpp"

#include <type_traits>
#include <utility>

// The hook is called from a namespace outside unimem in which no unimem_view is declared, so
// that argument-dependent lookup alone finds it (nvcc's front end would otherwise qualify the
// call with whatever declaration ordinary lookup saw, and ADL would be lost).
namespace unimem_detail_adl {
template <class C>
constexpr auto view_hook(C& c) noexcept(noexcept(unimem_view(c))) -> decltype(unimem_view(c)) {
  return unimem_view(c);
}
}  // namespace unimem_detail_adl

UNIMEM_BEGIN_NAMESPACE

namespace detail {

template <class T>
struct is_view : std::false_type {};
template <class T>
struct is_view<view<T>> : std::true_type {};

namespace adl {
template <class C>
using view_hook_t = decltype(::unimem_detail_adl::view_hook(std::declval<C&>()));
template <class C, class = void>
struct has_view_hook : std::false_type {};
template <class C>
struct has_view_hook<C, std::void_t<view_hook_t<C>>> : is_view<view_hook_t<C>> {};
template <class C>
constexpr auto call_view_hook(C& c) noexcept {
  return ::unimem_detail_adl::view_hook(c);
}
}  // namespace adl

/// True for the views and for the containers that opted in through unimem_view.
template <class C>
constexpr bool viewable_v =
    is_view<std::remove_cv_t<C>>::value || adl::has_view_hook<std::remove_reference_t<C>>::value;

/// The memory kind a range type declares (C::memory_kind, or its allocator's), or void.
template <class C, class = void>
struct member_memory_kind {
  using type = void;
};
template <class C>
struct member_memory_kind<C, std::void_t<typename C::memory_kind>> {
  using type = typename C::memory_kind;
};
template <class C, class = void>
struct allocator_memory_kind {
  using type = void;
};
template <class C>
struct allocator_memory_kind<C, std::void_t<typename C::allocator_type::memory_kind>> {
  using type = typename C::allocator_type::memory_kind;
};
template <class C>
struct declared_memory_kind {
  using type = std::conditional_t<!std::is_void<typename member_memory_kind<C>::type>::value,
                                  typename member_memory_kind<C>::type,
                                  typename allocator_memory_kind<C>::type>;
};
template <class C>
using declared_memory_kind_t = typename declared_memory_kind<std::remove_cv_t<C>>::type;

}  // namespace detail

/// @brief The view of a view, of a unimem buffer or managed_vector, or of a container that
/// opted in through the customization point `unimem_view` (see the top of
/// kernel_argument.hpp): the one free function for "the view of x". A const container gives a
/// view of const elements: `to_view(std::as_const(b))`.
/// @code
///   unimem::view<const float> v = unimem::to_view(std::as_const(buf));
/// @endcode
template <class C, std::enable_if_t<detail::viewable_v<C>, int> = 0>
constexpr auto to_view(C& c) noexcept {
  if constexpr (detail::is_view<std::remove_cv_t<C>>::value) {
    return c;
  } else {
    return detail::adl::call_view_hook(c);
  }
}

UNIMEM_END_NAMESPACE
