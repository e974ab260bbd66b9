"""GPU time per kernel of one fp8 forward (bf16 q, k, v quantised per call), by torch.profiler over
20 calls, at d128 S512 / S1024 full and causal: the quantisation's kernels beside the attention
kernel. Run on the H200 from the repo root with PYTHONPATH set to the tree to measure."""
import collections

import torch
from torch.profiler import ProfilerActivity, profile

import fa_ck

ITERS = 20
for b, s, h, causal in [(32, 512, 16, False), (32, 512, 16, True), (16, 1024, 16, False)]:
    q, k, v = (torch.randn(b, s, h, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    for _ in range(5):
        fa_ck.flash_attn_fp8_func(q, k, v, causal=causal)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(ITERS):
            fa_ck.flash_attn_fp8_func(q, k, v, causal=causal)
        torch.cuda.synchronize()
    per = collections.defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type.name == "CUDA":
            per[e.name][0] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            per[e.name][1] += 1
    total = sum(t for t, _ in per.values()) / ITERS
    print(f"## B{b} S{s} H{h} d128 {'causal' if causal else 'full'}: {total:.1f} us of kernels per fp8 call")
    for name, (t, n) in sorted(per.items(), key=lambda kv: -kv[1][0]):
        print(f"  {t / ITERS:8.1f}  ({n / ITERS:.0f})  {name[:70]}")
