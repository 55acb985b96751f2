/// @file
/// @brief devices(), every GPU, and pick_device(), the best one by a criterion.
#pragma once

#include "config.hpp"
#include "detail/fixed_text.hpp"
#include "device.hpp"
#include "error.hpp"

#include <cstddef>
#include <utility>
#include <vector>

UNIMEM_BEGIN_NAMESPACE

/// @brief What pick_device() maximises.
enum class device_criterion {
  /// The most multiprocessors, then the most memory: the fastest GPU for compute-bound work
  /// among mixed GPUs (the samples' findCudaDevice).
  most_multiprocessors,
  most_memory,       ///< The most global memory, then the most multiprocessors.
  most_free_memory,  ///< The most free memory now (a shared machine), then multiprocessors.
};

/// @brief The best usable device by `criterion` (prohibited ones skipped, ties to the lowest
/// ordinal). It does not make it current: `unimem::pick_device().make_current();`.
/// @throws unimem::error (no device) when there is no usable GPU.
inline device pick_device(device_criterion criterion = device_criterion::most_multiprocessors,
                          call_site where = call_site::current()) {
  const int n = device_count(where);
  int best = no_device;
  std::pair<std::size_t, std::size_t> best_key;  // compared as (first, then second)
  for (int id = 0; id < n; ++id) {
    const device d(id, where);
    if (d.compute_mode(where) == compute_mode::prohibited) continue;
    const auto sms = static_cast<std::size_t>(d.multiprocessors());
    std::pair<std::size_t, std::size_t> key(sms, d.total_memory());  // most_multiprocessors
    if (criterion == device_criterion::most_memory) key = {d.total_memory(), sms};
    if (criterion == device_criterion::most_free_memory) key = {d.free_memory(where), sms};
    if (best == no_device || key > best_key) {
      best = id;
      best_key = key;
    }
  }
  if (best == no_device) {
    detail::fixed_text<96> context(n == 0 ? "device_count() is 0" : "all ");
    if (n != 0) context.append(n).append(" devices are in compute mode prohibited");
    throw runtime_error(detail::backend::error_invalid_device, "unimem::pick_device", where.file,
                        where.line, context.c_str(), n == 0);
  }
  return device(best, where);
}

/// @brief All GPUs the runtime sees, in ordinal order (empty without a GPU).
/// @code
///   for (const unimem::device& d : unimem::devices()) std::printf("%s\n", d.name());
/// @endcode
inline std::vector<device> devices(call_site where = call_site::current()) {
  const int n = device_count(where);
  std::vector<device> all;
  all.reserve(static_cast<std::size_t>(n));
  for (int id = 0; id < n; ++id) all.push_back(device(id, detail::unchecked_id{}));
  return all;
}


UNIMEM_END_NAMESPACE
