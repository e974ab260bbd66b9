"""Host time per attention call: fa_ck beside SDPA cuDNN, and where fa_ck's goes.

    python bench/host.py                 # on a GPU: the table below, then the breakdown
    python bench/host.py --stubbed       # anywhere: fa_ck's own Python path, launches stubbed

Short calls can be bound by the host, not the GPU (docs/performance.md, "Host time per call").
Per shape and call kind (forward without autograd, fwd+bwd, fp8 forward where the device has fp8;
cuDNN's forward and fwd+bwd), back to back:

- host: wall time to enqueue N calls, divided by N (before the synchronise);
- GPU: CUDA events around the same N calls, divided by N;
- host-bound when the host takes 90 % of the GPU's time or more (the GPU then waits for it).

Then, at the smallest shape, perf_counter wrappers over fa_ck's host path and Triton's launcher
(each line includes what it calls) show where a forward and a fwd+bwd spend their time. --stubbed runs the sm90 path on CPU
tensors with every launch stubbed out (as tests/test_host_path.py fakes it): fa_ck's own Python
(plan keys, replays, allocations) without Triton's launcher or the CUDA driver.

Writes results.md and results.json under --out (default ./fa_ck-results/host-<gpu or cpu>-<date>/).
"""
from __future__ import annotations

import argparse
import collections
import contextvars
import datetime
import importlib
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))     # run as a script: `bench` importable as a package
from bench.out_dir import default_out_dir  # noqa: E402

SHAPES = [(1, 128, 2, 2, 64, True), (32, 512, 16, 16, 128, True), (32, 512, 32, 32, 64, True),
          (64, 1024, 12, 12, 64, True), (4, 4096, 16, 16, 128, True)]   # (B, S, Hq, Hkv, D, causal)
# the host path's pieces, outermost first: (module, class or None, function, label)
PIECES = [("fa_ck.interface", None, "_check_batched", "interface checks"),
          ("fa_ck.interface", None, "_params", "parameters"),
          ("fa_ck.ops", None, "_grads", "backward (fa_ck.ops._grads)"),
          ("fa_ck.backends.triton", None, "_forward", "triton forward"),
          ("fa_ck.backends.triton", None, "_backward", "triton backward"),
          ("fa_ck.backends.triton.plans", None, "_plan_key", "plan keys"),
          ("fa_ck.backends.triton.plans", "_Plan", "replay", "plan replays"),
          ("fa_ck.backends.triton.plans", None, "run_compiled", "launches (run_compiled)"),
          ("fa_ck.backends.triton.driver_launch", "DirectLaunch", "__call__", "launches straight to the driver"),
          ("fa_ck.backends.triton", None, "_empty", "output allocations"),
          ("fa_ck.backends.triton", None, "_dq_accumulator", "one pass's dQ buffer"),
          ("fa_ck.backends.triton.plans", None, "_rebased", "host descriptors rebased"),
          # Triton's own launch path, past fa_ck (absent pieces are left out)
          ("triton.backends.nvidia.driver", "CudaLauncher", "__call__", "Triton: CudaLauncher (a launch's host side)"),
          ("triton.backends.nvidia.driver", None, "make_tensordesc_arg", "Triton: host descriptors encoded")]


def _fa_ck():
    try:
        import fa_ck
    except ImportError:
        sys.path.insert(0, str(REPO / "python"))
        import fa_ck
    return fa_ck


def _inputs(b, s, hq, hkv, d, device, dtype):
    import torch
    q = torch.randn(b, s, hq, d, dtype=dtype, device=device, requires_grad=True)
    k, v = (torch.randn(b, s, hkv, d, dtype=dtype, device=device, requires_grad=True) for _ in range(2))
    return q, k, v, torch.randn_like(q)


def _calls(fa_ck, q, k, v, do, causal, cudnn: bool):
    """{name: fn} of one shape: fa_ck's forward (no autograd), fwd+bwd and fp8 forward (q, k, v
    quantised per call), and cuDNN's forward and fwd+bwd on a GPU."""
    import torch
    import torch.nn.functional as F

    def fa_fwd():
        with torch.no_grad():
            fa_ck.flash_attn_func(q, k, v, causal=causal)

    def fa_both():
        torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), do)
    def fa_fp8():
        with torch.no_grad():
            fa_ck.flash_attn_fp8_func(q, k, v, causal=causal)
    calls = {"fa_ck fwd": fa_fwd, "fa_ck fwd+bwd": fa_both}
    from fa_ck.backends.triton import configs
    if configs.fp8_dtype(q.device) is not None:           # a device with fp8 (or the stubbed sm90 path)
        calls["fa_ck fp8 fwd"] = fa_fp8
    if cudnn:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        g = q.shape[2] // k.shape[2]
        qt, dot = q.transpose(1, 2), do.transpose(1, 2)
        kt, vt = (t.detach().repeat_interleave(g, 2).transpose(1, 2).requires_grad_() for t in (k, v))

        def cudnn_fwd():
            with torch.no_grad(), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

        def cudnn_both():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            torch.autograd.grad(out, (qt, kt, vt), dot)
        calls.update({"cudnn fwd": cudnn_fwd, "cudnn fwd+bwd": cudnn_both})
    return calls


def host_and_gpu_us(fn, n: int, on_gpu: bool) -> tuple[float, float | None]:
    """(host us per call to enqueue n calls back to back, GPU us per call from CUDA events)."""
    import torch
    for _ in range(5):
        fn()
    if on_gpu:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t0) / n * 1e6
    if not on_gpu:
        return host, None
    end.record()
    torch.cuda.synchronize()
    return host, start.elapsed_time(end) / n * 1e3


