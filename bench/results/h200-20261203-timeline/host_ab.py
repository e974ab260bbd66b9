"""Host time per replayed forward call, fp8_buffers carved from one allocation (now) against the
four allocations of before (`separate`: the previous fp8_buffers, swapped in), in one process
with the rounds interleaved; fa_ck's bf16 forward and SDPA cuDNN's bf16 forward beside them. A
tiny shape (B1 S128 H2 d128 causal: host-bound) and a GPU-bound S1k point, each a loop of calls
synchronised at its end, best of 5 rounds. Prints a table last; writes $OUT/host_ab.json.
    python3 bench/results/h200-20261203-timeline/host_ab.py"""
import json, os, time
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import fa_ck
from fa_ck.backends.triton import configs, quantize

carved = quantize.fp8_buffers


def separate(q, k, v, with_q8=True):
    """fp8_buffers before 2026-12-03 (sixth session): four allocations, the amax bits by torch.zeros."""
    dtype = configs.fp8_dtype(q.device)
    b, hq, hkv = q.shape[0], q.shape[2], k.shape[2]
    *starts, n = quantize.fp8_slots(b, hq, hkv)
    descale = torch.empty(n, dtype=torch.float32, device=q.device)
    amax_bits = torch.zeros(n, dtype=torch.int32, device=q.device)
    buffers = (None, quantize.empty_bshd(k.shape, dtype, k.device, False),
               quantize.empty_bshd(v.shape, dtype, v.device, True),
               amax_bits, descale, *(descale[lo:lo + b * h].view(b, h) for lo, h in zip(starts, (hq, hkv, hkv))),
               amax_bits[:b * hq].view(b, hq))
    return quantize.add_q8(buffers, q) if with_q8 else buffers


def loop_us(fn, n):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


rows = []
for name, (b, s, h, d, causal, n) in {"tiny B1 S128 H2 d128 causal": (1, 128, 2, 128, True, 2000),
                                      "S1k causal B16 H16 d128": (16, 1024, 16, 128, True, 300)}.items():
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

    def fp8_with(buffers):
        def run():
            quantize.fp8_buffers = buffers
            try:
                fa_ck.flash_attn_fp8_func(q, k, v, causal=causal)
            finally:
                quantize.fp8_buffers = carved
        return run
    fns = {"fa_ck fp8 (one allocation)": fp8_with(carved), "fa_ck fp8 (separate, before)": fp8_with(separate),
           "fa_ck bf16": lambda: fa_ck.flash_attn_func(q, k, v, causal=causal), "sdpa cudnn bf16": cudnn}
    ref = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal)
    quantize.fp8_buffers = separate
    try:
        same = torch.equal(fa_ck.flash_attn_fp8_func(q, k, v, causal=causal), ref)
    finally:
        quantize.fp8_buffers = carved
    best = {k_: float("inf") for k_ in fns}
    for fn in fns.values():
        for _ in range(50):
            fn()
    for _ in range(5):
        for backend, fn in fns.items():
            best[backend] = min(best[backend], loop_us(fn, n))
    for backend in fns:
        rows.append(dict(point=name, backend=backend, us=round(best[backend], 1), fp8_outputs_equal=same))
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "host_ab.json"), "w"), indent=1)
print("| point | backend | us per call (loop of calls, synchronised at the end; best of 5) |\n|---|---|---|")
for r in rows:
    print(f"| {r['point']} | {r['backend']} | {r['us']} |")
print("fp8 outputs equal across the two buffer makers:", {r["point"]: r["fp8_outputs_equal"] for r in rows})
