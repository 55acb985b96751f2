// DLPack export and import (unimem/dlpack.hpp). Host tests run everywhere, on host memory and
// on containers with a memory kind whose label needs no GPU; GPU tests skip without a GPU.
#include "test_support.hpp"

#include <unimem/dlpack.hpp>  // not in the umbrella header
#include <unimem/managed_pool.hpp>

#include <complex>
#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dl = unimem::dlpack;

__global__ void dlpack_scale(unimem::view<float> v, float a) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < v.size()) v[i] *= a;
}

namespace {
constexpr bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
static_assert(same_dtype(dl::dtype_of<float>(), DLDataType{kDLFloat, 32, 1}), "");
static_assert(same_dtype(dl::dtype_of<const double>(), DLDataType{kDLFloat, 64, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::int8_t>(), DLDataType{kDLInt, 8, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::int16_t>(), DLDataType{kDLInt, 16, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::int32_t>(), DLDataType{kDLInt, 32, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::int64_t>(), DLDataType{kDLInt, 64, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::uint8_t>(), DLDataType{kDLUInt, 8, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::uint16_t>(), DLDataType{kDLUInt, 16, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::uint32_t>(), DLDataType{kDLUInt, 32, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::uint64_t>(), DLDataType{kDLUInt, 64, 1}), "");
static_assert(same_dtype(dl::dtype_of<bool>(), DLDataType{kDLBool, 8, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::complex<float>>(), DLDataType{kDLComplex, 64, 1}), "");
static_assert(same_dtype(dl::dtype_of<std::complex<double>>(), DLDataType{kDLComplex, 128, 1}),
              "");
static_assert(!std::is_copy_constructible<dl::tensor<float>>::value, "");
static_assert(std::is_nothrow_move_constructible<dl::tensor<float>>::value, "");
static_assert(std::is_nothrow_move_assignable<dl::tensor<float>>::value, "");

/// A keep-alive whose destruction is counted.
std::shared_ptr<void> counting_owner(int& destroyed) {
  return std::shared_ptr<void>(new int(0), [&destroyed](int* p) {
    ++destroyed;
    delete p;
  });
}

/// A host container that declares pinned memory (its labels need no runtime call) and counts
/// its destruction: stands in for a unimem buffer where no GPU can allocate one.
struct counted_buffer {
  using memory_kind = unimem::pinned_memory;
  std::vector<float> values;
  int* destroyed = nullptr;
  counted_buffer(std::size_t n, int& d) : values(n), destroyed(&d) {
    std::iota(values.begin(), values.end(), 0.0f);
  }
  counted_buffer(counted_buffer&& o) noexcept
      : values(std::move(o.values)), destroyed(std::exchange(o.destroyed, nullptr)) {}
  counted_buffer& operator=(counted_buffer&&) = delete;
  ~counted_buffer() {
    if (destroyed != nullptr) ++*destroyed;
  }
  friend unimem::view<float> unimem_view(counted_buffer& b) noexcept {
    return {b.values.data(), b.values.size()};
  }
  friend unimem::view<const float> unimem_view(const counted_buffer& b) noexcept {
    return {b.values.data(), b.values.size()};
  }
};

std::vector<std::int64_t> list(const dl::dims& d) { return {d.data(), d.data() + d.size()}; }
std::vector<std::int64_t> shape_of(const DLTensor& t) { return {t.shape, t.shape + t.ndim}; }
std::vector<std::int64_t> strides_of(const DLTensor& t) { return {t.strides, t.strides + t.ndim}; }
bool same(DLDevice a, DLDevice b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}
/// A producer's tensor made by hand over host memory, with any field as a hostile or careless
/// producer may set it; its deleter counts its calls and, when asked, throws.
struct hand_made {
  std::vector<std::int64_t> shape, strides;
  DLManagedTensorVersioned versioned{};
  DLManagedTensor legacy{};
  int deleted = 0;
  bool throws = false;
  hand_made(void* data, std::vector<std::int64_t> extents, std::vector<std::int64_t> steps = {})
      : shape(std::move(extents)), strides(std::move(steps)) {
    DLTensor& t = versioned.dl_tensor;
    t.data = data;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = static_cast<std::int32_t>(shape.size());
    t.dtype = dl::dtype_of<float>();
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    versioned.version = DLPackVersion{1, 1};
    versioned.manager_ctx = this;
    versioned.deleter = [](DLManagedTensorVersioned* m) {
      static_cast<hand_made*>(m->manager_ctx)->on_delete();
    };
    legacy.manager_ctx = this;
    legacy.deleter = [](DLManagedTensor* m) {
      static_cast<hand_made*>(m->manager_ctx)->on_delete();
    };
  }
  hand_made(const hand_made&) = delete;
  hand_made& operator=(const hand_made&) = delete;
  DLTensor& tensor() noexcept { return versioned.dl_tensor; }
  DLManagedTensorVersioned* get() noexcept { return &versioned; }
  DLManagedTensor* get_legacy() noexcept {
    legacy.dl_tensor = versioned.dl_tensor;
    return &legacy;
  }
  void on_delete() {
    ++deleted;
    if (throws) throw std::runtime_error("the producer's deleter throws");
  }
};
/// The message of the unimem::argument_error that importing m as tensor<T> throws, "" if none.
template <class T, class M>
std::string import_refusal(M* m) {
  try {
    dl::tensor<T> t(m);
  } catch (const unimem::argument_error& e) {
    return e.what();
  }
  return "";
}
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(nothing thrown)";
}
}  // namespace

TEST(DLPack, ExportedFields) {
  int destroyed = 0;
  std::vector<float> host(12);
  std::shared_ptr<void> owner = counting_owner(destroyed);
  DLManagedTensorVersioned* m = dl::to_dlpack(unimem::view<float>(host.data(), host.size()),
                                              dl::memory_type::host, 0, owner, {}, {3, 4});
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(owner.use_count(), 2);
  EXPECT_EQ(m->version.major, 1u);
  EXPECT_EQ(m->version.minor, static_cast<std::uint32_t>(DLPACK_MINOR_VERSION));
  EXPECT_EQ(m->flags, 0u);
  EXPECT_NE(m->manager_ctx, nullptr);
  EXPECT_EQ(m->dl_tensor.data, host.data());
  EXPECT_TRUE(same(m->dl_tensor.device, DLDevice{kDLCPU, 0}));
  EXPECT_TRUE(same_dtype(m->dl_tensor.dtype, DLDataType{kDLFloat, 32, 1}));
  EXPECT_EQ(shape_of(m->dl_tensor), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(strides_of(m->dl_tensor), (std::vector<std::int64_t>{4, 1}));
  EXPECT_EQ(m->dl_tensor.byte_offset, 0u);
  owner.reset();
  EXPECT_EQ(destroyed, 0);  // the tensor keeps it
  m->deleter(m);            // the consumer is done: deleted without being imported
  EXPECT_EQ(destroyed, 1);

  // 1-D by default; const elements are read-only; the legacy struct has no version or flags.
  const std::vector<int> ints(5, 7);
  auto* r = dl::to_dlpack(unimem::view<const int>(ints.data(), ints.size()), dl::memory_type::host,
                          0, counting_owner(destroyed));
  EXPECT_EQ(r->flags, static_cast<std::uint64_t>(DLPACK_FLAG_BITMASK_READ_ONLY));
  EXPECT_EQ(shape_of(r->dl_tensor), (std::vector<std::int64_t>{5}));
  EXPECT_EQ(strides_of(r->dl_tensor), (std::vector<std::int64_t>{1}));
  EXPECT_TRUE(same_dtype(r->dl_tensor.dtype, DLDataType{kDLInt, 32, 1}));
  r->deleter(r);
  EXPECT_EQ(destroyed, 2);
  DLManagedTensor* legacy = dl::to_dlpack<DLManagedTensor>(
      unimem::view<float>(host.data(), host.size()), dl::memory_type::host, 0,
      counting_owner(destroyed), {}, {2, 2, 3});
  EXPECT_EQ(shape_of(legacy->dl_tensor), (std::vector<std::int64_t>{2, 2, 3}));
  EXPECT_EQ(strides_of(legacy->dl_tensor), (std::vector<std::int64_t>{6, 3, 1}));
  legacy->deleter(legacy);
  EXPECT_EQ(destroyed, 3);

  // An empty tensor has a null data pointer; a borrowed view (no owner) is allowed.
  auto* e = dl::to_dlpack(unimem::view<float>(host.data(), host.size()), dl::memory_type::host, 0,
                          nullptr, {}, {0, 4});
  EXPECT_EQ(e->dl_tensor.data, nullptr);
  e->deleter(e);
}

TEST(DLPack, ShapeStridesAndOffsetAreChecked) {
  int destroyed = 0;
  std::vector<float> host(12);
  const unimem::view<float> v(host.data(), host.size());
  std::shared_ptr<void> owner = counting_owner(destroyed);
  const auto ok = [&](dl::dims shape, dl::dims strides, std::size_t offset) {
    DLManagedTensorVersioned* m =
        dl::to_dlpack(v, dl::memory_type::host, 0, owner, {}, shape, strides, offset);
    const std::uint64_t byte_offset = m->dl_tensor.byte_offset;
    m->deleter(m);
    return byte_offset;
  };
  const auto refused = [&](dl::dims shape, dl::dims strides, std::size_t offset) {
    return message_of(
        [&] { dl::to_dlpack(v, dl::memory_type::host, 0, owner, {}, shape, strides, offset); });
  };
  EXPECT_EQ(ok({3, 4}, {1, 3}, 0), 0u);               // column-major
  EXPECT_EQ(ok({10}, {}, 2), 2 * sizeof(float));      // offset into byte_offset
  EXPECT_EQ(ok({}, {}, 12), 0u);                      // nothing left: empty
  EXPECT_EQ(ok({4}, {-1}, 3), 3 * sizeof(float));     // reversed
  EXPECT_EQ(ok({2, 3}, {0, 1}, 0), 0u);               // broadcast
  EXPECT_NE(refused({10}, {}, 3).find("does not lie within the 12 elements"), std::string::npos);
  EXPECT_NE(refused({3, 5}, {}, 0).find("shape (3, 5) from element 0"), std::string::npos);
  EXPECT_NE(refused({3, 4}, {5, 1}, 0).find("with strides (5, 1)"), std::string::npos);
  EXPECT_NE(refused({4}, {-1}, 2).find("does not lie within"), std::string::npos);
  EXPECT_NE(refused({-1}, {}, 0).find("shape (-1)"), std::string::npos);
  EXPECT_NE(refused({1LL << 40, 1LL << 40}, {}, 0).find("does not lie"), std::string::npos);
  EXPECT_NE(refused({3, 4}, {1}, 0).find("1 strides for 2 dimensions"), std::string::npos);
  EXPECT_NE(refused({}, {}, 13).find("offset 13 is beyond the 12 elements"), std::string::npos);
  owner.reset();
  EXPECT_EQ(destroyed, 1);  // every refused export left the owner alone, every deleter ran once
}

TEST(DLPack, DeviceLabels) {
  using dl::device_request;
  using dl::memory_type;
  const DLDevice cpu{kDLCPU, 0}, gpu3{dl::gpu_device_type, 3};
  const DLDevice managed3{dl::managed_device_type, 3}, pinned{dl::pinned_device_type, 0};
  // What __dlpack_device__ says (issue 45): the GPU's for managed memory, as torch labels its
  // own managed tensors; the CPU's for pinned memory.
  EXPECT_TRUE(same(dl::natural_device(memory_type::managed, 3), gpu3));
  EXPECT_TRUE(same(dl::natural_device(memory_type::device, 3), gpu3));
  EXPECT_TRUE(same(dl::natural_device(memory_type::pinned, 3), cpu));
  EXPECT_TRUE(same(dl::natural_device(memory_type::host, 3), cpu));
  // The specific labels stay (13 and 3 on NVIDIA; 10 and 11 on AMD, which has no managed one).
  EXPECT_TRUE(same(dl::specific_device(memory_type::managed, 3), managed3));
  EXPECT_TRUE(same(dl::specific_device(memory_type::pinned, 3), pinned));
  EXPECT_TRUE(same(dl::specific_device(memory_type::device, 3), gpu3));
  EXPECT_TRUE(same(dl::specific_device(memory_type::host, 3), cpu));
#if defined(UNIMEM_DETAIL_HIP_AMD)
  EXPECT_EQ(dl::managed_device_type, kDLROCM);
  EXPECT_EQ(dl::pinned_device_type, kDLROCMHost);
#else
  EXPECT_EQ(dl::managed_device_type, kDLCUDAManaged);
  EXPECT_EQ(dl::pinned_device_type, kDLCUDAHost);
#endif
  // managed: the GPU's (natural), its own, the CPU's
  EXPECT_TRUE(same(dl::device_for(memory_type::managed, 3, {}), gpu3));
  EXPECT_TRUE(same(dl::device_for(memory_type::managed, 3, device_request::gpu), gpu3));
  EXPECT_TRUE(same(dl::device_for(memory_type::managed, 3, device_request::specific), managed3));
  EXPECT_TRUE(same(dl::device_for(memory_type::managed, 3, device_request::cpu), cpu));
  EXPECT_TRUE(same(dl::device_for(memory_type::managed, 3, gpu3), gpu3));
  EXPECT_TRUE(same(dl::device_for(memory_type::managed, 3, cpu), cpu));
  EXPECT_TRUE(same(dl::device_for(memory_type::managed, 3, managed3), managed3));  // dl_device
  EXPECT_THROW(dl::device_for(memory_type::managed, 3, DLDevice{dl::gpu_device_type, 1}),
               unimem::invalid_argument);
  EXPECT_THROW(dl::device_for(memory_type::managed, 3, DLDevice{kDLCPU, 1}), std::invalid_argument);
  const std::string vulkan3 =
      message_of([] { dl::device_for(memory_type::managed, 3, DLDevice{kDLVulkan, 3}); });
  EXPECT_NE(vulkan3.find("managed memory cannot be exported as (kDLVulkan, 3)"), std::string::npos)
      << vulkan3;
#if !defined(UNIMEM_DETAIL_HIP_AMD)
  EXPECT_NE(vulkan3.find("its labels: (kDLCUDA, 3), (kDLCUDAManaged, 3), (kDLCPU, 0)"),
            std::string::npos)
      << vulkan3;
#endif
  // device memory: GPU only
  EXPECT_TRUE(same(dl::device_for(memory_type::device, 3, device_request::natural), gpu3));
  EXPECT_TRUE(same(dl::device_for(memory_type::device, 3, device_request::specific), gpu3));
  EXPECT_TRUE(same(dl::device_for(memory_type::device, 3, device_request::gpu), gpu3));
  const std::string to_cpu =
      message_of([] { dl::device_for(memory_type::device, 3, device_request::cpu); });
  EXPECT_NE(to_cpu.find("device memory cannot be exported as a CPU tensor"), std::string::npos)
      << to_cpu;
  EXPECT_THROW(dl::device_for(memory_type::device, 3, cpu), unimem::argument_error);
  // pinned: the CPU's (natural) or its own, never a GPU's
  EXPECT_TRUE(same(dl::device_for(memory_type::pinned, 0, device_request::natural), cpu));
  EXPECT_TRUE(same(dl::device_for(memory_type::pinned, 0, device_request::specific), pinned));
  EXPECT_TRUE(same(dl::device_for(memory_type::pinned, 0, device_request::cpu), cpu));
  EXPECT_TRUE(same(dl::device_for(memory_type::pinned, 0, pinned), pinned));
  const std::string to_gpu =
      message_of([] { dl::device_for(memory_type::pinned, 0, device_request::gpu); });
  EXPECT_NE(
      to_gpu.find("pinned memory cannot be exported as a GPU tensor; its labels: (kDLCPU, 0), ("),
      std::string::npos)
      << to_gpu;
  // host memory: the CPU's only
  EXPECT_TRUE(same(dl::device_for(memory_type::host, 0, device_request::cpu), cpu));
  EXPECT_TRUE(same(dl::device_for(memory_type::host, 0, device_request::specific), cpu));
  EXPECT_THROW(dl::device_for(memory_type::host, 0, device_request::gpu), std::invalid_argument);
  const std::string vulkan =
      message_of([] { dl::device_for(memory_type::host, 0, DLDevice{kDLVulkan, 0}); });
  EXPECT_NE(vulkan.find("as (kDLVulkan, 0); its labels: (kDLCPU, 0)"), std::string::npos)
      << vulkan;
  // The memory a label says, and which labels the protocol gives a stream integer.
  EXPECT_EQ(dl::memory_type_of(kDLCPU), memory_type::host);
  EXPECT_EQ(dl::memory_type_of(dl::pinned_device_type), memory_type::pinned);
  EXPECT_EQ(dl::memory_type_of(dl::gpu_device_type), memory_type::device);
#if !defined(UNIMEM_DETAIL_HIP_AMD)
  EXPECT_EQ(dl::memory_type_of(kDLCUDAManaged), memory_type::managed);
#endif
  EXPECT_TRUE(dl::takes_stream(kDLCUDA));
  EXPECT_TRUE(dl::takes_stream(kDLROCM));
  for (DLDeviceType d : {kDLCPU, kDLCUDAHost, kDLCUDAManaged, kDLROCMHost}) {
    EXPECT_FALSE(dl::takes_stream(d)) << d;
  }
}

TEST(DLPack, MovedInBufferIsOwnedAndKeptOnFailure) {
  int destroyed = 0;
  counted_buffer b(12, destroyed);
  const float* data = b.values.data();
  EXPECT_TRUE(same(dl::dlpack_device(b), DLDevice{kDLCPU, 0}));  // pinned memory: the CPU's
  // Refused: the buffer stays with the caller, untouched.
  EXPECT_THROW(dl::to_dlpack(std::move(b), dl::device_request::gpu), std::invalid_argument);
  EXPECT_THROW(dl::to_dlpack(std::move(b), {}, {5, 5}), std::invalid_argument);
  EXPECT_EQ(b.values.data(), data);
  EXPECT_EQ(destroyed, 0);
  DLManagedTensorVersioned* m = dl::to_dlpack(std::move(b), dl::device_request::cpu, {4, 3});
  EXPECT_TRUE(b.values.empty());  // moved into the tensor
  EXPECT_EQ(m->dl_tensor.data, data);
  EXPECT_TRUE(same(m->dl_tensor.device, DLDevice{kDLCPU, 0}));
  EXPECT_EQ(m->flags, 0u);
  EXPECT_EQ(destroyed, 0);
  m->deleter(m);
  EXPECT_EQ(destroyed, 1);
  b.destroyed = nullptr;  // the moved-from shell counts nothing
}

TEST(DLPack, SharedBuffer) {
  int destroyed = 0;
  auto shared = std::make_shared<counted_buffer>(6, destroyed);
  auto* m = dl::to_dlpack(shared);
  EXPECT_EQ(shared.use_count(), 2);
  EXPECT_TRUE(same(m->dl_tensor.device, DLDevice{kDLCPU, 0}));
  auto* p = dl::to_dlpack<DLManagedTensor>(shared, dl::device_request::specific);
  EXPECT_TRUE(same(p->dl_tensor.device, DLDevice{dl::pinned_device_type, 0}));
  std::shared_ptr<const counted_buffer> read_only = shared;
  auto* r = dl::to_dlpack<DLManagedTensorVersioned>(read_only, dl::device_request::cpu);
  EXPECT_EQ(r->flags, static_cast<std::uint64_t>(DLPACK_FLAG_BITMASK_READ_ONLY));
  // A legacy tensor cannot say read-only: refused, rather than handed out as writable.
  const std::string legacy = message_of([&] { dl::to_dlpack<DLManagedTensor>(read_only); });
  EXPECT_NE(legacy.find("as a legacy DLManagedTensor, which cannot say read-only"),
            std::string::npos)
      << legacy;
  EXPECT_EQ(shared.use_count(), 5);  // the refused export took nothing
  m->deleter(m);
  p->deleter(p);
  r->deleter(r);
  read_only.reset();
  EXPECT_EQ(shared.use_count(), 1);
  shared.reset();
  EXPECT_EQ(destroyed, 1);
  EXPECT_THROW(dl::to_dlpack(std::shared_ptr<counted_buffer>()), std::invalid_argument);
}

TEST(DLPack, RoundTripOverHostMemory) {
  int destroyed = 0;
  auto host = std::make_shared<std::vector<float>>(6);
  std::iota(host->begin(), host->end(), 1.0f);
  const unimem::view<float> v(host->data(), host->size());
  {
    dl::tensor<float> t(dl::to_dlpack(v, dl::memory_type::host, 0, counting_owner(destroyed),
                                      dl::device_request::cpu, {2, 3}));
    EXPECT_TRUE(static_cast<bool>(t));
    EXPECT_EQ(t.ndim(), 2);
    EXPECT_EQ(list(t.shape()), (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(list(t.strides()), (std::vector<std::int64_t>{3, 1}));
    EXPECT_EQ(t.size(), 6u);
    EXPECT_TRUE(same(t.device(), DLDevice{kDLCPU, 0}));
    EXPECT_TRUE(t.contiguous());
    EXPECT_FALSE(t.read_only());
    const unimem::view<float> w = t.view();
    EXPECT_EQ(w.data(), host->data());
    EXPECT_EQ(w.size(), 6u);
    w[4] = 50.0f;  // zero-copy both ways
    EXPECT_EQ((*host)[4], 50.0f);
    const unimem::view<const float> c = unimem::to_view(static_cast<const dl::tensor<float>&>(t));
    EXPECT_EQ(c.data(), host->data());
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1);
  // Legacy, imported as const, and byte_offset
  {
    dl::tensor<const float> t(dl::to_dlpack<DLManagedTensor>(
        v, dl::memory_type::host, 0, counting_owner(destroyed), {}, {4}, {}, 2));
    EXPECT_EQ(t.dl_tensor().byte_offset, 2 * sizeof(float));
    EXPECT_EQ(t.data(), host->data() + 2);
    EXPECT_EQ(t.view()[0], 3.0f);
    EXPECT_EQ(t.view().size(), 4u);
    EXPECT_FALSE(t.read_only());
  }
  EXPECT_EQ(destroyed, 2);
  // Read-only: versioned only
  {
    dl::tensor<const float> t(dl::to_dlpack(unimem::view<const float>(v), dl::memory_type::host,
                                            0, counting_owner(destroyed)));
    EXPECT_TRUE(t.read_only());
    const auto refused_legacy = [&] {
      dl::to_dlpack<DLManagedTensor>(unimem::view<const float>(v), dl::memory_type::host, 0,
                                     counting_owner(destroyed));
    };
    EXPECT_THROW(refused_legacy(), std::invalid_argument);
    EXPECT_EQ(destroyed, 3);  // the refused export's owner, released at once
  }
  EXPECT_EQ(destroyed, 4);
}

TEST(DLPack, ImportDeletesExactlyOnce) {
  int destroyed = 0;
  std::vector<float> host(4);
  const unimem::view<float> v(host.data(), host.size());
  const auto make = [&] {
    return dl::to_dlpack(v, dl::memory_type::host, 0, counting_owner(destroyed));
  };
  { dl::tensor<float> t(make()); }
  EXPECT_EQ(destroyed, 1);
  {
    dl::tensor<float> a(make());
    dl::tensor<float> b(std::move(a));
    EXPECT_FALSE(static_cast<bool>(a));
    EXPECT_EQ(a.size(), 0u);
    a = std::move(b);
    b.reset();  // holds nothing: no deleter
    a.reset();
    EXPECT_EQ(destroyed, 2);
    a.reset();
    EXPECT_EQ(destroyed, 2);
    a = dl::tensor<float>(make());
    a = dl::tensor<float>(make());  // the first one deleted here
    EXPECT_EQ(destroyed, 3);
  }
  EXPECT_EQ(destroyed, 4);
  {  // the deleter may be null (the producer needs none)
    DLManagedTensorVersioned* m = make();
    DLManagedTensorVersioned copy = *m;
    copy.deleter = nullptr;
    { dl::tensor<float> t(&copy); }
    m->deleter(m);
  }
  EXPECT_EQ(destroyed, 5);
}

TEST(DLPack, ImportRefusesAndStillDeletes) {
  int destroyed = 0;
  alignas(8) float host[8] = {};
  const unimem::view<float> v(host, 8);
  const auto make = [&] {
    return dl::to_dlpack(v, dl::memory_type::host, 0, counting_owner(destroyed));
  };
  int expected = 0;
  const auto refused = [&](auto&& import) {
    const std::string what = message_of(import);
    EXPECT_EQ(destroyed, ++expected) << what;  // the constructor deleted the refused tensor
    return what;
  };
  EXPECT_NE(refused([&] { dl::tensor<std::int32_t> t(make()); })
                .find("element type int32 expected, the tensor holds float32"),
            std::string::npos);
  EXPECT_NE(refused([&] { dl::tensor<double> t(make()); }).find("float64 expected"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              auto* m = make();
              m->version.major = 2;
              m->dl_tensor.ndim = -7;  // a 2.x layout: nothing but the deleter may be read
              dl::tensor<float> t(m);
            }).find("DLPack version 2.1"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              dl::tensor<float> t(dl::to_dlpack(unimem::view<const float>(v), dl::memory_type::host,
                                                0, counting_owner(destroyed)));
            }).find("read-only"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              auto* m = make();
              m->dl_tensor.device = DLDevice{kDLVulkan, 0};
              dl::tensor<float> t(m);
            }).find("memory on (kDLVulkan, 0) is out of reach"),
            std::string::npos);
#if defined(UNIMEM_DETAIL_HIP_AMD)
  const DLDevice other_gpu{kDLCUDA, 0}, other_kind{kDLCUDAManaged, 0};
#else
  const DLDevice other_gpu{kDLROCM, 0}, other_kind{kDLROCMHost, 0};
#endif
  for (DLDevice d : {other_gpu, other_kind}) {
    EXPECT_NE(refused([&] {
                auto* m = make();
                m->dl_tensor.device = d;
                dl::tensor<float> t(m);
              }).find("out of reach of this build"),
              std::string::npos);
  }
  EXPECT_NE(refused([&] {
              auto* m = make();
              m->dl_tensor.byte_offset = 2;
              dl::tensor<float> t(m);
            }).find("not aligned"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              auto* m = make();
              m->dl_tensor.shape[0] = -1;
              dl::tensor<float> t(m);
            }).find("negative"),
            std::string::npos);
  EXPECT_NE(refused([&] {
              DLManagedTensor* m = dl::to_dlpack<DLManagedTensor>(v, dl::memory_type::host, 0,
                                                                  counting_owner(destroyed));
              dl::tensor<std::uint32_t> t(m);
            }).find("uint32 expected"),
            std::string::npos);
  // a read-only tensor of const elements is accepted
  { dl::tensor<const float> ok(dl::to_dlpack(unimem::view<const float>(v), dl::memory_type::host,
                                             0, counting_owner(destroyed))); }
  EXPECT_EQ(destroyed, ++expected);
  EXPECT_THROW(dl::tensor<float>(static_cast<DLManagedTensorVersioned*>(nullptr)),
               unimem::invalid_argument);
  EXPECT_EQ(destroyed, expected);
}

TEST(DLPack, StridedTensors) {
  int destroyed = 0;
  std::vector<float> host(12);
  const unimem::view<float> v(host.data(), host.size());
  dl::tensor<float> t(dl::to_dlpack(v, dl::memory_type::host, 0, counting_owner(destroyed), {},
                                    {3, 4}, {1, 3}));
  EXPECT_FALSE(t.contiguous());
  EXPECT_EQ(list(t.strides()), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(t.stride(1), 3);
  EXPECT_EQ(t.size(), 12u);
  const std::string what = message_of([&] { (void)t.view(); });
  EXPECT_NE(what.find("not contiguous"), std::string::npos) << what;
  // As a range (kernel argument, tags) it is the memory it covers.
  const unimem::view<float> covered = unimem::to_view(t);
  EXPECT_EQ(covered.data(), host.data());
  EXPECT_EQ(covered.size(), 12u);
  // Every other column: covers 0..10, 6 elements, not contiguous.
  dl::tensor<float> half(dl::to_dlpack(v, dl::memory_type::host, 0, nullptr, {}, {3, 2}, {4, 2}));
  EXPECT_FALSE(half.contiguous());
  EXPECT_EQ(unimem::to_view(half).size(), 11u);
  // Reversed: the covered memory starts below data().
  dl::tensor<float> rev(dl::to_dlpack(v, dl::memory_type::host, 0, nullptr, {}, {4}, {-1}, 3));
  EXPECT_EQ(rev.data(), host.data() + 3);
  EXPECT_EQ(unimem::to_view(rev).data(), host.data());
  EXPECT_FALSE(rev.contiguous());
  // No strides from the producer: compact row-major.
  DLManagedTensorVersioned* m = dl::to_dlpack(v, dl::memory_type::host, 0, nullptr, {}, {2, 3, 2});
  m->dl_tensor.strides = nullptr;
  dl::tensor<float> compact(m);
  EXPECT_TRUE(compact.contiguous());
  EXPECT_EQ(compact.strides().size(), 0u);
  EXPECT_EQ(compact.stride(0), 6);
  EXPECT_EQ(compact.stride(1), 2);
  EXPECT_EQ(compact.view().size(), 12u);
  // A tag over a tensor: the range, as for a view.
  auto tag = unimem::in(t);
  static_assert(std::is_same<decltype(tag.range), unimem::view<const float>>::value, "");
  EXPECT_EQ(tag.range.size(), 12u);
}

TEST(DLPack, ProtocolStreams) {
  const dl::protocol_stream none = dl::stream_from_protocol(-1);
  EXPECT_FALSE(none.synchronize);
  const auto handle =
      reinterpret_cast<unimem::stream_ref::native_handle_type>(std::intptr_t{0x1234});
  EXPECT_TRUE(dl::stream_from_protocol(0x1234).stream == unimem::stream_ref(handle));
  EXPECT_TRUE(dl::stream_from_protocol(0x1234).synchronize);
  EXPECT_THROW(dl::stream_from_protocol(-2), unimem::invalid_argument);
#if defined(UNIMEM_DETAIL_HIP_AMD)
  EXPECT_EQ(dl::default_stream_value, 0);
  EXPECT_TRUE(dl::stream_from_protocol(0).stream.is_default());
  EXPECT_THROW(dl::stream_from_protocol(1), std::invalid_argument);
  EXPECT_THROW(dl::stream_from_protocol(2), std::invalid_argument);
#else
  EXPECT_EQ(dl::default_stream_value, 1);
  EXPECT_TRUE(dl::stream_from_protocol(1).stream ==
              unimem::stream_ref(unimem::detail::backend::legacy_stream()));
  EXPECT_TRUE(dl::stream_from_protocol(2).stream ==
              unimem::stream_ref(unimem::detail::backend::per_thread_stream()));
  const std::string zero = message_of([] { dl::stream_from_protocol(0); });
  EXPECT_NE(zero.find("0 names no stream here"), std::string::npos) << zero;
#endif
  // Nothing to order: the same stream, or a consumer that asked for no synchronisation.
  dl::stream_handoff(unimem::stream_ref(handle), unimem::stream_ref(handle));
  dl::stream_handoff(unimem::stream_ref(handle), none);
}

TEST(DLPack, EmptyBuffersExportWithoutAGpu) {
  unimem::managed_buffer<float> b;
  const DLDevice natural = dl::dlpack_device(b);
  EXPECT_EQ(natural.device_type, dl::gpu_device_type);
  auto* m = dl::to_dlpack(std::move(b));
  EXPECT_EQ(m->dl_tensor.data, nullptr);
  EXPECT_EQ(shape_of(m->dl_tensor), (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(same(m->dl_tensor.device, natural));
  if (unimem::device_count() == 0) {  // GPU 0's label, and this process has no GPU 0
    EXPECT_THROW(dl::tensor<float>{m}, std::invalid_argument);
  } else {
    dl::tensor<float> t(m);
    EXPECT_TRUE(t.view().empty());
    EXPECT_TRUE(unimem::to_view(t).empty());
  }
  auto* d = dl::to_dlpack<DLManagedTensor>(unimem::device_buffer<int>(), dl::device_request::gpu);
  EXPECT_EQ(d->dl_tensor.device.device_type, dl::gpu_device_type);
  d->deleter(d);
  EXPECT_THROW(dl::to_dlpack(unimem::device_buffer<int>(), dl::device_request::cpu),
               std::invalid_argument);
}

TEST(DLPack, ImportedTensorsGoOutAgainWithTheirLayout) {
  int destroyed = 0;
  std::vector<float> host(12);
  std::iota(host.begin(), host.end(), 0.0f);
  const unimem::view<float> v(host.data(), host.size());
  struct layout {
    std::vector<std::int64_t> shape, strides;
    std::size_t offset;
  };
  // column-major, every other column, reversed (the first element above the lowest), compact
  for (const layout& l : {layout{{3, 4}, {1, 3}, 0}, layout{{3, 2}, {4, 2}, 0},
                          layout{{4}, {-1}, 3}, layout{{2, 3}, {3, 1}, 6}}) {
    auto t = std::make_shared<dl::tensor<float>>(dl::to_dlpack(
        v, dl::memory_type::host, 0, counting_owner(destroyed), {}, l.shape, l.strides, l.offset));
    for (int legacy = 0; legacy < 2; ++legacy) {
      dl::tensor<const float> again =
          legacy ? dl::tensor<const float>(dl::to_dlpack<DLManagedTensor>(t))
                 : dl::tensor<const float>(dl::to_dlpack(t));
      EXPECT_EQ(list(again.shape()), l.shape);
      EXPECT_EQ(list(again.strides()), l.strides);
      EXPECT_EQ(again.data(), t->data());
      EXPECT_EQ(again.data(), host.data() + l.offset);
      EXPECT_EQ(again.contiguous(), t->contiguous());
      EXPECT_TRUE(same(again.device(), DLDevice{kDLCPU, 0}));
      EXPECT_EQ(unimem::to_view(again).data(), unimem::to_view(*t).data());
      EXPECT_EQ(t.use_count(), 2);  // the export keeps the import
    }
    EXPECT_EQ(t.use_count(), 1);
  }
  EXPECT_EQ(destroyed, 4);  // each import's producer deleted once, after its exports
  // Labels: the producer's by default; another only within what that label says the memory is.
  auto pinned = std::make_shared<dl::tensor<float>>(dl::to_dlpack(
      v, dl::memory_type::pinned, 0, counting_owner(destroyed), dl::device_request::specific));
  DLManagedTensorVersioned* own = dl::to_dlpack(pinned);
  EXPECT_TRUE(same(own->dl_tensor.device, DLDevice{dl::pinned_device_type, 0}));
  DLManagedTensorVersioned* as_cpu = dl::to_dlpack(pinned, DLDevice{kDLCPU, 0});
  EXPECT_TRUE(same(as_cpu->dl_tensor.device, DLDevice{kDLCPU, 0}));
  EXPECT_THROW(dl::to_dlpack(pinned, dl::device_request::gpu), std::invalid_argument);
  own->deleter(own);
  as_cpu->deleter(as_cpu);
  // Read-only: a shared_ptr to a const tensor, or const elements; never as a legacy tensor.
  std::shared_ptr<const dl::tensor<float>> read_only = pinned;
  DLManagedTensorVersioned* r = dl::to_dlpack(read_only);
  EXPECT_EQ(r->flags, static_cast<std::uint64_t>(DLPACK_FLAG_BITMASK_READ_ONLY));
  EXPECT_THROW(dl::to_dlpack<DLManagedTensor>(read_only), std::invalid_argument);
  r->deleter(r);
  read_only.reset();
  EXPECT_EQ(pinned.use_count(), 1);
  EXPECT_THROW(dl::to_dlpack(std::make_shared<dl::tensor<float>>()), std::invalid_argument);
  EXPECT_THROW(dl::to_dlpack(std::shared_ptr<dl::tensor<float>>()), std::invalid_argument);
}

// ---- imports no producer can turn into a crash (issue 45): each case failed before the fix ----

TEST(DLPack, ImportCapsTheNumberOfDimensions) {
  float one = 1.0f;
  hand_made huge(&one, {1});
  huge.tensor().ndim = 1 << 30;  // a 1-element shape: reading 2^30 extents runs off it
  const std::string what = import_refusal<float>(huge.get());
  EXPECT_NE(what.find("1073741824 dimensions"), std::string::npos) << what;
  EXPECT_NE(what.find("at most 64"), std::string::npos) << what;
  EXPECT_EQ(huge.deleted, 1);
  EXPECT_THROW(dl::tensor<float>(huge.get_legacy()), std::length_error);
  EXPECT_EQ(huge.deleted, 2);
  hand_made negative(&one, {1});
  negative.tensor().ndim = -1;
  EXPECT_THROW(dl::tensor<float>(negative.get()), unimem::argument_error);
  hand_made at_cap(&one, std::vector<std::int64_t>(64, 1));  // 64 dimensions of 1: accepted
  {
    dl::tensor<float> t(at_cap.get());
    EXPECT_EQ(t.ndim(), 64);
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(t.view()[0], 1.0f);
  }
  EXPECT_EQ(at_cap.deleted, 1);
  hand_made over_cap(&one, std::vector<std::int64_t>(65, 1));
  EXPECT_NE(import_refusal<float>(over_cap.get()).find("65 dimensions"), std::string::npos);
  EXPECT_EQ(over_cap.deleted, 1);
}

TEST(DLPack, ImportRefusesSizesBeyondPtrdiffMax) {
  alignas(16) float host[4] = {};
  const auto refusal = [&](std::vector<std::int64_t> shape, std::vector<std::int64_t> strides) {
    hand_made h(host, std::move(shape), std::move(strides));
    std::string what = import_refusal<float>(h.get());
    EXPECT_EQ(h.deleted, 1) << what;
    return what;
  };
  // 2^62 floats are 2^64 bytes: view::size_bytes() would wrap to 0.
  EXPECT_NE(refusal({1LL << 62}, {}).find("more than PTRDIFF_MAX bytes"), std::string::npos);
  EXPECT_NE(refusal({1LL << 61}, {}).find("more than PTRDIFF_MAX bytes"), std::string::npos);
  EXPECT_NE(refusal({3, 1LL << 62}, {}).find("more than PTRDIFF_MAX bytes"), std::string::npos);
  // Strides whose products overflow int64 (a signed overflow before the fix), negative too.
  EXPECT_NE(refusal({2, 2}, {1LL << 62, -(1LL << 62)}).find("more than PTRDIFF_MAX bytes"),
            std::string::npos);
  EXPECT_NE(refusal({3}, {1LL << 62}).find("more than PTRDIFF_MAX bytes"), std::string::npos);
  EXPECT_NE(refusal({2}, {-(1LL << 62)}).find("more than PTRDIFF_MAX bytes"), std::string::npos);
  EXPECT_NE(refusal({2}, {INT64_MIN}).find("more than PTRDIFF_MAX bytes"), std::string::npos);
  hand_made bytes(host, {1LL << 59});  // 2^59 complex<double>: 2^63 bytes
  bytes.tensor().dtype = dl::dtype_of<std::complex<double>>();
  EXPECT_THROW(dl::tensor<std::complex<double>>(bytes.get()), std::length_error);
  EXPECT_EQ(bytes.deleted, 1);
  // A dimension of 0: no element, whatever the others (no stride is read).
  hand_made empty(host, {0, 1LL << 62, 1LL << 62}, {1LL << 62, 1LL << 62, -(1LL << 62)});
  {
    dl::tensor<float> t(empty.get());
    EXPECT_EQ(t.size(), 0u);
    EXPECT_TRUE(unimem::to_view(t).empty());
  }
  hand_made compact(host, {0, 1LL << 62, 1LL << 62});  // and its compact strides
  {
    dl::tensor<float> t(compact.get());
    EXPECT_EQ(t.size(), 0u);
    (void)t.stride(0);  // no signed overflow (UBSan)
  }
}

TEST(DLPack, ImportRefusesAddressesThatWrap) {
  alignas(16) float host[4] = {};
  hand_made offset(host, {1});
  offset.tensor().byte_offset = 1ULL << 63;  // beyond PTRDIFF_MAX, and data + it wraps
  std::string what = import_refusal<float>(offset.get());
  EXPECT_NE(what.find("byte_offset 9223372036854775808"), std::string::npos) << what;
  EXPECT_EQ(offset.deleted, 1);
  hand_made wraps(host, {1});
  wraps.tensor().byte_offset = 0 - reinterpret_cast<std::uintptr_t>(host);  // data + it == 0
  EXPECT_THROW(dl::tensor<float>(wraps.get()), std::out_of_range);
  EXPECT_EQ(wraps.deleted, 1);
  // The elements past the top of the address space, and below its bottom (a negative stride).
  hand_made top(reinterpret_cast<void*>(UINTPTR_MAX - 15), {8});
  what = import_refusal<float>(top.get());
  EXPECT_NE(what.find("wrap"), std::string::npos) << what;
  hand_made bottom(reinterpret_cast<void*>(std::uintptr_t{16}), {8}, {-1});
  what = import_refusal<float>(bottom.get());
  EXPECT_NE(what.find("wrap"), std::string::npos) << what;
  // The lowest element at address 0, exactly (the fuzzer's finding of 2026-12-06: data 32,
  // complex<double> strides -1, -1 over 2x2; accepted, and data() + its offset made a null
  // pointer from one that was not, undefined behaviour).
  hand_made zero(reinterpret_cast<void*>(std::uintptr_t{16}), {5}, {-1});
  what = import_refusal<float>(zero.get());
  EXPECT_NE(what.find("reach address 0"), std::string::npos) << what;
  EXPECT_EQ(top.deleted + bottom.deleted + zero.deleted, 3);
  // Within the address space: accepted (the producer vouches for the memory).
  hand_made fine(host, {4}, {-1});
  fine.tensor().byte_offset = 3 * sizeof(float);
  dl::tensor<float> t(fine.get());
  EXPECT_EQ(unimem::to_view(t).data(), host);
}

TEST(DLPack, ImportRefusesNullDataWithElements) {
  hand_made null(nullptr, {16});
  std::string what = import_refusal<float>(null.get());
  EXPECT_NE(what.find("data is null"), std::string::npos) << what;
  EXPECT_NE(what.find("16 elements"), std::string::npos) << what;
  EXPECT_EQ(null.deleted, 1);
  hand_made offset(nullptr, {16});
  offset.tensor().byte_offset = 64;  // data() was 0x40
  EXPECT_THROW(dl::tensor<float>(offset.get_legacy()), std::invalid_argument);
  EXPECT_EQ(offset.deleted, 1);
  hand_made empty(nullptr, {0});  // no element: a null data is allowed, and stays null
  empty.tensor().byte_offset = 64;
  dl::tensor<float> t(empty.get());
  EXPECT_EQ(t.data(), nullptr);
  EXPECT_TRUE(t.view().empty());
}

TEST(DLPack, ImportChecksTheDeviceId) {
  alignas(16) float host[4] = {1, 2, 3, 4};
  const int gpus = unimem::device_count();
  for (DLDeviceType type : {dl::gpu_device_type, dl::managed_device_type}) {
    for (int id : {999, gpus, -1}) {
      hand_made h(host, {4});
      h.tensor().device = DLDevice{type, id};
      const std::string what = import_refusal<float>(h.get());
      EXPECT_NE(what.find("this process has " + std::to_string(gpus) + " GPU"), std::string::npos)
          << what;
      EXPECT_EQ(h.deleted, 1);
    }
  }
  // The CPU's label: the id is not read (NumPy does not either); nor that of pinned memory.
  for (DLDeviceType type : {kDLCPU, dl::pinned_device_type}) {
    hand_made h(host, {4});
    h.tensor().device = DLDevice{type, 999};
    dl::tensor<float> t(h.get());
    EXPECT_EQ(t.view()[3], 4.0f);
  }
  if (gpus > 0) {
    hand_made h(host, {4});
    h.tensor().device = DLDevice{dl::gpu_device_type, gpus - 1};
    EXPECT_EQ(import_refusal<float>(h.get()), "");
  }
}

TEST(DLPack, ThrowingDeleterIsContained) {
  alignas(16) float host[4] = {};
  hand_made h(host, {4});
  h.throws = true;
  { dl::tensor<float> t(h.get()); }  // the destructor: no std::terminate
  EXPECT_EQ(h.deleted, 1);
  {
    dl::tensor<float> t(h.get_legacy());
    t.reset();
    EXPECT_EQ(h.deleted, 2);
    t.reset();
    EXPECT_EQ(h.deleted, 2);
    t = dl::tensor<float>(h.get());
    t = dl::tensor<float>();  // move assignment deletes the held tensor
    EXPECT_EQ(h.deleted, 3);
  }
  // A refused tensor is deleted, and the refusal, not the deleter's exception, comes out.
  EXPECT_NE(import_refusal<double>(h.get()).find("float64 expected"), std::string::npos);
  EXPECT_EQ(h.deleted, 4);
}

TEST(DLPackGpu, BuffersCarryTheirLabels) {
  UNIMEM_REQUIRE_GPU();
  const int id = unimem::device::current().device_id();
  unimem::managed_buffer<float> a(6);
  std::iota(a.begin(), a.end(), 1.0f);
  EXPECT_TRUE(same(dl::dlpack_device(a), DLDevice{dl::gpu_device_type, id}));
  auto shared = std::make_shared<unimem::managed_buffer<float>>(std::move(a));
  for (dl::device_choice c : {dl::device_choice(), dl::device_choice(dl::device_request::gpu),
                              dl::device_choice(dl::device_request::cpu),
                              dl::device_choice(dl::device_request::specific)}) {
    dl::tensor<float> t(dl::to_dlpack(shared, c, {2, 3}));
    EXPECT_EQ(t.data(), shared->data());
    EXPECT_EQ(t.view()[5], 6.0f);
  }
  DLManagedTensorVersioned* g = dl::to_dlpack(shared);
  EXPECT_TRUE(same(g->dl_tensor.device, DLDevice{dl::gpu_device_type, id}));
  g->deleter(g);
  g = dl::to_dlpack(shared, dl::device_request::specific);
  EXPECT_TRUE(same(g->dl_tensor.device, DLDevice{dl::managed_device_type, id}));
  g->deleter(g);
  EXPECT_EQ(shared.use_count(), 1);
  unimem::device_buffer<float> d(4);
  EXPECT_TRUE(same(dl::dlpack_device(d), DLDevice{dl::gpu_device_type, id}));
  EXPECT_THROW(dl::to_dlpack(std::move(d), dl::device_request::cpu), std::invalid_argument);
  dl::tensor<float> dt(dl::to_dlpack(std::move(d)));
  EXPECT_TRUE(same(dt.device(), DLDevice{dl::gpu_device_type, id}));
  unimem::pinned_buffer<float> p(4);
  EXPECT_TRUE(same(dl::dlpack_device(p), DLDevice{kDLCPU, 0}));
  EXPECT_THROW(dl::to_dlpack(std::move(p), dl::device_request::gpu), std::invalid_argument);
  dl::tensor<float> pt(dl::to_dlpack(std::move(p), dl::device_request::specific));
  EXPECT_TRUE(same(pt.device(), DLDevice{dl::pinned_device_type, 0}));
  unimem::managed_pool pool;
  dl::tensor<float> pool_t(dl::to_dlpack(unimem::pool_buffer<float>(8, pool)));
  EXPECT_TRUE(same(pool_t.device(), DLDevice{dl::gpu_device_type, pool.device_id()}));
}

TEST(DLPackGpu, ImportedTensorIsAKernelArgument) {
  UNIMEM_REQUIRE_GPU();
  unimem::managed_buffer<float> a(1000);
  std::iota(a.begin(), a.end(), 0.0f);
  unimem::stream producer, consumer;
  dl::tensor<float> t(dl::to_dlpack(std::move(a), dl::device_request::gpu), producer, consumer);
  unimem::launch(dlpack_scale, unimem::grid_for(t.size()).on(consumer), unimem::inout(t), 2.0f);
  unimem::launch(dlpack_scale, unimem::grid_for(t.size()).on(consumer), t, 0.5f);
  unimem::launch(dlpack_scale, unimem::grid_for(t.size()).on(consumer), t.view(), 3.0f);
  dl::stream_handoff(consumer, dl::stream_from_protocol(dl::default_stream_value));
  consumer.synchronize();
  const unimem::view<const float> r = t.view();
  for (std::size_t i = 0; i < r.size(); ++i) ASSERT_EQ(r[i], 3.0f * i) << i;
  // Placement calls take the imported managed memory as they take a buffer.
  const unimem::location gpu = unimem::location::device(consumer.device_id());
  const unimem::hint_status placed = unimem::prefetch(t, gpu, consumer);
  EXPECT_NE(placed, unimem::hint_status::empty);
  if (placed == unimem::hint_status::applied) {
    consumer.synchronize();
    EXPECT_EQ(unimem::last_prefetch_location(t), gpu);
  }
  EXPECT_NE(unimem::ready_for_host(t, consumer), unimem::hint_status::empty);
  EXPECT_EQ(r[999], 2997.0f);
}
