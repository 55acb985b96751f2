"""PyTorch and CuPy on unimem's managed pool, on a GPU (docs/python.md):

- a small transformer (d=1024, 12 layers, forward, backward and AdamW, 20 steps, a fixed seed,
  torch's deterministic algorithms) gives the same losses, bit for bit, with torch's allocator,
  with route A (use_managed_pool) and with route B (mem_pool);
- under route A the pool's bytes in use go back to their baseline once the model, its optimizer
  and torch's cuBLAS workspaces are gone; its statistics count each tensor's bytes exactly;
  threads allocating at once leave nothing behind;
- CuPy through the pool (its Python allocator, on a stream of its own, and its CFunctionAllocator
  on the default stream) computes what NumPy computes, exactly (integers), and gives every byte
  back;
- two streams: a tensor used on a second stream and freed on its own is reused at once (both
  torch's allocator and unimem's: the control shows the hazard); with record_stream (torch's
  under route B, unimem.torch.record_stream under route A) the reuse waits for the second stream;
  torch's Tensor.record_stream does nothing under route A, as documented;
- the GPU budget (gpu_budget, issue 51): under route A with a budget of 256 MiB, four tensors of
  128 MiB: two ordinary, prefetched on allocation, two placed on the host, not prefetched; their
  sums are right, the statistics count 256 MiB on each side and nothing once they are gone;
- refusals: route A after torch initialised CUDA raises; past a limit, route B raises
  torch.OutOfMemoryError naming unimem's reason, route A a RuntimeError with it (unimem's
  exception, passed on by torch's C++), and the GPU stays usable after both.

Each case runs in a child process of its own (route A is for the whole process and must come
before CUDA), which prints one JSON line; the parent compares. Skips (77) without a GPU or torch;
the CuPy cases skip without CuPy.

Run: PYTHONPATH=<build>/python python3 tests/python/test_allocator_gpu.py"""
import json
import os
import subprocess
import sys
import unittest

CHILD_TIMEOUT = 600
MiB = 1 << 20


# ---- the children ----

def deterministic_torch():
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.enable_flash_sdp(False)  # the math attention: deterministic backward
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):
        torch.backends.cuda.enable_cudnn_sdp(False)
    torch.use_deterministic_algorithms(True)
    return torch


def transformer(torch, d=1024, layers=12, vocab=4096):
    """A GPT-like stack of torch's encoder layers (pre-norm, GELU) with a causal mask."""
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            layer = nn.TransformerEncoderLayer(d, nhead=16, dim_feedforward=4 * d, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)

        def forward(self, tokens):
            n = tokens.shape[1]
            mask = torch.triu(torch.full((n, n), float("-inf"), device=tokens.device), 1)
            return self.head(self.blocks(self.embed(tokens), mask=mask, is_causal=True))
    return Model()


def train(torch, steps=20, batch=8, seq=256, vocab=4096, seed=0):
    """Losses of `steps` AdamW steps from seed `seed`; the model and optimizer are gone after."""
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 1)
    data = torch.randint(0, vocab, (steps, batch, seq + 1), generator=g)
    model = transformer(torch, vocab=vocab).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    losses = []
    for step in range(steps):
        tokens = data[step].cuda()
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab),
                                                 tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    parameters = sum(p.numel() * p.element_size() for p in model.parameters())
    del model, optimizer, logits, loss, tokens
    return losses, parameters


def clear_torch_caches(torch):
    """What torch keeps between steps outside its allocator's cache: cuBLAS workspaces."""
    import gc
    gc.collect()
    torch.cuda.synchronize()
    if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
        torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.synchronize()


def child_train(route):
    torch = deterministic_torch()
    import unimem.torch as ut
    if route == "A":
        ut.use_managed_pool()
    if route == "B":
        with ut.mem_pool():
            losses, _ = train(torch)
    else:
        losses, _ = train(torch)
    return {"losses": losses, "route": ut.active_route()}


