"""The varlen case of tests/test_gpu_scale.py without the reference, for compute-sanitizer:
64 sequences of random lengths summing to 32k tokens, GQA 8/2, d128, bf16, causal, fwd + bwd.

    [FA_CK_POISON=1] compute-sanitizer --tool memcheck python3 tools/varlen_repro.py [--guard]
    python3 tools/varlen_repro.py --config bwd_dq=128,32,8,2 [--pytest NODE]

--guard puts the inputs inside NaN guard space, as the tests' rand() does. --config overrides
a kernel's default (BLOCK_M, BLOCK_N, num_warps, num_stages); --pytest then runs that test
under the override instead of the repro."""
import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "tests")]
import fa_ck  # noqa: E402
from fa_ck.backends.triton import configs  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--guard", action="store_true")
ap.add_argument("--config", action="append", default=[], help="kernel=BM,BN,warps,stages")
ap.add_argument("--pytest", default=None)
args = ap.parse_args()

overrides = {}
for spec in args.config:
    kernel, vals = spec.split("=")
    bm, bn, w, s = map(int, vals.split(","))
    overrides[kernel] = dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=s)
_default = configs.default
configs.default = lambda kernel, *a: dict(overrides[kernel]) if kernel in overrides else _default(kernel, *a)

if args.pytest:
    import pytest
    sys.exit(pytest.main([args.pytest, "-q", "-p", "no:cacheprovider"]))

from attn_check import rand  # noqa: E402

gen = torch.Generator().manual_seed(0)
cuts = torch.randperm(32768 - 1, generator=gen)[:63].add(1).sort().values
bounds = torch.cat([torch.tensor([0]), cuts, torch.tensor([32768])])
lens = (bounds[1:] - bounds[:-1]).tolist()
cu = bounds.to(torch.int32).cuda()
if args.guard:
    q = rand(32768, 8, 128, dtype=torch.bfloat16, device="cuda")
    k, v = (rand(32768, 2, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))
else:
    q = torch.randn(32768, 8, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    k, v = (torch.randn(32768, 2, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(2))
out = fa_ck.flash_attn_varlen_func(q, k, v, cu, cu, max(lens), max(lens), causal=True)
torch.cuda.synchronize()
print("forward ok", flush=True)
grads = torch.autograd.grad(out, (q, k, v), torch.randn_like(out))
torch.cuda.synchronize()
print("backward ok; max len", max(lens), "min len", min(lens), overrides, flush=True)
