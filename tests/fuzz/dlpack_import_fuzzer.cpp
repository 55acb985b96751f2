// libFuzzer target: DLPack tensors from an untrusted producer, imported by unimem::dlpack::tensor.
//
// Each input describes one DLManagedTensorVersioned or legacy DLManagedTensor over a host buffer
// (kDLCPU, or any other label the input names), every field as the input says: version, flags,
// element type, device, data pointer, byte_offset, ndim, shape and strides. It is imported as one
// of several element types. An independent reference, in 128-bit arithmetic, says whether the
// import must succeed; then the target checks what the tensor reports (size, layout, the memory
// it covers), reads every element where that memory lies in the buffer (AddressSanitizer sees any
// read outside), exports it again (to_dlpack of the shared tensor) and imports that, which must
// give the same layout, and that the producer's deleter ran exactly once, also when it throws.
// Built with clang's -fsanitize=fuzzer,address,undefined (tests/CMakeLists.txt, ctest
// fuzz.dlpack_import); the input format is in tests/fuzz/make_corpus.py.
#include <unimem/interop/dlpack.hpp>

#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace dl = unimem::dlpack;

namespace {

#define FUZZ_CHECK(condition)                                                             \
  do {                                                                                    \
    if (!(condition)) {                                                                   \
      std::fprintf(stderr, "dlpack_import_fuzzer: %s:%d: check failed: %s\n", __FILE__, \
                   __LINE__, #condition);                                                 \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

using i128 = __int128;
constexpr std::size_t arena_bytes = 256;
constexpr int entries_cap = 80;  // shape/strides entries given for an ndim in [0, entries_cap]

/// Reads little-endian fields; past the end, zeros.
struct reader {
  const std::uint8_t* p;
  std::size_t n;
  template <class U>
  U take() noexcept {
    U v{};
    const std::size_t k = n < sizeof(U) ? n : sizeof(U);
    std::memcpy(&v, p, k);
    p += k, n -= k;
    return v;
  }
};

enum flag : unsigned {
  legacy = 1u << 0,         // DLManagedTensor instead of DLManagedTensorVersioned
  throwing = 1u << 1,       // the deleter throws (after counting)
  null_shape = 1u << 2,     // shape == nullptr
  null_strides = 1u << 3,   // strides == nullptr (compact row-major)
  read_only = 1u << 4,      // DLPACK_FLAG_BITMASK_READ_ONLY (versioned)
  raw_dtype = 1u << 5,      // the dtype as the input gives it, else that of T
  raw_version = 1u << 6,    // the version as the input gives it, else 1.1
  null_deleter = 1u << 7,   // no deleter
};

/// The tensor as the input describes it; fields are read in one fixed order (make_corpus.py).
struct description {
  std::uint8_t type = 0, flags = 0;
  std::uint32_t major = 0, minor = 0;
  DLDataType dtype{};
  DLDevice device{};
  std::uint8_t data_mode = 0;
  std::uint16_t data_offset = 0;
  std::uint64_t raw_pointer = 0, byte_offset = 0;
  std::int32_t ndim = 0;
  int given = 0;  // shape (and strides) entries the producer allocated
  std::unique_ptr<std::int64_t[]> shape, strides;

  explicit description(reader& in) {
    type = in.take<std::uint8_t>();
    flags = in.take<std::uint8_t>();
    major = in.take<std::uint32_t>();
    minor = in.take<std::uint32_t>();
    dtype.code = in.take<std::uint8_t>();
    dtype.bits = in.take<std::uint8_t>();
    dtype.lanes = in.take<std::uint16_t>();
    device.device_type = static_cast<DLDeviceType>(in.take<std::int32_t>());
    device.device_id = in.take<std::int32_t>();
    data_mode = in.take<std::uint8_t>() % 3;
    data_offset = in.take<std::uint16_t>();
    raw_pointer = in.take<std::uint64_t>();
    byte_offset = in.take<std::uint64_t>();
    ndim = in.take<std::int32_t>();
    const std::uint8_t count = in.take<std::uint8_t>();
    given = ndim >= 0 && ndim <= entries_cap ? ndim : count % 4;
    // Exactly `given` entries each: AddressSanitizer reports a read past them.
    shape.reset(new std::int64_t[static_cast<std::size_t>(given)]);
    strides.reset(new std::int64_t[static_cast<std::size_t>(given)]);
    for (int i = 0; i < given; ++i) shape[i] = in.take<std::int64_t>();
    for (int i = 0; i < given; ++i) strides[i] = in.take<std::int64_t>();
  }
  bool has(flag f) const noexcept { return (flags & f) != 0; }
};

struct deleter_state {
  int calls = 0;
  bool throws = false;
};
template <class M>
void count_and_maybe_throw(M* m) {
  auto* s = static_cast<deleter_state*>(m->manager_ctx);
  ++s->calls;
  if (s->throws) throw std::runtime_error("a producer's deleter that throws");
}

/// The reference: whether importing as T must succeed, and the layout it must report.
struct expectation {
  bool accept = true;
  i128 count = 0, low = 0, high = 0;
  bool row_major = true;
  std::uintptr_t first = 0;  // data + byte_offset, when data is not null
};

bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

template <class T>
expectation reference(const description& d, const DLTensor& t, bool versioned) {
  expectation e;
  const i128 size = sizeof(T), ptrdiff_max = PTRDIFF_MAX;
  const auto refuse = [&e] {
    e.accept = false;
    return e;
  };
  if (versioned && d.has(raw_version) && d.major != 1) return refuse();
  if (versioned && d.has(read_only) && !std::is_const<T>::value) return refuse();
  if (!same_dtype(t.dtype, dl::dtype_of<T>())) return refuse();
  const DLDeviceType type = t.device.device_type;
  if (type != kDLCPU && type != dl::gpu_device_type && type != dl::managed_device_type &&
      type != dl::pinned_device_type) {
    return refuse();
  }
  if (type != kDLCPU && type != dl::pinned_device_type &&
      (t.device.device_id < 0 || t.device.device_id >= unimem::device_count())) {
    return refuse();
  }
  if (t.ndim < 0 || t.ndim > dl::max_ndim || (t.ndim > 0 && t.shape == nullptr)) return refuse();
  e.count = 1;
  bool empty = false;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0) return refuse();
    empty = empty || t.shape[i] == 0;
    e.count *= t.shape[i];
    if (e.count > ptrdiff_max) e.count = ptrdiff_max + 1;  // (small enough for i128)
  }
  if (empty) e.count = 0;
  if (e.count != 0) {
    if (e.count * size > ptrdiff_max) return refuse();
    i128 compact = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      const i128 stride = t.strides ? i128{t.strides[i]} : compact;
      const i128 reach = (t.shape[i] - 1) * stride;  // below 2^126
      if (reach < 0) e.low += reach; else e.high += reach;
      if (e.high - e.low >= ptrdiff_max) return refuse();  // (keeps the sums small)
      if (t.shape[i] != 1 && stride != compact) e.row_major = false;
      compact *= t.shape[i];
    }
    if ((e.high - e.low + 1) * size > ptrdiff_max) return refuse();
    if (t.data == nullptr) return refuse();
  }
  if (t.data != nullptr) {
    const i128 data = reinterpret_cast<std::uintptr_t>(t.data);
    if (i128{t.byte_offset} > ptrdiff_max || data + t.byte_offset > i128{UINTPTR_MAX}) {
      return refuse();
    }
    e.first = static_cast<std::uintptr_t>(data + t.byte_offset);
    if (e.count != 0) {
      if (e.first + e.low * size <= 0 || e.first + (e.high + 1) * size > i128{UINTPTR_MAX}) {
        return refuse();
      }
      if (e.first % alignof(T) != 0) return refuse();
    }
  }
  if (e.count == 0) e.low = e.high = 0, e.row_major = true;
  return e;
}

volatile unsigned char sink;

/// Reads the element at p, which must lie in the arena (ASan checks the read, this the bounds).
template <class T>
void touch(const T* p, const unsigned char* arena) {
  const auto a = reinterpret_cast<std::uintptr_t>(p), lo = reinterpret_cast<std::uintptr_t>(arena);
  FUZZ_CHECK(a >= lo && a + sizeof(T) <= lo + arena_bytes);
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, p, sizeof(T));
  sink = static_cast<unsigned char>(sink + bytes[0]);
}

