"""GPU time of short forwards, host time taken out: each timed call is queued behind a ~0.5 ms
sleep kernel and an L2 flush, so its events bracket the kernel alone (host enqueue hidden), the
backends of a point interleaved (gpu_time.gpu_ms_each; before 2026-12-02's fourth part each was
timed 25 times in a row, in the order of the table); also
the back-to-back time (do_bench, as bench/kernels.py measures). fa_ck's Gluon forward with
switch variants (FA_CK_TRITON_CONFIG), SDPA cuDNN and flash, bf16 (POINTS, or the environment's
POINTS: JSON [[B, H, S, D, causal], ...]); rel. error of each output
against float64 on batch 0, heads 0-1. Writes $OUT/short_fwd.json, prints a table last.
    python3 bench/results/h200-20261201-twentieth/short_fwd.py [variant=JSON ...]"""
import json, os, sys
import torch
import fa_ck
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F
from triton.testing import do_bench
from gpu_time import finish, gpu_ms_each

POINTS = [  # (B, H, S, D, causal)
    (32, 32, 512, 64, False), (32, 32, 512, 64, True), (16, 32, 1024, 64, True), (64, 12, 1024, 64, True),
    (32, 16, 512, 128, False), (32, 16, 512, 128, True), (32, 8, 512, 256, False), (32, 8, 512, 256, True),
    (16, 8, 1024, 256, False), (16, 8, 1024, 256, True),
]
POINTS = json.loads(os.environ.get("POINTS", "null")) or POINTS   # e.g. POINTS='[[64, 32, 256, 64, true]]'
VARIANTS = {"default": ""}
for a in sys.argv[1:]:
    name, cfg = a.split("=", 1)
    VARIANTS[name] = cfg


def ref(q, k, v, causal):
    q, k, v = (t[:1, :2].double() for t in (q, k, v))
    s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


rows = []
for B, H, S, D, causal in POINTS:
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    r = ref(q, k, v, causal)
    fl = 4 * B * H * S * S * D / (2 if causal else 1)
    fns = {}
    for name, cfg in VARIANTS.items():
        def run(cfg=cfg):
            os.environ["FA_CK_TRITON_CONFIG"] = cfg
            return fa_ck.attention(q, k, v, causal=causal, backend="triton")
        fns["fa_ck-" + name] = run
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        def run(be=be):
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        fns[name] = run
    pt = f"d{D} S{S} {'causal' if causal else 'full'} B{B}xH{H}"
    first = len(rows)                            # this point's rows: rows[first:]
    for name, fn in fns.items():
        row = {"point": pt, "backend": name, "B": B, "H": H, "S": S, "D": D, "causal": causal}
        try:
            out = fn()
            torch.cuda.synchronize()
            row["rel_err"] = float((out[:1, :2].double() - r).norm() / r.norm())
            row["b2b_us"] = do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        os.environ["FA_CK_TRITON_CONFIG"] = ""
        rows.append(row)
    # GPU times interleaved across the point's backends (gpu_ms_each)
    ok = {r["backend"]: r for r in rows[first:] if "error" not in r}
    try:
        times = gpu_ms_each({name: fns[name] for name in ok})
    except Exception as e:
        times = {}
        for row in ok.values():
            row["error"] = f"timing: {type(e).__name__}: {str(e)[:300]}"
    os.environ["FA_CK_TRITON_CONFIG"] = ""
    for name, ms in times.items():
        ok[name]["gpu_us"] = ms * 1e3
        ok[name]["tflops_gpu"] = fl / ok[name]["gpu_us"] / 1e6
    for row in rows[first:]:
        print(json.dumps(row), flush=True)
finish(rows, "short_fwd", ["GPU us (host hidden)", "x cuDNN", "back-to-back us", "TFLOP/s (GPU)", "rel err"],
       lambda r: [f"{r['b2b_us']:.1f}", f"{r['tflops_gpu']:.0f}", f"{r['rel_err']:.1e}"], variants=VARIANTS)
