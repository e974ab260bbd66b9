"""(CPU) Would rotating q and k before quantising them (x -> x H, H a normalised Hadamard matrix:
q H (k H)^T = q k^T, FlashAttention-3's "incoherent processing") cut fp8's error on heads with an
outlier channel? The float64 emulation of the fp8 forward (tests/test_fp8.emulate, q and k to 16 as
F16_SCORES quantises them, 256-key blocks) against float64 on the original inputs, per head (an
outlier channel of 0 / 20 / 40 / 60 x U(0.5, 1) in q and k, N(0, 1) elsewhere; S1024 d128), with
and without the rotation (q H, k H rounded to bf16). Not in fa_ck: a record for a later issue.
    TRITON_INTERPRET=1 PYTHONPATH=python:tests python3 bench/results/h200-20261204-wide/rotation_emulation.py
"""
import torch

from attn_check import rel_err
from fa_ck import reference
from fa_ck.backends import triton as tb
from test_fp8 import emulate

OUTLIERS = (0.0, 20.0, 40.0, 60.0)


def hadamard(n: int) -> torch.Tensor:
    """Sylvester's Hadamard matrix of order n (a power of two), normalised: orthogonal."""
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h / n ** 0.5


def main(s=1024, d=128):
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, s, len(OUTLIERS), d) for _ in range(3))
    for h, big in enumerate(OUTLIERS):
        if big:
            q[0, :, h, 0] = big * (0.5 + 0.5 * torch.rand(s))
            k[0, :, h, 0] = big * (0.5 + 0.5 * torch.rand(s))
    q, k, v = (x.to(torch.bfloat16) for x in (q, k, v))
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=False, dtype=torch.float64)
    v8, vd = tb.quantize_fp8(v, torch.float8_e4m3fn)
    rot = hadamard(d)
    print("| q, k | " + " | ".join(f"outlier {big:.0f}" for big in OUTLIERS) + " |")
    print("|---|" + "---|" * len(OUTLIERS))
    for name, (qq, kk) in (("as they are", (q, k)),
                           ("rotated", ((q.double() @ rot).to(torch.bfloat16), (k.double() @ rot).to(torch.bfloat16)))):
        (q8, qd), (k8, kd) = (tb.quantize_fp8(x, torch.float8_e4m3fn, target_max=16.0) for x in (qq, kk))
        emu, _, _ = emulate(q8, k8, v8, qd, kd, vd, block_n=256)
        print(f"| {name} | " + " | ".join(f"{rel_err(emu[:, :, h], ref[:, :, h]):.2%}" for h in range(len(OUTLIERS)))
              + " |")


if __name__ == "__main__":
    main()
