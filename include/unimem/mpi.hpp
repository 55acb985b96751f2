// unimem: MPI over unimem's buffers. Not included by unimem.hpp: include <unimem/mpi.hpp> and
// link the CMake target unimem::mpi (it exists where find_package(MPI) succeeds).
//
// MPI is the engine; this header makes managed, device and pinned buffers (and views of them)
// correct and fast on it:
//   - stream order: work queued on the buffer's stream is done before MPI touches the data;
//   - with an MPI that takes GPU pointers (GPU-aware, detected at run time), every kind of memory
//     goes straight to MPI; without one, device memory, and managed memory that lives on a GPU,
//     is staged through pinned buffers (chunked and overlapped for large messages), never handed
//     to MPI as a device pointer;
//   - MPI errors become unimem::mpi::error with MPI's own message.
//
// The wire protocol (both sides must use unimem::mpi for one message): a message of fewer than
// chunk_bytes bytes is one MPI message; a larger one is a 24-byte header (a magic number, the
// element count and the element size) followed by the chunks, each of chunk_bytes (the last one
// shorter), all on the caller's communicator and tag. The receive range of a chunked message
// must have its exact size: anything else is reported as unimem::mpi::error.
/// @file
/// @brief unimem::mpi: point-to-point (blocking and non-blocking), sendrecv and allreduce over
/// managed, device and pinned buffers and views, GPU-aware detection, staging, RAII requests.
#pragma once

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>  // MPIX_Query_cuda_support (Open MPI 4/5), MPIX_Query_rocm_support (5)
#endif

#include "unimem.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

UNIMEM_BEGIN_NAMESPACE
namespace mpi {

// ---------------------------------------------------------------------------------------------
// Errors

/// @brief A failed MPI call: MPI's error code and class, MPI's own message, the call and the
/// file:line of the caller's call into unimem::mpi. A `std::runtime_error` and a
/// unimem::error (whose code() is the runtime's "unknown error" status: read this class's
/// code() for MPI's), so `catch (const unimem::error&)` catches failures of MPI as well as of
/// the GPU runtime.
class error : public std::runtime_error, public unimem::error {
 public:
  /// @brief Builds the message "unimem::mpi: CALL failed: MPI's message (code C, class K)
  /// [file:line] (context)".
  UNIMEM_DETAIL_COLD error(int code, const char* call, call_site where, const char* context = "")
      : error(code, class_of(code), call, where, context) {}
  /// @brief The whole message.
  [[nodiscard]] const char* what() const noexcept override { return std::runtime_error::what(); }
  /// @brief MPI's error code (MPI_ERR_RANK, ... or an implementation's own code).
  [[nodiscard]] int code() const noexcept { return code_; }
  /// @brief MPI_Error_class of the code.
  [[nodiscard]] int error_class() const noexcept { return class_; }

 private:
  error(int code, int cls, const char* call, call_site where, const char* context)
      : std::runtime_error(message(code, cls, call, where, context).c_str()),
        unimem::error(unimem::detail::backend::error_unknown, call, where.file, where.line,
                      false),
        code_(code),
        class_(cls) {}
  static int class_of(int code) noexcept {
    int cls = code;
    if (MPI_Error_class(code, &cls) != MPI_SUCCESS) cls = code;
    return cls;
  }
  static unimem::detail::fixed_text<1024> message(int code, int cls, const char* call,
                                                  call_site where, const char* context) noexcept {
    char text[MPI_MAX_ERROR_STRING + 1] = {};
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
      std::snprintf(text, sizeof text, "MPI error %d", code);
    }
    unimem::detail::fixed_text<1024> m("unimem::mpi: ");
    m.append(call).append(" failed: ").append(text);
    m.append(" (code ").append(code).append(", class ").append(cls).append(")");
    m.append(" [").append(where.file).append(":").append(where.line).append("]");
    if (context != nullptr && *context != '\0') m.append(" (").append(context).append(")");
    return m;
  }

  int code_;
  int class_;
};

namespace detail {
[[noreturn]] UNIMEM_DETAIL_COLD inline void throw_mpi(int code, const char* call,
                                                      call_site where, const char* context = "") {
  throw error(code, call, where, context);
}
inline void check(int code, const char* call, call_site where, const char* context = "") {
  if (code != MPI_SUCCESS) throw_mpi(code, call, where, context);
}
/// MPI_Initialized and not yet MPI_Finalized: the calls below need it.
inline void require_initialized(const char* what) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init == 0 || fin != 0) {
    unimem::detail::throw_refused<unimem::invalid_argument>(unimem::detail::refusal(what).append(": MPI is not initialised (call MPI_Init or make a "
                                      "unimem::mpi::environment first)"));
  }
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Datatypes

namespace detail {
template <class T>
struct builtin_datatype : std::false_type {};
#define UNIMEM_DETAIL_MPI_BUILTIN(T, M)                   \
  template <>                                             \
  struct builtin_datatype<T> : std::true_type {           \
    static MPI_Datatype get() noexcept { return M; }      \
  };
UNIMEM_DETAIL_MPI_BUILTIN(char, MPI_CHAR)
UNIMEM_DETAIL_MPI_BUILTIN(signed char, MPI_SIGNED_CHAR)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned char, MPI_UNSIGNED_CHAR)
UNIMEM_DETAIL_MPI_BUILTIN(wchar_t, MPI_WCHAR)
UNIMEM_DETAIL_MPI_BUILTIN(short, MPI_SHORT)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned short, MPI_UNSIGNED_SHORT)
UNIMEM_DETAIL_MPI_BUILTIN(int, MPI_INT)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned, MPI_UNSIGNED)
UNIMEM_DETAIL_MPI_BUILTIN(long, MPI_LONG)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned long, MPI_UNSIGNED_LONG)
UNIMEM_DETAIL_MPI_BUILTIN(long long, MPI_LONG_LONG)
UNIMEM_DETAIL_MPI_BUILTIN(unsigned long long, MPI_UNSIGNED_LONG_LONG)
UNIMEM_DETAIL_MPI_BUILTIN(float, MPI_FLOAT)
UNIMEM_DETAIL_MPI_BUILTIN(double, MPI_DOUBLE)
UNIMEM_DETAIL_MPI_BUILTIN(long double, MPI_LONG_DOUBLE)
UNIMEM_DETAIL_MPI_BUILTIN(bool, MPI_CXX_BOOL)
#undef UNIMEM_DETAIL_MPI_BUILTIN

/// A committed datatype of sizeof(T) contiguous bytes, made once per T.
template <class T>
MPI_Datatype bytes_datatype(call_site where) {
  struct made {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    explicit made(call_site w) {
      check(MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &type),
            "MPI_Type_contiguous", w);
      check(MPI_Type_commit(&type), "MPI_Type_commit", w);
    }
  };
  static const made m(where);  // a throw leaves it unmade: the next call tries again
  return m.type;
}
}  // namespace detail

/// @brief Whether T maps onto one of MPI's predefined datatypes (the arithmetic types and
/// bool): what allreduce() needs.
template <class T>
inline constexpr bool has_builtin_datatype_v = detail::builtin_datatype<std::remove_cv_t<T>>::value;

