/// @file
/// @brief What makes a container a kernel argument and tag target: `unimem_view(c)`, found by
/// ADL, returns its view; code calls to_view(x). A temporary owning container is refused (freed
/// before the kernel runs); `using memory_kind = ...;` tells copy() and the tags where its memory
/// lives. Runtime-free. docs/architecture.md, "Making your container a kernel argument".
#pragma once

#include "config.hpp"
#include "view.hpp"

#include <type_traits>
#include <utility>

// Outside unimem, where no unimem_view is declared, ADL alone finds it (else nvcc's front end
// qualifies the call with what ordinary lookup saw).
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
}  // namespace adl

/// True for the views and for the containers that opted in through unimem_view.
template <class C>
constexpr bool viewable_v =
    is_view<std::remove_cv_t<C>>::value || adl::has_view_hook<std::remove_reference_t<C>>::value;

/// The memory kind a range type declares (C::memory_kind, or its allocator's), or void.
template <class C, class = void>
struct allocator_memory_kind {
  using type = void;
};
template <class C>
struct allocator_memory_kind<C, std::void_t<typename C::allocator_type::memory_kind>> {
  using type = typename C::allocator_type::memory_kind;
};
template <class C, class = void>
struct declared_memory_kind : allocator_memory_kind<C> {};
template <class C>
struct declared_memory_kind<C, std::void_t<typename C::memory_kind>> {
  using type = typename C::memory_kind;
};
template <class C>
using declared_memory_kind_t = typename declared_memory_kind<std::remove_cv_t<C>>::type;
}  // namespace detail

/// @brief The view of a view, a unimem buffer, managed_vector or a container that opted in
/// through `unimem_view`; a const container gives a view of const elements.
/// @code
///   unimem::view<const float> v = unimem::to_view(std::as_const(buf));
/// @endcode
template <class C, std::enable_if_t<detail::viewable_v<C>, int> = 0>
constexpr auto to_view(C& c) noexcept {
  if constexpr (detail::is_view<std::remove_cv_t<C>>::value) {
    return c;
  } else {
    return ::unimem_detail_adl::view_hook(c);
  }
}

UNIMEM_END_NAMESPACE
