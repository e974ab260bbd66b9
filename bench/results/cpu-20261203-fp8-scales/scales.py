"""fp8 attention's error against float64 by quantisation scheme, simulated in float64 on the CPU:
q, k, v rounded to e4m3fn (torch's cast, after scaling and clamping to +-448) with one scale per
(batch, head) (issue 7's scheme, fa_ck's kernels) or one per 128 rows of each (FlashAttention-3's
block quantisation: q per query tile, k and v per key block), P rounded with the fixed scale 448
against the running max of 128-key blocks, as the Gluon kernel does. Inputs N(0, 1), and N(0, 1)
with 0.1 % of entries N(0, 10) (FlashAttention-3's outlier test). Relative error
||out - ref|| / ||ref|| over all heads; which quantisation each error comes from by switching the
others off.
    python bench/results/cpu-20261203-fp8-scales/scales.py      (from the repo root; ~1 min)"""
import math

import torch

FMAX = 448.0
torch.manual_seed(0)


def fp8(x, rows):
    """x (B, H, S, D) float64 rounded to e4m3fn with one amax scale per `rows` rows (None: per (B, H))."""
    b, h, s, d = x.shape
    g = x if rows is None else x.reshape(b, h, s // rows, rows, d)
    amax = g.abs().amax(dim=(-2, -1), keepdim=True).clamp_min(1e-12)
    y = (g * (FMAX / amax)).clamp(-FMAX, FMAX).to(torch.float8_e4m3fn).double() * (amax / FMAX)
    return y.reshape(x.shape)


def attention(q, k, v, round_p, block=128):
    """Online softmax over 128-key blocks, P rounded to e4m3 against the running max (round_p)."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    s_all = (q @ k.transpose(-1, -2)) * scale
    m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=torch.float64)
    l = torch.zeros_like(m)
    acc = torch.zeros_like(q)
    for n0 in range(0, k.shape[-2], block):
        s = s_all[..., n0:n0 + block]
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        alpha = torch.exp(m - m_new)
        if round_p:
            p = (p * FMAX).to(torch.float8_e4m3fn).double() / FMAX
        l = l * alpha + p.sum(-1, keepdim=True)
        acc = acc * alpha + p @ v[..., n0:n0 + block, :]
        m = m_new
    return acc / l


def rel(a, b):
    return ((a - b).norm() / b.norm()).item()


def main():
    b, h, s, d = 1, 8, 1024, 128
    rows = []
    for name in ("N(0, 1)", "N(0, 1) + 0.1 % N(0, 10)"):
        q, k, v = (torch.randn(b, h, s, d, dtype=torch.float64) for _ in range(3))
        if "+" in name:
            for t in (q, k, v):
                hit = torch.rand(t.shape) < 1e-3
                t[hit] = torch.randn(int(hit.sum()), dtype=torch.float64) * 10
        ref = attention(q, k, v, round_p=False)
        for label, per in (("per (batch, head)", None), ("per 128 rows", 128)):
            qq, kk, vv = fp8(q, per), fp8(k, per), fp8(v, per)
            rows.append((name, label, rel(attention(qq, kk, vv, True), ref), rel(attention(qq, kk, v, False), ref),
                         rel(attention(q, k, vv, False), ref), rel(attention(q, k, v, True), ref)))
    print("| inputs | scales | all (q, k, v, P) | q and k only | v only | P only |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | " + " | ".join(f"{x * 100:.2f} %" for x in r[2:]) + " |")


if __name__ == "__main__":
    main()
