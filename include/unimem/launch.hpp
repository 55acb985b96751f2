// unimem: launch(), a type-checked kernel launch for HIP and CUDA. It knows no buffer type:
// containers reach kernels through the unimem_view hook (kernel_argument.hpp).
/// @file
/// @brief launch(), a kernel launch whose arguments are checked against the kernel's parameters at
/// compile time.
#pragma once

#include "access.hpp"
#include "argument_error.hpp"
#include "config.hpp"
#include "detail/backend/backend.hpp"
#include "detail/kernel_args.hpp"
#include "device.hpp"
#include "error.hpp"
#include "kernel_argument.hpp"
#include "launch_config.hpp"
#include "location.hpp"
#include "placement.hpp"
#include "stream.hpp"

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE

namespace detail {

template <class Text>
Text& append_dims(Text& t, const dims& d) {
  t.append("(").append(d.x).append(", ").append(d.y).append(", ").append(d.z).append(")");
  return t;
}

/// A launch_config with the place of the launch() call that uses it: launch() takes this, so
/// that the implicit conversion records the user's file and line.
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
  argument_error e("unimem::launch: block ");
  append_dims(e, block).append(" has a zero extent");
  throw e;
}
#else
    ;
#endif
inline void check_config(const launch_config& cfg) {
  if (cfg.block.empty()) throw_empty_block(cfg.block);
}

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

/// The launching device of cfg (see launch()): `id` becomes it; where it is not the current
/// device it is made current, and `restore` is armed to make the current one current again.
UNIMEM_DETAIL_NOINLINE UNIMEM_DETAIL_OUTLINE void choose_launch_device(const launch_config& cfg,
                                                                       call_site where, int& id,
                                                                       device_restore& restore)
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  const int d =
      device_for(cfg.device, cfg.stream, "unimem::launch", "launch_config::on_device()", where);
  const int current = current_device_id(where);
  id = current;
  if (d == unspecified_device || d == current) return;
  (void)device(d, where);  // checks the id: unimem::error naming it
  check(backend::set_device(d), where);
  restore.arm(current);
  id = d;
}
#else
    ;
#endif

/// The device a launch runs on (see launch()), made current for the launch where it is not,
/// and the current device restored afterwards (never throwing). Out of the launch template:
/// one copy per program instead of one per kernel signature.
class launch_device {
 public:
  launch_device(const launch_config& cfg, bool tagged, call_site where) {
    // Neither a named device, nor tags, nor a stream that knows its device: the runtime's own
    // choice (the current device), with no query.
    if (cfg.names_device() || tagged || cfg.stream.knows_device()) {
      choose_launch_device(cfg, where, id, restore_);
    }
  }
  launch_device(const launch_device&) = delete;
  launch_device& operator=(const launch_device&) = delete;

  int id = -1;  ///< the launching device; -1: the current one, not asked

 private:
  device_restore restore_;  // the device current before, where the launch switched
};

// ---- access tags: prefetch before the kernel ----

/// A range of memory a launch argument lets the kernel reach. Tagged ranges are placed before
/// the kernel; the others (untagged buffers and views, raw pointers as one byte) only count for
/// the overlap rule: an out() range that another argument may read is never discarded.
struct range_use {
  const void* ptr;
  std::size_t bytes;
  access_mode mode;
  bool tagged;
  intent_choice how;  ///< a tag's intent (access.hpp); follow for the others

  [[nodiscard]] bool overlaps(const range_use& o) const noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(ptr);
    const auto b = reinterpret_cast<std::uintptr_t>(o.ptr);
    return bytes != 0 && o.bytes != 0 && a < b + o.bytes && b < a + bytes;
  }
  [[nodiscard]] bool same_range(const range_use& o) const noexcept {
    return ptr == o.ptr && bytes == o.bytes;
  }
};

template <class Arg>
constexpr bool is_tagged_v = is_access_tag<std::decay_t<Arg>>::value;

/// Whether an argument lets the kernel reach memory unimem can name: a tag, a buffer, a view
/// or an object pointer.
template <class Arg>
constexpr bool reaches_memory_v = [] {
  using value = std::decay_t<kernel_value_t<Arg>>;
  if constexpr (is_view<value>::value) {
    return true;
  } else if constexpr (std::is_pointer<value>::value) {
    return std::is_object<std::remove_pointer_t<value>>::value;
  } else {
    return false;
  }
}();

