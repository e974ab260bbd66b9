"""GPU time of backwards, host time taken out (the twentieth part's short_bwd.py, with switch
variants and full attention too): torch.autograd.grad of one saved forward, each timed call
queued behind a ~1 ms sleep kernel and an L2 flush (gpu_time.gpu_ms); fa_ck's Triton backend by
default and with each variant (FA_CK_TRITON_CONFIG, read per call), SDPA cuDNN and flash; bf16
(DTYPE=float16 in the environment: fp16);
rel. error of dq, dk, dv against float64 on batch 0, heads 0-1 (the largest of the three).
POINTS: JSON [[B, H, S, D, causal], ...]. Writes $OUT/bwd_time.json, prints a table last.
    python3 bench/results/h200-20261202-dkdv-store/bwd_time.py [variant=JSON ...]"""
import json, os, sys
import torch
import fa_ck
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "h200-20261201-twentieth"))
from gpu_time import finish, gpu_ms  # noqa: E402

POINTS = json.loads(os.environ.get("POINTS", "null")) or [
    (32, 16, 512, 128, True), (32, 16, 512, 128, False), (32, 32, 512, 64, True), (64, 12, 1024, 64, True),
    (4, 16, 4096, 128, True), (4, 16, 4096, 128, False)]
DTYPE = getattr(torch, os.environ.get("DTYPE", "bfloat16"))
VARIANTS = {"default": ""}
for a in sys.argv[1:]:
    name, cfg = a.split("=", 1)
    VARIANTS[name] = cfg


def ref_grads(q, k, v, do, causal):
    q, k, v = (t[:1, :2].double().requires_grad_() for t in (q, k, v))
    s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.autograd.grad(torch.softmax(s, -1) @ v, (q, k, v), do[:1, :2].double())


rows = []
for B, H, S, D, causal in POINTS:
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=DTYPE) for _ in range(4))
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    refs = ref_grads(q, k, v, do, causal)
    fwds = {}
    for name, cfg in VARIANTS.items():
        def f(cfg=cfg):
            os.environ["FA_CK_TRITON_CONFIG"] = cfg
            return fa_ck.attention(q, k, v, causal=causal, backend="triton")
        fwds["fa_ck-" + name] = (f, cfg)
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        def f(be=be):
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        fwds[name] = (f, "")
    pt = ("" if DTYPE == torch.bfloat16 else f"{str(DTYPE)[6:]} ") + f"d{D} S{S} {'causal' if causal else 'full'} B{B}xH{H}"
    for name, (fwd, cfg) in fwds.items():
        row = {"point": pt, "backend": name, "B": B, "H": H, "S": S, "D": D, "causal": causal}
        try:
            out = fwd()
            os.environ["FA_CK_TRITON_CONFIG"] = cfg        # the backward reads it when it runs

            def fn():
                return torch.autograd.grad(out, (q, k, v), do, retain_graph=True)
            g = fn()
            torch.cuda.synchronize()
            row["rel_err"] = max(float((a[:1, :2].double() - r).norm() / r.norm()) for a, r in zip(g, refs))
            row["gpu_us"] = gpu_ms(fn) * 1e3
            row["tflops_gpu"] = 2.5 * 4 * B * H * S * S * D / (2 if causal else 1) / row["gpu_us"] / 1e6
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        os.environ["FA_CK_TRITON_CONFIG"] = ""
        rows.append(row)
        print(json.dumps(row), flush=True)
finish(rows, "bwd_time", ["bwd GPU us (host hidden)", "x cuDNN", "TFLOP/s (GPU)", "max rel err dq/dk/dv"],
       lambda r: [f"{r['tflops_gpu']:.0f}", f"{r['rel_err']:.1e}"], variants=VARIANTS)