def breakdown(fn, n: int) -> dict[str, float]:
    """us per call of each piece of PIECES under fn, by perf_counter wrappers (put back after)."""
    spent: collections.Counter = collections.Counter()
    undo = []
    for module, cls, attr, label in PIECES:
        try:
            owner = importlib.import_module(module)
        except ImportError:
            continue
        owner = getattr(owner, cls, None) if cls else owner
        real = vars(owner).get(attr) if owner is not None else None
        if real is None:
            continue

        def wrapper(*a, _real=real, _label=label, **kw):
            t0 = time.perf_counter()
            try:
                return _real(*a, **kw)
            finally:
                spent[_label] += time.perf_counter() - t0
        setattr(owner, attr, wrapper)
        undo.append((owner, attr, real))
    try:
        for _ in range(5):
            fn()
        spent.clear()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        spent["total"] = time.perf_counter() - t0
    finally:
        for owner, attr, real in undo:
            setattr(owner, attr, real)
    return {label: round(spent[label] / n * 1e6, 1) for *_, label in PIECES + [(None, "total")] if label in spent}


def stub_launches():
    """The sm90 path on CPU tensors with launches stubbed (tests/test_host_path.py's gpu_path)."""
    os.environ.pop("TRITON_INTERPRET", None)
    os.environ["FA_CK_POISON"] = "0"
    tb = importlib.import_module("fa_ck.backends.triton")
    gluon = importlib.import_module("fa_ck.backends.triton.launch_gluon")
    plans = importlib.import_module("fa_ck.backends.triton.plans")
    tb.configs.INTERPRET = False
    tb.configs.arch = lambda device: "cuda:sm90"
    tb.available = lambda: (True, "")
    tb.unsupported = lambda q, k, v, p: None
    gluon._sm_count = lambda device: 132
    plans.launch = lambda kernel, grid, args, constexprs: None
    plans.triton.set_allocator = lambda allocator: None
    if plans._allocation is not None:
        plans._allocation._allocator = contextvars.ContextVar("_allocator", default=plans._allocation.NullAllocator())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stubbed", action="store_true", help="fa_ck's Python path alone, launches stubbed (any machine)")
    ap.add_argument("--n", type=int, default=200, help="calls per measurement")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory (default ./fa_ck-results/host-<gpu or cpu>-<date>/)")
    args = ap.parse_args(argv)
    import torch
    on_gpu = torch.cuda.is_available() and not args.stubbed
    if not on_gpu and not args.stubbed:
        print("note: no CUDA GPU: measuring fa_ck's Python path with launches stubbed (--stubbed)")
        args.stubbed = True
    fa_ck = _fa_ck()
    if args.stubbed:
        stub_launches()
    device = "cuda" if on_gpu else "cpu"
    shapes = SHAPES if on_gpu else SHAPES[:1]        # stubbed: the shape does not change the Python path
    rows = []
    for b, s, hq, hkv, d, causal in shapes:
        q, k, v, do = _inputs(b, s, hq, hkv, d, device, torch.bfloat16)
        for name, fn in _calls(fa_ck, q, k, v, do, causal, cudnn=on_gpu).items():
            host, gpu = host_and_gpu_us(fn, args.n, on_gpu)
            rows.append(dict(shape=f"B{b} S{s} H{hq}/{hkv} d{d} {'causal' if causal else 'full'}", call=name,
                             host_us=round(host, 1), gpu_us=None if gpu is None else round(gpu, 1),
                             host_bound=None if gpu is None else host >= 0.9 * gpu))
            print(rows[-1], flush=True)
    q, k, v, do = _inputs(*shapes[0][:5], device, torch.bfloat16)
    calls = _calls(fa_ck, q, k, v, do, shapes[0][5], cudnn=False)
    pieces = {name: breakdown(calls[name], args.n) for name in ("fa_ck fwd", "fa_ck fwd+bwd")}
    print(pieces)
    gpu_name = torch.cuda.get_device_name() if on_gpu else "cpu-stubbed"
    out = args.out or default_out_dir("host", gpu_name if on_gpu else "cpu")
    out.mkdir(parents=True, exist_ok=True)
    env = dict(command="python bench/host.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               device=gpu_name, torch=torch.__version__, date=datetime.datetime.now().isoformat(timespec="seconds"))
    (out / "results.json").write_text(json.dumps(dict(env=env, rows=rows, breakdown=pieces), indent=1))
    lines = [f"# Host time per call: {gpu_name}, {env['date']}", "", f"Command: `{env['command']}`", "",
             f"torch {env['torch']}. Back to back, {args.n} calls per measurement; us per call.", "",
             "| shape | call | host us | GPU us | host-bound |", "|---|---|---|---|---|"]
    lines += [f"| {r['shape']} | {r['call']} | {r['host_us']} | {r['gpu_us'] if r['gpu_us'] is not None else '-'} | "
              f"{'-' if r['host_bound'] is None else 'yes' if r['host_bound'] else 'no'} |" for r in rows]
    lines += ["", f"## fa_ck at {rows[0]['shape']}: where the host time goes (each piece includes what it calls)",
              "", "| piece | fwd (no autograd), us per call | fwd+bwd, us per call |", "|---|---|---|"]
    fwd, both = pieces["fa_ck fwd"], pieces["fa_ck fwd+bwd"]
    lines += [f"| {label} | {fwd.get(label, '-')} | {us} |" for label, us in both.items()]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out}/results.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
