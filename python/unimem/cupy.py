"""CuPy allocates from unimem's managed pool (docs/python.md).

    import unimem.cupy
    unimem.cupy.use()                      # every later CuPy array, on every GPU
    x = cupy.arange(n)                     # managed memory, in the order of CuPy's current stream

The pool is the one torch's allocator uses (one per GPU in the process).
"""
import threading
import weakref

from . import _native
from ._native import Options

__all__ = ["use", "malloc", "statistics"]

_lock = threading.Lock()
_keep = []  # what CuPy's allocator calls into, alive until the process ends


def _cupy():
    return _native.framework("cupy")


def _check_build(cupy):
    backend = _native.backend()
    is_hip = bool(getattr(cupy.cuda.runtime, "is_hip", False))
    if is_hip != backend.startswith("HIP (AMD)"):
        raise RuntimeError(f"unimem was built for {backend}; this CuPy is for "
                           f"{'ROCm' if is_hip else 'CUDA'}")
    if is_hip:
        _native.check_one_hip_runtime("this CuPy")


class _Allocation:
    """Owns one allocation for CuPy's UnownedMemory: freed when CuPy drops the memory, in the
    order of the stream it was allocated on (the current one, where that stream is gone, as
    CuPy's own asynchronous allocator does)."""
    __slots__ = ("pointer", "size", "device", "stream", "stream_object", "__weakref__")

    def __init__(self, pointer, size, device, stream, stream_object):
        self.pointer, self.size, self.device, self.stream = pointer, size, device, stream
        self.stream_object = stream_object  # a weak reference

    def __del__(self):
        stream = self.stream
        if self.stream_object() is None:
            try:
                import cupy
                stream = cupy.cuda.get_current_stream().ptr
            except Exception:  # interpreter shutdown: the default stream
                stream = 0
        _native.deallocate(self.pointer, self.size, self.device, stream)


def malloc(size: int):
    """CuPy's allocator function: `size` bytes on the current GPU in the order of CuPy's current
    stream, as a cupy.cuda.MemoryPointer; raises cupy.cuda.memory.OutOfMemoryError (its cause:
    unimem's reason) when the pool cannot serve it."""
    cupy = _cupy()
    memory = cupy.cuda.memory
    device = cupy.cuda.runtime.getDevice()
    if size == 0:
        return memory.MemoryPointer(memory.UnownedMemory(0, 0, None, device), 0)
    stream_object = cupy.cuda.get_current_stream()
    try:
        pointer = _native.allocate(size, device, stream_object.ptr)
    except _native.OutOfMemoryError as e:
        total = _native.statistics(device).bytes_in_use
        raise memory.OutOfMemoryError(size, total, _native.options_in_force().limit or 0) from e
    owner = _Allocation(pointer, size, device, stream_object.ptr, weakref.ref(stream_object))
    return memory.MemoryPointer(memory.UnownedMemory(pointer, size, owner, device), 0)


def use(*, c_function: bool = False, use_runtime_pool: bool = True, prefetch: bool = True,
        prefetch_min_bytes: int = 2 << 20, limit=None, release_threshold=None,
        gpu_budget=None, gpu_budget_margin=None):
    """Makes CuPy allocate from unimem's pool (cupy.cuda.set_allocator), with the options of
    unimem.Options, which the pools take at their first allocation (a ValueError after that,
    for other options).

    c_function=False: malloc() above, in the order of CuPy's current stream, raising CuPy's
    OutOfMemoryError on failure. c_function=True: CuPy's CFunctionAllocator over the library's C
    symbols: no Python per allocation, but in the order of the default stream only (CuPy passes
    no stream), and, as CuPy uses the pointer unchecked, a failed allocation stops the process.
    """
    options = Options(use_runtime_pool=use_runtime_pool, prefetch=prefetch,
                      prefetch_min_bytes=prefetch_min_bytes, limit=limit,
                      release_threshold=release_threshold, gpu_budget=gpu_budget,
                      gpu_budget_margin=gpu_budget_margin)
    cupy = _cupy()
    _check_build(cupy)
    with _lock:
        _native.configure(options)
        if c_function:
            allocator = cupy.cuda.memory.CFunctionAllocator(
                0, _native.address("unimem_cupy_malloc"), _native.address("unimem_cupy_free"),
                _native.library())
            _keep.append(allocator)
            cupy.cuda.set_allocator(allocator.malloc)
        else:
            cupy.cuda.set_allocator(malloc)


def statistics(device=None) -> _native.Statistics:
    """unimem's figures for GPU `device` (default: CuPy's current one)."""
    if device is None:
        device = _cupy().cuda.runtime.getDevice()
    return _native.statistics(int(device))
