"""(GPU) The fp8 forward's f16 scores on heads with one outlier channel in q and k: the guard's
choice (the one-fma step below softmax_f16._f16_scores_fit's limit, the wide step past it) against
the wide step on every tile (FA_CK_TRITON_CONFIG F16_WIDE). Per head: rel. error of out against
float64 and against the float64 emulation of the quantisation (tests/test_fp8.emulate, q and k to
16, the kernel's key blocks; from call 2 also with the raw scores summed in f16, emulate's s_f16 (call
2: rounded once; call 3: 32 products at a time), and from call 3 within the slack of P near an e4m3
edge, test_fp8.F16_NEAR_EDGE; from call 4 the emulation's own error against float64),
and of lse against the emulation.
    python3 bench/results/h200-20261204-wide/outliers.py OUT.json
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
import fa_ck                                     # noqa: E402
from fa_ck import reference                      # noqa: E402
from fa_ck.backends import triton as tb          # noqa: E402
from fa_ck.backends.triton import configs        # noqa: E402
from attn_check import rel_err                   # noqa: E402
from test_fp8 import F16_NEAR_EDGE, emulate      # noqa: E402

OUTLIERS = (0.0, 20.0, 40.0, 60.0)


def heads(s=2048, d=128, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(1, s, len(OUTLIERS), d, device="cuda", generator=g) for _ in range(3))
    for h, big in enumerate(OUTLIERS):
        if big:
            q[0, :, h, 0] = big * (0.5 + 0.5 * torch.rand(s, device="cuda", generator=g))
            k[0, :, h, 0] = big * (0.5 + 0.5 * torch.rand(s, device="cuda", generator=g))
    return (t.to(torch.bfloat16) for t in (q, k, v))


def main(path):
    q, k, v = heads()
    d = q.shape[-1]
    rows = []
    for causal in (False, True):
        ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=causal, dtype=torch.float64)
        (q8, qd), (k8, kd) = (tb.quantize_fp8(t, torch.float8_e4m3fn, target_max=configs.F16_SCORES_QK_MAX)
                              for t in (q, k))
        v8, vd = tb.quantize_fp8(v, torch.float8_e4m3fn)
        emu, emu_lse, _ = emulate(q8, k8, v8, qd, kd, vd, causal=causal, block_n=128 if causal else 256,
                                  last_first=causal)
        emu16, emu16_lse, slack = emulate(q8, k8, v8, qd, kd, vd, causal=causal, block_n=128 if causal else 256,
                                          last_first=causal, s_f16=True, near_edge=F16_NEAR_EDGE)
        scale_log2 = (d ** -0.5) * 1.4426950408889634 * (qd * kd)[0]
        fits = (scale_log2 * configs.F16_SCORES_QK_MAX ** 2 * d <= 32768.0).tolist()
        for mode, cfg in (("guard", {"F16_WIDE": False}), ("wide", {"F16_WIDE": True})):
            os.environ["FA_CK_TRITON_CONFIG"] = json.dumps({"fwd": cfg})
            out, lse = fa_ck.flash_attn_fp8_func(q, k, v, causal=causal, return_lse=True, backend="triton")
            for h, big in enumerate(OUTLIERS):
                rows.append(dict(causal=causal, mode=mode, outlier=big, one_fma=bool(fits[h]) and mode == "guard",
                                 row_max_log2=float((scale_log2[h] * (q8[0, :, h].float() @ k8[0, :, h].float().T)
                                                     .max(1).values).mean()),
                                 vs_f64=rel_err(out[:, :, h], ref[:, :, h]), vs_emu=rel_err(out[:, :, h], emu[:, :, h]),
                                 lse_vs_emu=rel_err(lse[:, h], emu_lse[:, h]),
                                 vs_emu16=rel_err(out[:, :, h], emu16[:, :, h]),
                                 lse_vs_emu16=rel_err(lse[:, h], emu16_lse[:, h]),
                                 emu_vs_f64=rel_err(emu[:, :, h], ref[:, :, h]),
                                 vs_emu16_slack=rel_err(out[:, :, h], (emu16 + (out.double() - emu16)
                                                                       .clamp(-slack, slack))[:, :, h])))
    os.environ.pop("FA_CK_TRITON_CONFIG", None)
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)
    print("| causal | outlier | row max (log2) | guard: step | guard vs f64 | guard vs emu | wide vs f64 | wide vs emu "
          "| lse vs emu (guard / wide) | vs emu, f16 raw scores (guard / wide) | lse vs it | vs it within slack "
          "| emulation vs f64 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for g in (r for r in rows if r["mode"] == "guard"):
        w = next(r for r in rows if r["mode"] == "wide" and r["causal"] == g["causal"] and r["outlier"] == g["outlier"])
        print(f"| {g['causal']} | {g['outlier']:.0f} | {g['row_max_log2']:.0f} | {'one-fma' if g['one_fma'] else 'wide'} "
              f"| {g['vs_f64']:.2%} | {g['vs_emu']:.2%} | {w['vs_f64']:.2%} | {w['vs_emu']:.2%} "
              f"| {g['lse_vs_emu']:.1e} / {w['lse_vs_emu']:.1e} | {g['vs_emu16']:.2%} / {w['vs_emu16']:.2%} "
              f"| {g['lse_vs_emu16']:.1e} / {w['lse_vs_emu16']:.1e} "
              f"| {g['vs_emu16_slack']:.2%} / {w['vs_emu16_slack']:.2%} | {g['emu_vs_f64']:.2%} |")


if __name__ == "__main__":
    main(sys.argv[1])
