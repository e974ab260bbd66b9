"""Nsight Compute counters of fa_ck's backward under a causal mask, GQA against plain multi-head
attention of the same q heads (so the same work: d64 B4 S4k Hq32 with 8 or 32 kv heads; d128 B4
S4k Hq16 with 4 or 16), where GQA's fwd+bwd lags cuDNN's (h200-20261203-splits: 0.88x d64, 0.95x
d128) and plain attention does not. Each backward inside its own cudaProfilerStart/Stop window
after warm-up (compiles and plan recording outside).
    ncu --profile-from-start off ... python3 bench/results/h200-20261203-no-q8/ncu_gqa.py
(PYTHONPATH=python; call1.sh has the full ncu command)."""
import torch

import fa_ck

CASES = [("d64-gqa", 64, 32, 8), ("d64-mha", 64, 32, 32), ("d128-gqa", 128, 16, 4), ("d128-mha", 128, 16, 16)]
b, s = 4, 4096

for name, d, hq, hkv in CASES:
    q = torch.randn(b, s, hq, d, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    k, v = (torch.randn(b, s, hkv, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(2))
    out = fa_ck.flash_attn_func(q, k, v, causal=True)
    do = torch.randn_like(out)
    for _ in range(3):
        torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(f"profiled {name}: d{d} B{b} S{s} Hq{hq} Hkv{hkv} causal backward", flush=True)
