"""Host (CPU) time per call: fa_ck against SDPA cuDNN / flash on tiny shapes, where the GPU
finishes long before the next launch, so the loop's wall time is the host's; then cProfile of
fa_ck's fwd+bwd. Call 2's profile put 0.5-0.7 ms per fwd+bwd of idle GPU at S1024.
    PYTHONPATH=$PWD/python python3 bench/results/h200-20261130-bwd/call3_host.py"""
import cProfile
import os
import pstats
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck


def step(kind, q, k, v, qt, kt, vt, bwd):
    if kind in ("cudnn", "flash"):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION if kind == "cudnn" else SDPBackend.FLASH_ATTENTION):
            out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
        args = (qt, kt, vt)
    else:
        os.environ["FA_CK_TRITON_CONFIG"] = '{"bwd_dkdv": {"GLUON": true}}' if kind == "gbwd" else "{}"
        out = fa_ck.flash_attn_func(q, k, v, causal=True)
        args = (q, k, v)
    if bwd:
        torch.autograd.grad(out, args, out)


for d in (64, 128):
    q, k, v = (torch.randn(1, 128, 2, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    qt, kt, vt = (x.detach().transpose(1, 2).requires_grad_() for x in (q, k, v))
    for bwd in (False, True):
        for kind in ("triton", "gbwd", "cudnn", "flash"):
            if kind == "gbwd" and not bwd:
                continue
            for _ in range(20):
                step(kind, q, k, v, qt, kt, vt, bwd)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(200):
                step(kind, q, k, v, qt, kt, vt, bwd)
            host = (time.perf_counter() - t0) / 200
            torch.cuda.synchronize()
            print(f"d{d} {'fwd+bwd' if bwd else 'fwd    '} {kind:<7} host {host * 1e6:7.1f} us per call", flush=True)

q, k, v = (torch.randn(1, 128, 2, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
prof = cProfile.Profile()
prof.enable()
for _ in range(200):
    step("triton", q, k, v, None, None, None, True)
prof.disable()
torch.cuda.synchronize()
stats = pstats.Stats(prof)
stats.sort_stats("tottime").print_stats(30)
stats.sort_stats("cumulative").print_stats(45)
