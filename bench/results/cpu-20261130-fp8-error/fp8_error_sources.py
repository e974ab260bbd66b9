"""Where the fp8 forward's ~5 % error comes from (CPU, float64): issue 7 asks <= 3e-2 on N(0, 1)
inputs. Quantises only some of q, k, v and P with the kernels' scheme (per-(batch, head) amax
scaling to e4m3fn, P scaled to [0, 448] and rounded, fp32-free: all in float64) and reports
||out - ref|| / ||ref|| against the exact float64 attention.
    python bench/results/cpu-20261130-fp8-error/fp8_error_sources.py
"""
import itertools

import torch

F8 = torch.float8_e4m3fn
FMAX = torch.finfo(F8).max


def q8(x):            # per (batch, head) amax scaling, rounded to e4m3fn, back in float64
    amax = x.abs().amax(dim=(-2, -1), keepdim=True).clamp_min(1e-12)
    return (x * (FMAX / amax)).to(F8).double() * (amax / FMAX)


def attention(q, k, v, causal, quant):
    if "q" in quant:
        q = q8(q)
    if "k" in quant:
        k = q8(k)
    if "v" in quant:
        v = q8(v)
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    m = s.amax(-1, keepdim=True)
    p = torch.exp(s - m)                      # in [0, 1], as the kernel's P (row max 1)
    if "P" in quant:
        p = (p * FMAX).to(F8).double() / FMAX
    return (p @ v) / torch.exp(s - m).sum(-1, keepdim=True)


torch.manual_seed(0)
print("| quantised | d64 S1024 full | d128 S1024 full | d128 S2048 causal |")
print("|---|---|---|---|")
shapes = [(64, 1024, False), (128, 1024, False), (128, 2048, True)]
data = [(torch.randn(1, 4, s, d, dtype=torch.float64), torch.randn(1, 4, s, d, dtype=torch.float64),
         torch.randn(1, 4, s, d, dtype=torch.float64), causal) for d, s, causal in shapes]
for quant in ["q", "k", "qk", "v", "P", "qkv", "qkP", "vP", "qkvP"]:
    errs = []
    for q, k, v, causal in data:
        ref = attention(q, k, v, causal, "")
        out = attention(q, k, v, causal, quant)
        errs.append(float((out - ref).norm() / ref.norm()))
    print(f"| {quant} | " + " | ".join(f"{e:.2e}" for e in errs) + " |", flush=True)
