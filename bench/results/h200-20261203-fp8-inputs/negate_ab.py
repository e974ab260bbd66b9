"""A caller's fp8 forward kernel (d128, descales given) by torch.profiler CUDA time, beside cuDNN's
bf16 kernel in the same process: call3.sh runs it on the tree and with no_negate.patch applied
(the kernel without forward_gluon._negate_q and its branch), alternately.
    python3 negate_ab.py LABEL OUT.jsonl"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import fa_ck
from fa_ck.backends.triton.quantize import quantize_fp8

POINTS = [(4, 4096, 16, False), (4, 4096, 16, True), (1, 16384, 16, False), (1, 16384, 16, True)]


def kernel_us(fn, match, calls=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return sum(e.device_time_total for e in prof.key_averages()
               if e.device_type.name == "CUDA" and match in e.key) / calls


def main(label, path):
    for b, s, h, causal in POINTS:
        q, k, v = (torch.randn(b, s, h, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        f8 = torch.float8_e4m3fn
        (q8, qd), (k8, kd), (v8, vd) = (quantize_fp8(t, f8) for t in (q, k, v))
        fa = kernel_us(lambda: fa_ck.flash_attn_fp8_func(q8, k8, v8, causal=causal, q_descale=qd, k_descale=kd,
                                                         v_descale=vd), "fwd_gluon_kernel")
        qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))

        def cudnn():
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        cu = kernel_us(cudnn, "cudnn")
        row = dict(label=label, point=f"S{s} {'causal' if causal else 'full'} B{b}xH{h}", fa_us=round(fa, 1),
                   cudnn_us=round(cu, 1), x_cudnn=round(cu / fa, 3))
        print(json.dumps(row), flush=True)
        open(path, "a").write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
