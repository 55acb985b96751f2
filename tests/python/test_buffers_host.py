"""unimem's buffers (unimem._unimem) with NumPy over host memory: needs no GPU (CI runs it on
every toolchain that builds the module). A NumPy array goes into unimem (dlpack::tensor) and out
again (to_dlpack), zero-copy and with its strides, and every tensor's deleter runs exactly once.
Refusals are BufferError, as the DLPack Python specification asks; __dlpack__ honours copy,
dl_device and stream (None only for a CPU tensor); producers whose label is stream-less are given
stream=None; and hostile tensors made with ctypes are refused without a crash.

Run: PYTHONPATH=<build>/python python3 tests/python/test_buffers_host.py (exit 77: skipped)."""
import ctypes
import gc
import sys
import unittest

try:
    import numpy as np
except ImportError:
    np = None

import unimem._unimem as ux


def numpy_speaks_dlpack():
    return np is not None and hasattr(np, "from_dlpack")


class Capsule:
    """A producer with __dlpack__ that hands out one capsule (NumPy 1.x's from_dlpack takes no
    capsule itself)."""

    def __init__(self, capsule, device=(1, 0)):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


class Recorder:
    """A producer that says `device` in __dlpack_device__ and records the stream it is given;
    its tensor is a NumPy array's (kDLCPU)."""

    def __init__(self, device):
        self.device, self.array, self.streams = device, np.arange(4, dtype=np.float32), []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.streams.append(stream)
        return self.array.__dlpack__()


# ---- a hand-made DLManagedTensorVersioned (ctypes), as a careless or hostile producer makes ----

class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


VERSIONED_NAME = b"dltensor_versioned"  # the capsule keeps a pointer to it
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class HandMade:
    """A float32 tensor over 16 floats of ctypes memory, every field as given; deleted counts the
    calls of its deleter."""

    def __init__(self, shape, ndim=None, version=(1, 1), data=True, device=(1, 0),
                 byte_offset=0):
        self.memory = (ctypes.c_float * 16)(*range(16))
        self.shape = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        self.deleted = 0

        def on_delete(_):
            self.deleted += 1

        self.deleter = DELETER(on_delete)
        t = DLTensor(ctypes.cast(self.memory, ctypes.c_void_p) if data else None, device[0],
                     device[1], len(shape) if ndim is None else ndim, 2, 32, 1, self.shape,
                     None, byte_offset)
        self.managed = DLManagedTensorVersioned(version[0], version[1], None, self.deleter, 0, t)

    def capsule(self):
        return ctypes.pythonapi.PyCapsule_New(ctypes.addressof(self.managed), VERSIONED_NAME,
                                              None)