/// What an accepted tensor reports, against the reference; every element read where the
/// memory it covers lies in the arena.
template <class T>
void check_accepted(const dl::tensor<T>& t, const expectation& e, const DLTensor& raw,
                    const unsigned char* arena) {
  FUZZ_CHECK(static_cast<bool>(t));
  FUZZ_CHECK(static_cast<i128>(t.size()) == e.count);
  FUZZ_CHECK(t.ndim() == raw.ndim);
  FUZZ_CHECK(t.contiguous() == e.row_major);
  FUZZ_CHECK(raw.data == nullptr ? t.data() == nullptr
                                 : reinterpret_cast<std::uintptr_t>(t.data()) == e.first);
  const unimem::view<const T> covered = unimem::to_view(t);
  if (e.count == 0) {
    FUZZ_CHECK(covered.empty());
    FUZZ_CHECK(t.view().empty());
    for (int i = 0; i < t.ndim(); ++i) (void)t.stride(i);  // defined for any extents (UBSan)
    return;
  }
  FUZZ_CHECK(static_cast<i128>(covered.size()) == e.high - e.low + 1);
  FUZZ_CHECK(static_cast<i128>(reinterpret_cast<std::uintptr_t>(covered.data())) ==
             e.first + e.low * static_cast<i128>(sizeof(T)));
  const auto lo = reinterpret_cast<std::uintptr_t>(arena);
  const auto begin = reinterpret_cast<std::uintptr_t>(covered.data());
  if (begin < lo || begin - lo > arena_bytes ||
      covered.size() > (arena_bytes - (begin - lo)) / sizeof(T)) {
    return;  // memory the producer vouches for and the arena is not: not read
  }
  for (const T& x : covered) touch(&x, arena);
  if (t.contiguous()) {
    for (const T& x : t.view()) touch(&x, arena);
  } else {
    bool refused = false;  // view() is for contiguous tensors only
    try {
      (void)t.view();
    } catch (const unimem::argument_error&) {
      refused = true;
    }
    FUZZ_CHECK(refused);
  }
  if (e.count > 4096) return;  // broadcast over few elements: covered above
  // Every element by its index, through shape and stride().
  std::int64_t index[dl::max_ndim] = {};
  for (i128 k = 0; k < e.count; ++k) {
    std::int64_t offset = 0;
    for (int i = 0; i < t.ndim(); ++i) offset += index[i] * t.stride(i);
    FUZZ_CHECK(offset >= e.low && offset <= e.high);
    touch(t.data() + offset, arena);
    for (int i = t.ndim() - 1; i >= 0 && ++index[i] == t.shape()[i]; --i) index[i] = 0;
  }
}

