"""Attention operator sweep: every backend present, in one run, against SDPA's cuDNN.

    python bench/kernels.py                        # full sweep, 8 min budget
    python bench/kernels.py --quick                # bf16, d64/d128, three seq lens, nanoGPT shape
    python bench/kernels.py --hdim 128 --dtype bf16 --mode fwd --backends fa_ck-triton sdpa-cudnn
    python bench/kernels.py --quick --backends fa_ck-triton fa_ck-triton-det sdpa-cudnn \
        --variant twopass='{"bwd_dkdv": {"ONE_PASS": false}}' --variant staged='{"bwd_dkdv": {"STAGE_P": true}}'

Shapes follow flash-attn's benchmark: batch*seq = 16k tokens, hidden = heads*head_dim =
2048, plus nanoGPT's 64 x 12 x 1024 x 64 causal. TFLOP/s in flash-attn's convention
(forward 4*B*H*Sq*Sk*D, halved when causal; forward+backward 3.5x that). Points run in
order of importance (bf16 d128 first) until --time-budget is spent; results are written
after every point, so a run cut short still leaves its JSON and markdown.

Every backend over the whole sweep takes ~14 min of measuring on an H200 with one timing per
point (FlexAttention compiles once per shape); the default 3 rounds add two more timings
each, so the default budget covers fewer points (bf16 d128 first): split the rest across
commands, e.g. `--dtype fp16 --out DIR/fp16`, or pass `--rounds 1`. A first run
with fa_ck-triton-autotune also pays its searches (cached on disk for later runs; the
time shows in each row's first_call_s).

Each point times every backend `--rounds` times (default 3), interleaved, and keeps the median
(`ms_rounds` in the JSON has them all): a single timing can be off by up to 2x at short points.

`--variant NAME=JSON` adds a backend fa_ck-triton-NAME: fa_ck-triton (autotune off) with
FA_CK_TRITON_CONFIG=JSON, {kernel: {key: value}} merged over the chosen config of the kernels
fwd, bwd_dkdv and bwd_dq; a NAME starting with "fp8" runs the fp8 path (as fa_ck-fp8) and is
left out of the bf16 targets (switches only fp8 calls take, P_REGS, Q_CONVERT and
FP8_DIAG_FIRST, need that prefix). fa_ck-triton-det is fa_ck-triton with deterministic=True (only on
request: it changes the backward alone, so its forward is skipped). The other fa_ck backends
run with FA_CK_TRITON_CONFIG cleared, so an exported value never shifts the baseline. fwd+bwd
rows also carry the relative errors of dq, dk and dv against the same float64 slice.

`--group N` makes every shape but nanoGPT's GQA: N q heads per kv head (H q heads, H / N kv
heads; points tagged gqa, outside the targets). fa_ck takes the kv heads as they are; the
other backends get k and v expanded to every q head outside the timed region (cuDNN's SDPA has
no GQA of its own), their dk / dv errors taken after summing each group's copies.

Targets (the "Targets" lines of results.md and stdout), for the best of fa_ck's bf16 Triton
backends per point: d128 S >= 4k forward >= 1.05x cuDNN, fwd+bwd >= 1.0x; nanoGPT's fwd+bwd
in <= 0.95x cuDNN's time; every point >= 0.9x.

Writes results.json, results.md and plots to --out (default ./fa_ck-results/kernels-<gpu>-<date>/).
Without a CUDA GPU it runs a tiny CPU smoke sweep that checks the pipeline, not speed.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import shlex
import signal
import sys
import time
from unittest import mock
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))     # run as a script: `bench` importable as a package
from bench.out_dir import default_out_dir  # noqa: E402

GPU_BACKENDS = ["fa_ck-triton", "fa_ck-triton-autotune", "fa_ck-fp8", "sdpa-cudnn", "sdpa-flash",
                "sdpa-efficient", "sdpa-default", "flex", "naive"]
CPU_BACKENDS = ["fa_ck-reference", "sdpa-default", "naive"]
# fa_ck-triton-det only on request: its forward is fa_ck-triton's, its backward a second timing
ALL_BACKENDS = [*GPU_BACKENDS[:2], "fa_ck-triton-det", *GPU_BACKENDS[2:], "fa_ck-reference"]
BASELINE = "sdpa-cudnn"
OURS = ("fa_ck-triton", "fa_ck-triton-autotune", "fa_ck-triton-det")
VARIANT_PREFIX = "fa_ck-triton-"   # --variant NAME=JSON runs as fa_ck-triton-NAME
FP8_ONLY_SWITCHES = {"P_REGS", "Q_CONVERT", "FP8_DIAG_FIRST"}   # fwd switches only fp8 calls take (configs.switches)

HEADS_FOR_HDIM = {64: 32, 128: 16, 256: 8}   # hidden 2048, as flash-attn's benchmark
TOKENS = 16 * 1024
SEQLENS = [512, 1024, 2048, 4096, 8192, 16384]
DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16"}
NAIVE_LIMIT_BYTES = 40e9   # naive keeps ~3 fp32 S x S tensors per head alive
# Errors after which the CUDA context is unusable: every later point would fail too.
FATAL_CUDA = ("illegal memory access", "unspecified launch failure", "device-side assert",
              "misaligned address", "illegal instruction")
# Rough cost of one measurement beyond do_bench's warmup+rep (setup, first call, flush).
OVERHEAD_S = 0.2
FLEX_COMPILE_S = 6.0       # per shape and mode (a guess, for the estimate only)
BUDGET_GRACE_S = 60.0      # a shape started within budget may run this long past it


class Stop(BaseException):
    """Time budget spent or SIGTERM: stop measuring, still write what we have."""


# ----------------------------------------------------------------------------- shapes, flops

@dataclass(frozen=True)
class Shape:
    dtype: str      # "bf16" / "fp16"
    D: int
    causal: bool
    S: int
    B: int
    H: int
    tag: str = ""   # "nanogpt" for the training shape, "gqa" for --group's
    group: int = 1  # q heads per kv head (GQA): H // group kv heads

    @property
    def name(self) -> str:
        c = "causal" if self.causal else "full"
        prefix = f"{self.tag} " if self.tag else ""
        kv = f"/{self.H // self.group}kv" if self.group > 1 else ""
        return f"{prefix}{self.dtype} d{self.D} S{self.S} {c} B{self.B}xH{self.H}{kv}"


def fwd_flops(B: int, H: int, Sq: int, Sk: int, D: int, causal: bool) -> float:
    """flash-attn's convention: two matmuls of 2*Sq*Sk*D each, halved when causal."""
    f = 4.0 * B * H * Sq * Sk * D
    return f / 2 if causal else f


