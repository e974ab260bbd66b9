"""The fp8 forward's parts, timed apart (device call 2 of the eighth part): the amax reduction,
quantising q (head-dim-contiguous) and v (keys-contiguous), the whole quantising call, the fp8
kernel alone on quantised inputs, and the bf16 forward; CUDA events, median of 3 x 20 launches.
    python bench/results/h200-20261130-eighth/call2_fp8parts.py
"""
import importlib

import torch

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
f8 = torch.float8_e4m3fn


def timed(fn, reps=20):
    fn()
    out = []
    for _ in range(3):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
        torch.cuda.synchronize()
        out.append(e0.elapsed_time(e1) / reps * 1e3)
    return sorted(out)[1]


print("| shape | amax | quantise q | quantise v | fp8 call | fp8 kernel alone | bf16 call | us |")
print("|---|---|---|---|---|---|---|---|")
for b, s, h, d in [(16, 1024, 16, 128), (4, 4096, 16, 128), (1, 16384, 16, 128), (64, 1024, 12, 64)]:
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    amax = timed(lambda: torch.linalg.vector_norm(q, ord=float("inf"), dim=(1, 3), dtype=torch.float32))
    quant_q = timed(lambda: tb.quantize_fp8(q, f8))
    quant_v = timed(lambda: tb.quantize_fp8(v, f8, keys_contiguous=True))
    call = timed(lambda: fa_ck.flash_attn_fp8_func(q, k, v, backend="triton"))
    (q8, qd), (k8, kd) = (tb.quantize_fp8(t, f8) for t in (q, k))
    v8, vd = tb.quantize_fp8(v, f8, keys_contiguous=True)
    alone = timed(lambda: fa_ck.flash_attn_fp8_func(q8, k8, v8, q_descale=qd, k_descale=kd, v_descale=vd,
                                                    backend="triton"))
    bf16 = timed(lambda: fa_ck.flash_attn_func(q, k, v, backend="triton"))
    print(f"| B{b} S{s} H{h} d{d} | {amax:.0f} | {quant_q:.0f} | {quant_v:.0f} | {call:.0f} | {alone:.0f} | {bf16:.0f} | |",
          flush=True)
