"""Call 9's one failure (the Gluon fp8 forward against the torch emulation of the fp8 scheme at a
single query row: 0.00853 > the 0.008 bound): is it the kernel, or the spread of that statistic
over 256 elements? Ten seeds per shape, the Gluon kernel and forward.py's fp8 kernel each against
the emulation with its own key-block size.
    PYTHONPATH=$PWD/python:$PWD/tests python3 bench/results/h200-20261130-bwd/call10_fp8_emu.py"""
import importlib
import os

import torch

import fa_ck
from test_fp8 import emulate

tb = importlib.import_module("fa_ck.backends.triton")
F8 = torch.float8_e4m3fn
for shape in ((1, 1, 512, 2, 1, 128), (1, 4, 512, 2, 1, 128), (2, 1024, 1024, 4, 2, 128)):
    b, sq, sk, hq, hkv, d = shape
    errs = {"gluon": [], "forward.py": []}
    for seed in range(10):
        torch.manual_seed(seed)
        q = torch.randn(b, sq, hq, d, dtype=torch.bfloat16, device="cuda")
        k, v = (torch.randn(b, sk, hkv, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
        (q8, qd), (k8, kd), (v8, vd) = (tb.quantize_fp8(t, F8) for t in (q, k, v))
        for kind, cfg, bn in (("gluon", '{"fwd": {"GLUON": true}}', 128), ("forward.py", "", None)):
            os.environ["FA_CK_TRITON_CONFIG"] = cfg
            out = fa_ck.flash_attn_fp8_func(q, k, v, backend="triton")
            emu, _ = emulate(q8, k8, v8, qd, kd, vd, block_n=bn)
            errs[kind].append(((out.double() - emu.double()).norm() / emu.double().norm()).item())
    print(shape, {k: f"max {max(e):.4f} median {sorted(e)[5]:.4f}" for k, e in errs.items()}, flush=True)
