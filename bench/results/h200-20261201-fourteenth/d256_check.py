"""The Gluon forward asked for at head dim 256 (issue 6: the sweep's d256 points are 0.36-0.43x
of cuDNN on forward.py): each config below against the float64 reference (tests/attn_check.check,
out and lse; gradients by backward.py as before), dense, GQA, windows and varlen, counting that
the Gluon launcher served every call.
    PYTHONPATH=python python bench/results/h200-20261201-fourteenth/d256_check.py"""
import json
import os
import sys
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from attn_check import check, check_varlen  # noqa: E402
from fa_ck.backends.triton import launch_gluon  # noqa: E402

calls = []
_orig = launch_gluon._forward_gluon


def _counting(*a, **k):
    calls.append(1)
    return _orig(*a, **k)


launch_gluon._forward_gluon = _counting        # (the backend calls it through the module)

CASES = [dict(shape=(2, 1000, 1000, 8, 8, 256), causal=True), dict(shape=(1, 2048, 2048, 4, 4, 256)),
         dict(shape=(2, 777, 1531, 4, 2, 256)), dict(shape=(3, 1531, 129, 6, 3, 192), window_size=(200, 37)),
         dict(shape=(2, 1, 300, 4, 1, 256)), dict(shape=(1, 300, 1, 2, 2, 160), causal=True)]
for cfg in ({"GLUON": True, "BLOCK_N": 64}, {"GLUON": True, "BLOCK_N": 32, "num_stages": 3},
            {"GLUON": True, "BLOCK_N": 64, "PERSISTENT": False}):
    os.environ["FA_CK_TRITON_CONFIG"] = json.dumps({"fwd": cfg})
    for case in CASES + ["varlen"]:
        calls.clear()
        try:
            if case == "varlen":
                check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 4, 2, 256,
                             dtype=torch.bfloat16, device="cuda", causal=True, grads=False)
            else:
                c = dict(case)
                check(*c.pop("shape"), dtype=torch.bfloat16, device="cuda", grads=False, **c)
            print(f"PASS {cfg} {case} gluon_calls={len(calls)}", flush=True)
        except Exception as e:
            print(f"FAIL {cfg} {case} gluon_calls={len(calls)}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            if "CUDA" in str(e):
                traceback.print_exc()
                sys.exit(1)
