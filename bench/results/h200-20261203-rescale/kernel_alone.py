"""The fp8 forward's standing kernel by kernel, d128 (call4.sh). For each point, in one run: fa_ck's
fp8 call on bf16 inputs (its amax and quantize launches, then the Gluon forward, P in registers),
fa_ck's fp8 call on fp8 inputs with descales (the forward alone; P staged through shared memory,
as for any caller's fp8 v), and SDPA's cuDNN and flash bf16 forwards. Each backend: 3 warm-up
calls, then 20 calls under torch.profiler; each kernel's CUDA time is summed per call, and the
whole call is timed by CUDA events over another 20 calls. TFLOP/s in flash-attn's convention
(4 B H S^2 D, halved when causal); ratios against cuDNN's kernel, all from this run. The
attention kernel is each call's longest kernel but the quantisation's (the top four are listed).
    python3 kernel_alone.py OUT.md
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import fa_ck
from fa_ck.backends.triton.quantize import quantize_fp8

CALLS = 20
POINTS = [(4, 4096, 16, False), (4, 4096, 16, True), (1, 16384, 16, False), (1, 16384, 16, True)]


def per_call_kernels(fn) -> dict:
    """{kernel name: CUDA microseconds per call} over CALLS calls under the profiler."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" and e.device_time_total > 0:
            out[e.key] = out.get(e.key, 0.0) + e.device_time_total / CALLS
    return out


def call_us(fn) -> float:
    """Microseconds per call by CUDA events, CALLS calls back to back."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(CALLS):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / CALLS


def sdpa(backend, q, k, v, causal):
    qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))     # (B, H, S, D), as bench/kernels.py

    def run():
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    return run


def main(path):
    rows = ["| point | backend | call us | call TFLOP/s | forward kernel us | kernel TFLOP/s (x cuDNN's kernel) | "
            "quantisation kernels us | kernels |", "|---|---|---|---|---|---|---|---|"]
    for b, s, h, causal in POINTS:
        d = 128
        q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        f8 = torch.float8_e4m3fn
        (q8, qd), (k8, kd) = quantize_fp8(q, f8), quantize_fp8(k, f8)
        v8, vd = quantize_fp8(v, f8, keys_contiguous=True)
        flop = 4.0 * b * h * s * s * d / (2 if causal else 1)
        runs = {
            "fa_ck fp8, bf16 in": lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal),
            "fa_ck fp8, fp8 in": lambda: fa_ck.flash_attn_fp8_func(q8, k8, v8, causal=causal, q_descale=qd,
                                                                  k_descale=kd, v_descale=vd),
            "sdpa cuDNN bf16": sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal),
            "sdpa flash bf16": sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal),
        }
        found = {}
        for name, fn in runs.items():
            kernels = per_call_kernels(fn)
            # the attention kernel: the call's longest, quantisation aside (the table lists the top four)
            kern = max(t for n, t in kernels.items() if "amax" not in n and "quantize" not in n)
            quant = sum(t for n, t in kernels.items() if "amax" in n or "quantize" in n)
            found[name] = (call_us(fn), kern, quant, kernels)
        cudnn_kernel = found["sdpa cuDNN bf16"][1]
        for name, (call, kern, quant, kernels) in found.items():
            listed = "; ".join(f"{n[:48]} {t:.1f}" for n, t in sorted(kernels.items(), key=lambda x: -x[1])[:4])
            rows.append(f"| d128 S{s} {'causal' if causal else 'full'} B{b}xH{h} | {name} | {call:.1f} | "
                        f"{flop / call / 1e6:.1f} | {kern:.1f} | {flop / kern / 1e6:.1f} ({cudnn_kernel / kern:.2f}x) | "
                        f"{quant:.1f} | {listed} |")
        print("\n".join(rows[-4:]), flush=True)
    open(path, "w").write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
