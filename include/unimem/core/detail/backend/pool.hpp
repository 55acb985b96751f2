// unimem (internal): the runtime's stream-ordered pool of managed memory (pool/managed_pool.hpp).
// Over the table backend.hpp writes every call once with; this folder alone names hip*/cuda*.
#pragma once

#include "backend.hpp"

/// 1 where the runtime has managed pools (cudaMemAllocationTypeManaged, CUDA 13): only then
/// managed_pool.hpp compiles its runtime-pool policy. 0 under HIP: to 7.0 it knows pinned pools
/// only, and hipMemAllocationTypeManaged (newer) has not run on an AMD GPU with unimem yet;
/// managed_pool caches over hipMallocManaged instead.
#if defined(UNIMEM_DETAIL_CUDA) && CUDART_VERSION >= 13000
#define UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL 1
#else
#define UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL 0
#endif

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
/// Whether an event may be recorded again while its last recording is pending: CUDA's
/// cudaEventRecord then replaces it (queries and waits answer for the new one); HIP's
/// hipEventRecord documents it as undefined (either recording may land), so managed_pool's
/// caching allocator records such an event only once its last recording has completed.
#if defined(UNIMEM_DETAIL_CUDA)
constexpr bool rerecording_a_pending_event_is_defined = true;
#else
constexpr bool rerecording_a_pending_event_is_defined = false;
#endif
#if UNIMEM_DETAIL_HAS_RUNTIME_MANAGED_POOL
// ---- the runtime's stream-ordered pool of managed memory (managed_pool.hpp) ----
/// The runtime's memory-pool handle.
using mem_pool_handle = UNIMEM_DETAIL_RT(MemPool_t);
/// True for the statuses refusing a managed pool: the caching allocator serves instead.
inline bool refuses_managed_pool(status s) noexcept {
  return s == error_not_supported || s == error_invalid_value ||
         s == UNIMEM_DETAIL_RT(ErrorCallRequiresNewerDriver);
}
/// Creates a pool of ordinary managed memory (no preferred location); it releases nothing at
/// synchronisation points until managed_pool sets its threshold.
inline result managed_pool_create(mem_pool_handle* pool) noexcept {
  UNIMEM_DETAIL_RT(MemPoolProps) props{};
  props.allocType = UNIMEM_DETAIL_RT(MemAllocationTypeManaged);
  props.handleTypes = UNIMEM_DETAIL_RT(MemHandleTypeNone);
  props.location.type = UNIMEM_DETAIL_RT(MemLocationTypeNone);
  props.location.id = 0;
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(MemPoolCreate, pool, &props), pool, memory_pool);
}
inline result managed_pool_destroy(mem_pool_handle pool) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(pool != nullptr, memory_pool, MemPoolDestroy, pool);
}
/// The bytes the pool keeps across synchronisation points (its release threshold).
inline result managed_pool_set_release_threshold(mem_pool_handle pool,
                                                 unsigned long long bytes) noexcept {
  const auto threshold = UNIMEM_DETAIL_RT(MemPoolAttrReleaseThreshold);
  return UNIMEM_DETAIL_CALL(MemPoolSetAttribute, pool, threshold, &bytes);
}
/// The bytes the pool holds from the system.
inline result managed_pool_reserved(mem_pool_handle pool, unsigned long long* bytes) noexcept {
  const auto reserved = UNIMEM_DETAIL_RT(MemPoolAttrReservedMemCurrent);
  return UNIMEM_DETAIL_CALL(MemPoolGetAttribute, pool, reserved, bytes);
}
/// Returns the pool's unused memory to the system until it holds at most `keep` bytes.
inline result managed_pool_trim(mem_pool_handle pool, std::size_t keep) noexcept {
  return UNIMEM_DETAIL_CALL(MemPoolTrimTo, pool, keep);
}
/// Allocates from the pool in the order of stream s.
inline result malloc_from_pool(void** p, std::size_t bytes, mem_pool_handle pool,
                               stream_handle s) noexcept {
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(MallocFromPoolAsync, p, bytes, pool, s), p,
                            device_memory);
}
/// Frees a pool allocation in the order of stream s.
inline result free_async(void* p, stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(p != nullptr, device_memory, FreeAsync, p, s);
}
#endif
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
