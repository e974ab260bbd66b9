"""Device call 10: which change of the failing case moves the misaligned address that
tests/test_triton_kernels.py::test_fwd_bwd_fp32[64-64-40-4-True] hits on the H200 (forward.py's
fwd_kernel, fp32, d40, GQA 4, causal, Sq = Sk = 64, B2). Each variant runs in a process of its
own (a CUDA fault is sticky), CUDA_LAUNCH_BLOCKING=1, FA_CK_POISON=1 as in the tests.
    python bench/results/h200-20261204-current/misaligned.py OUT.md"""
import json, os, subprocess, sys

CASE = """
import sys, torch
sys.path.insert(0, 'tests')
from attn_check import check
b, sq, sk, hq, hkv, d, causal, dtype = {args}
check(b, sq, sk, hq, hkv, d, causal=causal, dtype=getattr(torch, dtype), device='cuda', grads=False)
print('OK')
"""
BASE = dict(b=2, sq=64, sk=64, hq=8, hkv=2, d=40, causal=True, dtype="float32")
VARIANTS = [("the failing case", {}, None), ("not causal", dict(causal=False), None),
            ("GQA 1", dict(hq=2), None), ("GQA 2", dict(hq=4), None), ("B1", dict(b=1), None),
            ("d32", dict(d=32), None), ("d48", dict(d=48), None), ("d80", dict(d=80), None),
            ("Sq = Sk = 128", dict(sq=128, sk=128), None), ("Sq = Sk = 33", dict(sq=33, sk=33), None),
            ("num_stages 2", {}, {"fwd": {"num_stages": 2}}), ("num_stages 1", {}, {"fwd": {"num_stages": 1}}),
            ("BLOCK_M 64", {}, {"fwd": {"BLOCK_M": 64}}), ("BLOCK_N 32", {}, {"fwd": {"BLOCK_N": 32}}),
            ("num_warps 8", {}, {"fwd": {"num_warps": 8}}), ("bf16", dict(dtype="bfloat16"), None),
            ("fp16 through forward.py", dict(dtype="float16"), {"fwd": {"GLUON": False}})]
rows = []
for name, shape, cfg in VARIANTS:
    s = dict(BASE, **shape)
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1", FA_CK_POISON="1", PYTHONPATH="python")
    if cfg:
        env["FA_CK_TRITON_CONFIG"] = json.dumps(cfg)
    args = repr((s["b"], s["sq"], s["sk"], s["hq"], s["hkv"], s["d"], s["causal"], s["dtype"]))
    p = subprocess.run([sys.executable, "-c", CASE.format(args=args)], capture_output=True, text=True, timeout=120,
                       env=env)
    err = [l for l in (p.stdout + p.stderr).splitlines() if "Error" in l or "error" in l]
    verdict = "ok" if "OK" in p.stdout else (err[-1][:150] if err else f"rc {p.returncode}")
    rows.append(f"| {name} | {s} | {json.dumps(cfg) if cfg else ''} | {verdict} |")
    print(rows[-1], flush=True)
with open(sys.argv[1], "w") as f:
    f.write("| variant | shape | FA_CK_TRITON_CONFIG | result |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