template <class Arg>
void collect_range(range_use*& next, const Arg& a) noexcept {
  if constexpr (reaches_memory_v<const Arg&>) {
    if constexpr (is_tagged_v<Arg>) {
      *next++ = {a.range.data(), a.range.size_bytes(), tag_mode<std::decay_t<Arg>>::value, true,
                 a.how};
    } else if constexpr (is_view<std::decay_t<kernel_value_t<const Arg&>>>::value) {
      const auto v = kernel_value(a);
      *next++ = {v.data(), v.size_bytes(), access_mode::inout, false, intent_choice::follow};
    } else {
      const void* p = const_cast<const void*>(static_cast<const volatile void*>(a));
      *next++ = {p, p == nullptr ? 0u : 1u, access_mode::inout, false, intent_choice::follow};
    }
  }
}

/// Whether a launch of `kernel` with cfg would be accepted on the current device: the checks
/// the runtime makes before it queues anything (block and grid extents against the device,
/// threads and dynamic shared memory against this kernel's own limits). False when unsure.
UNIMEM_DETAIL_OUTLINE bool launch_would_be_accepted(const void* kernel,
                                                    const launch_config& cfg) noexcept
#if UNIMEM_DETAIL_DEFINE_OUTLINE
{
  int id = 0;
  backend::kernel_launch_limits k{};
  const backend::result d = backend::get_device(&id);
  if (d.code != backend::success) {
    backend::forget_if_last(d.code);
    return false;
  }
  const backend::result r = backend::kernel_limits(kernel, &k);
  if (r.code != backend::success) {
    backend::forget_if_last(r.code);
    return false;
  }
  using a = backend::device_attribute;
  const a limits[] = {a::max_block_dim_x, a::max_block_dim_y, a::max_block_dim_z,
                      a::max_grid_dim_x,  a::max_grid_dim_y,  a::max_grid_dim_z};
  const unsigned asked[] = {cfg.block.x, cfg.block.y, cfg.block.z,
                            cfg.grid.x,  cfg.grid.y,  cfg.grid.z};
  for (std::size_t i = 0; i < 6; ++i) {
    int limit = 0;
    const backend::result q = backend::get_attribute(&limit, limits[i], id);
    if (q.code != backend::success) backend::forget_if_last(q.code);
    if (q.code != backend::success || limit <= 0 || asked[i] > static_cast<unsigned>(limit)) {
      return false;
    }
  }
  return k.max_threads_per_block > 0 &&
         cfg.block.volume() <= static_cast<std::uint64_t>(k.max_threads_per_block) &&
         k.max_dynamic_shared_bytes >= 0 &&
         cfg.shared_bytes <= static_cast<std::size_t>(k.max_dynamic_shared_bytes);
}
#else
    ;
#endif

/// Places the tagged ranges on `device`, on stream s, in stream order before the kernel,
/// through the one placement path (placement.hpp).
///
/// in() and inout() ranges are prefetched. An out() range is discarded and populated on the
/// device without moving data (CUDA >= 12.8, off the legacy default stream) only when it is
/// safe: no other argument of the launch can reach it (else the kernel may read it: it is
/// prefetched as inout), and the launch is known to be accepted (else a refused launch would
/// have lost the data). The placement path queues every prefetch that can throw before the
/// discards, so an exception never leaves data discarded. Elsewhere out() ranges are prefetched.
/// Ranges whose intent is map (a tag's, or the range's own: see unimem::intent) do not move: the
/// launching GPU maps them, with advice given once per range and GPU.
template <std::size_t N, class AcceptedFn>
void place_for_launch(const range_use (&uses)[N], int device, stream_ref s,
                      call_site where, AcceptedFn&& launch_accepted) {
  placement_range ranges[N == 0 ? 1 : N];
  std::size_t count = 0;
  bool any_discard = false;
  for (std::size_t i = 0; i < N; ++i) {
    if (!uses[i].tagged || uses[i].bytes == 0) continue;
    bool repeated = false;  // the same range tagged twice (in(b), inout(b)) is placed once
    for (std::size_t j = 0; j < i && !repeated; ++j) {
      repeated = uses[j].tagged && uses[j].same_range(uses[i]);
    }
    if (repeated) continue;
    // Its intent: the first tag of this range that names one (in(b), inout(b, mapped): mapped).
    intent_choice how = uses[i].how;
    for (std::size_t j = i + 1; j < N && how == intent_choice::follow; ++j) {
      if (uses[j].tagged && uses[j].same_range(uses[i])) how = uses[j].how;
    }
    // A mapped range is not moved, so there is nothing to discard (and no need to ask whether
    // the launch will be accepted).
    bool discard = uses[i].mode == access_mode::out && how != intent_choice::map;
    for (std::size_t j = 0; j < N && discard; ++j) {
      const bool other_writer = uses[j].tagged && uses[j].mode == access_mode::out;
      discard = j == i || other_writer || !uses[i].overlaps(uses[j]);
    }
    ranges[count++] = {uses[i].ptr, uses[i].bytes, discard, how};
    any_discard = any_discard || discard;
  }
  // The acceptance check queries the device and the kernel: only where a discard could happen.
  if (any_discard && discard_possible(location::device(device), s) && !launch_accepted()) {
    for (std::size_t i = 0; i < count; ++i) ranges[i].discard = false;
  }
  (void)place(ranges, count, location::device(device), s, "unimem::launch (access tags)", where,
              true);
}

}  // namespace detail

