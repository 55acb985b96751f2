// unimem (internal): the runtime calls of stream_ref (synchronize(), ready(), wait()), and the
// device a stream's work runs on; included by whatever calls them (stream.hpp, copy.hpp, launch).
#pragma once

#include "../config.hpp"
#include "../error.hpp"
#include "../stream_ref.hpp"
#include "backend/backend.hpp"
#include "fixed_text.hpp"

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// The runtime calls behind stream_ref::synchronize(), ready() and wait().
template <>
struct stream_calls<stream_calls_tag> {
  static void synchronize(backend::stream_handle s, call_site where) {
    check(backend::stream_synchronize(s), where);
  }
  static bool ready(backend::stream_handle s, call_site where) {
    return query_ready(backend::stream_query(s), where);
  }
  static void wait(backend::stream_handle s, backend::event_handle e, call_site where) {
    check(backend::stream_wait_event(s, e), where);
  }
};

/// The device of stream s: the stream_ref's, else the runtime's; no_device for the default
/// stream (it follows the current device) or when the runtime cannot tell.
inline int stream_device(stream_ref s, call_site where) {
  if (s.is_default()) return no_device;
  if (s.knows_device()) return s.device_id();
  int id = no_device;
  const backend::result r = backend::stream_device(s.get(), &id);
  if (r.code == backend::success) return id;
  if (r.code == backend::error_not_supported) return no_device;
  throw_error(r, where, "reading the device of a stream");
}

/// The device work runs on given `asked` (named by the caller, or no_device) and stream s: the
/// named one (even a nonexistent one: the caller's checks reject it), else the stream's.
/// @throws unimem::error when the caller named another device than the stream's.
UNIMEM_DETAIL_OUTLINE int device_for(int asked, stream_ref s, const char* what, const char* how,
                                     call_site where)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  const int from_stream = stream_device(s, where);
  if (asked == no_device) return from_stream;
  if (from_stream != no_device && from_stream != asked) {
    fixed_text<256> context("the stream belongs to device ");
    context.append(from_stream).append(" but ").append(how).append(" asks for device ");
    context.append(asked).append(
        "; use a stream of that device, or do not name a device to use the stream's");
    fail(backend::error_invalid_value, what, where, context.c_str());
  }
  return asked;
}
#else
    ;
#endif
}  // namespace detail
UNIMEM_END_NAMESPACE
