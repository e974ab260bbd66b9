#!/usr/bin/env python
"""Decode-step latency and K/V bandwidth: fa_ck.flash_attn_with_kvcache beside SDPA's backends,
FlexAttention and the device's copy bandwidth, on dense and paged KV caches.

    python bench/decode.py                    # every point, on a GPU (about 5 minutes on an H200)
    python bench/decode.py --quick            # six points
    python bench/decode.py --splits 1 8 32    # fa_ck with forced key splits too, beside its own choice
    python bench/decode.py --cpu              # tiny shapes, fa_ck's Triton kernels in the interpreter

A point is one decode step (Sq 1; Hq 32, Hk 8, d128, bf16 on a GPU) of B rows, each seeing all L keys
of its cache: dense (B, L, Hk, D), or paged (pages of P keys, a random block table). The dense and
paged views share one buffer, so they read the same bytes. Every variant's output on rows 0 and B-1
is compared with fa_ck.reference in float64 first: a wrong variant is reported, not timed. Then its
GPU time per call: a CUDA graph of the call replayed after an L2 flush, the median of the replays
(eager calls where the graph cannot be captured, and the row says so).

Variants: fa_ck (backend auto; --splits adds forced num_splits); SDPA under each of its backends on
the dense cache (enable_gqa=True where the backend takes it, else keys and values repeated to Hq
heads, and the row says which); FlexAttention compiled (dense: no block mask; paged: a block mask
whose blocks are the pages the block table lists, with the matching mask_mod); and a large
device-to-device copy, bytes read + written over its time: the roofline.

Bytes per step: sum over rows of visible keys x Hk x D x 2 (K and V) x element size.
Writes results.json, results.md and decode.png under --out (default
./fa_ck-results/decode-<gpu or cpu>-<date>/).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))     # run as a script: `bench` importable as a package
from bench.out_dir import default_out_dir  # noqa: E402

BATCHES, LENGTHS, PAGES = (1, 8, 64), (1024, 8192, 32768, 131072), (16, 64, 256)
CPU_BATCHES, CPU_LENGTHS, CPU_PAGES = (1, 3), (48,), (16,)
SDPA_BACKENDS = ("cudnn", "flash", "efficient", "math")
TOLERANCE = 2e-2              # ||out - ref|| / ||ref||: bf16 operands land 1e-3..1e-2 against float64
TARGET_COPY, TARGET_SDPA, TARGET_PAGED = 0.85, 1.2, 1.05
FLUSH_BYTES = 256 << 20       # zeroed before each timed call: larger than any Hopper L2
COPY_BYTES = 1 << 30          # the roofline's copy: far past L2


@dataclass(frozen=True)
class Shape:
    heads_q: int
    heads_kv: int
    head_dim: int
    dtype_name: str           # "bf16" (the decode kernels take fp16 and bf16)


GPU_SHAPE, CPU_SHAPE = Shape(32, 8, 128, "bf16"), Shape(4, 2, 32, "bf16")


@dataclass(frozen=True)
class Point:
    batch: int
    cache_len: int
    page: int                 # 0: a dense cache

    @property
    def label(self) -> str:
        length = f"{self.cache_len // 1024}k" if self.cache_len % 1024 == 0 else str(self.cache_len)
        return f"B{self.batch} L{length} " + (f"page {self.page}" if self.page else "dense")

    @property
    def copy_target(self) -> bool:
        """Where the issue asks for 85 % of the copy bandwidth: B64 from 8k keys, B1 at 128k."""
        return (self.batch == 64 and self.cache_len >= 8192) or (self.batch == 1 and self.cache_len >= 131072)


@dataclass
class Row:
    point: Point
    variant: str
    status: str = "pending"   # ok, wrong (not timed), skipped, failed
    us: float | None = None
    gbps: float | None = None
    pct_copy: float | None = None
    x_best_sdpa: float | None = None
    paged_over_dense: float | None = None
    error: float | None = None
    note: str = ""
    targets: dict = field(default_factory=dict)
    wall_s: float = 0.0       # set-up, check and timing (compilation included)
    repeats_us: list = field(default_factory=list)   # each timing's median, in order (--repeat of them)


class Skip(Exception):
    """A variant that cannot serve a point, with the reason."""


def kv_bytes(seqlens, heads_kv: int, head_dim: int, element_size: int) -> int:
    """Bytes of K and V one decode step must read: each row's visible keys, once."""
    return sum(int(n) for n in seqlens) * heads_kv * head_dim * 2 * element_size


