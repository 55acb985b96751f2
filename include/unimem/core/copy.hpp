/// @file
/// @brief copy() and copy_async() over managed, device and pinned buffers, views and host
/// ranges; the direction of a copy comes from the ranges' memory kinds. fill(): fill.hpp.
#pragma once

#include "argument_error.hpp"
#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "error.hpp"
#include "kernel_argument.hpp"
#include "memory_kind.hpp"
#include "detail/stream_calls.hpp"
#include "stream_ref.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

/// Where a range's bytes are, as far as its type tells: its declared memory kind's residence; a
/// view says nothing (the runtime reads the pointer); any other contiguous range is host memory.
enum class range_residence { host, device, migrating, unknown };

template <class R>
constexpr range_residence residence_of() {
  using kind = declared_memory_kind_t<R>;
  if constexpr (is_view<std::remove_cv_t<R>>::value) {
    return range_residence::unknown;
  } else if constexpr (std::is_void<kind>::value) {
    return range_residence::host;
  } else {
    return kind::residence == memory_residence::host     ? range_residence::host
           : kind::residence == memory_residence::device ? range_residence::device
                                                         : range_residence::migrating;
  }
}

/// data() and size() of a contiguous range or an array (not std::data: <iterator> costs a small
/// translation unit more compile time than all of unimem's own code).
template <class R>
constexpr auto range_data(R& r) noexcept(noexcept(r.data())) -> decltype(r.data()) {
  return r.data();
}
template <class T, std::size_t N>
constexpr T* range_data(T (&a)[N]) noexcept {
  return a;
}
template <class R>
constexpr auto range_size(const R& r) noexcept(noexcept(r.size())) -> decltype(r.size()) {
  return r.size();
}
template <class T, std::size_t N>
constexpr std::size_t range_size(const T (&)[N]) noexcept {
  return N;
}

template <class R>
using range_value_t = std::remove_pointer_t<decltype(range_data(std::declval<R&>()))>;

/// The copy's direction; the runtime infers it (unified addressing) for views and managed memory.
constexpr backend::copy_kind direction(range_residence dst, range_residence src) {
  using r = range_residence;
  using k = backend::copy_kind;
  if (dst == r::unknown || src == r::unknown || dst == r::migrating || src == r::migrating) {
    return k::infer;
  }
  if (src == r::host) return dst == r::host ? k::host_to_host : k::host_to_device;
  return dst == r::host ? k::device_to_host : k::device_to_device;
}

template <class Dst, class Src>
constexpr void check_copy_types() {
  using d = range_value_t<Dst>;
  using s = range_value_t<Src>;
  static_assert(!std::is_const<d>::value, "unimem::copy: the destination is const");
  static_assert(std::is_same<std::remove_cv_t<d>, std::remove_cv_t<s>>::value,
                "unimem::copy: source and destination element types differ");
  static_assert(std::is_trivially_copyable<std::remove_cv_t<d>>::value,
                "unimem::copy: elements must be trivially copyable");
}

[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_size_mismatch(
    const char* what, std::size_t dn, std::size_t sn)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  throw_refused<invalid_argument>(
      refusal(what).append(": the destination has ").append(dn).append(" elements and the source ")
          .append(sn));
}
#else
    ;
#endif

template <class Dst, class Src>
std::size_t copy_bytes(const Dst& dst, const Src& src, const char* what) {
  const std::size_t dn = range_size(dst), sn = range_size(src);
  if (dn != sn) throw_size_mismatch(what, dn, sn);
  return dn * sizeof(range_value_t<Dst>);
}

template <class Dst, class Src>
void queue_copy(Dst& dst, const Src& src, stream_ref s, const char* what, call_site where) {
  using D = std::remove_cv_t<Dst>;
  check_copy_types<D, Src>();
  const std::size_t bytes = copy_bytes(dst, src, what);
  if (bytes == 0) return;
  check(backend::memcpy_async(range_data(dst), range_data(src), bytes,
                              direction(residence_of<D>(), residence_of<Src>()), s.get()),
        where);
}

}  // namespace detail

/// @brief Copies src into dst and waits. Each is a unimem buffer, managed_vector, view or
/// contiguous host range (std::vector, ...), of the same element type and size.
/// @throws unimem::invalid_argument when the sizes differ (before any runtime call).
/// @throws unimem::error when the runtime fails.
template <class Dst, class Src>
void copy(Dst&& dst, const Src& src, call_site where = call_site::current()) {
  detail::queue_copy(dst, src, stream_ref{}, "unimem::copy", where);
  if (detail::range_size(src) != 0) default_stream.synchronize(where);
}

/// @brief Queues a copy of src into dst on stream s. Host ranges must stay alive and unchanged
/// until s has done it; pinned memory makes the copy truly asynchronous.
/// @throws unimem::invalid_argument when the sizes differ (before any runtime call).
template <class Dst, class Src>
void copy_async(Dst&& dst, const Src& src, stream_ref s, call_site where = call_site::current()) {
  detail::queue_copy(dst, src, s, "unimem::copy_async", where);
}

UNIMEM_END_NAMESPACE
