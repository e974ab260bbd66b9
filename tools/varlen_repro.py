"""The varlen case of tests/test_gpu_scale.py without the reference, for compute-sanitizer:
64 sequences of random lengths summing to 32k tokens, GQA 8/2, d128, bf16, causal, fwd + bwd.
    compute-sanitizer --tool memcheck python3 tools/varlen_repro.py"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import fa_ck  # noqa: E402

gen = torch.Generator().manual_seed(0)
cuts = torch.randperm(32768 - 1, generator=gen)[:63].add(1).sort().values
bounds = torch.cat([torch.tensor([0]), cuts, torch.tensor([32768])])
lens = (bounds[1:] - bounds[:-1]).tolist()
cu = bounds.to(torch.int32).cuda()
q = torch.randn(32768, 8, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True)
k, v = (torch.randn(32768, 2, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(2))
for what in ("forward", "backward"):
    if what == "forward":
        out = fa_ck.flash_attn_varlen_func(q, k, v, cu, cu, max(lens), max(lens), causal=True)
    else:
        out.backward(torch.randn_like(out))
    torch.cuda.synchronize()
    print(what, "ok", flush=True)
print("max len", max(lens), "min len", min(lens))
