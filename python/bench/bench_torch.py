"""Capacity and speed of PyTorch on unimem's managed pool, side by side in one job (docs/python.md,
"Measured"). Each run is a child process of its own, with a time limit, so that an
out-of-memory error, a crash or a hang ends that run only.

A ballast (raw cudaMalloc / hipMalloc through the runtime torch loaded, outside torch's
allocator) first leaves --free-gib GiB of the GPU free; the models are sized against that:

  capacity        training at 1.5x the free memory: torch's allocator raises
                  torch.OutOfMemoryError, unimem (route A) completes
  in_memory       training at 0.8x: step time, unimem / torch's allocator (target >= 0.95)
  oversubscribed  training at 1.5x: unimem against a naive cudaMallocManaged pluggable allocator
                  (target >= 1.3x faster) and torch.cuda._use_uvm() where torch has it
  inference       weight-streaming inference at 1.5x, batch 16: the weights' bytes per second
                  against the measured host-to-device bandwidth (target >= 0.70)

"unimem-budget" is route A with the pool's GPU budget (gpu_budget="free": the GPU's free memory
when the pool is made, less unimem's reserve; docs/python.md, "The GPU budget"): what an ML user
whose model outgrows the GPU would set. The tensors made first (the weights, then the gradients
and the activations of the first step) stay ordinary managed memory; those past the budget (most
of AdamW's state, the last layers' weights for inference) live on the host and are read and
written over the link, never migrated. It runs beside "unimem" (no budget, the default) in every
kind: at 0.8x nothing crosses the budget (its cost where everything fits), at 1.5x it is the
candidate against naive managed memory's thrashing.

The model is a GPT-like stack of torch's encoder layers (fp32 and AdamW for training, bf16 for
inference); its depth for a footprint is calibrated first (peak bytes of 1 and 2 layers with
torch's allocator, no ballast). Managed memory is backed by the host's: a run that would need more
than --host-fraction of the host's available memory is not started.

    python3 python/bench/bench_torch.py --free-gib 40            # all, on one GPU
    python3 python/bench/bench_torch.py --only in_memory --json out.json
"""
import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import time

GiB = 1 << 30
_keep = []  # torch's allocator objects, alive while torch calls into them
ALLOCATORS = ("default", "unimem", "unimem-noprefetch", "unimem-caching", "unimem-budget", "naive",
              "uvm", "unimem-B")


# ---- in the child ----

def runtime_library():
    """The GPU runtime torch loaded (its libcudart or libamdhip64) and its function prefix."""
    import unimem._native as native
    for stem, prefix in (("libcudart", "cuda"), ("libamdhip64", "hip")):
        found = sorted(native.runtime_libraries(stem))
        if found:
            return ctypes.CDLL(found[0]), prefix
    for name, prefix in (("libcudart.so", "cuda"), ("libamdhip64.so", "hip")):
        try:
            return ctypes.CDLL(name), prefix
        except OSError:
            pass
    raise RuntimeError("no CUDA or HIP runtime found (torch loaded none, and none is installed)")


def place_ballast(free_gib):
    """Leaves `free_gib` GiB of the GPU free with one raw allocation, before torch uses CUDA;
    returns (ballast bytes, free bytes after)."""
    lib, p = runtime_library()
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    if getattr(lib, p + "MemGetInfo")(ctypes.byref(free), ctypes.byref(total)) != 0:
        raise RuntimeError("MemGetInfo failed")
    ballast = free.value - int(free_gib * GiB)
    if ballast > 0:
        pointer = ctypes.c_void_p()
        if getattr(lib, p + "Malloc")(ctypes.byref(pointer), ctypes.c_size_t(ballast)) != 0:
            raise RuntimeError(f"the ballast of {ballast / GiB:.1f} GiB was refused")
    getattr(lib, p + "MemGetInfo")(ctypes.byref(free), ctypes.byref(total))
    return max(ballast, 0), free.value


def install(torch, allocator):
    """The allocator of this run, before torch initialises CUDA; a context for route B."""
    import contextlib
    import unimem._native as native
    import unimem.torch as ut
    if allocator == "unimem":
        ut.use_managed_pool()
    elif allocator == "unimem-noprefetch":
        ut.use_managed_pool(prefetch=False)
    elif allocator == "unimem-caching":
        ut.use_managed_pool(use_runtime_pool=False)
    elif allocator == "unimem-budget":
        ut.use_managed_pool(gpu_budget="free")
    elif allocator == "naive":
        a = torch.cuda.memory.CUDAPluggableAllocator(native.library_path(),
                                                     "unimem_naive_managed_alloc",
                                                     "unimem_naive_managed_free")
        torch.cuda.memory.change_current_allocator(a)
        _keep.append(a)
    elif allocator == "uvm":
        if not hasattr(torch.cuda, "_use_uvm"):
            raise NotImplementedError(f"torch {torch.__version__} has no torch.cuda._use_uvm()")
        used = torch.cuda._use_uvm()
        if hasattr(used, "__enter__"):
            return used  # a context (a MemPool's): this thread's allocations
    elif allocator == "unimem-B":
        return ut.mem_pool()
    return contextlib.nullcontext()


