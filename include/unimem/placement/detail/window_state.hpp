// unimem (internal): what a walk (window.hpp) knows of its ranges: each range's tag and role,
// the placement records of its windows, the windows' sizes, and the default window size as a
// pure function of the ranges, the link and the memory (tested without a GPU).
#pragma once

#include "../../core/argument_error.hpp"
#include "../../core/config.hpp"
#include "../../core/detail/placement_record.hpp"
#include "../../core/stream.hpp"
#include "../../core/stream_ref.hpp"
#include "../access.hpp"
#include "../intent.hpp"
#include "../placement.hpp"

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

UNIMEM_BEGIN_NAMESPACE
namespace detail {
/// What a walk does with one range: moved (placed, stays: the working set fits), duplicated
/// (read-only, with read-mostly advice: placed as a copy, let go when left, no move back),
/// moved_back (placed, moved back to the host when left) or mapped (stays in host memory; the
/// GPU reads and writes it over the bus, nothing moves).
enum class window_role : unsigned char { moved, duplicated, moved_back, mapped };

/// One range of a walk, from its access tag.
struct window_slot {
  const void* ptr = nullptr;
  std::size_t bytes = 0;
  std::size_t element_size = 0;
  access_mode mode = access_mode::inout;
  intent_choice how = intent_choice::follow;
  placement_record* record = nullptr;  // the buffer's, where the range is all of one
  window_role role = window_role::moved;
  bool gave_read_mostly = false;  // the walk's advice, withdrawn at its end
  bool gave_mapping = false;

  [[nodiscard]] bool placed() const noexcept { return role != window_role::mapped; }
};

template <class T, access_mode M>
window_slot slot_of(const access_tag<T, M>& t) noexcept {
  window_slot s;
  s.ptr = t.range.data();
  s.bytes = t.range.size_bytes();
  s.element_size = sizeof(T);
  s.mode = M;
  s.how = t.how;
  s.record = t.record;
  return s;
}
template <class A>
window_slot slot_of(const A&) noexcept {
  static_assert(sizeof(A) == 0,
                "unimem::windows: give each range the loop walks with its access tag over managed "
                "memory: in(a), out(c), inout(b) (a tag over device memory is a bare view: device "
                "memory is on the GPU already and needs no window)");
  return {};
}

/// The walk's stream and the line that made the walk (errors name it); a temporary stream is
/// refused (it would be destroyed before the walk's work).
struct located_stream {
  stream_ref stream;
  call_site where;
  located_stream(const unimem::stream& s,  // NOLINT: implicit on purpose
                 call_site w = call_site::current()) noexcept
      : stream(s.ref()), where(w) {}
  located_stream(stream_ref s, call_site w = call_site::current()) noexcept  // NOLINT
      : stream(s), where(w) {}
  /// A temporary stream: refused at compile time.
  template <class S, std::enable_if_t<std::is_same<S, unimem::stream>::value, int> = 0>
  located_stream(S&&, call_site w = call_site::current()) noexcept  // NOLINT
      : where(w) {
    static_assert(!std::is_same<S, S>::value,
                  "unimem::windows: a temporary stream cannot carry a walk: it is destroyed at the "
                  "end of the statement, before the walk's work. Make a named unimem::stream.");
  }
};

/// What the windows a walk hands out read: its ranges, their windows' records, the sizes.
struct window_state {
  std::vector<window_slot> slots;
  std::vector<placement_record> records;  // slot-major: records[slot * count + window]
  std::size_t elements = 0;               // of each range
  std::size_t per_window = 0;             // elements of a window (the last may have fewer)
  std::size_t count = 0;                  // windows
  int device = no_device;

  static constexpr std::size_t npos = ~std::size_t{0};
  [[nodiscard]] std::size_t offset(std::size_t w) const noexcept { return w * per_window; }
  [[nodiscard]] std::size_t size(std::size_t w) const noexcept {
    const std::size_t o = offset(w);
    return elements - o < per_window ? elements - o : per_window;
  }
  /// The record of range `slot`'s window w: the buffer's own where one window is all of it.
  [[nodiscard]] placement_record* record(std::size_t slot, std::size_t w) noexcept {
    if (count == 1 && slots[slot].record != nullptr) return slots[slot].record;
    return &records[slot * count + w];
  }
  /// Range `slot`'s window w, to place.
  [[nodiscard]] placement_range range(std::size_t slot, std::size_t w) noexcept {
    const window_slot& s = slots[slot];
    return {static_cast<const char*>(s.ptr) + offset(w) * s.element_size, size(w) * s.element_size,
            intent_choice::plain, record(slot, w)};
  }
  /// All of range `slot` (for advice).
  [[nodiscard]] placement_range whole(std::size_t slot) const noexcept {
    const window_slot& s = slots[slot];
    return {s.ptr, s.bytes, intent_choice::plain, s.record};
  }
  /// The range [p, p + bytes) is, or npos.
  [[nodiscard]] std::size_t find(const void* p, std::size_t bytes) const noexcept {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].ptr == p && slots[i].bytes == bytes) return i;
    }
    return npos;
  }
};

/// The default elements of a window where the working set does not fit (window_options):
/// about 8 ms of a link of `link_bytes_per_second` (64 MiB to 4 GiB of the placed ranges
/// together), at most `usable` / (depth + 2) bytes, in whole 2 MiB granules of every placed
/// range (unless an odd element size makes a granule over 64 MiB), at least one granule and
/// 2 MiB of the placed ranges (a GPU with no room left still gets windows the driver can
/// evict for), at most `elements`.
inline std::size_t default_window_elements(const std::vector<window_slot>& slots,
                                           std::size_t elements, double link_bytes_per_second,
                                           std::size_t usable, int depth) noexcept {
  std::size_t per_element = 0, granule = 1;
  constexpr std::size_t block = std::size_t{2} << 20;
  for (const window_slot& s : slots) {
    if (!s.placed()) continue;
    per_element += s.element_size;
    std::size_t pow2 = 1;  // the largest power of two dividing the element size
    while (pow2 < block && s.element_size % (pow2 * 2) == 0) pow2 *= 2;
    if (block / pow2 > granule) granule = block / pow2;
  }
  if (per_element == 0) {  // every range mapped: the windows only cut the kernels' work
    for (const window_slot& s : slots) per_element += s.element_size;
  }
  if (per_element == 0 || elements == 0) return elements;
  constexpr double seconds = 0.008;
  const double low = double(std::size_t{64} << 20), high = double(std::size_t{4} << 30);
  double target = link_bytes_per_second > 0 ? link_bytes_per_second * seconds : 0.0;
  target = target < low ? low : target > high ? high : target;
  std::size_t bytes = static_cast<std::size_t>(target);
  const std::size_t room = usable / (static_cast<std::size_t>(depth < 1 ? 1 : depth) + 2);
  if (room < bytes) bytes = room;
  if (granule > (std::size_t{64} << 20) / per_element) granule = 1;  // odd sizes: no granules
  std::size_t n = bytes / per_element;
  n -= n % granule;
  const std::size_t floor = (block + per_element - 1) / per_element;
  if (n < granule) n = granule;
  if (n < floor) n = floor;
  return n < elements ? n : elements;
}

[[noreturn]] inline void refuse_walk(const char* why) {
  throw_refused<invalid_argument>(refusal("unimem::windows: ").append(why));
}
}  // namespace detail
UNIMEM_END_NAMESPACE