def child_baseline():
    torch = deterministic_torch()
    import gc
    import threading
    import unimem.torch as ut
    ut.use_managed_pool()
    x = torch.ones(1, device="cuda")  # the context, torch's CUDA state
    clear_torch_caches(torch)
    base = ut.statistics()
    out = {"base": base.bytes_in_use}
    # Statistics count each tensor's bytes exactly.
    t = torch.empty(100 * MiB + 3, dtype=torch.uint8, device="cuda")
    s = ut.statistics()
    out["one_tensor"] = [s.bytes_in_use - base.bytes_in_use, s.allocations - base.allocations]
    del t
    out["after_one"] = ut.statistics().bytes_in_use - base.bytes_in_use
    # A training run, then everything deleted.
    ut.reset_peak_memory_stats()
    _, parameters = train(torch, steps=3)
    clear_torch_caches(torch)
    s = ut.statistics()
    out["after_training"] = s.bytes_in_use - base.bytes_in_use
    out["peak_over_states"] = s.peak_bytes_in_use >= 4 * parameters  # weights, grads, 2 moments
    out["memory_stats"] = ut.memory_stats()["allocated_bytes.all.current"] == s.bytes_in_use
    # Threads allocating at once (torch ops release the GIL).
    errors = []

    def work(i):
        try:
            torch.manual_seed(i)
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for _ in range(50):
                    a = torch.randn(512 + 64 * i, 1024, device="cuda")
                    (a @ a.T).sum().item()
        except Exception as e:  # noqa: BLE001 - reported to the parent
            errors.append(repr(e))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    gc.collect()
    clear_torch_caches(torch)
    out["threads"] = errors
    out["after_threads"] = ut.statistics().bytes_in_use - base.bytes_in_use
    out["stats"] = {k: v for k, v in vars(ut.statistics()).items()}
    del x
    return out


def child_streams(route, record):
    """A tensor written on stream s1 after a ~0.5 s spin, freed on its own stream s0; a new tensor
    of its size is made and zeroed on s0 at once. Without a record of s1, its memory may be the
    old tensor's, which s1 then overwrites."""
    import torch
    import unimem.torch as ut
    if route == "A":
        ut.use_managed_pool()
    n = 16 * MiB
    context = ut.mem_pool() if route == "B" else None
    if context is not None:
        context.__enter__()
    try:
        t = torch.zeros(n, device="cuda")
        s1 = torch.cuda.Stream()
        torch.cuda.synchronize()
        with torch.cuda.stream(s1):
            torch.cuda._sleep(1_000_000_000)  # cycles: ~0.5 s
            t.add_(1)
        if record == "torch":
            t.record_stream(s1)
        elif record == "unimem":
            ut.record_stream(t, s1)
        pointer = t.data_ptr()
        del t
        u = torch.empty(n, device="cuda")
        u.zero_()
        torch.cuda.synchronize()
        return {"reused": u.data_ptr() == pointer, "corrupted": bool((u != 0).any().item())}
    finally:
        if context is not None:
            context.__exit__(None, None, None)


def child_refused_after_init():
    import torch
    import unimem.torch as ut
    torch.zeros(1, device="cuda")
    try:
        ut.use_managed_pool()
    except RuntimeError as e:
        return {"refused": str(e)}
    return {"refused": None}


def child_route_b_limit():
    import torch
    import unimem
    import unimem.torch as ut
    unimem.configure(limit=1 << 30)
    try:
        with ut.mem_pool():
            torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
        raised = None
    except torch.OutOfMemoryError as e:
        raised = str(e)
    usable = torch.ones(10, device="cuda").sum().item()
    return {"raised": raised, "usable": usable}


def child_route_a_limit():
    import torch
    import unimem.torch as ut
    ut.use_managed_pool(limit=1 << 30)
    try:
        torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
        raised = None
    except (RuntimeError, MemoryError) as e:  # torch's C++ passes unimem's exception on
        raised = f"{type(e).__name__}: {e}"
    usable = torch.ones(10, device="cuda").sum().item()
    return {"raised": raised, "usable": usable}


def child_cupy(c_function):
    import cupy
    import numpy as np
    import unimem
    import unimem.cupy as uc
    uc.use(c_function=c_function)
    device = cupy.cuda.runtime.getDevice()
    base = unimem.statistics(device).bytes_in_use
    n = 1 << 22
    a = np.arange(n, dtype=np.int64)
    expected = [(a * 7 + 3) % 1009]
    expected += [np.cumsum(expected[0]), np.sort(expected[0])[::-1],
                 expected[0][: 256 * 512].reshape(256, 512) @
                 expected[0][: 512 * 128].reshape(512, 128)]
    # The Python allocator follows CuPy's current stream; CuPy gives the C functions none, so they
    # serve the default stream, where this case runs.
    stream = cupy.cuda.Stream.null if c_function else cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.arange(n, dtype=cupy.int64)
        y = (x * 7 + 3) % 1009
        got = [y, cupy.cumsum(y), cupy.sort(y)[::-1],
               y[: 256 * 512].reshape(256, 512) @ y[: 512 * 128].reshape(512, 128)]
        live = unimem.statistics(device).bytes_in_use - base
        host = [cupy.asnumpy(g, stream=stream) for g in got]
        stream.synchronize()
    equal = all(np.array_equal(h, e) for h, e in zip(host, expected))
    del x, y, got
    stream.synchronize()
    cupy.cuda.Device(device).synchronize()
    return {"equal": equal, "live": live, "arrays": sum(e.nbytes for e in expected),
            "after": unimem.statistics(device).bytes_in_use - base}


