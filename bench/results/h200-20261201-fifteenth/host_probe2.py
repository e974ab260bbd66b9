"""host_probe.py's question again, from an empty queue: per step the host's enqueue time (synchronised
before each step, so no launch can block on a full queue) and the GPU's time for it (events), fa_ck's
fwd+bwd split into its forward and its autograd.grad, beside SDPA cuDNN."""
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck

SHAPES = [(32, 512, 16, 128, True), (32, 512, 32, 64, True), (64, 1024, 12, 64, True)]


def fa(q, k, v, do, causal):
    t0 = time.perf_counter()
    out = fa_ck.flash_attn_func(q, k, v, causal=causal)
    t1 = time.perf_counter()
    torch.autograd.grad(out, (q, k, v), do)
    return t1 - t0, time.perf_counter() - t1


def cudnn(q, k, v, do, causal):
    t0 = time.perf_counter()
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal)
    t1 = time.perf_counter()
    torch.autograd.grad(out, (q, k, v), do.transpose(1, 2))
    return t1 - t0, time.perf_counter() - t1


print("shape | fn | host fwd us | host bwd us | GPU us (events) | medians of 30 steps, each from an empty queue")
for b, s, h, d, causal in SHAPES:
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    for name, fn in (("fa_ck", fa), ("cudnn", cudnn)):
        for _ in range(5):
            fn(q, k, v, do, causal)
        hf, hb, g = [], [], []
        for _ in range(30):
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            a, bb = fn(q, k, v, do, causal)
            end.record()
            torch.cuda.synchronize()
            hf.append(a * 1e6)
            hb.append(bb * 1e6)
            g.append(start.elapsed_time(end) * 1e3)
        print(f"B{b} S{s} H{h} d{d} {'causal' if causal else 'full'} | {name} | {statistics.median(hf):.1f} | "
              f"{statistics.median(hb):.1f} | {statistics.median(g):.1f}", flush=True)
