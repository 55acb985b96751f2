/// @file
/// @brief DLPack interchange: unimem memory exported as DLManagedTensorVersioned or legacy
/// DLManagedTensor, DLPack tensors imported as dlpack::tensor<T>, the device labels and stream
/// hand-off of the Python protocol (`__dlpack__`, `__dlpack_device__`). Not in unimem.hpp.
///
/// The DLPack header: a dlpack.h included before this header is used as it is (DLPack 1.x is
/// required: an older one stops the build with a message); otherwise the copy unimem ships
/// (unimem/detail/dlpack/dlpack.h: DLPack 1.1, Apache-2.0, its LICENSE beside it), not a system
/// one (Debian 12's libdlpack-dev is 0.6). All share the include guard DLPACK_DLPACK_H_, so one
/// defines the types and a later `#include <dlpack/dlpack.h>` adds nothing.
///
/// Half-precision types have a dtype_of() where their runtime header was included before this one
/// (none is included here: they are large): `__half`, `__nv_bfloat16`, on AMD `__hip_bfloat16`,
/// else the older `hip_bfloat16`.
#pragma once

#include "../core/config.hpp"
#include "../core/detail/backend/pointers.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../core/event.hpp"
#include "../core/kernel_argument.hpp"
#include "../core/memory_kind.hpp"
#include "../core/stream.hpp"
#include "../core/view.hpp"

