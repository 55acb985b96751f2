// unimem._unimem: unimem buffers for Python (docs/python.md), re-exported by the package as
// unimem.Buffer, unimem.Imported, unimem.scale and unimem.scale_on_host. Buffers of float32 go to
// torch, CuPy and NumPy without a copy (__dlpack__, __dlpack_device__, __cuda_array_interface__,
// __array_interface__), and a unimem kernel runs on any DLPack tensor (scale()).
//
//   b = unimem.Buffer(1 << 20, "managed")              # managed, device, pinned or pool
//   b.fill(1.0)                                        # a kernel on the buffer's stream
//   t = torch.from_dlpack(b)                           # the same memory, as cuda:0
//   a = numpy.asarray(b)                               # and as the host's (after the fill)
//   unimem.scale(t, 2.0, torch.cuda.current_stream().cuda_stream)
#include <pybind11/pybind11.h>

#include <unimem/dlpack.hpp>  // not in the umbrella header
#include <unimem/managed_pool.hpp>
#include <unimem/unimem.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace py = pybind11;
namespace dl = unimem::dlpack;

namespace {

/// x[i] = v for every element, after spinning about `cycles` clock cycles (0: at once): a kernel
/// whose late write a consumer that does not wait for it would miss.
__global__ void fill_after(float* x, std::size_t n, float v, long long cycles) {
  if (cycles > 0) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
  }
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = v;
}

__global__ void scale_kernel(unimem::view<float> x, float a) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < x.size()) x[i] *= a;
}

std::atomic<long> live_exports{0};   // tensors exported and not yet deleted
std::atomic<bool> handoff_on{true};  // off only to show that the hand-off test can fail

/// The pool of the "pool" buffers, made at first use and never destroyed: buffers keep its
/// memory alive, and a pool destroyed at interpreter exit would outlive the runtime.
unimem::managed_pool& pool() {
  static unimem::managed_pool* p = new unimem::managed_pool();
  return *p;
}

/// Parses a label request: "natural", "gpu", "cpu", "specific".
dl::device_request request_of(const std::string& s) {
  if (s == "natural") return dl::device_request::natural;
  if (s == "gpu") return dl::device_request::gpu;
  if (s == "cpu") return dl::device_request::cpu;
  if (s == "specific") return dl::device_request::specific;
  throw std::invalid_argument("unimem: a label is \"natural\", \"gpu\", \"cpu\" or "
                              "\"specific\", not \"" + s + "\"");
}

/// The capsule's destructor: deletes a tensor no consumer took (a consumer renames the capsule
/// "used_dltensor[_versioned]" and owns the tensor from then on).
void delete_unconsumed(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    dl::call_deleter(static_cast<DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule, "dltensor_versioned")));
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    dl::call_deleter(static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor")));
  }
}

/// A unimem buffer of float32 of one memory kind with the stream its kernels run on. Shared by
/// the Python object and every tensor exported from it: the last of them frees the memory.
class buffer {
 public:
  using storage = std::variant<unimem::managed_buffer<float>, unimem::device_buffer<float>,
                               unimem::pinned_buffer<float>, unimem::pool_buffer<float>>;

  buffer(std::size_t n, const std::string& kind)
      : kind_(checked(kind)), memory_(make(n, kind_, stream_)) {}
  /// As Python's Buffer(size, kind): a size no buffer can have is a ValueError, as for a kind.
  static std::shared_ptr<buffer> create(std::size_t n, const std::string& kind) {
    try {
      return std::make_shared<buffer>(n, kind);
    } catch (const unimem::argument_error& e) {
      throw py::value_error(e.what());
    }
  }

