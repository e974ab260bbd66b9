#!/usr/bin/env python
"""The KV cache's append: triton's fused kernel (kernels/append.py) beside torch ops
(reference.kvcache_append, what a backend without a fused append runs), on one decode step's new token.

    python bench/decode_append.py          # on a GPU
    python bench/decode_append.py --cpu    # tiny shapes, the kernel in the Triton interpreter

A point is B rows appending one token (Hq 32, Hk 8, d128, bf16) to caches of 8k keys, dense or paged
(pages of 16 or 256), with or without rotary (q and the new key turned, GPT-NeoX pairing). Both
paths run on copies of the same caches and must leave them equal (within one rounding of the rotated
keys) before they are timed. Times: the median GPU time of a CUDA graph replay (device work only),
and of eager calls (launches and host work included), as decode.py measures them.
Writes results.json and results.md under --out (default ./fa_ck-results/decode-append-<gpu>-<date>/).
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))     # run as a script: `bench` importable as a package
from bench.decode import cpu_us, git_commit, gpu_us, load_fa_ck  # noqa: E402
from bench.out_dir import default_out_dir  # noqa: E402

GPU = dict(batches=(1, 8, 64), cache_len=8192, heads_q=32, heads_kv=8, head_dim=128)
CPU = dict(batches=(1, 3), cache_len=64, heads_q=4, heads_kv=2, head_dim=32)
PAGES = (0, 16, 256)


def make_call(path: str, b: int, page: int, rotary: bool, s: dict, device):
    """-> (call, caches it writes): one append of a token at position cache_len - 1 of every row."""
    from fa_ck import reference
    from fa_ck.params import KVCacheParams
    tb = importlib.import_module("fa_ck.backends.triton")
    n, hk, d = s["cache_len"], s["heads_kv"], s["head_dim"]
    bf16 = dict(dtype=torch.bfloat16, device=device)
    table = None
    if page:
        table = torch.randperm(b * n // page, device=device).view(b, -1).to(torch.int32)
        k_cache, v_cache = (torch.zeros(b * n // page, page, hk, d, **bf16) for _ in range(2))
    else:
        k_cache, v_cache = (torch.zeros(b, n, hk, d, **bf16) for _ in range(2))
    q = torch.randn(b, 1, s["heads_q"], d, **bf16)
    k, v = (torch.randn(b, 1, hk, d, **bf16) for _ in range(2))
    lens = torch.full((b,), n - 1, dtype=torch.int32, device=device)
    cos = sin = None
    if rotary:
        angle = torch.rand(n, d // 2, device=device)
        cos, sin = angle.cos().to(torch.bfloat16), angle.sin().to(torch.bfloat16)
    p = KVCacheParams(scale=d ** -0.5, seqlens_k=lens + 1, block_table=table)

    def fused():
        return tb.kvcache_append(q, k_cache, v_cache, k, v, lens, cos, sin, False, False, p)

    def torch_ops():
        return reference.kvcache_append(q, k_cache, v_cache, k, v, lens, cos, sin, interleaved=False,
                                        block_table=table)
    return (fused if path == "fused" else torch_ops), (k_cache, v_cache)


def run(args) -> list:
    on_gpu = torch.cuda.is_available() and not args.cpu
    device = torch.device("cuda" if on_gpu else "cpu")
    s = GPU if on_gpu else CPU
    rows = []
    for b in s["batches"]:
        for page in (p for p in PAGES if p <= s["cache_len"]):
            for rotary in (False, True):
                label = f"B{b} {'page ' + str(page) if page else 'dense'}{' rotary' if rotary else ''}"
                torch.manual_seed(b * 1000 + page * 2 + rotary)
                fused, caches_f = make_call("fused", b, page, rotary, s, device)
                torch.manual_seed(b * 1000 + page * 2 + rotary)
                ops, caches_t = make_call("torch", b, page, rotary, s, device)
                fused(), ops()
                agree = all(torch.allclose(x.float(), y.float(), atol=1.6e-2, rtol=1.6e-2)
                            for x, y in zip(caches_f, caches_t))
                row = dict(point=label, batch=b, page=page, rotary=rotary, agree=agree)
                if agree:
                    for name, call in (("fused", fused), ("torch", ops)):
                        if on_gpu:
                            row[f"{name}_graph_us"] = round(gpu_us(call, args.rep_ms)[0], 2)
                            row[f"{name}_eager_us"] = round(gpu_us(call, args.rep_ms, graph=False)[0], 2)
                        else:
                            row[f"{name}_eager_us"] = round(cpu_us(call)[0], 1)
                print(row, flush=True)
                rows.append(row)
    return rows


def markdown(env: dict, rows: list) -> str:
    lines = [f"# KV-cache append: {env['device']}, {env['date']}", "", f"- command: `{env['command']}`",
             f"- versions: {env['versions']}", "- one new token per row; times in us, median; graph: CUDA graph "
             "replay (device only); eager: plain calls (launches included)", "",
             "| point | caches agree | fused graph | torch graph | fused eager | torch eager |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r.get(f"{n}_{how}_us") for how in ("graph", "eager") for n in ("fused", "torch")]
        lines.append(f"| {r['point']} | {r['agree']} | " + " | ".join("-" if c is None else f"{c:.1f}" for c in cells)
                     + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", action="store_true", help="tiny shapes, the kernel in the Triton interpreter")
    ap.add_argument("--rep-ms", type=float, default=25.0, help="GPU time per timed variant, ms")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory (default ./fa_ck-results/decode-append-...)")
    args = ap.parse_args(argv)
    on_gpu = torch.cuda.is_available() and not args.cpu
    if not on_gpu:
        os.environ.setdefault("TRITON_INTERPRET", "1")   # read when triton decorates fa_ck's kernels
    load_fa_ck()
    import triton
    rows = run(args)
    device = torch.cuda.get_device_name() if on_gpu else "cpu"
    env = dict(command=" ".join(["python", "bench/decode_append.py"] + argv), device=device,
               date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               versions=f"torch {torch.__version__}, triton {triton.__version__}, CUDA {torch.version.cuda}; "
                        f"fa_ck commit {git_commit()}")
    out = args.out or default_out_dir("decode-append", device)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(dict(env=env, rows=rows), indent=1))
    (out / "results.md").write_text(markdown(env, rows))
    print(f"wrote {out / 'results.json'}, {out / 'results.md'}")
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
