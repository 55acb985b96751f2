"""unimem_example with NumPy over host memory: needs no GPU (CI runs it on every toolchain that
builds the module). A NumPy array goes into unimem (dlpack::tensor) and out again (to_dlpack),
zero-copy, and every tensor's deleter runs exactly once.

Run: PYTHONPATH=<build>/examples/python python3 tests/python/test_host.py (exit 77: skipped)."""
import gc
import sys
import unittest

try:
    import numpy as np
except ImportError:
    np = None

import unimem_example as ux


def numpy_speaks_dlpack():
    return np is not None and hasattr(np, "from_dlpack")


class HostRoundTrip(unittest.TestCase):
    def setUp(self):
        if not numpy_speaks_dlpack():
            self.skipTest("NumPy with from_dlpack (>= 1.22) is not installed for " + sys.executable)
        gc.collect()
        self.assertEqual(ux.live_exports(), 0)

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

    def test_refusals_are_python_exceptions_and_delete(self):
        a = np.arange(6, dtype=np.float64)  # float64 into float32
        refs = sys.getrefcount(a)
        with self.assertRaisesRegex(ValueError, "element type float32 expected, the tensor holds "
                                                "float64"):
            ux.Imported(a)
        gc.collect()
        self.assertEqual(sys.getrefcount(a), refs, "the refused tensor was deleted")
        s = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # strided
        imp = ux.Imported(s)
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            ux.scale_on_host(imp, 2.0)
        with self.assertRaisesRegex(ValueError, "a CPU tensor"):
            ux.scale(np.ones(3, dtype=np.float32), 2.0)
        with self.assertRaises(ValueError):
            ux.Buffer(4, "nowhere")
        del imp
        gc.collect()
        self.assertEqual(ux.live_exports(), 0)

    def test_read_only_array_is_refused_for_writing(self):
        if tuple(int(x) for x in np.__version__.split(".")[:2]) < (2, 1):
            self.skipTest("NumPy %s exports no read-only flag (DLPack 1.0 from NumPy 2.1)"
                          % np.__version__)
        a = np.ones(4, dtype=np.float32)
        a.flags.writeable = False
        with self.assertRaisesRegex(ValueError, "read-only"):
            ux.Imported(a)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.testsRun == len(result.skipped) else 0)