/// @brief The MPI datatype of T: MPI's predefined one for the arithmetic types and bool,
/// otherwise (any trivially copyable T) a committed contiguous type of sizeof(T) bytes, made
/// once. Needs MPI initialised for the latter.
/// @throws unimem::mpi::error when MPI cannot make the type.
template <class T>
MPI_Datatype datatype(call_site where = call_site::current()) {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_trivially_copyable<U>::value,
                "unimem::mpi sends trivially copyable types only: MPI copies them bit by bit");
  if constexpr (detail::builtin_datatype<U>::value) {
    return detail::builtin_datatype<U>::get();
  } else {
    return detail::bytes_datatype<U>(where);
  }
}

// ---------------------------------------------------------------------------------------------
// Settings and GPU awareness

/// @brief What unimem::mpi does with managed memory when MPI is not GPU-aware.
enum class managed_path {
  /// Host-resident ranges (mapped by their intent, last prefetched to the host, or on a GPU
  /// that cannot migrate) go straight to MPI; the others are staged like device memory.
  automatic,
  /// Always staged through pinned buffers (copies at the bus's speed; the pages stay where
  /// they are).
  staged,
  /// Made host-ready in bulk first (ready_for_host()), handed to MPI, and after a receive
  /// prefetched back to the GPU it was last prefetched to (the pages move).
  host,
};

/// @brief unimem::mpi's settings. Every rank must use the same chunk_bytes.
struct settings {
  /// @brief Messages of this many bytes or more travel as a header and chunks of this size
  /// (staged ones overlap the copies with the transfer). At least 4096; default 4 MiB, or the
  /// environment variable UNIMEM_MPI_CHUNK_BYTES read at the first use.
  std::size_t chunk_bytes = std::size_t{4} << 20;
  /// @brief Managed memory without GPU-aware MPI; default automatic, or UNIMEM_MPI_MANAGED
  /// (automatic, staged, host).
  managed_path managed = managed_path::automatic;
};

namespace detail {
inline settings settings_from_environment() {
  settings s;
  if (const char* c = std::getenv("UNIMEM_MPI_CHUNK_BYTES")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(c, &end, 10);
    if (end == c || *end != '\0' || v < 4096) {
      unimem::detail::throw_refused<unimem::invalid_argument>(unimem::detail::refusal("unimem::mpi: UNIMEM_MPI_CHUNK_BYTES=")
          .append(c)
          .append(" is not a number of bytes >= 4096"));
    }
    s.chunk_bytes = static_cast<std::size_t>(v);
  }
  if (const char* m = std::getenv("UNIMEM_MPI_MANAGED")) {
    if (std::strcmp(m, "automatic") == 0) {
      s.managed = managed_path::automatic;
    } else if (std::strcmp(m, "staged") == 0) {
      s.managed = managed_path::staged;
    } else if (std::strcmp(m, "host") == 0) {
      s.managed = managed_path::host;
    } else {
      unimem::detail::throw_refused<unimem::invalid_argument>(unimem::detail::refusal("unimem::mpi: UNIMEM_MPI_MANAGED=")
          .append(m)
          .append(" is none of automatic, staged, host"));
    }
  }
  return s;
}
inline settings& settings_storage() {
  static settings s = settings_from_environment();
  return s;
}
}  // namespace detail

/// @brief The settings in force.
/// @throws unimem::invalid_argument at the first use when an environment variable is malformed.
inline settings current_settings() { return detail::settings_storage(); }

/// @brief Replaces the settings; call it before communicating, with the same values on every
/// rank, from one thread.
/// @throws unimem::invalid_argument for chunk_bytes below 4096.
inline void configure(const settings& s) {
  if (s.chunk_bytes < 4096) {
    unimem::detail::throw_refused<unimem::invalid_argument>(unimem::detail::refusal("unimem::mpi::configure: chunk_bytes ")
        .append(s.chunk_bytes)
        .append(" is below 4096"));
  }
  detail::settings_storage() = s;
}

/// @brief Whether MPI takes GPU pointers, and who said so.
struct gpu_awareness {
  /// @brief True: device and managed pointers go straight to MPI.
  bool device_pointers;
  /// @brief Where the answer came from ("UNIMEM_MPI_GPU_AWARE=1", "MPIX_Query_cuda_support()", ...).
  const char* source;
};

/// @brief Asks, at run time, whether this MPI takes pointers of the GPUs unimem was built for:
/// the environment variable UNIMEM_MPI_GPU_AWARE (1 or 0) first, for MPIs that cannot tell;
/// then Open MPI's MPIX_Query_cuda_support() / MPIX_Query_rocm_support(), or MPICH's
/// MPIX_GPU_query_support(); then Cray MPICH's MPICH_GPU_SUPPORT_ENABLED=1. Otherwise not
/// GPU-aware (staging is always correct). Needs MPI initialised.
/// @throws unimem::invalid_argument before MPI_Init or for a malformed UNIMEM_MPI_GPU_AWARE.
inline gpu_awareness query_gpu_awareness() {
  detail::require_initialized("unimem::mpi::query_gpu_awareness");
  if (const char* e = std::getenv("UNIMEM_MPI_GPU_AWARE")) {
    if (std::strcmp(e, "1") == 0) return {true, "UNIMEM_MPI_GPU_AWARE=1"};
    if (std::strcmp(e, "0") == 0) return {false, "UNIMEM_MPI_GPU_AWARE=0"};
    unimem::detail::throw_refused<unimem::invalid_argument>(unimem::detail::refusal("unimem::mpi: UNIMEM_MPI_GPU_AWARE=").append(e).append(" is not 0 or 1"));
  }
#if defined(UNIMEM_DETAIL_HIP_AMD)
#if defined(OMPI_HAVE_MPI_EXT_ROCM) && OMPI_HAVE_MPI_EXT_ROCM
  return {MPIX_Query_rocm_support() == 1, "MPIX_Query_rocm_support()"};
#elif defined(MPIX_GPU_SUPPORT_HIP)
  int hip = 0;
  if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_HIP, &hip) == MPI_SUCCESS) {
    return {hip != 0, "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_HIP)"};
  }
#endif
#else
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  return {MPIX_Query_cuda_support() == 1, "MPIX_Query_cuda_support()"};
#elif defined(MPIX_GPU_SUPPORT_CUDA)
  int cuda = 0;
  if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &cuda) == MPI_SUCCESS) {
    return {cuda != 0, "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA)"};
  }
#endif
#endif
  if (const char* c = std::getenv("MPICH_GPU_SUPPORT_ENABLED")) {
    if (std::strcmp(c, "1") == 0) return {true, "MPICH_GPU_SUPPORT_ENABLED=1 (Cray MPICH)"};
  }
  return {false, "this MPI cannot tell; set UNIMEM_MPI_GPU_AWARE=1 if it takes GPU pointers"};
}

namespace detail {
inline gpu_awareness& awareness_storage() {
  static gpu_awareness a = query_gpu_awareness();  // retried while it throws
  return a;
}
}  // namespace detail

