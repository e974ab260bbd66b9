"""bench/fp8_trained.py end to end at the tiny preset (CPU: fa_ck's kernels in the interpreter)."""
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from bench import fp8_trained  # noqa: E402


def test_fp8_error_on_a_models_qkv_is_reported_per_layer_beside_the_anchors(tmp_path):
    rows = fp8_trained.main(["--preset", "tiny", "--steps", "2", "--batch", "2", "--block", "32", "--capture", "1",
                             "--out", str(tmp_path)])
    assert [r["layer"] for r in rows] == [0, 1, 2, 3]
    for r in rows:
        assert 0 < r["fa_ck_bf16"] < 1e-2 and 0 < r["sdpa_bf16"] < 1e-2       # bf16 against float64
        assert 0 < r["fp8"] < 0.15                                            # e4m3: a few %
        assert 0.02 < r["fp8_randn"] < 0.08                                   # ~5 % on N(0, 1) inputs
        assert r["logit_std"] > 0 and r["outlier_ratio"] >= 1
    text = (tmp_path / "results.md").read_text()
    assert text.count("\n| ") == 1 + len(rows) and (tmp_path / "results.json").exists()
