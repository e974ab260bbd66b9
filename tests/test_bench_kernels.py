"""bench/kernels.py's bookkeeping on the CPU: flop counts, the sweep's shapes and order,
ratios, the markdown/JSON/plot writers on fake data, one measurement, and a CPU smoke run.
The GPU timing itself is exercised only on a GPU machine."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

KERNELS_PY = Path(__file__).resolve().parents[1] / "bench" / "kernels.py"


@pytest.fixture(scope="module")
def K():
    spec = importlib.util.spec_from_file_location("bench_kernels_under_test", KERNELS_PY)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod   # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def cpu_run(monkeypatch):
    """kernels.py as it runs on a machine without a GPU, on a GPU machine too (there it would time
    the GPU sweep, which these tests do not check): torch.cuda.is_available() False for the test."""
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_flops_convention(K):
    full = 4 * 1 * 16 * 16384 * 16384 * 128
    assert K.fwd_flops(1, 16, 16384, 16384, 128, causal=False) == full
    assert K.fwd_flops(1, 16, 16384, 16384, 128, causal=True) == full / 2
    shape = K.Shape("bf16", 128, False, 16384, 1, 16)
    assert K.flops(shape, "fwd") == full
    assert K.flops(shape, "fwdbwd") == 3.5 * full
    assert K.tflops(1e12, 1.0) == pytest.approx(1000.0)
    # the H200 anchor row, cuDNN d128 16k: 3.6352 ms -> 604.9 fwd; causal fwd+bwd 7.325 ms -> 525.4
    assert K.tflops(K.flops(shape, "fwd"), 3.6352) == pytest.approx(604.9, abs=0.1)
    causal = K.Shape("bf16", 128, True, 16384, 1, 16)
    assert K.tflops(K.flops(causal, "fwdbwd"), 7.325) == pytest.approx(525.4, abs=0.1)


def test_default_sweep_shapes_and_order(K):
    shapes = K.sweep_shapes(["fp16", "bf16"], [256, 64, 128], K.SEQLENS, [False, True])
    assert len(shapes) == 2 * 3 * 6 * 2 + 1
    sweep = [s for s in shapes if not s.tag]
    assert all(s.B * s.S == 16384 and s.H * s.D == 2048 for s in sweep)
    assert {(s.D, s.H) for s in sweep} == {(64, 32), (128, 16), (256, 8)}
    # most important first: all of bf16 d128, then nanoGPT, and fp16 only after every bf16 point
    assert all(s.dtype == "bf16" and s.D == 128 for s in shapes[:12])
    nanogpt = [s for s in shapes if s.tag == "nanogpt"]
    assert len(nanogpt) == 1 and shapes[12] == nanogpt[0]
    assert (nanogpt[0].B, nanogpt[0].H, nanogpt[0].S, nanogpt[0].D, nanogpt[0].causal) == (64, 12, 1024, 64, True)
    first_fp16 = next(i for i, s in enumerate(shapes) if s.dtype == "fp16")
    assert all(s.dtype == "fp16" for s in shapes[first_fp16:])
    assert len({s.name for s in shapes}) == len(shapes)


def test_narrowed_sweep(K):
    shapes = K.sweep_shapes(["bf16"], [128], [4096], [True])
    assert [s.name for s in shapes] == ["bf16 d128 S4096 causal B4xH16"]   # no d64: no nanoGPT shape
    assert not any(s.tag for s in K.sweep_shapes(["bf16"], [64], [1024], [True], nanogpt=False))


def test_naive_memory_rule(K):
    naive = K.Naive()
    assert naive.skip(K.Shape("bf16", 64, False, 16384, 1, 32), "fwd")        # 32 x 16k^2 x 12 B > 40 GB
    assert naive.skip(K.Shape("bf16", 128, False, 8192, 2, 16), "fwd") is None   # ~26 GB
    assert naive.skip(K.Shape("bf16", 64, True, 1024, 64, 12, "nanogpt"), "fwdbwd") is None


def _row(point, mode, backend, tflops=None, **kw):
    base = dict(point=point, tag="", dtype="bf16", D=128, H=16, B=4, S=4096, causal=False, mode=mode,
                backend=backend)
    if tflops is not None:
        base.update(tflops=tflops, ms=1.0, peak_gb=1.5, rel_err=2e-3)
        if mode == "fwdbwd":
            base.update(rel_err_dq=3e-3, rel_err_dk=4e-3, rel_err_dv=1e-3)
    base.update(kw)
    return base


def fake_rows(K):
    rows = []
    for mode, cudnn, ours in (("fwd", 600.0, 660.0), ("fwdbwd", 550.0, 500.0)):
        rows += [_row("bf16 d128 S4096 full B4xH16", mode, "sdpa-cudnn", cudnn),
                 _row("bf16 d128 S4096 full B4xH16", mode, "fa_ck-triton", ours),
                 _row("bf16 d128 S4096 full B4xH16", mode, "sdpa-flash", error="RuntimeError: boom"),
                 _row("bf16 d128 S4096 full B4xH16", mode, "naive", skipped="too big"),
                 _row("bf16 d128 S1024 full B16xH16", mode, "sdpa-cudnn", 500.0, S=1024, B=16),
                 _row("bf16 d128 S1024 full B16xH16", mode, "fa_ck-triton", 250.0, S=1024, B=16)]
    rows.append(_row("nanogpt bf16 d64 S1024 causal B64xH12", "fwdbwd", "sdpa-cudnn", 300.0,
                     tag="nanogpt", D=64, H=12, B=64, S=1024, causal=True))
    rows.append(_row("nanogpt bf16 d64 S1024 causal B64xH12", "fwdbwd", "fa_ck-triton", 330.0,
                     tag="nanogpt", D=64, H=12, B=64, S=1024, causal=True))
    K.add_ratios(rows)
    return rows


def test_ratios_to_cudnn(K):
    rows = fake_rows(K)
    by = {(r["point"], r["mode"], r["backend"]): r for r in rows}
    assert by[("bf16 d128 S4096 full B4xH16", "fwd", "fa_ck-triton")]["ratio_cudnn"] == 1.1
    assert by[("bf16 d128 S4096 full B4xH16", "fwdbwd", "sdpa-cudnn")]["ratio_cudnn"] == 1.0
    assert by[("bf16 d128 S4096 full B4xH16", "fwd", "sdpa-flash")]["ratio_cudnn"] is None


def test_markdown_table(K):
    table = K.markdown_table(fake_rows(K), "fwd")
    lines = table.splitlines()
    assert lines[0] == "| point | fa_ck-triton | sdpa-cudnn | sdpa-flash | naive |"
    assert set(lines[1]) <= set("|-")
    assert "| bf16 d128 S4096 full B4xH16 | 660.0 (1.10x) | 600.0 | err | skip |" in lines
    assert "| bf16 d128 S1024 full B16xH16 | 250.0 (0.50x) | 500.0 |  |  |" in lines


def test_targets(K):
    text = "\n".join(K.target_lines(fake_rows(K)))
    assert "forward: min 1.100x (goal 1.05x, met" in text
    assert "fwd+bwd: min 0.909x (goal 1.0x, MISSED by 0.091" in text
    assert "nanoGPT fwd+bwd (time <= 0.95x cuDNN): min 1.100x (goal 1.053x, met" in text
    assert "every point: min 0.500x (goal 0.9x, MISSED by 0.400" in text


def test_writers(K, tmp_path):
    rows = fake_rows(K)
    env = {"command": "python bench/kernels.py --quick", "gpu": "NVIDIA H200", "date": "2026-11-29",
           "torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0", "cudnn": 91900, "fa_ck": "0.1.0",
           "unavailable": {"fa_ck-fp8": "TypeError: no fp8"}, "not_measured": ["bf16 d256 S512 full B32xH8"]}
    K.write_json(tmp_path / "results.json", rows, env)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["env"] == env and data["points"] == rows
    K.write_markdown(tmp_path / "results.md", rows, env)
    md = (tmp_path / "results.md").read_text()
    for needle in ("python bench/kernels.py --quick", "NVIDIA H200", "## Forward: TFLOP/s",
                   "## Forward + backward: TFLOP/s", "peak memory", "relative error", "MISSED",
                   "## Gradient relative error", "4.0e-03 (dk)",
                   "fa_ck-fp8: TypeError: no fp8", "bf16 d256 S512 full B32xH8", "sdpa-flash error (2 points)"):
        assert needle in md, needle
    plots = K.write_plots(tmp_path, rows)
    assert sorted(p.name for p in plots) == ["tflops-bf16-fwd.png", "tflops-bf16-fwdbwd.png"]
    assert all(p.stat().st_size > 1000 for p in plots)
    summary = K.summary(rows)
    assert "1.10x" in summary and "err" in summary and len(summary.splitlines()) == 1 + 5


def test_device_slug(K):
    from bench.out_dir import device_slug
    assert device_slug("NVIDIA H200") == "h200"
    assert device_slug("AMD Instinct MI300X") == "mi300x"
    assert device_slug("cpu") == "cpu"


def test_default_output_is_under_the_working_directory(K, cpu_run, tmp_path, monkeypatch):
    """Without --out a run writes to ./fa_ck-results/kernels-<device>-<date>/, never into the checkout."""
    monkeypatch.chdir(tmp_path)
    assert K.main(["--backends", "sdpa-default", "--time-budget", "0"]) == 0
    (out,) = (tmp_path / "fa_ck-results").iterdir()
    assert out.name.startswith("kernels-cpu-") and (out / "results.json").exists() and (out / "results.md").exists()


class FakeFaCk:
    """Stands in for the fa_ck module: records what each call saw."""
    __version__ = "0.0-test"

    def __init__(self, raise_on_fp8=None):
        self.calls, self.seen, self.raise_on_fp8 = [], [], raise_on_fp8

    def attention(self, q, k, v, causal=False, backend="auto", fp8=None, deterministic=False):
        if fp8 and self.raise_on_fp8:
            raise self.raise_on_fp8
        self.calls.append((backend, os.environ.get("FA_CK_AUTOTUNE")))
        self.seen.append((os.environ.get("FA_CK_TRITON_CONFIG"), deterministic))
        import torch.nn.functional as F
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _measure(K, backend, mode="fwd", causal=True):
    import torch
    shape = K.Shape("bf16", 32, causal, 64, 2, 2)
    inputs = K.make_inputs(shape, torch.device("cpu"))
    ref = K.reference_out(*(K._ref_slice(t) for t in inputs[:3]), causal)
    ref_grads = K.reference_grads(*(K._ref_slice(t) for t in inputs), causal)
    timer = K._timer(False, 1, 5)
    return K.measure(backend, shape, mode, inputs, ref, timer, torch.device("cpu"), ref_grads)


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_measure_correct_backend(K, mode):
    row = _measure(K, K.Sdpa("sdpa-default"), mode)
    assert row["ms"] > 0 and row["tflops"] > 0 and "error" not in row
    assert row["rel_err"] < 1e-2   # bf16 vs the fp64 reference
    grads = [row.get(f"rel_err_{n}") for n in ("dq", "dk", "dv")]
    if mode == "fwd":
        assert grads == [None] * 3
    else:
        assert all(0 < e < 2e-2 for e in grads), grads


def test_measure_catches_a_wrong_gradient(K):
    class WrongDv(K.Backend):
        """Forward right, dv scaled by 0.1, dq and dk right."""
        name = "wrong-dv"

        def __call__(self, q, k, v, causal):
            import torch.nn.functional as F
            return F.scaled_dot_product_attention(q, k, v.detach(), is_causal=causal) + (v - v.detach()) * 0.1

    row = _measure(K, WrongDv(), "fwdbwd")
    assert row["rel_err"] < 1e-2 and row["rel_err_dq"] < 2e-2 and row["rel_err_dk"] < 2e-2
    assert row["rel_err_dv"] > 0.5
    assert K.grad_err(row).endswith("(dv)")


def test_measure_naive_matches_reference(K):
    K_naive = K.Naive()
    K_naive.setup(K.Shape("bf16", 32, True, 64, 2, 2), "cpu")
    assert _measure(K, K_naive)["rel_err"] < 1e-2


def test_measure_records_errors_and_skips(K):
    class Broken(K.Backend):
        name = "broken"

        def __call__(self, q, k, v, causal):
            raise RuntimeError("out of resources")

    class Unsupported(K.Backend):
        name = "unsupported"

        def __call__(self, q, k, v, causal):
            raise NotImplementedError("head_dim 32")

    assert _measure(K, Broken())["error"] == "RuntimeError: out of resources"
    assert _measure(K, Unsupported())["skipped"] == "NotImplementedError: head_dim 32"
    fp8 = K.FaCk("fa_ck-fp8", FakeFaCk(raise_on_fp8=TypeError("unexpected keyword argument 'fp8'")), fp8=True)
    assert "fp8" in _measure(K, fp8)["skipped"]


def test_fa_ck_autotune_env_is_set_around_the_call(K, monkeypatch):
    monkeypatch.setenv("FA_CK_AUTOTUNE", "user-value")
    fake = FakeFaCk()
    for autotune in (False, True):
        row = _measure(K, K.FaCk("x", fake, backend="triton", autotune=autotune))
        assert "error" not in row
    assert {c for c in fake.calls} == {("triton", "0"), ("triton", "1")}
    assert os.environ["FA_CK_AUTOTUNE"] == "user-value"


def test_help_runs_without_gpu():
    res = subprocess.run([sys.executable, str(KERNELS_PY), "--help"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "--time-budget" in res.stdout


def test_cpu_smoke_run(K, cpu_run, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert K.main(["--out", str(tmp_path), "--backends", "sdpa-default", "naive", "--rep", "5"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["env"]["gpu"] == "cpu" and data["env"]["command"].endswith("--rep 5")
    assert {r["backend"] for r in data["points"]} == {"sdpa-default", "naive"}
    assert all(r.get("tflops") is not None for r in data["points"])
    assert all(r["rel_err_dv"] < 2e-2 for r in data["points"] if r["mode"] == "fwdbwd")
    assert (tmp_path / "results.md").exists() and (tmp_path / "tflops-bf16-fwdbwd.png").exists()
    assert "CPU smoke" in capsys.readouterr().out


def test_autograd_threads_off_is_recorded_and_restored(K, tmp_path, monkeypatch):
    import torch
    seen = []
    real = K._sweep
    monkeypatch.setattr(K, "_sweep", lambda args, argv: (seen.append(torch._C._is_multithreading_enabled()),
                                                         real(args, argv))[1])
    assert K.main(["--out", str(tmp_path), "--backends", "sdpa-default", "--time-budget", "0",
                   "--autograd-threads", "off"]) == 0
    assert seen == [False] and torch._C._is_multithreading_enabled()
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["env"]["autograd_threads"] == "off"
    assert "Autograd multithreading off" in (tmp_path / "results.md").read_text()


def test_time_budget_zero_still_writes(K, cpu_run, tmp_path):
    assert K.main(["--out", str(tmp_path), "--backends", "sdpa-default", "--time-budget", "0",
                   "--variant", 'v={"fwd": {}}']) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["points"] == [] and len(data["env"]["not_measured"]) == 4
    assert "GPU" in data["env"]["unavailable"]["fa_ck-triton-v"]   # the CPU smoke run leaves variants out


def _args_error(K, capsys, *argv):
    with pytest.raises(SystemExit):
        K.parse_args(list(argv))
    return capsys.readouterr().err


def test_variant_argument(K, capsys):
    args = K.parse_args(["--variant", 'dq3={"bwd_dq": {"num_stages": 3}}', "--variant", "one_pass-2={}"])
    assert args.variants == {"fa_ck-triton-dq3": '{"bwd_dq": {"num_stages": 3}}', "fa_ck-triton-one_pass-2": "{}"}
    assert K.parse_args([]).variants == {}
    assert "NAME of letters" in _args_error(K, capsys, "--variant", 'a b={"fwd": {}}')
    assert "NAME of letters" in _args_error(K, capsys, "--variant", "noequals")
    assert "does not parse" in _args_error(K, capsys, "--variant", 'x={"fwd": ')
    assert "must be an object" in _args_error(K, capsys, "--variant", "x=[1]")
    assert "must be an object" in _args_error(K, capsys, "--variant", 'x={"fwd": 3}')
    assert "shadow" in _args_error(K, capsys, "--variant", "det={}")
    assert "given twice" in _args_error(K, capsys, "--variant", "a={}", "--variant", "a={}")
    # a switch only fp8 calls take, under a name that would run bf16: refused, naming the fix
    assert "fp8early" in _args_error(K, capsys, "--variant", 'early={"fwd": {"Q_CONVERT": false}}')
    assert K.parse_args(["--variant", 'fp8early={"fwd": {"Q_CONVERT": false}}']).variants


def test_variant_and_det_backends(K, monkeypatch):
    fake = FakeFaCk()
    monkeypatch.setattr(K, "_import_fa_ck", lambda: (fake, None))
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"fwd": {"user": 1}}')
    cfg = '{"bwd_dq": {"num_stages": 3}}'
    backends, unavailable = K.make_backends(["fa_ck-triton", "fa_ck-triton-det"], variants={"fa_ck-triton-dq3": cfg})
    assert [b.name for b in backends] == ["fa_ck-triton", "fa_ck-triton-det", "fa_ck-triton-dq3"] and not unavailable
    for b in backends:
        assert "error" not in _measure(K, b, "fwdbwd")
    # a user's FA_CK_TRITON_CONFIG never reaches the plain backends; the variant's is set around its call
    assert list(dict.fromkeys(fake.seen)) == [("", False), ("", True), (cfg, False)]
    assert set(fake.calls) == {("triton", "0")}
    assert os.environ["FA_CK_TRITON_CONFIG"] == '{"fwd": {"user": 1}}'
    # deterministic changes only the backward: its forward is not measured again
    assert "backward only" in _measure(K, backends[1], "fwd")["skipped"]
    assert all(K.is_ours(b.name) for b in backends) and not K.is_ours("sdpa-cudnn")


def test_fp8_variants_run_fp8_and_stay_out_of_the_bf16_targets(K, monkeypatch):
    fake = FakeFaCk(raise_on_fp8=TypeError("fp8 refused here"))
    monkeypatch.setattr(K, "_import_fa_ck", lambda: (fake, None))
    backends, _ = K.make_backends(["fa_ck-triton"], variants={"fa_ck-triton-fp8nogl": '{"fwd": {"GLUON": false}}'})
    assert [(b.name, b.fp8) for b in backends] == [("fa_ck-triton", False), ("fa_ck-triton-fp8nogl", True)]
    assert "fp8 refused" in _measure(K, backends[1], "fwd")["skipped"]       # as fa_ck-fp8: skipped, not an error
    assert K.is_fp8("fa_ck-fp8") and K.is_fp8("fa_ck-triton-fp8nogl") and not K.is_fp8("fa_ck-triton-dq3")
    rows = [_row("bf16 d128 S4096 full B4xH16", "fwd", b, t)
            for b, t in (("sdpa-cudnn", 600.0), ("fa_ck-triton", 540.0), ("fa_ck-triton-fp8nogl", 900.0))]
    K.add_ratios(rows)
    text = "\n".join(K.target_lines(rows))
    assert "forward: min 0.900x" in text and "fp8nogl" not in text


def test_variants_in_tables_and_targets(K):
    rows = []
    for b, t in (("sdpa-cudnn", 600.0), ("fa_ck-triton", 570.0), ("fa_ck-triton-dq3", 690.0),
                 ("fa_ck-triton-det", 540.0), ("sdpa-flash", 500.0)):
        rows.append(_row("bf16 d128 S4096 full B4xH16", "fwdbwd", b, t))
    K.add_ratios(rows)
    header = K.markdown_table(rows, "fwdbwd").splitlines()[0]
    assert header == "| point | fa_ck-triton | fa_ck-triton-det | fa_ck-triton-dq3 | sdpa-cudnn | sdpa-flash |"
    text = "\n".join(K.target_lines(rows))
    assert "fwd+bwd: min 1.150x (goal 1.0x, met; worst: bf16 d128 S4096 full B4xH16 fwdbwd fa_ck-triton-dq3)" in text
    head = K.summary(rows).splitlines()[0].split()
    assert head == ["point", "mode", "cudnn", "triton", "tri-dt", "dq3", "flash"]


def test_more_rounds_interleave_backends_and_keep_the_median(K):
    shape = K.Shape("bf16", 32, True, 64, 2, 2)
    order, times = [], iter([9.0, 1.0, 5.0, 2.0, 3.0, 3.0, 7.0, 4.0])

    class Named(K.Backend):
        def __init__(self, name):
            self.name = name

    def timer(fn):
        order.append(fn())
        return next(times)
    a, b = Named("a"), Named("b")
    rows = [dict(mode="fwd", backend=n, ms_rounds=[t]) for n, t in (("a", 9.0), ("b", 1.0))]
    again = [(rows[0], a, lambda: "a"), (rows[1], b, lambda: "b")]
    K.more_rounds(again, shape, 3, timer, lambda: False)
    assert order == ["a", "b", "a", "b"]                      # every backend once per round
    assert rows[0]["ms_rounds"] == [9.0, 9.0, 5.0] and rows[0]["ms"] == 9.0
    assert rows[1]["ms_rounds"] == [1.0, 1.0, 2.0] and rows[1]["ms"] == 1.0
    rows[0]["ms_rounds"], rows[1]["ms_rounds"] = [9.0], [1.0]
    K.more_rounds(again, shape, 2, timer, lambda: False)      # 3.0, 3.0 left
    assert rows[0]["ms"] == 3.0 and rows[1]["ms"] == 1.0      # lower middle of two
    assert rows[0]["tflops"] == float(f"{K.tflops(K.flops(shape, 'fwd'), 3.0):.4g}")
    stopped = [dict(mode="fwd", backend="a", ms_rounds=[2.0])]
    K.more_rounds([(stopped[0], a, lambda: "a")], shape, 5, timer, lambda: True)
    assert stopped[0]["ms_rounds"] == [2.0]                   # out of time: nothing more


def test_rounds_in_a_cpu_run(K, tmp_path):
    assert K.main(["--out", str(tmp_path), "--backends", "sdpa-default", "--rep", "5", "--rounds", "2"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["points"] and all(len(r["ms_rounds"]) == 2 and r["ms"] == min(r["ms_rounds"])
                                  for r in data["points"])


def test_rounds_argument(K, capsys):
    assert "--rounds must be at least 1" in _args_error(K, capsys, "--rounds", "0")
    assert K.parse_args([]).rounds == 3


def test_gqa_sweep_shapes(K):
    """--group: every shape but nanoGPT's gets H / group kv heads, tagged gqa and named so."""
    shapes = K.sweep_shapes(["bf16"], [128, 64], [4096], [True], group=4)
    gqa = [s for s in shapes if s.tag == "gqa"]
    assert {(s.D, s.H, s.group) for s in gqa} == {(128, 16, 4), (64, 32, 4)}
    assert gqa[0].name == "gqa bf16 d128 S4096 causal B4xH16/4kv"
    nanogpt = [s for s in shapes if s.tag != "gqa"]
    assert [s.tag for s in nanogpt] == ["nanogpt"] and nanogpt[0].group == 1 and "kv" not in nanogpt[0].name
    with pytest.raises(ValueError, match="--group 3: 16 q heads at head dim 128"):
        K.sweep_shapes(["bf16"], [128], [4096], [True], group=3)
    assert K.ref_heads(gqa[0]) == (4, 1) and K.ref_heads(K.Shape("bf16", 128, True, 4096, 4, 16)) == (2, 2)


