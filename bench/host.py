"""Host time per attention call: fa_ck beside SDPA cuDNN, and where fa_ck's goes.

    python bench/host.py                     # on a GPU: the table below, then the breakdown
    python bench/host.py --fast-path both    # each fa_ck call with its fast path on and off, side by side
    python bench/host.py --stubbed           # anywhere: fa_ck's own Python path, launches stubbed

Short calls can be bound by the host, not the GPU (docs/performance.md, "Host time per call").
Per shape and call kind (forward without autograd, fwd+bwd, fp8 forward where the device has fp8;
cuDNN's forward and fwd+bwd), back to back:

- host: wall time to enqueue N calls, divided by N (before the synchronise);
- GPU: CUDA events around the same N calls, divided by N;
- host-bound when the host takes 90 % of the GPU's time or more (the GPU then waits for it).

--fast-path both measures each fa_ck call with FA_CK_FAST_PATH=1 (replayed plans, keyed launches)
and =0 (the slow path and Triton's own launcher every call) in the same process: whether the fast
path pays on this machine.

Then, at the smallest shape, perf_counter wrappers over fa_ck's host path and Triton's launcher
(each line includes what it calls) show where a forward and a fwd+bwd spend their time. --stubbed
runs the sm90 path on CPU tensors with every launch stubbed out (as tests/fake_sm90.py fakes it):
fa_ck's own Python (plan keys, replays, allocations) without Triton's launcher or the CUDA driver.

Writes results.md and results.json under --out (default ./fa_ck-results/host-<gpu or cpu>-<date>/).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
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
          ("fa_ck.backends.triton.forward_host", None, "forward", "triton forward"),
          ("fa_ck.backends.triton.backward_host", None, "backward", "triton backward"),
          ("fa_ck.backends.triton.fast_path.plans", None, "plan_key", "plan keys"),
          ("fa_ck.backends.triton.fast_path.plans", "Plan", "replay", "plan replays"),
          ("fa_ck.backends.triton.fast_path.keyed", None, "run_compiled", "launches (run_compiled)"),
          ("fa_ck.backends.triton.fast_path.driver", "DirectLaunch", "__call__", "launches straight to the driver"),
          ("fa_ck.backends.triton.buffers", None, "empty", "output allocations"),
          ("fa_ck.backends.triton.backward_host", None, "dq_accumulator", "one pass's dQ buffer"),
          ("fa_ck.backends.triton.fast_path.slots", None, "rebased", "host descriptors rebased"),
          # Triton's own launch path, past fa_ck (absent pieces are left out)
          ("triton.runtime.jit", "JITFunction", "run", "Triton: JITFunction.run (its launcher, fast path off)"),
          ("triton.backends.nvidia.driver", "CudaLauncher", "__call__", "Triton: CudaLauncher (a launch's host side)"),
          ("triton.backends.nvidia.driver", None, "make_tensordesc_arg", "Triton: host descriptors encoded")]
FAST_PATH = {"on": ("1",), "off": ("0",), "both": ("1", "0")}     # --fast-path: FA_CK_FAST_PATH per pass


def _fa_ck():
    """This checkout's fa_ck (python/), ahead of any installed one: the host path measured is the tree's."""
    if (REPO / "python" / "fa_ck").is_dir() and str(REPO / "python") not in sys.path:
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
    from fa_ck.backends.triton import device
    if device.fp8_dtype(q.device) is not None:           # a device with fp8 (or the stubbed sm90 path)
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
    """us per call of each piece of PIECES under fn, by perf_counter wrappers (put back after). A
    module's function is wrapped where fa_ck's modules imported it by name too."""
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
        copies = [] if cls else [m for name, m in list(sys.modules.items())
                                 if name.startswith("fa_ck.") and m is not owner and vars(m).get(attr) is real]
        for place in (owner, *copies):
            setattr(place, attr, wrapper)
            undo.append((place, attr, real))
    try:
        for _ in range(5):
            fn()
        spent.clear()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        spent["total"] = time.perf_counter() - t0
    finally:
        for owner, attr, real in reversed(undo):
            setattr(owner, attr, real)
    return {label: round(spent[label] / n * 1e6, 1) for *_, label in PIECES + [(None, "total")] if label in spent}


def stub_launches():
    """The sm90 path on CPU tensors with launches stubbed, as tests/fake_sm90.py fakes it; with the
    fast path off, Triton's launcher (JITFunction.run) is stubbed too."""
    os.environ.pop("TRITON_INTERPRET", None)
    os.environ["FA_CK_POISON"] = "0"
    tb = importlib.import_module("fa_ck.backends.triton")
    device = importlib.import_module("fa_ck.backends.triton.device")
    keyed = importlib.import_module("fa_ck.backends.triton.fast_path.keyed")
    jit = importlib.import_module("triton.runtime.jit")
    device.INTERPRET = False
    device.arch = lambda dev: "cuda:sm90"
    device.sm_count = lambda dev: 132
    tb.available = lambda: (True, "")
    tb.unsupported = lambda q, k, v, p: None
    keyed.launch = lambda kernel, grid, args, constexprs, compiled=None: None
    jit.JITFunction.run = lambda self, *args, grid, warmup, **kwargs: None


