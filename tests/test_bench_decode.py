"""bench/decode.py on the CPU: fa_ck's decode kernels in Triton's interpreter at tiny shapes, beside SDPA
and FlexAttention (eager). Its report, its correctness gate and its byte count; no timing is asserted."""
import json
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import decode  # noqa: E402

STATUSES = {"ok", "skipped", "wrong", "failed"}


def run(tmp_path, *extra):
    out = tmp_path / "out"
    assert decode.main(["--cpu", "--out", str(out), *extra]) == 0
    return out, json.loads((out / "results.json").read_text())


def test_bytes_per_step_count_each_rows_visible_keys_once():
    # rows of 3 and 5 keys, Hk 2, d4, 2-byte elements: (3 + 5) keys x 2 heads x 4 x 2 tensors x 2 bytes
    assert decode.kv_bytes([3, 5], 2, 4, 2) == 8 * 2 * 4 * 2 * 2
    assert decode.kv_bytes(torch.tensor([1024] * 64), 8, 128, 2) == 64 * 1024 * 8 * 128 * 2 * 2
    assert decode.kv_bytes([], 8, 128, 2) == 0


def test_cpu_mode_writes_its_report_with_every_variant_measured_or_skipped(tmp_path):
    out, report = run(tmp_path, "--batches", "3", "--splits", "2")
    env, rows = report["env"], report["rows"]
    assert env["interpreter"] and env["copy_gbps"] > 0 and env["command"].startswith("python bench/decode.py --cpu")
    assert {r["point"] for r in rows} == {"B3 L48 dense", "B3 L48 page 16"}
    dense = {r["variant"]: r for r in rows if r["page"] == 0}
    paged = {r["variant"]: r for r in rows if r["page"] == 16}
    assert set(dense) == {"fa_ck", "fa_ck splits=2", "flex"} | {f"sdpa-{b}" for b in decode.SDPA_BACKENDS}
    assert set(paged) == {"fa_ck", "fa_ck splits=2", "flex"}       # SDPA reads dense caches only
    for r in rows:
        assert r["status"] in {"ok", "skipped"}, r
        if r["status"] == "ok":
            assert r["us"] > 0 and r["gbps"] > 0 and r["error"] <= decode.TOLERANCE, r
        else:
            assert r["note"], r
    for variant in ("fa_ck", "fa_ck splits=2", "flex"):
        assert dense[variant]["status"] == paged[variant]["status"] == "ok", (dense[variant], paged[variant])
        assert paged[variant]["paged_over_dense"] > 0
    assert "served by triton" in dense["fa_ck"]["note"]
    assert dense["sdpa-math"]["status"] == "ok" and dense["fa_ck"]["x_best_sdpa"] > 0
    assert "paged block mask" in paged["flex"]["note"]
    assert not dense["fa_ck"]["targets"]          # the interpreter's times judge no target
    md = (out / "results.md").read_text()
    assert "## fa_ck and its targets" in md and "| B3 L48 page 16 | fa_ck splits=2 | ok |" in md
    assert (out / "decode.png").stat().st_size > 0


def test_a_wrong_variant_is_reported_and_not_timed(tmp_path, monkeypatch):
    real = decode.flex_variant

    def off_by_half(view, on_gpu):
        call, note = real(view, on_gpu)
        return (lambda: call() * 1.5), note
    monkeypatch.setattr(decode, "flex_variant", off_by_half)
    _, report = run(tmp_path, "--batches", "1", "--variants", "flex", "--pages")
    rows = {r["variant"]: r for r in report["rows"]}
    assert set(rows) == {"fa_ck", "flex"}
    assert rows["flex"]["status"] == "wrong" and rows["flex"]["us"] is None
    assert rows["flex"]["error"] > decode.TOLERANCE and "not timed" in rows["flex"]["note"]
    assert rows["fa_ck"]["status"] == "ok"


def test_targets_are_judged_on_fa_ck_where_the_issue_sets_them():
    def row(point, variant, us):
        return decode.Row(point, variant, "ok", us=us, gbps=1000.0 * 100 / us)
    dense, paged = decode.Point(64, 8192, 0), decode.Point(64, 8192, 16)
    rows = [row(dense, "sdpa-flash", 150.0), row(dense, "sdpa-cudnn", 120.0), row(dense, "fa_ck", 100.0),
            row(paged, "fa_ck", 104.0), row(decode.Point(8, 1024, 0), "fa_ck", 10.0)]
    decode.derive(rows, copy=1150.0)
    fa_dense, fa_paged, small = rows[2], rows[3], rows[4]
    assert fa_dense.x_best_sdpa == pytest.approx(1.2) and fa_paged.paged_over_dense == pytest.approx(1.04)
    assert fa_dense.targets == {"copy": True, "sdpa": True} and fa_paged.targets["paged"]
    assert not fa_paged.targets["copy"]           # 962 GB/s: under 85 % of 1150 (1000 is over it)
    assert small.targets == {}                    # B8 1k: no copy target, no SDPA measured
    assert rows[0].targets == {}                  # only fa_ck's own rows carry targets


def test_append_bench_checks_both_paths_agree_before_timing(tmp_path, monkeypatch):
    from bench import decode_append
    out = tmp_path / "append"
    assert decode_append.main(["--cpu", "--out", str(out)]) == 0
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert {r["point"] for r in rows} == {f"B{b} {where}{rot}" for b in (1, 3) for where in ("dense", "page 16")
                                          for rot in ("", " rotary")}
    assert all(r["agree"] and r["fused_eager_us"] > 0 and r["torch_eager_us"] > 0 for r in rows)
    assert "| B3 page 16 rotary | True |" in (out / "results.md").read_text()
    # a fused append that writes nothing is caught, and nothing is timed
    tb = __import__("importlib").import_module("fa_ck.backends.triton")
    monkeypatch.setattr(tb, "kvcache_append", lambda q, *args: q)
    assert decode_append.main(["--cpu", "--out", str(tmp_path / "broken")]) == 1
    rows = json.loads((tmp_path / "broken" / "results.json").read_text())["rows"]
    assert not any(r["agree"] or "fused_eager_us" in r for r in rows)


def test_repeat_times_each_variant_that_many_times_and_reports_the_median(tmp_path):
    _, report = run(tmp_path, "--batches", "1", "--pages", "--variants", "sdpa", "--repeat", "3")
    assert report["env"]["repeat"] == 3
    timed = [r for r in report["rows"] if r["status"] == "ok"]
    assert {r["variant"] for r in timed} >= {"fa_ck"}
    for r in timed:
        assert len(r["repeats_us"]) == 3 and r["us"] == sorted(r["repeats_us"])[1], r
        assert "median of 3 timings" in r["note"]
    with pytest.raises(SystemExit):
        decode.parse_args(["--repeat", "0"])