/// The accepted tensor exported again (to_dlpack of a shared tensor) and imported once more: the
/// same elements, layout and label; a legacy export of const elements is refused.
template <class T>
void check_reexport(dl::tensor<T>&& imported, bool legacy) {
  const auto shared = std::make_shared<dl::tensor<T>>(std::move(imported));
  const dl::tensor<T>& t = *shared;
  if (legacy && std::is_const<T>::value) {
    bool refused = false;
    try {
      (void)dl::to_dlpack<DLManagedTensor>(shared);
    } catch (const unimem::invalid_argument&) {
      refused = true;
    }
    FUZZ_CHECK(refused && shared.use_count() == 1);
    return;
  }
  const dl::tensor<T> again = legacy ? dl::tensor<T>(dl::to_dlpack<DLManagedTensor>(shared))
                                     : dl::tensor<T>(dl::to_dlpack(shared));
  FUZZ_CHECK(shared.use_count() == 2);  // the export keeps the import
  FUZZ_CHECK(again.size() == t.size() && again.contiguous() == t.contiguous());
  FUZZ_CHECK(again.device().device_type == t.device().device_type &&
             again.device().device_id == t.device().device_id);
  if (t.size() == 0) return;
  FUZZ_CHECK(again.data() == t.data());
  FUZZ_CHECK(unimem::to_view(again).data() == unimem::to_view(t).data() &&
             unimem::to_view(again).size() == unimem::to_view(t).size());
  FUZZ_CHECK(again.ndim() == (t.ndim() == 0 ? 1 : t.ndim()));  // 0-d goes out as 1 element
  for (int i = 0; i < t.ndim(); ++i) {
    FUZZ_CHECK(again.shape()[i] == t.shape()[i] && again.stride(i) == t.stride(i));
  }
}

