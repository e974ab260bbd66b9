"""Back-to-back fwd+bwd at the host-bound S512 points, round by round: wall time per call (CUDA
events around 50 calls) and host time to enqueue them, fa_ck (direct launches on) beside SDPA
cuDNN, under four host settings: as is; gc disabled; autograd's multithreading off (the backward
runs on the calling thread, not autograd's device thread); both.
    python bench/results/h200-20261202-direct/host_modes.py [--rounds 12] [--n 50]"""
import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
import fa_ck  # noqa: E402

POINTS = [(32, 512, 32, 64, True), (32, 512, 16, 128, False), (32, 512, 8, 256, True)]   # (B, S, H, D, causal)


def calls(b, s, h, d, causal):
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    qt, kt, vt = (t.detach().transpose(1, 2).requires_grad_() for t in (q, k, v))
    dot = do.transpose(1, 2)

    def fa():
        torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), do)

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        torch.autograd.grad(out, (qt, kt, vt), dot)
    return {"fa_ck": fa, "cudnn": cudnn}


def rounds(fn, n_rounds, n):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    walls, hosts = [], []
    for _ in range(n_rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        hosts.append((time.perf_counter() - t0) / n * 1e6)
        end.record()
        torch.cuda.synchronize()
        walls.append(start.elapsed_time(end) / n * 1e3)
    return walls, hosts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--n", type=int, default=50)
    args = ap.parse_args()
    table = []
    for point in POINTS:
        fns = calls(*point)
        for mode in ("as is", "gc off", "mt off", "gc off + mt off"):
            (gc.disable if "gc off" in mode else gc.enable)()
            torch.autograd.set_multithreading_enabled("mt off" not in mode)
            res = {name: rounds(fn, args.rounds, args.n) for name, fn in fns.items()}
            torch.autograd.set_multithreading_enabled(True)
            gc.enable()
            fw, fh = res["fa_ck"]
            cw, ch = res["cudnn"]
            name = f"B{point[0]} S{point[1]} H{point[2]} d{point[3]} {'causal' if point[4] else 'full'}"
            row = (name, mode, statistics.median(fw), min(fw), max(fw), statistics.median(fh),
                   statistics.median(cw), statistics.median(ch))
            table.append(row)
            print(f"{name} | {mode} | fa_ck wall med {row[2]:.0f} (min {row[3]:.0f}, max {row[4]:.0f}) host {row[5]:.0f}"
                  f" | cudnn wall {row[6]:.0f} host {row[7]:.0f} | x cudnn {row[6] / row[2]:.2f}", flush=True)
            print("   fa_ck walls per round:", " ".join(f"{w:.0f}" for w in fw), flush=True)
    print("\n| point | host setting | fa_ck us per call, median of rounds (min-max) | fa_ck host us | cuDNN us | cuDNN host us | x cuDNN |")
    print("|---|---|---|---|---|---|---|")
    for r in table:
        print(f"| {r[0]} | {r[1]} | {r[2]:.0f} ({r[3]:.0f}-{r[4]:.0f}) | {r[5]:.0f} | {r[6]:.0f} | {r[7]:.0f} | {r[6] / r[2]:.2f}x |")


if __name__ == "__main__":
    main()
