"""Hardware counters (Nsight Compute) of the fp8 forward's Gluon kernel, P in registers (P_REGS,
the default) and P staged through shared memory, beside fa_ck's bf16 forward and cuDNN's bf16
fprop: d128, B1 S16k H16, not causal. Each call inside its own cudaProfilerStart/Stop window after
warm-up (compiles and plan recording outside).
    ncu --profile-from-start off ... python bench/results/h200-20261201-seventeenth/ncu_fp8.py
(PYTHONPATH=python; call2.sh has the full ncu command)."""
import os

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck

b, s, h, d = 1, 16384, 16, 128
q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))


def fp8_regs():
    os.environ["FA_CK_TRITON_CONFIG"] = ""
    fa_ck.flash_attn_fp8_func(q, k, v)


def fp8_staged():
    os.environ["FA_CK_TRITON_CONFIG"] = '{"fwd": {"P_REGS": false}}'
    fa_ck.flash_attn_fp8_func(q, k, v)


def bf16():
    os.environ["FA_CK_TRITON_CONFIG"] = ""
    fa_ck.flash_attn_func(q, k, v)


def cudnn():
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        torch.nn.functional.scaled_dot_product_attention(qt, kt, vt)


for fn in (fp8_regs, fp8_staged, bf16, cudnn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(f"profiled {fn.__name__} d{d} S{s} B{b}xH{h} full", flush=True)
