"""bench/compare.py: fa_ck's speed at this tree against another commit, judged against the run's own noise."""
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import compare, decode  # noqa: E402


def _run(**ratio):
    return {(point, "fwd"): r for point, r in ratio.items()}


def test_change_is_judged_against_the_bar_and_the_spread_of_each_tree():
    this = [_run(a=1.00, b=0.90, c=1.10, d=0.95, e=1.0), _run(a=1.01, b=0.90, c=1.10, d=0.70, e=1.0)]
    base = [_run(a=1.00, b=1.00, c=1.00, d=0.70, f=1.0), _run(a=1.00, b=1.00, c=1.00, d=0.72, f=1.0)]
    rows = {r["point"]: r for r in compare.compare(this, base)}
    assert set(rows) == {"a", "b", "c", "d"}            # e and f are not measured by both trees
    assert rows["a"]["verdict"] == "kept" and rows["a"]["change"] == pytest.approx(0.005)
    assert rows["b"]["verdict"] == "slower" and rows["b"]["change"] == pytest.approx(-0.10)
    assert rows["c"]["verdict"] == "faster"
    # this tree's two runs differ by 36 %: a 16 % change there says nothing
    assert rows["d"]["spread"] == pytest.approx(0.95 / 0.70 - 1) and rows["d"]["verdict"] == "within noise"
    s = compare.summary(list(rows.values()))
    assert s["points"] == 4 and s["within_2pct"] == 1 and s["slower_beyond_noise"] == ["b fwd"]


def test_report_from_the_runs_kernels_py_wrote(tmp_path):
    def write(name, ratio):
        (tmp_path / name).mkdir()
        rows = [{"point": "bf16 d128 S512 causal", "mode": "fwd", "backend": "fa_ck-triton", "ratio_cudnn": ratio},
                {"point": "bf16 d128 S512 causal", "mode": "fwd", "backend": "sdpa-cudnn", "ratio_cudnn": None}]
        (tmp_path / name / "results.json").write_text(json.dumps({"env": {}, "points": rows}))
    write("this0", 0.80), write("this1", 0.82), write("base0", 0.91), write("base1", 0.90)
    report = compare.write_report(tmp_path, "9377518", "abc1234")
    assert "| bf16 d128 S512 causal | fwd | 0.905 | 0.810 | -10.5 % |" in report
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["summary"]["slower_beyond_noise"] == ["bf16 d128 S512 causal fwd"]


def test_the_other_tree_comes_from_git(tmp_path):
    python = compare.archive_python("HEAD", tmp_path)
    assert (python / "fa_ck" / "__init__.py").read_text() == (REPO / "python" / "fa_ck" / "__init__.py").read_text() \
        or decode.git_commit().endswith("+changes")


def test_arguments_after_the_separator_go_to_kernels_py(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(compare, "write_report", lambda out, rev, name: f"report of {out} for {rev}")
    compare.main(["9377518", "--summarize", str(tmp_path), "--", "--quick"])
    assert f"report of {tmp_path} for 9377518" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        compare.main(["HEAD", "--alternations", "0"])
    (tmp_path / "this0").mkdir()
    (tmp_path / "this0" / "results.json").write_text("{}")
    with pytest.raises(SystemExit, match="earlier runs"):       # they would be mixed into the new comparison
        compare.main(["HEAD", "--out", str(tmp_path), "--", "--quick"])
