/// @file
/// @brief unimem::mpi's view of a range, its path and stream order, and the pinned staging
/// buffers kept for reuse (internal).
#pragma once

#include <mpi.h>

#include "../core.hpp"
#include "../core/detail/backend/pointers.hpp"
#include "../placement/placement.hpp"
#include "path.hpp"
#include "settings.hpp"

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {
namespace detail {
namespace backend = ::unimem::detail::backend;
/// A contiguous range as unimem::mpi sees it.
template <class T>
struct span {
  T* data;
  std::size_t size;
  memory kind;
};

template <class Kind>
constexpr memory memory_of_kind() noexcept {
  if constexpr (std::is_same<Kind, managed_memory>::value) {
    return memory::managed;
  } else if constexpr (std::is_same<Kind, device_memory>::value) {
    return memory::device;
  } else {
    static_assert(std::is_same<Kind, pinned_memory>::value, "an unknown unimem memory kind");
    return memory::pinned;
  }
}
/// The memory at p as the GPU runtime knows it; pageable when no runtime of this process made it.
template <class T>
memory runtime_memory_of(const T* p) noexcept {
  switch (p == nullptr ? backend::pointer_memory::unknown : backend::memory_of(p)) {
    case backend::pointer_memory::pinned: return memory::pinned;
    case backend::pointer_memory::device: return memory::device;
    case backend::pointer_memory::managed: return memory::managed;
    case backend::pointer_memory::pageable:
    case backend::pointer_memory::unknown: break;
  }
  return memory::pageable;
}
/// Whether container C allocates with std::allocator: operator new, pageable host memory.
template <class C, class = void>
struct std_allocated : std::false_type {};
template <class C>
struct std_allocated<C, std::void_t<typename C::allocator_type, typename C::value_type>>
    : std::is_same<typename C::allocator_type, std::allocator<typename C::value_type>> {};
/// The range r as (data, size, memory). The memory is known from the type for unimem's buffers
/// and arrays and std::allocator containers (pageable); other views and containers (a std::pmr
/// vector may hold device memory) ask the runtime (about 0.1 us).
template <class R>
auto span_of(R& r) {
  using C = std::remove_cv_t<std::remove_reference_t<R>>;
  using kind = ::unimem::detail::declared_memory_kind_t<C>;
  if constexpr (::unimem::detail::viewable_v<R>) {
    auto v = to_view(r);
    using T = typename decltype(v)::element_type;
    if constexpr (!std::is_void<kind>::value) {
      return span<T>{v.data(), v.size(), memory_of_kind<kind>()};
    } else {
      return span<T>{v.data(), v.size(), runtime_memory_of(v.data())};
    }
  } else {
    auto* p = ::unimem::detail::range_data(r);
    using T = std::remove_pointer_t<decltype(p)>;
    const std::size_t n = ::unimem::detail::range_size(r);
    if constexpr (std::is_array<C>::value || std_allocated<C>::value) {
      return span<T>{p, n, memory::pageable};
    } else {
      return span<T>{p, n, runtime_memory_of(p)};
    }
  }
}
/// span_of(r) with const elements: what a send reads.
template <class R>
auto const_span_of(R& r) {
  const auto sp = span_of(r);
  using T = std::remove_pointer_t<decltype(sp.data)>;
  return span<const T>{sp.data, sp.size, sp.kind};
}

inline int as_int(std::size_t n) noexcept { return static_cast<int>(n); }
/// Whether a range passed as R&& outlives the call: an lvalue, or a view (trivially copyable).
template <class R>
constexpr bool outlives_request_v = std::is_lvalue_reference<R>::value ||
                                    std::is_trivially_copyable<std::remove_reference_t<R>>::value;
/// Whether managed memory at [p, p + bytes) lives on the host, for the automatic policy.
inline bool managed_on_host(const void* p, std::size_t bytes, call_site where) {
  if (bytes == 0) return true;
  if (!::unimem::detail::device_migrates(::unimem::detail::current_device_id(where), where)) {
    return true;  // AMD without XNACK: managed memory is host memory the GPU maps
  }
  // Mapped (preferred location host) or last prefetched there: one query (0.2 us a message).
  int preferred = backend::no_location_id, prefetched = backend::no_location_id;
  const auto q = backend::range_attribute_int_pair(
      &preferred, backend::range_attribute::preferred_location, &prefetched,
      backend::range_attribute::last_prefetch_location, p, bytes);
  if (q.code != backend::success) {
    backend::forget_if_last(q.code);
    return false;
  }
  return preferred == backend::host_location_id || prefetched == backend::host_location_id;
}
/// The path of range s; managed memory said host_ready counts as host-resident, unasked.
template <class T>
path path_of(const span<T>& s, bool host_ready, call_site where) {
  const bool aware = current_gpu_awareness().device_pointers;
  const managed_path policy = current_settings().managed;
  const bool on_host = s.kind == memory::managed && !aware && policy == managed_path::automatic &&
                       (host_ready || managed_on_host(s.data, s.size * sizeof(T), where));
  return choose_path(s.kind, aware, policy, on_host);
}
/// Before MPI touches a range directly: waits for the stream's work; without one, every GPU's
/// (unless pageable); nothing for host_ready.
inline void settle(memory m, ordering o, call_site where) {
  if (!o.stream().is_default()) {
    o.stream().synchronize(where);
  } else if (o.every_gpu() && m != memory::pageable) {
    synchronize_all_devices(where);
  }
}
/// Before staging copies on o's stream, which orders after its work: without a stream, waits
/// for every GPU's (a kernel on a non-blocking stream may use the range).
inline void settle_for_copies(ordering o, call_site where) {
  if (o.every_gpu()) synchronize_all_devices(where);
}
/// Pinned blocks by power-of-two size, kept for reuse in slots taken and filled by
/// compare-and-exchange: no lock on a message's way.
class staging_pool {
 public:
  static constexpr std::size_t min_shift = 16;  // 64 KiB
  static constexpr std::size_t classes = 40;
  static constexpr std::size_t per_class = 4;

  void* take(std::size_t bytes, std::size_t* cls_out, call_site where) {
    std::size_t cls = 0;
    while ((std::size_t{1} << (min_shift + cls)) < bytes) ++cls;
    *cls_out = cls;
    for (auto& slot : free_[cls]) {
      void* p = slot.load();
      if (p != nullptr && slot.compare_exchange(p, nullptr)) return p;
    }
    return pinned_memory::allocate(block_bytes(cls), "unimem::mpi staging", where);
  }
  void give(void* p, std::size_t cls) noexcept {
    for (auto& slot : free_[cls]) {
      void* empty = nullptr;
      if (slot.compare_exchange(empty, p)) return;
    }
    pinned_memory::deallocate(p, block_bytes(cls));
  }
  std::size_t release() noexcept {
    std::size_t bytes = 0;
    for (std::size_t c = 0; c < classes; ++c) {
      for (auto& slot : free_[c]) {
        void* p = slot.load();
        if (p != nullptr && slot.compare_exchange(p, nullptr)) {
          pinned_memory::deallocate(p, block_bytes(c));
          bytes += block_bytes(c);
        }
      }
    }
    return bytes;
  }

 private:
  static constexpr std::size_t block_bytes(std::size_t cls) noexcept {
    return std::size_t{1} << (min_shift + cls);
  }
  ::unimem::detail::atomic_cell<void*> free_[classes][per_class];
};

inline staging_pool& pool() {
  static staging_pool* p = new staging_pool();  // never destroyed: buffers freed at exit time
  return *p;                                    // by other statics still find it
}
/// A pinned staging block, back to the pool when destroyed.
class staging {
 public:
  staging() noexcept = default;
  // In the body: as p_'s initialiser, take()'s write to cls_ would be undone by cls_'s own.
  staging(std::size_t bytes, call_site where) { p_ = pool().take(bytes, &cls_, where); }
  /// The block's size class in the pool.
  std::size_t size_class() const noexcept { return cls_; }
  staging(const staging&) = delete;
  staging& operator=(const staging&) = delete;
  staging(staging&& o) noexcept : p_(std::exchange(o.p_, nullptr)), cls_(o.cls_) {}
  staging& operator=(staging&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(cls_, o.cls_);
    return *this;
  }
  ~staging() {
    if (p_ != nullptr) pool().give(p_, cls_);
  }
  unsigned char* get() const noexcept { return static_cast<unsigned char*>(p_); }

 private:
  void* p_ = nullptr;
  std::size_t cls_ = 0;
};

inline void copy_in_order(void* dst, const void* src, std::size_t bytes, stream_ref s,
                          call_site where) {
  ::unimem::detail::check(
      backend::memcpy_async(dst, src, bytes, backend::copy_kind::infer, s.get()), where);
}
/// Cancels (a receive) or completes (a send) a posted MPI request after a failure.
inline void abandon(MPI_Request& r, bool receive) noexcept {
  if (r == MPI_REQUEST_NULL) return;
  int done = 0;
  MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  if (done == 0) {
    if (receive) MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}
}  // namespace detail
}  // namespace mpi
UNIMEM_END_NAMESPACE