def model(torch, d, layers, vocab, dtype):
    """Made on the GPU in its dtype (never on the host: a model of 1.5x the GPU made there first
    would need its size in host memory on top of the managed memory)."""
    nn = torch.nn
    made = dict(device="cuda", dtype=dtype)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d, **made)
            layer = nn.TransformerEncoderLayer(d, nhead=max(1, d // 128), dim_feedforward=4 * d,
                                               dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=True, **made)
            self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab, **made)

        def forward(self, tokens):
            return self.head(self.blocks(self.embed(tokens), is_causal=False))
    return Model()


def timed_steps(torch, step, warmup, steps):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times


def child(args):
    import torch
    out = {"allocator": args.allocator, "layers": args.layers}
    if args.free_gib > 0:
        out["ballast"], out["free_after_ballast"] = place_ballast(args.free_gib)
    try:
        context = install(torch, args.allocator)
    except NotImplementedError as e:
        out["error"] = str(e)
        return out
    vocab = args.vocab
    torch.manual_seed(0)
    with context:
        if args.kind == "h2d":
            n = GiB
            host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
            dev = torch.empty(n, dtype=torch.uint8, device="cuda")
            times = timed_steps(torch, lambda: dev.copy_(host, non_blocking=True), 2, 10)
            out["h2d_bytes_per_s"] = n / min(times)
            return out
        training = args.kind == "train"
        dtype = torch.float32 if training else torch.bfloat16
        try:
            m = model(torch, args.d, args.layers, vocab, dtype)
            out["parameter_bytes"] = sum(p.numel() * p.element_size() for p in m.parameters())
            tokens = torch.randint(0, vocab, (args.batch, args.seq + 1), device="cuda")
            if training:
                optimizer = torch.optim.AdamW(m.parameters(), lr=1e-5)

                def step():
                    logits = m(tokens[:, :-1])
                    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab),
                                                             tokens[:, 1:].reshape(-1))
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
            else:
                m.eval()

                def step():
                    with torch.no_grad():
                        m(tokens[:, :-1])
            times = timed_steps(torch, step, args.warmup, args.steps)
        except torch.OutOfMemoryError as e:
            out["oom"] = str(e).splitlines()[0]
            return out
        out["step_s"] = sorted(times)[len(times) // 2]
        out["steps_s"] = times
        out["device"] = torch.cuda.get_device_name()
    if args.allocator == "default":
        out["peak_bytes"] = torch.cuda.max_memory_allocated()
    elif args.allocator.startswith("unimem"):
        import unimem.torch as ut
        s = ut.statistics()
        out["peak_bytes"] = s.peak_bytes_in_use
        out["on_gpu_estimate"], out["on_host_estimate"] = s.on_gpu_estimate, s.on_host_estimate
    return out


# ---- in the parent ----

def host_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def run(args, kind, allocator, layers, free_gib, steps, warmup, d, batch, seq):
    command = [sys.executable, os.path.abspath(__file__), "--child", "--kind", kind,
               "--allocator", allocator, "--layers", str(layers), "--free-gib", str(free_gib),
               "--steps", str(steps), "--warmup", str(warmup), "--d", str(d),
               "--batch", str(batch), "--seq", str(seq), "--vocab", str(args.vocab)]
    start = time.time()
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"allocator": allocator, "error": f"timed out after {args.timeout} s"}
    result = None
    for line in stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
    if result is None:
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        return {"allocator": allocator, "error": f"exit {p.returncode}: {tail}"}
    result["wall_s"] = time.time() - start
    return result


def calibrate(args, kind, d, batch, seq):
    """Bytes of a model of n layers: fixed + n * per_layer (torch's allocator, peak)."""
    peaks = []
    for layers in (1, 2):
        r = run(args, kind, "default", layers, 0, 1, 1, d, batch, seq)
        if "peak_bytes" not in r:
            raise SystemExit(f"calibration failed: {r}")
        peaks.append(r["peak_bytes"])
    per_layer = peaks[1] - peaks[0]
    return peaks[0] - per_layer, per_layer


