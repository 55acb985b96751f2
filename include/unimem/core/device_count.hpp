/// @file
/// @brief device_count(), and what every call that takes a device id relies on: the id checked,
/// the current device read, a device made current again at the end of a scope.
#pragma once

#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/fixed_text.hpp"
#include "error.hpp"

UNIMEM_BEGIN_NAMESPACE
/// @brief The number of GPUs the runtime sees.
/// @return 0, not an error, when the machine has no GPU or no driver.
/// @throws unimem::error when the runtime fails for another reason.
inline int device_count(call_site where = call_site::current()) {
  int n = 0;
  const detail::backend::result r = detail::backend::device_count(&n);
  if (r.code == detail::backend::success) return n;
  if (detail::backend::means_no_gpu(r.code)) {
    (void)detail::backend::take_last_error();
    return 0;
  }
  detail::throw_error(r, where);
}

namespace detail {
[[noreturn]] UNIMEM_DETAIL_COLD UNIMEM_DETAIL_OUTLINE void throw_invalid_device(
    int id, int count, const char* call, const char* id_prefix, call_site where)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  fixed_text<128> call_text(call);
  if (id_prefix != nullptr) call_text.append("(").append(id_prefix).append(id).append(")");
  throw runtime_error(backend::error_invalid_device, call_text.c_str(), where.file, where.line,
                      fixed_text<64>("device_count() is ").append(count).c_str(), count == 0);
}
#else
    ;
#endif
/// Throws unimem::error (invalid device) unless 0 <= id < device_count(), naming `call`, or
/// `call(<id_prefix><id>)` with an id_prefix (e.g. "unimem::prefetch(device 7)").
inline void require_device(int id, const char* call, call_site where,
                           const char* id_prefix = nullptr) {
  const int n = device_count(where);
  if (id < 0 || id >= n) throw_invalid_device(id, n, call, id_prefix, where);
}
inline int current_device_id(call_site where) {
  int id = 0;
  check(backend::get_device(&id), where);
  return id;
}
/// Makes a device current again at the end of a scope, ignoring a failure; nothing until armed.
class device_restore {
 public:
  device_restore() noexcept = default;
  device_restore(const device_restore&) = delete;
  device_restore& operator=(const device_restore&) = delete;
  ~device_restore() {
    if (id_ != no_device) (void)backend::set_device(id_);
  }
  void arm(int id) noexcept { id_ = id; }

 private:
  int id_ = no_device;
};
}  // namespace detail

UNIMEM_END_NAMESPACE