  const std::string& kind() const noexcept { return kind_; }
  unimem::view<float> view() {
    return std::visit([](auto& b) { return unimem::view<float>(unimem::to_view(b)); }, memory_);
  }
  dl::memory_type memory() const noexcept {
    return kind_ == "device" ? dl::memory_type::device
           : kind_ == "pinned" ? dl::memory_type::pinned
                               : dl::memory_type::managed;
  }
  /// The label most consumers take (__dlpack_device__): the GPU's for managed, pool and device
  /// memory, the CPU's for pinned memory.
  DLDevice natural() const {
    return std::visit([](const auto& b) { return dl::dlpack_device(b); }, memory_);
  }
  unimem::stream& stream() noexcept { return stream_; }

  /// fill_after on the buffer's stream; not waited for.
  void fill(float v, double spin_ms) {
    const unimem::view<float> x = view();
    if (x.empty()) return;
    const auto cycles = static_cast<long long>(spin_ms * 2.0e6);  // ~2 GHz
    unimem::launch(fill_after, unimem::grid_for(x.size()).on(stream_), x.data(), x.size(), v,
                   cycles);
  }

 private:
  static const std::string& checked(const std::string& kind) {
    if (kind != "managed" && kind != "device" && kind != "pinned" && kind != "pool") {
      throw std::invalid_argument("unimem.Buffer: kind is managed, device, pinned or "
                                  "pool, not \"" + kind + "\"");
    }
    return kind;
  }
  static storage make(std::size_t n, const std::string& kind, unimem::stream& s) {
    if (kind == "managed") return unimem::managed_buffer<float>(n);
    if (kind == "device") return unimem::device_buffer<float>(n);
    if (kind == "pinned") return unimem::pinned_buffer<float>(n);
    return unimem::pool_buffer<float>(n, pool(), s);
  }

  std::string kind_;
  unimem::stream stream_;  // before the memory: a pool buffer is given back on it
  storage memory_;
};

/// The stream integer of the protocol for a consumer that runs on `stream` (None: the default).
std::intptr_t protocol_value(const py::object& stream) {
  return stream.is_none() ? dl::default_stream_value : stream.cast<std::intptr_t>();
}

/// The label __dlpack__'s `dl_device` asks for (a (type, id) pair), else `otherwise`.
dl::device_choice asked_label(const py::object& dl_device, dl::device_choice otherwise) {
  if (dl_device.is_none()) return otherwise;
  const auto d = dl_device.cast<std::pair<int, int>>();
  return dl::device_choice(DLDevice{static_cast<DLDeviceType>(d.first), d.second});
}

/// An owner that keeps `keep` alive and is counted in live_exports while it lives.
template <class Keep>
std::shared_ptr<void> counted(std::shared_ptr<Keep> keep) {
  std::shared_ptr<void> owner(new std::shared_ptr<Keep>(std::move(keep)), [](void* p) {
    delete static_cast<std::shared_ptr<Keep>*>(p);
    --live_exports;
  });
  ++live_exports;
  return owner;
}

