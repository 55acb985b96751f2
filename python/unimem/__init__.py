"""unimem for Python: PyTorch and CuPy allocate from unimem's managed pool, and unimem buffers go
to torch, CuPy and NumPy without a copy (docs/python.md).

    import unimem.torch
    unimem.torch.use_managed_pool()     # route A: every tensor in managed memory (before CUDA)
    with unimem.torch.mem_pool(): ...   # route B: this thread's tensors in the block
    import unimem.cupy
    unimem.cupy.use()                   # every CuPy array

    b = unimem.Buffer(1 << 20, "managed")   # a unimem buffer: __dlpack__, the array interfaces

unimem.torch and unimem.cupy import torch and CuPy when called; this module imports neither.
"""
from ._native import (AllocatorError, Options, OutOfMemoryError, Statistics, backend,
                      device_count, library_path, options_in_force, version)
from ._native import configure as _configure
from ._native import statistics as _statistics

__version__ = version()

_BUFFERS = ("Buffer", "Imported", "Labelled", "scale", "scale_on_host", "live_exports",
            "pool_allocations", "kDLCPU", "gpu_device_type", "managed_device_type",
            "pinned_device_type")
__all__ = ["AllocatorError", "configure", "Options", "OutOfMemoryError", "Statistics", "backend",
           "device_count", "library_path", "options_in_force", "statistics", "version",
           *_BUFFERS]

try:
    from . import _unimem
except ImportError as _error:  # built without Python's headers or pybind11 (the build said so)
    _unimem = None
    _buffers_missing = _error
else:
    _buffers_missing = None
    for _name in _BUFFERS:
        globals()[_name] = getattr(_unimem, _name)


def __getattr__(name):
    if name in _BUFFERS and _buffers_missing is not None:
        raise ImportError(f"unimem.{name} needs the buffer module unimem._unimem, which this "
                          f"install lacks ({_buffers_missing}): it is built where Python's "
                          "headers and pybind11 are found") from _buffers_missing
    raise AttributeError(f"module 'unimem' has no attribute {name!r}")


def configure(**options):
    """Sets the options of the pools (unimem.Options' fields as keywords) before their first
    allocation; a ValueError after it, for other options. use_managed_pool() and cupy.use() take
    the same keywords; mem_pool() and CuPy's CFunctionAllocator take them from here."""
    _configure(Options(**options))


def statistics(device: int = 0) -> Statistics:
    """unimem's figures for GPU `device`: the pool's bytes in use, their peak, bytes held, the
    GPU's free memory (see unimem.Statistics)."""
    return _statistics(device)