def first_line(error) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


def load_fa_ck():
    """This checkout's fa_ck (python/), ahead of any installed one."""
    if (REPO / "python" / "fa_ck").is_dir() and str(REPO / "python") not in sys.path:
        sys.path.insert(0, str(REPO / "python"))
    import fa_ck
    return fa_ck


# ------------------------------------------------------------------ caches

@dataclass
class View:
    """One point's call: q (B, 1, Hq, D), the cache as fa_ck takes it, every row's length."""
    point: Point
    q: object
    k: object                 # dense (B, L, Hk, D) or paged (pages, P, Hk, D)
    v: object
    lens: object              # int32 (B,), all L
    table: object = None      # int32 (B, L / P) for a paged cache


def make_pools(batch: int, length: int, shape: Shape, device):
    """K and V storage of B rows of L keys (random, never zeros), and q."""
    k, v = (torch.randn(batch * length, shape.heads_kv, shape.head_dim, dtype=torch.bfloat16, device=device)
            for _ in range(2))
    q = torch.randn(batch, 1, shape.heads_q, shape.head_dim, dtype=torch.bfloat16, device=device)
    return q, k, v


def view_of(point: Point, q, k_pool, v_pool) -> View:
    """The point's cache over the shared pools: dense rows, or pages handed out by a random table."""
    b, n = point.batch, point.cache_len
    lens = torch.full((b,), n, dtype=torch.int32, device=q.device)
    if not point.page:
        return View(point, q, k_pool.view(b, n, *k_pool.shape[1:]), v_pool.view(b, n, *v_pool.shape[1:]), lens)
    pages = b * n // point.page
    table = torch.randperm(pages, device=q.device).view(b, -1).to(torch.int32)
    k, v = (t.view(pages, point.page, *t.shape[1:]) for t in (k_pool, v_pool))
    return View(point, q, k, v, lens, table)


def check_rows(batch: int) -> list:
    return [0] if batch == 1 else [0, batch - 1]


def reference_rows(view: View):
    """fa_ck.reference's output in float64 on check_rows: (rows, 1, Hq, D)."""
    from fa_ck import reference
    rows = check_rows(view.point.batch)
    k, v = (t if view.table is not None else t[rows] for t in (view.k, view.v))
    table = view.table[rows] if view.table is not None else None
    out, _ = reference.attention_kvcache(view.q[rows], k, v, view.lens[rows], block_table=table,
                                         dtype=torch.float64, out_dtype=torch.float64)
    return out


def relative_error(out, ref, rows) -> float:
    got = out[rows].to(torch.float64)
    if not torch.isfinite(got).all():
        return float("nan")
    return float((got - ref).norm() / ref.norm())


# ------------------------------------------------------------------ variants

def fa_ck_variant(view: View, on_gpu: bool, splits: int = 0):
    """fa_ck.flash_attn_with_kvcache: auto on a GPU, the Triton kernels (interpreter) on the CPU."""
    fa_ck = load_fa_ck()
    backend = "auto" if on_gpu else "triton"
    kwargs = dict(cache_seqlens=view.lens, block_table=view.table, num_splits=splits, backend=backend)
    served = fa_ck.explain_kvcache(view.q, view.k, view.v, **kwargs).strip().splitlines()[-1]
    if "no backend" in served:
        raise Skip(served.lstrip("-> "))

    def call():
        return fa_ck.flash_attn_with_kvcache(view.q, view.k, view.v, **kwargs)
    return call, f"served by {served.lstrip('-> ')}"


