"""unimem_example with torch, CuPy and NumPy on a GPU: which consumer takes which unimem buffer
under which label, zero-copy; writes seen on both sides; a unimem kernel over a torch tensor and
torch over a unimem buffer; objects dropped in either order without a leak; the stream hand-off
of __dlpack__ and of the CUDA Array Interface (and that the test fails without it). Prints the
consumer table it measured (docs/python.md).

Run: PYTHONPATH=<build>/examples/python python tests/python/test_gpu.py (exit 77: skipped).
Skips without a GPU; each consumer's tests skip where it is not installed."""
import gc
import importlib
import sys
import unittest

import unimem_example as ux


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
LABELS = ("natural", "gpu", "cpu")
N = 1 << 20


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


class ConsumerTable(GpuBase):
    """Each consumer over each buffer kind and label: zero-copy where the table says so."""

    # (consumer, kind, label): takes it zero-copy. Refusals expected: torch kDLCUDAManaged and
    # kDLCUDAHost, CuPy kDLCUDAHost, NumPy kDLCUDA; device memory has no CPU label.
    ZERO_COPY = {
        ("torch", "managed", "gpu"), ("torch", "pool", "gpu"), ("torch", "device", "natural"),
        ("torch", "device", "gpu"), ("torch", "managed", "cpu"), ("torch", "pinned", "cpu"),
        ("cupy", "managed", "natural"), ("cupy", "managed", "gpu"), ("cupy", "pool", "natural"),
        ("cupy", "pool", "gpu"), ("cupy", "device", "natural"),
        ("numpy", "managed", "natural"), ("numpy", "managed", "cpu"), ("numpy", "pool", "cpu"),
        ("numpy", "pinned", "natural"), ("numpy", "pinned", "cpu"),
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
                except ValueError:
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
        # DLPack 1.x: the consumer names the device; managed memory offers the CPU label.
        capsule = b.__dlpack__(max_version=(1, 0), dl_device=(ux.kDLCPU, 0))
        del capsule
        with self.assertRaisesRegex(ValueError, "cannot be exported as"):
            ux.Buffer(16, "device").__dlpack__(dl_device=(ux.kDLCPU, 0))
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
            t = torch.from_dlpack(b.labelled("gpu"))  # waits for the fill on torch's stream
            self.assertEqual(t.device.type, "cuda")
            t.mul_(4.0)  # a torch operation over unimem memory
            torch.cuda.synchronize()
            host = np.from_dlpack(b.labelled("cpu"))
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
            label = "cpu" if kind == "pinned" else "gpu"
            b = ux.Buffer(N, kind)
            b.fill(5.0)
            t = torch.from_dlpack(b.labelled(label))
            self.assertEqual(ux.live_exports(), 1)
            del b  # the tensor keeps the memory
            gc.collect()
            self.assertEqual(float(t.sum().item()), 5.0 * N)
            del t
            gc.collect()
            self.assertEqual(ux.live_exports(), 0, kind)
            b = ux.Buffer(N, kind)
            t = torch.from_dlpack(b.labelled(label))
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

    def consume_torch(self):
        b = ux.Buffer(N, "device")
        b.fill(1.0)
        b.synchronize()
        b.fill(7.0, spin_ms=self.SPIN_MS)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            t = torch.from_dlpack(b)  # __dlpack__(stream=side's handle)
            total = float(t.sum().item())
        b.synchronize()
        return total

    def consume_cupy(self):
        b = ux.Buffer(N, "device")
        b.fill(1.0)
        b.synchronize()
        b.fill(7.0, spin_ms=self.SPIN_MS)
        with cupy.cuda.Stream(non_blocking=True):
            total = float(cupy.asarray(b).sum())  # __cuda_array_interface__ with its stream
        b.synchronize()
        return total

    def test_torch_waits_for_the_producer(self):
        self.need("torch")
        self.assertEqual(self.consume_torch(), 7.0 * N)
        ux.set_handoff(False)  # the test can fail: without the event torch reads too early
        self.assertNotEqual(self.consume_torch(), 7.0 * N)

    def test_cupy_waits_for_the_interface_stream(self):
        self.need("cupy")
        self.assertEqual(self.consume_cupy(), 7.0 * N)
        ux.set_handoff(False)
        self.assertNotEqual(self.consume_cupy(), 7.0 * N)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.testsRun == len(result.skipped) else 0)
