// 9. DLPack export and import (<unimem/dlpack.hpp>) against the same tensor built and taken by
// hand: export = a DLManagedTensorVersioned over a shared managed_buffer, labelled for the GPU,
// then its deleter; import = a tensor taken over (checked: version, element type, device,
// layout), its view read, its deleter run. Per operation, in microseconds.
#include <unimem/dlpack.hpp>
#include <unimem/unimem.hpp>

#include "harness.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

/// The tensor as code without unimem builds it: one block with the struct, shape, strides and
/// the keep-alive; the deleter frees it.
struct by_hand {
  DLManagedTensorVersioned managed{};
  std::int64_t shape = 0, stride = 1;
  std::shared_ptr<void> keep;
  static void destroy(DLManagedTensorVersioned* m) {
    delete static_cast<by_hand*>(m->manager_ctx);
  }
};

DLManagedTensorVersioned* export_by_hand(float* p, std::size_t n, int device,
                                         std::shared_ptr<void> keep) {
  auto* h = new by_hand;
  h->shape = static_cast<std::int64_t>(n);
  h->keep = std::move(keep);
  DLManagedTensorVersioned& m = h->managed;
  m.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m.manager_ctx = h;
  m.deleter = &by_hand::destroy;
  m.dl_tensor.data = p;
  m.dl_tensor.device = {unimem::dlpack::gpu_device_type, device};
  m.dl_tensor.ndim = 1;
  m.dl_tensor.dtype = {kDLFloat, 32, 1};
  m.dl_tensor.shape = &h->shape;
  m.dl_tensor.strides = &h->stride;
  return &m;
}

/// What a hand-written consumer checks before using a tensor, then its deleter.
float import_by_hand(DLManagedTensorVersioned* m) {
  const DLTensor& t = m->dl_tensor;
  float first = 0.0f;
  if (m->version.major == 1 && t.dtype.code == kDLFloat && t.dtype.bits == 32 &&
      t.dtype.lanes == 1 && t.ndim == 1 && (t.strides == nullptr || t.strides[0] == 1) &&
      t.device.device_type == unimem::dlpack::gpu_device_type) {
    first = static_cast<float>(t.shape[0]);
  }
  m->deleter(m);
  return first;
}

}  // namespace

namespace unimem_bench {

void dlpack_bench(const options&) {
  namespace dl = unimem::dlpack;
  const auto buffer = std::make_shared<unimem::managed_buffer<float>>(1 << 20);
  const int device = unimem::device::current().device_id();
  const int batch = 2000, batches = 60;
  std::vector<double> raw_export, um_export, raw_import, um_import;
  float sink = 0.0f;
  auto per_op_us = [&](auto&& body) {
    const auto t = clock_type::now();
    for (int i = 0; i < batch; ++i) body();
    return ms_since(t) * 1000.0 / batch;
  };
  auto hand = [&] { return export_by_hand(buffer->data(), buffer->size(), device, buffer); };
  for (int k = 0; k < batches + 3; ++k) {  // the first 3: warm-up
    const double re = per_op_us([&] {
      DLManagedTensorVersioned* m = hand();
      m->deleter(m);
    });
    const double ue = per_op_us([&] {
      DLManagedTensorVersioned* m = dl::to_dlpack(buffer, dl::device_request::gpu);
      m->deleter(m);
    });
    const double ri = per_op_us([&] { sink += import_by_hand(hand()); });
    const double ui = per_op_us([&] {
      const dl::tensor<const float> t(hand());
      sink += static_cast<float>(t.view().size());
    });
    if (k < 3) continue;
    raw_export.push_back(re);
    um_export.push_back(ue);
    raw_import.push_back(ri);
    um_import.push_back(ui);
  }
  if (sink < 0.0f) std::printf("%f\n", static_cast<double>(sink));  // keeps the loops
  add_row("dlpack", "export+delete", "raw", "1-D", "us", raw_export);
  add_row("dlpack", "export+delete", "unimem", "1-D", "us", um_export);
  add_row("dlpack", "import+delete", "raw", "1-D", "us", raw_import);
  add_row("dlpack", "import+delete", "unimem", "1-D", "us", um_import);
}

}  // namespace unimem_bench
