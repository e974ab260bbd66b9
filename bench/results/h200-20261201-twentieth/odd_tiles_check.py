"""Every element of fa_ck's forward against float64 (batch by batch) at the points of POINTS
(JSON [[B, H, S, D, causal], ...]): the persistent grid's program count changes with the query
blocks per head (launch_gluon._coprime_programs), so each program takes other units than before.
Prints the largest ||out - ref|| / ||ref|| per point (over batches) and whether any output is NaN.
    POINTS='[[48, 32, 384, 64, true]]' python3 bench/results/h200-20261201-twentieth/odd_tiles_check.py"""
import json, os
import torch
import fa_ck

for B, H, S, D, causal in json.loads(os.environ["POINTS"]):
    torch.manual_seed(1)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = fa_ck.attention(q, k, v, causal=causal, backend="triton")
    worst = 0.0
    for b in range(B):
        qb, kb, vb = (t[b].double() for t in (q, k, v))
        s = qb @ kb.transpose(-2, -1) * D ** -0.5
        if causal:
            s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
        ref = torch.softmax(s, -1) @ vb
        worst = max(worst, float((out[b].double() - ref).norm() / ref.norm()))
    print(f"check d{D} S{S} {'causal' if causal else 'full'} B{B}xH{H}: worst rel err {worst:.2e}, "
          f"nan {bool(out.isnan().any())}", flush=True)
