"""The allocator library (libunimem_allocator.so, python/src/allocator.cpp) through ctypes: its C
symbols with their signatures, its options, statistics and errors. One library serves torch,
CuPy and Python alike, so one pool per GPU serves them all."""
import ctypes
import dataclasses
import os
import threading
from typing import Optional, Union

LIBRARY_NAME = "libunimem_allocator.so"

# unimem_last_error()'s statuses (allocator.cpp).
OK, OUT_OF_MEMORY, INVALID_ARGUMENT, RUNTIME_ERROR = 0, 1, 2, 3

_UNKNOWN = (1 << 64) - 1  # a figure the library cannot know (UINT64_MAX)
_FLAG_RUNTIME_POOL, _FLAG_PREFETCH = 1, 2

stream_t = ctypes.c_void_p  # cudaStream_t / hipStream_t


class _Options(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("prefetch_min_bytes", ctypes.c_uint64), ("limit_bytes", ctypes.c_uint64),
                ("release_threshold", ctypes.c_uint64), ("gpu_budget_bytes", ctypes.c_uint64),
                ("gpu_budget_margin", ctypes.c_uint64)]


class _Stats(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("pool_made", ctypes.c_int32),
                ("bytes_in_use", ctypes.c_uint64), ("peak_bytes_in_use", ctypes.c_uint64),
                ("bytes_held", ctypes.c_uint64), ("allocations", ctypes.c_uint64),
                ("allocations_total", ctypes.c_uint64), ("failures", ctypes.c_uint64),
                ("prefetches", ctypes.c_uint64), ("limit_bytes", ctypes.c_uint64),
                ("device_free_bytes", ctypes.c_uint64), ("device_total_bytes", ctypes.c_uint64),
                ("device_free_at_pool_bytes", ctypes.c_uint64),
                ("placed_on_gpu_bytes", ctypes.c_uint64),
                ("placed_on_host_bytes", ctypes.c_uint64),
                ("host_bytes_in_use", ctypes.c_uint64), ("gpu_budget_bytes", ctypes.c_uint64),
                ("uses_runtime_pool", ctypes.c_int32), ("reserved", ctypes.c_int32)]


# Every exported symbol, with its C signature: (result, arguments). tests/python/test_package.py
# checks that the library exports exactly these. THROWING's symbols let a C++ exception out on
# failure (their caller is torch's C++): never call them through ctypes.
SIGNATURES = {
    "unimem_allocator_configure": (ctypes.c_int, [ctypes.POINTER(_Options)]),
    "unimem_allocator_options_in_force": (ctypes.c_int, [ctypes.POINTER(_Options)]),
    "unimem_torch_alloc": (ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_int, stream_t]),
    "unimem_torch_alloc_or_throw": (ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_int, stream_t]),
    "unimem_torch_free": (None, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, stream_t]),
    "unimem_allocator_record_stream": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, stream_t]),
    "unimem_cupy_malloc": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]),
    "unimem_cupy_free": (None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]),
    "unimem_allocator_statistics": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(_Stats)]),
    "unimem_allocator_reset_peak": (ctypes.c_int, [ctypes.c_int]),
    "unimem_allocator_trim": (ctypes.c_int, [ctypes.c_int, ctypes.c_uint64]),
    "unimem_last_error": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]),
    "unimem_clear_last_error": (None, []),
    "unimem_allocator_backend": (ctypes.c_char_p, []),
    "unimem_allocator_version": (ctypes.c_char_p, []),
    "unimem_allocator_device_count": (ctypes.c_int, []),
    "unimem_naive_managed_alloc": (ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_int, stream_t]),
    "unimem_naive_managed_free": (None, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                         stream_t]),
}


THROWING = frozenset({"unimem_torch_alloc_or_throw", "unimem_naive_managed_alloc"})


class AllocatorError(RuntimeError):
    """The allocator refused: `status` is one of OUT_OF_MEMORY, INVALID_ARGUMENT, RUNTIME_ERROR."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class OutOfMemoryError(AllocatorError, MemoryError):
    """The pool could not serve an allocation: the runtime ran out of memory, or the limit."""


def library_path() -> str:
    """The allocator library's file: what torch's CUDAPluggableAllocator loads."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY_NAME)


_lib = None
_lock = threading.Lock()


