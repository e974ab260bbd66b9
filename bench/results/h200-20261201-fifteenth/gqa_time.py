"""GQA fwd+bwd on the H200: fa_ck by default (the Gluon dK/dV kernel stepping through each kv head's
q heads) against fa_ck with backward.py's dK/dV kernel (as before: FA_CK_TRITON_CONFIG bwd_dkdv
GLUON false), beside SDPA cuDNN on k and v expanded to every q head (the expansion untimed) and
SDPA flash with enable_gqa. Median of 3 interleaved rounds of triton.testing.do_bench; TFLOP/s in
flash-attn's convention (fwd+bwd 3.5 x 4*B*Hq*S*S*D, halved when causal). Also the float64 check of
one call per shape: ||out - ref|| / ||ref|| of dq, dk, dv."""
import os
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import fa_ck
from fa_ck import reference

SHAPES = [(16, 1024, 32, 8, 128), (4, 4096, 32, 8, 128), (1, 16384, 32, 8, 128), (4, 4096, 32, 4, 64),
          (16, 1024, 16, 2, 64), (4, 4096, 16, 4, 256)]
OLD = '{"bwd_dkdv": {"GLUON": false}}'


def fa_run(q, k, v, do, causal, env):
    def run():
        if env is None:
            os.environ.pop("FA_CK_TRITON_CONFIG", None)
        else:
            os.environ["FA_CK_TRITON_CONFIG"] = env
        torch.autograd.grad(fa_ck.flash_attn_func(q, k, v, causal=causal), (q, k, v), do)
    return run


def sdpa_run(q, k, v, do, causal, backend, gqa):
    qt, dot = q.transpose(1, 2), do.transpose(1, 2)
    if gqa:
        kt, vt = k.transpose(1, 2), v.transpose(1, 2)
    else:
        g = q.shape[2] // k.shape[2]
        kt, vt = (t.repeat_interleave(g, dim=2).transpose(1, 2).detach().requires_grad_() for t in (k, v))

    def run():
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=gqa)
        torch.autograd.grad(out, (qt, kt, vt), dot)
    return run


def rel(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


print("| shape | causal | fa_ck (Gluon dK/dV) | fa_ck (backward.py dK/dV) | sdpa-cudnn (k, v expanded) | sdpa-flash (enable_gqa) | rel err dq / dk / dv |")
print("|---|---|---|---|---|---|---|")
for b, s, hq, hkv, d in SHAPES:
    for causal in (False, True):
        q = torch.randn(b, s, hq, d, dtype=torch.bfloat16, device="cuda", requires_grad=True)
        k, v = (torch.randn(b, s, hkv, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(2))
        do = torch.randn_like(q)
        runs = {"new": fa_run(q, k, v, do, causal, None), "old": fa_run(q, k, v, do, causal, OLD),
                "cudnn": sdpa_run(q, k, v, do, causal, SDPBackend.CUDNN_ATTENTION, False),
                "flash": sdpa_run(q, k, v, do, causal, SDPBackend.FLASH_ATTENTION, True)}
        times = {n: [] for n in runs}
        for _ in range(3):
            for n, fn in runs.items():
                try:
                    times[n].append(do_bench(fn, warmup=25, rep=100))
                except Exception as e:  # noqa: BLE001
                    times[n].append(float("nan"))
                    print(f"  {n}: {type(e).__name__}: {str(e)[:100]}")
        os.environ.pop("FA_CK_TRITON_CONFIG", None)
        flops = 3.5 * 4 * b * hq * s * s * d / (2 if causal else 1)
        tf = {n: flops / (statistics.median(t) * 1e-3) / 1e12 for n, t in times.items()}
        errs = ""
        if s <= 4096 and b * hq * s * s <= 2 ** 31:
            qs, ks, vs, dos = q[:1, :1024], k[:1, :1024], v[:1, :1024], do[:1, :1024]
            qs, ks, vs = (t.detach().requires_grad_() for t in (qs, ks, vs))
            grads = torch.autograd.grad(fa_ck.flash_attn_func(qs, ks, vs, causal=causal), (qs, ks, vs), dos)
            q64, k64, v64 = (t.detach().double().requires_grad_() for t in (qs, ks, vs))
            ref, _ = reference.attention(q64, k64, v64, causal=causal, dtype=torch.float64)
            refs = torch.autograd.grad(ref, (q64, k64, v64), dos.double())
            errs = " / ".join(f"{rel(a, r):.2e}" for a, r in zip(grads, refs))
        c = tf["cudnn"]
        print(f"| B{b} S{s} Hq{hq} Hkv{hkv} d{d} | {causal} | {tf['new']:.1f} ({tf['new'] / c:.2f}x) | "
              f"{tf['old']:.1f} ({tf['old'] / c:.2f}x) | {c:.1f} | {tf['flash']:.1f} ({tf['flash'] / c:.2f}x) | {errs} |",
              flush=True)