@contextlib.contextmanager
def fast_path_set(setting: str):
    """FA_CK_FAST_PATH=setting inside (fa_ck reads it per call), as it was after."""
    before = os.environ.get("FA_CK_FAST_PATH")
    os.environ["FA_CK_FAST_PATH"] = setting
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("FA_CK_FAST_PATH", None)
        else:
            os.environ["FA_CK_FAST_PATH"] = before


def measure(fa_ck, shapes, passes: tuple, n: int, on_gpu: bool) -> list[dict]:
    """One row per shape and call: host and GPU us per call for each FA_CK_FAST_PATH setting in
    passes (the first's keys plain, fast path off's with "_off" when both are measured; cuDNN's once)."""
    import torch
    rows = []
    for b, s, hq, hkv, d, causal in shapes:
        q, k, v, do = _inputs(b, s, hq, hkv, d, "cuda" if on_gpu else "cpu", torch.bfloat16)
        for name, fn in _calls(fa_ck, q, k, v, do, causal, cudnn=on_gpu).items():
            row = dict(shape=f"B{b} S{s} H{hq}/{hkv} d{d} {'causal' if causal else 'full'}", call=name)
            for i, setting in enumerate(passes if name.startswith("fa_ck") else passes[:1]):
                with fast_path_set(setting):
                    host, gpu = host_and_gpu_us(fn, n, on_gpu)
                suffix = "_off" if i else ""
                row.update({f"host_us{suffix}": round(host, 1),
                            f"gpu_us{suffix}": None if gpu is None else round(gpu, 1),
                            f"host_bound{suffix}": None if gpu is None else host >= 0.9 * gpu})
            rows.append(row)
            print(row, flush=True)
    return rows


def markdown(env: dict, rows: list, pieces: dict, passes: tuple, n: int) -> str:
    both = len(passes) > 1
    cols = ["host us", "GPU us", "host-bound"]
    head = cols + [f"{c}, fast path off" for c in cols] + ["host off / on"] if both else cols
    lines = [f"# Host time per call: {env['device']}, {env['date']}", "", f"Command: `{env['command']}`", "",
             f"torch {env['torch']}, fast path {env['fast_path']}. Back to back, {n} calls per measurement; "
             "us per call.",
             "", "| shape | call | " + " | ".join(head) + " |", "|" + "---|" * (2 + len(head))]

    def cells(r, suffix):
        bound = r.get(f"host_bound{suffix}")
        return [str(r.get(f"host_us{suffix}", "-")), str(r.get(f"gpu_us{suffix}") or "-"),
                "-" if bound is None else "yes" if bound else "no"]
    for r in rows:
        ratio = f"{r['host_us_off'] / r['host_us']:.2f}x" if "host_us_off" in r else "-"
        row = cells(r, "") + (cells(r, "_off") + [ratio] if both else [])
        lines.append(f"| {r['shape']} | {r['call']} | " + " | ".join(row) + " |")
    names = list(pieces)
    lines += ["", f"## fa_ck at {rows[0]['shape']}: where the host time goes (each piece includes what it calls)",
              "", "| piece | " + " | ".join(f"{name}, us per call" for name in names) + " |",
              "|" + "---|" * (1 + len(names))]
    labels = [label for *_, label in PIECES + [(None, "total")] if any(label in p for p in pieces.values())]
    lines += [f"| {label} | " + " | ".join(str(pieces[name].get(label, "-")) for name in names) + " |"
              for label in labels]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stubbed", action="store_true", help="fa_ck's Python path alone, launches stubbed (any machine)")
    ap.add_argument("--n", type=int, default=200, help="calls per measurement")
    ap.add_argument("--fast-path", choices=sorted(FAST_PATH), default="on",
                    help="FA_CK_FAST_PATH for fa_ck's calls: on, off, or both side by side")
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
    passes = FAST_PATH[args.fast_path]
    shapes = SHAPES if on_gpu else SHAPES[:1]        # stubbed: the shape does not change the Python path
    rows = measure(fa_ck, shapes, passes, args.n, on_gpu)
    q, k, v, do = _inputs(*shapes[0][:5], "cuda" if on_gpu else "cpu", torch.bfloat16)
    calls = _calls(fa_ck, q, k, v, do, shapes[0][5], cudnn=False)
    pieces = {}
    for i, setting in enumerate(passes):
        with fast_path_set(setting):
            pieces.update({name + (", fast path off" if i else ""): breakdown(calls[name], args.n)
                           for name in ("fa_ck fwd", "fa_ck fwd+bwd")})
    print(pieces)
    gpu_name = torch.cuda.get_device_name() if on_gpu else "cpu-stubbed"
    out = args.out or default_out_dir("host", gpu_name if on_gpu else "cpu")
    out.mkdir(parents=True, exist_ok=True)
    env = dict(command="python bench/host.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               device=gpu_name, torch=torch.__version__, fast_path=args.fast_path,
               date=datetime.datetime.now().isoformat(timespec="seconds"))
    (out / "results.json").write_text(json.dumps(dict(env=env, rows=rows, breakdown=pieces), indent=1))
    (out / "results.md").write_text(markdown(env, rows, pieces, passes, args.n))
    print(f"wrote {out}/results.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
