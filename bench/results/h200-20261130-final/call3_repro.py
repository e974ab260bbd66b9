"""Device call 3: one of call 2's two misaligned-address sweep cases (varlen, bf16, d96/d80,
causal, per-head ALiBi), once, under CUDA_LAUNCH_BLOCKING=1 so the fault names its launch.
Run one process per (case, FA_CK_TRITON_CONFIG variant): a fault ends the CUDA context.

    CUDA_LAUNCH_BLOCKING=1 FA_CK_TRITON_CONFIG='{...}' python call3_repro.py 1-9
"""
import json, os, sys, traceback
import torch
sys.path.insert(0, "tests")
os.environ.setdefault("FA_CK_POISON", "1")
from attn_check import check_varlen  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
rows = {r["case"]: r for r in json.load(open(os.path.join(here, "call2", "sweep", "results.json")))["cases"]}
r = rows[sys.argv[1]]
feat = dict(r["feat"])
shape = (len(r["lens"][0]), r["hq"]) if feat.pop("alibi") else (r["hq"],)
torch.manual_seed(0)
feat["alibi_slopes"] = torch.rand(shape, device="cuda") * 0.3
tag = f"{r['case']} {os.environ.get('FA_CK_TRITON_CONFIG', '') or 'defaults'}:"
try:
    e = check_varlen(*r["lens"], r["hq"], r["hkv"], r["d"], dtype=getattr(torch, r["dtype"]), device="cuda",
                     same_precision=True, **feat)
    torch.cuda.synchronize()
    print(tag, "ok", {k: v for k, v in e.items() if not isinstance(v, dict)})
except Exception as ex:
    frames = [f"{f.name}:{f.lineno}" for f in traceback.extract_tb(ex.__traceback__) if "fa_ck" in f.filename]
    print(tag, "FAIL", type(ex).__name__, str(ex).splitlines()[0][:100], "| at", " > ".join(frames[-3:]))