def _measure_gqa(K, backend, group=2, mode="fwdbwd"):
    import torch
    shape = K.Shape("bf16", 32, True, 64, 2, 4, tag="gqa", group=group)
    inputs = K.make_inputs(shape, torch.device("cpu"))
    assert inputs[1].shape[1] == 4 // group and inputs[0].shape[1] == 4
    hq, hkv = K.ref_heads(shape)
    sliced = [K._ref_slice(t, h) for t, h in zip(inputs, (hq, hkv, hkv, hq))]
    ref, ref_grads = K.reference_out(*sliced[:3], True), K.reference_grads(*sliced, True)
    return K.measure(backend, shape, mode, inputs, ref, K._timer(False, 1, 5), torch.device("cpu"), ref_grads)


@pytest.mark.parametrize("group", [2, 4])
def test_measure_gqa_expands_kv_for_other_backends(K, group):
    """SDPA and naive get k, v expanded to every q head (their dk, dv summed back per kv head);
    fa_ck takes the kv heads as they are; all against the GQA reference."""
    class KvHeads(K.FaCk):
        """fa_ck's stand-in: GQA by hand, recording the kv heads it was given."""
        def __init__(self):
            super().__init__("fa_ck-gqa", None)
            self.kv_heads = []

        def __call__(self, q, k, v, causal):
            import torch.nn.functional as F
            self.kv_heads.append(k.shape[1])
            g = q.shape[1] // k.shape[1]
            return F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                                  is_causal=causal)
    naive = K.Naive()
    naive.setup(K.Shape("bf16", 32, True, 64, 2, 4), "cpu")
    ours = KvHeads()
    for backend in (K.Sdpa("sdpa-default"), naive, ours):
        row = _measure_gqa(K, backend, group)
        assert "error" not in row and row["rel_err"] < 1e-2, row
        assert all(0 < row[f"rel_err_{n}"] < 2e-2 for n in ("dq", "dk", "dv")), row
    assert set(ours.kv_heads) == {4 // group}


def test_measure_gqa_catches_a_wrong_kv_gradient(K):
    """A dk that misses one q head's share (under GQA each kv head sums over its group) fails."""
    class OneHeadDk(K.FaCk):
        def __init__(self):
            super().__init__("fa_ck-wrong", None)

        def __call__(self, q, k, v, causal):
            import torch
            import torch.nn.functional as F
            g = q.shape[1] // k.shape[1]
            kk = k.repeat_interleave(g, 1)
            keep = torch.zeros(q.shape[1], dtype=torch.bool)
            keep[::g] = True                  # the gradient reaches k through one q head per group only
            kk = torch.where(keep[None, :, None, None], kk, kk.detach())
            return F.scaled_dot_product_attention(q, kk, v.repeat_interleave(g, 1), is_causal=causal)
    row = _measure_gqa(K, OneHeadDk(), 2)
    assert row["rel_err"] < 1e-2 and row["rel_err_dv"] < 2e-2 and row["rel_err_dk"] > 0.2


def test_gqa_points_stay_out_of_the_targets(K):
    rows = [dict(point="gqa bf16 d128 S4096 causal B4xH16/4kv", tag="gqa", dtype="bf16", D=128, S=4096, mode="fwd",
                 backend="fa_ck-triton", ratio_cudnn=0.5)]
    assert all("not measured" in line for line in K.target_lines(rows))


def test_group_argument_in_a_cpu_run(K, cpu_run, tmp_path):
    assert K.main(["--out", str(tmp_path), "--backends", "sdpa-default", "--rep", "5", "--group", "2",
                   "--causal", "on"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["points"] and all(r["point"].startswith("gqa ") and r["point"].endswith("/2kv") for r in data["points"])
    assert all(r["rel_err_dk"] < 2e-2 for r in data["points"] if r["mode"] == "fwdbwd")
    with pytest.raises(SystemExit):
        K.parse_args(["--group", "0"])
