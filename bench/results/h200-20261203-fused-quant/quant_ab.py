"""fp8 quantisation in one launch (quantize.py then: quantize_fused.py here, not kept) against the two launches before it
(95bd82f's amax_kernel + quantize_kernel, copied in as quantize_old.py by call1.sh), in one
process on the H200: (1) both quantise the same q, k, v bit for bit; (2) GPU time of the
quantisation alone per kernel (torch.profiler) and per call (do_bench, the int32 zeros included),
at d128, 16k tokens, H16, S 1k-16k, with the window (LAG_BYTES) swept; (3) the
whole fp8 forward (bf16 inputs quantised per call) beside SDPA cuDNN's and flash's bf16 forward,
full and causal, medians of interleaved rounds, with its error against float64 (batch 0, heads 0-1).
    PYTHONPATH=python:bench/results/h200-20261203-fused-quant python3 .../quant_ab.py OUT_DIR
"""
import collections
import json
import statistics
import sys

import torch
import torch.nn.functional as F
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import fa_ck
from fa_ck import reference
import quantize_fused as tq      # (the tree's quantize.py when this ran)
from fa_ck.backends.triton import quantize_old as old

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
ROUNDS = 5
SHAPES = [(16, 1024), (8, 2048), (4, 4096), (2, 8192), (1, 16384)]
H, D = 16, 128
rows, lines = [], []


def say(s=""):
    print(s, flush=True)
    lines.append(s)


def old_quantize(q, k, v, q8, k8, v8, amax_bits, descale, permute_v):
    """95bd82f's _quantize (its two launches), through Triton's own launcher."""
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    grid = (triton.cdiv(max(sq, sk), 64), hq + 2 * hkv, b)
    _, start_k, start_v, _ = tq.fp8_slots(b, hq, hkv)
    sizes = (sq, sk, d, hq, hkv, start_k, start_v)
    strides = (*q.stride()[:3], *k.stride()[:3], *v.stride()[:3])
    old.amax_kernel[grid](q, k, v, amax_bits, *strides, *sizes, BLOCK_S=64, BLOCK_D=128)
    old.quantize_kernel[grid](q, k, v, q8, k8, v8, amax_bits, descale, *strides, *q8.stride(), *k8.stride(),
                              *v8.stride(), *sizes, torch.finfo(q8.dtype).max, BLOCK_S=64, BLOCK_D=128,
                              ROUND_EMIN=0, PERMUTE_V=permute_v)


def new_call(q, k, v):
    buffers = tq.fp8_buffers(q, k, v)
    tq.quantize(q, k, v, *buffers[:5], permute_v=True)
    return buffers


def old_call(q, k, v):
    buffers = tq.fp8_buffers(q, k, v)
    *_, n = tq.fp8_slots(q.shape[0], q.shape[2], k.shape[2])
    amax = torch.zeros(n, dtype=torch.int32, device=q.device)
    old_quantize(q, k, v, *buffers[:3], amax, buffers[4], True)
    return buffers


def bench(fns: dict) -> dict:
    """name -> median ms over ROUNDS interleaved do_bench timings (each the median of its reps)."""
    got = collections.defaultdict(list)
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            got[name].append(triton.testing.do_bench(fn, warmup=10, rep=40))
    return {name: statistics.median(ts) for name, ts in got.items()}


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
        if e.device_type.name == "CUDA":
            per[e.name[:40]] += e.device_time_total / iters
    return dict(per)


