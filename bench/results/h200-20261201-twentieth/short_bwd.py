"""GPU time of short backwards, host time taken out (as short_fwd.py: each timed call is queued
behind a ~1 ms sleep kernel and an L2 flush, so its events bracket the kernels alone). The
backward only: torch.autograd.grad of one saved forward; fa_ck's Triton backend, SDPA cuDNN and
flash; bf16 causal (POINTS: JSON [[B, H, S, D], ...]); rel. error of dq, dk, dv against float64 on
batch 0, heads 0-1. Writes $OUT/short_bwd.json, prints a table last.
    python3 bench/results/h200-20261201-twentieth/short_bwd.py"""
import json, os
import torch
import fa_ck
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F
from gpu_time import finish, gpu_ms

POINTS = json.loads(os.environ.get("POINTS", "null")) or [
    (32, 32, 512, 64), (64, 12, 1024, 64), (32, 16, 512, 128), (16, 16, 1024, 128), (32, 8, 512, 256)]
def ref_grads(q, k, v, do):
    q, k, v = (t[:1, :2].double().requires_grad_() for t in (q, k, v))
    s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.autograd.grad(torch.softmax(s, -1) @ v, (q, k, v), do[:1, :2].double())


rows = []
for B, H, S, D in POINTS:
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    refs = ref_grads(q, k, v, do)
    fwds = {"fa_ck": lambda: fa_ck.attention(q, k, v, causal=True, backend="triton")}
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        def f(be=be):
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        fwds[name] = f
    pt = f"d{D} S{S} causal B{B}xH{H}"
    for name, fwd in fwds.items():
        row = {"point": pt, "backend": name, "B": B, "H": H, "S": S, "D": D}
        try:
            out = fwd()
            fn = lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
            g = fn()
            torch.cuda.synchronize()
            row["rel_err"] = max(float((a[:1, :2].double() - r).norm() / r.norm()) for a, r in zip(g, refs))
            row["gpu_us"] = gpu_ms(fn) * 1e3
            row["tflops_gpu"] = 2.5 * 4 * B * H * S * S * D / 2 / row["gpu_us"] / 1e6
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        rows.append(row)
        print(json.dumps(row), flush=True)
finish(rows, "short_bwd", ["bwd GPU us (host hidden)", "x cuDNN", "TFLOP/s (GPU)", "max rel err dq/dk/dv"],
       lambda r: [f"{r['tflops_gpu']:.0f}", f"{r['rel_err']:.1e}"])
