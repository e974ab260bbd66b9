"""Per-instruction stall samples (Nsight Compute SourceCounters) of one forward: `fp8` (the
Gluon fp8 kernel, P in registers, the default) or `bf16` (fa_ck's Gluon bf16 forward); d128, B1
S16k H16, not causal; one call inside a cudaProfilerStart/Stop window after warm-up.
    ncu --profile-from-start off --section SourceCounters ... python ncu_src.py fp8
(PYTHONPATH=python; call2.sh has the full commands)."""
import sys

import torch

import fa_ck

b, s, h, d = 1, 16384, 16, 128
q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
fn = {"fp8": fa_ck.flash_attn_fp8_func, "bf16": fa_ck.flash_attn_func}[sys.argv[1]]
for _ in range(3):
    fn(q, k, v)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
fn(q, k, v)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print(f"profiled {sys.argv[1]} d{d} S{s} B{b}xH{h} full", flush=True)
