"""Device call 5: re-run the random sweep's failed cases (call4-sweep/failed_cases.json) on fresh
inputs, 3 times each, with the defaults and with one suspect change undone at a time:
dq with 2 stages (3 on dense calls was new), and the forward without TMA."""
import json, os, sys, torch
os.environ.setdefault("FA_CK_POISON", "1")
sys.path.insert(0, "tests")
from attn_check import check, check_varlen  # noqa: E402

VARIANTS = {"default": "", "dq_s2": '{"bwd_dq": {"num_stages": 2}}', "fwd_plain": '{"fwd": {"TMA": false}}',
            "dq_s2+det": '{"bwd_dq": {"num_stages": 2}}'}
rows = json.load(open(os.path.join(os.path.dirname(__file__), "call4-sweep", "failed_cases.json")))
for r in rows:
    for name, cfg in VARIANTS.items():
        os.environ["FA_CK_TRITON_CONFIG"] = cfg
        res = []
        for rep in range(3):
            torch.manual_seed(rep)
            feat = dict(r["feat"])
            if name.endswith("+det"):
                feat["deterministic"] = True
            if "alibi" in feat:
                shape = (r["b"], r["hq"]) if feat.pop("alibi") else (r["hq"],)
                feat["alibi_slopes"] = torch.rand(shape, device="cuda") * 0.3
            if "window_size" in feat:
                feat["window_size"] = tuple(feat["window_size"])
            kw = dict(dtype=getattr(torch, r["dtype"]), device="cuda", **feat)
            try:
                if r["lens"]:
                    e = check_varlen(*r["lens"], r["hq"], r["hkv"], r["d"], **kw)
                else:
                    e = check(r["b"], r["sq"], r["sk"], r["hq"], r["hkv"], r["d"], **kw)
                res.append("ok dq %.2g dk %.2g" % (e["dq"], e["dk"]))
            except AssertionError as ex:
                res.append("FAIL " + str(ex)[:40])
        print(r["case"], name, " | ".join(res), flush=True)
