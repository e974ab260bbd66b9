"""Per-kernel GPU time of one fwd+bwd at the sweep's short shapes (S512, and nanoGPT's), fa_ck beside
SDPA cuDNN, from torch.profiler: where the short-sequence gap lies (kernel by kernel, with the
launch count). Run on the H200 from the repo root with PYTHONPATH=python."""
import collections
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import fa_ck

SHAPES = [(32, 512, 16, 128, True), (32, 512, 32, 64, True), (32, 512, 16, 128, False), (64, 1024, 12, 64, True)]
ITERS = 20


def run_fa(q, k, v, do, causal):
    out = fa_ck.flash_attn_func(q, k, v, causal=causal)
    torch.autograd.grad(out, (q, k, v), do)


def run_cudnn(q, k, v, do, causal):
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal)
    torch.autograd.grad(out, (q, k, v), do.transpose(1, 2))


for b, s, h, d, causal in SHAPES:
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    print(f"\n## B{b} S{s} H{h} d{d} {'causal' if causal else 'full'}: per fwd+bwd, us (launches)")
    for name, fn in (("fa_ck", run_fa), ("cudnn", run_cudnn)):
        for _ in range(3):
            fn(q, k, v, do, causal)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(ITERS):
                fn(q, k, v, do, causal)
            torch.cuda.synchronize()
        per = collections.defaultdict(lambda: [0.0, 0])
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                key = e.name[:70]
                per[key][0] += e.time_range.elapsed_us()
                per[key][1] += 1
        total = sum(t for t, _ in per.values()) / ITERS
        print(f"{name}: {total:.1f} us of kernels")
        for key, (t, n) in sorted(per.items(), key=lambda kv: -kv[1][0]):
            print(f"   {t / ITERS:8.1f}  ({n / ITERS:.0f})  {key}")
sys.stdout.flush()
