"""Device call 4: call 2's four failed sweep cases (two misaligned addresses in bwd_dq with 128x64
tiles, two ptxas crashes in bwd_dq with seqlen_k == 1) with the final code, once each, under
CUDA_LAUNCH_BLOCKING=1, one process per case (a fault ends the CUDA context).

    CUDA_LAUNCH_BLOCKING=1 python call4_repro.py 1-9
"""
import json, os, sys, traceback
import torch
sys.path.insert(0, "tests")
os.environ.setdefault("FA_CK_POISON", "1")
from attn_check import check, check_varlen  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
rows = {r["case"]: r for r in json.load(open(os.path.join(here, "call2", "sweep", "results.json")))["cases"]}
r = rows[sys.argv[1]]
feat = dict(r["feat"])
torch.manual_seed(0)
if "alibi" in feat:
    batch = len(r["lens"][0]) if r["lens"] else r["b"]
    feat["alibi_slopes"] = torch.rand((batch, r["hq"]) if feat.pop("alibi") else (r["hq"],), device="cuda") * 0.3
if "window_size" in feat:
    feat["window_size"] = tuple(feat["window_size"])
kw = dict(dtype=getattr(torch, r["dtype"]), device="cuda", same_precision=True, **feat)
try:
    e = check_varlen(*r["lens"], r["hq"], r["hkv"], r["d"], **kw) if r["lens"] else \
        check(r["b"], r["sq"], r["sk"], r["hq"], r["hkv"], r["d"], **kw)
    torch.cuda.synchronize()
    print(r["case"], "ok", {k: (v if isinstance(v, dict) else float("%.3g" % v)) for k, v in e.items()})
except Exception as ex:
    frames = [f"{f.name}:{f.lineno}" for f in traceback.extract_tb(ex.__traceback__) if "fa_ck" in f.filename]
    print(r["case"], "FAIL", type(ex).__name__, str(ex).splitlines()[0][:100], "| at", " > ".join(frames[-3:]))