say("## 1-2. quantisation alone (bf16 q, k, v -> e4m3fn, v keys-contiguous in P_REGS order), d128 H16")
say("| shape | bit for bit | old: kernels us (per-kernel) | new: kernel us | old call ms | new call ms | new / old |")
say("|---|---|---|---|---|---|---|")
for b, s in SHAPES:
    q, k, v = (torch.randn(b, s, H, D, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    a, c = new_call(q, k, v), old_call(q, k, v)
    same = all(torch.equal(x.view(torch.uint8), y.view(torch.uint8)) for x, y in
               zip((a[0], a[1], tq.padded_keys(a[2])), (c[0], c[1], tq.padded_keys(c[2])))) and torch.equal(a[4], c[4])
    ko, kn = kernel_us(lambda: old_call(q, k, v)), kernel_us(lambda: new_call(q, k, v))
    t = bench({"old": lambda: old_call(q, k, v), "new": lambda: new_call(q, k, v)})
    rows.append(dict(part="quantise", b=b, s=s, bitwise=same, old_kernels_us=ko, new_kernels_us=kn, ms=t))
    ko_s = ", ".join(f"{n.split('(')[0]} {us:.1f}" for n, us in sorted(ko.items(), key=lambda x: -x[1]))
    kn_s = ", ".join(f"{n.split('(')[0]} {us:.1f}" for n, us in sorted(kn.items(), key=lambda x: -x[1]))
    say(f"| B{b} S{s} | {same} | {sum(ko.values()):.1f} ({ko_s}) | {sum(kn.values()):.1f} ({kn_s}) | "
        f"{t['old']:.4f} | {t['new']:.4f} | {t['new'] / t['old']:.3f} |")

say()
say("## window (LAG_BYTES; 0: one slot, 1048576M: every amax first), quantisation call ms (median of rounds)")
variants = {f"lag{lag >> 20}M": lag for lag in (0, 1 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 1 << 40)}
say("| shape | " + " | ".join(variants) + " |")
say("|---|" + "---|" * len(variants))
for b, s in [(16, 1024), (4, 4096), (1, 16384)]:
    q, k, v = (torch.randn(b, s, H, D, dtype=torch.bfloat16, device="cuda") for _ in range(3))

    def run(lag):
        tq.LAG_BYTES = lag
        new_call(q, k, v)
    fns = {name: (lambda lag=lag: run(lag)) for name, lag in variants.items()}
    t = bench(fns)
    rows.append(dict(part="window", b=b, s=s, ms=t))
    say(f"| B{b} S{s} | " + " | ".join(f"{t[n]:.4f}" for n in variants) + " |")
tq.LAG_BYTES = 8 << 20

say()
say("## 3. fp8 forward (quantisation included) against SDPA's bf16 forwards, TFLOP/s (x cuDNN)")
say("| point | fa_ck fp8 | cuDNN bf16 | SDPA flash bf16 | fp8 error (float64, b0 h0-1) |")
say("|---|---|---|---|---|")
for b, s in SHAPES:
    for causal in (False, True):
        q, k, v = (torch.randn(b, s, H, D, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

        def sdpa(backend):
            def f():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            return f
        fns = {"fp8": lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal),
               "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION), "flash": sdpa(SDPBackend.FLASH_ATTENTION)}
        t = bench(fns)
        flops = 4 * b * H * s * s * D / (2 if causal else 1)
        tf = {n: flops / (ms * 1e-3) / 1e12 for n, ms in t.items()}
        out = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal)
        ref, _ = reference.attention(q[:1, :, :2], k[:1, :, :2], v[:1, :, :2], causal=causal, dtype=torch.float64)
        err = float((out[:1, :, :2].double() - ref).norm() / ref.norm())
        rows.append(dict(part="fp8 forward", b=b, s=s, causal=causal, ms=t, tflops=tf, err=err))
        say(f"| B{b} S{s} {'causal' if causal else 'full'} | {tf['fp8']:.1f} ({tf['fp8'] / tf['cudnn']:.2f}x) | "
            f"{tf['cudnn']:.1f} | {tf['flash']:.1f} ({tf['flash'] / tf['cudnn']:.2f}x) | {err:.1e} |")
        del q, k, v, qt, kt, vt, out, ref
        torch.cuda.empty_cache()

json.dump(rows, open(f"{OUT}/quant_ab.json", "w"), indent=1, default=str)
open(f"{OUT}/quant_ab.md", "w").write("\n".join(lines) + "\n")
