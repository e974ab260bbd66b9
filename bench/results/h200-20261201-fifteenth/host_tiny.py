"""fa_ck's host time per call where the GPU cannot be the bound (B1 S128 H2 d64, ~10 us of kernels),
back to back: forward without autograd, forward recording a graph (no backward), forward + backward;
SDPA cuDNN beside. Then perf_counter wrappers (each line includes what it calls) over the fwd+bwd:
where the time goes between torch.autograd.grad and the triton backend."""
import collections
import importlib
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck
from fa_ck import interface, ops

tb = importlib.import_module("fa_ck.backends.triton")
plans = importlib.import_module("fa_ck.backends.triton.plans")
N = 200
q, k, v = (torch.randn(1, 128, 2, 64, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
do = torch.randn_like(q)


def fa_nograd():
    with torch.no_grad():
        fa_ck.flash_attn_func(q, k, v, causal=True)


def fa_graph():
    fa_ck.flash_attn_func(q, k, v, causal=True)


def fa_both():
    torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=True), (q, k, v), do)


def cudnn_fwd():
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)


def cudnn_both():
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    torch.autograd.grad(out, (q, k, v), do.transpose(1, 2))


def host_us(fn):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(N):
        fn()
    t = (time.perf_counter() - t0) / N * 1e6
    torch.cuda.synchronize()
    return t


for fn in (fa_nograd, fa_graph, fa_both, cudnn_fwd, cudnn_both, fa_both):
    print(f"{fn.__name__:10s} {host_us(fn):7.1f} us per call (host)", flush=True)

spent = collections.Counter()


def timed(owner, name, label):
    real = getattr(owner, name)

    def wrapper(*a, **kw):
        t0 = time.perf_counter()
        try:
            return real(*a, **kw)
        finally:
            spent[label] += time.perf_counter() - t0
    setattr(owner, name, wrapper)


for owner, name, label in (
        (interface, "_check_batched", "1 interface._check_batched"), (interface, "_params", "1 interface._params"),
        (interface, "_run", "1 interface._run"), (ops.dispatch, "choose", "2 dispatch.choose"),
        (ops, "_forward", "2 ops._forward"), (tb, "_forward", "3 tb._forward"), (ops, "_grads", "1 ops._grads"),
        (tb, "_backward", "2 tb._backward"), (plans._Plan, "replay", "4 _Plan.replay"),
        (plans, "run_compiled", "5 run_compiled"), (plans, "_plan_key", "4 _plan_key"),
        (tb, "_dq_accumulator", "4 _dq_accumulator"), (tb, "_empty", "4 _empty"),
        (torch.autograd, "grad", "0 torch.autograd.grad")):
    timed(owner, name, label)
fn = fa_both
for _ in range(10):
    fn()
torch.cuda.synchronize()
spent.clear()
t0 = time.perf_counter()
for _ in range(N):
    fn()
total = (time.perf_counter() - t0) / N * 1e6
torch.cuda.synchronize()
print(f"fa_both with wrappers: {total:.1f} us per call; per call:")
for name, t in sorted(spent.items()):
    print(f"  {t / N * 1e6:8.1f} us  {name}")
