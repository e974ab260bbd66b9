"""Where the fwd+bwd time goes, kernel by kernel (torch.profiler, 20 iterations after warmup):
fa_ck's defaults, the one-pass dK/dV kernel (dQ by TMA reduce-adds in it) and the dK/dV kernel
with register operands at 64 queries per step, against SDPA cuDNN, bf16.
    PYTHONPATH=$PWD/python python3 bench/results/h200-20261130-seventh/call4_profile.py"""
import collections
import os

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import fa_ck

SHAPES = {"d128 S1024 causal": (16, 16, 1024, 128, True), "nanogpt d64 S1024 causal": (64, 12, 1024, 64, True),
          "d128 S4096 causal": (4, 16, 4096, 128, True), "d128 S16384 full": (1, 16, 16384, 128, False),
          "d128 S16384 causal": (1, 16, 16384, 128, True)}
KINDS = {"triton": "", "onepass": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": true, "ONE_PASS": true}}',
         "rs64": '{"bwd_dkdv": {"GLUON": true, "BLOCK_M": 64, "STAGE_P": false}}', "cudnn": None}
ITERS = 20


def run(kind, q, k, v, qt, kt, vt, causal):
    if KINDS[kind] is None:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    else:
        os.environ["FA_CK_TRITON_CONFIG"] = KINDS[kind]
        out = fa_ck.flash_attn_func(q, k, v, causal=causal)
    out.backward(torch.ones_like(out))


for name, (b, h, s, d, causal) in SHAPES.items():
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    qt, kt, vt = (x.detach().transpose(1, 2).requires_grad_() for x in (q, k, v))
    flop = 3.5 * 4 * b * h * s * s * d / (2 if causal else 1)
    for kind in KINDS:
        for _ in range(5):
            run(kind, q, k, v, qt, kt, vt, causal)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(ITERS):
                run(kind, q, k, v, qt, kt, vt, causal)
            torch.cuda.synchronize()
        per = collections.Counter()
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                per[e.name[:48]] += e.device_time / ITERS      # microseconds per iteration
        total = sum(per.values())
        print(f"{name:<26} {kind:<8} kernels {total:8.1f} us ({flop / total / 1e6:4.0f} TFLOP/s): " +
              "; ".join(f"{n} {t:.0f}" for n, t in per.most_common(7)), flush=True)
