"""GPU time of fp8's quantisation launches with and without q's copy (quantize(copy_q=...): off
under the Gluon forward's Q_CONVERT), per kernel by torch.profiler (20 calls, 3 alternating
rounds, medians), bf16 q, k, v of d128, H16, 16k tokens, v keys-contiguous in P_REGS order; and
that k8, v8 and every descale are the same bytes either way.
    PYTHONPATH=python python3 bench/results/h200-20261203-late-wait/quant_time.py OUT_DIR"""
import collections
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from fa_ck.backends.triton import quantize as tq

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
lines = []


def say(s=""):
    print(s, flush=True)
    lines.append(s)


def kernel_us(fn, iters=20) -> dict:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    per = collections.defaultdict(float)
    for e in prof.events():
        if e.device_type.name == "CUDA" and ("amax" in e.name or "quantize" in e.name):
            per[e.name[:20]] += e.device_time_total / iters
    return dict(per)


say("| shape | same k8, v8, descales | with q's copy: amax + copy us | without: amax + copy us | without / with |")
say("|---|---|---|---|---|")
for b, s in ((16, 1024), (4, 4096), (1, 16384)):
    q, k, v = (torch.randn(b, s, 16, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    bufs = {c: tq.fp8_buffers(q, k, v) for c in (True, False)}

    def call(c):
        bufs[c][3].zero_()
        tq.quantize(q, k, v, *bufs[c][:5], permute_v=True, copy_q=c)
    call(True)
    call(False)
    torch.cuda.synchronize()
    same = all(torch.equal(bufs[True][i].view(torch.uint8), bufs[False][i].view(torch.uint8)) for i in (1, 2)) and \
        torch.equal(bufs[True][4], bufs[False][4])
    got = {True: collections.defaultdict(list), False: collections.defaultdict(list)}
    for _ in range(3):
        for c in (True, False):
            for name, us in kernel_us(lambda: call(c)).items():
                got[c][name].append(us)
    med = {c: {n: statistics.median(t) for n, t in got[c].items()} for c in got}
    fmt = lambda m: " + ".join(f"{m[n]:.1f}" for n in sorted(m)) + f" = {sum(m.values()):.1f}"  # noqa: E731
    say(f"| B{b} S{s} | {same} | {fmt(med[True])} | {fmt(med[False])} | "
        f"{sum(med[False].values()) / max(sum(med[True].values()), 1e-9):.3f} |")
say(f"(kernels, in order: {', '.join(sorted(med[True]))}; the int32 zeros' fill left out)")
open(f"{OUT}/quant_time.md", "w").write("\n".join(lines) + "\n")