/// A capsule over the tensor make(DLManagedTensorVersioned*{}) or make(DLManagedTensor*{})
/// returns: "dltensor_versioned" where __dlpack__'s max_version is 1.0 or later, else the
/// legacy "dltensor". `copied`: the export is a copy (DLPACK_FLAG_BITMASK_IS_COPIED).
template <class Make>
py::object capsule_of(Make&& make, const py::object& max_version, bool copied = false) {
  const auto wrap = [](auto* t, const char* name) {
    PyObject* c = PyCapsule_New(t, name, delete_unconsumed);
    if (c == nullptr) dl::call_deleter(t);
    return c;
  };
  PyObject* capsule = nullptr;
  if (!max_version.is_none() && max_version.cast<std::pair<int, int>>().first >= 1) {
    DLManagedTensorVersioned* t = make(static_cast<DLManagedTensorVersioned*>(nullptr));
    if (copied) t->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
    capsule = wrap(t, "dltensor_versioned");
  } else {
    capsule = wrap(make(static_cast<DLManagedTensor*>(nullptr)), "dltensor");
  }
  if (capsule == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(capsule);
}

/// Makes the data ready for a consumer of `label` that passed `stream` to __dlpack__, after the
/// work queued on `producer` (if `ordered`: false where the producer's work is not on a known
/// stream). A CPU label takes stream=None only (the DLPack Python specification); a consumer that
/// names none and may read on the host (a CPU, pinned or managed label) is waited for now, by
/// the host; any other gets an event its stream waits for (stream_handoff()). The specific labels
/// also take a stream integer, as CuPy passes one for kDLCUDAManaged.
void make_ready(unimem::stream_ref producer, bool ordered, DLDevice label,
                const py::object& stream) {
  if (label.device_type == kDLCPU && !stream.is_none()) {
    throw py::buffer_error("unimem: a CPU tensor takes stream=None only (the DLPack "
                           "Python specification), not " + py::str(stream).cast<std::string>());
  }
  if (!ordered || !handoff_on.load()) return;
  if (!dl::takes_stream(label.device_type) && stream.is_none()) {
    producer.synchronize();
  } else {
    dl::stream_handoff(producer, dl::stream_from_protocol(protocol_value(stream)));
  }
}

/// `__dlpack__` of a buffer under a label: hands the data over to the consumer's stream, then
/// exports a tensor that keeps the buffer alive.
py::object export_tensor(const std::shared_ptr<buffer>& b, dl::device_choice label,
                         const py::object& stream, const py::object& max_version,
                         const py::object& dl_device, const py::object& copy) {
  if (!copy.is_none() && copy.cast<bool>()) {
    throw py::buffer_error("unimem: exports share the buffer's memory; copy=True is not "
                           "offered");
  }
  label = asked_label(dl_device, label);
  // The label first: a refused one throws before anything is handed over.
  const DLDevice natural = b->natural();
  const DLDevice device = dl::device_for(b->memory(), natural.device_id, label);
  make_ready(b->stream(), true, device, stream);
  return capsule_of(
      [&](auto* tag) {
        using managed = std::remove_pointer_t<decltype(tag)>;
        return dl::to_dlpack<managed>(b->view(), b->memory(), natural.device_id, counted(b),
                                      device);
      },
      max_version);
}

/// A buffer seen under one label: the CPU's for NumPy's from_dlpack of managed memory, the
/// specific ones (kDLCUDAManaged, kDLCUDAHost) for a consumer that wants them.
struct labelled {
  std::shared_ptr<buffer> b;
  dl::device_choice label;
  DLDevice device() const { return dl::device_for(b->memory(), b->natural().device_id, label); }
};

/// The DLPack tensor of any producer: an object with __dlpack__ (asked for a versioned tensor
/// first; a producer that does not know max_version is asked again without it) or a capsule.
/// `stream`: the consumer's stream, the integer __dlpack__ is given where the producer's label
/// takes one (kDLCUDA, kDLROCM); the stream-less labels (kDLCPU, kDLCUDAHost, kDLCUDAManaged,
/// kDLROCMHost) are given None, as the DLPack Python specification says.
template <class T>
dl::tensor<T> import_tensor(const py::object& obj, std::intptr_t stream) {
  py::object capsule = obj;
  if (py::hasattr(obj, "__dlpack__")) {
    py::object s = py::int_(stream);
    if (py::hasattr(obj, "__dlpack_device__") &&
        !dl::takes_stream(static_cast<DLDeviceType>(
            obj.attr("__dlpack_device__")().cast<std::pair<int, int>>().first))) {
      s = py::none();
    }
    try {
      capsule = obj.attr("__dlpack__")(py::arg("stream") = s,
                                       py::arg("max_version") = py::make_tuple(1, 1));
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_TypeError)) throw;
      capsule = obj.attr("__dlpack__")(py::arg("stream") = s);
    }
  }
  PyObject* c = capsule.ptr();
  if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
    if (PyCapsule_SetName(c, "used_dltensor_versioned") != 0) throw py::error_already_set();
    return dl::tensor<T>(m);  // owns it from here, also when it refuses it
  }
  if (PyCapsule_IsValid(c, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
    if (PyCapsule_SetName(c, "used_dltensor") != 0) throw py::error_already_set();
    return dl::tensor<T>(m);
  }
  throw py::type_error("unimem: expected an object with __dlpack__ or an unused DLPack "
                       "capsule");
}

