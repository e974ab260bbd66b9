"""Where the fp8 forward's time goes at S1024 (device call 2 of the ninth part): CUDA kernel
times from torch.profiler over 20 quantising fp8 calls, 20 calls on already-quantised inputs,
and 20 bf16 calls, B16 S1024 H16 d128 and the nanoGPT shape.
    python bench/results/h200-20261130-ninth/call2_fp8prof.py
"""
import importlib

import torch
from torch.profiler import ProfilerActivity, profile

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
f8 = torch.float8_e4m3fn

for b, s, h, d in [(16, 1024, 16, 128), (64, 1024, 12, 64), (1, 16384, 16, 128)]:
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    (q8, qd), (k8, kd) = (tb.quantize_fp8(t, f8) for t in (q, k))
    v8, vd = tb.quantize_fp8(v, f8, keys_contiguous=True)
    calls = {"fp8 call": lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=True, backend="triton"),
             "fp8 inputs": lambda: fa_ck.flash_attn_fp8_func(q8, k8, v8, causal=True, q_descale=qd, k_descale=kd,
                                                             v_descale=vd, backend="triton"),
             "bf16 call": lambda: fa_ck.flash_attn_func(q, k, v, causal=True, backend="triton")}
    for name, fn in calls.items():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
        rows = [(e.key, e.device_time_total / 20, e.count // 20) for e in prof.key_averages() if e.device_time_total > 0]
        rows.sort(key=lambda r: -r[1])
        print(f"B{b} S{s} H{h} d{d} causal, {name}: " + "; ".join(f"{key[:48]} {t:.0f} us x{n}" for key, t, n in rows[:5]),
              flush=True)
