"""bench/host.py on the CPU: the stubbed run (fa_ck's own Python path, launches stubbed) writes
its table and a breakdown whose pieces add up within the total. The GPU table runs on a GPU only."""
import json
import subprocess
import sys
from pathlib import Path

HOST_PY = Path(__file__).resolve().parents[1] / "bench" / "host.py"


def test_stubbed_run_writes_the_table_and_the_breakdown(tmp_path):
    # its own process: the stubs replace fa_ck's launch functions for good
    res = subprocess.run([sys.executable, str(HOST_PY), "--stubbed", "--n", "5", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    data = json.loads((tmp_path / "results.json").read_text())
    assert [r["call"] for r in data["rows"]] == ["fa_ck fwd", "fa_ck fwd+bwd", "fa_ck fp8 fwd"]
    assert all(r["host_us"] > 0 and r["gpu_us"] is None for r in data["rows"])
    fwd, pieces = data["breakdown"]["fa_ck fwd"], data["breakdown"]["fa_ck fwd+bwd"]
    assert 0 < fwd["triton forward"] < fwd["total"] and "triton backward" not in fwd
    assert 0 < pieces["triton forward"] < pieces["total"] and 0 < pieces["triton backward"] < pieces["total"]
    assert pieces["plan keys"] > 0 and pieces["plan replays"] > 0     # repeated calls replay their plans
    assert pieces["triton backward"] <= pieces["backward (fa_ck.ops._grads)"]
    md = (tmp_path / "results.md").read_text()
    assert "| B1 S128 H2/2 d64 causal | fa_ck fwd+bwd |" in md and "where the host time goes" in md


def test_fast_path_both_measures_each_call_with_it_on_and_off(tmp_path):
    res = subprocess.run([sys.executable, str(HOST_PY), "--stubbed", "--n", "3", "--fast-path", "both",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    data = json.loads((tmp_path / "results.json").read_text())
    assert all(r["host_us"] > 0 and r["host_us_off"] > 0 for r in data["rows"])
    on, off = data["breakdown"]["fa_ck fwd+bwd"], data["breakdown"]["fa_ck fwd+bwd, fast path off"]
    assert on["plan replays"] > 0 and "plan replays" not in off and "plan keys" not in off   # off: no plans
    assert 0 < off["triton backward"] < off["total"]
    assert "host off / on" in (tmp_path / "results.md").read_text()