#include <complex>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#if !defined(DLPACK_DLPACK_H_)
#include "detail/dlpack/dlpack.h"
#endif
#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION != 1
#error "unimem/dlpack.hpp needs DLPack 1.x; the dlpack.h included before it is another version \
(Debian 12's libdlpack-dev is 0.6): include unimem/dlpack.hpp first, or a DLPack 1.x dlpack.h."
#endif

UNIMEM_BEGIN_NAMESPACE
namespace dlpack {
#if defined(UNIMEM_DETAIL_HIP_AMD)
#define UNIMEM_DETAIL_DL(cuda, rocm) rocm
#else  // CUDA, and HIP on NVIDIA
#define UNIMEM_DETAIL_DL(cuda, rocm) cuda
#endif
/// GPU memory's label in this build: kDLCUDA (kDLROCM on AMD).
inline constexpr DLDeviceType gpu_device_type = UNIMEM_DETAIL_DL(kDLCUDA, kDLROCM);
/// Managed memory's own label: kDLCUDAManaged (AMD has none: kDLROCM).
inline constexpr DLDeviceType managed_device_type = UNIMEM_DETAIL_DL(kDLCUDAManaged, kDLROCM);
/// Pinned memory's own label: kDLCUDAHost (kDLROCMHost).
inline constexpr DLDeviceType pinned_device_type = UNIMEM_DETAIL_DL(kDLCUDAHost, kDLROCMHost);
/// The stream integer Python's `None` stands for in `__dlpack__(stream=None)`: 1 (ROCm: 0).
inline constexpr std::intptr_t default_stream_value = UNIMEM_DETAIL_DL(1, 0);
#undef UNIMEM_DETAIL_DL
/// The most dimensions a tensor may have, imported or exported: 64, as NumPy (2.x) and CuPy.
inline constexpr int max_ndim = 64;

/// @brief Calls m's deleter once, if it has one (m may be null), and contains an exception it
/// throws: DLPack's deleter is a C function that must not throw; one that does is caught and
/// dropped (the tensor counts as deleted), so that a noexcept path (a destructor, a capsule's
/// destructor) does not end in std::terminate.
template <class Managed>
void call_deleter(Managed* m) noexcept {
  static_assert(std::is_same<Managed, DLManagedTensorVersioned>::value ||
                    std::is_same<Managed, DLManagedTensor>::value,
                "unimem::dlpack::call_deleter takes DLManagedTensorVersioned or DLManagedTensor");
  if (m == nullptr || m->deleter == nullptr) return;
  try {
    m->deleter(m);
  } catch (...) {  // the producer's bug, contained: nothing else can be done with it here
  }
}

/// @brief What memory a view lies in, which decides its device labels.
enum class memory_type {
  host,     ///< Pageable host memory: kDLCPU.
  pinned,   ///< Pinned host memory: kDLCPU, or its own kDLCUDAHost (kDLROCMHost).
  managed,  ///< Managed memory: kDLCUDA (kDLROCM), kDLCPU, or its own kDLCUDAManaged.
  device,   ///< Device memory: kDLCUDA (kDLROCM) only.
};
/// @brief The label a consumer asks for: the one for most consumers, the memory's specific one,
/// a GPU one, or the CPU's.
enum class device_request {
  natural,   ///< The label most consumers take (natural_device()): what `__dlpack_device__` says.
  gpu,       ///< A GPU label: kDLCUDA (kDLROCM), on the memory's GPU.
  cpu,       ///< The CPU's label, kDLCPU, for memory the host can read.
  specific,  ///< The memory kind's own label (specific_device()): kDLCUDAManaged, kDLCUDAHost.
};
/// @brief A device_request, or the exact DLDevice a consumer asked for (`dl_device=(type, id)`).
struct device_choice {
  /// @brief A request (default: the memory's own label).
  constexpr device_choice(device_request r = device_request::natural) noexcept : request(r) {}
  constexpr device_choice(DLDevice d) noexcept : exact(true), device(d) {}  ///< This label.
  device_request request = device_request::natural;  ///< Used when !exact.
  bool exact = false;                                 ///< True: `device` is asked for.
  DLDevice device{kDLCPU, 0};                         ///< The label asked for.
};

/// @brief A non-owning list of int64 (shape, strides) for the duration of one call: a braced
/// list, a pointer and count, or a contiguous container (a std::vector<std::int64_t>).
class dims {
 public:
  constexpr dims() noexcept = default;  ///< Empty.
  /// @brief A braced list; it lives until the end of the full expression, so pass it in the call.
  constexpr dims(std::initializer_list<std::int64_t> l) noexcept : list_(l) {}
  /// @brief The n values at p.
  constexpr dims(const std::int64_t* p, std::size_t n) noexcept : data_(p), size_(n) {}
  /// @brief The values of a contiguous container of std::int64_t.
  template <class C, class = std::enable_if_t<
                         !std::is_same<C, dims>::value &&
                         std::is_convertible<decltype(std::declval<const C&>().data()),
                                             const std::int64_t*>::value>>
  constexpr dims(const C& c) noexcept : dims(c.data(), c.size()) {}  // NOLINT
  /// @brief The values.
  constexpr const std::int64_t* data() const noexcept { return data_ ? data_ : list_.begin(); }
  constexpr std::size_t size() const noexcept { return data_ ? size_ : list_.size(); }  ///< Count.
  /// @brief Value i.
  constexpr std::int64_t operator[](std::size_t i) const noexcept { return data()[i]; }

 private:
  std::initializer_list<std::int64_t> list_;
  const std::int64_t* data_ = nullptr;
  std::size_t size_ = 0;
};
}  // namespace dlpack

namespace dlpack {
template <class T>
class tensor;
}  // namespace dlpack

namespace detail {
template <class T>
struct is_dl_tensor : std::false_type {};
template <class T>
struct is_dl_tensor<dlpack::tensor<T>> : std::true_type {};
/// DLDataTypeCode of T, -1 for a type DLPack cannot describe.
template <class T, class = void>
struct dl_code : std::integral_constant<int, -1> {};
template <class T>
struct dl_code<T, std::enable_if_t<std::is_integral<T>::value && !std::is_same<T, bool>::value>>
    : std::integral_constant<int, std::is_signed<T>::value ? kDLInt : kDLUInt> {};
template <> struct dl_code<bool> : std::integral_constant<int, kDLBool> {};
template <> struct dl_code<float> : std::integral_constant<int, kDLFloat> {};
template <> struct dl_code<double> : std::integral_constant<int, kDLFloat> {};
template <> struct dl_code<std::complex<float>> : std::integral_constant<int, kDLComplex> {};
template <> struct dl_code<std::complex<double>> : std::integral_constant<int, kDLComplex> {};
#if defined(__CUDA_FP16_H__) || defined(HIP_INCLUDE_HIP_AMD_DETAIL_HIP_FP16_H)
template <> struct dl_code<__half> : std::integral_constant<int, kDLFloat> {};
#endif
#if defined(__CUDA_BF16_H__) && !defined(UNIMEM_DETAIL_HIP_AMD)
template <> struct dl_code<__nv_bfloat16> : std::integral_constant<int, kDLBfloat> {};
#endif
#if defined(UNIMEM_DETAIL_HIP_AMD) && defined(_HIP_INCLUDE_HIP_AMD_DETAIL_HIP_BF16_H_)
template <> struct dl_code<__hip_bfloat16> : std::integral_constant<int, kDLBfloat> {};
#elif defined(UNIMEM_DETAIL_HIP_AMD) && defined(_HIP_BFLOAT16_H_)  // (may alias the one above)
template <> struct dl_code<hip_bfloat16> : std::integral_constant<int, kDLBfloat> {};
#endif

/// Appends "float32", "complex64", "bool8", ("x4" for lanes).
inline refusal& append_dtype(refusal& r, DLDataType t) {
  static const char* const names[] = {"int", "uint", "float", "handle", "bfloat", "complex",
                                      "bool"};
  if (t.code < 7) r.append(names[t.code]); else r.append("code ").append(int{t.code}).append("/");
  r.append(int{t.bits});
  return t.lanes == 1 ? r : r.append("x").append(int{t.lanes});
}
/// Appends "(kDLCUDA, 0)".
inline refusal& append_device(refusal& r, DLDevice d) {
  static const char* const names[] = {"", "kDLCPU", "kDLCUDA", "kDLCUDAHost", "kDLOpenCL", "", "",
                                      "kDLVulkan", "kDLMetal", "kDLVPI", "kDLROCM", "kDLROCMHost",
                                      "kDLExtDev", "kDLCUDAManaged", "kDLOneAPI", "kDLWebGPU",
                                      "kDLHexagon", "kDLMAIA"};
  const int t = static_cast<int>(d.device_type);
  r.append("(");
  if (t >= 0 && t < 18 && names[t][0] != '\0') r.append(names[t]); else r.append("type ").append(t);
  return r.append(", ").append(int{d.device_id}).append(")");
}
[[noreturn]] UNIMEM_DETAIL_COLD inline void dl_refuse(const refusal& r) {
  throw_refused<invalid_argument>(r);
}
/// Why a layout was refused: a negative extent, or more than PTRDIFF_MAX bytes.
enum class dl_shape_fault { none, negative, too_large };
/// Elements, lowest and highest element offset of a layout (strides null: compact row-major), with
/// elements of `element_size` bytes; too_large unless the elements and the span from the lowest
/// to the highest both fit in PTRDIFF_MAX bytes. Overflow-safe; a layout with an extent of 0 has
/// no element and its strides are not read.
inline dl_shape_fault dl_extent(int n, const std::int64_t* shape, const std::int64_t* strides,
                                std::size_t element_size, std::int64_t& count, std::int64_t& low,
                                std::int64_t& high) noexcept {
  const auto limit = static_cast<std::int64_t>(PTRDIFF_MAX / element_size);  // elements
  count = 1, low = 0, high = 0;
  bool empty = false;
  for (int i = 0; i < n; ++i) {
    if (shape[i] < 0) return dl_shape_fault::negative;
    empty = empty || shape[i] == 0;
  }
  if (empty) {
    count = 0;
    return dl_shape_fault::none;
  }
  for (int i = n - 1; i >= 0; --i) {  // invariants: count <= limit, high - low + 1 <= limit
    const std::int64_t s = strides ? strides[i] : count;
    if (shape[i] > limit / count) return dl_shape_fault::too_large;
    count *= shape[i];
    const std::uint64_t step = s < 0 ? 0 - static_cast<std::uint64_t>(s)
                                     : static_cast<std::uint64_t>(s);
    const auto room = static_cast<std::uint64_t>(limit - 1 - (high - low));
    if (step != 0 && static_cast<std::uint64_t>(shape[i] - 1) > room / step) {
      return dl_shape_fault::too_large;
    }
    const auto reach = static_cast<std::int64_t>(static_cast<std::uint64_t>(shape[i] - 1) * step);
    if (s < 0) low -= reach; else high += reach;
  }
  return dl_shape_fault::none;
}
/// Appends "(2, 3)".
inline refusal& append_dims(refusal& r, const std::int64_t* v, int n) {
  r.append("(");
  for (int i = 0; i < n; ++i) r.append(i ? ", " : "").append(v[i]);
  return r.append(")");
}
/// The memory_type of a container's declared memory kind.
template <class C>
constexpr dlpack::memory_type dl_memory_of() noexcept {
  using K = declared_memory_kind_t<C>;
  if constexpr (std::is_void<K>::value) {
    static_assert(sizeof(C) == 0,
                  "unimem::dlpack: this container declares no memory kind (using memory_kind = "
                  "...): export its view with a memory_type instead");
    return dlpack::memory_type::host;
  } else {
    return K::migrates             ? dlpack::memory_type::managed
           : !K::host_accessible   ? dlpack::memory_type::device
           : K::device_accessible  ? dlpack::memory_type::pinned
                                   : dlpack::memory_type::host;
  }
}
/// The device of GPU memory at p (null: the current device; 0 where there is no GPU).
inline int dl_device_id(dlpack::memory_type m, const void* p, call_site where) {
  if (m == dlpack::memory_type::host || m == dlpack::memory_type::pinned) return 0;
  int id = 0;
  if (p != nullptr && backend::pointer_device(p, &id).code == backend::success) return id;
  const backend::result r = backend::get_device(&id);
  if (r.code == backend::success) return id;
  if (!no_gpu_present()) throw_error(r, where);  // (HIP says "invalid device" then)
  (void)backend::take_last_error();
  return 0;
}
/// The single heap block behind an exported tensor: the DLPack struct, the owner, then shape
/// and strides; manager_ctx points to it, the deleter destroys it.
template <class Managed, class Owner>
struct dl_block {
  Managed managed;
  Owner owner;
  static void destroy(Managed* self) noexcept {
    auto* b = static_cast<dl_block*>(self->manager_ctx);
    b->~dl_block();
    ::operator delete(static_cast<void*>(b));
  }
};
}  // namespace detail

namespace dlpack {
/// @brief The DLPack element type of T (const ignored).
/// @code
///   static_assert(unimem::dlpack::dtype_of<float>().bits == 32, "");
/// @endcode
template <class T>
constexpr DLDataType dtype_of() noexcept {
  using U = std::remove_cv_t<T>;
  static_assert(unimem::detail::dl_code<U>::value >= 0,
                "unimem::dlpack::dtype_of: DLPack cannot describe this element type (integers, "
                "bool, float, double, std::complex<float|double>; __half and bfloat16 where their "
                "header is included before unimem/dlpack.hpp)");
  return DLDataType{static_cast<std::uint8_t>(unimem::detail::dl_code<U>::value),
                    static_cast<std::uint8_t>(8 * sizeof(U)), 1};
}

/// @brief The label most consumers take, and `__dlpack_device__`'s: the GPU's, kDLCUDA (kDLROCM)
/// on GPU `id`, for managed and device memory (as torch labels its own managed tensors); the
/// CPU's, kDLCPU 0, for pinned and host memory.
constexpr DLDevice natural_device(memory_type m, int id) noexcept {
  return m == memory_type::managed || m == memory_type::device ? DLDevice{gpu_device_type, id}
                                                                : DLDevice{kDLCPU, 0};
}
/// @brief The memory kind's own label: managed memory kDLCUDAManaged on GPU `id` (AMD has none:
/// kDLROCM), pinned memory kDLCUDAHost (kDLROCMHost) 0; device and host memory as
/// natural_device(). CuPy and NumPy take kDLCUDAManaged, torch refuses it and kDLCUDAHost.
constexpr DLDevice specific_device(memory_type m, int id) noexcept {
  return m == memory_type::managed  ? DLDevice{managed_device_type, id}
         : m == memory_type::pinned ? DLDevice{pinned_device_type, 0}
                                    : natural_device(m, id);
}

/// @brief The memory a label says: kDLCPU host, kDLCUDAHost (kDLROCMHost) pinned,
/// kDLCUDAManaged managed, any other (kDLCUDA, kDLROCM: which may be managed memory too) device.
constexpr memory_type memory_type_of(DLDeviceType d) noexcept {
  return d == kDLCPU                                             ? memory_type::host
         : d == pinned_device_type                               ? memory_type::pinned
         : d == managed_device_type && d != gpu_device_type      ? memory_type::managed
                                                                 : memory_type::device;
}

/// @brief The label to export memory m of GPU `id` with, for what the consumer asked: natural
/// (natural_device()); specific (specific_device()); gpu (managed and device memory: kDLCUDA or
/// kDLROCM on `id`); cpu (all but device memory: kDLCPU 0); or an exact DLDevice that is one of
/// those.
/// @throws unimem::invalid_argument for any other label, naming the labels the memory can have.
inline DLDevice device_for(memory_type m, int id, device_choice c) {
  const DLDevice labels[] = {natural_device(m, id), specific_device(m, id),
                             DLDevice{gpu_device_type, id}, DLDevice{kDLCPU, 0}};
  const bool allowed[] = {true, true, m == memory_type::managed || m == memory_type::device,
                          m != memory_type::device};
  const device_request asks[] = {device_request::natural, device_request::specific,
                                 device_request::gpu, device_request::cpu};
  const auto same = [](DLDevice a, DLDevice b) {
    return a.device_type == b.device_type && a.device_id == b.device_id;
  };
  for (int i = 0; i < 4; ++i) {
    if (allowed[i] && (c.exact ? same(c.device, labels[i]) : c.request == asks[i])) {
      return labels[i];
    }
  }
  static const char* const kinds[] = {"host", "pinned", "managed", "device"};
  using unimem::detail::append_device;
  unimem::detail::refusal t("unimem::dlpack: ");
  t.append(kinds[static_cast<int>(m)]).append(" memory cannot be exported as ");
  if (c.exact) append_device(t, c.device);
  else t.append(c.request == device_request::gpu ? "a GPU tensor" : "a CPU tensor");
  t.append("; its labels: ");
  for (int i = 0; i < 4; ++i) {
    bool listed = false;
    for (int k = 0; k < i; ++k) listed = listed || (allowed[k] && same(labels[k], labels[i]));
    if (allowed[i] && !listed) append_device(t.append(i ? ", " : ""), labels[i]);
  }
  unimem::detail::dl_refuse(t);
}

/// @brief The natural label of a unimem buffer (or container with a memory kind), for
/// `__dlpack_device__` (natural_device()): its GPU's for managed, pool and device memory (an
/// empty one: the current GPU), the CPU's for pinned memory.
template <class Buffer>
DLDevice dlpack_device(const Buffer& b, call_site where = call_site::current()) {
  constexpr memory_type m = unimem::detail::dl_memory_of<Buffer>();
  return natural_device(m, unimem::detail::dl_device_id(m, unimem::to_view(b).data(), where));
}

}  // namespace dlpack

namespace detail {
template <class Managed, class T, class Owner>
Managed* dl_export(view<T> v, DLDevice device, Owner&& owner, dlpack::dims shape,
                   dlpack::dims strides, std::size_t offset) {
  static_assert(std::is_same<Managed, DLManagedTensorVersioned>::value ||
                    std::is_same<Managed, DLManagedTensor>::value,
                "unimem::dlpack::to_dlpack makes DLManagedTensorVersioned or DLManagedTensor");
  using block = dl_block<Managed, std::decay_t<Owner>>;
  static_assert(std::is_nothrow_move_constructible<std::decay_t<Owner>>::value,
                "unimem::dlpack::to_dlpack: the owner must move without throwing");
  constexpr std::size_t head = (sizeof(block) + 7) / 8 * 8;
  const std::size_t n = shape.size() == 0 ? 1 : shape.size();
  refusal r("unimem::dlpack::to_dlpack: ");
  if (std::is_same<Managed, DLManagedTensor>::value && std::is_const<T>::value) {
    dl_refuse(r.append("read-only memory (const elements) as a legacy DLManagedTensor, which "
                       "cannot say read-only: export a DLManagedTensorVersioned (a consumer's "
                       "max_version 1.0 or later)"));
  }
  if (n > static_cast<std::size_t>(dlpack::max_ndim)) {
    throw_refused<length_error>(r.append(n).append(" dimensions (at most ")
                                    .append(dlpack::max_ndim).append(")"));
  }
  if (strides.size() != 0 && strides.size() != n) {
    dl_refuse(r.append(strides.size()).append(" strides for ").append(n).append(" dimensions"));
  }
  if (offset > v.size()) {
    dl_refuse(r.append("offset ").append(offset).append(" is beyond the ").append(v.size())
                  .append(" elements of the memory"));
  }
  void* raw = ::operator new(head + 2 * n * sizeof(std::int64_t));
  auto* out = reinterpret_cast<std::int64_t*>(static_cast<char*>(raw) + head);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = shape.size() == 0 ? static_cast<std::int64_t>(v.size() - offset) : shape[i];
  }
  std::int64_t count = 0, low = 0, high = 0;
  if (dl_extent(static_cast<int>(n), out, strides.size() ? strides.data() : nullptr, sizeof(T),
                count, low, high) != dl_shape_fault::none ||
      (count != 0 && (static_cast<std::int64_t>(offset) + low < 0 ||
                      static_cast<std::uint64_t>(offset) + static_cast<std::uint64_t>(high) >=
                          v.size()))) {
    append_dims(r.append("shape "), out, static_cast<int>(n));
    ::operator delete(raw);
    if (strides.size() != 0) {
      append_dims(r.append(" with strides "), strides.data(), static_cast<int>(n));
    }
    dl_refuse(r.append(" from element ").append(offset).append(" does not lie within the ")
                  .append(v.size()).append(" elements of the memory"));
  }
  for (std::size_t i = n; i-- > 0;) {  // strides as given, else compact row-major
    const std::uint64_t next = i + 1 == n ? 1 : static_cast<std::uint64_t>(out[n + i + 1]) *
                                                    static_cast<std::uint64_t>(out[i + 1]);
    out[n + i] = strides.size() ? strides[i] : static_cast<std::int64_t>(next);
  }
  auto* b = new (raw) block{Managed{}, std::forward<Owner>(owner)};
  DLTensor& t = b->managed.dl_tensor;
  t.data = count == 0 ? nullptr : const_cast<std::remove_cv_t<T>*>(v.data());
  t.device = device;
  t.ndim = static_cast<std::int32_t>(n);
  t.dtype = dlpack::dtype_of<T>();
  t.shape = out;
  t.strides = out + n;
  t.byte_offset = count == 0 ? 0 : offset * sizeof(T);
  b->managed.manager_ctx = b;
  b->managed.deleter = &block::destroy;
  if constexpr (std::is_same<Managed, DLManagedTensorVersioned>::value) {
    b->managed.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    b->managed.flags = std::is_const<T>::value ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  }
  return &b->managed;
}
}  // namespace detail