/// A DLPack tensor of another library imported into unimem, exported again on demand with its
/// shape and strides (each export shares the import, which keeps the producer's memory alive),
/// labelled as the producer labelled it. `stream`: the stream the import was handed over to,
/// which exports order their consumers after.
class imported {
 public:
  imported(const py::object& producer, const py::object& stream)
      : stream_(dl::stream_from_protocol(protocol_value(stream))),
        t_(std::make_shared<dl::tensor<float>>(
            import_tensor<float>(producer, protocol_value(stream)))) {}
  const dl::tensor<float>& tensor() const noexcept { return *t_; }
  DLDevice device() const noexcept { return t_->device(); }

  /// `__dlpack__`: the label asked for (dl_device) within what the producer's says the memory
  /// is; made ready for the consumer's stream (make_ready()); copy=True gives a copy in host
  /// memory (a kDLCPU label only), anything else the import itself.
  py::object export_tensor(const py::object& stream, const py::object& max_version,
                           const py::object& dl_device, const py::object& copy) const {
    const DLDevice own = device();
    const DLDevice label = dl::device_for(dl::memory_type_of(own.device_type), own.device_id,
                                          asked_label(dl_device, dl::device_choice(own)));
    // A CPU producer's memory is ready as it came; on a GPU, after the import's stream.
    make_ready(stream_.stream, own.device_type != kDLCPU && stream_.synchronize, label, stream);
    if (!copy.is_none() && copy.cast<bool>()) {
      if (label.device_type != kDLCPU) {
        throw py::buffer_error("unimem: copy=True copies into host memory: ask for it "
                               "with dl_device=(kDLCPU, 0), of memory the host can read");
      }
      return capsule_of(
          [&](auto* tag) {
            using managed = std::remove_pointer_t<decltype(tag)>;
            auto host = host_copy();
            const unimem::view<float> v(host->data(), host->size());
            return dl::to_dlpack<managed>(v, dl::memory_type::host, 0, counted(host), {},
                                          t_->shape());
          },
          max_version, true);
    }
    // The import itself, as a tensor<float> that counts in live_exports while exported.
    const std::shared_ptr<dl::tensor<float>> shared(counted(t_), t_.get());
    return capsule_of(
        [&](auto* tag) {
          return dl::to_dlpack<std::remove_pointer_t<decltype(tag)>>(shared, label);
        },
        max_version);
  }

 private:
  /// The elements in row-major order, read on the host.
  std::shared_ptr<std::vector<float>> host_copy() const {
    const dl::tensor<float>& t = *t_;
    auto out = std::make_shared<std::vector<float>>(t.size());
    std::vector<std::int64_t> index(static_cast<std::size_t>(t.ndim()), 0);
    for (float& x : *out) {
      std::int64_t offset = 0;
      for (int i = 0; i < t.ndim(); ++i) offset += index[i] * t.stride(i);
      x = t.data()[offset];
      for (int i = t.ndim() - 1; i >= 0 && ++index[i] == t.shape()[i]; --i) index[i] = 0;
    }
    return out;
  }

  dl::protocol_stream stream_;
  std::shared_ptr<dl::tensor<float>> t_;
};

}  // namespace

