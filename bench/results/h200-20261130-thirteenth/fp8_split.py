"""Where the fp8 forward's time goes (issue 7): per-kernel GPU time of one fa_ck fp8 forward call
(bf16 in: amax, quantise, attention) from torch.profiler, beside fa_ck's bf16 forward and SDPA
cuDNN's, d128, S4k (B4 H16) and S16k (B1 H16), full and causal.
    python bench/results/h200-20261130-thirteenth/fp8_split.py      (PYTHONPATH=python)"""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import fa_ck

REPS = 20
for b, s in ((4, 4096), (1, 16384)):
    for causal in (False, True):
        q, k, v = (torch.randn(b, s, 16, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        calls = {
            "fa_ck fp8": lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal),
            "fa_ck bf16": lambda: fa_ck.flash_attn_func(q, k, v, causal=causal),
        }
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        calls["sdpa cudnn"] = cudnn
        print(f"\n## d128 S{s} B{b}xH16 {'causal' if causal else 'full'}: GPU us per call (kernel: us)")
        for name, fn in calls.items():
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(REPS):
                    fn()
                torch.cuda.synchronize()
            rows = [(e.key, e.device_time_total / REPS) for e in prof.key_averages()
                    if e.device_time_total > 0]
            rows.sort(key=lambda r: -r[1])
            total = sum(t for _, t in rows)
            flops = 4 * b * 16 * s * s * 128 / (2 if causal else 1)
            print(f"{name}: {total:.1f} us ({flops / total / 1e6:.0f} TFLOP/s) = " +
                  ", ".join(f"{k[:40]}: {t:.1f}" for k, t in rows[:6]))