/// @brief query_gpu_awareness(), asked once per process and remembered.
inline gpu_awareness current_gpu_awareness() { return detail::awareness_storage(); }

// ---------------------------------------------------------------------------------------------
// The decisions, as pure functions (host-tested in CI)

/// @brief The memory a range lives in, as unimem::mpi sees it.
enum class memory {
  pageable,  ///< host memory the GPU runtime does not know (std::vector, malloc)
  pinned,    ///< page-locked host memory (pinned_buffer)
  device,    ///< GPU memory (device_buffer)
  managed,   ///< managed memory (managed_buffer, managed_vector)
};

/// @brief How a range reaches MPI.
enum class path {
  /// MPI reads or writes the range itself.
  direct,
  /// Through pinned staging buffers, with copies in stream order.
  staged,
  /// Made host-ready in bulk first (managed memory, managed_path::host).
  via_host,
};

/// @brief "direct", "staged" or "via_host" (a std::string, as every unimem::to_string).
inline std::string to_string(path p) {
  switch (p) {
    case path::direct: return "direct";
    case path::staged: return "staged";
    case path::via_host: return "via_host";
  }
  return "?";
}
/// @brief "pageable", "pinned", "device" or "managed" (a std::string, as every
/// unimem::to_string).
inline std::string to_string(memory m) {
  switch (m) {
    case memory::pageable: return "pageable";
    case memory::pinned: return "pinned";
    case memory::device: return "device";
    case memory::managed: return "managed";
  }
  return "?";
}

/// @brief The path of a range: everything direct with GPU-aware MPI; host memory direct;
/// device memory staged; managed memory by the policy, where `managed_on_host` says the range
/// is host-resident (mapped, last prefetched to the host, or a GPU that cannot migrate).
constexpr path choose_path(memory m, bool gpu_aware, managed_path policy,
                           bool managed_on_host) noexcept {
  if (gpu_aware || m == memory::pageable || m == memory::pinned) return path::direct;
  if (m == memory::device) return path::staged;
  switch (policy) {
    case managed_path::staged: return path::staged;
    case managed_path::host: return path::via_host;
    case managed_path::automatic: break;
  }
  return managed_on_host ? path::direct : path::staged;
}

/// @brief How one message of `count` elements of `element_size` bytes travels: as one MPI
/// message, or as a header and `chunks` chunks of `chunk_elements` (the last one
/// `last_elements`, possibly fewer).
struct message_plan {
  /// @brief True: a header and chunks; false: one message.
  bool chunked;
  /// @brief The number of chunk messages (1 when not chunked).
  std::size_t chunks;
  /// @brief Elements of every chunk but the last.
  std::size_t chunk_elements;
  /// @brief Elements of the last chunk.
  std::size_t last_elements;
};

/// @brief The plan both sides compute alike from the element count and size and chunk_bytes:
/// chunked from chunk_bytes bytes on, and whenever one message would exceed std::numeric_limits<int>::max() elements.
constexpr message_plan plan_message(std::size_t count, std::size_t element_size,
                                    std::size_t chunk_bytes) noexcept {
  std::size_t per = element_size == 0 ? 1 : chunk_bytes / element_size;
  if (per == 0) per = 1;
  if (per > static_cast<std::size_t>(std::numeric_limits<int>::max())) per = static_cast<std::size_t>(std::numeric_limits<int>::max());
  if (count < per) return {false, 1, count, count};
  const std::size_t chunks = (count + per - 1) / per;
  return {true, chunks, per, count - (chunks - 1) * per};
}

/// @brief What a recv() got: its source, tag and element count.
struct status {
  /// @brief The sender's rank.
  int source = MPI_ANY_SOURCE;
  /// @brief The message's tag.
  int tag = MPI_ANY_TAG;
  /// @brief Elements received.
  std::size_t count = 0;
};

namespace detail {

/// The header of a chunked message.
struct header {
  std::uint64_t magic;
  std::uint64_t count;
  std::uint64_t element_size;
};
static_assert(sizeof(header) == 24, "the header is 24 bytes on the wire");
constexpr std::uint64_t header_magic = 0x756e696d656d4d31ull;  // "unimemM1"

/// A contiguous range as unimem::mpi sees it.
template <class T>
struct span {
  T* data;
  std::size_t size;
  memory kind;
};

inline memory from_backend(::unimem::detail::backend::pointer_memory m) noexcept {
  using pm = ::unimem::detail::backend::pointer_memory;
  switch (m) {
    case pm::pinned: return memory::pinned;
    case pm::device: return memory::device;
    case pm::managed: return memory::managed;
    case pm::pageable:
    case pm::unknown: break;
  }
  return memory::pageable;  // unknown: not memory any GPU runtime of this process made
}

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

template <class T>
memory runtime_memory_of(const T* p) noexcept {
  if (p == nullptr) return memory::pageable;
  return from_backend(::unimem::detail::backend::memory_of(p));
}

/// The range r as (data, size, memory): unimem's buffers and containers that declare a memory
/// kind at compile time; built-in arrays as pageable; views and other containers (std::vector,
/// whose allocator may be a pmr resource of device memory) by asking the runtime, pageable when
/// it does not know the pointer.
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
    if constexpr (std::is_array<C>::value) {
      return span<T>{p, n, memory::pageable};
    } else {
      return span<T>{p, n, runtime_memory_of(p)};
    }
  }
}

inline int as_int(std::size_t n) noexcept { return static_cast<int>(n); }

/// Whether a range passed as R&& stays alive after the call: a named object, or a temporary
/// that owns nothing (a view: trivially copyable).
template <class R>
constexpr bool outlives_request_v =
    std::is_lvalue_reference<R>::value || std::is_trivially_copyable<std::remove_reference_t<R>>::value;

/// Whether managed memory at [p, p + bytes) lives on the host for the automatic policy (the
/// current device's capability decides whether pages can live anywhere else).
inline bool managed_on_host(const void* p, std::size_t bytes, call_site where) {
  if (bytes == 0) return true;
  if (!::unimem::detail::device_migrates(::unimem::detail::current_device_id(where), where)) {
    return true;  // AMD without XNACK: managed memory is host memory the GPU maps
  }
  namespace be = ::unimem::detail::backend;
  // Mapped (preferred location host: an intent map) or last prefetched to the host.
  for (const be::range_attribute a :
       {be::range_attribute::preferred_location, be::range_attribute::last_prefetch_location}) {
    int id = be::no_location_id;
    const auto q = be::range_attribute_ints(&id, 1, a, p, bytes);
    if (q.code != be::success) {
      be::forget_if_last(q.code);
      return false;
    }
    if (id == be::host_location_id) return true;
  }
  return false;
}

template <class T>
path path_of(const span<T>& s, call_site where) {
  const bool aware = current_gpu_awareness().device_pointers;
  const managed_path policy = current_settings().managed;
  const bool on_host = s.kind == memory::managed && !aware && policy == managed_path::automatic
                           ? managed_on_host(s.data, s.size * sizeof(T), where)
                           : false;
  return choose_path(s.kind, aware, policy, on_host);
}

