"""Host time per call and short-sequence speed, with and without this commit's host-side
savings, alternated in one process (3 rounds, median):
  slow   Triton's launch path for every launch, the kernel configuration worked out on every
         call, a fresh TMA scratch allocation per launch (the previous commit's behaviour)
  fast   launch.py's direct launch of an already-compiled kernel, configurations remembered per
         call signature, one reused scratch buffer per stream
Host time: a tiny bf16 shape (B1 S128 H2 causal), so the loop's wall time is the host's.
Speed: fwd+bwd TFLOP/s at the short points where the host bounds us, beside SDPA cuDNN and flash.
    PYTHONPATH=$PWD/python python3 bench/results/h200-20261130-sixth/call4_host.py"""
import importlib
import time

import torch
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
FAST = (tb.launch, tb._config, tb._SCRATCH)


class Forgetful(dict):
    def __setitem__(self, key, value):
        pass


def use(kind):
    if kind == "slow":
        tb.launch = lambda kernel, grid, args, constexprs: kernel[grid](*args, **constexprs)
        tb._config = (lambda kernel, q, head_dim, p, sq, sk, tma_possible, bench=None, gluon_possible=False:
                      tb._work_out_config(kernel, q, head_dim, p, sq, sk, tma_possible, bench, gluon_possible))
        tb._SCRATCH = Forgetful()              # (_scratch then allocates afresh for every launch)
    else:
        tb.launch, tb._config, tb._SCRATCH = FAST


def sdpa(be, causal):
    def fn(q, k, v, g):
        with sdpa_kernel(be):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return torch.autograd.grad(out, (q, k, v), g)
    return fn


def ours(q, k, v, g, causal=True):
    return torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), g)


def host_us(fn, n=300):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    us = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    return us


rows = []
for d in (128, 64):
    q, k, v = (torch.randn(1, 128, 2, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    g = torch.randn_like(q)
    qt, kt, vt, gt = (x.detach().transpose(1, 2).requires_grad_() for x in (q, k, v, g))
    res = {}
    for _ in range(3):
        for kind in ("slow", "fast"):
            use(kind)
            res.setdefault(f"{kind} fwd", []).append(host_us(lambda: fa_ck.flash_attn_func(q, k, v, causal=True)))
            res.setdefault(f"{kind} fwd+bwd", []).append(host_us(lambda: ours(q, k, v, g)))
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            res.setdefault(f"{name} fwd+bwd", []).append(host_us(lambda: sdpa(be, True)(qt, kt, vt, gt)))
    print(f"host d{d}: " + ", ".join(f"{key} {sorted(v_)[1]:.0f} us" for key, v_ in res.items()), flush=True)

SHAPES = {"d128 S1024 full": (16, 16, 1024, 128, False), "d128 S1024 causal": (16, 16, 1024, 128, True),
          "nanogpt d64 S1024 causal": (64, 12, 1024, 64, True), "d64 S1024 full": (16, 32, 1024, 64, False),
          "d128 S4096 causal": (4, 16, 4096, 128, True)}
for name, (b, h, s, d, causal) in SHAPES.items():
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    g = torch.randn_like(q)
    qt, kt, vt, gt = (x.detach().transpose(1, 2).requires_grad_() for x in (q, k, v, g))
    flops = 3.5 * 4 * b * h * s * s * d / (2 if causal else 1)
    res = {}
    for _ in range(3):
        for kind in ("slow", "fast", "cudnn", "flash"):
            if kind in ("cudnn", "flash"):
                be = SDPBackend.CUDNN_ATTENTION if kind == "cudnn" else SDPBackend.FLASH_ATTENTION
                fn = (lambda be=be: sdpa(be, causal)(qt, kt, vt, gt))
            else:
                use(kind)
                fn = (lambda: ours(q, k, v, g, causal))
            ms = triton.testing.do_bench(fn, warmup=50, rep=150, return_mode="median")
            res.setdefault(kind, []).append(flops / ms / 1e9)
    med = {kind: sorted(t)[1] for kind, t in res.items()}
    print(f"{name:<26}" + "".join(f"  {kind} {med[kind]:.0f}" for kind in med) + "   vs cudnn: " +
          ", ".join(f"{kind} {med[kind] / med['cudnn']:.2f}x" for kind in med if kind != "cudnn"), flush=True)
use("fast")