def library() -> ctypes.CDLL:
    """The allocator library, loaded once, its symbols typed."""
    global _lib
    with _lock:
        if _lib is None:
            path = library_path()
            if not os.path.exists(path):
                raise ImportError(f"unimem: the allocator library is missing ({path}): the "
                                  "package was not built (pip install ./python, or the CMake "
                                  "build's <build>/python)")
            lib = ctypes.CDLL(path)
            for name, (result, arguments) in SIGNATURES.items():
                f = getattr(lib, name)
                f.restype, f.argtypes = result, arguments
            _lib = lib
        return _lib


def address(symbol: str) -> int:
    """The address of one of the library's functions (CuPy's CFunctionAllocator takes them)."""
    return ctypes.cast(getattr(library(), symbol), ctypes.c_void_p).value


def last_error():
    """This thread's last error: (status, message); (OK, "") when none."""
    buffer = ctypes.create_string_buffer(1024)
    status = library().unimem_last_error(buffer, len(buffer))
    return status, buffer.value.decode("utf-8", "replace")


def clear_last_error():
    """Forgets this thread's last error."""
    library().unimem_clear_last_error()


def error_for(status, message, out_of_memory=None):
    """The exception for a status; `out_of_memory`: a class to raise for it instead (torch's or
    CuPy's), called with the message."""
    if status == OUT_OF_MEMORY:
        return out_of_memory(message) if out_of_memory is not None else \
            OutOfMemoryError(message, status)
    if status == INVALID_ARGUMENT:
        return ValueError(message)
    return AllocatorError(message or "unimem: the allocator failed", status)


def raise_last(out_of_memory=None):
    """Raises this thread's last error (see error_for)."""
    status, message = last_error()
    raise error_for(status if status != OK else RUNTIME_ERROR, message, out_of_memory)


def _check(status):
    if status != OK:
        raise_last()


def runtime_libraries(stem: str) -> set:
    """The files of the shared libraries named stem* mapped into this process (Linux), e.g.
    "libamdhip64": two HIP runtimes mean that torch's streams are foreign to unimem's."""
    found = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)  # address perms offset device inode [path]
                path = fields[5].strip() if len(fields) == 6 else ""
                if os.path.basename(path).startswith(stem):
                    found.add(os.path.realpath(path))
    except OSError:
        pass
    return found


def framework(name: str):
    """Imports torch or CuPy for unimem.torch or unimem.cupy, or says which needs it."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError(f"unimem.{name} needs {name} (import {name} failed: {e})") from e


def check_one_hip_runtime(framework_build: str):
    """Refuses two HIP runtimes in the process: a framework's streams are pointers into its own
    runtime, foreign to another (docs/python.md, ROCm)."""
    hip = runtime_libraries("libamdhip64")
    if len(hip) > 1:
        raise RuntimeError("unimem: two HIP runtimes are loaded (" + ", ".join(sorted(hip)) +
                           "): the framework's streams are foreign to the one unimem uses. Build "
                           f"the package against the ROCm of {framework_build} "
                           "(docs/python.md, ROCm)")


def backend() -> str:
    """The backend the library was built for: "CUDA", "HIP (AMD)" or "HIP (NVIDIA)"."""
    return library().unimem_allocator_backend().decode()


def version() -> str:
    """unimem's version, as the library was built ("0.3.0")."""
    return library().unimem_allocator_version().decode()


def device_count() -> int:
    """The GPUs the library's runtime sees (0 without one)."""
    n = library().unimem_allocator_device_count()
    if n < 0:
        raise_last()
    return n