def flops(shape: Shape, mode: str) -> float:
    f = fwd_flops(shape.B, shape.H, shape.S, shape.S, shape.D, shape.causal)
    return f * 3.5 if mode == "fwdbwd" else f   # backward = 2.5x forward (5 matmuls vs 2)


def tflops(flop: float, ms: float) -> float:
    return flop / (ms * 1e-3) / 1e12


def sweep_shapes(dtypes, hdims, seqlens, causals, nanogpt=True, tokens=TOKENS, heads=None, group=1) -> list[Shape]:
    """Most important first: bf16 before fp16, d128 then d64 then d256, nanoGPT after the
    first group, so a cut by the time budget loses the least. group > 1: GQA shapes (tag gqa;
    the nanoGPT shape stays as nanoGPT has it)."""
    heads = heads or HEADS_FOR_HDIM
    dtype_order = sorted(dtypes, key=lambda d: ["bf16", "fp16"].index(d))
    hdim_order = sorted(hdims, key=lambda d: ([128, 64, 256].index(d) if d in (128, 64, 256) else 3, d))
    shapes = []
    for dt in dtype_order:
        for d in hdim_order:
            for s in sorted(seqlens):
                for c in causals:
                    h = heads.get(d, 2048 // d)
                    if h % group:
                        raise ValueError(f"--group {group}: {h} q heads at head dim {d} are not a multiple of it")
                    shapes.append(Shape(dt, d, c, s, max(tokens // s, 1), h, "gqa" if group > 1 else "", group))
            if nanogpt and dt == dtype_order[0] and d == hdim_order[0] and 64 in hdims and True in causals:
                shapes.append(Shape(dt, 64, True, 1024, 64, 12, tag="nanogpt"))
    return shapes


def is_ours(name: str) -> bool:
    """Our Triton backends, --variant ones included (the fp8 ones too: see is_fp8)."""
    return name in OURS or (name.startswith(VARIANT_PREFIX) and name not in ALL_BACKENDS)


def is_fp8(name: str) -> bool:
    """fa_ck-fp8 and the --variant backends whose NAME starts with "fp8": not candidates for
    the targets, which are bf16 attention."""
    return name == "fa_ck-fp8" or name.startswith(VARIANT_PREFIX + "fp8")


def naive_bytes(shape: Shape) -> float:
    return shape.B * shape.H * shape.S * shape.S * 4 * 3


# ----------------------------------------------------------------------------- backends

class Backend:
    """One attention implementation. `__call__` takes SDPA's layout (B, H, S, D)."""
    name = ""

    def skip(self, shape: Shape, mode: str) -> str | None:
        return None

    def setup(self, shape: Shape, device) -> None:
        """Per-shape preparation outside the timed region (masks)."""

    def context(self):
        return contextlib.nullcontext()

    def __call__(self, q, k, v, causal: bool):
        raise NotImplementedError


class FaCk(Backend):
    def __init__(self, name, fa_ck, backend=None, autotune=None, fp8=False, config=None, deterministic=False):
        self.name, self.fa_ck, self.backend, self.autotune, self.fp8 = name, fa_ck, backend, autotune, fp8
        self.config, self.deterministic = config, deterministic

    def skip(self, shape, mode):
        if self.deterministic and mode == "fwd":
            return "deterministic changes the backward only: the forward is fa_ck-triton's"
        return None

    @contextlib.contextmanager
    def context(self):
        # fa_ck reads both at call time; set them for the whole measurement ("" = no overrides)
        with mock.patch.dict(os.environ, {"FA_CK_AUTOTUNE": "1" if self.autotune else "0",
                                          "FA_CK_TRITON_CONFIG": self.config or ""}):
            yield

    def __call__(self, q, k, v, causal):
        kw = {"causal": causal}
        if self.backend:
            kw["backend"] = self.backend
        if self.fp8:
            kw["fp8"] = True
        if self.deterministic:
            kw["deterministic"] = True
        return self.fa_ck.attention(q, k, v, **kw)


class Sdpa(Backend):
    def __init__(self, name, sdp_backend=None):
        self.name, self.sdp_backend = name, sdp_backend

    def context(self):
        if self.sdp_backend is None:
            return contextlib.nullcontext()
        from torch.nn.attention import sdpa_kernel
        return sdpa_kernel([self.sdp_backend])

    def __call__(self, q, k, v, causal):
        import torch.nn.functional as F
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _causal_mask_mod(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


class Flex(Backend):
    """FlexAttention compiled once (dynamic=False: one specialised kernel per shape, as a
    user would get). Each new shape recompiles, so dynamo's recompile limit (8 by
    default) is raised well past the sweep's size; a hit limit raises instead of falling
    back to the unfused path, whose time would pass for the kernel's."""
    name = "flex"

    def __init__(self, fp16_too: bool = False):
        self.fp16_too = fp16_too
        import torch
        import torch._dynamo
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        cfg = torch._dynamo.config
        for limit in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                      "accumulated_recompile_limit"):
            if hasattr(cfg, limit):
                setattr(cfg, limit, 100_000)
        if hasattr(cfg, "fail_on_recompile_limit_hit"):
            cfg.fail_on_recompile_limit_hit = True
        self.create_block_mask = create_block_mask
        self.compiled = torch.compile(flex_attention, dynamic=False)
        self.block_mask = None

    def skip(self, shape, mode):
        if shape.dtype == "fp16" and not self.fp16_too:
            return ("fp16 left out: bf16 points show FlexAttention's speed and each shape costs a compile "
                    "(name flex in --backends to run it)")
        return None

    def setup(self, shape, device):
        self.block_mask = None
        if shape.causal and self.skip(shape, "fwd") is None:
            self.block_mask = self.create_block_mask(_causal_mask_mod, None, None, shape.S, shape.S, device=device)

    def __call__(self, q, k, v, causal):
        return self.compiled(q, k, v, block_mask=self.block_mask)


class Naive(Backend):
    """Materialised softmax, as nanoGPT's non-flash path (softmax in fp32, as under autocast)."""
    name = "naive"

    def __init__(self):
        self.mask = None

    def skip(self, shape, mode):
        if naive_bytes(shape) > NAIVE_LIMIT_BYTES:
            return f"S x S scores need ~{naive_bytes(shape) / 1e9:.0f} GB > {NAIVE_LIMIT_BYTES / 1e9:.0f} GB"
        return None

    def setup(self, shape, device):
        import torch
        self.mask = None
        if shape.causal and self.skip(shape, "fwd") is None:
            self.mask = torch.ones(shape.S, shape.S, dtype=torch.bool, device=device).triu(1)

    def __call__(self, q, k, v, causal):
        import torch
        att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        if causal:
            att = att.masked_fill(self.mask, float("-inf"))
        att = torch.softmax(att, dim=-1, dtype=torch.float32).to(q.dtype)
        return att @ v


def _import_fa_ck():
    """(module, None) or (None, why). Falls back to the checkout's python/ when not installed."""
    try:
        try:
            import fa_ck
        except ImportError:
            sys.path.insert(0, str(REPO / "python"))
            import fa_ck
        if not hasattr(fa_ck, "attention"):
            return None, "fa_ck has no attention() yet"
        return fa_ck, None
    except Exception as e:
        return None, f"import fa_ck failed: {type(e).__name__}: {e}"


def make_backends(names: list[str], explicit: bool = False,
                  variants: dict[str, str] | None = None) -> tuple[list[Backend], dict[str, str]]:
    """The backends that can run here, and {name: why not} for the others. variants:
    {backend name: FA_CK_TRITON_CONFIG JSON}, each run after `names`."""
    variants = variants or {}
    names = [*names, *variants]
    from torch.nn.attention import SDPBackend
    sdpa = {"sdpa-cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa-flash": SDPBackend.FLASH_ATTENTION,
            "sdpa-efficient": SDPBackend.EFFICIENT_ATTENTION, "sdpa-default": None}
    fa_ck, fa_ck_missing = _import_fa_ck() if any(n.startswith("fa_ck") for n in names) else (None, None)
    backends, unavailable = [], {}
    for n in names:
        try:
            if n.startswith("fa_ck"):
                if fa_ck is None:
                    unavailable[n] = fa_ck_missing
                    continue
                backends.append(
                    FaCk(n, fa_ck, backend="triton", autotune=False) if n == "fa_ck-triton" else
                    FaCk(n, fa_ck, backend="triton", autotune=True) if n == "fa_ck-triton-autotune" else
                    FaCk(n, fa_ck, backend="triton", autotune=False, deterministic=True) if n == "fa_ck-triton-det" else
                    FaCk(n, fa_ck, backend="triton", autotune=False, config=variants[n], fp8=is_fp8(n))
                    if n in variants else
                    FaCk(n, fa_ck, fp8=True) if n == "fa_ck-fp8" else
                    FaCk(n, fa_ck, backend="reference"))
            elif n in sdpa:
                backends.append(Sdpa(n, sdpa[n]))
            elif n == "flex":
                backends.append(Flex(fp16_too=explicit))
            elif n == "naive":
                backends.append(Naive())
        except Exception as e:
            unavailable[n] = f"{type(e).__name__}: {e}"
    return backends, unavailable


# ----------------------------------------------------------------------------- measuring

def _ref_dtype(q):
    import torch
    return torch.float64 if q.shape[-2] <= 2048 else torch.float32


def _ref_attn(q, k, v, causal):
    import torch
    if k.shape[1] != q.shape[1]:     # GQA: each kv head serves q.shape[1] // k.shape[1] q heads
        k, v = (t.repeat_interleave(q.shape[1] // k.shape[1], dim=1) for t in (k, v))
    s = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
    if causal:  # bottom-right aligned; Sq == Sk here
        sq, sk = s.shape[-2:]
        s = s.masked_fill(torch.ones(sq, sk, dtype=torch.bool, device=s.device).triu(sk - sq + 1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def reference_out(q, k, v, causal):
    """float64/float32 softmax(q k^T / sqrt(d)) v on the given (small) slice."""
    acc = _ref_dtype(q)
    return _ref_attn(q.to(acc), k.to(acc), v.to(acc), causal).float()


def reference_grads(q, k, v, g, causal):
    """(dq, dk, dv) of the same reference for output grad g, all slices alike. Batches and
    heads are independent, so the slice's grads are the slices of the full grads."""
    import torch
    acc = _ref_dtype(q)
    q, k, v = (t.detach().to(acc).requires_grad_() for t in (q, k, v))
    with torch.enable_grad():
        out = _ref_attn(q, k, v, causal)
        return tuple(t.float() for t in torch.autograd.grad(out, (q, k, v), g.to(acc)))


def _ref_slice(t, heads: int = 2):
    return t.detach()[:1, :heads]   # batch 0, two heads: cheap, and enough to catch a wrong kernel


def ref_heads(shape: Shape) -> tuple[int, int]:
    """(q heads, kv heads) of the reference slice: two heads, or under GQA one kv head and all
    its q heads (its dk and dv sum over every one of them)."""
    return (2, 2) if shape.group == 1 else (shape.group, 1)


def rel_err(out, ref) -> float:
    """||out - ref|| / ||ref|| over the reference's slice (batch 0, its heads)."""
    o = _ref_slice(out, ref.shape[1]).float()
    return float((o - ref).norm() / ref.norm().clamp_min(1e-30))


def _timer(on_gpu: bool, warmup: int, rep: int):
    if on_gpu:
        from triton.testing import do_bench   # same signature in triton 3.6 and 3.7

        return lambda fn: float(do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))

    def cpu_median_ms(fn):
        times, t_end = [], time.perf_counter() + rep / 1000
        while len(times) < 3 or (time.perf_counter() < t_end and len(times) < 50):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return sorted(times)[len(times) // 2]
    return cpu_median_ms


def _sync(device):
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize()


def measure(backend: Backend, shape: Shape, mode: str, inputs, ref, timer, device, ref_grads=None,
            again: list | None = None) -> dict:
    """ref: reference_out on the slice; ref_grads: reference_grads there, for fwd+bwd errors.
    again: a measured row is appended as (row, backend, fn) for more_rounds()."""
    import torch
    row = dict(point=shape.name, tag=shape.tag, dtype=shape.dtype, D=shape.D, H=shape.H, B=shape.B,
               S=shape.S, causal=shape.causal, mode=mode, backend=backend.name)
    reason = backend.skip(shape, mode)
    if reason:
        row["skipped"] = reason
        return row
    q, k, v, g = inputs
    expanded = shape.group > 1 and not isinstance(backend, FaCk)
    if expanded:   # k and v for every q head, made outside the timed region
        k, v = (t.detach().repeat_interleave(shape.group, dim=1).requires_grad_() for t in (k, v))

    if mode == "fwd":
        def fn():
            with torch.no_grad():
                return backend(q, k, v, shape.causal), None
    else:
        def fn():  # forward + backward with a fixed random grad; autograd.grad leaves .grad alone
            out = backend(q, k, v, shape.causal)
            return out, torch.autograd.grad(out, (q, k, v), g)

    try:
        with backend.context():
            t0 = time.perf_counter()
            out, grads = fn()       # compiles / autotunes: not timed, reported
            _sync(device)
            row["first_call_s"] = round(time.perf_counter() - t0, 3)
            row["rel_err"] = rel_err(out, ref)
            if grads is not None and ref_grads is not None:
                if expanded:   # each kv head's gradient: the sum over its copies
                    grads = (grads[0], *(t.unflatten(1, (-1, shape.group)).sum(2) for t in grads[1:]))
                for name, got, want in zip(("dq", "dk", "dv"), grads, ref_grads):
                    row[f"rel_err_{name}"] = rel_err(got, want)
            del out, grads
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
                fn()
                _sync(device)
                row["peak_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 3)
            ms = timer(fn)
        row["ms_rounds"] = [round(ms, 4)]
        _set_time(row, shape, mode)
        if again is not None:
            again.append((row, backend, fn))
    except Exception as e:
        msg = f"{type(e).__name__}: {e}".strip().splitlines()
        msg = " ".join(msg)[:300]
        unsupported = isinstance(e, NotImplementedError) or (is_fp8(backend.name) and isinstance(e, TypeError))
        row["skipped" if unsupported else "error"] = msg
        if any(f in msg for f in FATAL_CUDA):
            row["fatal"] = True
    if device.type == "cuda" and row.get("error") and not row.get("fatal"):
        torch.cuda.empty_cache()   # after the except block: its traceback no longer pins the tensors
    return row


def _set_time(row: dict, shape: Shape, mode: str) -> None:
    """ms = the median of the row's rounds (the lower middle one for an even count), and its TFLOP/s."""
    rounds = sorted(row["ms_rounds"])
    row["ms"] = rounds[(len(rounds) - 1) // 2]
    row["tflops"] = float(f"{tflops(flops(shape, mode), row['ms']):.4g}")


def more_rounds(again: list, shape: Shape, rounds: int, timer, out_of_time) -> None:
    """Time every measured (row, backend, fn) of a point rounds - 1 more times, all backends once
    per round: a drift of the GPU (clocks, a neighbour) then hits every backend alike instead of
    the one timed during it."""
    for _ in range(rounds - 1):
        for row, backend, fn in again:
            if out_of_time():
                return
            try:
                with backend.context():
                    row["ms_rounds"].append(round(timer(fn), 4))
            except Exception as e:   # keep the rounds already timed; say why the others are missing
                row["round_error"] = f"{type(e).__name__}: {e}"[:300]
                continue
            _set_time(row, shape, row["mode"])


def estimate_seconds(runs, warmup_ms: int, rep_ms: int, rounds: int = 1) -> float:
    """Rough wall time of the measurements [(backend, shape, mode)], compiles excluded
    except FlexAttention's (one per shape and mode)."""
    per = (warmup_ms + rep_ms) / 1000 * rounds + OVERHEAD_S
    return sum(per + (FLEX_COMPILE_S if b.name == "flex" else 0.0) for b, _, _ in runs)


def make_inputs(shape: Shape, device):
    import torch
    torch.manual_seed(0)
    dtype = getattr(torch, DTYPE_NAMES[shape.dtype])
    qkv = [torch.randn(shape.B, h, shape.S, shape.D, dtype=dtype, device=device, requires_grad=True)
           for h in (shape.H, shape.H // shape.group, shape.H // shape.group)]
    g = torch.randn(shape.B, shape.H, shape.S, shape.D, dtype=dtype, device=device)
    return (*qkv, g)


# ----------------------------------------------------------------------------- reporting

def add_ratios(rows: list[dict]) -> None:
    """ratio_cudnn = this backend's TFLOP/s over cuDNN's at the same point and mode (>1 faster)."""
    base = {(r["point"], r["mode"]): r["tflops"] for r in rows if r["backend"] == BASELINE and r.get("tflops")}
    for r in rows:
        b = base.get((r["point"], r["mode"]))
        r["ratio_cudnn"] = round(r["tflops"] / b, 3) if b and r.get("tflops") is not None else None


def _cell(r: dict | None) -> str:
    if r is None:
        return ""
    if r.get("error"):
        return "err"
    if r.get("skipped"):
        return "skip"
    if r.get("tflops") is None:
        return ""
    if r["backend"] == BASELINE or r.get("ratio_cudnn") is None:
        return f"{r['tflops']:.1f}"
    return f"{r['tflops']:.1f} ({r['ratio_cudnn']:.2f}x)"


def _backends_in(rows):
    seen = list(dict.fromkeys(r["backend"] for r in rows))
    known = [b for b in ALL_BACKENDS if b in seen]
    variants = [b for b in seen if b not in ALL_BACKENDS and is_ours(b)]
    # variant columns right after our other Triton ones, so they sit next to what they vary
    i = max((j + 1 for j, b in enumerate(known) if is_ours(b)), default=0)
    return known[:i] + variants + known[i:] + [b for b in seen if b not in ALL_BACKENDS and not is_ours(b)]


def _points_in(rows):
    return list(dict.fromkeys(r["point"] for r in rows))


def markdown_table(rows: list[dict], mode: str, value=_cell) -> str:
    rows = [r for r in rows if r["mode"] == mode]
    backends = _backends_in(rows)
    by = {(r["point"], r["backend"]): r for r in rows}
    lines = ["| point | " + " | ".join(backends) + " |", "|---" * (len(backends) + 1) + "|"]
    for p in _points_in(rows):
        lines.append(f"| {p} | " + " | ".join(value(by.get((p, b))) for b in backends) + " |")
    return "\n".join(lines)


def target_lines(rows: list[dict]) -> list[str]:
    """The targets (module docstring), for the best of fa_ck's bf16 Triton backends (autotune off or on,
    deterministic, --variant ones but fp8) per point; each line names the backend of its worst point."""
    best = {}
    for r in rows:
        if is_ours(r["backend"]) and not is_fp8(r["backend"]) and r.get("ratio_cudnn"):
            k = (r["point"], r["mode"])
            if k not in best or r["ratio_cudnn"] > best[k]["ratio_cudnn"]:
                best[k] = r
    if not best:
        return ["targets: no fa_ck triton point with a cuDNN ratio in this run"]
    out = []

    def report(label, sel, goal):
        got = [r for r in best.values() if sel(r)]
        if not got:
            return out.append(f"- {label}: not measured")
        worst = min(got, key=lambda r: r["ratio_cudnn"])
        ok = "met" if worst["ratio_cudnn"] >= goal else f"MISSED by {goal - worst['ratio_cudnn']:.3f}"
        out.append(f"- {label}: min {worst['ratio_cudnn']:.3f}x (goal {goal}x, {ok}; worst: "
                   f"{worst['point']} {worst['mode']} {worst['backend']})")

    main = lambda r: r["dtype"] == "bf16" and r["D"] == 128 and r["S"] >= 4096 and not r["tag"]  # noqa: E731
    report("bf16 d128 S>=4k forward", lambda r: main(r) and r["mode"] == "fwd", 1.05)
    report("bf16 d128 S>=4k fwd+bwd", lambda r: main(r) and r["mode"] == "fwdbwd", 1.0)
    # time <= 0.95x cuDNN's  <=>  speed ratio >= 1/0.95
    report("nanoGPT fwd+bwd (time <= 0.95x cuDNN)", lambda r: r["tag"] == "nanogpt" and r["mode"] == "fwdbwd",
           round(1 / 0.95, 3))
    report("every point", lambda r: r["tag"] != "gqa", 0.9)
    return out


def notes(rows: list[dict]) -> list[str]:
    """Each distinct error / skip reason once per backend, with how many points it hit."""
    seen: dict[tuple, int] = {}
    for r in rows:
        for kind in ("error", "skipped"):
            if r.get(kind):
                seen[(r["backend"], kind, r[kind])] = seen.get((r["backend"], kind, r[kind]), 0) + 1
    return [f"- {b} {kind} ({n} points): {msg}" for (b, kind, msg), n in seen.items()]


def grad_err(r: dict | None) -> str:
    """The worst of a row's dq/dk/dv errors, and which one it is."""
    errs = {n: r.get(f"rel_err_{n}") for n in ("dq", "dk", "dv")} if r else {}
    errs = {n: e for n, e in errs.items() if e is not None}
    if not errs:
        return ""
    name = max(errs, key=errs.get)
    return f"{errs[name]:.1e} ({name})"


def write_markdown(path: Path, rows: list[dict], env: dict) -> None:
    parts = [f"# Attention kernels: {env.get('gpu', '?')}, {env.get('date', '')}", "",
             f"Command: `{env.get('command', '')}`", "",
             "Versions: " + ", ".join(f"{k} {env.get(k)}" for k in ("torch", "triton", "cuda", "cudnn", "fa_ck")), "",
             "TFLOP/s (flash-attn convention: fwd 4*B*H*S*S*D, halved when causal; fwd+bwd 3.5x), "
             f"ratio to {BASELINE} in parentheses.", ""]
    if env.get("note"):
        parts += [f"**{env['note']}**", ""]
    if env.get("autograd_threads") == "off":
        parts += ["**Autograd multithreading off** (`torch.autograd.set_multithreading_enabled(False)`): every "
                  "backend's backward ran on the calling thread.", ""]
    if env.get("variants"):
        parts += ["Variants (FA_CK_TRITON_CONFIG over fa_ck-triton): "
                  + ", ".join(f"{VARIANT_PREFIX}{n} = `{cfg}`" for n, cfg in env["variants"].items()), ""]
    parts += ["## Targets", "", *target_lines(rows), ""]
    mem = lambda r: "" if r is None or r.get("peak_gb") is None else f"{r['peak_gb']:.2f}"  # noqa: E731
    err = lambda r: "" if r is None or r.get("rel_err") is None else f"{r['rel_err']:.1e}"  # noqa: E731
    for mode, title in (("fwd", "Forward"), ("fwdbwd", "Forward + backward")):
        if any(r["mode"] == mode for r in rows):
            parts += [f"## {title}: TFLOP/s", "", markdown_table(rows, mode), ""]
            if any(r.get("peak_gb") is not None for r in rows):
                parts += [f"## {title}: peak memory (GB)", "", markdown_table(rows, mode, mem), ""]
    if any(r.get("rel_err") is not None for r in rows):
        mode = "fwd" if any(r["mode"] == "fwd" for r in rows) else "fwdbwd"
        parts += ["## Forward relative error ||out - ref|| / ||ref|| (batch 0, heads 0-1, fp32/fp64 ref)", "",
                  markdown_table(rows, mode, err), ""]
    if any(r.get("rel_err_dq") is not None for r in rows):
        parts += ["## Gradient relative error, worst of dq, dk, dv (fwd+bwd rows, same slice and ref)", "",
                  markdown_table(rows, "fwdbwd", grad_err), ""]
    if env.get("unavailable"):
        parts += ["## Backends not run", ""] + [f"- {b}: {why}" for b, why in env["unavailable"].items()] + [""]
    if env.get("not_measured"):
        parts += ["## Points not measured", "", f"{len(env['not_measured'])} points (time budget or stop): "
                  + ", ".join(env["not_measured"]), ""]
    if notes(rows):
        parts += ["## Errors and skips", ""] + notes(rows) + [""]
    path.write_text("\n".join(parts))


def write_json(path: Path, rows: list[dict], env: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"env": env, "points": rows}, indent=1))
    os.replace(tmp, path)   # a kill mid-write never leaves half a file


def write_plots(out_dir: Path, rows: list[dict]) -> list[Path]:
    """One PNG per (dtype, mode): a panel per head dim x causal, TFLOP/s vs seq len, a line per backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r.get("tflops") is not None and not r["tag"]]
    written = []
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        for mode in ("fwd", "fwdbwd"):
            sel = [r for r in rows if r["dtype"] == dtype and r["mode"] == mode]
            if not sel:
                continue
            hdims = sorted({r["D"] for r in sel})
            causals = sorted({r["causal"] for r in sel})
            fig, axes = plt.subplots(len(hdims), len(causals), squeeze=False, sharex=True,
                                     figsize=(5.5 * len(causals), 3.6 * len(hdims)))
            for i, d in enumerate(hdims):
                for j, c in enumerate(causals):
                    ax = axes[i][j]
                    for b in _backends_in(sel):
                        pts = sorted((r["S"], r["tflops"]) for r in sel if r["D"] == d and r["causal"] == c
                                     and r["backend"] == b)
                        if pts:
                            ax.plot(*zip(*pts), marker="o", label=b, lw=2.5 if is_ours(b) or b == BASELINE else 1.2)
                    ax.set_xscale("log", base=2)
                    ax.set_title(f"d{d} {'causal' if c else 'non-causal'}")
                    ax.set_xlabel("seq len")
                    ax.set_ylabel("TFLOP/s")
                    ax.grid(alpha=0.3)
            axes[0][-1].legend(fontsize=7)
            fig.suptitle(f"{dtype} {'forward' if mode == 'fwd' else 'forward + backward'}")
            fig.tight_layout()
            p = out_dir / f"tflops-{dtype}-{mode}.png"
            fig.savefig(p, dpi=110)
            plt.close(fig)
            written.append(p)
    return written


SHORT_NAMES = {"fa_ck-triton": "triton", "fa_ck-triton-autotune": "tri-at", "fa_ck-triton-det": "tri-dt",
               "fa_ck-fp8": "fp8",
               "sdpa-cudnn": "cudnn", "sdpa-flash": "flash", "sdpa-efficient": "effic",
               "sdpa-default": "sdpa", "flex": "flex", "naive": "naive", "fa_ck-reference": "ref"}
SUMMARY_BACKENDS = [BASELINE, *OURS, "fa_ck-fp8", "sdpa-flash", "flex"]


def short_name(b: str) -> str:
    """A column head of at most 6 characters; a variant goes by its NAME."""
    return SHORT_NAMES.get(b, b[len(VARIANT_PREFIX):] if is_ours(b) else b)[:6]


def summary(rows: list[dict]) -> str:
    """A short stdout table, one line per point and mode: cuDNN's TFLOP/s and the others'
    ratio to it (TFLOP/s where cuDNN wasn't measured). Kept narrow: the full tables are in
    results.md."""
    present = _backends_in(rows)
    cols = [b for b in present if b in SUMMARY_BACKENDS or is_ours(b)]
    cols = sorted(cols, key=lambda b: b != BASELINE) or present   # cuDNN first, the rest in table order
    by = {(r["point"], r["mode"], r["backend"]): r for r in rows}

    def cell(r):
        if r is None:
            return "-"
        if r.get("error") or r.get("skipped"):
            return "err" if r.get("error") else "skip"
        if r.get("ratio_cudnn") is not None and r["backend"] != BASELINE:
            return f"{r['ratio_cudnn']:.2f}x"
        return "-" if r.get("tflops") is None else f"{r['tflops']:.3g}"

    short = lambda p: re.sub(r" B\d+xH\d+$", "", p)  # noqa: E731  (batch and heads follow from d and S)
    width = max([len(short(p)) for p in _points_in(rows)] + [5])
    lines = [f"{'point':<{width}} {'mode':<6} " + " ".join(f"{short_name(b):>6}" for b in cols)]
    for p in _points_in(rows):
        for mode in ("fwd", "fwdbwd"):
            if any(r["point"] == p and r["mode"] == mode for r in rows):
                lines.append(f"{short(p):<{width}} {mode:<6} "
                             + " ".join(f"{cell(by.get((p, mode, b))):>6}" for b in cols))
    return "\n".join(lines)


def collect_env(argv, device) -> dict:
    import torch
    env = {"command": "python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *argv]),
           "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
           "python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "hip": torch.version.hip, "host": platform.node()}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:
        env["triton"] = None
    fa_ck, _ = _import_fa_ck()
    env["fa_ck"] = getattr(fa_ck, "__version__", None) if fa_ck else None
    env["fa_ck_cache_dir"] = os.environ.get("FA_CK_CACHE_DIR", "~/.cache/fa_ck")
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        env.update(gpu=torch.cuda.get_device_name(device), sm_count=p.multi_processor_count,
                   gpu_mem_gb=round(p.total_memory / 1e9, 1), cudnn=torch.backends.cudnn.version())
    else:
        env.update(gpu="cpu", cudnn=None)
    return env


# ----------------------------------------------------------------------------- main

def _variant(text: str) -> tuple[str, str]:
    """--variant NAME=JSON -> (backend name, JSON), checked before anything runs."""
    name, sep, cfg = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise argparse.ArgumentTypeError(f"expected NAME=JSON with NAME of letters, digits, '-', '_'; got {text!r}")
    if VARIANT_PREFIX + name in ALL_BACKENDS:
        raise argparse.ArgumentTypeError(f"variant name {name!r} would shadow the backend {VARIANT_PREFIX + name}")
    try:
        table = json.loads(cfg)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"variant {name!r}: JSON does not parse ({e}): {cfg!r}") from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise argparse.ArgumentTypeError(f"variant {name!r}: JSON must be an object {{kernel: {{key: value}}}}, "
                                         f"got {cfg!r}")
    # switches that only fp8 calls have: under a name without the prefix they would run on bf16 calls,
    # which ignore them, and the variant would time bf16 under an fp8 switch's name
    only_fp8 = sorted(set(table.get("fwd", {})) & FP8_ONLY_SWITCHES)
    if only_fp8 and not name.startswith("fp8"):
        raise argparse.ArgumentTypeError(f"variant {name!r}: {', '.join(only_fp8)} only acts on fp8 calls; name the "
                                         f"variant fp8... (e.g. fp8{name}) so that it runs the fp8 path")
    # kernel and key names are fa_ck's to check (configs.overrides): a bad one errors each row at once
    return VARIANT_PREFIX + name, json.dumps(table)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--dtype", nargs="+", choices=sorted(DTYPE_NAMES), default=["bf16", "fp16"])
    ap.add_argument("--hdim", nargs="+", type=int, default=[64, 128, 256])
    ap.add_argument("--seqlens", nargs="+", type=int, default=SEQLENS)
    ap.add_argument("--causal", choices=["off", "on", "both"], default="both")
    ap.add_argument("--mode", choices=["fwd", "fwdbwd", "both"], default="both")
    ap.add_argument("--backends", nargs="+", choices=ALL_BACKENDS, default=None, metavar="NAME",
                    help=f"any of {' '.join(ALL_BACKENDS)}; default on GPU: {' '.join(GPU_BACKENDS)}; "
                         f"on CPU: {' '.join(CPU_BACKENDS)}")
    ap.add_argument("--variant", type=_variant, action="append", default=[], metavar="NAME=JSON",
                    help="repeatable: also run fa_ck-triton-NAME, fa_ck-triton (autotune off) with "
                         "FA_CK_TRITON_CONFIG=JSON, e.g. twopass='{\"bwd_dkdv\": {\"ONE_PASS\": false}}'")
    ap.add_argument("--no-nanogpt", action="store_true", help="leave out the 64x12x1024x64 causal shape")
    ap.add_argument("--group", type=int, default=1,
                    help="q heads per kv head (GQA) for every shape but nanoGPT's; default 1")
    ap.add_argument("--quick", action="store_true", help="bf16, d64 and d128, S 1k/4k/16k, nanoGPT shape")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory (default ./fa_ck-results/kernels-<gpu or cpu>-<date>/)")
    ap.add_argument("--time-budget", type=float, default=480.0,
                    help="seconds; stop starting new measurements after this, still write results (default 480)")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warmup, ms")
    ap.add_argument("--rep", type=int, default=100, help="do_bench rep, ms")
    ap.add_argument("--autograd-threads", choices=["on", "off"], default="on",
                    help="off: torch.autograd.set_multithreading_enabled(False) for the whole sweep, every "
                         "backend's backward on the calling thread (advised for short single-GPU steps: "
                         "docs/performance.md, Host time per call)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="time every backend this many times per point, interleaved, and keep the median "
                         "(default 3; 1 = a single timing each)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.group < 1:
        ap.error(f"--group must be at least 1, got {args.group}")
    names = [n for n, _ in args.variant]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        ap.error(f"--variant: name given twice: {', '.join(dup)}")
    args.variants = dict(args.variant)
    if args.quick:
        args.dtype, args.hdim, args.seqlens = ["bf16"], [h for h in args.hdim if h in (64, 128)] or [128], [1024, 4096, 16384]
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    import torch
    with torch.autograd.set_multithreading_enabled(args.autograd_threads == "on"):   # (restored after)
        return _sweep(args, argv)


def _sweep(args, argv) -> int:
    import torch

    on_gpu = torch.cuda.is_available()
    device = torch.device("cuda" if on_gpu else "cpu")
    causals = {"off": [False], "on": [True], "both": [False, True]}[args.causal]
    modes = ["fwd", "fwdbwd"] if args.mode == "both" else [args.mode]
    if on_gpu:
        shapes = sweep_shapes(args.dtype, args.hdim, args.seqlens, causals, nanogpt=not args.no_nanogpt,
                              group=args.group)
        names = args.backends or GPU_BACKENDS
    else:
        print("note: no CUDA GPU: tiny CPU smoke sweep (reference/sdpa/naive) to check the pipeline; "
              "its numbers say nothing about kernel speed")
        shapes = sweep_shapes(args.dtype[:1], [64], [128, 256], causals, nanogpt=False, tokens=512,
                              heads={64: 2 * args.group}, group=args.group)
        names = [n for n in (args.backends or CPU_BACKENDS) if n in CPU_BACKENDS]
        gpu_only = list(args.backends or []) + list(args.variants)
        args.variants = {}
        args.rep = min(args.rep, 50)

    env = collect_env(argv, device)
    if not on_gpu:
        env["note"] = "CPU smoke run: numbers are not kernel speed"
    env["variants"] = {n[len(VARIANT_PREFIX):]: cfg for n, cfg in args.variants.items()}
    env["autograd_threads"] = args.autograd_threads
    if os.environ.get("FA_CK_TRITON_CONFIG", "").strip():
        print("note: FA_CK_TRITON_CONFIG is set but cleared for the fa_ck backends; use --variant to measure it")
    out_dir = args.out or default_out_dir("kernels", env["gpu"])
    out_dir.mkdir(parents=True, exist_ok=True)

    backends, unavailable = make_backends(names, explicit=args.backends is not None, variants=args.variants)
    if not on_gpu:
        unavailable.update({n: "CPU smoke run: GPU backends left out" for n in gpu_only if n not in CPU_BACKENDS})
    env["backends"] = [b.name for b in backends]
    env["unavailable"] = unavailable
    for b, why in unavailable.items():
        print(f"not running {b}: {why}")
    runs = [(b, s, m) for s in shapes for b in backends for m in modes if b.skip(s, m) is None]
    n_meas = len(runs)
    est = estimate_seconds(runs, args.warmup, args.rep, args.rounds)
    print(f"{len(shapes)} shapes x {len(modes)} modes x {len(backends)} backends: {n_meas} measurements; "
          f"estimated ~{est / 60:.1f} min (+ Triton compiles and autotune searches not yet cached); "
          f"budget {args.time_budget:.0f} s, most important points first; results in {out_dir}")

    def on_sigterm(signum, frame):
        raise Stop("SIGTERM")
    old_handler = signal.signal(signal.SIGTERM, on_sigterm)
    timer = _timer(on_gpu, args.warmup, args.rep)
    rows, not_measured = [], []
    t_start = time.perf_counter()

    def save():
        add_ratios(rows)
        env["not_measured"] = not_measured
        env["elapsed_s"] = round(time.perf_counter() - t_start, 1)
        write_json(out_dir / "results.json", rows, env)
        write_markdown(out_dir / "results.md", rows, env)

    try:
        for i, shape in enumerate(shapes):
            if time.perf_counter() - t_start > args.time_budget:
                not_measured.extend(s.name for s in shapes[i:])
                print(f"time budget spent: {len(shapes) - i} shapes not measured")
                break
            inputs = make_inputs(shape, device)
            hq, hkv = ref_heads(shape)
            sliced = [_ref_slice(t, h) for t, h in zip(inputs, (hq, hkv, hkv, hq))]
            ref = reference_out(*sliced[:3], shape.causal)
            ref_grads = reference_grads(*sliced, shape.causal) if "fwdbwd" in modes else None
            fatal = False
            again = []                       # measured rows, for the later rounds
            for b in backends:
                try:
                    b.setup(shape, device)
                except Exception as e:
                    rows.extend(dict(point=shape.name, tag=shape.tag, dtype=shape.dtype, D=shape.D, H=shape.H,
                                     B=shape.B, S=shape.S, causal=shape.causal, mode=m, backend=b.name,
                                     error=f"setup: {type(e).__name__}: {e}"[:300]) for m in modes)
                    continue
                for mode in modes:
                    if time.perf_counter() - t_start > args.time_budget + BUDGET_GRACE_S:
                        raise Stop("time budget spent mid-shape")
                    row = measure(b, shape, mode, inputs, ref, timer, device, ref_grads, again)
                    rows.append(row)
                    fatal = fatal or row.get("fatal", False)
                    if fatal:
                        break
                if fatal:
                    break
            if not fatal:
                more_rounds(again, shape, args.rounds, timer,
                            lambda: time.perf_counter() - t_start > args.time_budget + BUDGET_GRACE_S)
            del again
            add_ratios(rows)
            here = {(r["backend"], r["mode"]): r for r in rows if r["point"] == shape.name}
            shown = [n for n in env["backends"] if n == BASELINE] + [n for n in env["backends"] if is_ours(n)]
            shown = shown or env["backends"]
            brief = "  ".join(f"{m}: " + ", ".join(f"{short_name(n)} {_cell(here.get((n, m))) or '-'}"
                                                   for n in shown) for m in modes)
            print(f"[{i + 1}/{len(shapes)} {time.perf_counter() - t_start:.0f}s] {shape.name}  {brief}", flush=True)
            del inputs, ref, ref_grads
            if on_gpu:
                torch.cuda.empty_cache()
            save()
            if fatal:
                not_measured.extend(s.name for s in shapes[i + 1:])
                print("fatal CUDA error: the context is unusable, stopping (see results.md)")
                break
    except (Stop, KeyboardInterrupt) as e:
        print(f"stopped ({type(e).__name__}: {e}); writing what was measured")
        done = {r["point"] for r in rows}
        not_measured.extend(s.name for s in shapes if s.name not in done)
    finally:
        signal.signal(signal.SIGTERM, old_handler)
    save()
    try:
        plots = write_plots(out_dir, rows)
    except Exception as e:  # plots are a convenience; the data is already written
        plots = []
        print(f"plots failed: {type(e).__name__}: {e}")
    print()
    print(summary(rows))
    print()
    print("\n".join(target_lines(rows)))
    n_err = sum(1 for r in rows if r.get("error"))
    print(f"\n{len(rows)} rows ({n_err} errors, {sum(1 for r in rows if r.get('skipped'))} skipped), "
          f"{len(not_measured)} points not measured, {time.perf_counter() - t_start:.0f} s; wrote "
          f"{out_dir / 'results.json'}, {out_dir / 'results.md'}" + "".join(f", {p.name}" for p in plots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