def layers_for(footprint, fixed, per_layer):
    return max(1, int((footprint - fixed) // per_layer))


def show(title, rows, ratio=None):
    print(f"\n{title}")
    for r in rows:
        if "error" in r:
            what = r["error"]
        elif "oom" in r:
            what = "torch.OutOfMemoryError: " + r["oom"]
        else:
            what = f"{r['step_s'] * 1e3:10.1f} ms a step"
            if "peak_bytes" in r:
                what += f", peak {r['peak_bytes'] / GiB:.1f} GiB"
            if "on_gpu_estimate" in r:
                what += (f" (at the end about {r['on_gpu_estimate'] / GiB:.1f} GiB on the GPU, "
                         f"{r['on_host_estimate'] / GiB:.1f} on the host)")
        print(f"  {r['allocator']:<18} {what}")
    if ratio:
        print("  " + ratio)


def step_ratio(rows, faster, slower):
    a = next((r for r in rows if r["allocator"] == faster and "step_s" in r), None)
    b = next((r for r in rows if r["allocator"] == slower and "step_s" in r), None)
    return b["step_s"] / a["step_s"] if a and b else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--free-gib", type=float, default=40.0,
                        help="GiB the ballast leaves free on the GPU (default 40)")
    parser.add_argument("--only", default="capacity,in_memory,oversubscribed,inference")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per run")
    parser.add_argument("--host-fraction", type=float, default=0.8)
    parser.add_argument("--json", help="write every run's result here")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--d", type=int, default=4096, help="model width, training")
    parser.add_argument("--d-inference", type=int, default=8192, help="model width, inference")
    # the child's
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kind", choices=("train", "infer", "h2d"), help=argparse.SUPPRESS)
    parser.add_argument("--allocator", choices=ALLOCATORS, help=argparse.SUPPRESS)
    parser.add_argument("--layers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=5, help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--seq", type=int, default=512, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)), flush=True)
        return 0

    only = set(args.only.split(","))
    free = args.free_gib * GiB
    results = {"free_gib": args.free_gib, "runs": {}}
    import torch  # not initialised here: the GPU's memory is the children's
    import unimem
    print(f"unimem {unimem.version()} ({unimem.backend()}), torch {torch.__version__}; "
          f"the ballast leaves {args.free_gib:g} GiB of the GPU free; the host has "
          f"{host_available() / GiB:.0f} GiB available")

    def fits_host(footprint, name):
        if footprint > args.host_fraction * host_available():
            print(f"\n{name}: skipped: {footprint / GiB:.0f} GiB of managed memory is more than "
                  f"{args.host_fraction:g} of the host's available memory")
            return False
        return True

    train_shape = dict(d=args.d, batch=2, seq=512)
    if only & {"capacity", "in_memory", "oversubscribed"}:
        fixed, per_layer = calibrate(args, "train", **train_shape)
        print(f"training model: {fixed / GiB:.2f} GiB + {per_layer / GiB:.2f} GiB a layer "
              f"(d={args.d}, fp32, AdamW, batch 2 x 512)")
    if "in_memory" in only:
        layers = layers_for(0.8 * free, fixed, per_layer)
        rows = [run(args, "train", a, layers, args.free_gib, 10, 3, **train_shape)
                for a in ("default", "unimem", "unimem-noprefetch", "unimem-caching",
                          "unimem-budget")]
        r = step_ratio(rows, "unimem", "default")
        show(f"in memory: training at 0.8x ({layers} layers)", rows,
             f"unimem's speed / torch's allocator's: {r:.3f} (target >= 0.95)" if r else None)
        results["runs"]["in_memory"] = rows
    if "capacity" in only or "oversubscribed" in only:
        layers = layers_for(1.5 * free, fixed, per_layer)
        if fits_host(fixed + layers * per_layer, "1.5x training"):
            chosen = ["default", "unimem"] if "capacity" in only else ["unimem"]
            if "oversubscribed" in only:
                chosen += ["unimem-noprefetch", "unimem-caching", "unimem-budget", "naive", "uvm"]
            rows = [run(args, "train", a, layers, args.free_gib, 3, 1, **train_shape)
                    for a in chosen]
            r = step_ratio(rows, "unimem", "naive")
            rb = step_ratio(rows, "unimem-budget", "naive")
            show(f"oversubscribed: training at 1.5x ({layers} layers)", rows,
                 "\n  ".join(line for line in (
                     f"unimem / naive managed allocator: {r:.2f}x faster (target >= 1.3)"
                     if r else None,
                     f"unimem-budget / naive managed allocator: {rb:.2f}x faster"
                     if rb else None) if line) or None)
            results["runs"]["oversubscribed"] = rows
    if "inference" in only:
        shape = dict(d=args.d_inference, batch=16, seq=128)
        fixed_i, per_layer_i = calibrate(args, "infer", **shape)
        layers = layers_for(1.5 * free, fixed_i, per_layer_i)
        if fits_host(fixed_i + layers * per_layer_i, "1.5x inference"):
            h2d = run(args, "h2d", "default", 1, args.free_gib, 10, 2, **shape)
            rows = [run(args, "infer", a, layers, args.free_gib, 3, 1, **shape)
                    for a in ("unimem", "unimem-B", "unimem-budget", "naive")]
            lines = []
            bandwidth = h2d.get("h2d_bytes_per_s")
            for row in rows:
                if "step_s" in row and bandwidth:
                    rate = row["parameter_bytes"] / row["step_s"]
                    row["weight_bytes_per_s"] = rate
                    lines.append(f"{row['allocator']}: weights at {rate / 1e9:.1f} GB/s, "
                                 f"{rate / bandwidth:.2f} of host-to-device "
                                 f"{bandwidth / 1e9:.1f} GB/s (target >= 0.70)")
            show(f"inference: weights streamed at 1.5x, batch 16 ({layers} layers, bf16)", rows,
                 "\n  ".join(lines) or None)
            results["runs"]["inference"] = rows + [h2d]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
