"""Is fa_ck's fwd+bwd host-bound at the short shapes? Per iteration, back to back: the GPU's time
(CUDA events around N iterations) and the host's (wall time to enqueue the N iterations, before
the synchronise), fa_ck beside SDPA cuDNN. Run on the H200 from the repo root, PYTHONPATH=python."""
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck

N = 50
SHAPES = [(32, 512, 16, 128, True), (32, 512, 16, 128, False), (32, 512, 32, 64, True), (64, 1024, 12, 64, True),
          (4, 4096, 16, 128, True)]


def fa(q, k, v, do, causal):
    torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), do)


def fa_fwd(q, k, v, do, causal):
    with torch.no_grad():
        fa_ck.flash_attn_func(q, k, v, causal=causal)


def cudnn(q, k, v, do, causal):
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal)
    torch.autograd.grad(out, (q, k, v), do.transpose(1, 2))


print("shape | fn | host enqueue us/iter | GPU us/iter (events) | host-bound?")
for b, s, h, d, causal in SHAPES:
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    for name, fn in (("fa_ck fwd+bwd", fa), ("fa_ck fwd", fa_fwd), ("cudnn fwd+bwd", cudnn)):
        for _ in range(5):
            fn(q, k, v, do, causal)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(N):
            fn(q, k, v, do, causal)
        host = (time.perf_counter() - t0) / N * 1e6
        end.record()
        torch.cuda.synchronize()
        gpu = start.elapsed_time(end) / N * 1e3
        print(f"B{b} S{s} H{h} d{d} {'causal' if causal else 'full'} | {name} | {host:.1f} | {gpu:.1f} | "
              f"{'yes' if host > 0.9 * gpu else 'no'}", flush=True)
