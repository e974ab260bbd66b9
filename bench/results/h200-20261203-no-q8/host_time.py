"""Host time per replayed forward call on the GPU machine: a tiny shape (B1 S128 H2 d128, GPU
time a few us) so the call loop is bound by the host; 2000 calls after warm-up, best of 5, for
fa_ck's bf16 forward, its fp8 forward of bf16 inputs (buffers + three launches) and SDPA cuDNN's
bf16 forward (the anchor). Also the GPU-bound S1k point of call 1 (B16 H16 d128 causal) timed the
same way, for the fp8 forward and cuDNN. Prints a table last; writes $OUT/host_time.json.
    python3 bench/results/h200-20261203-no-q8/host_time.py"""
import json, os, time
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import fa_ck


def per_call_us(fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


rows = []
for name, (b, s, h, d, causal, n) in {"tiny B1 S128 H2 d128": (1, 128, 2, 128, True, 2000),
                                      "S1k causal B16 H16 d128": (16, 1024, 16, 128, True, 300)}.items():
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    fns = {"fa_ck bf16": lambda: fa_ck.flash_attn_func(q, k, v, causal=causal),
           "fa_ck fp8": lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=causal),
           "sdpa cudnn bf16": cudnn}
    for backend, fn in fns.items():
        rows.append(dict(point=name, backend=backend, us=round(per_call_us(fn, n), 1)))
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "host_time.json"), "w"), indent=1)
print("| point | backend | us per call (loop of calls, synchronised at the end) |\n|---|---|---|")
for r in rows:
    print(f"| {r['point']} | {r['backend']} | {r['us']} |")
