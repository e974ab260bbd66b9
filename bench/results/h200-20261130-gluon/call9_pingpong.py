"""Call 9: call6_short.py with the ping-pong Gluon forward as a fourth kind. Forward points (short ones by default, `long`: d128 S >= 4k and d64 S16k), Gluon forward against forward.py and SDPA cuDNN, alternating
(4 rounds, each kernel timed right after the others): is the S1024 causal gap real?"""
import os
import torch
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel
import fa_ck

import sys
SHORT = {"d128 S1024 causal": (16, 16, 1024, 128, True), "d128 S1024 full": (16, 16, 1024, 128, False),
         "d128 S2048 causal": (8, 16, 2048, 128, True), "d64 S1024 causal": (16, 32, 1024, 64, True),
         "nanogpt d64 S1024 causal": (64, 12, 1024, 64, True), "d64 S4096 causal": (4, 32, 4096, 64, True)}
LONG = {"d128 S4096 full": (4, 16, 4096, 128, False), "d128 S4096 causal": (4, 16, 4096, 128, True),
        "d128 S16384 full": (1, 16, 16384, 128, False), "d128 S16384 causal": (1, 16, 16384, 128, True),
        "d64 S16384 causal": (1, 32, 16384, 64, True)}
for name, (b, h, s, d, causal) in (LONG if sys.argv[1:] == ["long"] else SHORT).items():
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    res = {"gluon": [], "pingpong": [], "forward.py": [], "cudnn": []}
    for _ in range(4):
        for kind in res:
            if kind == "cudnn":
                def fn():
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            else:
                os.environ["FA_CK_TRITON_CONFIG"] = {"gluon": '{"fwd": {"GLUON": true}}', "pingpong": '{"fwd": {"GLUON": true, "PINGPONG": true}}', "forward.py": '{"fwd": {"GLUON": false}}'}[kind]
                fn = lambda: fa_ck.flash_attn_func(q, k, v, causal=causal)  # noqa: E731
            ms = triton.testing.do_bench(fn, warmup=100, rep=200, return_mode="median")
            res[kind].append(flops / ms / 1e9)
    line = f"{name:<26}" + "".join(f"  {kind} " + "/".join(f"{t:.0f}" for t in ts) for kind, ts in res.items())
    line += "   median ratio to cudnn: " + ", ".join(
        f"{kind} {sorted(ts)[1] / sorted(res['cudnn'])[1]:.2f}x" for kind, ts in res.items() if kind != "cudnn")
    print(line, flush=True)
