"""bench/random_sweep.py's harness on the CPU (the kernels through the interpreter): cases are
drawn, checked with attn_check (dense and varlen, dropout included), and out-of-memory is
recorded as not run, never as a pass."""
import importlib.util
import json
import random
from pathlib import Path

import torch

from conftest import DEVICE

SWEEP_PY = Path(__file__).resolve().parents[1] / "bench" / "random_sweep.py"


def _load():
    spec = importlib.util.spec_from_file_location("random_sweep_under_test", SWEEP_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_draws_cover_varlen_dropout_and_features():
    rs = _load()
    rng = random.Random(1)
    cases = [rs.draw(rng) for _ in range(400)]
    assert sum(c["lens"] is not None for c in cases) > 60
    assert sum("dropout_p" in c["feat"] for c in cases) > 20
    for c in cases:
        assert c["hq"] % c["hkv"] == 0
        if c["lens"]:
            assert len(c["lens"][0]) == len(c["lens"][1]) == c["b"]


def test_deterministic_is_drawn_both_ways_and_passed_through(monkeypatch):
    rs = _load()
    rng = random.Random(2)
    cases = [rs.draw(rng) for _ in range(200)]
    drawn = [c["feat"]["deterministic"] for c in cases]
    assert set(drawn) == {True, False} and 60 < sum(drawn) < 140
    json.dumps(cases)   # rows are written as JSON
    seen = []

    def fake_check(*args, **kw):
        seen.append(kw["deterministic"])
        return {}
    monkeypatch.setattr(rs, "check", fake_check)
    monkeypatch.setattr(rs, "check_varlen", fake_check)
    rows = rs.run_cases(2, 200, 1e9, device=DEVICE)
    assert seen == drawn and [r["feat"]["deterministic"] for r in rows] == drawn


def test_run_cases_small(monkeypatch):
    rs = _load()
    small = [
        dict(b=2, sq=20, sk=33, lens=None, hq=4, hkv=2, d=32, dtype="float32",
             feat=dict(causal=True, softmax_scale=None, alibi=True, dropout_p=0.1)),
        dict(b=3, sq=0, sk=0, lens=[[5, 0, 17], [9, 3, 17]], hq=2, hkv=1, d=16, dtype="float32",
             feat=dict(causal=False, softmax_scale=0.5, window_size=(4, -1), dropout_p=0.5, deterministic=True)),
    ]
    it = iter(small)
    monkeypatch.setattr(rs, "draw", lambda rng: next(it))
    rows = rs.run_cases(0, 2, 1e9, device=DEVICE)
    assert [r["ok"] for r in rows] == [True, True]
    assert set(rows[1]["errors"]) == {"out", "lse", "dq", "dk", "dv"}


def test_out_of_memory_is_not_a_pass(monkeypatch):
    rs = _load()
    monkeypatch.setattr(rs, "draw", lambda rng: dict(b=1, sq=4, sk=4, lens=None, hq=1, hkv=1, d=16,
                                                     dtype="float32", feat=dict(causal=False)))
    calls = []

    def oom(*a, **k):
        calls.append(1)
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")
    monkeypatch.setattr(rs, "check", oom)
    (row,) = rs.run_cases(0, 1, 1e9, device=DEVICE)
    assert row["ok"] is None and row["not_run"] == "out of memory" and len(calls) == 2


def test_same_precision_criterion_passes_and_fails():
    """A gradient past its fixed bound passes only within 2x the error of the reference run in
    the input dtype (attn_check._compare), and says so."""
    import pytest
    from attn_check import _compare
    torch.manual_seed(0)
    for eps, base_eps, passes in ((0.05, 0.03, True), (0.05, 0.02, False), (0.01, 0.0, True)):
        q, k, v = (torch.randn(2, 8, 2, 4, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
        out = q + k + v + eps * (q - q.detach())     # the reference's values; dq off by eps
        ref = q64 + k64 + v64
        lse = torch.zeros(2, 2, 8)
        def same_precision(do, base_eps=base_eps):
            return (do * (1 + base_eps), do, do)
        def fa2_delta(do):                           # the exact gradients: no help from there
            return (do, do, do)
        run = lambda: _compare(out, lse, ref, lse.double(), (q, k, v), (q64, k64, v64),  # noqa: E731
                               torch.bfloat16, "cpu", True, (same_precision, fa2_delta))
        if passes:
            errs = run()
            assert ("same_precision" in errs) == (eps > 0.03)   # only past the bf16 bound of 3e-2
        else:
            with pytest.raises(AssertionError, match="2x the error of the reference"):
                run()


def test_fa2_delta_reference_is_flash_attention_2s_backward():
    """attn_check._fa2_delta against FA2's backward written out: dS = P * (dP - rowsum(dO * out))
    with the output as given (here off the exact one), dq = scale dS k, dk = scale dS^T q, dv = P^T dO."""
    from attn_check import _fa2_delta
    from fa_ck import reference
    torch.manual_seed(0)
    b, sq, sk, h, d, scale = 2, 5, 7, 3, 4, 0.3
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.float64) for s in (sq, sk, sk))
    ref_fn = lambda q, k, v, dtype: reference.attention(q, k, v, scale=scale, causal=True, dtype=dtype)  # noqa: E731
    exact, _ = ref_fn(q, k, v, torch.float64)
    out = exact + 1e-2 * torch.randn_like(exact)       # a stored output with an error in it
    do = torch.randn_like(exact)
    dq, dk, dv = _fa2_delta(ref_fn, (q, k, v), out)(do)
    p, _ = reference.probabilities(q, k, scale=scale, causal=True, dtype=torch.float64)   # (b, h, sq, sk)
    qh, kh, vh, doh, outh = (t.transpose(1, 2) for t in (q, k, v, do, out))
    ds = p * (doh @ vh.transpose(-1, -2) - (doh * outh).sum(-1, keepdim=True))
    want = (scale * ds @ kh, scale * ds.transpose(-1, -2) @ qh, p.transpose(-1, -2) @ doh)
    for got, w in zip((dq, dk, dv), want):
        torch.testing.assert_close(got, w.transpose(1, 2), rtol=1e-10, atol=1e-10)
    exact_dq = torch.autograd.grad(ref_fn(*(t.requires_grad_() for t in (q, k, v)), torch.float64)[0], q, do)[0]
    assert (exact_dq - dq).abs().max() > 1e-4           # the stored output's error does show


def test_one_key_rows_match_flash_attention_2s_delta():
    """Keys: 1, so every dS is 0 in exact arithmetic and dk is what is left of the rounding of the
    stored fp16 output in delta = rowsum(dO * O) (flash-attn's delta too): past the fixed fp16
    bound, within it of the reference with FA2's delta."""
    from attn_check import GRAD_TOL, check
    torch.manual_seed(0)
    errs = check(1, 128, 1, 8, 1, 64, dtype=torch.float16, device=DEVICE, softcap=5.0, dropout_p=0.1,
                 same_precision=True)
    if DEVICE == "cpu":                                  # the interpreter's rounding is fixed: needed here
        assert errs["dk"] > GRAD_TOL[torch.float16] and "fa2_delta" in errs
    if "fa2_delta" in errs:
        assert errs["fa2_delta"]["dk"] <= GRAD_TOL[torch.float16] / 4


def test_replay_checks_failed_cases_again_from_json(tmp_path):
    """--replay reads a results.json (lists where draw() made tuples) and checks its failed
    cases on fresh inputs; a case named by id is replayed whatever its outcome."""
    rs = _load()
    varlen = dict(case="0-1", ok=False, b=2, sq=0, sk=0, lens=[[5, 1], [7, 0]], hq=2, hkv=1, d=16,
                  dtype="float32", feat=dict(causal=True, window_size=[3, 0], alibi=True))
    dense = dict(case="0-2", ok=True, b=1, sq=9, sk=12, lens=None, hq=2, hkv=2, d=16, dtype="float32",
                 feat=dict(causal=False, alibi=False, dropout_p=0.1))
    rows = json.loads(json.dumps([varlen, dense]))
    lines, failed = rs.replay(rows, None, 2, device=DEVICE)
    assert failed == 0 and len(lines) == 2 and all(line.startswith("case 0-1") and " ok " in line for line in lines)
    lines, failed = rs.replay(rows, ["0-2"], 1, device=DEVICE)
    assert failed == 0 and len(lines) == 1 and lines[0].startswith("case 0-2 try 0: ok")
    broken = dict(varlen, case="0-3", hq=3, hkv=2)           # 3 q heads over 2 kv heads: refused, a failure
    lines, failed = rs.replay([broken], None, 1, device=DEVICE)
    assert failed == 1 and "FAIL" in lines[0]