/// Before MPI touches a range directly: the work queued on s is done; without a stream, every
/// GPU's work (a kernel anywhere may write the range) unless the range is pageable memory.
inline void settle(memory m, stream_ref s, call_site where) {
  if (!s.is_default()) {
    s.synchronize(where);
  } else if (m != memory::pageable) {
    synchronize_all_devices(where);
  }
}

/// Before staging copies queued on s: stream order covers the work on s; without a stream,
/// every GPU's work is waited for (a kernel on a non-blocking stream may use the range).
inline void settle_for_copies(stream_ref s, call_site where) {
  if (s.is_default()) synchronize_all_devices(where);
}

// ---- pinned staging: blocks by power-of-two size, kept for reuse ----

class staging_pool {
 public:
  static constexpr std::size_t min_shift = 16;  // 64 KiB
  static constexpr std::size_t classes = 40;
  static constexpr std::size_t per_class = 4;

  void* take(std::size_t bytes, std::size_t* cls_out, call_site where) {
    std::size_t cls = 0;
    while ((std::size_t{1} << (min_shift + cls)) < bytes) ++cls;
    *cls_out = cls;
    {
      const ::unimem::detail::spin_guard g(lock_);
      for (std::size_t i = 0; i < per_class; ++i) {
        if (free_[cls][i] != nullptr) return std::exchange(free_[cls][i], nullptr);
      }
    }
    return pinned_memory::allocate(std::size_t{1} << (min_shift + cls), "unimem::mpi staging",
                                   where);
  }
  void give(void* p, std::size_t cls) noexcept {
    {
      const ::unimem::detail::spin_guard g(lock_);
      for (std::size_t i = 0; i < per_class; ++i) {
        if (free_[cls][i] == nullptr) {
          free_[cls][i] = p;
          return;
        }
      }
    }
    pinned_memory::deallocate(p, std::size_t{1} << (min_shift + cls));
  }
  std::size_t release() noexcept {
    std::size_t bytes = 0;
    const ::unimem::detail::spin_guard g(lock_);
    for (std::size_t c = 0; c < classes; ++c) {
      for (std::size_t i = 0; i < per_class; ++i) {
        if (void* p = std::exchange(free_[c][i], nullptr)) {
          pinned_memory::deallocate(p, std::size_t{1} << (min_shift + c));
          bytes += std::size_t{1} << (min_shift + c);
        }
      }
    }
    return bytes;
  }

 private:
  void* free_[classes][per_class] = {};
  mutable ::unimem::detail::atomic_cell<int> lock_{0};
};

inline staging_pool& pool() {
  static staging_pool* p = new staging_pool();  // never destroyed: buffers freed at exit time
  return *p;                                    // by other statics still find it
}

/// A pinned staging block, back to the pool when destroyed.
class staging {
 public:
  staging() noexcept = default;
  staging(std::size_t bytes, call_site where) : p_(pool().take(bytes, &cls_, where)) {}
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

/// What MPI holds the address of while a request is pending: its MPI requests (null until
/// posted) and the header of a chunked message. On the heap, so that a request can move.
class request_array {
 public:
  request_array() noexcept = default;
  explicit request_array(std::size_t n) : head_(new header{0, 0, 0}), p_(new MPI_Request[n]), n_(n) {
    for (std::size_t i = 0; i < n; ++i) p_[i] = MPI_REQUEST_NULL;
  }
  request_array(const request_array&) = delete;
  request_array& operator=(const request_array&) = delete;
  request_array(request_array&& o) noexcept
      : head_(std::exchange(o.head_, nullptr)),
        p_(std::exchange(o.p_, nullptr)),
        n_(std::exchange(o.n_, 0)) {}
  request_array& operator=(request_array&& o) noexcept {
    std::swap(head_, o.head_);
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  ~request_array() {
    delete head_;
    delete[] p_;
  }
  header& head() const noexcept { return *head_; }
  MPI_Request* data() const noexcept { return p_; }
  MPI_Request& operator[](std::size_t i) const noexcept { return p_[i]; }
  std::size_t size() const noexcept { return n_; }

 private:
  header* head_ = nullptr;
  MPI_Request* p_ = nullptr;
  std::size_t n_ = 0;
};

inline void copy_in_order(void* dst, const void* src, std::size_t bytes, stream_ref s,
                          call_site where) {
  ::unimem::detail::check(
      ::unimem::detail::backend::memcpy_async(dst, src, bytes,
                                              ::unimem::detail::backend::copy_kind::infer, s.get()),
      where);
}

/// Cancels and completes every posted request (after a failure): nothing stays matched to
/// this range. Never throws.
inline void abandon(const request_array& reqs) noexcept {
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    int done = 0;
    MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE);
    if (done == 0) {
      MPI_Cancel(&reqs[i]);
      MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    }
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Requests

/// @brief A pending non-blocking operation (isend(), irecv()), move-only. wait() completes it;
/// a request destroyed while pending is completed by its destructor (it cannot be dropped and
/// leave MPI writing into freed memory), so declare it after the buffers it uses. The buffer
/// must not be touched by the CPU or the GPU until the request completes.
class request {
 public:
  /// @brief An empty, completed request.
  request() noexcept = default;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  /// @brief Takes over o's operation; o becomes empty.
  request(request&& o) noexcept { swap(o); }
  /// @brief Completes this request's own operation first (as the destructor does), then takes
  /// over o's.
  request& operator=(request&& o) noexcept {
    request(std::move(o)).swap(*this);
    return *this;
  }
  /// @brief Completes a pending operation; an error is written to stderr, since a destructor
  /// cannot throw.
  ~request() {
    if (pending()) {
      try {
        (void)wait();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "unimem::mpi::request destroyed while pending: %s\n", e.what());
      }
    }
  }
  /// @brief Swaps two requests.
  void swap(request& o) noexcept {
    std::swap(reqs_, o.reqs_);
    std::swap(staging_, o.staging_);
    std::swap(st_, o.st_);
    std::swap(op_, o.op_);
  }

  /// @brief True until the operation completed (wait(), or test() returned true).
  [[nodiscard]] bool pending() const noexcept { return op_.phase != state::done; }

  /// @brief Completes the operation: a send may reuse its buffer, a receive's data is in place
  /// (for staged receives, copied in on the stream and waited for).
  /// @return The status of a receive (source, tag, elements); of a send, the count sent.
  /// @throws unimem::mpi::error for MPI's failures and for a message whose size does not fit
  /// the protocol; unimem::error for the GPU's. The request is completed either way.
  status wait(call_site where = call_site::current()) {
    if (!pending()) return st_;
    try {
      finish(where);
    } catch (...) {
      detail::abandon(reqs_);
      if (op_.route == path::staged) {  // copies in flight still read the staging buffer
        (void)::unimem::detail::backend::stream_synchronize(op_.stream.get());
      }
      op_.phase = state::done;
      throw;
    }
    op_.phase = state::done;
    return st_;
  }

  /// @brief Gives the operation up: a receive's posted messages are cancelled (MPI_Cancel), a
  /// send's are completed; the range is then free and its contents undefined. For error paths
  /// where waiting could block for ever (the peer failed). Never throws.
  void cancel() noexcept {
    if (!pending()) return;
    if (op_.direction == kind::send) {
      MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
    } else {
      detail::abandon(reqs_);
    }
    op_.phase = state::done;
  }

