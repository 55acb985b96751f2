"""unimem's buffers (unimem.Buffer, unimem._unimem) with torch, CuPy and NumPy on a GPU: the
obvious calls (torch.from_dlpack(b), torch.as_tensor(b, device="cuda"), cupy.from_dlpack(b),
cupy.asarray(b), np.from_dlpack(b),
np.from_dlpack(b, device="cpu"), np.asarray(b)) over every buffer kind, and which consumer takes
which label, zero-copy; writes seen on both sides; a unimem kernel over a torch tensor and torch
over a unimem buffer; objects dropped in either order without a leak; the stream hand-off of
__dlpack__ (a buffer's and an import's), of the CUDA Array Interface and the wait of
__array_interface__ (and that each test fails without it). Prints the two tables it measured
(docs/python.md).

Run: PYTHONPATH=<build>/python python3 tests/python/test_buffers_gpu.py (exit 77: skipped).
Skips without a GPU; each consumer's tests skip where it is not installed."""
import gc
import importlib
import sys
import unittest

import unimem._unimem as ux


def optional(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


np = optional("numpy")
torch = optional("torch")
cupy = optional("cupy")


def find_gpu():
    try:
        ux.Buffer(1, "device")
        return None
    except RuntimeError as e:  # unimem::error: no GPU, or no driver
        return str(e).splitlines()[0]


NO_GPU = find_gpu()
if torch is not None and (NO_GPU is not None or not torch.cuda.is_available()):
    torch = None  # a CPU-only torch, or no GPU
if cupy is not None:
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 (CuPy without a usable GPU)
        cupy = None
MODULES = {"torch": torch, "cupy": cupy, "numpy": np}
KINDS = ("managed", "device", "pinned", "pool")
LABELS = ("natural", "gpu", "cpu", "specific")
N = 1 << 20


def version(mod):
    return tuple(int(x) for x in mod.__version__.split("+")[0].split(".")[:2])


def obvious_calls():
    """(call, consumer, function of b) for each obvious call the installed consumers offer."""
    calls = []
    if torch is not None:
        calls += [("torch.from_dlpack(b)", "torch", torch.from_dlpack),
                  ('torch.as_tensor(b, device="cuda")', "torch",
                   lambda b: torch.as_tensor(b, device="cuda"))]
    if cupy is not None:
        calls += [("cupy.from_dlpack(b)", "cupy", cupy.from_dlpack),
                  ("cupy.asarray(b)", "cupy", cupy.asarray)]
    if np is not None:
        calls += [("np.from_dlpack(b)", "numpy", np.from_dlpack)]
        if version(np) >= (2, 1):  # from_dlpack's device= (the array API 2023.12)
            calls += [('np.from_dlpack(b, device="cpu")', "numpy",
                       lambda b: np.from_dlpack(b, device="cpu"))]
        calls += [("np.asarray(b)", "numpy", np.asarray)]
    return calls


def pointer(consumer, x):
    if consumer == "torch":
        return x.data_ptr()
    if consumer == "cupy":
        return x.data.ptr
    return x.ctypes.data


def take(consumer, obj):
    """The consumer's array over obj, or the exception it raised."""
    mod = MODULES[consumer]
    try:
        return mod.from_dlpack(obj), None
    except Exception as e:  # noqa: BLE001 (what the consumer says is the result)
        return None, e


class GpuBase(unittest.TestCase):
    def setUp(self):
        if NO_GPU is not None:
            self.skipTest("no GPU: " + NO_GPU)
        gc.collect()
        self.assertEqual(ux.live_exports(), 0)

    def tearDown(self):
        if torch is not None:
            torch.cuda.synchronize()
        gc.collect()
        self.assertEqual(ux.live_exports(), 0, "every exported tensor was deleted")
        self.assertEqual(ux.pool_allocations(), 0, "every pool buffer was given back")

    def need(self, *mods):
        for name in mods:
            if MODULES[name] is None:
                self.skipTest(name + " is not installed (or sees no GPU) for " + sys.executable)


class ObviousCalls(GpuBase):
    """The call a user writes first, over each buffer kind (no labelled(), no dl_device):
    zero-copy wherever the memory allows it (issue 45). Managed and pool memory say the GPU's
    label, so torch and CuPy take them; NumPy reads them through __array_interface__ (and
    from_dlpack with device="cpu"); pinned memory says the CPU's; device memory is the GPU's only,
    and np.asarray of it is a TypeError, not an array of objects."""

    REFUSED = {
        ("np.from_dlpack(b)", "managed"), ("np.from_dlpack(b)", "pool"),
        ("np.from_dlpack(b)", "device"), ('np.from_dlpack(b, device="cpu")', "device"),
        ("np.asarray(b)", "device"), ("cupy.from_dlpack(b)", "pinned"),
    }

    def test_obvious_calls(self):
        calls = obvious_calls()
        if not calls:
            self.skipTest("none of torch, CuPy, NumPy is installed for " + sys.executable)
        cells = {}
        for kind in KINDS:
            b = ux.Buffer(N, kind)
            b.fill(1.0)
            b.synchronize()
            for call, consumer, f in calls:
                try:
                    x, err = f(b), None
                except Exception as e:  # noqa: BLE001 (what the consumer says is the result)
                    x, err = None, e
                if err is not None:
                    cells[call, kind] = "refused (%s)" % type(err).__name__
                    self.assertIn((call, kind), self.REFUSED, "%s over %s: %r" % (call, kind, err))
                    if call == "np.asarray(b)":
                        self.assertIsInstance(err, TypeError)
                    continue
                same = pointer(consumer, x) == b.ptr
                cells[call, kind] = "zero-copy" if same else "COPY"
                self.assertTrue(same, "%s copied %s" % (call, kind))
                self.assertNotIn((call, kind), self.REFUSED, "%s took %s" % (call, kind))
                self.assertEqual(float(x[N - 1]), 1.0, "%s over %s" % (call, kind))
                if call.startswith("torch.as_tensor"):
                    self.assertEqual(x.device.type, "cuda")
                del x
            del b
        print("\n| call | " + " | ".join(KINDS) + " |")
        print("| --- |" + " --- |" * len(KINDS))
        for call, _, _ in calls:
            print("| `%s` | %s |" % (call, " | ".join(cells[call, k] for k in KINDS)))
        print("(%s; %s)" % (ux.backend, ", ".join("%s %s" % (c, MODULES[c].__version__)
                                                   for c in ("torch", "cupy", "numpy")
                                                   if MODULES[c] is not None)))


class ConsumerTable(GpuBase):
    """Each consumer's from_dlpack over each buffer kind and label: zero-copy where the table
    says so."""

    # (consumer, kind, label): takes it zero-copy. Refusals expected: torch kDLCUDAManaged and
    # kDLCUDAHost, CuPy kDLCPU and kDLCUDAHost, NumPy kDLCUDA; device memory has no CPU label
    # and pinned memory no GPU one. "natural" is what __dlpack_device__ says.
    ZERO_COPY = {
        ("torch", "managed", "natural"), ("torch", "managed", "gpu"), ("torch", "managed", "cpu"),
        ("torch", "pool", "natural"), ("torch", "pool", "gpu"), ("torch", "pool", "cpu"),
        ("torch", "device", "natural"), ("torch", "device", "gpu"),
        ("torch", "device", "specific"), ("torch", "pinned", "natural"),
        ("torch", "pinned", "cpu"),
        ("cupy", "managed", "natural"), ("cupy", "managed", "gpu"),
        ("cupy", "managed", "specific"), ("cupy", "pool", "natural"), ("cupy", "pool", "gpu"),
        ("cupy", "pool", "specific"), ("cupy", "device", "natural"), ("cupy", "device", "gpu"),
        ("cupy", "device", "specific"),
        ("numpy", "managed", "cpu"), ("numpy", "managed", "specific"), ("numpy", "pool", "cpu"),
        ("numpy", "pool", "specific"), ("numpy", "pinned", "natural"), ("numpy", "pinned", "cpu"),
        ("numpy", "pinned", "specific"),
    }

    def test_table(self):
        consumers = [c for c in ("torch", "cupy", "numpy") if MODULES[c] is not None]
        if not consumers:
            self.skipTest("none of torch, CuPy, NumPy is installed for " + sys.executable)
        rows = []
        for kind in KINDS:
            b = ux.Buffer(N, kind)
            b.fill(1.0)
            b.synchronize()
            for label in LABELS:
                try:
                    obj = b.labelled(label)
                    dev = obj.__dlpack_device__()
                except BufferError:
                    rows.append((kind, label, "-", {c: "no such label" for c in consumers}))
                    continue
                cells = {}
                for c in consumers:
                    x, err = take(c, obj)
                    if err is not None:
                        cells[c] = "refused (%s)" % type(err).__name__
                        self.assertNotIn((c, kind, label), self.ZERO_COPY,
                                         "%s refused %s as %s: %s" % (c, kind, label, err))
                    else:
                        same = pointer(c, x) == b.ptr
                        cells[c] = "zero-copy" if same else "COPY"
                        self.assertTrue(same, "%s copied %s as %s" % (c, kind, label))
                    del x
                rows.append((kind, label, "(%d, %d)" % dev, cells))
            del b
        print("\n| buffer | asked | label | " + " | ".join(consumers) + " |")
        print("| --- | --- | --- |" + " --- |" * len(consumers))
        for kind, label, dev, cells in rows:
            print("| %s | %s | %s | %s |" % (kind, label, dev,
                                             " | ".join(cells[c] for c in consumers)))
        versions = ["%s %s" % (c, MODULES[c].__version__) for c in consumers]
        print("(%s; %s)" % (ux.backend, ", ".join(versions)))
        for c in consumers:  # every consumer took something zero-copy
            self.assertTrue(any(c == k[0] for k in self.ZERO_COPY))

    def test_dl_device_argument_picks_the_label(self):
        self.need("numpy")
        b = ux.Buffer(16, "managed")
        b.fill(3.0)
        gpu_type, gpu = b.__dlpack_device__()
        self.assertEqual(gpu_type, ux.gpu_device_type)
        # DLPack 1.x: the consumer names the device; managed memory offers the CPU's label and
        # its own (kDLCUDAManaged; on ROCm kDLROCM).
        b.__dlpack__(max_version=(1, 0), dl_device=(ux.kDLCPU, 0))
        b.__dlpack__(max_version=(1, 0), dl_device=(ux.managed_device_type, gpu))
        with self.assertRaisesRegex(BufferError, "cannot be exported as"):
            ux.Buffer(16, "device").__dlpack__(dl_device=(ux.kDLCPU, 0))
        with self.assertRaisesRegex(BufferError, "stream=None only"):
            b.__dlpack__(dl_device=(ux.kDLCPU, 0), stream=1)
        with self.assertRaises(BufferError):
            b.__dlpack__(copy=True)
        a = np.from_dlpack(b.labelled("cpu"))
        np.testing.assert_array_equal(a, 3.0)


class BothSides(GpuBase):
    def test_torch_writes_what_unimem_and_numpy_read(self):
        self.need("torch", "numpy")
        for kind in ("managed", "pool"):
            b = ux.Buffer(N, kind)
            b.fill(2.0)
            t = torch.from_dlpack(b)  # the GPU's label; waits for the fill on torch's stream
            self.assertEqual(t.device.type, "cuda")
            t.mul_(4.0)  # a torch operation over unimem memory
            torch.cuda.synchronize()
            host = np.asarray(b)  # __array_interface__
            self.assertEqual(host.ctypes.data, t.data_ptr())
            np.testing.assert_array_equal(host, 8.0)
            host[:4] = -1.0  # the host writes, the GPU reads
            self.assertEqual(float(t[:4].sum().item()), -4.0)
            del t, host, b

    def test_unimem_kernel_over_torch_and_cupy_memory(self):
        self.need("torch")
        t = torch.ones(N, device="cuda")
        # torch's current stream as the protocol names it (its default stream, handle 0: 1).
        ux.scale(t, 3.0, torch.cuda.current_stream().cuda_stream or 1)
        self.assertEqual(float(t.sum().item()), 3.0 * N)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            u = torch.full((N,), 2.0, device="cuda")
            ux.scale(u, 5.0, side.cuda_stream)
            self.assertEqual(float(u.sum().item()), 10.0 * N)
        if cupy is not None:
            c = cupy.ones(N, dtype=cupy.float32)
            ux.scale(c, 7.0, cupy.cuda.get_current_stream().ptr or 1)
            self.assertEqual(float(c.sum()), 7.0 * N)

    def test_imported_torch_tensor_goes_on_to_cupy(self):
        self.need("torch", "cupy")
        t = torch.arange(N, device="cuda", dtype=torch.float32)
        imp = ux.Imported(t)
        c = cupy.from_dlpack(imp)
        self.assertEqual(c.data.ptr, t.data_ptr())
        del t  # CuPy's array keeps unimem's tensor, which keeps torch's
        self.assertEqual(float(c[-1]), float(N - 1))
        del imp, c


class Lifetimes(GpuBase):
    def test_dropped_in_either_order(self):
        self.need("torch")
        for kind in KINDS:
            b = ux.Buffer(N, kind)
            b.fill(5.0)
            t = torch.from_dlpack(b)  # pinned memory: a CPU tensor
            self.assertEqual(ux.live_exports(), 1)
            del b  # the tensor keeps the memory
            gc.collect()
            self.assertEqual(float(t.sum().item()), 5.0 * N)
            del t
            gc.collect()
            self.assertEqual(ux.live_exports(), 0, kind)
            b = ux.Buffer(N, kind)
            t = torch.from_dlpack(b)
            del t  # the buffer outlives its tensor
            gc.collect()
            self.assertEqual(ux.live_exports(), 0, kind)
            b.fill(1.0)
            b.synchronize()
            del b

    def test_unconsumed_capsules_are_deleted(self):
        b = ux.Buffer(N, "pool")
        capsules = [b.__dlpack__(), b.__dlpack__(max_version=(1, 0))]
        self.assertEqual(ux.live_exports(), 2)
        del b
        self.assertEqual(ux.pool_allocations(), 1, "the capsules keep the pool buffer")
        del capsules
        gc.collect()
        self.assertEqual(ux.live_exports(), 0)
        self.assertEqual(ux.pool_allocations(), 0)


class StreamHandoff(GpuBase):
    """A kernel that writes late (after spinning ~300 ms) on the buffer's stream; the consumer
    reads on its own stream at once. With the hand-off it waits and sees the write; without it
    (set_handoff(False): no event, the CUDA Array Interface names no stream) it does not."""

    SPIN_MS = 300.0

    def tearDown(self):
        ux.set_handoff(True)
        super().tearDown()

    def late(self, kind, read):
        """read(b) of a buffer whose 7.0 lands late on its stream (1.0 before): the sum read."""
        b = ux.Buffer(N, kind)
        b.fill(1.0)
        b.synchronize()
        b.fill(7.0, spin_ms=self.SPIN_MS)
        total = read(b)
        b.synchronize()
        return total

    def waits(self, kind, read):
        """read sees the late write with the hand-off, and not without it (the test can fail)."""
        self.assertEqual(self.late(kind, read), 7.0 * N)
        ux.set_handoff(False)
        self.assertNotEqual(self.late(kind, read), 7.0 * N)

    @staticmethod
    def torch_on_a_side_stream(producer):
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            t = torch.from_dlpack(producer)  # __dlpack__(stream=side's handle)
            return float(t.sum().item())

    def test_torch_waits_for_the_producer(self):
        self.need("torch")
        self.waits("device", self.torch_on_a_side_stream)

    def test_an_import_hands_off_to_its_consumer(self):
        self.need("torch")
        # Imported from the buffer on its stream, then exported to torch's side stream.
        self.waits("device",
                   lambda b: self.torch_on_a_side_stream(ux.Imported(b, stream=b.stream)))

    def test_numpy_asarray_waits_for_the_buffer(self):
        self.need("numpy")
        # __array_interface__ waits for the buffer's stream.
        self.waits("managed", lambda b: float(np.asarray(b).sum()))

    def test_cupy_waits_for_the_interface_stream(self):
        self.need("cupy")

        def read(b):
            with cupy.cuda.Stream(non_blocking=True):
                return float(cupy.asarray(b).sum())  # __cuda_array_interface__ with its stream

        self.waits("device", read)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.testsRun == len(result.skipped) else 0)
