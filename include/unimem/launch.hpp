// unimem: launch(), a type-checked kernel launch for HIP and CUDA.
#pragma once

#include "access.hpp"
#include "detail/backend.hpp"
#include "detail/kernel_args.hpp"
#include "error.hpp"
#include "launch_config.hpp"
#include "managed_buffer.hpp"
#include "migration.hpp"

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

inline std::string dims_string(const dims& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

inline void check_config(const launch_config& cfg) {
  if (cfg.block.empty()) {
    throw std::invalid_argument("unimem::launch: block " + dims_string(cfg.block) +
                                " has a zero extent");
  }
}

template <class... Params>
void launch_parameters(void (*kernel)(Params...), const launch_config& cfg, Params... params) {
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

// ---- access tags: prefetch before the kernel ----

struct placement_request {
  void* ptr;
  std::size_t bytes;
  access_mode mode;
};

template <class Arg>
constexpr bool is_tagged_v = kernel_arg_traits<std::decay_t<Arg>>::tagged;

template <class Arg>
void collect_placement(placement_request*& next, const Arg& a) noexcept {
  if constexpr (is_tagged_v<Arg>) {
    using traits = kernel_arg_traits<std::decay_t<Arg>>;
    const auto v = traits::get(a);
    *next++ = {const_cast<void*>(static_cast<const void*>(v.data())), v.size_bytes(), traits::mode};
  }
}

/// Prefetches the tagged ranges to `device` on stream s, in stream order before the kernel.
/// out() ranges are discarded and populated on the device in one batch where the runtime can.
template <std::size_t N>
void place_for_launch(const std::array<placement_request, N>& reqs, int device, stream_ref s) {
  if (gate(device, "unimem::launch (access tags)") == hint_status::unsupported) return;
  const backend::native_location where{false, device};
  bool done[N] = {};
  if constexpr (backend::has_discard_prefetch) {
    if (!backend::is_legacy_default_stream(s.get())) {
      void* ptrs[N];
      std::size_t sizes[N];
      std::size_t which[N];
      std::size_t k = 0;
      for (std::size_t i = 0; i < N; ++i) {
        if (reqs[i].mode == access_mode::out && reqs[i].bytes != 0) {
          ptrs[k] = reqs[i].ptr;
          sizes[k] = reqs[i].bytes;
          which[k++] = i;
        }
      }
      if (k != 0) {
        if (backend::discard_and_prefetch(ptrs, sizes, k, where, s.get()).code == backend::success) {
          for (std::size_t j = 0; j < k; ++j) done[which[j]] = true;
        } else {
          (void)backend::take_last_error();  // fall back to prefetching them below
        }
      }
    }
  }
  for (std::size_t i = 0; i < N; ++i) {
    if (!done[i] && reqs[i].bytes != 0) {
      UNIMEM_DETAIL_CHECK(backend::prefetch(reqs[i].ptr, reqs[i].bytes, where, s.get()));
    }
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
/// Arguments tagged with unimem::in(), out() or inout() are prefetched to the launching device
/// on cfg.stream before the kernel (see access.hpp); untagged buffers are not. cfg.device
/// chooses the device (default: the current one).
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
      detail::check_config(cfg);
      if (cfg.empty()) return;  // no blocks: no work, no prefetch, no runtime call
      const auto run = [&] {
        constexpr std::size_t tagged = (std::size_t{detail::is_tagged_v<Args>} + ... + 0);
        if constexpr (tagged != 0) {
          std::array<detail::placement_request, tagged> reqs{};
          detail::placement_request* next = reqs.data();
          (detail::collect_placement(next, args), ...);
          detail::place_for_launch(reqs, cfg.device ? *cfg.device : detail::current_device_id(),
                                   cfg.stream);
        }
        detail::launch_parameters(
            kernel, cfg,
            detail::to_parameter<Params>(detail::kernel_value(std::forward<Args>(args)))...);
      };
      if (cfg.device) {
        device_guard g(*cfg.device);
        run();
      } else {
        run();
      }
    } else {
      detail::parameter_list<Params...>::template diagnose<Args...>(
          std::index_sequence_for<Args...>{});
    }
  }
}

UNIMEM_END_NAMESPACE