  /// @brief Whether the operation has completed (MPI_Testall over its messages); once true, the
  /// request is complete as after wait().
  /// @throws as wait().
  [[nodiscard]] bool test(call_site where = call_site::current()) {
    if (!pending()) return true;
    // Only recv() and sendrecv() make requests that read the header first, and they wait().
    if (op_.phase == state::header) return false;
    int flag = 0;
    detail::check(MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag,
                              MPI_STATUSES_IGNORE),
                  "MPI_Testall", where);
    if (flag == 0) return false;
    (void)wait(where);
    return true;
  }

 private:
  enum class state {
    done,    ///< complete (or empty)
    posted,  ///< every message posted
    header,  ///< a receive's header posted; its chunks wait for it
  };
  enum class kind {
    send,  ///< isend()
    recv,  ///< irecv()
  };
  struct operation {
    state phase = state::done;
    kind direction = kind::send;
    memory where_it_is = memory::pageable;
    bool header_checked = false;
    path route = path::direct;
    unsigned char* data = nullptr;  // the user's range
    std::size_t count = 0;          // elements of the range
    std::size_t element_size = 1;
    MPI_Datatype type = MPI_BYTE;
    message_plan plan{false, 1, 0, 0};
    stream_ref stream{};
    MPI_Comm comm = MPI_COMM_NULL;
    int peer = MPI_ANY_SOURCE;
    int tag = MPI_ANY_TAG;
    optional_location back{};  // via_host receives: where to prefetch the range afterwards
  };

  template <class T>
  friend request isend_impl(const detail::span<const T>&, int, int, MPI_Comm, stream_ref,
                            call_site);
  template <class T>
  friend request irecv_impl(const detail::span<T>&, int, int, MPI_Comm, stream_ref, bool,
                            call_site);

  /// What isend_impl and irecv_impl share: the operation's description, its plan and the array
  /// of its MPI requests (a header's first when chunked).
  template <class T>
  void start(kind k, const detail::span<T>& sp, int peer, int tag, MPI_Comm comm, stream_ref s,
             call_site where) {
    using U = std::remove_cv_t<T>;
    op_.direction = k;
    op_.route = detail::path_of(sp, where);
    op_.where_it_is = sp.kind;
    op_.data = reinterpret_cast<unsigned char*>(const_cast<U*>(sp.data));
    op_.count = sp.size;
    op_.element_size = sizeof(U);
    op_.type = datatype<U>(where);
    op_.plan = plan_message(sp.size, sizeof(U), current_settings().chunk_bytes);
    op_.stream = s;
    op_.comm = comm;
    op_.peer = peer;
    op_.tag = tag;
    reqs_ = detail::request_array(op_.plan.chunks + first_chunk());
  }

  unsigned char* buffer() const noexcept {
    return op_.route == path::staged ? staging_.get() : op_.data;
  }
  std::size_t chunk_offset(std::size_t i) const noexcept {
    return i * op_.plan.chunk_elements * op_.element_size;
  }
  std::size_t chunk_count(std::size_t i) const noexcept {
    return i + 1 == op_.plan.chunks ? op_.plan.last_elements : op_.plan.chunk_elements;
  }
  std::size_t first_chunk() const noexcept { return op_.plan.chunked ? 1 : 0; }

  /// Posts the receives of every chunk (after the header, when there is one).
  void post_chunk_receives(call_site where) {
    for (std::size_t i = 0; i < op_.plan.chunks; ++i) {
      detail::check(MPI_Irecv(buffer() + chunk_offset(i), detail::as_int(chunk_count(i)),
                              op_.type, op_.peer, op_.tag, op_.comm,
                              &reqs_[first_chunk() + i]),
                    "MPI_Irecv", where);
    }
  }

  /// Receives and drops the chunks of the message `h` announced (after a size mismatch found
  /// before any chunk was received): later messages on this tag stay intact.
  void drain(const detail::header& h, int peer, int tag, call_site where) {
    const message_plan p = plan_message(static_cast<std::size_t>(h.count),
                                        static_cast<std::size_t>(h.element_size),
                                        current_settings().chunk_bytes);
    const std::size_t most = p.chunk_elements * static_cast<std::size_t>(h.element_size);
    const ::unimem::detail::scratch<unsigned char> sink(most == 0 ? 1 : most);
    for (std::size_t i = 0; i < p.chunks; ++i) {
      detail::check(MPI_Recv(sink.p, detail::as_int(most), MPI_BYTE, peer, tag, op_.comm,
                             MPI_STATUS_IGNORE),
                    "MPI_Recv", where, "dropping the chunks of a mismatched message");
    }
  }

  /// Checks the header of a chunked message against the receive range; with `drain_on_mismatch`
  /// (no chunk receive posted yet) a mismatched message's chunks are received and dropped.
  void check_header(const MPI_Status& s, bool drain_on_mismatch, call_site where) {
    int bytes = 0;
    MPI_Get_count(&s, MPI_BYTE, &bytes);
    if (bytes != static_cast<int>(sizeof(detail::header)) || reqs_.head().magic != detail::header_magic) {
      detail::throw_mpi(MPI_ERR_TRUNCATE, "unimem::mpi::recv", where,
                        "the message is not a chunked unimem::mpi message: a range of "
                        "chunk_bytes or more receives only a unimem::mpi message of its size");
    }
    if (reqs_.head().count != op_.count || reqs_.head().element_size != op_.element_size) {
      if (drain_on_mismatch) drain(reqs_.head(), s.MPI_SOURCE, s.MPI_TAG, where);
      unimem::detail::fixed_text<200> t("the message has ");
      t.append(reqs_.head().count).append(" elements of ").append(reqs_.head().element_size);
      t.append(" bytes, the receive range ").append(op_.count).append(" of ");
      t.append(op_.element_size).append(": a chunked message needs a range of its size");
      detail::throw_mpi(MPI_ERR_TRUNCATE, "unimem::mpi::recv", where, t.c_str());
    }
  }

