"""Where fa_ck's host time per fwd+bwd goes once the eager path is in (call 5 of h200-20261130-bwd:
~1.08 ms per fwd+bwd vs cuDNN's 0.35 ms; the backend's own Python ~0.36 ms): time each layer of
the backward from inside autograd's engine thread, then cProfile that thread.
Tiny bf16 shape (B1 S128 H2 d128 causal): the GPU never waits for itself, so loop time = host time.
    PYTHONPATH=$PWD/python python3 bench/results/h200-20261130-sixth/call1_engine.py"""
import cProfile
import collections
import importlib
import pstats
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck
from fa_ck import ops

tb = importlib.import_module("fa_ck.backends.triton")
spent = collections.defaultdict(float)


def timed(name, fn):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - t0
    return wrapper


# layers, outermost first (each wrapper's time includes the ones below it)
ops._Eager.backward = staticmethod(timed("1 _Eager.backward", ops._Eager.backward))
ops._grads = timed("2 ops._grads", ops._grads)
tb._backward = timed("3 triton._backward", tb._backward)
tb._dkdv_gluon = timed("4a launch dkdv gluon", tb._dkdv_gluon)
tb._dq_gluon = timed("4b launch dq gluon", tb._dq_gluon)
tb.bwd_preprocess = tb.bwd_preprocess    # Triton JIT object; timed through its run() below
_run = type(tb.bwd_preprocess).run
pre = tb.bwd_preprocess


def run_timed(self, *args, **kwargs):
    t0 = time.perf_counter()
    try:
        return _run(self, *args, **kwargs)
    finally:
        spent["5 any triton JIT run() (incl. gluon)"] += time.perf_counter() - t0


type(tb.bwd_preprocess).run = run_timed
ops._Eager.forward = staticmethod(timed("0 _Eager.forward", ops._Eager.forward))
tb._forward = timed("0b triton._forward", tb._forward)


def measure(label, fn, n=300):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    spent.clear()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    wall = (time.perf_counter() - t0) / n
    torch.cuda.synchronize()
    print(f"{label:<52} wall {wall * 1e6:7.1f} us per call", flush=True)
    for name in sorted(spent):
        print(f"    {name:<48} {spent[name] / n * 1e6:7.1f} us", flush=True)


for d, kw in ((128, {}), (64, {})):
    q, k, v = (torch.randn(1, 128, 2, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    qt, kt, vt = (x.detach().transpose(1, 2).requires_grad_() for x in (q, k, v))
    out = fa_ck.flash_attn_func(q, k, v, causal=True)
    go = torch.randn_like(out)
    measure(f"d{d} fa_ck fwd only (no grad)", lambda: fa_ck.flash_attn_func(q.detach(), k.detach(), v.detach(), causal=True))
    measure(f"d{d} fa_ck fwd (grad on)", lambda: fa_ck.flash_attn_func(q, k, v, causal=True))
    measure(f"d{d} fa_ck fwd + autograd.grad", lambda: torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=True),
                                                                         (q, k, v), go))
    measure(f"d{d} fa_ck fwd + .backward()", lambda: fa_ck.flash_attn_func(q, k, v, causal=True).backward(go))
    o, lse, _ = ops.attention(q.detach(), k.detach(), v.detach(), fa_ck.interface._params(
        q, k, batch=1, causal=True, scale=None, window_size=(-1, -1), alibi_slopes=None, softcap=0.0, dropout_p=0.0,
        deterministic=False, fp8=False), "auto")
    p = fa_ck.interface._params(q, k, batch=1, causal=True, scale=None, window_size=(-1, -1), alibi_slopes=None,
                                softcap=0.0, dropout_p=0.0, deterministic=False, fp8=False)
    measure(f"d{d} ops._grads on the main thread", lambda: ops._grads(go, q, k, v, o, lse, None, p, "triton"))
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        def sd():
            with sdpa_kernel(be):
                y = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
            torch.autograd.grad(y, (qt, kt, vt), go.transpose(1, 2))
        measure(f"d{d} sdpa {name} fwd + autograd.grad", sd)

# cProfile inside the engine thread: enable around each _Eager.backward call
prof = cProfile.Profile()
inner = ops._Eager.backward


def profiled(ctx, *grads):
    prof.enable()
    try:
        return inner(ctx, *grads)
    finally:
        prof.disable()


ops._Eager.backward = staticmethod(profiled)
q, k, v = (torch.randn(1, 128, 2, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
go = torch.randn_like(q)
for _ in range(300):
    torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=True), (q, k, v), go)
torch.cuda.synchronize()
stats = pstats.Stats(prof)
stats.sort_stats("tottime").print_stats(30)
stats.sort_stats("cumulative").print_stats(40)
