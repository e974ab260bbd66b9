"""Where fa_ck's fwd+bwd spends its host time at B32 S512 H16 d128 causal (host_probe.py: ~720 us
per iteration against ~86 us for the forward alone): cProfile over 50 iterations, top functions."""
import cProfile
import pstats

import torch

import fa_ck

q, k, v = (torch.randn(32, 512, 16, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
do = torch.randn_like(q)


def step():
    torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=True), (q, k, v), do)


for _ in range(5):
    step()
torch.cuda.synchronize()
prof = cProfile.Profile()
prof.enable()
for _ in range(50):
    step()
prof.disable()
torch.cuda.synchronize()
stats = pstats.Stats(prof)
stats.sort_stats("tottime").print_stats(25)
stats.sort_stats("cumulative").print_stats(40)