  void finish(call_site where) {
    if (op_.direction == kind::send) {
      detail::check(MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE),
                    "MPI_Waitall", where);
      return;
    }
    if (op_.plan.chunked && !op_.header_checked) {
      MPI_Status s;
      detail::check(MPI_Wait(&reqs_[0], &s), "MPI_Wait", where);
      const bool header_only = op_.phase == state::header;
      check_header(s, header_only, where);
      op_.header_checked = true;
      if (header_only) {  // the chunks are received from the header's sender, with its tag
        op_.peer = s.MPI_SOURCE;
        op_.tag = s.MPI_TAG;
        post_chunk_receives(where);
        op_.phase = state::posted;
      }
      st_.source = op_.peer;
      st_.tag = op_.tag;
    }
    std::size_t received = 0;
    // The chunks, in the order they arrive; staged ones are copied in as each one lands.
    const std::size_t chunks = op_.plan.chunks;
    std::size_t left = chunks;
    while (left > 0) {
      int index = MPI_UNDEFINED;
      MPI_Status s;
      detail::check(MPI_Waitany(static_cast<int>(chunks), reqs_.data() + first_chunk(), &index, &s),
                    "MPI_Waitany", where);
      if (index == MPI_UNDEFINED) break;
      --left;
      const std::size_t i = static_cast<std::size_t>(index);
      int bytes = 0;
      detail::check(MPI_Get_count(&s, MPI_BYTE, &bytes), "MPI_Get_count", where);
      if (!op_.plan.chunked) {
        st_.source = s.MPI_SOURCE;
        st_.tag = s.MPI_TAG;
        const bool readable = op_.route == path::staged || op_.where_it_is != memory::device;
        if (readable && bytes == static_cast<int>(sizeof(detail::header)) &&
            op_.count * op_.element_size > sizeof(detail::header)) {
          detail::header h;
          std::memcpy(&h, buffer(), sizeof h);  // staged: the copy below has not run yet
          if (h.magic == detail::header_magic) {
            drain(h, s.MPI_SOURCE, s.MPI_TAG, where);
            detail::throw_mpi(MPI_ERR_TRUNCATE, "unimem::mpi::recv", where,
                              "the sender sent a chunked message (chunk_bytes or more): receive "
                              "it into a range of its size");
          }
        }
      }
      const std::size_t got_bytes = static_cast<std::size_t>(bytes);
      if (got_bytes % op_.element_size != 0) {
        detail::throw_mpi(MPI_ERR_TRUNCATE, "unimem::mpi::recv", where,
                          "the message is not a whole number of elements of the receive range");
      }
      const std::size_t got = got_bytes / op_.element_size;
      if (op_.plan.chunked && got != chunk_count(i)) {
        detail::throw_mpi(MPI_ERR_TRUNCATE, "unimem::mpi::recv", where,
                          "a chunk of the message is shorter than the protocol says: the sender "
                          "used another chunk_bytes");
      }
      received += got;
      if (op_.route == path::staged && got > 0) {
        detail::copy_in_order(op_.data + chunk_offset(i), staging_.get() + chunk_offset(i),
                              got_bytes, op_.stream, where);
      }
    }
    st_.count = received;
    if (op_.route == path::staged) op_.stream.synchronize(where);
    if (op_.route == path::via_host && op_.back.has_value() && op_.back->is_device() &&
        received > 0) {
      const view<unsigned char> v(op_.data, received * op_.element_size);
      (void)prefetch(v, *op_.back, op_.stream, where);
    }
  }

  detail::request_array reqs_;
  detail::staging staging_;
  status st_;
  operation op_;
};