/// @brief Launches an ordinary `__global__` kernel on cfg.stream.
///
/// Each argument is checked at compile time against the kernel's parameter list:
/// a `managed_buffer<T>&` becomes `T*` (or `view<T>` where the parameter is a view), a
/// `const managed_buffer<T>&` becomes `const T*` (or `view<const T>`), anything else must be
/// trivially copyable and convert to the parameter. A launch error (bad configuration, too
/// much shared memory, an earlier sticky fault) is thrown at once; errors inside the kernel
/// surface at the next synchronisation. An empty grid launches nothing.
///
/// Arguments tagged with unimem::in(), out() or inout() are placed on the launching device,
/// on cfg.stream, before the kernel (see access.hpp): moved there, or mapped for it where their
/// intent says so (in(a, unimem::mapped)); untagged buffers are not placed.
///
/// The launching device: cfg.device when set (made current for the launch); else the stream's
/// device where it is known (a unimem::stream knows it; for a native handle in a launch with
/// tags the runtime is asked, so that data moves where the kernel runs); else the current
/// device. A stream of one device with on_device() of another throws unimem::error. Errors
/// name the file and line of the launch() call.
///
/// Containers are passed by the unimem_view hook (kernel_argument.hpp): unimem's buffers,
/// managed_vector and any container that opted in. A std::vector (host memory) is refused at
/// compile time. A kernel template must be named with its arguments: launch(kernel<float>, ...).
///
/// @code
///   __global__ void vector_add(const float* a, const float* b, float* c, std::size_t n);
///   unimem::launch(vector_add, unimem::grid_for(n), a, b, c, n);
/// @endcode
/// @throws unimem::error when the runtime rejects the launch, or the stream belongs to another
/// device than cfg.device.
/// @throws unimem::argument_error when a block extent is zero.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), detail::located_config located, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "unimem::launch: the number of arguments differs from the kernel's parameter "
                "count");
  if constexpr (sizeof...(Params) == sizeof...(Args)) {
    if constexpr (detail::parameter_list<Params...>::template accepts<Args...>()) {
      const launch_config& cfg = located.cfg;
      const call_site where = located.where;
      detail::check_config(cfg);
      if (cfg.empty()) return;  // no blocks: no work, no prefetch, no runtime call
      constexpr std::size_t tagged = (std::size_t{detail::is_tagged_v<Args>} + ... + 0);
      // The launching device, made current for the launch where it is not (see launch_device).
      const detail::launch_device launching(cfg, tagged != 0, where);
      {
        if constexpr (tagged != 0) {
          constexpr std::size_t reached =
              (std::size_t{detail::reaches_memory_v<const Args&>} + ... + 0);
          detail::range_use uses[reached]{};
          detail::range_use* next = uses;
          (detail::collect_range(next, args), ...);
          detail::place_for_launch(uses, launching.id, cfg.stream, where, [&] {
            return detail::launch_would_be_accepted(reinterpret_cast<const void*>(kernel), cfg);
          });
        }
        detail::launch_parameters(
            kernel, cfg, where,
            detail::to_parameter<Params>(detail::kernel_value(std::forward<Args>(args)))...);
      }
    } else {
      detail::parameter_list<Params...>::template diagnose<Args...>(
          std::index_sequence_for<Args...>{});
    }
  }
}

UNIMEM_END_NAMESPACE