def sdpa_variant(view: View, name: str):
    """SDPA under one backend on the dense cache: enable_gqa=True, else keys and values repeated."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if view.table is not None:
        raise Skip("SDPA reads dense caches only")
    backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
               "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[name]
    q, k, v = (t.transpose(1, 2) for t in (view.q, view.k, view.v))      # SDPA's (B, H, S, D) views

    def run(kk, vv, gqa):
        with sdpa_kernel(backend), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                return F.scaled_dot_product_attention(q, kk, vv, enable_gqa=gqa).transpose(1, 2)
            except RuntimeError as e:
                why = [str(w.message).splitlines()[0] for w in seen] or [first_line(e)]
                raise Skip("; ".join(dict.fromkeys(why))[:300]) from e
    try:
        run(k, v, True)
        return (lambda: run(k, v, True)), "enable_gqa=True"
    except Skip as rejected:
        reason = str(rejected)
    group = q.shape[1] // k.shape[1]
    need = 2 * k.numel() * group * k.element_size()
    if q.is_cuda and need > 0.8 * torch.cuda.mem_get_info(q.device)[0]:
        raise Skip(f"rejects enable_gqa ({reason}); keys repeated to {q.shape[1]} heads need {need / 1e9:.1f} GB")
    kr, vr = (t.repeat_interleave(group, dim=1) for t in (k, v))
    run(kr, vr, False)
    return (lambda: run(kr, vr, False)), f"keys and values repeated to {q.shape[1]} heads (enable_gqa: {reason})"


COMPILED = {}


def compiled_flex():
    """flex_attention under torch.compile, as its docs ask, with room for one graph per shape."""
    from torch.nn.attention.flex_attention import flex_attention
    if "flex" not in COMPILED:
        for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                     "accumulated_recompile_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, max(256, getattr(torch._dynamo.config, name)))
        COMPILED["flex"] = torch.compile(flex_attention, dynamic=False)
    return COMPILED["flex"]


def paged_block_mask(table, page: int, pages: int):
    """A BlockMask whose KV blocks are the pages: row b's blocks are table[b] (all full), and the
    mask_mod says the same key by key (a key is visible to the row that owns its page)."""
    from torch.nn.attention.flex_attention import BlockMask
    b, per_row = table.shape
    owner = torch.empty(pages, dtype=torch.int32, device=table.device)
    owner[table.flatten().long()] = torch.arange(b, dtype=torch.int32, device=table.device).repeat_interleave(per_row)

    def owned(batch, head, q_idx, kv_idx):
        return owner[kv_idx // page] == batch
    counts = torch.full((b, 1, 1), per_row, dtype=torch.int32, device=table.device)
    return BlockMask.from_kv_blocks(torch.zeros_like(counts), torch.zeros_like(table).view(b, 1, 1, per_row),
                                    counts, table.view(b, 1, 1, per_row), BLOCK_SIZE=(128, page), mask_mod=owned,
                                    seq_lengths=(1, pages * page), compute_q_blocks=False)


def flex_variant(view: View, on_gpu: bool):
    """FlexAttention, compiled on a GPU (eager on the CPU): the dense cache with no block mask, or the
    pool of pages as one key sequence under paged_block_mask."""
    from torch.nn.attention.flex_attention import flex_attention
    run = compiled_flex() if on_gpu else flex_attention
    q = view.q.transpose(1, 2)
    if view.table is None:
        k, v = (t.transpose(1, 2) for t in (view.k, view.v))
        mask, options, note = None, None, "dense cache, no block mask"
    else:
        pages, page = view.k.shape[:2]
        k, v = (t.reshape(1, pages * page, *t.shape[2:]).transpose(1, 2) for t in (view.k, view.v))
        mask = paged_block_mask(view.table, page, pages)
        options = {"BLOCK_N": page} if on_gpu and page < 128 else None   # its KV tile must fit in a page
        note = f"paged block mask ({page}-key blocks from the block table)"
    note += "" if on_gpu else ", eager (CPU)"

    def call():
        with warnings.catch_warnings():     # eager flex on the CPU warns that it is unfused: known, tiny here
            warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
            return run(q, k, v, block_mask=mask, enable_gqa=True, kernel_options=options).transpose(1, 2)
    return call, note


def variants(args, on_gpu: bool) -> list:
    """(name, factory(view) -> (call, note)) in the order they run at each point."""
    out = [("fa_ck", lambda view: fa_ck_variant(view, on_gpu))]
    out += [(f"fa_ck splits={n}", lambda view, n=n: fa_ck_variant(view, on_gpu, n)) for n in args.splits]
    if "sdpa" in args.variants:
        out += [(f"sdpa-{name}", lambda view, name=name: sdpa_variant(view, name)) for name in SDPA_BACKENDS]
    if "flex" in args.variants:
        out.append(("flex", lambda view: flex_variant(view, on_gpu)))
    return out


# ------------------------------------------------------------------ timing

def capture(call):
    """A CUDA graph of call (warmed on a side stream first, as torch.cuda.graph asks)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = call()
    return graph, out