/// @brief Completes every request given (in order; each completes even when an earlier one
/// throws, and the first exception is rethrown after all are complete).
template <class... Requests>
void wait_all(Requests&... rs) {
  std::exception_ptr first;
  auto one = [&first](request& r) {
    try {
      (void)r.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  };
  (one(rs), ...);
  if (first) std::rethrow_exception(first);
}

// ---------------------------------------------------------------------------------------------
// Point to point

/// @cond INTERNAL
template <class T>
request isend_impl(const detail::span<const T>& sp, int dest, int tag, MPI_Comm comm,
                   stream_ref s, call_site where) {
  using U = std::remove_cv_t<T>;
  detail::require_initialized("unimem::mpi::isend");
  request r;
  if (dest == MPI_PROC_NULL) return r;  // nothing is sent: complete at once, as in MPI
  r.start(request::kind::send, sp, dest, tag, comm, s, where);
  auto& op = r.op_;
  r.st_ = status{dest, tag, sp.size};
  op.phase = request::state::posted;
  try {
    if (op.plan.chunked) {
      r.reqs_.head() = detail::header{detail::header_magic, sp.size, sizeof(U)};
      detail::check(MPI_Isend(&r.reqs_.head(), static_cast<int>(sizeof(detail::header)), MPI_BYTE,
                              dest, tag, comm, &r.reqs_[0]),
                    "MPI_Isend", where);
    }
    const std::size_t bytes = sp.size * sizeof(U);
    if (op.route == path::staged && bytes > 0) {
      // Copies out in stream order, a few chunks ahead; each chunk is sent as it lands, and
      // MPI is driven meanwhile.
      r.staging_ = detail::staging(bytes, where);
      detail::settle_for_copies(s, where);
      if (op.plan.chunks == 1) {  // one message: copy out, wait for the copy, send
        detail::copy_in_order(r.staging_.get(), op.data, bytes, s, where);
        s.synchronize(where);
        detail::check(MPI_Isend(r.staging_.get(), detail::as_int(sp.size), op.type, dest, tag, comm,
                                &r.reqs_[r.first_chunk()]),
                      "MPI_Isend", where);
        return r;
      }
      constexpr std::size_t ahead = 4;
      event marks[ahead] = {event(event::timing_mode::disable_timing, where),
                            event(event::timing_mode::disable_timing, where),
                            event(event::timing_mode::disable_timing, where),
                            event(event::timing_mode::disable_timing, where)};
      std::size_t queued = 0;
      for (std::size_t sent = 0; sent < op.plan.chunks; ++sent) {
        for (; queued < op.plan.chunks && queued < sent + ahead; ++queued) {
          detail::copy_in_order(r.staging_.get() + r.chunk_offset(queued),
                                op.data + r.chunk_offset(queued),
                                r.chunk_count(queued) * op.element_size, s, where);
          marks[queued % ahead].record(s, where);
        }
        while (!marks[sent % ahead].ready(where)) {
          int flag = 0;
          detail::check(MPI_Testall(static_cast<int>(r.first_chunk() + sent), r.reqs_.data(),
                                    &flag, MPI_STATUSES_IGNORE),
                        "MPI_Testall", where);
        }
        detail::check(MPI_Isend(r.staging_.get() + r.chunk_offset(sent),
                                detail::as_int(r.chunk_count(sent)), op.type, dest, tag, comm,
                                &r.reqs_[r.first_chunk() + sent]),
                      "MPI_Isend", where);
      }
      return r;
    }
    if (op.route == path::via_host) {
      (void)ready_for_host(view<const U>(sp.data, sp.size), s, where);
    } else {
      detail::settle(sp.kind, s, where);
    }
    for (std::size_t i = 0; i < op.plan.chunks; ++i) {
      detail::check(MPI_Isend(op.data + r.chunk_offset(i), detail::as_int(r.chunk_count(i)),
                              op.type, dest, tag, comm, &r.reqs_[r.first_chunk() + i]),
                    "MPI_Isend", where);
    }
  } catch (...) {
    detail::abandon(r.reqs_);
    op.phase = request::state::done;
    throw;
  }
  return r;
}

template <class T>
request irecv_impl(const detail::span<T>& sp, int source, int tag, MPI_Comm comm, stream_ref s,
                   bool blocking, call_site where) {
  static_assert(!std::is_const<T>::value, "unimem::mpi: a receive range must not be const");
  detail::require_initialized("unimem::mpi::irecv");
  request r;
  if (source == MPI_PROC_NULL) {  // nothing arrives: complete at once, as in MPI
    r.st_ = status{MPI_PROC_NULL, MPI_ANY_TAG, 0};
    return r;
  }
  r.start(request::kind::recv, sp, source, tag, comm, s, where);
  auto& op = r.op_;
  const bool wildcard = source == MPI_ANY_SOURCE || tag == MPI_ANY_TAG;
  if (op.plan.chunked && wildcard && !blocking) {
    unimem::detail::throw_refused<unimem::invalid_argument>(unimem::detail::refusal("unimem::mpi::irecv: a range of chunk_bytes or more (")
        .append(sp.size * sizeof(T))
        .append(" bytes) needs a named source and tag; MPI_ANY_SOURCE and MPI_ANY_TAG work "
                "with recv() and sendrecv()"));
  }
  r.st_ = status{source, tag, 0};
  try {
    const std::size_t bytes = sp.size * sizeof(T);
    if (op.route == path::staged) {
      if (bytes > 0) r.staging_ = detail::staging(bytes, where);
      detail::settle_for_copies(s, where);  // no GPU work still reads what the copies overwrite
    } else if (op.route == path::via_host) {
      if (bytes > 0) {
        const view<T> v(sp.data, sp.size);
        op.back = last_prefetch_location(v, where);
        (void)ready_for_host(v, s, where);
      }
    } else {
      detail::settle(sp.kind, s, where);  // no GPU work still reads what MPI will overwrite
    }
    op.phase = request::state::posted;
    if (op.plan.chunked) {
      detail::check(MPI_Irecv(&r.reqs_.head(), static_cast<int>(sizeof(detail::header)),
                              MPI_BYTE, source, tag, comm, &r.reqs_[0]),
                    "MPI_Irecv", where);
      // Blocking receives (and wildcards) read the header before posting the chunks: a
      // mismatched message is then found before any chunk is taken, and dropped whole.
      // Non-blocking ones post every chunk at once, so that they make progress while the
      // caller waits for something else.
      if (wildcard || blocking) {
        op.phase = request::state::header;
        return r;
      }
    }
    r.post_chunk_receives(where);
  } catch (...) {
    detail::abandon(r.reqs_);
    op.phase = request::state::done;
    throw;
  }
  return r;
}
/// @endcond

/// @brief Starts sending `range` (a unimem buffer, a view, managed_vector, std::vector, an
/// array) to rank `dest` with `tag`. Work queued on `s` is done before MPI reads the range
/// (without a stream: every GPU's work, except for pageable memory). Staged ranges are copied
/// out before this returns (overlapped with the sending of the chunks already out); the
/// transfer itself proceeds until the request completes. The range must stay unchanged until
/// then.
/// @throws unimem::mpi::error, unimem::error, unimem::argument_error (MPI not initialised).
template <class R>
[[nodiscard]] request isend(R&& range, int dest, int tag, MPI_Comm comm = MPI_COMM_WORLD,
                            stream_ref s = {}, call_site where = call_site::current()) {
  static_assert(detail::outlives_request_v<R>,
                "unimem::mpi::isend: a temporary container would be freed while MPI still reads "
                "it; keep it in a variable until the request completes (a view may be temporary)");
  auto sp = detail::span_of(range);
  using T = std::remove_pointer_t<decltype(sp.data)>;
  const detail::span<const T> c{sp.data, sp.size, sp.kind};
  return isend_impl<T>(c, dest, tag, comm, s, where);
}

/// @brief Starts receiving into `range` from rank `source` with `tag`. Once the request
/// completes the data is in the range; GPU work queued on `s` before this call is done before
/// MPI writes (without a stream: every GPU's, except for pageable memory). A range of
/// chunk_bytes or more needs a named source and tag (recv() and sendrecv() take wildcards).
/// @throws unimem::mpi::error, unimem::error, unimem::argument_error.
template <class R>
[[nodiscard]] request irecv(R&& range, int source, int tag, MPI_Comm comm = MPI_COMM_WORLD,
                            stream_ref s = {}, call_site where = call_site::current()) {
  static_assert(detail::outlives_request_v<R>,
                "unimem::mpi::irecv: a temporary container would be freed while MPI still writes "
                "it; keep it in a variable until the request completes (a view may be temporary)");
  return irecv_impl(detail::span_of(range), source, tag, comm, s, false, where);
}

/// @brief Sends `range` to `dest` and returns when the range may be reused (isend() + wait()).
/// @throws as isend().
template <class R>
void send(const R& range, int dest, int tag, MPI_Comm comm = MPI_COMM_WORLD, stream_ref s = {},
          call_site where = call_site::current()) {
  (void)isend(range, dest, tag, comm, s, where).wait(where);
}

/// @brief Receives into `range` and returns when the data is there. `source` and `tag` may be
/// MPI_ANY_SOURCE / MPI_ANY_TAG; the status names the sender, the tag and the element count (a
/// message shorter than the range is fine below chunk_bytes).
/// @throws as irecv().
template <class R>
status recv(R&& range, int source, int tag, MPI_Comm comm = MPI_COMM_WORLD, stream_ref s = {},
            call_site where = call_site::current()) {
  return irecv_impl(detail::span_of(range), source, tag, comm, s, true, where).wait(where);
}

/// @brief Sends `out` to `dest` and receives `in` from `source` at once (no deadlock between two
/// ranks that exchange); returns when both are done, with the receive's status.
/// @throws as isend() and irecv().
template <class Out, class In>
status sendrecv(const Out& out, int dest, int send_tag, In&& in, int source, int recv_tag,
                MPI_Comm comm = MPI_COMM_WORLD, stream_ref s = {},
                call_site where = call_site::current()) {
  request rx = irecv_impl(detail::span_of(in), source, recv_tag, comm, s, true, where);
  request tx;
  try {
    tx = isend(out, dest, send_tag, comm, s, where);
  } catch (...) {
    rx.cancel();  // not wait(): the peer may never send
    throw;
  }
  std::exception_ptr failed;
  status st;
  try {
    st = rx.wait(where);
  } catch (...) {
    failed = std::current_exception();
  }
  try {
    (void)tx.wait(where);
  } catch (...) {
    if (!failed) failed = std::current_exception();
  }
  if (failed) std::rethrow_exception(failed);
  return st;
}

// ---------------------------------------------------------------------------------------------
// Collectives

namespace detail {
template <class T>
void allreduce_pieces(const T* in, T* out, std::size_t n, MPI_Op op, MPI_Comm comm,
                      call_site where) {
  const std::size_t most = static_cast<std::size_t>(std::numeric_limits<int>::max());
  for (std::size_t at = 0; at < n; at += most) {
    const std::size_t k = n - at < most ? n - at : most;
    const void* src = in == out ? MPI_IN_PLACE : static_cast<const void*>(in + at);
    check(MPI_Allreduce(src, out + at, as_int(k), builtin_datatype<T>::get(), op, comm),
          "MPI_Allreduce", where);
  }
}
}  // namespace detail

/// @brief Reduces `in` over every rank of `comm` with `op` (MPI_SUM, MPI_MAX, ...) into `out`
/// (the same size; may be the same range). Work queued on `s` is done first; staged results are
/// copied into `out` on `s` and waited for. T must have an MPI predefined datatype.
/// @throws unimem::invalid_argument for ranges of different sizes; unimem::mpi::error,
/// unimem::error.
template <class In, class Out>
void allreduce(const In& in, Out&& out, MPI_Op op, MPI_Comm comm = MPI_COMM_WORLD,
               stream_ref s = {}, call_site where = call_site::current()) {
  detail::require_initialized("unimem::mpi::allreduce");
  auto src = detail::span_of(in);
  auto dst = detail::span_of(out);
  using T = std::remove_pointer_t<decltype(dst.data)>;
  static_assert(std::is_same<std::remove_cv_t<std::remove_pointer_t<decltype(src.data)>>, T>::value,
                "unimem::mpi::allreduce: input and output element types differ");
  static_assert(!std::is_const<T>::value, "unimem::mpi::allreduce: the output is const");
  static_assert(has_builtin_datatype_v<T>,
                "unimem::mpi::allreduce needs an element type with an MPI predefined datatype "
                "(an arithmetic type or bool)");
  if (src.size != dst.size) {
    unimem::detail::throw_refused<unimem::invalid_argument>(unimem::detail::refusal("unimem::mpi::allreduce: the input has ")
        .append(src.size)
        .append(" elements and the output ")
        .append(dst.size));
  }
  const std::size_t n = dst.size;
  const std::size_t bytes = n * sizeof(T);
  const bool same = static_cast<const void*>(src.data) == static_cast<const void*>(dst.data);
  const detail::span<const T> csrc{src.data, src.size, src.kind};
  const path in_path = detail::path_of(csrc, where);
  const path out_path = same ? in_path : detail::path_of(dst, where);
  // Without a stream every GPU's work is waited for first; then a staged side gets a pinned
  // buffer, and the reduction runs between host pointers once the work on s is done.
  if (s.is_default() && (src.kind != memory::pageable || dst.kind != memory::pageable)) {
    synchronize_all_devices(where);
  }
  detail::staging in_stage, out_stage;
  const T* in_ptr = src.data;
  T* out_ptr = dst.data;
  if (in_path == path::staged && bytes > 0) {
    in_stage = detail::staging(bytes, where);
    detail::copy_in_order(in_stage.get(), src.data, bytes, s, where);
    in_ptr = reinterpret_cast<const T*>(in_stage.get());
  } else if (in_path == path::via_host) {
    (void)ready_for_host(view<const T>(src.data, n), s, where);
  }
  if (same) {
    out_ptr = const_cast<T*>(in_ptr);
  } else if (out_path == path::staged && bytes > 0) {
    out_stage = detail::staging(bytes, where);
    out_ptr = reinterpret_cast<T*>(out_stage.get());
  } else if (out_path == path::via_host) {
    (void)ready_for_host(view<T>(dst.data, n), s, where);
  }
  if (!s.is_default() || in_path == path::staged) s.synchronize(where);
  detail::allreduce_pieces(in_ptr, out_ptr, n, op, comm, where);
  if (out_path == path::staged && bytes > 0) {
    detail::copy_in_order(dst.data, out_ptr, bytes, s, where);
    s.synchronize(where);
  }
}

/// @brief allreduce(inout, inout, op, comm, s): the reduction in place.
template <class R>
void allreduce(R&& inout, MPI_Op op, MPI_Comm comm = MPI_COMM_WORLD, stream_ref s = {},
               call_site where = call_site::current()) {
  allreduce(inout, inout, op, comm, s, where);
}

// ---------------------------------------------------------------------------------------------
// Environment

/// @brief Frees the pinned staging buffers unimem::mpi keeps for reuse; returns their bytes.
/// The environment's destructor calls it before MPI_Finalize.
inline std::size_t release_staging() noexcept { return detail::pool().release(); }

/// @brief The rank of this process among the ranks of `comm` on the same node
/// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED): the usual index of its GPU.
/// @throws unimem::mpi::error.
inline int local_rank(MPI_Comm comm = MPI_COMM_WORLD, call_site where = call_site::current()) {
  detail::require_initialized("unimem::mpi::local_rank");
  int rank = 0;
  detail::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", where);
  MPI_Comm node = MPI_COMM_NULL;
  detail::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
                "MPI_Comm_split_type", where);
  int local = 0;
  const int rc = MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  detail::check(rc, "MPI_Comm_rank", where);
  return local;
}

