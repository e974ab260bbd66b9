"""Where fwd+bwd time goes (device call 1 of the tenth part): per kernel, the CUDA time of one
fa_ck fwd+bwd call beside SDPA cuDNN's and flash's (torch.profiler over 10 calls), and the wall
time of a call (10 back to back, synchronised once), so host-bound points show as wall > kernels.
    python bench/results/h200-20261130-tenth/call1_prof.py
"""
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import fa_ck

SHAPES = [(64, 1024, 12, 64, True), (16, 1024, 32, 64, False), (16, 1024, 32, 64, True), (4, 4096, 32, 64, True),
          (16, 1024, 16, 128, True), (4, 4096, 16, 128, False), (4, 4096, 16, 128, True)]

for b, s, h, d, causal in SHAPES:
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    g = torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda")

    def ours():
        q.grad = k.grad = v.grad = None
        fa_ck.flash_attn_func(q, k, v, causal=causal, backend="triton").backward(g)

    def sdpa(backend):
        def call():
            q.grad = k.grad = v.grad = None
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=causal).backward(g.transpose(1, 2))
        return call

    for name, fn in [("fa_ck", ours), ("cudnn", sdpa(SDPBackend.CUDNN_ATTENTION)),
                     ("flash", sdpa(SDPBackend.FLASH_ATTENTION))]:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t) / 10 * 1e3
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                fn()
            torch.cuda.synchronize()
        rows = [(e.key, e.device_time_total / 10, e.count // 10) for e in prof.key_averages() if e.device_time_total > 0]
        rows.sort(key=lambda r: -r[1])
        total = sum(r[1] for r in rows) / 1e3
        print(f"B{b} S{s} H{h} d{d} {'causal' if causal else 'full'} {name}: wall {wall:.3f} ms, kernels {total:.3f} ms: "
              + "; ".join(f"{key[:40]} {t:.0f}us x{n}" for key, t, n in rows[:6]), flush=True)
