"""Where the backward's host time goes on the H200's host (device call 7 of the ninth part): the
backend's backward (plans on) called 200 times directly from the main thread, then from
autograd (out.backward, its own thread), B1 S128 H1 d64 causal bf16; then a cProfile of the
direct calls (main thread), top 25 by internal time.
    python bench/results/h200-20261130-ninth/call7_bwdhost.py
"""
import cProfile
import importlib
import pstats
import time

import torch

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
q, k, v = (torch.randn(1, 128, 1, 64, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
g = torch.randn_like(q)
p = fa_ck.interface._params(q, k, batch=1, causal=True, scale=None, window_size=(-1, -1), alibi_slopes=None,
                            softcap=0.0, dropout_p=0.0, deterministic=False, fp8=False)
qd, kd, vd = (t.detach() for t in (q, k, v))
od, lse = tb.forward(qd, kd, vd, p)
for _ in range(20):
    tb.backward(g, qd, kd, vd, od, lse.detach(), p)
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(200):
    tb.backward(g, qd, kd, vd, od, lse.detach(), p)
direct = (time.perf_counter() - t) / 200 * 1e6
torch.cuda.synchronize()
spent = [0.0]
real = tb.backward


def timed(*a, **kw):
    t0 = time.perf_counter()
    try:
        return real(*a, **kw)
    finally:
        spent[0] += time.perf_counter() - t0


tb.backward = timed
for _ in range(20):
    fa_ck.flash_attn_func(q, k, v, causal=True, backend="triton").backward(g)
torch.cuda.synchronize()
spent[0] = 0.0
t = time.perf_counter()
for _ in range(200):
    fa_ck.flash_attn_func(q, k, v, causal=True, backend="triton").backward(g)
both = (time.perf_counter() - t) / 200 * 1e6
torch.cuda.synchronize()
tb.backward = real
print(f"backend backward from the main thread: {direct:.0f} us per call; from autograd: {spent[0] / 200 * 1e6:.0f} us "
      f"(fwd+bwd {both:.0f} us)", flush=True)
pr = cProfile.Profile()
pr.enable()
for _ in range(200):
    tb.backward(g, qd, kd, vd, od, lse.detach(), p)
torch.cuda.synchronize()
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
