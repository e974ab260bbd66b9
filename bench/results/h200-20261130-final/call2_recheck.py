"""Device call 2: call 4's failed sweep cases (h200-20261130-onepass/call4-sweep/failed_cases.json)
on fresh inputs, 3 times each, with both criteria of attn_check._compare: the same-precision
reference and FA2's delta (the reference whose delta = rowsum(dO * O) takes the stored output)."""
import json, os, sys, torch
os.environ.setdefault("FA_CK_POISON", "1")
sys.path.insert(0, "tests")
from attn_check import check, check_varlen  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
rows = json.load(open(os.path.join(here, "..", "h200-20261130-onepass", "call4-sweep", "failed_cases.json")))
for r in rows:
    res = []
    for rep in range(3):
        torch.manual_seed(rep)
        feat = dict(r["feat"])
        if "alibi" in feat:
            shape = (r["b"], r["hq"]) if feat.pop("alibi") else (r["hq"],)
            feat["alibi_slopes"] = torch.rand(shape, device="cuda") * 0.3
        if "window_size" in feat:
            feat["window_size"] = tuple(feat["window_size"])
        kw = dict(dtype=getattr(torch, r["dtype"]), device="cuda", same_precision=True, **feat)
        try:
            e = check_varlen(*r["lens"], r["hq"], r["hkv"], r["d"], **kw) if r["lens"] else \
                check(r["b"], r["sq"], r["sk"], r["hq"], r["hkv"], r["d"], **kw)
            extra = {k: {n: float("%.2g" % x) for n, x in e[k].items()} for k in ("same_precision", "fa2_delta") if k in e}
            res.append("ok dq %.2g dk %.2g dv %.2g %s" % (e["dq"], e["dk"], e["dv"], extra or ""))
        except AssertionError as ex:
            res.append("FAIL " + str(ex)[:200])
    print(r["case"], r["dtype"], "d%d" % r["d"], r["feat"], "\n   " + "\n   ".join(res), flush=True)
