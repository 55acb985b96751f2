/// @file
/// @brief unimem::mpi::allreduce over any range, staged where MPI cannot take GPU pointers.
#pragma once

#include <mpi.h>

#include "../core.hpp"
#include "../placement/placement.hpp"
#include "datatype.hpp"
#include "deferred.hpp"
#include "error.hpp"
#include "path.hpp"
#include "staging.hpp"

#include <cstddef>
#include <limits>
#include <type_traits>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {
namespace detail {
template <class T>
void allreduce_pieces(const T* in, T* out, std::size_t n, MPI_Op op, MPI_Comm comm,
                      call_site where) {
  const std::size_t most = static_cast<std::size_t>(std::numeric_limits<int>::max());
  for (std::size_t at = 0; at < n; at += most) {
    const std::size_t k = n - at < most ? n - at : most;
    const void* src = in == out ? MPI_IN_PLACE : static_cast<const void*>(in + at);
    check(MPI_Allreduce(src, out + at, as_int(k), builtin_datatype<T>::get(), op, comm),
          "MPI_Allreduce", where);
  }
}
}  // namespace detail
/// @brief Reduces `in` over every rank of `comm` with `op` (MPI_SUM, ...) into `out` (the same
/// size, maybe the same range) after the work `o` names. T needs an MPI predefined datatype.
/// @throws unimem::invalid_argument for ranges of different sizes; unimem::mpi::error,
/// unimem::error.
template <class In, class Out>
void allreduce(const In& in, Out&& out, MPI_Op op, MPI_Comm comm = MPI_COMM_WORLD,
               ordering o = {}, call_site where = call_site::current()) {
  detail::require_initialized("unimem::mpi::allreduce");
  flush();  // a deferred send may be what another rank waits for before it joins
  auto src = detail::span_of(in);
  auto dst = detail::span_of(out);
  using T = std::remove_pointer_t<decltype(dst.data)>;
  static_assert(std::is_same<std::remove_cv_t<std::remove_pointer_t<decltype(src.data)>>, T>::value,
                "unimem::mpi::allreduce: input and output element types differ");
  static_assert(!std::is_const<T>::value, "unimem::mpi::allreduce: the output is const");
  static_assert(has_builtin_datatype_v<T>,
                "unimem::mpi::allreduce needs an element type with an MPI predefined datatype "
                "(an arithmetic type or bool)");
  if (src.size != dst.size) {
    unimem::detail::throw_refused<unimem::invalid_argument>(
        unimem::detail::refusal("unimem::mpi::allreduce: the input has ")
            .append(src.size)
            .append(" elements and the output ")
            .append(dst.size));
  }
  const std::size_t n = dst.size;
  const std::size_t bytes = n * sizeof(T);
  const bool same = static_cast<const void*>(src.data) == static_cast<const void*>(dst.data);
  const detail::span<const T> csrc{src.data, src.size, src.kind};
  const path in_path = detail::path_of(csrc, o.host_ready(), where);
  const path out_path = same ? in_path : detail::path_of(dst, o.host_ready(), where);
  const stream_ref s = o.stream();
  if (o.every_gpu() && (src.kind != memory::pageable || dst.kind != memory::pageable)) {
    synchronize_all_devices(where);
  }
  detail::staging in_stage, out_stage;
  const T* in_ptr = src.data;
  T* out_ptr = dst.data;
  if (in_path == path::staged && bytes > 0) {
    in_stage = detail::staging(bytes, where);
    detail::copy_in_order(in_stage.get(), src.data, bytes, s, where);
    in_ptr = reinterpret_cast<const T*>(in_stage.get());
  } else if (in_path == path::via_host) {
    (void)ready_for_host(view<const T>(src.data, n), s, where);
  }
  if (same) {
    out_ptr = const_cast<T*>(in_ptr);
  } else if (out_path == path::staged && bytes > 0) {
    out_stage = detail::staging(bytes, where);
    out_ptr = reinterpret_cast<T*>(out_stage.get());
  } else if (out_path == path::via_host) {
    (void)ready_for_host(view<T>(dst.data, n), s, where);
  }
  if (!s.is_default() || in_path == path::staged) s.synchronize(where);
  detail::allreduce_pieces(in_ptr, out_ptr, n, op, comm, where);
  if (out_path == path::staged && bytes > 0) {
    detail::copy_in_order(dst.data, out_ptr, bytes, s, where);
    s.synchronize(where);
  }
}
/// @brief allreduce(inout, inout, op, comm, s): the reduction in place.
template <class R>
void allreduce(R&& inout, MPI_Op op, MPI_Comm comm = MPI_COMM_WORLD, ordering o = {},
               call_site where = call_site::current()) {
  allreduce(inout, inout, op, comm, o, where);
}
}  // namespace mpi
UNIMEM_END_NAMESPACE
