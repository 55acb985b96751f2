// unimem: launch(), a type-checked kernel launch for HIP and CUDA.
#pragma once

#include "detail/backend.hpp"
#include "detail/kernel_args.hpp"
#include "error.hpp"
#include "launch_config.hpp"
#include "managed_buffer.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

inline std::string dims_string(const dims& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

template <class... Params>
void launch_parameters(void (*kernel)(Params...), const launch_config& cfg, Params... params) {
  if (cfg.block.empty()) {
    throw std::invalid_argument("unimem::launch: block " + dims_string(cfg.block) +
                                " has a zero extent");
  }
  if (cfg.grid.empty()) return;  // no blocks, no work
  void* addresses[sizeof...(Params) + 1] = {static_cast<void*>(&params)..., nullptr};
  const backend::result r = backend::launch_kernel(
      reinterpret_cast<const void*>(kernel), {cfg.grid.x, cfg.grid.y, cfg.grid.z},
      {cfg.block.x, cfg.block.y, cfg.block.z}, addresses, cfg.shared_bytes, cfg.stream.get());
  if (r.code != backend::success) {
    throw_error(r, __FILE__, __LINE__,
                "launch with grid " + dims_string(cfg.grid) + ", block " +
                    dims_string(cfg.block) + ", " + std::to_string(cfg.shared_bytes) +
                    " bytes of dynamic shared memory");
  }
}

}  // namespace detail

/// @brief Launches an ordinary `__global__` kernel on cfg.stream of the current device.
///
/// Each argument is checked at compile time against the kernel's parameter list:
/// a `managed_buffer<T>&` becomes `T*` (or `view<T>` where the parameter is a view), a
/// `const managed_buffer<T>&` becomes `const T*` (or `view<const T>`), anything else must be
/// trivially copyable and convert to the parameter. A launch error (bad configuration, too
/// much shared memory, an earlier sticky fault) is thrown at once; errors inside the kernel
/// surface at the next synchronisation. An empty grid launches nothing.
///
/// @code
///   __global__ void vector_add(const float* a, const float* b, float* c, std::size_t n);
///   unimem::launch(vector_add, unimem::grid_for(n), a, b, c, n);
/// @endcode
/// @throws unimem::error when the runtime rejects the launch.
/// @throws std::invalid_argument when a block extent is zero.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), const launch_config& cfg, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "unimem::launch: the number of arguments differs from the kernel's parameter "
                "count");
  if constexpr (sizeof...(Params) == sizeof...(Args)) {
    if constexpr (detail::parameter_list<Params...>::template accepts<Args...>()) {
      detail::launch_parameters(
          kernel, cfg,
          detail::to_parameter<Params>(detail::kernel_value(std::forward<Args>(args)))...);
    } else {
      detail::parameter_list<Params...>::template diagnose<Args...>(
          std::index_sequence_for<Args...>{});
    }
  }
}

UNIMEM_END_NAMESPACE
