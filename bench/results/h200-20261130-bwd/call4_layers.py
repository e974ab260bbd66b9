"""Host time per call, layer by layer (tiny bf16 shape B1 S128 H2 d128 causal, so the GPU is
never the bottleneck): where do fa_ck's ~0.85 ms per forward and ~2.1 ms per fwd+bwd go
(call 3), against SDPA's 0.09 / 0.3 ms?
    PYTHONPATH=$PWD/python python3 bench/results/h200-20261130-bwd/call4_layers.py"""
import importlib
import time

import torch
import triton
import triton.language as tl

import fa_ck
from fa_ck import dispatch, interface, ops

tb = importlib.import_module("fa_ck.backends.triton")


def host(name, fn, n=300):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    us = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    print(f"{name:<58} {us:8.1f} us", flush=True)


@triton.jit
def _copy(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)


@torch.library.custom_op("probe::ident", mutates_args=())
def _ident(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


q, k, v = (torch.randn(1, 128, 2, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
p = interface._params(q, k, batch=1, causal=True, scale=None, window_size=(-1, -1), alibi_slopes=None,
                      softcap=0.0, dropout_p=0.0, deterministic=False, fp8=False)
x = torch.randn(4096, device="cuda")
y = torch.empty_like(x)
host("baseline: tiny triton kernel launch", lambda: _copy[(4,)](x, y, 4096, BLOCK=1024))
host("baseline: x.clone()", lambda: x.clone())
host("baseline: trivial custom op (clone)", lambda: _ident(x))
with torch.no_grad():
    host("flash_attn_func fwd (no grad)", lambda: fa_ck.flash_attn_func(q, k, v, causal=True))
    host("  interface._params", lambda: interface._params(q, k, batch=1, causal=True, scale=None, window_size=(-1, -1),
                                                          alibi_slopes=None, softcap=0.0, dropout_p=0.0,
                                                          deterministic=False, fp8=False))
    host("  dispatch.choose", lambda: dispatch.choose(q, k, v, p, "auto"))
    host("  ops.attention (choose + custom op)", lambda: ops.attention(q, k, v, p, "auto"))
    host("  ops.fwd custom op, backend triton", lambda: ops.fwd(q, k, v, None, None, 128, 128, p.scale, True, -1, 0,
                                                                None, 0.0, 0.0, None, False, "triton"))
    host("  triton backend forward()", lambda: tb.forward(q, k, v, p))
    host("    _config fwd", lambda: tb._config("fwd", q, 128, p, 128, 128, True, bench=None, gluon_possible=True))
    host("    _gluon_ok + _tma_ok", lambda: (tb._gluon_ok(q, k, v, q, p), tb._tma_ok(k, v)))
    cfg = tb._config("fwd", q, 128, p, 128, 128, True, bench=None, gluon_possible=True)
    out, lse = torch.empty_like(q), torch.empty(1, 2, 128, device="cuda")
    _, _, _, cu_q, cu_k = tb._extras(q, p)
    scal = tb._scalars(p)
    host("    _extras + _flags + _scalars", lambda: (tb._extras(q, p), tb._flags(q, p, 128), tb._scalars(p)))
    host("    gluon forward launch alone", lambda: tb._forward_gluon(q, k, v, out, lse, cu_q, cu_k, p, cfg, 128, 128,
                                                                     2, 2, 1, 128, scal))
    o, l = tb.forward(q, k, v, p)
    host("  triton backend backward()", lambda: tb.backward(o, q, k, v, o, l, p))
    host("  ops.bwd custom op", lambda: ops.bwd(o, q, k, v, o, l, None, None, None, 128, 128, p.scale, True, -1, 0,
                                                None, 0.0, 0.0, None, False, "triton"))
out = fa_ck.flash_attn_func(q, k, v, causal=True)
host("fwd + autograd.grad", lambda: torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=True), (q, k, v), out))
host("fwd only, grad enabled (autograd node built)", lambda: fa_ck.flash_attn_func(q, k, v, causal=True))
