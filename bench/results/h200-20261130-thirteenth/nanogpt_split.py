"""Where the nanoGPT shape's forward + backward time goes (issue 6): per-kernel GPU time of one
call (forward, then backward with a fresh dO) from torch.profiler, for fa_ck's Triton backend and
SDPA cuDNN / flash, bf16, B64 H12 S1024 d64 causal (and d128 S4k B4 H16 causal for scale).
    python bench/results/h200-20261130-thirteenth/nanogpt_split.py      (PYTHONPATH=python)"""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import fa_ck

REPS = 10
for b, s, h, d in ((64, 1024, 12, 64), (4, 4096, 16, 128)):
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    do = torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda")
    # SDPA in its own layout, (B, H, S, D) contiguous: no copies timed with it
    qt, kt, vt = (t.detach().transpose(1, 2).contiguous().requires_grad_() for t in (q, k, v))
    dot = do.transpose(1, 2).contiguous()

    def ours():
        fa_ck.flash_attn_func(q, k, v, causal=True).backward(do)

    def sdpa(backend):
        def run():
            with sdpa_kernel(backend):
                torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True).backward(dot)
        return run
    flops = 3.5 * 4 * b * h * s * s * d / 2
    print(f"\n## fwd+bwd d{d} S{s} B{b}xH{h} causal: GPU us per call (kernel: us)")
    for name, fn in (("fa_ck triton", ours), ("sdpa cudnn", sdpa(SDPBackend.CUDNN_ATTENTION)),
                     ("sdpa flash", sdpa(SDPBackend.FLASH_ATTENTION))):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(REPS):
                fn()
            torch.cuda.synchronize()
        rows = [(e.key, e.device_time_total / REPS) for e in prof.key_averages() if e.device_time_total > 0]
        rows.sort(key=lambda r: -r[1])
        total = sum(t for _, t in rows)
        print(f"{name}: {total:.1f} us ({flops / total / 1e6:.0f} TFLOP/s) = " +
              ", ".join(f"{k[:48]}: {t:.1f}" for k, t in rows[:8]))