@dataclasses.dataclass(frozen=True)
class Options:
    """How the pools are made (one per GPU, at its first allocation; fixed from then on).

    use_runtime_pool: the runtime's pool of managed memory where there is one (CUDA 13), else
        unimem's caching allocator (HIP, older CUDA, or False here).
    prefetch: new allocations of at least `prefetch_min_bytes` are prefetched to their GPU on
        their stream, so that kernels find them there instead of faulting them in.
    limit: bytes in use per GPU past which allocations fail as out of memory (None: none). Set
        it below the host's memory when oversubscribing: the driver backs managed memory with
        host memory, and the kernel's OOM killer, not an error, ends a process that takes more.
    release_threshold: bytes the pool keeps from the runtime when idle (None: keep all).
    gpu_budget: the pool's GPU budget (issue 51; docs/python.md, "The GPU budget"): the bytes of
        managed memory it may place on its GPU; the blocks past it live on the host, read and
        written by the GPU over the link, never migrated (no thrashing when the tensors outgrow
        the GPU). None (the default): no budget. "free": the GPU's free memory when the pool is
        made (at the first allocation on that GPU), less gpu_budget_margin. An int: bytes.
    gpu_budget_margin: what a "free" budget leaves free on the GPU, in bytes (None: unimem's
        default reserve, max(256 MiB, 1/64 of the GPU's memory)).
    """
    use_runtime_pool: bool = True
    prefetch: bool = True
    prefetch_min_bytes: int = 2 << 20
    limit: Optional[int] = None
    release_threshold: Optional[int] = None
    gpu_budget: Optional[Union[int, str]] = None
    gpu_budget_margin: Optional[int] = None

    def __post_init__(self):
        sizes = ["prefetch_min_bytes", "limit", "release_threshold", "gpu_budget_margin"]
        if self.gpu_budget != "free":
            sizes.append("gpu_budget")
        for name in sizes:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"unimem: {name} is a number of bytes, not {value!r}" +
                                (' (or "free")' if name == "gpu_budget" else ""))
            if value < 0 or value >= _UNKNOWN:
                raise ValueError(f"unimem: {name} must be in [0, 2**64 - 1), not {value}")
        if self.limit == 0:
            raise ValueError("unimem: limit must be positive (None: no limit)")
        if self.gpu_budget == 0:
            raise ValueError("unimem: gpu_budget must be positive (None: no budget)")

    def _struct(self) -> _Options:
        flags = (_FLAG_RUNTIME_POOL if self.use_runtime_pool else 0) | \
            (_FLAG_PREFETCH if self.prefetch else 0)
        budget = 0 if self.gpu_budget is None else \
            _UNKNOWN if self.gpu_budget == "free" else self.gpu_budget
        return _Options(ctypes.sizeof(_Options), flags, self.prefetch_min_bytes,
                        self.limit or 0,
                        _UNKNOWN if self.release_threshold is None else self.release_threshold,
                        budget,
                        _UNKNOWN if self.gpu_budget_margin is None else self.gpu_budget_margin)


def configure(options: Options):
    """Gives the library `options` for the pools it will make; refused (ValueError) once a pool
    exists with other options."""
    o = options._struct()
    _check(library().unimem_allocator_configure(ctypes.byref(o)))


def options_in_force() -> Options:
    """The options the pools have (or will have)."""
    o = _Options()
    _check(library().unimem_allocator_options_in_force(ctypes.byref(o)))
    return Options(use_runtime_pool=bool(o.flags & _FLAG_RUNTIME_POOL),
                   prefetch=bool(o.flags & _FLAG_PREFETCH),
                   prefetch_min_bytes=o.prefetch_min_bytes,
                   limit=o.limit_bytes or None,
                   release_threshold=None if o.release_threshold == _UNKNOWN
                   else o.release_threshold,
                   gpu_budget=None if o.gpu_budget_bytes == 0 else
                   "free" if o.gpu_budget_bytes == _UNKNOWN else o.gpu_budget_bytes,
                   gpu_budget_margin=None if o.gpu_budget_margin == _UNKNOWN
                   else o.gpu_budget_margin)