namespace dlpack {
/// @brief Exports view v as a DLPack tensor that keeps `owner` alive until its
/// deleter runs (a null owner: the memory is borrowed, and the caller keeps it alive until then).
/// Managed: DLManagedTensorVersioned (version 1.x, DLPACK_FLAG_BITMASK_READ_ONLY for const T) or
/// DLManagedTensor (no flags: refused for const T, which it would hand out as writable). Shape:
/// one dimension over v.size() - offset elements by default; strides in elements (default compact row-major), always written out; `offset` elements from
/// v.data() go into byte_offset. Everything lives in one heap block freed by the deleter.
/// @code
///   auto* t = unimem::dlpack::to_dlpack(v, dlpack::memory_type::host, 0, keep, {}, {2, 3});
/// @endcode
/// @throws unimem::invalid_argument when shape, strides and offset reach outside v, for a label
/// the memory cannot have (device_for()), or for const T as a DLManagedTensor;
/// unimem::length_error for more than max_ndim dimensions; std::bad_alloc. Nothing is taken on a
/// throw.
template <class Managed = DLManagedTensorVersioned, class T>
Managed* to_dlpack(view<T> v, memory_type m, int device_id, std::shared_ptr<void> owner,
                   device_choice device = {}, dims shape = {}, dims strides = {},
                   std::size_t offset = 0) {
  return unimem::detail::dl_export<Managed>(v, device_for(m, device_id, device), std::move(owner),
                                            shape, strides, offset);
}

/// @brief Exports a unimem buffer (managed_buffer, pool_buffer, device_buffer, pinned_buffer, or
/// a container with a memory kind), moved in: the tensor owns it, and its deleter frees it. The
/// label follows `device` (device_for(); the buffer's GPU, for an empty one the current GPU);
/// shape, strides and offset as for a view. A throw leaves the buffer with the caller.
/// @code
///   DLManagedTensorVersioned* t = unimem::dlpack::to_dlpack(std::move(buf), {}, {rows, cols});
/// @endcode
/// @throws as the view form; unimem::error when the runtime cannot say where the memory is.
template <class Managed = DLManagedTensorVersioned, class Buffer,
          std::enable_if_t<unimem::detail::viewable_v<std::remove_reference_t<Buffer>> &&
                               !unimem::detail::is_view<std::decay_t<Buffer>>::value, int> = 0>
Managed* to_dlpack(Buffer&& buffer, device_choice device = {}, dims shape = {},
                   dims strides = {}, std::size_t offset = 0,
                   call_site where = call_site::current()) {
  static_assert(!std::is_lvalue_reference<Buffer>::value &&
                    !std::is_const<std::remove_reference_t<Buffer>>::value,
                "unimem::dlpack::to_dlpack: the tensor owns the memory: move the buffer in "
                "(std::move(b)) or pass a std::shared_ptr to it");
  constexpr memory_type m = unimem::detail::dl_memory_of<std::decay_t<Buffer>>();
  const DLDevice d = device_for(m, dlpack_device(buffer, where).device_id, device);
  const auto v = unimem::to_view(buffer);
  return unimem::detail::dl_export<Managed>(v, d, std::move(buffer), shape, strides, offset);
}

/// @brief Exports a shared buffer: the tensor holds a reference until its deleter runs; a
/// `std::shared_ptr<const B>` gives a read-only tensor. Otherwise as the moved-in form.
/// @throws unimem::invalid_argument for a null pointer; as the moved-in form.
template <class Managed = DLManagedTensorVersioned, class Buffer,
          std::enable_if_t<!unimem::detail::is_dl_tensor<std::remove_cv_t<Buffer>>::value,
                           int> = 0>
Managed* to_dlpack(std::shared_ptr<Buffer> buffer, device_choice device = {}, dims shape = {},
                   dims strides = {}, std::size_t offset = 0,
                   call_site where = call_site::current()) {
  if (!buffer) {
    unimem::detail::dl_refuse(
        unimem::detail::refusal("unimem::dlpack::to_dlpack: a null std::shared_ptr"));
  }
  constexpr memory_type m = unimem::detail::dl_memory_of<std::remove_cv_t<Buffer>>();
  const DLDevice d = device_for(m, dlpack_device(*buffer, where).device_id, device);
  const auto v = unimem::to_view(*buffer);
  return unimem::detail::dl_export<Managed>(v, d, std::move(buffer), shape, strides, offset);
}

/// @brief True for the labels whose `__dlpack__` is given a stream integer: kDLCUDA and
/// kDLROCM. The others are stream-less for the DLPack Python specification (kDLCPU, kDLCUDAHost,
/// kDLCUDAManaged, kDLROCMHost: "only None is accepted"): a consumer passes `stream=None`.
constexpr bool takes_stream(DLDeviceType d) noexcept { return d == kDLCUDA || d == kDLROCM; }

/// @brief A stream named by the integer of the DLPack protocol (`__dlpack__(stream=...)`) or the
/// CUDA Array Interface.
struct protocol_stream {
  bool synchronize = true;  ///< False for -1: the producer must not synchronise.
  stream_ref stream;        ///< The stream, when synchronize.
};
/// @brief The stream a protocol integer names. CUDA (and HIP on NVIDIA): 1 the legacy default
/// stream, 2 the per-thread default stream, -1 no synchronisation, above 2 a stream handle; 0 is
/// refused (ambiguous). ROCm: 0 the default stream, -1 no synchronisation, above 2 a handle; 1
/// and 2 are refused. Python's `None` is default_stream_value for `__dlpack__`, -1 for the CUDA
/// Array Interface (where it means "no synchronisation").
/// @throws unimem::invalid_argument for the refused values and values below -1.
inline protocol_stream stream_from_protocol(std::intptr_t value) {
  namespace backend = unimem::detail::backend;
#if defined(UNIMEM_DETAIL_HIP_AMD)
  const bool refused = value == 1 || value == 2 || value < -1;
  if (value == 0) return {true, stream_ref()};
#else
  const bool refused = value == 0 || value < -1;
  if (value == 1) return {true, stream_ref(backend::legacy_stream())};
  if (value == 2) return {true, stream_ref(backend::per_thread_stream())};
#endif
  if (value == -1) return {false, stream_ref()};
  if (refused) {
    unimem::detail::dl_refuse(unimem::detail::refusal("unimem::dlpack::stream_from_protocol: ")
        .append(value).append(" names no stream here (") .append(backend::name())
        .append(": -1 no synchronisation, ")
        .append(default_stream_value == 0 ? "0 the default stream"
                                          : "1 legacy, 2 per-thread default")
        .append(", above 2 a stream handle)"));
  }
  return {true, stream_ref(reinterpret_cast<backend::stream_handle>(value))};
}

/// @brief Orders `consumer` after the work queued on `producer` so far, on the device (an event
/// recorded on producer, which consumer waits for; the host does not wait). Nothing for the same
/// stream. An exporter calls it with its stream and the one `__dlpack__` was given, an importer
/// with the producer's stream and its own.
/// @throws unimem::error when the runtime fails.
inline void stream_handoff(stream_ref producer, stream_ref consumer,
                           call_site where = call_site::current()) {
  if (producer == consumer) return;
  int id = unimem::detail::stream_device(producer, where);  // no_device: the current one's
  if (id == no_device) id = unimem::detail::current_device_id(where);
  device_guard on(id, where);
  event e(event::timing_mode::disable_timing, where);
  e.record(producer, where);
  consumer.wait(e, where);
}
/// @brief stream_handoff(producer, consumer.stream) unless consumer says not to synchronise.
inline void stream_handoff(stream_ref producer, protocol_stream consumer,
                           call_site where = call_site::current()) {
  if (consumer.synchronize) stream_handoff(producer, consumer.stream, where);
}

/// @brief A DLPack tensor taken over from its producer, with elements of type T: move-only; its
/// destructor (or reset()) calls the producer's deleter exactly once. A kernel argument and a
/// tag target as a view over the memory it covers (its elements when contiguous()).
///
/// The constructors own the tensor from the call on: when they throw (a refused tensor), they
/// call its deleter first, as a DLPack consumer that accepted it must. A null pointer is refused
/// with nothing to delete. A producer is untrusted input: refused, before anything it cannot
/// trust is read, are a major version other than 1 (only the deleter is touched, as the DLPack
/// header says); another element type; a read-only tensor as non-const T; a label this build
/// cannot reach (kDLCPU, and the labels above of this backend, are reachable), or a GPU label
/// whose device id is not below device_count() (kDLCPU's and pinned memory's id is not read);
/// ndim below 0 or above max_ndim; a null shape, a negative extent, or elements or a span from
/// the lowest to the highest element beyond PTRDIFF_MAX bytes (length_error); a null data with
/// elements; byte_offset beyond PTRDIFF_MAX, or data + byte_offset or any element past either
/// end of the address space (out_of_range); a first element misaligned for T. A deleter that
/// throws is contained (call_deleter()).
/// @code
///   unimem::dlpack::tensor<const float> x(capsule_pointer);
///   unimem::launch(kernel, unimem::grid_for(x.size()), unimem::in(x), x.size());
/// @endcode
template <class T>
class tensor {
 public:
  using element_type = T;  ///< The element type, const included.
  tensor() noexcept = default;  ///< Holds no tensor.
  /// @brief Takes over m. @throws unimem::invalid_argument as the class says (after deleting m).
  explicit tensor(DLManagedTensorVersioned* m) : versioned_(m) { accept(); }
  /// @brief Takes over a legacy m (no flags: writable). @throws as above.
  explicit tensor(DLManagedTensor* m) : legacy_(m) { accept(); }
  /// @brief Takes over m, then orders `consumer` after `producer` (stream_handoff()).
  /// @throws as above; unimem::error from the runtime (m is deleted then too).
  template <class M>
  tensor(M* m, stream_ref producer, stream_ref consumer, call_site where = call_site::current())
      : tensor(m) {
    stream_handoff(producer, consumer, where);
  }
  tensor(const tensor&) = delete;             ///< Not copyable: owns the producer's tensor.
  tensor& operator=(const tensor&) = delete;  ///< Not copyable.
  /// @brief Takes the other's tensor; the other holds none.
  tensor(tensor&& o) noexcept { swap(o); }
  /// @brief Deletes this tensor's, takes the other's.
  tensor& operator=(tensor&& o) noexcept {
    tensor(std::move(o)).swap(*this);
    return *this;
  }
  ~tensor() { reset(); }  ///< Calls the deleter, if a tensor is held.
  /// @brief Calls the producer's deleter (once) and holds nothing.
  /// A deleter that throws is contained (call_deleter()).
  void reset() noexcept {
    call_deleter(std::exchange(versioned_, nullptr));
    call_deleter(std::exchange(legacy_, nullptr));
    first_ = 0, extent_ = 0, size_ = 0, row_major_ = true;
  }
  /// @brief Exchanges the two tensors.
  void swap(tensor& o) noexcept {
    std::swap(versioned_, o.versioned_), std::swap(legacy_, o.legacy_);
    std::swap(first_, o.first_), std::swap(extent_, o.extent_), std::swap(size_, o.size_);
    std::swap(row_major_, o.row_major_);
  }
  /// @brief True when a tensor is held.
  explicit operator bool() const noexcept { return versioned_ != nullptr || legacy_ != nullptr; }
  /// @brief The producer's DLTensor (a tensor must be held).
  const DLTensor& dl_tensor() const noexcept {
    return versioned_ ? versioned_->dl_tensor : legacy_->dl_tensor;
  }
  /// @brief The first element: data + byte_offset (null when none held, or when data is null,
  /// which only a tensor without elements may have).
  T* data() const noexcept {
    return *this && dl_tensor().data != nullptr
               ? reinterpret_cast<T*>(static_cast<char*>(dl_tensor().data) +
                                      dl_tensor().byte_offset)
               : nullptr;
  }
  /// @brief The number of dimensions.
  int ndim() const noexcept { return *this ? dl_tensor().ndim : 0; }
  /// @brief The extents.
  dims shape() const noexcept { return *this ? dims(dl_tensor().shape, ndim()) : dims(); }
  /// @brief The strides in elements as the producer gave them: empty when it gave none
  /// (compact row-major; stride() computes them).
  dims strides() const noexcept {
    return *this && dl_tensor().strides ? dims(dl_tensor().strides, ndim()) : dims();
  }
  /// @brief The stride of dimension i in elements, given or compact row-major (for a tensor
  /// without elements whose later extents multiply beyond int64: 0).
  std::int64_t stride(int i) const noexcept {
    if (dl_tensor().strides) return dl_tensor().strides[i];
    std::int64_t s = 1;
    for (int k = ndim() - 1; k > i; --k) {
      const std::int64_t e = dl_tensor().shape[k];
      if (e != 0 && s > INT64_MAX / e) return 0;
      s *= e;
    }
    return s;
  }
  /// @brief The number of elements.
  std::size_t size() const noexcept { return size_; }
  /// @brief Where the memory is.
  DLDevice device() const noexcept { return *this ? dl_tensor().device : DLDevice{kDLCPU, 0}; }
  /// @brief DLPACK_FLAG_BITMASK_READ_ONLY set (a versioned tensor only).
  bool read_only() const noexcept {
    return versioned_ && (versioned_->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  }
  /// @brief True when the elements are compact and row-major (an empty tensor is).
  bool contiguous() const noexcept { return row_major_; }
  /// @brief The elements as a view, in row-major order.
  /// @throws unimem::invalid_argument when the tensor is not contiguous().
  unimem::view<T> view() const {
    if (!contiguous()) {
      unimem::detail::dl_refuse(unimem::detail::refusal(
          "unimem::dlpack::tensor::view: the tensor is not contiguous (strided): use data(), "
          "shape() and stride()"));
    }
    return size_ == 0 ? unimem::view<T>() : unimem::view<T>(data(), size_);
  }
  /// @brief The memory the tensor covers, lowest to highest element (its elements when
  /// contiguous()): what launch() passes and access tags and placement calls place.
  friend unimem::view<T> unimem_view(tensor& t) noexcept { return t.covered(); }
  /// @brief The same, of const elements.
  friend unimem::view<const T> unimem_view(const tensor& t) noexcept { return t.covered(); }

 private:
  unimem::view<T> covered() const noexcept {
    return extent_ == 0 ? unimem::view<T>() : unimem::view<T>(data() + first_, extent_);
  }
  void accept() {
    try {
      check();
    } catch (...) {
      reset();
      throw;
    }
  }
  void check() {
    namespace ud = unimem::detail;
    ud::refusal r("unimem::dlpack::tensor: ");
    if (!*this) ud::dl_refuse(r.append("a null DLPack tensor"));
    if (versioned_ && versioned_->version.major != DLPACK_MAJOR_VERSION) {
      ud::dl_refuse(r.append("DLPack version ").append(versioned_->version.major)
          .append(".").append(versioned_->version.minor)
          .append(" (this unimem reads 1.x; the tensor was deleted)"));
    }
    if (read_only() && !std::is_const<T>::value) {
      ud::dl_refuse(r.append("the tensor is read-only: import it as a tensor of const elements"));
    }
    const DLTensor& t = dl_tensor();
    const DLDataType want = dtype_of<T>();
    if (t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != want.lanes) {
      ud::append_dtype(r.append("element type "), want).append(" expected, the tensor holds ");
      ud::dl_refuse(ud::append_dtype(r, t.dtype));
    }
    check_device(r, t.device);
    if (t.ndim < 0 || t.ndim > max_ndim) {
      r.append(t.ndim).append(" dimensions (0 to at most ").append(max_ndim).append(")");
      if (t.ndim < 0) ud::dl_refuse(r);
      ud::throw_refused<length_error>(r);
    }
    if (t.ndim > 0 && t.shape == nullptr) ud::dl_refuse(r.append("a null shape"));
    std::int64_t count = 0, low = 0, high = 0;
    const ud::dl_shape_fault fault =
        ud::dl_extent(t.ndim, t.shape, t.strides, sizeof(T), count, low, high);
    if (fault != ud::dl_shape_fault::none) {
      ud::append_dims(r.append("shape "), t.shape, t.ndim);
      if (t.strides) ud::append_dims(r.append(" with strides "), t.strides, t.ndim);
      if (fault == ud::dl_shape_fault::negative) ud::dl_refuse(r.append(": a negative extent"));
      ud::throw_refused<length_error>(ud::append_dtype(
          r.append(" spans more than PTRDIFF_MAX bytes of "), want));
    }
    if (count != 0 && t.data == nullptr) {
      ud::dl_refuse(r.append("data is null but the tensor has ").append(count)
                        .append(" elements"));
    }
    if (t.data != nullptr) check_addresses(r, t, low, count == 0 ? -1 : high);
    if (count != 0) {
      std::int64_t compact = 1;  // (no overflow: at most count)
      for (int i = t.ndim - 1; i >= 0 && t.strides != nullptr; compact *= t.shape[i--]) {
        if (t.shape[i] != 1 && t.strides[i] != compact) row_major_ = false;
      }
    }
    size_ = static_cast<std::size_t>(count);
    first_ = static_cast<std::ptrdiff_t>(low);
    extent_ = count == 0 ? 0 : static_cast<std::size_t>(high - low + 1);
  }
  /// A label this build reaches, on a GPU this process has (the CPU's and pinned memory's id is
  /// not read, as NumPy does not).
  static void check_device(unimem::detail::refusal& r, DLDevice device) {
    const DLDeviceType d = device.device_type;
    if (d != kDLCPU && d != gpu_device_type && d != managed_device_type &&
        d != pinned_device_type) {
      unimem::detail::append_device(r.append("memory on "), device);
      unimem::detail::dl_refuse(r.append(" is out of reach of this build (").append(
          unimem::detail::backend::name()).append(")"));
    }
    if (d == kDLCPU || d == pinned_device_type) return;
    const int gpus = device_count();
    if (device.device_id < 0 || device.device_id >= gpus) {
      unimem::detail::append_device(r.append("memory on "), device);
      unimem::detail::dl_refuse(r.append(": this process has ").append(gpus).append(" GPU")
                                    .append(gpus == 1 ? "" : "s"));
    }
  }
  /// data + byte_offset, and the elements from `low` to `high` (high -1: none) around it, lie
  /// above address 0 and within the address space (no pointer arithmetic wraps), aligned for T.
  static void check_addresses(unimem::detail::refusal& r, const DLTensor& t, std::int64_t low,
                              std::int64_t high) {
    const auto data = reinterpret_cast<std::uintptr_t>(t.data);
    const std::uint64_t offset = t.byte_offset;
    if (offset > static_cast<std::uint64_t>(PTRDIFF_MAX) || offset > UINTPTR_MAX - data) {
      unimem::detail::throw_refused<out_of_range>(
          r.append("data (").append(data).append(") + byte_offset ").append(offset)
              .append(" wraps around the address space or passes PTRDIFF_MAX"));
    }
    const std::uintptr_t first = data + static_cast<std::uintptr_t>(offset);
    if (high < 0) return;  // no element
    // |low| and high + 1 elements are at most PTRDIFF_MAX bytes (dl_extent).
    const auto below = static_cast<std::uintptr_t>(-low) * sizeof(T);
    const auto above = static_cast<std::uintptr_t>(high + 1) * sizeof(T);
    if (below >= first || above > UINTPTR_MAX - first) {
      unimem::detail::throw_refused<out_of_range>(
          r.append("the elements from ").append(low).append(" to ").append(high)
              .append(" around data + byte_offset (").append(first)
              .append(") wrap around the address space or reach address 0"));
    }
    if (first % alignof(T) != 0) {
      unimem::detail::dl_refuse(r.append("data + byte_offset (byte_offset ").append(offset)
                                    .append(") is not aligned for the element type"));
    }
  }

  DLManagedTensorVersioned* versioned_ = nullptr;
  DLManagedTensor* legacy_ = nullptr;
  std::ptrdiff_t first_ = 0;  // lowest element offset from data()
  std::size_t extent_ = 0;    // elements from the lowest to the highest
  std::size_t size_ = 0;
  bool row_major_ = true;  // compact, row-major
};

/// @brief Exports an imported tensor again, shared: the new tensor has its shape, strides and
/// first element (data + byte_offset) and keeps it, and so the producer's memory, alive until its
/// deleter runs. The label is the producer's, or `device` within what that label says the memory
/// is (memory_type_of(), device_for()). A `std::shared_ptr<const tensor<T>>` or const T gives a
/// read-only tensor. A 0-d tensor goes out as one dimension of one element.
/// @code
///   auto t = std::make_shared<unimem::dlpack::tensor<float>>(capsule_pointer);
///   DLManagedTensorVersioned* again = unimem::dlpack::to_dlpack(t);
/// @endcode
/// @throws unimem::invalid_argument for a null pointer or a tensor that holds none, a label the
/// memory cannot have, a read-only tensor as a DLManagedTensor; std::bad_alloc.
template <class Managed = DLManagedTensorVersioned, class Tensor,
          std::enable_if_t<unimem::detail::is_dl_tensor<std::remove_cv_t<Tensor>>::value,
                           int> = 0>
Managed* to_dlpack(std::shared_ptr<Tensor> t, device_choice device = {}) {
  if (!t || !*t) {
    unimem::detail::dl_refuse(unimem::detail::refusal(
        "unimem::dlpack::to_dlpack: a null std::shared_ptr, or a tensor that holds none"));
  }
  const DLDevice own = t->device();
  const DLDevice d = device.exact || device.request != device_request::natural
                         ? device_for(memory_type_of(own.device_type), own.device_id, device)
                         : own;
  const auto v = unimem::to_view(*t);  // the memory the elements cover
  const auto offset = static_cast<std::size_t>(v.empty() ? 0 : t->data() - v.data());
  const dims shape = t->shape(), strides = t->strides();
  return unimem::detail::dl_export<Managed>(v, d, std::move(t), shape, strides, offset);
}
}  // namespace dlpack
UNIMEM_END_NAMESPACE
