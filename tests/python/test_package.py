"""unimem's Python package without a GPU (CI, every toolchain that builds it; it runs on GPU
machines too): the package imports; the allocator library exports exactly its C symbols, each
loads with its signature (the build checks them against torch's and CuPy's function types);
refusals are clean (a null pointer and this thread's last error, or an exception in Python; CuPy's
CFunctionAllocator symbol, whose caller uses the pointer unchecked, stops the process with the
reason; route A's throws into torch's C++, which python/route_a_throws.cpp checks); and the
helpers of unimem.torch and unimem.cupy call torch and CuPy as docs/python.md says, checked
against stand-ins that record the calls (the real frameworks run in tests/python/test_torch.py).

Run: PYTHONPATH=<build>/python python3 tests/python/test_package.py (exit 77: skipped)."""
import contextlib
import ctypes
import importlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import types
import unittest

import unimem
import unimem._native as native

SOURCE_DIR = os.environ.get("UNIMEM_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BAD_DEVICE = 1 << 20  # no machine has it: refused with and without a GPU


def call_in_child(code):
    """Runs `code` in a fresh Python that imports this package; returns (returncode, stderr)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    return r.returncode, r.stderr


class Library(unittest.TestCase):
    def test_exports_exactly_its_c_symbols(self):
        nm = shutil.which("nm")
        if nm is None:
            self.skipTest("no nm to read the library's dynamic symbols")
        out = subprocess.run([nm, "-D", "--defined-only", native.library_path()],
                             capture_output=True, text=True, check=True).stdout
        exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
        self.assertEqual(exported, set(native.SIGNATURES))

    def test_every_symbol_loads_typed(self):
        lib = native.library()
        for name, (result, arguments) in native.SIGNATURES.items():
            f = getattr(lib, name)
            self.assertEqual((f.restype, f.argtypes), (result, arguments), name)
            self.assertNotEqual(native.address(name), 0, name)

    def test_version_and_backend(self):
        with open(os.path.join(SOURCE_DIR, "include", "unimem", "core", "version.hpp")) as f:
            headers = re.search(r'#define UNIMEM_VERSION_STRING "([0-9.]+)"', f.read()).group(1)
        self.assertEqual(unimem.__version__, headers)
        self.assertIn(unimem.backend(), ("CUDA", "HIP (AMD)", "HIP (NVIDIA)"))
        self.assertGreaterEqual(unimem.device_count(), 0)

    def test_buffers_or_the_reason(self):
        if unimem._unimem is None:
            with self.assertRaisesRegex(ImportError, "unimem._unimem"):
                unimem.Buffer
        else:
            self.assertIs(unimem.Buffer, unimem._unimem.Buffer)


class Refusals(unittest.TestCase):
    def setUp(self):
        self.lib = native.library()
        native.clear_last_error()

    def assertLastError(self, status, pattern):
        got, message = native.last_error()
        self.assertEqual(got, status, message)
        self.assertRegex(message, pattern)

    def test_zero_bytes_is_null_and_no_error(self):
        self.assertIsNone(self.lib.unimem_torch_alloc(0, 0, None))
        self.assertIsNone(self.lib.unimem_cupy_malloc(None, 0, 0))
        self.assertEqual(native.last_error(), (native.OK, ""))

    def test_a_device_that_does_not_exist(self):
        for device in (-1, BAD_DEVICE):
            self.assertIsNone(self.lib.unimem_torch_alloc(1024, device, None))
            self.assertLastError(native.INVALID_ARGUMENT, rf"no GPU {device}\b")
        with self.assertRaisesRegex(ValueError, "no GPU"):
            native.allocate(1024, BAD_DEVICE, 0)
        with self.assertRaisesRegex(ValueError, "no GPU"):
            unimem.statistics(BAD_DEVICE)
        with self.assertRaisesRegex(ValueError, "no GPU"):
            native.trim(BAD_DEVICE)
        with self.assertRaisesRegex(ValueError, "no GPU"):
            native.reset_peak(BAD_DEVICE)

    def test_frees_of_null_and_foreign_pointers_do_nothing(self):
        foreign = ctypes.create_string_buffer(64)
        pointer = ctypes.addressof(foreign)
        for device in (0, BAD_DEVICE):
            self.lib.unimem_torch_free(None, 64, device, None)
            self.lib.unimem_torch_free(pointer, 64, device, None)
            self.lib.unimem_cupy_free(None, pointer, device)
            self.lib.unimem_naive_managed_free(None, 64, device, None)
        self.assertEqual(foreign.raw, b"\0" * 64)
        self.assertEqual(native.last_error(), (native.OK, ""))

    def test_record_stream_of_null(self):
        self.assertEqual(self.lib.unimem_allocator_record_stream(None, 0, None),
                         native.INVALID_ARGUMENT)
        self.assertLastError(native.INVALID_ARGUMENT, "null pointer")

    def test_statistics_of_another_version_or_null(self):
        self.assertEqual(self.lib.unimem_allocator_statistics(0, None), native.INVALID_ARGUMENT)
        s = native._Stats()
        s.size = ctypes.sizeof(s) - 8
        self.assertEqual(self.lib.unimem_allocator_statistics(0, ctypes.byref(s)),
                         native.INVALID_ARGUMENT)
        self.assertLastError(native.INVALID_ARGUMENT, "other-version")

    def test_options_refused_and_kept(self):
        before = native.options_in_force()
        o = native.Options()._struct()
        o.size -= 8
        self.assertEqual(self.lib.unimem_allocator_configure(ctypes.byref(o)),
                         native.INVALID_ARGUMENT)
        self.assertLastError(native.INVALID_ARGUMENT, "another version")
        o = native.Options()._struct()
        o.flags |= 1 << 7
        self.assertEqual(self.lib.unimem_allocator_configure(ctypes.byref(o)),
                         native.INVALID_ARGUMENT)
        self.assertEqual(self.lib.unimem_allocator_configure(None), native.INVALID_ARGUMENT)
        self.assertEqual(native.options_in_force(), before, "refused options change nothing")

    def test_options_in_python(self):
        for bad in (dict(limit=0), dict(limit=-1), dict(prefetch_min_bytes=-1),
                    dict(release_threshold=1 << 64)):
            with self.assertRaises(ValueError, msg=bad):
                unimem.Options(**bad)
        for bad in (dict(limit=True), dict(limit=1.5), dict(prefetch_min_bytes="1")):
            with self.assertRaises(TypeError, msg=bad):
                unimem.Options(**bad)
        for bad in (dict(gpu_budget=0), dict(gpu_budget=-1), dict(gpu_budget=1 << 64),
                    dict(gpu_budget_margin=-1)):
            with self.assertRaises(ValueError, msg=bad):
                unimem.Options(**bad)
        for bad in (dict(gpu_budget="auto"), dict(gpu_budget=True), dict(gpu_budget=1.5),
                    dict(gpu_budget_margin="free")):
            with self.assertRaises(TypeError, msg=bad):
                unimem.Options(**bad)
        with self.assertRaisesRegex(ValueError, "gpu_budget must be positive"):
            unimem.configure(gpu_budget=0)

    def test_the_gpu_budget_in_the_librarys_options(self):
        unknown = (1 << 64) - 1  # the library's "free" and "default margin"
        cases = [(unimem.Options(), 0, unknown),
                 (unimem.Options(gpu_budget="free"), unknown, unknown),
                 (unimem.Options(gpu_budget="free", gpu_budget_margin=0), unknown, 0),
                 (unimem.Options(gpu_budget=3 << 30, gpu_budget_margin=1 << 28), 3 << 30, 1 << 28)]
        for options, budget, margin in cases:
            o = options._struct()
            self.assertEqual((o.gpu_budget_bytes, o.gpu_budget_margin), (budget, margin), options)

    def test_options_round_trip_before_the_first_pool(self):
        if any(native.statistics(d).pool_made for d in range(unimem.device_count())):
            self.skipTest("a pool exists: the options are fixed")
        before = native.options_in_force()
        try:
            for chosen in (unimem.Options(use_runtime_pool=False, prefetch=False,
                                          prefetch_min_bytes=4096, limit=1 << 40,
                                          release_threshold=1 << 30),
                           unimem.Options(gpu_budget="free", gpu_budget_margin=1 << 29),
                           unimem.Options(gpu_budget=1 << 33, gpu_budget_margin=0)):
                native.configure(chosen)
                self.assertEqual(native.options_in_force(), chosen)
        finally:
            native.configure(before)
        self.assertEqual(native.options_in_force(), before)

    def test_last_error_is_this_threads(self):
        self.assertIsNone(self.lib.unimem_torch_alloc(1, BAD_DEVICE, None))
        seen = []
        t = threading.Thread(target=lambda: seen.append(native.last_error()))
        t.start()
        t.join()
        self.assertEqual(seen, [(native.OK, "")])
        self.assertEqual(native.last_error()[0], native.INVALID_ARGUMENT)

    def test_last_error_truncated_to_the_buffer(self):
        self.assertIsNone(self.lib.unimem_torch_alloc(1, BAD_DEVICE, None))
        small = ctypes.create_string_buffer(b"\xff" * 8)
        self.assertEqual(self.lib.unimem_last_error(small, 8), native.INVALID_ARGUMENT)
        self.assertEqual(len(small.value), 7)
        self.assertEqual(self.lib.unimem_last_error(None, 0), native.INVALID_ARGUMENT)

    def test_cupys_unchecked_caller_stops_the_process_with_the_reason(self):
        for call in ("lib.unimem_cupy_malloc(None, 100, %d)" % BAD_DEVICE,):
            code, err = call_in_child(
                "import unimem._native as n; lib = n.library(); " + call +
                "; print('not stopped')")
            self.assertEqual(code, -signal.SIGABRT, err)
            self.assertIn("could not allocate 100 bytes on GPU %d" % BAD_DEVICE, err)
            self.assertIn("no GPU %d" % BAD_DEVICE, err)
            self.assertIn("docs/python.md", err)


# ---- unimem.torch and unimem.cupy against stand-ins that record their calls ----

def vendor():
    return "hip" if unimem.backend() == "HIP (AMD)" else "cuda"


def fake_torch(initialized=False, gpu=True, vendor_name=None, refuse_swap=False):
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-stand-in"
    name = vendor_name or vendor()
    torch.version = types.SimpleNamespace(cuda="13.0" if name == "cuda" else None,
                                          hip="6.4" if name == "hip" else None)
    calls = []

    class OutOfMemoryError(RuntimeError):
        pass

    class CUDAPluggableAllocator:
        def __init__(self, path, alloc, free):
            calls.append(("CUDAPluggableAllocator", path, alloc, free))
            self.symbols = (alloc, free)

        def allocator(self):
            return ("allocator of", self.symbols)

    def change_current_allocator(a):
        calls.append(("change_current_allocator", a.symbols))
        if refuse_swap:
            raise RuntimeError("Can't swap an already initialized allocator")

    class MemPool:
        def __init__(self, allocator):
            calls.append(("MemPool", allocator))

    @contextlib.contextmanager
    def use_mem_pool(pool, device=None):
        calls.append(("use_mem_pool", device))
        yield

    def device(text):
        kind, _, index = str(text).partition(":")
        return types.SimpleNamespace(type=kind, index=int(index) if index else None)

    torch.OutOfMemoryError = OutOfMemoryError
    torch.device = device
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: gpu, is_initialized=lambda: initialized,
        current_device=lambda: 0, get_allocator_backend=lambda: "native",
        OutOfMemoryError=OutOfMemoryError, MemPool=MemPool, use_mem_pool=use_mem_pool,
        memory=types.SimpleNamespace(CUDAPluggableAllocator=CUDAPluggableAllocator,
                                     change_current_allocator=change_current_allocator))
    torch.calls = calls
    return torch


@contextlib.contextmanager
def stand_in(name, module):
    """sys.modules[name] is `module`, and unimem's helper module for it starts afresh."""
    saved = sys.modules.get(name)
    sys.modules[name] = module
    helper = importlib.reload(importlib.import_module("unimem." + name))
    try:
        yield helper
    finally:
        if saved is None:
            del sys.modules[name]
        else:
            sys.modules[name] = saved
        importlib.reload(helper)


class KeepsOptions(unittest.TestCase):
    """Puts the allocator's options back after each test (the helpers configure them)."""

    def setUp(self):
        self.options = native.options_in_force()

    def tearDown(self):
        native.configure(self.options)


class TorchRoutes(KeepsOptions):
    def test_route_a_installs_the_checked_free_and_the_throwing_alloc(self):
        torch = fake_torch()
        with stand_in("torch", torch) as ut:
            pool = ut.use_managed_pool()
            self.assertEqual(torch.calls, [
                ("CUDAPluggableAllocator", native.library_path(), "unimem_torch_alloc_or_throw",
                 "unimem_torch_free"),
                ("change_current_allocator", ("unimem_torch_alloc_or_throw",
                                              "unimem_torch_free"))])
            self.assertIs(ut.use_managed_pool(), pool, "the same options: the same route")
            self.assertEqual(ut.active_route(), "A")
            with self.assertRaisesRegex(RuntimeError, "other options"):
                ut.use_managed_pool(prefetch=False)
            with self.assertRaisesRegex(RuntimeError, "already serves every allocation"):
                with ut.mem_pool():
                    pass
            self.assertEqual(len(torch.calls), 2, "nothing more reached torch")

    def test_route_a_passes_the_gpu_budget_to_the_library(self):
        if any(native.statistics(d).pool_made for d in range(unimem.device_count())):
            self.skipTest("a pool exists: the options are fixed")
        torch = fake_torch()
        with stand_in("torch", torch) as ut:
            pool = ut.use_managed_pool(gpu_budget="free", gpu_budget_margin=1 << 30)
            in_force = native.options_in_force()
            self.assertEqual((in_force.gpu_budget, in_force.gpu_budget_margin), ("free", 1 << 30))
            self.assertEqual(pool.options, in_force)
            self.assertEqual(len(torch.calls), 2)

    def test_route_a_refused_once_torch_initialised_cuda(self):
        torch = fake_torch(initialized=True)
        with stand_in("torch", torch) as ut:
            with self.assertRaisesRegex(RuntimeError, "before torch initialises CUDA"):
                ut.use_managed_pool()
            self.assertEqual(torch.calls, [])
            self.assertIsNone(ut.active_route())

    def test_route_a_when_torch_refuses_the_swap(self):
        with stand_in("torch", fake_torch(refuse_swap=True)) as ut:
            with self.assertRaisesRegex(RuntimeError, "torch refused") as e:
                ut.use_managed_pool()
            self.assertIn("Can't swap", str(e.exception.__cause__))
            self.assertIsNone(ut.active_route())

    def test_refusals_before_torch_is_asked(self):
        other = "hip" if vendor() == "cuda" else "cuda"
        cases = [(fake_torch(vendor_name=other), RuntimeError, "not a"),
                 (fake_torch(gpu=False), RuntimeError, "sees no GPU")]
        for torch, error, pattern in cases:
            with stand_in("torch", torch) as ut:
                with self.assertRaisesRegex(error, pattern):
                    ut.use_managed_pool()
                with self.assertRaisesRegex(error, pattern):
                    with ut.mem_pool():
                        pass
                self.assertEqual(torch.calls, [])
        torch = fake_torch()
        with stand_in("torch", torch) as ut:
            with self.assertRaisesRegex(ValueError, "gpu_budget"):
                ut.use_managed_pool(gpu_budget=0)
            with self.assertRaisesRegex(RuntimeError, "route A"):
                ut.record_stream(object(), object())
            self.assertEqual(torch.calls, [])

    def test_route_b_uses_the_checked_alloc_in_one_mem_pool(self):
        torch = fake_torch()
        with stand_in("torch", torch) as ut:
            with ut.mem_pool(device=0) as pool:
                pass
            with ut.mem_pool(device="cuda:0") as again:
                pass
            self.assertIs(pool, again, "one MemPool for the process")
            self.assertEqual(torch.calls, [
                ("CUDAPluggableAllocator", native.library_path(), "unimem_torch_alloc",
                 "unimem_torch_free"),
                ("MemPool", ("allocator of", ("unimem_torch_alloc", "unimem_torch_free"))),
                ("use_mem_pool", 0), ("use_mem_pool", 0)])
            self.assertEqual(ut.active_route(), "B")
            with self.assertRaisesRegex(RuntimeError, "mem_pool\\(\\) has run"):
                ut.use_managed_pool()
            # An out-of-memory error unimem did not cause passes through unchanged.
            with self.assertRaises(torch.OutOfMemoryError) as e:
                with ut.mem_pool():
                    raise torch.OutOfMemoryError("torch's own")
            self.assertEqual(str(e.exception), "torch's own")


def fake_cupy(is_hip=None, device=BAD_DEVICE):
    cupy = types.ModuleType("cupy")
    calls = []

    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id=-1):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, mem, offset):
            self.mem, self.offset = mem, offset

    class CFunctionAllocator:
        def __init__(self, param, malloc, free, owner):
            calls.append(("CFunctionAllocator", param, malloc, free, owner))

        def malloc(self, size):
            raise AssertionError("not called here")

    class OutOfMemoryError(MemoryError):
        pass

    stream = types.SimpleNamespace(ptr=0)
    cupy.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(is_hip=(vendor() == "hip") if is_hip is None else is_hip,
                                      getDevice=lambda: device),
        get_current_stream=lambda: stream,
        set_allocator=lambda f: calls.append(("set_allocator", f)),
        memory=types.SimpleNamespace(UnownedMemory=UnownedMemory, MemoryPointer=MemoryPointer,
                                     CFunctionAllocator=CFunctionAllocator,
                                     OutOfMemoryError=OutOfMemoryError))
    cupy.calls = calls
    return cupy


