// unimem (internal): events: made, recorded, waited for, queried, timed. This folder alone names hip*/cuda*.
#pragma once

#include "backend.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
namespace backend {
inline result event_create(event_handle* e, bool timing) noexcept {
  const unsigned flags =
      timing ? UNIMEM_DETAIL_RT(EventDefault) : UNIMEM_DETAIL_RT(EventDisableTiming);
  return UNIMEM_DETAIL_MADE(UNIMEM_DETAIL_CALL(EventCreateWithFlags, e, flags), e, event);
}
inline result event_destroy(event_handle e) noexcept {
  return UNIMEM_DETAIL_CALL_RELEASE(e != nullptr, event, EventDestroy, e);
}
inline result event_record(event_handle e, stream_handle s) noexcept {
  return UNIMEM_DETAIL_CALL(EventRecord, e, s);
}
inline result event_synchronize(event_handle e) noexcept {
  return UNIMEM_DETAIL_CALL(EventSynchronize, e);
}
inline result event_query(event_handle e) noexcept { return UNIMEM_DETAIL_CALL(EventQuery, e); }
inline result event_elapsed_ms(float* ms, event_handle start, event_handle end) noexcept {
  return UNIMEM_DETAIL_CALL(EventElapsedTime, ms, start, end);
}
}  // namespace backend
}  // namespace detail
UNIMEM_END_NAMESPACE
