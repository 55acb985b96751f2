"""PyTorch allocates from unimem's managed pool (docs/python.md).

Route A, every allocation of the process, training included (call it before torch touches CUDA):

    import unimem.torch
    unimem.torch.use_managed_pool()        # then build the model as usual
    print(unimem.torch.statistics())       # what torch.cuda.memory_allocated() cannot say here

Route B, the allocations of one thread inside a `with` block, under torch's caching allocator
(its statistics and OOM handling stay; at any time):

    with unimem.torch.mem_pool():
        weights = load_weights()           # in managed memory, larger than the GPU if need be

Both serve GPU d from one unimem::managed_pool per GPU, in the order of torch's streams.
"""
import contextlib
import threading
from typing import Optional, Union

from . import _native
from ._native import Options, Statistics

__all__ = ["use_managed_pool", "mem_pool", "statistics", "memory_stats", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "reset_peak_memory_stats", "empty_cache",
           "record_stream", "active_route", "Options", "Statistics"]

_lock = threading.Lock()
_route_a = None      # the ManagedPool of use_managed_pool()
_route_b = None      # torch's CUDAPluggableAllocator of mem_pool()
_default_pool = None  # the torch.cuda.MemPool mem_pool() uses when given none


class ManagedPool:
    """What use_managed_pool() installed: its options and torch's allocator object (kept alive
    here: torch calls into it until the process ends)."""

    def __init__(self, options: Options, allocator):
        self.options = options
        self.allocator = allocator

    def statistics(self, device=None) -> Statistics:
        """See unimem.torch.statistics()."""
        return statistics(device)

    def __repr__(self):
        return f"unimem.torch.ManagedPool({self.options})"


def _torch():
    return _native.framework("torch")


def _check_build(torch):
    """Refuses a torch of the other vendor, or two HIP runtimes in the process."""
    backend = _native.backend()
    if backend == "HIP (AMD)":
        if getattr(torch.version, "hip", None) is None:
            raise RuntimeError(f"unimem was built for AMD GPUs ({backend}); this torch "
                               f"({torch.__version__}) is not a ROCm build")
        _native.check_one_hip_runtime(f"this torch (torch.version.hip = {torch.version.hip})")
    elif getattr(torch.version, "cuda", None) is None:
        raise RuntimeError(f"unimem was built for NVIDIA GPUs ({backend}); this torch "
                           f"({torch.__version__}) is not a CUDA build")
    if not torch.cuda.is_available():
        raise RuntimeError("unimem.torch: torch sees no GPU (torch.cuda.is_available() is False)")


def _options(use_runtime_pool, prefetch, prefetch_min_bytes, limit, release_threshold,
             gpu_budget, gpu_budget_margin) -> Options:
    return Options(use_runtime_pool=use_runtime_pool, prefetch=prefetch,
                   prefetch_min_bytes=prefetch_min_bytes, limit=limit,
                   release_threshold=release_threshold, gpu_budget=gpu_budget,
                   gpu_budget_margin=gpu_budget_margin)


def use_managed_pool(*, use_runtime_pool: bool = True, prefetch: bool = True,
                     prefetch_min_bytes: int = 2 << 20, limit: Optional[int] = None,
                     release_threshold: Optional[int] = None,
                     gpu_budget: Optional[Union[int, str]] = None,
                     gpu_budget_margin: Optional[int] = None) -> ManagedPool:
    """Route A: every CUDA (ROCm) tensor of the process, on every GPU and thread, from unimem's
    managed pool (torch.cuda.memory.change_current_allocator). The options are those of
    unimem.Options.

    Call it before torch initialises CUDA (the first CUDA tensor, torch.cuda.current_device(),
    ...): torch cannot change its allocator after that, and this raises RuntimeError saying so.
    Calling it again with the same options returns the same object.

    What torch cannot do then (docs/python.md, "Route A"): torch.cuda.memory_allocated(),
    memory_stats(), memory snapshots and torch.cuda.empty_cache() report nothing or raise (use
    unimem.torch.statistics(), memory_allocated(), empty_cache()); Tensor.record_stream() does
    nothing (use unimem.torch.record_stream()); CUDA IPC of tensors is refused; an allocation that
    fails raises a RuntimeError (or MemoryError) with unimem's reason at the operation that
    allocated, not torch.OutOfMemoryError, which only torch's own allocators can raise (route B
    raises torch.OutOfMemoryError).
    """
    global _route_a
    options = _options(use_runtime_pool, prefetch, prefetch_min_bytes, limit,
                       release_threshold, gpu_budget, gpu_budget_margin)
    torch = _torch()
    _check_build(torch)
    with _lock:
        if _route_a is not None:
            if _route_a.options == options:
                return _route_a
            raise RuntimeError("unimem.torch.use_managed_pool: already in use with other "
                               f"options ({_route_a.options}); torch cannot change its "
                               "allocator twice")
        if _default_pool is not None:
            raise RuntimeError("unimem.torch.use_managed_pool: mem_pool() has run in this "
                               "process, so torch's caching allocator is in use and cannot be "
                               "replaced; use one route per process")
        if torch.cuda.is_initialized():
            raise RuntimeError(
                "unimem.torch.use_managed_pool() must run before torch initialises CUDA (the "
                "first CUDA tensor, torch.cuda.current_device(), ...): torch cannot change its "
                "allocator after that. Call it at the start of the program, or use "
                "unimem.torch.mem_pool(), which works at any time")
        _native.configure(options)
        allocator = torch.cuda.memory.CUDAPluggableAllocator(
            _native.library_path(), "unimem_torch_alloc_or_throw", "unimem_torch_free")
        try:
            torch.cuda.memory.change_current_allocator(allocator)
        except RuntimeError as e:
            raise RuntimeError("unimem.torch.use_managed_pool: torch refused to change its "
                               f"allocator ({e}); call it before torch initialises CUDA, or use "
                               "unimem.torch.mem_pool()") from e
        _route_a = ManagedPool(options, allocator)
        return _route_a