/// @brief Makes GPU local_rank(comm) % device_count() current on this thread (one rank per GPU
/// of a node) and returns it.
/// @throws unimem::error without a GPU ("no GPU was found"); unimem::mpi::error.
inline device use_local_device(MPI_Comm comm = MPI_COMM_WORLD,
                               call_site where = call_site::current()) {
  const int local = local_rank(comm, where);
  const int n = device_count(where);
  device d(n == 0 ? 0 : local % n, where);  // none: unimem::error, "no GPU was found"

  d.make_current(where);
  return d;
}

/// @brief MPI for a program's lifetime: initialises MPI (MPI_Init_thread) unless it is already,
/// makes MPI_COMM_WORLD and MPI_COMM_SELF return errors instead of aborting (so that
/// unimem::mpi can throw them; communicators made from them inherit it),
/// and finalises MPI when destroyed if it initialised it (after freeing the staging buffers).
/// Not copyable or movable: make one, in main().
class environment {
 public:
  /// @brief Initialises MPI with at least `required` thread support (MPI_THREAD_FUNNELED by
  /// default: MPI calls from the main thread).
  /// @throws unimem::mpi::error when MPI cannot be initialised or gives less thread support.
  environment(int& argc, char**& argv, int required = MPI_THREAD_FUNNELED,
              call_site where = call_site::current()) {
    int init = 0;
    MPI_Initialized(&init);
    if (init == 0) {
      detail::check(MPI_Init_thread(&argc, &argv, required, &provided_), "MPI_Init_thread", where);
      owner_ = true;
    } else {
      MPI_Query_thread(&provided_);
    }
    detail::check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                  "MPI_Comm_set_errhandler", where);
    detail::check(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN),
                  "MPI_Comm_set_errhandler", where);
    if (provided_ < required) {
      if (owner_) MPI_Finalize();
      owner_ = false;
      detail::throw_mpi(MPI_ERR_OTHER, "MPI_Init_thread", where,
                        "this MPI does not give the thread support asked for");
    }
  }
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;
  /// @brief Frees the staging buffers and, if this object initialised MPI, finalises it.
  ~environment() {
    (void)release_staging();
    int fin = 0;
    MPI_Finalized(&fin);
    if (owner_ && fin == 0) MPI_Finalize();
  }
  /// @brief This process's rank in MPI_COMM_WORLD.
  [[nodiscard]] int rank() const noexcept {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }
  /// @brief The number of ranks in MPI_COMM_WORLD.
  [[nodiscard]] int size() const noexcept {
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
  /// @brief The thread support MPI gives.
  [[nodiscard]] int thread_support() const noexcept { return provided_; }

 private:
  bool owner_ = false;
  int provided_ = MPI_THREAD_SINGLE;
};

}  // namespace mpi
UNIMEM_END_NAMESPACE