PYBIND11_MODULE(_unimem, m) {
  m.doc() = "unimem buffers for torch, CuPy and NumPy over DLPack and the CUDA Array Interface";
  m.attr("backend") = unimem::backend_name();
  m.attr("kDLCPU") = static_cast<int>(kDLCPU);
  m.attr("gpu_device_type") = static_cast<int>(dl::gpu_device_type);
  m.attr("managed_device_type") = static_cast<int>(dl::managed_device_type);
  m.attr("pinned_device_type") = static_cast<int>(dl::pinned_device_type);

  // unimem's refusals here are DLPack's (a label, an element type, a layout, a version, a
  // stream): BufferError, as the DLPack Python specification asks; the runtime's failures
  // RuntimeError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const unimem::argument_error& e) {
      PyErr_SetString(PyExc_BufferError, e.what());
    } catch (const unimem::error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  py::class_<buffer, std::shared_ptr<buffer>>(m, "Buffer")
      .def(py::init(&buffer::create), py::arg("size"), py::arg("kind") = "managed")
      .def_property_readonly("kind", &buffer::kind)
      .def_property_readonly("ptr", [](buffer& b) {
        return reinterpret_cast<std::uintptr_t>(b.view().data());
      })
      .def_property_readonly("stream", [](buffer& b) {
        return reinterpret_cast<std::uintptr_t>(b.stream().get());
      })
      .def("__len__", [](buffer& b) { return b.view().size(); })
      .def("fill", &buffer::fill, py::arg("value"), py::arg("spin_ms") = 0.0,
           "Writes value everywhere on the buffer's stream (after spinning spin_ms on the GPU)")
      .def("synchronize", [](buffer& b) { b.stream().synchronize(); })
      .def("__dlpack_device__", [](buffer& b) {
        const DLDevice d = b.natural();
        return py::make_tuple(static_cast<int>(d.device_type), d.device_id);
      })
      .def("__dlpack__",
           [](const std::shared_ptr<buffer>& b, py::object stream, py::object max_version,
              py::object dl_device, py::object copy) {
             return export_tensor(b, dl::device_request::natural, stream, max_version,
                                  dl_device, copy);
           },
           py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
           py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("labelled",
           [](const std::shared_ptr<buffer>& b, const std::string& label) {
             labelled l{b, request_of(label)};
             (void)l.device();  // refused now, not at export
             return l;
           },
           py::arg("label"),
           "The buffer under the label \"natural\", \"gpu\", \"cpu\" or \"specific\"")
      .def_property_readonly(
          "__array_interface__",
          [](buffer& b) {
            if (b.memory() == dl::memory_type::device) {
              throw py::attribute_error("unimem.Buffer: device memory has no "
                                        "__array_interface__ (the host cannot read it)");
            }
            if (handoff_on.load()) b.stream().synchronize();  // the host reads next
            py::dict d;
            d["shape"] = py::make_tuple(b.view().size());
            d["typestr"] = "<f4";
            d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(b.view().data()), false);
            d["strides"] = py::none();
            d["version"] = 3;
            return d;
          },
          "NumPy's view of host-reachable memory (managed, pool, pinned), after the buffer's "
          "stream is done: numpy.asarray(b) is zero-copy")
      .def(
          "__array__",
          [](const py::object& self, const py::object& dtype, const py::object& copy) {
            if (self.cast<buffer&>().memory() == dl::memory_type::device) {
              throw py::type_error("unimem.Buffer: device memory cannot be a NumPy array "
                                   "(the host cannot read it): use torch or CuPy, or copy it");
            }
            const py::module_ np = py::module_::import("numpy");
            return !copy.is_none() && copy.cast<bool>()
                       ? np.attr("array")(self, py::arg("dtype") = dtype, py::arg("copy") = true)
                       : np.attr("asarray")(self, py::arg("dtype") = dtype);  // (the interface)
          },
          py::arg("dtype") = py::none(), py::kw_only(), py::arg("copy") = py::none())
      .def_property_readonly("__cuda_array_interface__", [](buffer& b) {
        py::dict d;
        d["shape"] = py::make_tuple(b.view().size());
        d["typestr"] = "<f4";
        d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(b.view().data()), false);
        d["version"] = 3;
        d["strides"] = py::none();
        // Where the data is ready: the consumer waits for the buffer's stream (0 is not allowed).
        d["stream"] = handoff_on.load()
                          ? py::int_(reinterpret_cast<std::uintptr_t>(b.stream().get()))
                          : py::object(py::none());
        return d;
      });

  py::class_<labelled>(m, "Labelled")
      .def("__dlpack_device__", [](const labelled& l) {
        const DLDevice d = l.device();
        return py::make_tuple(static_cast<int>(d.device_type), d.device_id);
      })
      .def("__dlpack__",
           [](const labelled& l, py::object stream, py::object max_version, py::object dl_device,
              py::object copy) {
             return export_tensor(l.b, l.label, stream, max_version, dl_device, copy);
           },
           py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
           py::arg("dl_device") = py::none(), py::arg("copy") = py::none());

  m.def("scale",
        [](const py::object& tensor, float factor, const py::object& stream) {
          // The producer orders its data before `stream`; the kernel is queued on it.
          const std::intptr_t value = protocol_value(stream);
          dl::tensor<float> t = import_tensor<float>(tensor, value);
          if (t.device().device_type == kDLCPU) {
            throw py::value_error("unimem.scale: a CPU tensor; a kernel needs memory the "
                                  "GPU can reach (use scale_on_host)");
          }
          const dl::protocol_stream s = dl::stream_from_protocol(value);
          unimem::launch(scale_kernel, unimem::grid_for(t.size()).on(s.stream), t.view(), factor);
        },
        py::arg("tensor"), py::arg("factor"), py::arg("stream") = py::none(),
        "Multiplies a float32 DLPack tensor by factor with a unimem kernel on `stream` (the "
        "consumer's stream integer of the protocol; None: the default stream). Not waited for.");
  m.def("scale_on_host",
        [](const py::object& tensor, float factor) {
          dl::tensor<float> t = import_tensor<float>(tensor, -1);
          for (float& x : t.view()) x *= factor;
        },
        py::arg("tensor"), py::arg("factor"),
        "Multiplies a float32 DLPack tensor the host can reach by factor, on the CPU.");
  py::class_<imported>(m, "Imported")
      .def(py::init<const py::object&, const py::object&>(), py::arg("producer"),
           py::arg("stream") = py::none(),
           "Imports a float32 DLPack tensor (an object with __dlpack__, or a capsule); `stream`: "
           "the stream it is handed over to (None: the default), which its exports' consumers "
           "then wait for")
      .def_property_readonly("ptr", [](const imported& i) {
        return reinterpret_cast<std::uintptr_t>(i.tensor().data());
      })
      .def_property_readonly("shape", [](const imported& i) {
        py::list l;
        for (std::size_t k = 0; k < i.tensor().shape().size(); ++k) l.append(i.tensor().shape()[k]);
        return py::tuple(l);
      })
      .def("__len__", [](const imported& i) { return i.tensor().size(); })
      .def("__dlpack_device__", [](const imported& i) {
        return py::make_tuple(static_cast<int>(i.device().device_type), i.device().device_id);
      })
      .def_property_readonly("strides", [](const imported& i) {
        py::list l;
        for (int k = 0; k < i.tensor().ndim(); ++k) l.append(i.tensor().stride(k));
        return py::tuple(l);
      })
      .def("__dlpack__",
           [](const imported& i, py::object stream, py::object max_version, py::object dl_device,
              py::object copy) { return i.export_tensor(stream, max_version, dl_device, copy); },
           py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
           py::arg("dl_device") = py::none(), py::arg("copy") = py::none());

  m.def("live_exports", [] { return live_exports.load(); },
        "Tensors exported by this module whose deleter has not run yet");
  m.def("pool_allocations", [] { return pool().statistics().allocations; },
        "Allocations of the pool of \"pool\" buffers not yet given back");
  m.def("set_handoff", [](bool on) { handoff_on.store(on); }, py::arg("on"),
        "Off: exports skip the stream hand-off and __array_interface__ its wait (only to show "
        "that a test detects it)");
}