@dataclasses.dataclass(frozen=True)
class Statistics:
    """One GPU's figures, in bytes (see docs/python.md, "Statistics").

    bytes_in_use, peak_bytes_in_use, allocations: what torch, CuPy and Python asked for and have
        not freed (the peak since the pool was made or reset_peak()); torch's memory_allocated()
        and max_memory_allocated() cannot say them under change_current_allocator.
    bytes_held: held from the runtime, in use and cached (torch's memory_reserved()).
    allocations_total, failures, prefetches: counts since the pool was made.
    device_free_bytes, device_total_bytes: the GPU's memory, as the runtime reports it now;
        managed pages on the GPU count as used, so a pool larger than the GPU shows here as the
        GPU full while bytes_in_use goes on growing.
    device_free_at_pool_bytes: device_free_bytes when the pool was made (0 before).
    on_gpu_estimate, on_host_estimate (properties): the pool's bytes held split by what the GPU
        filled since the pool was made, an estimate (see docs/python.md, "Statistics").
    placed_on_gpu_bytes, placed_on_host_bytes: with a GPU budget (Options.gpu_budget), the
        pool's bytes held on each side of it: ordinary blocks (the budget counts them; they
        migrate to the GPU that touches them) and blocks placed on the host; their sum is
        bytes_held. None without a budget (the pool placed nothing; the driver moves pages
        without telling: see on_gpu_estimate).
    host_bytes_in_use: of bytes_in_use, in blocks placed on the host; None without a budget.
    gpu_budget: the pool's budget in bytes (a "free" budget as measured); None without one.
    """
    device: int
    pool_made: bool
    bytes_in_use: int
    peak_bytes_in_use: int
    bytes_held: int
    allocations: int
    allocations_total: int
    failures: int
    prefetches: int
    limit: Optional[int]
    device_free_bytes: int
    device_total_bytes: int
    device_free_at_pool_bytes: int
    placed_on_gpu_bytes: Optional[int]
    placed_on_host_bytes: Optional[int]
    host_bytes_in_use: Optional[int]
    gpu_budget: Optional[int]
    uses_runtime_pool: bool

    @property
    def on_gpu_estimate(self) -> int:
        """Bytes of the pool on the GPU, estimated: what the GPU filled since the pool was made
        (its free memory then less now), at most bytes_held. Other memory the process took on
        the GPU since then counts too: an upper bound where the pool is not alone."""
        if not self.pool_made:
            return 0
        filled = max(0, self.device_free_at_pool_bytes - self.device_free_bytes)
        return min(self.bytes_held, filled)

    @property
    def on_host_estimate(self) -> int:
        """Bytes of the pool not on the GPU, estimated: bytes_held less on_gpu_estimate."""
        return self.bytes_held - self.on_gpu_estimate


def statistics(device: int) -> Statistics:
    """GPU `device`'s figures."""
    s = _Stats()
    s.size = ctypes.sizeof(_Stats)
    _check(library().unimem_allocator_statistics(int(device), ctypes.byref(s)))

    def known(v):
        return None if v == _UNKNOWN else v
    return Statistics(device=int(device), pool_made=bool(s.pool_made),
                      bytes_in_use=s.bytes_in_use, peak_bytes_in_use=s.peak_bytes_in_use,
                      bytes_held=s.bytes_held, allocations=s.allocations,
                      allocations_total=s.allocations_total, failures=s.failures,
                      prefetches=s.prefetches, limit=known(s.limit_bytes),
                      device_free_bytes=s.device_free_bytes,
                      device_total_bytes=s.device_total_bytes,
                      device_free_at_pool_bytes=s.device_free_at_pool_bytes,
                      placed_on_gpu_bytes=known(s.placed_on_gpu_bytes),
                      placed_on_host_bytes=known(s.placed_on_host_bytes),
                      host_bytes_in_use=known(s.host_bytes_in_use),
                      gpu_budget=known(s.gpu_budget_bytes),
                      uses_runtime_pool=bool(s.uses_runtime_pool))


def reset_peak(device: int):
    """Starts GPU `device`'s peak over from the bytes in use now."""
    _check(library().unimem_allocator_reset_peak(int(device)))


def trim(device: int, keep: int = 0):
    """Returns GPU `device`'s cached memory to the runtime until its pool holds at most `keep`
    bytes."""
    _check(library().unimem_allocator_trim(int(device), int(keep)))


def record_stream(pointer: int, device: int, stream: int):
    """The allocation at `pointer` is freed only after the work queued on `stream` before its
    free (torch's Tensor.record_stream, which torch does not pass on to a pluggable allocator)."""
    _check(library().unimem_allocator_record_stream(ctypes.c_void_p(pointer), int(device),
                                                    ctypes.c_void_p(stream)))


def allocate(size: int, device: int, stream: int, out_of_memory=None) -> int:
    """`size` bytes on GPU `device` in the order of `stream` (a handle; 0: the default stream):
    the pointer, 0 for 0 bytes; raises on failure (out_of_memory: see error_for)."""
    if size == 0:
        return 0
    pointer = library().unimem_torch_alloc(size, device, ctypes.c_void_p(stream))
    if not pointer:
        raise_last(out_of_memory)
    return pointer


def deallocate(pointer: int, size: int, device: int, stream: int):
    """Gives back an allocation of allocate() in the order of `stream`."""
    if pointer:
        library().unimem_torch_free(ctypes.c_void_p(pointer), size, device,
                                    ctypes.c_void_p(stream))
