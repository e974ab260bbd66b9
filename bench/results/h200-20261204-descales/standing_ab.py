"""Q_CONVERT on and off (call2.sh): fa_ck's fp8 forward on its own quantisation with q rounded in the
Gluon kernel ("own") and with q8 written by the quantize launch ("own, q8"), a caller's fp8 inputs
with descales ("fp8 in"), SDPA's cuDNN bf16 forward; d128, the variants' order rotated every round,
in one process. Each: 3 warm-up calls, 20 calls under torch.profiler (CUDA time per kernel per
call), 20 calls timed by CUDA events; nvidia-smi's SM clock, power and temperature after each.
    python3 standing_ab.py ROUNDS OUT.jsonl
"""
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck
from fa_ck.backends.triton.quantize import quantize_fp8
from standing import POINTS, call_us, kernels_per_call


def smi():
    out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    return out


def with_env(config, fn):
    def run():
        os.environ["FA_CK_TRITON_CONFIG"] = config
        try:
            return fn()
        finally:
            os.environ.pop("FA_CK_TRITON_CONFIG", None)
    return run


def main(rounds, path):
    f8 = torch.float8_e4m3fn
    for rnd in range(rounds):
        for b, s, h, causal in POINTS:
            q, k, v = (torch.randn(b, s, h, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
            (q8, qd), (k8, kd), (v8, vd) = (quantize_fp8(t, f8) for t in (q, k, v))
            qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))

            def cudnn():
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            runs = [("own", lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal)),
                    ("own, q8", with_env('{"fwd": {"Q_CONVERT": false}}',
                                         lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal))),
                    ("fp8 in", lambda: fa_ck.flash_attn_fp8_func(q8, k8, v8, causal=causal, q_descale=qd,
                                                                 k_descale=kd, v_descale=vd)),
                    ("cudnn", cudnn)]
            runs = runs[rnd % 4:] + runs[:rnd % 4]
            row = dict(round=rnd, point=f"S{s} {'causal' if causal else 'full'} B{b}xH{h}",
                       order=[n for n, _ in runs])
            for name, fn in runs:
                ks = kernels_per_call(fn)
                main_kernel = max(ks.items(), key=lambda kv: kv[1])
                row[name] = dict(call_us=round(call_us(fn), 1), kernel=main_kernel[0][:40],
                                 kernel_us=round(main_kernel[1], 1), all_kernels_us=round(sum(ks.values()), 1),
                                 smi=smi())
            ck = row["cudnn"]["kernel_us"]
            row["x_cudnn_kernel"] = {n: round(ck / row[n]["kernel_us"], 3) for n in ("own", "own, q8", "fp8 in")}
            print(json.dumps(row), flush=True)
            open(path, "a").write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