class HostRoundTrip(unittest.TestCase):
    def setUp(self):
        if not numpy_speaks_dlpack():
            self.skipTest("NumPy with from_dlpack (>= 1.22) is not installed for " + sys.executable)
        gc.collect()
        self.assertEqual(ux.live_exports(), 0)

    def tearDown(self):
        gc.collect()
        self.assertEqual(ux.live_exports(), 0, "every exported tensor was deleted")

    def test_numpy_array_into_unimem_and_back_shares_memory(self):
        a = np.arange(12, dtype=np.float32)
        refs = sys.getrefcount(a)
        imp = ux.Imported(a)  # NumPy's tensor, owned by a unimem::dlpack::tensor
        self.assertEqual(imp.ptr, a.ctypes.data)
        self.assertEqual(imp.shape, (12,))
        self.assertEqual(imp.__dlpack_device__(), (ux.kDLCPU, 0))
        b = np.from_dlpack(imp)  # unimem's export of it, to NumPy
        self.assertEqual(b.ctypes.data, a.ctypes.data, "zero-copy both ways")
        self.assertEqual(ux.live_exports(), 1)
        ux.scale_on_host(imp, 3.0)  # unimem writes: NumPy sees it through both arrays
        np.testing.assert_array_equal(a, 3.0 * np.arange(12, dtype=np.float32))
        np.testing.assert_array_equal(b, a)
        if b.flags.writeable:  # NumPy before 2.x marks what from_dlpack gives read-only
            b[0] = 42.0
        else:
            a[0] = 42.0
        self.assertEqual(b[0], 42.0)
        del imp  # b still holds unimem's tensor, which holds NumPy's
        np.testing.assert_array_equal(b, a)
        self.assertEqual(ux.live_exports(), 1)
        del b
        gc.collect()
        self.assertEqual(ux.live_exports(), 0, "unimem's deleter ran")
        self.assertEqual(sys.getrefcount(a), refs, "NumPy's deleter ran exactly once")

    def test_strided_imports_go_out_with_their_strides(self):
        base = np.arange(24, dtype=np.float32).reshape(4, 6)
        for s in (base[:, ::2], base.T, base[::-1, 1:5], base[1:3, ::-2]):
            imp = ux.Imported(s)
            self.assertEqual(imp.strides, tuple(x // 4 for x in s.strides))
            b = np.from_dlpack(imp)  # the same elements, the same memory, the same strides
            self.assertEqual(b.ctypes.data, s.ctypes.data)
            self.assertEqual(b.shape, s.shape)
            self.assertEqual(b.strides, s.strides)
            np.testing.assert_array_equal(b, s)
            del b, imp

    def test_copy_true_copies_and_copy_false_shares(self):
        a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # strided: the copy is compact
        imp = ux.Imported(a)

        def take(capsule):  # NumPy 1.x reads legacy capsules only: unimem reads both
            return np.from_dlpack(ux.Imported(capsule))

        for max_version in (None, (1, 0)):
            c = take(imp.__dlpack__(copy=True, max_version=max_version))
            self.assertNotEqual(c.ctypes.data, a.ctypes.data, "copy=True gives a copy")
            self.assertEqual(c.strides, (8, 4))
            np.testing.assert_array_equal(c, a)
            same = take(imp.__dlpack__(copy=False, max_version=max_version))
            self.assertEqual(same.ctypes.data, a.ctypes.data)
            del c, same
        before = np.from_dlpack(Capsule(imp.__dlpack__(copy=True)))
        shared = np.from_dlpack(Capsule(imp.__dlpack__()))
        a[0, 0] = -1.0  # the copy made before does not see it, the shared export does
        self.assertEqual(before[0, 0], 0.0)
        self.assertEqual(shared[0, 0], -1.0)
        self.assertEqual(np.from_dlpack(Capsule(imp.__dlpack__(copy=True)))[0, 0], -1.0)

    def test_dl_device_and_stream(self):
        imp = ux.Imported(np.ones(4, dtype=np.float32))
        imp.__dlpack__(dl_device=(ux.kDLCPU, 0))  # its own label
        with self.assertRaisesRegex(BufferError, "host memory cannot be exported as"):
            imp.__dlpack__(dl_device=(ux.gpu_device_type, 0))
        for stream in (1, 2, -1, 0x1234):  # a CPU tensor takes stream=None only
            with self.assertRaisesRegex(BufferError, "stream=None only"):
                imp.__dlpack__(stream=stream)
        imp.__dlpack__(stream=None)
        # Pinned memory's label (a ctypes producer; imported on no stream, so nothing to wait
        # for here): the CPU's label on request, and a copy only under it.
        h = HandMade([4], device=(ux.pinned_device_type, 0))
        pinned = ux.Imported(h.capsule(), stream=-1)
        self.assertEqual(pinned.__dlpack_device__(), (ux.pinned_device_type, 0))
        with self.assertRaisesRegex(BufferError, "copy=True copies into host memory"):
            pinned.__dlpack__(copy=True)
        c = np.from_dlpack(Capsule(pinned.__dlpack__(copy=True, dl_device=(ux.kDLCPU, 0))))
        self.assertNotEqual(c.ctypes.data, pinned.ptr)
        shared = np.from_dlpack(Capsule(pinned.__dlpack__(dl_device=(ux.kDLCPU, 0))))
        self.assertEqual(shared.ctypes.data, pinned.ptr)
        np.testing.assert_array_equal(c, shared)
        del c, shared, pinned
        gc.collect()
        self.assertEqual(h.deleted, 1)

    def test_stream_less_producers_are_given_no_stream(self):
        # The DLPack Python specification: kDLCPU, kDLCUDAHost, kDLCUDAManaged, kDLROCMHost take
        # stream=None only; kDLCUDA and kDLROCM are given the consumer's stream.
        for device in ((1, 0), (3, 0), (13, 0), (11, 0)):
            r = Recorder(device)
            ux.Imported(r)
            self.assertEqual(r.streams, [None], device)
        for device in ((2, 0), (10, 0)):
            r = Recorder(device)
            ux.Imported(r)
            self.assertEqual(len(r.streams), 1)
            self.assertIsInstance(r.streams[0], int, device)

    def test_unconsumed_export_is_deleted_with_its_capsule(self):
        a = np.ones(4, dtype=np.float32)
        refs = sys.getrefcount(a)
        imp = ux.Imported(a)
        capsule = imp.__dlpack__()  # never consumed
        self.assertEqual(ux.live_exports(), 1)
        del capsule
        self.assertEqual(ux.live_exports(), 0)
        del imp
        gc.collect()
        self.assertEqual(sys.getrefcount(a), refs)

    def test_a_capsule_is_imported_once(self):
        a = np.ones(4, dtype=np.float32)
        capsule = a.__dlpack__()
        ux.scale_on_host(capsule, 2.0)  # consumes it
        np.testing.assert_array_equal(a, 2.0)
        with self.assertRaises(TypeError):  # a used capsule is refused, nothing deleted twice
            ux.scale_on_host(capsule, 2.0)
        np.testing.assert_array_equal(a, 2.0)

    def test_refusals_are_buffer_errors_and_delete(self):
        a = np.arange(6, dtype=np.float64)  # float64 into float32
        refs = sys.getrefcount(a)
        with self.assertRaisesRegex(BufferError, "element type float32 expected, the tensor "
                                                 "holds float64"):
            ux.Imported(a)
        gc.collect()
        self.assertEqual(sys.getrefcount(a), refs, "the refused tensor was deleted")
        s = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # strided
        imp = ux.Imported(s)
        with self.assertRaisesRegex(BufferError, "not contiguous"):
            ux.scale_on_host(imp, 2.0)
        with self.assertRaisesRegex(ValueError, "a CPU tensor"):
            ux.scale(np.ones(3, dtype=np.float32), 2.0)
        with self.assertRaises(ValueError):
            ux.Buffer(4, "nowhere")
        del imp

    def test_read_only_array_is_refused_for_writing(self):
        if tuple(int(x) for x in np.__version__.split(".")[:2]) < (2, 1):
            self.skipTest("NumPy %s exports no read-only flag (DLPack 1.0 from NumPy 2.1)"
                          % np.__version__)
        a = np.ones(4, dtype=np.float32)
        a.flags.writeable = False
        with self.assertRaisesRegex(BufferError, "read-only"):
            ux.Imported(a)

    def test_hostile_tensors_are_refused_and_deleted(self):
        # issue 45's cases, made with ctypes: each a BufferError, each deleter run once.
        cases = {
            "DLPack version 2.0": HandMade([4], version=(2, 0)),
            "1073741824 dimensions": HandMade([1], ndim=1 << 30),
            "more than PTRDIFF_MAX bytes": HandMade([1 << 62]),
            "byte_offset 9223372036854775808": HandMade([1], byte_offset=1 << 63),
            "data is null but the tensor has 16 elements": HandMade([16], data=False),
            "this process has": HandMade([4], device=(ux.gpu_device_type, 999)),
        }
        for message, h in cases.items():
            with self.assertRaisesRegex(BufferError, message):
                ux.Imported(h.capsule())
            self.assertEqual(h.deleted, 1, message)
        fine = HandMade([2, 8])  # and the same producer's valid tensor goes through
        imp = ux.Imported(fine.capsule())
        self.assertEqual(imp.shape, (2, 8))
        self.assertEqual(np.from_dlpack(imp)[1, 7], 15.0)
        del imp
        gc.collect()
        self.assertEqual(fine.deleted, 1)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.testsRun == len(result.skipped) else 0)
