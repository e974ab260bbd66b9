"""Where the host time of fa_ck's fwd+bwd goes at B32 S512 H16 d128 causal, without a profiler's
overhead: wrappers add up perf_counter time per function (nested: each line includes those it
calls), per iteration of back-to-back fwd+bwd (call 4: ~720 us of host time per iteration, ~86 us
for the forward alone)."""
import collections
import importlib
import time

import torch

import fa_ck
from fa_ck import ops

tb = importlib.import_module("fa_ck.backends.triton")
plans = importlib.import_module("fa_ck.backends.triton.plans")
launch_gluon = importlib.import_module("fa_ck.backends.triton.launch_gluon")
spent = collections.Counter()


def timed(owner, name, label=None):
    real = getattr(owner, name)

    def wrapper(*a, **kw):
        t0 = time.perf_counter()
        try:
            return real(*a, **kw)
        finally:
            spent[label or name] += time.perf_counter() - t0
    setattr(owner, name, wrapper)


q, k, v = (torch.randn(32, 512, 16, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
do = torch.randn_like(q)


def step():
    t0 = time.perf_counter()
    out = fa_ck.flash_attn_func(q, k, v, causal=True)
    t1 = time.perf_counter()
    g = torch.autograd.grad(out, (q, k, v), do)
    t2 = time.perf_counter()
    spent["0 step: flash_attn_func"] += t1 - t0
    spent["0 step: autograd.grad"] += t2 - t1
    return g


for _ in range(5):
    step()
torch.cuda.synchronize()
timed(ops, "_grads", "1 ops._grads")
timed(tb, "_backward", "2 tb._backward")
timed(tb, "_forward", "2 tb._forward")
timed(plans._Plan, "replay", "3 _Plan.replay")
timed(plans, "run_compiled", "4 run_compiled")
timed(plans, "_plan_key", "3 _plan_key")
timed(tb, "_dq_accumulator", "3 _dq_accumulator")
timed(tb, "_empty", "3 _empty")
timed(plans, "_tma_allocator", "4 _tma_allocator")
timed(plans, "_rebased", "4 _rebased")
N = 50
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(N):
    step()
host = time.perf_counter() - t0
torch.cuda.synchronize()
print(f"host per iteration {host / N * 1e6:.1f} us (enqueue, before the synchronise)")
for name, t in sorted(spent.items()):
    print(f"  {t / N * 1e6:8.1f} us  {name}")
