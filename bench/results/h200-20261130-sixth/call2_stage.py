"""fwd+bwd timed alternately (3 rounds, median of each) for the backward's staging variants:
  prev   the Gluon backward kernels of the commit before (.prev/backward_gluon_prev.py, carried to
         the device), default configs
  dflt   this commit's kernels, default configs (dK/dV now start their S^T / dP^T multiplies from
         -lse/scale and -delta, and take the mask in that start value)
  sp     dK/dV in Gluon with 64 queries per step, P^T and dS^T through shared memory (STAGE_P)
  sds    dQ in Gluon with 128 keys per block, dS through shared memory (STAGE_DS), 2-deep rings
  both   sp and sds
and SDPA cuDNN and flash. Each variant's gradients are checked once against dflt's.
    PYTHONPATH=$PWD/python python3 bench/results/h200-20261130-sixth/call2_stage.py"""
import importlib
import importlib.util
import json
import os

import torch
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck

tb = importlib.import_module("fa_ck.backends.triton")
spec = importlib.util.spec_from_file_location("backward_gluon_prev", ".prev/backward_gluon_prev.py")
prev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prev)
NEW = (tb.bwd_dkdv_gluon_kernel, tb.bwd_dq_gluon_kernel)
OLD = (prev.bwd_dkdv_gluon_kernel, prev.bwd_dq_gluon_kernel)
SP = {"bwd_dkdv": {"GLUON": True, "BLOCK_M": 64, "STAGE_P": True}}
SDS = {"bwd_dq": {"GLUON": True, "BLOCK_N": 128, "STAGE_DS": True, "num_stages": 2}}
CONFIGS = {"prev": {}, "dflt": {}, "sp": SP, "sds": SDS, "both": {**SP, **SDS}}

SHAPES = {"d128 S1024 full": (16, 16, 1024, 128, False), "d128 S1024 causal": (16, 16, 1024, 128, True),
          "d128 S4096 full": (4, 16, 4096, 128, False), "d128 S4096 causal": (4, 16, 4096, 128, True),
          "d128 S16384 full": (1, 16, 16384, 128, False), "d128 S16384 causal": (1, 16, 16384, 128, True),
          "nanogpt d64 S1024 causal": (64, 12, 1024, 64, True), "d64 S4096 causal": (4, 32, 4096, 64, True),
          "d64 S16384 full": (1, 32, 16384, 64, False)}
KINDS = (*CONFIGS, "cudnn", "flash")


def use(kind):
    os.environ["FA_CK_TRITON_CONFIG"] = json.dumps(CONFIGS[kind])
    tb.bwd_dkdv_gluon_kernel, tb.bwd_dq_gluon_kernel = OLD if kind == "prev" else NEW


for name, (b, h, s, d, causal) in SHAPES.items():
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    qt, kt, vt = (x.detach().transpose(1, 2).requires_grad_() for x in (q, k, v))
    g = torch.randn_like(q)
    gt = g.transpose(1, 2)
    flops = 3.5 * 4 * b * h * s * s * d / (2 if causal else 1)
    use("dflt")
    want = torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), g)
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
                use(kind)

                def fn():
                    return torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), g)
                if not res[kind]:             # the gradients, once, against dflt's
                    got = fn()
                    err = max(((a.float() - w.float()).norm() / w.float().norm()).item() for a, w in zip(got, want))
                    assert err < 2e-2, (name, kind, err)
            ms = triton.testing.do_bench(fn, warmup=50, rep=150, return_mode="median")
            res[kind].append(flops / ms / 1e9)
    med = {kind: sorted(ts)[1] for kind, ts in res.items()}
    print(f"{name:<26}" + "".join(f"  {kind} {med[kind]:.0f}" for kind in KINDS) + "   vs cudnn: " +
          ", ".join(f"{kind} {med[kind] / med['cudnn']:.2f}x" for kind in KINDS if kind != "cudnn"), flush=True)