def _pool_for_route_b(torch):
    global _route_b, _default_pool
    with _lock:
        if _route_a is not None:
            raise RuntimeError("unimem.torch.mem_pool: use_managed_pool() already serves every "
                               "allocation of this process; mem_pool() is for torch's own "
                               "caching allocator")
        if not hasattr(torch.cuda, "MemPool") or not hasattr(torch.cuda, "use_mem_pool"):
            raise RuntimeError(f"unimem.torch.mem_pool needs torch.cuda.MemPool and "
                               f"torch.cuda.use_mem_pool, which torch {torch.__version__} lacks "
                               "(use_managed_pool() works with it)")
        backend = getattr(torch.cuda, "get_allocator_backend", lambda: "native")()
        if backend != "native":
            raise RuntimeError(f"unimem.torch.mem_pool needs torch's caching allocator "
                               f"(\"native\"), not \"{backend}\" (PYTORCH_CUDA_ALLOC_CONF)")
        if _route_b is None:
            _route_b = torch.cuda.memory.CUDAPluggableAllocator(
                _native.library_path(), "unimem_torch_alloc", "unimem_torch_free")
        if _default_pool is None:
            _default_pool = torch.cuda.MemPool(_route_b.allocator())
        return _default_pool


def memory_pool():
    """The torch.cuda.MemPool over unimem's managed pool that mem_pool() routes to (one for the
    process: its cached blocks serve every mem_pool() block)."""
    torch = _torch()
    _check_build(torch)
    return _pool_for_route_b(torch)


@contextlib.contextmanager
def mem_pool(device=None):
    """Route B: inside the block, this thread's CUDA allocations on `device` (default: the
    current one) come from torch's caching allocator over unimem's managed pool
    (torch.cuda.use_mem_pool with a torch.cuda.MemPool of unimem's allocator). torch keeps its
    statistics, torch.cuda.empty_cache() and record_stream; other threads (autograd's backward
    pass among them) allocate as before. An allocation that fails raises torch.OutOfMemoryError
    with unimem's reason appended. Yields the MemPool."""
    torch = _torch()
    _check_build(torch)
    pool = _pool_for_route_b(torch)
    index = _device_index(torch, device)
    out_of_memory = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    _native.clear_last_error()
    with torch.cuda.use_mem_pool(pool, device=index):
        try:
            yield pool
        except out_of_memory as e:
            status, reason = _native.last_error()
            if status != _native.OUT_OF_MEMORY:
                raise
            _native.clear_last_error()
            raise out_of_memory(f"{e}\nunimem: {reason}") from e


def active_route() -> Optional[str]:
    """"A" after use_managed_pool(), "B" after mem_pool() has run, else None."""
    return "A" if _route_a is not None else "B" if _default_pool is not None else None


def _device_index(torch, device) -> int:
    if device is None:
        return torch.cuda.current_device()
    if isinstance(device, int):
        return device
    d = torch.device(device)
    if d.type != "cuda":
        raise ValueError(f"unimem.torch: {device!r} is not a CUDA device")
    return torch.cuda.current_device() if d.index is None else d.index


def statistics(device=None) -> Statistics:
    """unimem's figures for GPU `device` (default: the current one), both routes: bytes in use,
    their peak, held from the runtime, the GPU's free memory (unimem.Statistics)."""
    return _native.statistics(_device_index(_torch(), device))


def memory_allocated(device=None) -> int:
    """Bytes in use in unimem's pool (torch.cuda.memory_allocated(), for route A)."""
    return statistics(device).bytes_in_use


def max_memory_allocated(device=None) -> int:
    """Their peak since the pool was made or reset_peak_memory_stats()."""
    return statistics(device).peak_bytes_in_use


def memory_reserved(device=None) -> int:
    """Bytes the pool holds from the runtime, in use and cached (torch.cuda.memory_reserved())."""
    return statistics(device).bytes_held


def reset_peak_memory_stats(device=None):
    """Starts the peak over from the bytes in use now."""
    _native.reset_peak(_device_index(_torch(), device))


def empty_cache(device=None):
    """Returns the pool's cached memory to the runtime (torch.cuda.empty_cache() does not reach
    a pluggable allocator; under route B, call torch's first: its cache holds the pool's
    blocks)."""
    _native.trim(_device_index(_torch(), device), 0)


def memory_stats(device=None) -> dict:
    """unimem's figures under the keys of torch.cuda.memory_stats() that they answer, for code
    that reads those (route A, where torch's own raise)."""
    s = statistics(device)
    return {"allocated_bytes.all.current": s.bytes_in_use,
            "allocated_bytes.all.peak": s.peak_bytes_in_use,
            "reserved_bytes.all.current": s.bytes_held,
            "active.all.current": s.allocations,
            "allocation.all.allocated": s.allocations_total,
            "num_alloc_retries": 0,
            "num_ooms": s.failures}


def record_stream(tensor, stream):
    """Route A's Tensor.record_stream: the tensor's memory is reused only after the work queued
    on `stream` (a torch.cuda.Stream) before the tensor is freed. torch's own record_stream does
    nothing under route A; under route B it works and this refuses."""
    if _route_a is None:
        raise RuntimeError("unimem.torch.record_stream is for route A (use_managed_pool()); "
                           "elsewhere Tensor.record_stream() does it")
    storage = tensor.untyped_storage()
    _native.record_stream(storage.data_ptr(), tensor.device.index, stream.cuda_stream)
