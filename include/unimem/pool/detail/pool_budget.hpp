// unimem (internal): a managed_pool's GPU budget (issue 51; managed_pool_options::gpu_budget):
// the bytes of managed memory the pool may place on its GPU, measured once when the pool is
// made, and the advice that places a block on the host (preferred location host, accessed by
// the pool's GPU) or takes it back, over a runtime table R (pool/detail/pool_runtime.hpp).
#pragma once

#include "../../core/config.hpp"
#include "../../core/detail/backend/handles.hpp"
#include "../../core/error.hpp"
#include "../../placement/budget.hpp"
#include "../managed_pool_options.hpp"
#include "pool_runtime.hpp"

#include <cstddef>

UNIMEM_BEGIN_NAMESPACE
namespace detail {

/// A pool without a budget: every block is ordinary managed memory.
constexpr std::size_t no_gpu_budget = ~std::size_t{0};

/// Whether `bytes` more stay within `budget` of which `used` are taken (no overflow).
constexpr bool within_budget(std::size_t used, std::size_t bytes, std::size_t budget) noexcept {
  return used <= budget && bytes <= budget - used;
}

/// The budget a pool on `device` takes from its options: no_gpu_budget for 0, the bytes asked,
/// or (gpu_free_memory) the device's free memory now less the margin (default_reserve() of its
/// memory for default_margin), read with the device current.
/// @throws unimem::error where the device cannot be made current or the query fails.
template <class R>
std::size_t measured_gpu_budget(int device, std::size_t asked, std::size_t margin,
                                call_site where) {
  if (asked == 0) return no_gpu_budget;
  if (asked != managed_pool_options::gpu_free_memory) return asked;
  std::size_t free = 0, total = 0;
  backend::result r{backend::success, ""};
  {
    pool_device_scope<R> on(device, true);
    r = on.ok() ? R::mem_get_info(&free, &total) : on.failure();
  }
  if (r.code != backend::success) {
    R::fail(r, where, "managed_pool: reading the GPU's free memory for the pool's budget");
  }
  const std::size_t keep = margin == managed_pool_options::default_margin ? default_reserve(total)
                                                                        : margin;
  return free > keep ? free - keep : 0;
}

/// Places a block on the host for `device`: preferred location host, then accessed by the
/// device (so its kernels read and write the host's pages over the link without a fault).
/// Success, or the call that failed (what was given stays: the caller frees the block).
template <class R>
backend::result advise_to_host(void* p, std::size_t bytes, int device) noexcept {
  using a = backend::mem_advice;
  backend::result r = R::advise(p, bytes, a::set_preferred_location, {true, -1});
  if (r.code == backend::success) r = R::advise(p, bytes, a::set_accessed_by, {false, device});
  if (r.code != backend::success) R::forget(r.code);
  return r;
}

/// Takes a block placed on the host back to ordinary managed memory (it then migrates to the
/// GPU that touches it): accessed-by withdrawn first, then the preferred location. Whether it
/// is ordinary again; where a step is refused it stays on the host (the withdrawn accessed-by
/// given again where the preferred location could not be withdrawn), usable as it was.
template <class R>
bool advise_to_gpu(void* p, std::size_t bytes, int device) noexcept {
  using a = backend::mem_advice;
  backend::result r = R::advise(p, bytes, a::unset_accessed_by, {false, device});
  if (r.code != backend::success) {
    R::forget(r.code);
    return false;
  }
  r = R::advise(p, bytes, a::unset_preferred_location, {true, -1});
  if (r.code == backend::success) return true;
  R::forget(r.code);
  r = R::advise(p, bytes, a::set_accessed_by, {false, device});
  R::forget(r.code);
  return false;
}

}  // namespace detail
UNIMEM_END_NAMESPACE
