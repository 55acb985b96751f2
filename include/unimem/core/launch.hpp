/// @file
/// @brief launch(), a kernel launch with its arguments checked against the kernel at compile time.
#pragma once

#include "argument_error.hpp"
#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/kernel_args.hpp"
#include "device_count.hpp"
#include "error.hpp"
#include "launch_config.hpp"
#include "detail/stream_calls.hpp"

#include <cstddef>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

/// @brief What a launch session is made with (see unimem_launch_argument): the launching device
/// (current while the session runs), the stream the kernel is queued on, the launch()'s line.
struct launch_context {
  int device_id;    ///< The launching device.
  stream_ref stream;  ///< The stream the kernel is queued on.
  call_site where;  ///< The file and line of the launch() call.
};

namespace detail {
template <class Text>
Text& append_dims(Text& t, const dims& d) {
  t.append("(").append(d.x).append(", ").append(d.y).append(", ").append(d.z).append(")");
  return t;
}

/// A launch_config with the user's file and line, recorded by launch()'s implicit conversion.
struct located_config {
  launch_config cfg;
  call_site where;
  located_config(const launch_config& c,  // NOLINT: implicit on purpose
                 call_site w = call_site::current()) noexcept
      : cfg(c), where(w) {}
  located_config(dims grid, dims block, std::size_t shared_bytes = 0,  // NOLINT
                 stream_ref s = {}, call_site w = call_site::current()) noexcept
      : cfg(grid, block, shared_bytes, s), where(w) {}
};

[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_empty_block(const dims& block)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  refusal message("unimem::launch: block ");
  append_dims(message, block).append(" has a zero extent");
  throw_refused<invalid_argument>(message);
}
#else
    ;
#endif

[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_launch_error(
    backend::result r, const launch_config& cfg, call_site where)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  fixed_text<160> context("launch with grid ");
  append_dims(context, cfg.grid).append(", block ");
  append_dims(context, cfg.block).append(", ").append(cfg.shared_bytes);
  context.append(" bytes of dynamic shared memory");
  throw_error(r, where, context.c_str());
}
#else
    ;
#endif

template <class... Params>
void launch_parameters(void (*kernel)(Params...), const launch_config& cfg, call_site where,
                       Params... params) {
  void* addresses[sizeof...(Params) + 1] = {static_cast<void*>(&params)..., nullptr};
  const backend::result r = backend::launch_kernel(
      reinterpret_cast<const void*>(kernel), {cfg.grid.x, cfg.grid.y, cfg.grid.z},
      {cfg.block.x, cfg.block.y, cfg.block.z}, addresses, cfg.shared_bytes, cfg.stream.get());
  if (r.code != backend::success) throw_launch_error(r, cfg, where);
}

/// cfg's launching device, made current (and `restore` armed) where it is not; one per program.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE int choose_launch_device(
    const launch_config& cfg, call_site where, device_restore& restore)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  const int d = device_for(cfg.device_id, cfg.stream, "unimem::launch",
                           "launch_config::on_device()", where);
  const int current = current_device_id(where);
  if (d == no_device || d == current) return current;
  require_device(d, "unimem::device", where, "");  // names it: unimem::error
  check(backend::set_device(d), where);
  restore.arm(current);
  return d;
}
#else
    ;
#endif

}  // namespace detail

/// @brief Launches an ordinary `__global__` kernel on cfg.stream.
///
/// Arguments are checked at compile time against the kernel's parameters: a buffer or opted-in
/// container becomes `T*` or `view<T>` (a const one `const T*` or `view<const T>`), anything
/// else must be trivially copyable and convert; a std::vector is refused. Name a kernel template
/// with its arguments (kernel<float>). Launch errors throw at once, naming the launch() call's
/// file and line; kernel errors surface at the next synchronisation; an empty grid launches
/// nothing. An argument may go through the one customization point, `unimem_launch_argument`
/// (found by ADL), as the access tags of <unimem/placement/access.hpp> do to place their ranges on
/// the launching device first (docs/architecture.md, "Extending the launch"). The launching
/// device: cfg.device_id (made current for the launch); else the stream's where known (a native
/// handle is asked only where an argument has a launch session); else the current one.
/// @code
///   __global__ void vector_add(const float* a, const float* b, float* c, std::size_t n);
///   unimem::launch(vector_add, unimem::grid_for(n), a, b, c, n);
/// @endcode
/// @throws unimem::error when the runtime rejects the launch, or the stream is not cfg.device_id's.
/// @throws unimem::invalid_argument when a block extent is zero.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), detail::located_config located, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "unimem::launch: the number of arguments differs from the kernel's parameter "
                "count");
  if constexpr (sizeof...(Params) == sizeof...(Args)) {
    if constexpr (detail::parameter_list<Params...>::template accepts<Args...>()) {
      const launch_config& cfg = located.cfg;
      const call_site where = located.where;
      if (cfg.block.empty()) detail::throw_empty_block(cfg.block);
      if (cfg.empty()) return;  // no blocks: no work, no session, no runtime call
      using sessions = detail::sessions_t<Args...>;  // none: every call on `hooks` does nothing
      // The launching device (made current, and restored after, where it is not); without a named
      // device, a session or a stream that knows its device: the current one, unasked (no_device).
      detail::device_restore restore;
      const int device_id = cfg.names_device() || !sessions::none || cfg.stream.knows_device()
                                ? detail::choose_launch_device(cfg, where, restore)
                                : no_device;
      sessions hooks(launch_context{device_id, cfg.stream, where});
      (hooks.add(detail::launch_argument(args)), ...);
      hooks.before_launch();
      detail::launch_parameters(
          kernel, cfg, where,
          detail::to_parameter<Params>(detail::kernel_value(std::forward<Args>(args)))...);
      hooks.after_launch();
    } else {
      detail::parameter_list<Params...>::template diagnose<Args...>(
          std::index_sequence_for<Args...>{});
    }
  }
}

UNIMEM_END_NAMESPACE
