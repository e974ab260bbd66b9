"""fwd+bwd timed alternately (3 rounds, median of each): the Gluon dK/dV kernel software-pipelined
(block i's S^T/dP^T issued before block i-1's dV/dK multiplies; the code of this commit) against
its previous version (.prev/backward_gluon_prev.py, carried to the device: the commit before),
Triton's dK/dV kernel, SDPA cuDNN and flash. dQ: the default (Gluon at these shapes but d64 S1024).
    PYTHONPATH=$PWD/python python3 bench/results/h200-20261130-bwd/call7_dkdv.py"""
import importlib
import importlib.util
import os

import torch
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
spec = importlib.util.spec_from_file_location("fa_ck.backends.triton.backward_gluon_prev", ".prev/backward_gluon_prev.py")
prev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prev)
NEW = tb.bwd_dkdv_gluon_kernel

SHAPES = {"d128 S1024 full": (16, 16, 1024, 128, False), "d128 S1024 causal": (16, 16, 1024, 128, True),
          "d128 S4096 full": (4, 16, 4096, 128, False), "d128 S4096 causal": (4, 16, 4096, 128, True),
          "d128 S16384 full": (1, 16, 16384, 128, False), "d128 S16384 causal": (1, 16, 16384, 128, True),
          "nanogpt d64 S1024 causal": (64, 12, 1024, 64, True), "d64 S4096 causal": (4, 32, 4096, 64, True),
          "d64 S16384 full": (1, 32, 16384, 64, False)}
KINDS = ("new", "prev", "triton", "cudnn", "flash")

for name, (b, h, s, d, causal) in SHAPES.items():
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    qt, kt, vt = (x.detach().transpose(1, 2).requires_grad_() for x in (q, k, v))
    g = torch.randn_like(q)
    gt = g.transpose(1, 2)
    flops = 3.5 * 4 * b * h * s * s * d / (2 if causal else 1)
    res = {kind: [] for kind in KINDS}
    for _ in range(3):
        for kind in KINDS:
            if kind in ("cudnn", "flash"):
                be = SDPBackend.CUDNN_ATTENTION if kind == "cudnn" else SDPBackend.FLASH_ATTENTION

                def fn():
                    with sdpa_kernel(be):
                        out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
                    return torch.autograd.grad(out, (qt, kt, vt), gt)
            else:
                os.environ["FA_CK_TRITON_CONFIG"] = '{"bwd_dkdv": {"GLUON": %s}}' % ("false" if kind == "triton" else "true")
                tb.bwd_dkdv_gluon_kernel = prev.bwd_dkdv_gluon_kernel if kind == "prev" else NEW

                def fn():
                    return torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), g)
            if kind == "prev" and not res[kind]:      # the previous kernel's gradients, once
                got = fn()
                tb.bwd_dkdv_gluon_kernel = NEW
                want = fn()
                tb.bwd_dkdv_gluon_kernel = prev.bwd_dkdv_gluon_kernel
                assert all(torch.allclose(a, b_, atol=2e-2, rtol=2e-2) for a, b_ in zip(got, want)), name
            ms = triton.testing.do_bench(fn, warmup=50, rep=150, return_mode="median")
            res[kind].append(flops / ms / 1e9)
    med = {kind: sorted(ts)[1] for kind, ts in res.items()}
    print(f"{name:<26}" + "".join(f"  {kind} {med[kind]:.0f}" for kind in KINDS) + "   vs cudnn: " +
          ", ".join(f"{kind} {med[kind] / med['cudnn']:.2f}x" for kind in KINDS if kind != "cudnn"), flush=True)