def gpu_us(call, rep_ms: float, graph: bool = True) -> tuple[float, str, object]:
    """(median GPU microseconds of call, how it was run, the output of the last run timed). Each run
    follows a zeroing of FLUSH_BYTES (L2 flushed); a CUDA graph of call is replayed unless graph is
    False or capture fails (the note says so)."""
    run, note, held = call, "eager calls", None
    if graph:
        try:
            held = capture(call)
            run, note = held[0].replay, "CUDA graph"
        except Exception as e:  # a call that cannot be captured is timed eagerly, and said so
            torch.cuda.synchronize()
            note = f"eager calls (no CUDA graph: {first_line(e)[:120]})"
    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    run()
    start.record()
    for _ in range(3):
        run()
    end.record()
    torch.cuda.synchronize()
    n = int(min(200, max(5, rep_ms / max(start.elapsed_time(end) / 3, 1e-3))))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in events:
        flush.zero_()
        s.record()
        run()
        e.record()
    last = run()
    torch.cuda.synchronize()
    out = held[1] if held else last
    return statistics.median(s.elapsed_time(e) for s, e in events) * 1e3, note, out


def cpu_us(call, reps: int = 2) -> tuple[float, str, object]:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6, "CPU wall time", out


def copy_gbps(device, on_gpu: bool, rep_ms: float) -> tuple[float, str]:
    """The roofline: a device-to-device copy of COPY_BYTES (CPU: 64 MB), bytes read + written / time."""
    n = COPY_BYTES if on_gpu else 64 << 20
    src = torch.randn(n // 2, dtype=torch.bfloat16, device=device)
    dst = torch.empty_like(src)
    us = (gpu_us if on_gpu else cpu_us)(lambda: dst.copy_(src), *((rep_ms, False) if on_gpu else (5,)))[0]
    return 2 * n / us / 1e3, f"copy of {n / 2**30:.2f} GiB, {us:.1f} us"


# ------------------------------------------------------------------ one point

def measure(row: Row, call, view: View, ref, args, on_gpu: bool):
    """Check call's output against ref on check_rows, then time it (a wrong output is not timed)."""
    out = call()
    row.error = relative_error(out, ref, check_rows(view.point.batch))
    if not row.error <= TOLERANCE:       # NaN fails too
        row.status, row.note = "wrong", row.note + f"; error {row.error:.2e} > {TOLERANCE:.0e}: not timed"
        return
    # the API's host reads of index values stay out of the time
    with mock.patch.dict(os.environ, {"FA_CK_KVCACHE_CHECKS": "0"}):
        for _ in range(args.repeat):     # each a fresh capture: tells a per-launch effect from a per-process one
            us, how, timed = gpu_us(call, args.rep_ms) if on_gpu else cpu_us(call)
            row.repeats_us.append(round(us, 2))
    row.us = statistics.median(row.repeats_us)
    if args.repeat > 1:
        how += f", median of {args.repeat} timings: {' / '.join(f'{t:.1f}' for t in row.repeats_us)} us"
    row.note = f"{row.note}; {how}".lstrip("; ")
    if not relative_error(timed, ref, check_rows(view.point.batch)) <= TOLERANCE:
        row.status, row.us, row.note = "wrong", None, row.note + ": its output differs from the checked call's"
        return
    row.status = "ok"
    shape = args.shape
    row.gbps = kv_bytes([view.point.cache_len] * view.point.batch, shape.heads_kv, shape.head_dim,
                        view.q.element_size()) / row.us / 1e3


def run_point(view: View, factories: list, args, on_gpu: bool) -> list:
    try:
        ref = reference_rows(view)
    except Exception as e:  # no reference, no check: nothing at this point is timed
        ref, reason = None, f"the float64 reference failed: {first_line(e)[:200]}"
    rows = []
    for name, factory in factories:
        if name.startswith("sdpa-") and view.table is not None:
            continue                      # SDPA has no paged path: its dense rows are the anchor
        row, t0 = Row(view.point, name), time.perf_counter()
        try:
            if ref is None:
                raise Skip(reason)
            call, row.note = factory(view)
            measure(row, call, view, ref, args, on_gpu)
        except Skip as e:
            row.status, row.note = "skipped", str(e)
        except torch.OutOfMemoryError as e:
            row.status, row.note = "skipped", f"out of memory: {first_line(e)[:160]}"
        except Exception as e:  # one broken variant is recorded, and the others go on
            row.status, row.note = "failed", first_line(e)[:300]
        row.wall_s = round(time.perf_counter() - t0, 2)
        rows.append(row)
        if on_gpu:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    return rows


def groups(points: list) -> dict:
    """Points by (batch, cache length), dense first: one pair of pools serves a group. The largest
    caches first, where most targets sit, so that --budget-s drops the small points."""
    out = {}
    for p in sorted(points, key=lambda p: (-p.batch * p.cache_len, -p.batch, p.page)):
        out.setdefault((p.batch, p.cache_len), []).append(p)
    return out


def skipped_rows(group: list, names: list, reason: str) -> list:
    return [Row(p, name, "skipped", note=reason) for p in group for name in names
            if not (p.page and name.startswith("sdpa-"))]


def run_all(points: list, args, on_gpu: bool, device) -> list:
    rows = []
    factories = variants(args, on_gpu)
    names = [name for name, _ in factories]
    started = time.time()
    for (b, n), group in groups(points).items():
        need = kv_bytes([n] * b, args.shape.heads_kv, args.shape.head_dim, 2)
        free = torch.cuda.mem_get_info(device)[0] if on_gpu else None
        reason = None
        if args.budget_s is not None and time.time() - started > args.budget_s:
            reason = f"not reached: --budget-s {args.budget_s:g} spent"
        elif free is not None and need * 1.15 + FLUSH_BYTES > free:
            reason = f"does not fit: K and V take {need / 1e9:.1f} GB, {free / 1e9:.1f} GB free"
        if reason:
            rows += skipped_rows(group, names, reason)
            print(f"{group[0].label}...: skipped, {reason}", flush=True)
            continue
        try:
            q, k_pool, v_pool = make_pools(b, n, args.shape, device)
        except torch.OutOfMemoryError as e:
            rows += skipped_rows(group, names, f"out of memory: {first_line(e)[:160]}")
            continue
        for point in group:
            got = run_point(view_of(point, q, k_pool, v_pool), factories, args, on_gpu)
            rows += got
            derive(rows, args.copy_gbps, judge=on_gpu)
            print(point_line(point, rows), flush=True)
        del q, k_pool, v_pool
        if on_gpu:
            torch.cuda.empty_cache()
    return rows


# ------------------------------------------------------------------ figures and targets

def derive(rows: list, copy: float, judge: bool = True):
    """% of copy bandwidth, x the best SDPA of the same (B, L) (dense), paged / dense time of the same
    variant, and fa_ck's targets (judge: on a GPU; the interpreter's times say nothing of them)."""
    ok = {(r.point, r.variant): r for r in rows if r.status == "ok"}
    for r in ok.values():
        p = r.point
        r.pct_copy = 100 * r.gbps / copy
        sdpa = [s.us for (q, name), s in ok.items() if name.startswith("sdpa-") and
                (q.batch, q.cache_len, q.page) == (p.batch, p.cache_len, 0)]
        r.x_best_sdpa = min(sdpa) / r.us if sdpa and not r.variant.startswith("sdpa-") else None
        dense = ok.get((Point(p.batch, p.cache_len, 0), r.variant))
        r.paged_over_dense = r.us / dense.us if p.page and dense else None
        if r.variant != "fa_ck" or not judge:
            continue
        r.targets = {}
        if p.copy_target:
            r.targets["copy"] = r.pct_copy >= 100 * TARGET_COPY
        if r.x_best_sdpa is not None:
            r.targets["sdpa"] = r.x_best_sdpa >= TARGET_SDPA
        if r.paged_over_dense is not None:
            r.targets["paged"] = r.paged_over_dense <= TARGET_PAGED


def verdict(targets: dict) -> str:
    names = {"copy": f">= {TARGET_COPY:.0%} copy", "sdpa": f">= {TARGET_SDPA}x SDPA",
             "paged": f"paged <= {TARGET_PAGED}x dense"}
    return ", ".join(f"{names[k]} {'met' if v else 'MISSED'}" for k, v in targets.items()) or "-"


def fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def point_line(point: Point, rows: list) -> str:
    mine = [r for r in rows if r.point == point]
    fa = next((r for r in mine if r.variant == "fa_ck"), None)
    head = f"{point.label:>18}: "
    if fa is None or fa.status != "ok":
        return head + f"fa_ck {fa.status if fa else 'absent'} {fa.note if fa else ''}"
    others = ", ".join(f"{r.variant} {fmt(r.us, '.1f')}" if r.status == "ok" else f"{r.variant} {r.status}"
                       for r in mine if r is not fa)
    return (head + f"fa_ck {fa.us:.1f} us, {fa.gbps:.0f} GB/s ({fa.pct_copy:.0f} % of copy), "
            f"{fmt(fa.x_best_sdpa, '.2f')}x best SDPA, paged/dense {fmt(fa.paged_over_dense, '.3f')} "
            f"[{verdict(fa.targets)}] | {others}")


# ------------------------------------------------------------------ report

def git_commit() -> str | None:
    """This checkout's short commit, "+changes" when the tracked files under python/ or bench/ differ
    from it (a copy of a working tree, say), or None outside git."""
    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    try:
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", "python", "bench")
    except (OSError, subprocess.SubprocessError):
        return None
    return (commit + ("+changes" if changed else "")) if commit else None


def environment(args, on_gpu: bool, device) -> dict:
    import triton
    commit = git_commit()
    return dict(command=" ".join(["python", "bench/decode.py"] + args.argv),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                device=torch.cuda.get_device_name(device) if on_gpu else f"cpu ({platform.processor() or 'unknown'})",
                torch=torch.__version__, triton=triton.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version() if on_gpu else None, python=platform.python_version(),
                commit=commit, interpreter=os.environ.get("TRITON_INTERPRET") == "1",
                shape=dataclasses.asdict(args.shape), copy_gbps=args.copy_gbps, copy_note=args.copy_note,
                rep_ms=args.rep_ms, repeat=args.repeat, tolerance=TOLERANCE)


def as_dict(row: Row) -> dict:
    d = dataclasses.asdict(row)
    d["point"] = row.point.label
    d.update(batch=row.point.batch, cache_len=row.point.cache_len, page=row.point.page)
    return d


def markdown(env: dict, rows: list) -> str:
    s = env["shape"]
    lines = [f"# Decode step: {env['device']}, {env['date']}", "", f"- command: `{env['command']}`",
             f"- versions: torch {env['torch']}, triton {env['triton']}, CUDA {env['cuda']}, cuDNN {env['cudnn']}, "
             f"Python {env['python']}; fa_ck commit {env['commit']}"
             + (" (Triton interpreter)" if env["interpreter"] else ""),
             f"- shape: Sq 1, Hq {s['heads_q']} / Hk {s['heads_kv']}, d{s['head_dim']}, {s['dtype_name']}; every row "
             "sees its whole cache; dense and paged views share one buffer (random block tables)",
             f"- roofline: {env['copy_gbps']:.0f} GB/s measured ({env['copy_note']}; bytes read + written)",
             "- timing: on a GPU, the median GPU time of a CUDA graph replay of one call after an L2 flush (each "
             "row's note says how it ran; the CPU mode's wall times judge no target); fa_ck timed with "
             "FA_CK_KVCACHE_CHECKS=0 (no host read of index values)",
             f"- correctness: every variant vs fa_ck.reference in float64 on rows 0 and B-1 before timing; "
             f"over {env['tolerance']:.0e} relative error is reported as wrong and not timed",
             "- GB/s: K and V bytes a step must read (rows x keys x Hk x D x 2 x element size) over the time; "
             "x best SDPA: the fastest SDPA backend on the dense cache of the same B and L over the variant's "
             "time; paged/dense: the variant's time over its own dense time", "",
             "## fa_ck and its targets", "",
             "| point | us | GB/s | % of copy | x best SDPA | paged/dense | targets |", "|---|---|---|---|---|---|---|"]
    rows = sorted(rows, key=lambda r: (r.point.batch, r.point.cache_len, r.point.page))
    for r in rows:
        if r.variant == "fa_ck":
            lines.append(f"| {r.point.label} | {fmt(r.us, '.1f')} | {fmt(r.gbps, '.0f')} | {fmt(r.pct_copy, '.1f')} | "
                         f"{fmt(r.x_best_sdpa, '.2f')} | {fmt(r.paged_over_dense, '.3f')} | "
                         f"{verdict(r.targets) if r.status == 'ok' else r.status + ': ' + r.note} |")
    lines += ["", "## Every variant", "",
              "| point | variant | status | us | GB/s | % of copy | x best SDPA | paged/dense | error | note |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.point.label} | {r.variant} | {r.status} | {fmt(r.us, '.1f')} | {fmt(r.gbps, '.0f')} | "
                     f"{fmt(r.pct_copy, '.1f')} | {fmt(r.x_best_sdpa, '.2f')} | {fmt(r.paged_over_dense, '.3f')} | "
                     f"{fmt(r.error, '.1e')} | {r.note.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def plot(env: dict, rows: list, path: Path):
    """GB/s against cache length, one panel per batch: fa_ck dense and paged, the best SDPA, flex."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = [r for r in rows if r.status == "ok"]
    batches = sorted({r.point.batch for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(5 * len(batches), 4.2), squeeze=False)
    for ax, b in zip(axes[0], batches):
        series = {}
        for r in (r for r in ok if r.point.batch == b):
            name = "best SDPA (dense)" if r.variant.startswith("sdpa-") else r.variant
            if not r.variant.startswith("sdpa-") and r.point.page:
                name += f" page {r.point.page}"
            key = (name, r.point.cache_len)
            series[key] = max(series.get(key, 0.0), r.gbps)
        for name in dict.fromkeys(n for n, _ in series):
            xs = sorted(n for m, n in series if m == name)
            ax.plot(xs, [series[(name, x)] for x in xs], marker="o", markersize=3, label=name,
                    linestyle="-" if name.startswith("fa_ck") else "--")
        ax.axhline(env["copy_gbps"], color="black", linewidth=0.8, label="device copy")
        ax.set_xscale("log", base=2)
        ax.set_title(f"B{b}")
        ax.set_xlabel("cache length (keys)")
        ax.set_ylabel("K+V GB/s")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(f"decode step, {env['device']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(out: Path, env: dict, rows: list, plots: bool) -> list:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(dict(env=env, rows=[as_dict(r) for r in rows]), indent=1))
    (out / "results.md").write_text(markdown(env, rows))
    written = ["results.json", "results.md"]
    if plots:
        plot(env, rows, out / "decode.png")
        written.append("decode.png")
    return written


# ------------------------------------------------------------------ command line

def choose_points(args, on_gpu: bool) -> list:
    if not on_gpu:
        batches, lengths, pages = CPU_BATCHES, CPU_LENGTHS, CPU_PAGES
    elif args.quick:
        batches, lengths, pages = (1, 64), (8192,), (16, 256)
    else:
        batches, lengths, pages = BATCHES, LENGTHS, PAGES
    pick = [(args.batches, batches), (args.lengths, lengths), (args.pages, pages)]
    batches, lengths, pages = (given if given is not None else default for given, default in pick)
    return [Point(b, n, p) for b in batches for n in lengths for p in (0, *pages) if not p or n % p == 0]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="six points: B1 and B64 at 8k, dense, pages 16 and 256")
    ap.add_argument("--cpu", action="store_true", help="tiny shapes on the CPU, fa_ck's kernels in the interpreter")
    ap.add_argument("--splits", type=int, nargs="*", default=[], help="fa_ck with these num_splits too")
    ap.add_argument("--variants", default="sdpa,flex", help="comparisons beside fa_ck: sdpa, flex (comma list)")
    ap.add_argument("--batches", type=int, nargs="*", help="batch sizes (default 1 8 64)")
    ap.add_argument("--lengths", type=int, nargs="*", help="cache lengths (default 1024 8192 32768 131072)")
    ap.add_argument("--pages", type=int, nargs="*",
                    help="page sizes beside dense (default 16 64 256; none given: dense only)")
    ap.add_argument("--rep-ms", type=float, default=25.0, help="GPU time per variant's timed replays, ms")
    ap.add_argument("--repeat", type=int, default=1,
                    help="time each variant this many times, each from a fresh CUDA graph (the median is reported)")
    ap.add_argument("--budget-s", type=float, default=None, help="skip the points left after this many seconds")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default ./fa_ck-results/decode-...)")
    ap.add_argument("--no-plot", action="store_true", help="skip decode.png")
    args = ap.parse_args(argv)
    args.variants = {v.strip() for v in args.variants.split(",") if v.strip()}
    if args.variants - {"sdpa", "flex"}:
        ap.error(f"--variants: unknown {sorted(args.variants - {'sdpa', 'flex'})}; choose from sdpa, flex")
    if args.repeat < 1:
        ap.error(f"--repeat: must be 1 or more, got {args.repeat}")
    if any(n < 1 for n in args.splits):
        ap.error("--splits: each must be 1 or more")
    args.argv = list(argv)
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    started = time.time()
    on_gpu = torch.cuda.is_available() and not args.cpu
    if not on_gpu:
        os.environ.setdefault("TRITON_INTERPRET", "1")   # read when triton decorates fa_ck's kernels
    load_fa_ck()
    device = torch.device("cuda" if on_gpu else "cpu")
    args.shape = GPU_SHAPE if on_gpu else CPU_SHAPE
    torch.manual_seed(0)
    args.copy_gbps, args.copy_note = copy_gbps(device, on_gpu, args.rep_ms)
    print(f"device copy: {args.copy_gbps:.0f} GB/s ({args.copy_note})", flush=True)
    rows = run_all(choose_points(args, on_gpu), args, on_gpu, device)
    env = environment(args, on_gpu, device)
    env["wall_s"] = round(time.time() - started, 1)
    out = args.out or default_out_dir("decode", env["device"] if on_gpu else "cpu")
    written = write(out, env, rows, plots=not args.no_plot)
    missed = [r for r in rows if r.variant == "fa_ck" and r.status == "ok" and not all(r.targets.values())]
    print(f"\n{len(rows)} rows in {env['wall_s']} s; fa_ck misses a target at {len(missed)} point(s)")
    print(f"wrote {', '.join(str(out / name) for name in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