class Cupy(KeepsOptions):
    def test_use_sets_the_python_allocator(self):
        cupy = fake_cupy()
        with stand_in("cupy", cupy) as uc:
            uc.use()
            self.assertEqual(cupy.calls, [("set_allocator", uc.malloc)])

    def test_use_with_c_functions(self):
        cupy = fake_cupy()
        with stand_in("cupy", cupy) as uc:
            uc.use(c_function=True)
            name, param, malloc, free, owner = cupy.calls[0]
            self.assertEqual((name, param, owner), ("CFunctionAllocator", 0, native.library()))
            self.assertEqual((malloc, free), (native.address("unimem_cupy_malloc"),
                                              native.address("unimem_cupy_free")))
            self.assertEqual(cupy.calls[1][0], "set_allocator")

    def test_malloc_refusals_are_exceptions(self):
        with stand_in("cupy", fake_cupy()) as uc:
            empty = uc.malloc(0)
            self.assertEqual((empty.mem.ptr, empty.mem.size, empty.offset), (0, 0, 0))
            with self.assertRaisesRegex(ValueError, "no GPU %d" % BAD_DEVICE):
                uc.malloc(1024)

    def test_a_cupy_of_the_other_vendor(self):
        cupy = fake_cupy(is_hip=vendor() != "hip")
        with stand_in("cupy", cupy) as uc:
            with self.assertRaisesRegex(RuntimeError, "built for"):
                uc.use()
            self.assertEqual(cupy.calls, [])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.testsRun == len(result.skipped) else 0)
