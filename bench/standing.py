"""The fp8 forward's standing against cuDNN's bf16 forward, variant by variant, on a CUDA GPU.

    python bench/standing.py [--out OUT.jsonl] [--rounds 2] [--variant NAME=JSON ...] [--points d128-S4k-full ...]
    python bench/standing.py --summarize OUT.jsonl          # the markdown table of its medians

Each variant is fa_ck's fp8 forward of bf16 inputs (flash_attn_fp8_func) with FA_CK_TRITON_CONFIG=JSON
("default": none); beside them SDPA's cuDNN and flash bf16 forwards. Kernels are timed by
torch.profiler (the largest kernel of CALLS calls: the attention kernel; its share of the call),
calls by CUDA events (quantisation included); rounds interleaved, the order of the runs rotated
each round; round 0 also takes each run's relative error against float64 (per head, on the GPU).
Ratios are taken within a round (x cuDNN's kernel, x cuDNN's call), then the median over rounds.
Rows go to --out (default ./fa_ck-results/standing-<gpu>-<date>/results.jsonl), the table beside
them as results.md.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # run as a script: `bench` importable
from bench.out_dir import default_out_dir  # noqa: E402

CALLS = 20
# name: (batch, seq, heads, causal, head dim); flash-attn's 16k tokens per call at S4k, one call at S16k
POINTS = {"d128-S4k-full": (4, 4096, 16, False, 128), "d128-S4k-causal": (4, 4096, 16, True, 128),
          "d128-S16k-full": (1, 16384, 16, False, 128), "d128-S16k-causal": (1, 16384, 16, True, 128),
          "d64-S4k-full": (4, 4096, 16, False, 64), "d128-S1k-full": (16, 1024, 16, False, 128),
          "d128-S8k-causal": (2, 8192, 16, True, 128), "d128-S2k-full": (8, 2048, 16, False, 128),
          "d64-S2k-full": (8, 2048, 16, False, 64), "d64-S1k-full": (16, 1024, 16, False, 64),
          "d64-S4k-causal": (4, 4096, 16, True, 64),
          "nanogpt": (64, 1024, 12, True, 64),          # (bench/kernels.py's training shape)
          # S4k with 66 heads: 1056 work units, 8 per program of 132 (the H200's SMs), no idle last round
          "d128-S4k-full-h22": (3, 4096, 22, False, 128), "d128-S4k-causal-h22": (3, 4096, 22, True, 128)}
STANDARD = ["d128-S4k-full", "d128-S4k-causal", "d128-S16k-full", "d128-S16k-causal", "d64-S4k-full"]


def _with_config(text: str, fn):
    """fn under FA_CK_TRITON_CONFIG=text (each variant's own: a value set outside is put back after)."""
    def run():
        outside = os.environ.get("FA_CK_TRITON_CONFIG")
        os.environ["FA_CK_TRITON_CONFIG"] = text
        try:
            return fn()
        finally:
            if outside is None:
                os.environ.pop("FA_CK_TRITON_CONFIG", None)
            else:
                os.environ["FA_CK_TRITON_CONFIG"] = outside
    return run


def _kernels_per_call(fn) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" and e.device_time_total > 0:
            out[e.key] = out.get(e.key, 0.0) + e.device_time_total / CALLS
    return out


def _call_us(fn) -> float:
    import torch
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(CALLS):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / CALLS


def _reference(q, k, v, causal):
    """float64 attention of (B, S, H, D) inputs, one (batch, head) at a time."""
    import torch
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    s = q.shape[1]
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).tril() if causal else None
    for b in range(q.shape[0]):
        for h in range(q.shape[2]):
            qh, kh, vh = (t[b, :, h].double() for t in (q, k, v))
            sc = (qh @ kh.T) / q.shape[-1] ** 0.5
            if causal:
                sc = sc.masked_fill(~mask, float("-inf"))
            out[b, :, h] = torch.softmax(sc, -1) @ vh
            del sc
    return out


