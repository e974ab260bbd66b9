"""Device call 6: the sweep's failed cases (call4-sweep/failed_cases.json) on fresh inputs, 3 times
each, with the final defaults (dq back to 2 stages) and the sweep's same-precision criterion."""
import json, os, sys, torch
os.environ.setdefault("FA_CK_POISON", "1")
sys.path.insert(0, "tests")
from attn_check import check, check_varlen  # noqa: E402

rows = json.load(open(os.path.join(os.path.dirname(__file__), "call4-sweep", "failed_cases.json")))
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
            sp = e.get("same_precision")
            res.append("ok dq %.2g dk %.2g dv %.2g" % (e["dq"], e["dk"], e["dv"])
                       + (" (same-precision ref: %s)" % {k: float("%.2g" % v) for k, v in sp.items()} if sp else ""))
        except AssertionError as ex:
            res.append("FAIL " + str(ex)[:120])
    print(r["case"], r["dtype"], "d%d" % r["d"], r["feat"], "\n   " + "\n   ".join(res), flush=True)
