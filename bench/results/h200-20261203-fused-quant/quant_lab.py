"""Call 2: where the one-launch quantisation's time goes. GPU time per call (torch.profiler, 20
calls, kernels only, the int32 zeros left out) of quantising bf16 q, k, v (d128, H16, 16k tokens)
for: the two launches before (95bd82f, quantize_old.py), quantize.py's kernel (lag 8 MB), and
quant_variants.variant_kernel by how it waits (SPIN), its rows per item (BLOCK_S, warps) and the
window (lag in slots: 1, 8 MB of slots, 24 MB, every slot). Every result but SPIN=none's is
checked bit for bit against the old launches. ("quantize.py" is quantize_fused.py here: the tree's
quantize.py when calls 2-3 ran, not kept.)
Call 3 (second argument 3): L2 eviction hints on the variant's loads, 64 or 128 rows per item, 8 or
16 MB windows.
    PYTHONPATH=python:bench/results/h200-20261203-fused-quant python3 .../quant_lab.py OUT_DIR [CALL]
"""
import collections
import json
import sys

import torch
import triton
from torch.profiler import ProfilerActivity, profile

import quant_variants as qv
import quantize_fused as tq      # (the tree's quantize.py when this ran)
from fa_ck.backends.triton import quantize_old as old

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
CALL = int(sys.argv[2]) if len(sys.argv) > 2 else 2
H, D = 16, 128


def args(q, k, v, bufs, lag_bytes, block_s):
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    _, start_k, start_v, n = tq.fp8_slots(b, hq, hkv)
    slots = b * (hq + 2 * hkv)
    lag = min(max(-(-lag_bytes // (max(sq, sk) * d * 2)), 1), slots)
    q8, k8, v8, work, descale = bufs[:5]
    grid = (2 * slots * triton.cdiv(max(sq, sk), block_s),)
    return grid, (q, k, v, q8, k8, v8, work, descale, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3],
                  *q8.stride(), *k8.stride(), *v8.stride(), sq, sk, d, hq, hkv, start_k, start_v, b, n, lag,
                  torch.finfo(q8.dtype).max)


def old_call(q, k, v):
    bufs = tq.fp8_buffers(q, k, v)
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    grid = (triton.cdiv(max(sq, sk), 64), hq + 2 * hkv, b)
    _, start_k, start_v, n = tq.fp8_slots(b, hq, hkv)
    sizes = (sq, sk, d, hq, hkv, start_k, start_v)
    strides = (*q.stride()[:3], *k.stride()[:3], *v.stride()[:3])
    amax = bufs[3][:n]
    old.amax_kernel[grid](q, k, v, amax, *strides, *sizes, BLOCK_S=64, BLOCK_D=128)
    old.quantize_kernel[grid](q, k, v, *bufs[:3], amax, bufs[4], *strides, *bufs[0].stride(), *bufs[1].stride(),
                              *bufs[2].stride(), *sizes, torch.finfo(bufs[0].dtype).max, BLOCK_S=64, BLOCK_D=128,
                              ROUND_EMIN=0, PERMUTE_V=True)
    return bufs


def prod_call(q, k, v):
    bufs = tq.fp8_buffers(q, k, v)
    tq.quantize(q, k, v, *bufs[:5], permute_v=True)
    return bufs


def variant_call(q, k, v, spin, block_s, warps, lag_bytes, evict_a="", evict_q=""):
    bufs = tq.fp8_buffers(q, k, v)
    grid, a = args(q, k, v, bufs, lag_bytes, block_s)
    qv.variant_kernel[grid](*a, BLOCK_S=block_s, BLOCK_D=128, ROUND_EMIN=0, PERMUTE_V=True, SPIN=spin,
                            EVICT_A=evict_a, EVICT_Q=evict_q, num_warps=warps)
    return bufs


def kernel_us(fn, iters=20) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    per = collections.defaultdict(float)
    for e in prof.events():
        if e.device_type.name == "CUDA" and "elementwise" not in e.name:      # (the zeros' fill)
            per[e.name[:30]] += e.device_time_total / iters
    return sum(per.values())


MB = 1 << 20
VARIANTS = {"old (2 launches)": old_call, "quantize.py (lag 8M)": prod_call}
if CALL == 2:
    for spin in ("atomic", "volatile", "none"):
        for lag in (0, 8 * MB, 24 * MB, 1 << 40):
            VARIANTS[f"{spin} 64r w4 lag{lag // MB if lag < 1 << 40 else 'all'}"] = \
                (lambda q, k, v, spin=spin, lag=lag: variant_call(q, k, v, spin, 64, 4, lag))
    for bs, w in ((32, 4), (128, 8), (128, 4), (256, 8)):
        VARIANTS[f"atomic {bs}r w{w} lag8"] = \
            (lambda q, k, v, bs=bs, w=w: variant_call(q, k, v, "atomic", bs, w, 8 * MB))
else:   # call 3: L2 eviction hints (amax loads evict_last, quantising loads evict_first), item size, window
    for spin in ("atomic", "none"):
        for bs, w in ((64, 4), (128, 8)):
            for lag in (8 * MB, 16 * MB):
                for ev in ("", "hint"):
                    eva, evq = ("evict_last", "evict_first") if ev else ("", "")
                    VARIANTS[f"{spin} {bs}r w{w} lag{lag // MB}{' ' + ev if ev else ''}"] = \
                        (lambda q, k, v, spin=spin, bs=bs, w=w, lag=lag, eva=eva, evq=evq:
                         variant_call(q, k, v, spin, bs, w, lag, eva, evq))

results = {}
lines = ["| variant | " + " | ".join(f"B{b} S{s}" for b, s in ((16, 1024), (4, 4096), (1, 16384))) + " |",
         "|---|---|---|---|"]
table = collections.defaultdict(dict)
for b, s in ((16, 1024), (4, 4096), (1, 16384)):
    q, k, v = (torch.randn(b, s, H, D, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    want = old_call(q, k, v)
    for name, fn in VARIANTS.items():
        got = fn(q, k, v)
        same = all(torch.equal(x.view(torch.uint8), y.view(torch.uint8)) for x, y in
                   zip((got[0], got[1], tq.padded_keys(got[2])), (want[0], want[1], tq.padded_keys(want[2])))) \
            and torch.equal(got[4], want[4])
        us = kernel_us(lambda: fn(q, k, v))
        table[name][(b, s)] = (us, same)
        print(f"B{b} S{s} {name}: {us:.1f} us, bit for bit {same}", flush=True)
for name, row in table.items():
    lines.append(f"| {name} | " + " | ".join(f"{us:.1f}{'' if same else ' (differs)'}" for us, same in row.values()) + " |")
print("\n".join(lines))
open(f"{OUT}/quant_lab{CALL}.md", "w").write("\n".join(lines) + "\n")
json.dump({n: {f"B{b} S{s}": v for (b, s), v in r.items()} for n, r in table.items()}, open(f"{OUT}/quant_lab{CALL}.json", "w"),
          indent=1)
