"""Forward timed alternately (3 rounds, median): the fp8 forward in Gluon (asked for; bf16 inputs
quantised by fa_ck, and fp8 inputs with descales, i.e. the kernel alone) against the fp8
forward.py kernel, fa_ck's bf16 forward, SDPA cuDNN and flash (bf16). Relative error of each
against the float64 reference on the last 256 queries of batch 0, heads 0-1.
    PYTHONPATH=$PWD/python python3 bench/results/h200-20261130-bwd/call9_fp8.py"""
import importlib
import os

import torch
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck
from fa_ck import reference

tb = importlib.import_module("fa_ck.backends.triton")
F8 = torch.float8_e4m3fn
SHAPES = {"d128 S4096 full": (4, 16, 4096, 128, False), "d128 S4096 causal": (4, 16, 4096, 128, True),
          "d128 S16384 full": (1, 16, 16384, 128, False), "d128 S16384 causal": (1, 16, 16384, 128, True),
          "d64 S16384 causal": (1, 32, 16384, 64, True)}
KINDS = ("fp8-gluon", "fp8-gluon-f8in", "fp8-fwdpy", "bf16-fa_ck", "cudnn", "flash")
GLUON = '{"fwd": {"GLUON": true}}'

for name, (b, h, s, d, causal) in SHAPES.items():
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    (q8, qd), (k8, kd) = (tb.quantize_fp8(t, F8) for t in (q, k))
    v8, vd = tb.quantize_fp8(v, F8, keys_contiguous=True)
    tail = slice(s - 256, s)
    ref, _ = reference.attention(q[:1, tail, :2].double(), k[:1, :, :2].double(), v[:1, :, :2].double(),
                                 causal=causal, dtype=torch.float64)
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    fns = {
        "fp8-gluon": (GLUON, lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, backend="triton")),
        "fp8-gluon-f8in": (GLUON, lambda: fa_ck.flash_attn_fp8_func(q8, k8, v8, causal=causal, q_descale=qd,
                                                                     k_descale=kd, v_descale=vd, backend="triton")),
        "fp8-fwdpy": ("", lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, backend="triton")),
        "bf16-fa_ck": ("", lambda: fa_ck.flash_attn_func(q, k, v, causal=causal)),
    }
    res, err = {kind: [] for kind in KINDS}, {}
    for rnd in range(3):
        for kind in KINDS:
            if kind in ("cudnn", "flash"):
                be = SDPBackend.CUDNN_ATTENTION if kind == "cudnn" else SDPBackend.FLASH_ATTENTION

                def fn():
                    with sdpa_kernel(be):
                        return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
            else:
                cfg, fn = fns[kind]
                os.environ["FA_CK_TRITON_CONFIG"] = cfg
            if rnd == 0:
                out = fn()
                err[kind] = ((out[:1, tail, :2].double() - ref).norm() / ref.norm()).item()
            ms = triton.testing.do_bench(fn, warmup=50, rep=150, return_mode="median")
            res[kind].append(flops / ms / 1e9)
    med = {kind: sorted(ts)[1] for kind, ts in res.items()}
    print(f"{name:<20}" + "".join(f"  {kind} {med[kind]:.0f} ({med[kind] / med['cudnn']:.2f}x, err {err[kind]:.1e})"
                                  for kind in KINDS), flush=True)