def child_gpu_budget():
    import torch
    import unimem
    import unimem.torch as ut
    ut.use_managed_pool(gpu_budget=256 * MiB)
    device = torch.cuda.current_device()
    before = unimem.statistics(device)
    tensors = [torch.full((128 * MiB // 4,), float(i + 1), device="cuda") for i in range(4)]
    sums = [t.sum().item() for t in tensors]
    s = unimem.statistics(device)
    out = {"sums": sums, "n": 128 * MiB // 4, "gpu_budget": s.gpu_budget,
           "host_in_use": s.host_bytes_in_use, "on_host": s.placed_on_host_bytes,
           "on_gpu": s.placed_on_gpu_bytes, "prefetches": s.prefetches - before.prefetches}
    del tensors
    torch.cuda.synchronize()
    out["host_in_use_after"] = unimem.statistics(device).host_bytes_in_use
    return out


CHILDREN = {
    "gpu_budget": child_gpu_budget,
    "train": child_train, "baseline": child_baseline, "streams": child_streams,
    "refused_after_init": child_refused_after_init, "route_b_limit": child_route_b_limit,
    "route_a_limit": child_route_a_limit, "cupy": lambda c: child_cupy(c == "c_function"),
}


# ---- the parent ----

def run_child(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *args], env=env,
                       capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    result = None
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
    return r.returncode, result, r.stderr


def find_skip():
    try:
        import torch
    except ImportError:
        return "no torch"
    if not torch.cuda.is_available():
        return "torch sees no GPU"
    import unimem
    if unimem.device_count() == 0:
        return "unimem's runtime sees no GPU"
    if unimem.backend() == "HIP (AMD)" and torch.version.hip is None:
        return "unimem is built for AMD, torch is not"
    if unimem.backend() != "HIP (AMD)" and torch.version.cuda is None:
        return "unimem is built for NVIDIA, torch is not"
    return None


SKIP = find_skip() if __name__ == "__main__" and "--child" not in sys.argv else None


def has_cupy():
    import importlib.util
    return importlib.util.find_spec("cupy") is not None


@unittest.skipIf(SKIP is not None, SKIP or "")
class Training(unittest.TestCase):
    def test_losses_equal_torchs_allocator(self):
        results = {}
        for route in ("default", "A", "B"):
            code, result, err = run_child("train", route)
            self.assertEqual(code, 0, err)
            results[route] = result["losses"]
            print(f"route {route}: losses {result['losses'][0]:.6f} .. {result['losses'][-1]:.6f}")
        self.assertEqual(len(results["default"]), 20)
        self.assertLess(results["default"][-1], results["default"][0], "the model learns")
        self.assertEqual(results["A"], results["default"], "route A, bit for bit")
        self.assertEqual(results["B"], results["default"], "route B, bit for bit")

    def test_bytes_in_use_back_to_baseline(self):
        code, r, err = run_child("baseline")
        self.assertEqual(code, 0, err)
        print("route A statistics:", json.dumps(r["stats"]))
        self.assertEqual(r["one_tensor"], [100 * MiB + 3, 1], "a tensor's bytes, exactly")
        self.assertEqual(r["after_one"], 0)
        self.assertTrue(r["peak_over_states"], "the peak holds weights, gradients, moments")
        self.assertTrue(r["memory_stats"])
        self.assertEqual(r["after_training"], 0, "bytes still in use after the model is gone")
        self.assertEqual(r["threads"], [])
        self.assertEqual(r["after_threads"], 0)


@unittest.skipIf(SKIP is not None, SKIP or "")
class Streams(unittest.TestCase):
    def run_case(self, route, record):
        code, r, err = run_child("streams", route, record)
        self.assertEqual(code, 0, err)
        print(f"route {route}, record {record}: reused at once {r['reused']}, "
              f"overwritten by the other stream {r['corrupted']}")
        return r

    def test_route_a(self):
        control = self.run_case("A", "none")
        ignored = self.run_case("A", "torch")
        recorded = self.run_case("A", "unimem")
        self.assertFalse(recorded["corrupted"], "unimem.torch.record_stream orders the reuse")
        # torch's record_stream does not reach a pluggable allocator: as without it.
        self.assertEqual(ignored["corrupted"], control["corrupted"])
        if not control["reused"]:
            print("note: the pool did not reuse the block at once here; the control shows less")

    def test_route_b(self):
        control = self.run_case("B", "none")
        recorded = self.run_case("B", "torch")
        self.assertFalse(recorded["corrupted"], "torch's record_stream under route B")
        if not control["reused"]:
            print("note: torch's cache did not reuse the block at once here")

    def test_default_allocator_behaves_the_same(self):
        control = self.run_case("default", "none")
        recorded = self.run_case("default", "torch")
        self.assertFalse(recorded["corrupted"])
        print("torch's allocator without record_stream: overwritten", control["corrupted"])


@unittest.skipIf(SKIP is not None, SKIP or "")
class Refusals(unittest.TestCase):
    def test_route_a_after_cuda_is_initialised(self):
        code, r, err = run_child("refused_after_init")
        self.assertEqual(code, 0, err)
        self.assertIn("before torch initialises CUDA", r["refused"] or "")

    def test_route_b_raises_out_of_memory_and_the_gpu_stays_usable(self):
        code, r, err = run_child("route_b_limit")
        self.assertEqual(code, 0, err)
        self.assertIn("unimem: unimem allocator: out of memory: the limit is 1073741824",
                      r["raised"] or "")
        self.assertEqual(r["usable"], 10.0)

    def test_route_a_raises_with_the_reason_and_the_gpu_stays_usable(self):
        code, r, err = run_child("route_a_limit")
        self.assertEqual(code, 0, err)
        self.assertIn("out of memory: the limit is 1073741824 bytes", r["raised"] or "")
        self.assertEqual(r["usable"], 10.0)


@unittest.skipIf(SKIP is not None, SKIP or "")
class GpuBudget(unittest.TestCase):
    def test_route_a_places_the_tensors_past_the_budget_on_the_host(self):
        code, r, err = run_child("gpu_budget")
        self.assertEqual(code, 0, err)
        print(f"GPU budget: {r}")
        self.assertEqual(r["sums"], [float(i + 1) * r["n"] for i in range(4)])
        if r["gpu_budget"] is None:
            self.skipTest("this GPU's managed memory does not migrate: no budget")
        self.assertEqual(r["gpu_budget"], 256 * MiB)
        self.assertGreaterEqual(r["host_in_use"], 256 * MiB)  # and torch's small temporaries
        self.assertLess(r["host_in_use"], 257 * MiB)
        self.assertGreaterEqual(r["on_host"], 256 * MiB)
        self.assertGreaterEqual(r["on_gpu"], 256 * MiB)
        self.assertEqual(r["prefetches"], 2, "the two tensors on the host are not prefetched")
        self.assertEqual(r["host_in_use_after"], 0)


@unittest.skipIf(SKIP is not None, SKIP or "")
@unittest.skipUnless(has_cupy(), "no CuPy")
class Cupy(unittest.TestCase):
    def check(self, how):
        code, r, err = run_child("cupy", how)
        self.assertEqual(code, 0, err)
        print(f"CuPy ({how}): equal to NumPy {r['equal']}, {r['live']} bytes in use for "
              f"{r['arrays']} bytes of results, {r['after']} after")
        self.assertTrue(r["equal"])
        self.assertGreaterEqual(r["live"], r["arrays"])
        self.assertEqual(r["after"], 0)

    def test_python_allocator_on_a_stream(self):
        self.check("python")

    def test_c_function_allocator(self):
        self.check("c_function")


if __name__ == "__main__":
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        name, args = sys.argv[i + 1], sys.argv[i + 2:]
        print(json.dumps(CHILDREN[name](*args)), flush=True)
        sys.exit(0)
    if SKIP is not None:
        print("skipped:", SKIP)
        sys.exit(77)
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.testsRun == len(result.skipped) else 0)
