"""One fp8 forward of fa_ck (bf16 inputs quantised, the Gluon kernel, defaults) at d128 S16k B1 H16
full, or with `bf16` the bf16 forward, inside a cudaProfilerStart/Stop window after warm-up, for
Nsight Compute's per-pipe counters (call4.sh).
    ncu --profile-from-start off --section ComputeWorkloadAnalysis ... python ncu_fp8.py fp8|bf16"""
import sys

import torch

import fa_ck

b, s, h, d = 1, 16384, 16, 128
q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))


def run():
    if sys.argv[1] == "fp8":
        return fa_ck.flash_attn_fp8_func(q, k, v)
    return fa_ck.flash_attn_func(q, k, v)


for _ in range(3):
    run()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
run()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
print(f"profiled {sys.argv[1]} d{d} S{s} B{b}xH{h} full", flush=True)
