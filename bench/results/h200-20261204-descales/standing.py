"""fa_ck's fp8 forward at d128 against cuDNN's bf16 forward, kernels and calls, rounds interleaved
(call1.sh; call2.sh with --q-convert-ab: fa_ck's own quantisation with q rounded in the kernel,
"own", and with q8 from the quantize launch, "own, no Q_CONVERT", the variants' order rotated
each round, the SM clock, power and temperature read after each). Per point and round, in one process: fa_ck's fp8 call on bf16 inputs ("own": amax and
quantize launches, then the Gluon forward with q rounded inside it, Q_CONVERT), on fp8 inputs with
their three descales ("fp8 in"), on fp8 inputs without descales ("fp8 in, none": ones kept by
fa_ck stand in, so they replay too), and SDPA's cuDNN bf16 forward. Each: 3 warm-up calls, 20 calls
under torch.profiler (CUDA time per kernel per call), then 20 calls timed by CUDA events (warm L2).
    python3 standing.py ROUNDS OUT.jsonl
"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import fa_ck
from fa_ck.backends.triton.quantize import quantize_fp8

CALLS = 20
POINTS = [(4, 4096, 16, False), (4, 4096, 16, True), (1, 16384, 16, False), (1, 16384, 16, True)]


def kernels_per_call(fn) -> dict:
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
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(CALLS):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / CALLS


def main(rounds, path):
    f8 = torch.float8_e4m3fn
    for rnd in range(rounds):
        for b, s, h, causal in POINTS:
            q, k, v = (torch.randn(b, s, h, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
            (q8, qd), (k8, kd), (v8, vd) = (quantize_fp8(t, f8) for t in (q, k, v))
            n8 = [t.to(f8) for t in (q, k, v)]
            qt, kt, vt = (t.transpose(1, 2).contiguous() for t in (q, k, v))

            def cudnn():
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            runs = {"own": lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal),
                    "fp8 in": lambda: fa_ck.flash_attn_fp8_func(q8, k8, v8, causal=causal, q_descale=qd,
                                                                k_descale=kd, v_descale=vd),
                    "fp8 in, none": lambda: fa_ck.flash_attn_fp8_func(*n8, causal=causal),
                    "cudnn": cudnn}
            row = dict(round=rnd, point=f"S{s} {'causal' if causal else 'full'} B{b}xH{h}")
            for name, fn in runs.items():
                ks = kernels_per_call(fn)
                main_kernel = max(ks.items(), key=lambda kv: kv[1])
                row[name] = dict(call_us=round(call_us(fn), 1), kernel=main_kernel[0][:40],
                                 kernel_us=round(main_kernel[1], 1), all_kernels_us=round(sum(ks.values()), 1))
            ck = row["cudnn"]["kernel_us"]
            row["x_cudnn_kernel"] = {n: round(ck / row[n]["kernel_us"], 3) for n in ("own", "fp8 in", "fp8 in, none")}
            print(json.dumps(row), flush=True)
            open(path, "a").write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
