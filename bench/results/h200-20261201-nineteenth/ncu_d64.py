"""Per-instruction stall samples (Nsight Compute SourceCounters) of one forward at nanoGPT's
shape (B64 S1024 H12 d64, causal, bf16): `fa_ck` (the Gluon forward, defaults) or `cudnn` (SDPA's
cuDNN backend); one call inside a cudaProfilerStart/Stop window after warm-up.
    ncu --profile-from-start off --section SourceCounters ... python ncu_d64.py fa_ck
(PYTHONPATH=python; call5.sh has the full commands)."""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck

b, s, h, d = 64, 1024, 12, 64
q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))       # SDPA's (B, H, S, D) view of the same data


def run():
    if sys.argv[1] == "fa_ck":
        return fa_ck.flash_attn_func(q, k, v, causal=True)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)


for _ in range(3):
    run()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
run()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print(f"profiled {sys.argv[1]} d{d} S{s} B{b}xH{h} causal", flush=True)