template <class T>
void run(const description& d, unsigned char* arena) {
  deleter_state state;
  state.throws = d.has(throwing);
  DLManagedTensorVersioned versioned{};
  DLManagedTensor legacy_tensor{};
  const bool is_legacy = d.has(legacy);
  DLTensor& t = is_legacy ? legacy_tensor.dl_tensor : versioned.dl_tensor;
  t.data = d.data_mode == 0   ? nullptr
           : d.data_mode == 1 ? static_cast<void*>(arena + d.data_offset % (arena_bytes + 1))
                              : reinterpret_cast<void*>(static_cast<std::uintptr_t>(d.raw_pointer));
  t.device = d.device;
  t.ndim = d.ndim;
  t.dtype = d.has(raw_dtype) ? d.dtype : dl::dtype_of<T>();
  t.shape = d.has(null_shape) ? nullptr : d.shape.get();
  t.strides = d.has(null_strides) ? nullptr : d.strides.get();
  t.byte_offset = d.byte_offset;
  versioned.version = d.has(raw_version) ? DLPackVersion{d.major, d.minor} : DLPackVersion{1, 1};
  versioned.flags = d.has(read_only) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  versioned.manager_ctx = legacy_tensor.manager_ctx = &state;
  if (!d.has(null_deleter)) {
    versioned.deleter = &count_and_maybe_throw<DLManagedTensorVersioned>;
    legacy_tensor.deleter = &count_and_maybe_throw<DLManagedTensor>;
  }
  // A version other than 1.x: nothing but the deleter may be read, so no reference either.
  const bool foreign = !is_legacy && versioned.version.major != 1;
  const expectation e = foreign ? expectation{false} : reference<T>(d, t, !is_legacy);
  bool accepted = false;
  try {
    dl::tensor<T> imported = is_legacy ? dl::tensor<T>(&legacy_tensor) : dl::tensor<T>(&versioned);
    accepted = true;
    FUZZ_CHECK(e.accept);
    check_accepted(imported, e, t, arena);
    dl::tensor<T> moved(std::move(imported));  // the deleter moves with it
    FUZZ_CHECK(!imported && state.calls == 0);
    check_reexport(std::move(moved), is_legacy);
  } catch (const unimem::argument_error&) {
    FUZZ_CHECK(!accepted);  // a refusal, never from a check of an accepted tensor
    FUZZ_CHECK(!e.accept);
  }
  FUZZ_CHECK(state.calls == (d.has(null_deleter) ? 0 : 1));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  reader in{data, size};
  const description d(in);
  std::unique_ptr<unsigned char[]> arena(new unsigned char[arena_bytes]);
  for (std::size_t i = 0; i < arena_bytes; ++i) arena[i] = static_cast<unsigned char>(i);
  switch (d.type % 8) {
    case 0: run<float>(d, arena.get()); break;
    case 1: run<double>(d, arena.get()); break;
    case 2: run<std::int32_t>(d, arena.get()); break;
    case 3: run<std::uint8_t>(d, arena.get()); break;
    case 4: run<const float>(d, arena.get()); break;
    case 5: run<std::complex<double>>(d, arena.get()); break;
    case 6: run<std::int16_t>(d, arena.get()); break;
    default: run<const std::int64_t>(d, arena.get()); break;
  }
  return 0;
}