def run(rounds: int, path: str, variants: dict, points: list):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import fa_ck
    for rnd in range(rounds):
        for point in points:
            b, s, h, causal, d = POINTS[point]
            torch.manual_seed(rnd)
            q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
            qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))

            def sdpa(backend):
                def call():
                    with sdpa_kernel([backend]):
                        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
                return call
            own = lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal)      # noqa: E731
            runs = {name: _with_config(text, own) for name, text in variants.items()}
            runs.update(cudnn=sdpa(SDPBackend.CUDNN_ATTENTION), flash=sdpa(SDPBackend.FLASH_ATTENTION))
            names = list(runs)
            names = names[rnd % len(names):] + names[:rnd % len(names)]
            row = dict(round=rnd, point=point, shape=dict(b=b, s=s, h=h, causal=causal, d=d))
            ref = _reference(q, k, v, causal) if rnd == 0 else None
            for name in names:
                fn = runs[name]
                try:
                    ks = _kernels_per_call(fn)
                except Exception as e:      # (a variant that does not compile or launch: recorded, skipped)
                    row[name] = dict(error=f"{type(e).__name__}: {e}"[:300])
                    continue
                top = max(ks.items(), key=lambda kv: kv[1])
                row[name] = dict(call_us=round(_call_us(fn), 1), kernel=top[0][:40], kernel_us=round(top[1], 1),
                                 all_kernels_us=round(sum(ks.values()), 1))
                if ref is not None:
                    out = fn().double()
                    row[name]["rel_err"] = round(((out - ref).norm() / ref.norm()).item(), 5)
            del ref
            ok = [n for n in runs if "error" not in row[n]] if "error" not in row["cudnn"] else []
            row["x_cudnn_kernel"] = {n: round(row["cudnn"]["kernel_us"] / row[n]["kernel_us"], 3) for n in ok}
            row["x_cudnn_call"] = {n: round(row["cudnn"]["call_us"] / row[n]["call_us"], 3) for n in ok}
            print(json.dumps(row), flush=True)
            with open(path, "a") as f:
                f.write(json.dumps(row) + "\n")


def summarize(path: str) -> str:
    """Markdown: per point and run, the medians over rounds and round 0's error; TFLOP/s of the
    kernel in flash-attn's convention (4 B H S^2 D, halved when causal)."""
    rows = [json.loads(line) for line in open(path)]
    lines = ["| point | run | kernel us | TFLOP/s | x cuDNN kernel | call us | x cuDNN call | rel. error |",
             "|---|---|---|---|---|---|---|---|"]
    for point in dict.fromkeys(r["point"] for r in rows):
        rs = [r for r in rows if r["point"] == point]
        sh = rs[0]["shape"]
        flop = 4 * sh["b"] * sh["h"] * sh["s"] ** 2 * sh["d"] / (2 if sh["causal"] else 1)
        for name in [n for n in rs[0] if isinstance(rs[0][n], dict) and n not in ("shape", "x_cudnn_kernel",
                                                                                   "x_cudnn_call")]:
            good = [r for r in rs if "kernel_us" in r[name] and name in r["x_cudnn_kernel"]]
            if not good:
                lines.append(f"| {point} | {name} | {rs[0][name].get('error', '?')[:80]} | | | | | |")
                continue
            med = lambda f: statistics.median(f(r) for r in good)     # noqa: E731
            kus = med(lambda r: r[name]["kernel_us"])
            err = [r[name]["rel_err"] for r in good if "rel_err" in r[name]]
            lines.append(f"| {point} | {name} | {kus:.1f} | {flop / kus / 1e6:.0f} | "
                         f"{med(lambda r: r['x_cudnn_kernel'][name]):.3f} | {med(lambda r: r[name]['call_us']):.1f} | "
                         f"{med(lambda r: r['x_cudnn_call'][name]):.3f} | {err[0] if err else '-'} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="JSONL to append rows to (default ./fa_ck-results/standing-<gpu>-<date>/"
                                  "results.jsonl)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                    help='e.g. f32=\'{"fwd": {"F16_SCORES": false}}\'; "default" (no config) always runs first')
    ap.add_argument("--points", nargs="+", choices=sorted(POINTS), default=STANDARD)
    ap.add_argument("--summarize", metavar="JSONL", help="print the table of a finished run and exit")
    args = ap.parse_args(argv)
    if args.summarize:
        print(summarize(args.summarize))
        return
    import torch
    if not torch.cuda.is_available():
        ap.error("standing.py times CUDA kernels (torch.profiler, CUDA events) and needs a CUDA GPU")
    if not args.out:
        args.out = str(default_out_dir("standing", torch.cuda.get_device_name()) / "results.jsonl")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    variants = {"default": ""}
    for item in args.variant:
        name, sep, text = item.partition("=")
        if not sep or not name:
            ap.error(f"--variant takes NAME=JSON, got {item!r}")
        json.loads(text)                     # (fails here, not in the middle of the run)
        variants[name] = text
    run(args.rounds, args.out, variants, args.points)
    table = summarize(args.out)
    Path(args.out).with_suffix(".md").write_text(table + "\n")
    print(table)
    print(f"wrote {args.out} and {Path(args.out).with_suffix('.md')}")


if __name__ == "__main__":
    sys.exit(main())
