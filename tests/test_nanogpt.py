"""Tests for bench/nanogpt.py, bench/model.py and bench/data.py. CPU only, a few seconds each.

The data-parallel (torchrun, gloo) check is .ci/nanogpt_ddp.sh; test_ddp_two_processes runs
it when RUN_NANOGPT_DDP=1 (it takes ~10 s of two processes).
"""

import json
import math
import os
import subprocess
import sys
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from bench import nanogpt, nanogpt_cpu, nanogpt_report, sample  # noqa: E402
from bench.data import BatchSampler, load_tokens, stdlib_corpus  # noqa: E402
from bench.model import GPT, GPTConfig, config_from_preset, naive_causal_attention  # noqa: E402

TINY = GPTConfig(block_size=32, vocab_size=64, n_layer=2, n_head=2, n_embd=32)
# the smallest useful training run through main(): a few seconds
FAST = ["--preset", "tiny", "--steps", "4", "--batch", "4", "--block", "32", "--eval-every", "2",
        "--eval-iters", "1", "--no-plots"]


def run_main(tmp_path, *extra):
    return nanogpt.main(FAST + ["--out", str(tmp_path / "out")] + list(extra))


@pytest.fixture(autouse=True)
def harness_on_the_cpu(monkeypatch):
    """main() in this process trains on the CPU, GPU or not: these tests check the harness (the same
    data, losses, reports, skips) with fp32's exact sums; on a GPU main() would take bf16 and TF32,
    whose losses differ between attention kernels by ~2e-4 (the GPU runs: docs/performance.md)."""
    monkeypatch.setattr(nanogpt, "setup_distributed", lambda: (0, 0, 1, torch.device("cpu")))


# ---------------------------------------------------------------------------- model

def test_model_forward_backward_shapes_and_initial_loss():
    torch.manual_seed(0)
    model = GPT(TINY)
    idx = torch.randint(0, TINY.vocab_size, (3, 20))
    targets = torch.randint(0, TINY.vocab_size, (3, 20))
    logits, loss = model(idx, targets)
    assert logits.shape == (3, 20, TINY.vocab_size)
    # at init the predictions are near uniform: cross-entropy near ln(vocab) for random targets
    assert abs(loss.item() - math.log(TINY.vocab_size)) < 0.2
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    # without targets only the last position is returned (generation)
    logits, loss = model(idx)
    assert logits.shape == (3, 1, TINY.vocab_size) and loss is None
    assert model.generate(idx[:, :5], 4).shape == (3, 9)


def test_presets_have_the_study_shapes():
    gpt2 = config_from_preset("gpt2", vocab_size=256)
    assert (gpt2.n_layer, gpt2.n_head, gpt2.n_embd, gpt2.vocab_size, gpt2.block_size) == (12, 12, 768, 50304, 1024)
    with torch.device("meta"):
        assert round(GPT(gpt2).num_params() / 1e6) == 124
    medium = config_from_preset("gpt2-medium")
    assert (medium.n_layer, medium.n_head, medium.n_embd) == (24, 16, 1024)
    assert config_from_preset("tiny", vocab_size=256).vocab_size == 256
    assert config_from_preset("tiny", vocab_size=65).vocab_size == 128  # padded to a multiple of 64


@pytest.mark.parametrize("seq_len", [1, 7, 32])
def test_naive_attention_matches_sdpa(seq_len):
    q, k, v = torch.randn(3, 2, 3, seq_len, 16, dtype=torch.float64)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(naive_causal_attention(q, k, v), expected)


def test_same_initial_weights_whatever_the_attention():
    torch.manual_seed(1)
    naive_model = GPT(TINY, naive_causal_attention)
    torch.manual_seed(1)
    sdpa_model = GPT(TINY, nanogpt.sdpa_attention)
    a, b = naive_model.state_dict(), sdpa_model.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[key], b[key]) for key in a)
    # swapping the kernel leaves the weights (and the state_dict's keys) alone
    naive_model.set_attention(nanogpt.sdpa_attention)
    assert naive_model.state_dict().keys() == a.keys()
    idx = torch.randint(0, TINY.vocab_size, (2, 16))
    torch.testing.assert_close(naive_model(idx, idx)[1], sdpa_model(idx, idx)[1])


# ---------------------------------------------------------------------------- data

def write_bins(directory, n_train=5000, n_val=800, vocab=50257):
    rng = np.random.default_rng(0)
    rng.integers(0, vocab, n_train, dtype=np.uint16).tofile(directory / "train.bin")
    rng.integers(0, vocab, n_val, dtype=np.uint16).tofile(directory / "val.bin")


def test_data_from_nanogpt_bin_dir(tmp_path):
    write_bins(tmp_path)
    data = load_tokens(str(tmp_path))
    assert data.vocab_size == 50257 and len(data.train) == 5000 and len(data.val) == 800
    assert data.train.dtype == np.uint16
    sampler = BatchSampler(data, batch_size=4, block_size=16, device="cpu", seed=3)
    x, y = sampler.train_batch(0)
    assert x.shape == y.shape == (4, 16) and x.dtype == torch.int64
    assert torch.equal(x[:, 1:], y[:, :-1])  # y is x shifted by one token
    assert int(x.max()) < 50257
    # a batch is a function of (seed, rank, step) only
    assert torch.equal(sampler.train_batch(0)[0], x)
    assert not torch.equal(sampler.train_batch(1)[0], x)
    assert not torch.equal(sampler.val_batch(0)[0], x)


def test_data_parallel_ranks_draw_from_their_own_shards(tmp_path):
    # token i is i: a window's first token says where it starts
    np.arange(5000, dtype=np.uint16).tofile(tmp_path / "train.bin")
    np.arange(800, dtype=np.uint16).tofile(tmp_path / "val.bin")
    data = load_tokens(str(tmp_path))
    first_batches = []
    for rank in range(2):
        sampler = BatchSampler(data, batch_size=8, block_size=16, device="cpu", seed=3, rank=rank, world_size=2)
        for step in range(20):
            x, _ = sampler.train_batch(step)
            starts = x[:, 0]
            assert bool(((rank * 2500 <= starts) & (starts + 16 < (rank + 1) * 2500)).all())
            val_starts = sampler.val_batch(step)[0][:, 0]
            assert bool(((rank * 400 <= val_starts) & (val_starts + 16 < (rank + 1) * 400)).all())
        first_batches.append(sampler.train_batch(0)[0])
    assert not torch.equal(first_batches[0], first_batches[1])


def test_data_from_text_file_is_byte_level(tmp_path):
    text = ("the quick brown fox jumps over the lazy dog. " * 200).encode()
    path = tmp_path / "corpus.txt"
    path.write_bytes(text)
    data = load_tokens(str(path))
    assert data.vocab_size == 256
    assert len(data.train) + len(data.val) == len(text)
    assert bytes(data.train[:9]) == b"the quick"
    x, y = BatchSampler(data, 2, 32, "cpu").train_batch(0)
    assert x.shape == (2, 32)


def test_stdlib_corpus_needs_no_download():
    data = stdlib_corpus(max_bytes=200_000)
    assert data.vocab_size == 256 and len(data.train) + len(data.val) == 200_000
    assert b"def " in bytes(data.train[:50_000])
    assert "standard library" in data.description


# ---------------------------------------------------------------------------- training

def test_naive_and_sdpa_train_to_the_same_loss(tmp_path):
    report = run_main(tmp_path, "--attn", "naive,sdpa")
    naive, sdpa = report["variants"]["naive"], report["variants"]["sdpa"]
    assert naive["status"] == sdpa["status"] == "ok"
    for (_, a), (_, b) in zip(naive["train_loss"], sdpa["train_loss"]):
        assert abs(a - b) < 1e-4
    assert abs(naive["final_val_loss"] - sdpa["final_val_loss"]) < 1e-4
    assert naive["within_tolerance_of_sdpa"]
    assert sdpa["train_loss"][-1][1] < sdpa["train_loss"][0][1]  # it learns


def test_each_variant_is_held_to_its_own_bar_against_sdpa():
    # exact attention within 0.02 of sdpa's val loss, fp8 within 0.05, in the result and in the
    # report's table
    def run(loss):
        return {"status": "ok", "steps_done": 4, "val_loss": [(2, loss + 0.5), (4, loss)], "train_loss": [(4, loss)]}
    results = {"sdpa": run(2.0), "triton": run(2.03), "triton-fp8": run(2.03), "flex": run(1.99)}
    nanogpt_report.relative_to_reference(results)
    assert not results["triton"]["within_tolerance_of_sdpa"] and results["triton"]["tolerance_vs_sdpa"] == 0.02
    assert results["triton-fp8"]["within_tolerance_of_sdpa"] and results["triton-fp8"]["tolerance_vs_sdpa"] == 0.05
    assert results["flex"]["within_tolerance_of_sdpa"]
    results["triton-fp8"]["val_loss"][-1] = (4, 2.06)
    nanogpt_report.relative_to_reference(results)
    assert not results["triton-fp8"]["within_tolerance_of_sdpa"]
    checks = {row[0]: " ".join(row) for row in nanogpt_report.table_rows(results)}
    assert "OUTSIDE ±0.02" in checks["triton"] and "OUTSIDE ±0.05" in checks["triton-fp8"]
    assert "ok" in checks["flex"]


def test_grad_accumulation_sees_the_same_data(tmp_path):
    one = run_main(tmp_path, "--attn", "sdpa")["variants"]["sdpa"]
    two = run_main(tmp_path, "--attn", "sdpa", "--grad-accum", "2")["variants"]["sdpa"]
    assert two["grad_accum"] == 2
    for (_, a), (_, b) in zip(one["train_loss"], two["train_loss"]):
        assert abs(a - b) < 1e-4


def test_time_budget_stops_a_variant_early(tmp_path):
    report = run_main(tmp_path, "--attn", "sdpa", "--time-budget", "0")
    sdpa = report["variants"]["sdpa"]
    assert sdpa["status"] == "ok" and sdpa["steps_done"] == 1
    assert "time budget" in sdpa["stopped_early"]
    assert len(sdpa["val_loss"]) == 2  # the start and where it stopped


def test_a_failing_variant_is_recorded_and_the_others_go_on(tmp_path, monkeypatch):
    def broken(q, k, v):
        raise RuntimeError("kernel exploded")
    real_make_variant = nanogpt.make_variant

    def make_variant(name, *args):
        if name == "naive":  # passes the probe, breaks in training
            return broken, nanogpt.sdpa_attention, {}
        return real_make_variant(name, *args)
    monkeypatch.setattr(nanogpt, "make_variant", make_variant)
    report = run_main(tmp_path, "--attn", "naive,sdpa")
    assert report["variants"]["naive"]["status"] == "failed"
    assert "kernel exploded" in report["variants"]["naive"]["reason"]
    assert report["variants"]["sdpa"]["status"] == "ok"
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["variants"]["naive"]["status"] == "failed"
    assert "kernel exploded" in (tmp_path / "out" / "results.md").read_text()


def fake_fa_ck(seen_autotune):
    """Stands in for fa_ck: triton 'works' (through SDPA), fp8 is not written yet, ck is absent."""
    def attention(q, k, v, causal=True, backend="auto", **kwargs):
        if kwargs:
            raise TypeError(f"attention() got an unexpected keyword argument {next(iter(kwargs))!r}")
        seen_autotune.add(os.environ.get("FA_CK_AUTOTUNE"))
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return types.SimpleNamespace(
        attention=attention, __version__="0.0-test",
        explain=lambda q, k, v, **kwargs: "q ...\n  triton: skipped, test\n  reference: chosen\n-> reference",
        backends=lambda: {"triton": (True, ""), "ck": (False, "not a ROCm build of torch")})


def test_fa_ck_variants_run_or_say_why_not(tmp_path, monkeypatch):
    seen_autotune = set()
    monkeypatch.setattr(nanogpt, "import_fa_ck", lambda: fake_fa_ck(seen_autotune))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    report = run_main(tmp_path, "--attn", "sdpa,triton,triton-autotune,triton-fp8,ck")
    variants = report["variants"]
    assert variants["triton"]["status"] == variants["triton-autotune"]["status"] == "ok"
    assert seen_autotune == {"0", "1"}
    assert variants["triton-fp8"]["status"] == "skipped" and "TypeError" in variants["triton-fp8"]["reason"]
    assert variants["ck"]["status"] == "skipped" and "not a ROCm build" in variants["ck"]["reason"]
    assert abs(variants["triton"]["val_loss_delta_vs_sdpa"]) < 1e-4


def fake_short_run(calls):
    """Stands in for nanogpt_cpu.short_interpreted_run: a finished short run, without the child process."""
    def short_interpreted_run(args, out_dir, threads, time_budget=None):
        calls.append(threads)
        run = {"status": "ok", "steps_done": 2, "train_loss": [[1, 5.1], [2, 5.0]], "val_loss": [[0, 5.3], [2, 4.9]],
               "final_train_loss": 5.05, "final_val_loss": 4.9, "median_ms_per_step": 4000.0, "tokens_per_s": 16.0}
        return dict(run, interpreted=True, val_loss_delta_vs_sdpa=1e-7, tolerance_vs_sdpa=0.02,
                    within_tolerance_of_sdpa=True,
                    separate_run=dict(nanogpt_cpu.SHORT_RUN, interpreted=True, sdpa=dict(run, median_ms_per_step=15.0)))
    return short_interpreted_run


def test_on_cpu_triton_trains_a_short_interpreted_run_of_its_own(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(nanogpt, "import_fa_ck", lambda: fake_fa_ck(set()))
    monkeypatch.setattr(nanogpt, "short_interpreted_run", fake_short_run(calls))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    report = run_main(tmp_path, "--attn", "all")
    variants = report["variants"]
    assert len(calls) == 1 and variants["triton"]["status"] == "ok"
    assert "val_loss_delta_vs_sdpa" in variants["triton"]  # its own run's, not the main sdpa's
    assert variants["triton"]["val_loss_delta_vs_sdpa"] == 1e-7
    assert variants["auto"]["status"] == "ok" and variants["auto"]["served_by"] == "reference"
    for name in ("triton-autotune", "triton-fp8"):
        assert variants[name]["status"] == "skipped" and "only the triton variant" in variants[name]["reason"]
    assert variants["te"]["status"] == "skipped"
    assert all(r.get("reason") for r in variants.values() if r["status"] != "ok")
    rows = {row[0]: row for row in nanogpt_report.table_rows(variants)}
    assert "auto (reference)" in rows and "triton" not in rows  # the short run has a table of its own
    short_rows = {row[0]: row for row in nanogpt_report.table_rows(nanogpt_report.short_run_results(variants), separate=True)}
    assert set(short_rows) == {"sdpa", "triton"}
    out = capsys.readouterr().out
    # every skip reason once: before training, and only the names under the table
    assert out.count(variants["te"]["reason"]) == 1 and out.count(variants["ck"]["reason"]) == 1


def test_auto_served_by_the_interpreter_trains_only_when_named(tmp_path, monkeypatch):
    """In this process TRITON_INTERPRET=1 (conftest): fa_ck's dispatch sends auto to the interpreted
    triton backend, a minute a step, so `all` skips it and says why."""
    import fa_ck
    if fa_ck.backends()["triton"][0] is False:
        pytest.skip("the triton backend is not available here")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(nanogpt, "short_interpreted_run", fake_short_run([]))
    report = run_main(tmp_path, "--attn", "all")
    auto = report["variants"]["auto"]
    assert auto["status"] == "skipped" and auto["served_by"] == "triton" and auto["interpreted"]
    assert "name auto in --attn" in auto["reason"]


def test_fa_ck_import_error_skips_its_variants(tmp_path, monkeypatch):
    def broken_import():
        raise ImportError("fa_ck is half written")
    monkeypatch.setattr(nanogpt, "import_fa_ck", broken_import)
    report = run_main(tmp_path, "--attn", "sdpa,triton,ck")
    for name in ("triton", "ck"):
        assert report["variants"][name]["status"] == "skipped"
        assert "fa_ck is half written" in report["variants"][name]["reason"]
    assert report["variants"]["sdpa"]["status"] == "ok"


def test_default_output_is_under_the_working_directory(tmp_path, monkeypatch):
    """Without --out the report goes to ./fa_ck-results/nanogpt-<device>-<date>/, never into the checkout."""
    monkeypatch.chdir(tmp_path)
    nanogpt.main(FAST + ["--attn", "sdpa"])
    (out,) = (tmp_path / "fa_ck-results").iterdir()
    assert out.name.startswith("nanogpt-cpu-") and (out / "results.json").exists() and (out / "results.md").exists()


def test_unknown_variant_is_an_error():
    with pytest.raises(SystemExit):
        nanogpt.parse_args(["--attn", "sdpa,warp-drive"], on_gpu=False)


def test_auto_is_in_all_only_on_the_cpu():
    assert "auto" in nanogpt.parse_args([], on_gpu=False).variants
    assert "auto" not in nanogpt.parse_args([], on_gpu=True).variants
    assert "auto" in nanogpt.parse_args(["--attn", "auto"], on_gpu=True).variants


def test_help_gives_each_option_one_default(capsys):
    with pytest.raises(SystemExit):
        nanogpt.parse_args(["--help"], on_gpu=False)
    text = capsys.readouterr().out.split("options:", 1)[1]
    entries = [" ".join(entry.split()) for entry in text.split("\n  -")]
    assert len(entries) > 20
    for entry in entries:
        assert entry.count("default") <= 1, entry
    assert any("(default: 0.1)" in entry for entry in entries)  # the plain ones still say theirs


def test_default_threads_uses_every_core_it_may(monkeypatch):
    monkeypatch.setattr(nanogpt_cpu.os, "sched_getaffinity", lambda pid: {0, 1, 5}, raising=False)
    assert nanogpt_cpu.default_threads() == 3


def test_attention_share_times_the_calls_the_model_makes():
    """The share times attention on q, k, v shaped and strided as the model hands them over, forward
    and backward, and counts one call per layer and micro-batch."""
    from bench import attention_share
    seen = []

    def recording(q, k, v):
        seen.append([(tuple(t.shape), t.stride(), t.dtype, t.requires_grad) for t in (q, k, v)])
        return naive_causal_attention(q, k, v)

    model = GPT(TINY, recording)
    model(torch.zeros((3, 16), dtype=torch.long))
    in_the_model = seen[0]
    seen.clear()
    ms = attention_share.attention_ms_per_step(recording, micro_batch=3, n_head=TINY.n_head, seq_len=16,
                                               head_dim=TINY.n_embd // TINY.n_head, n_layer=TINY.n_layer,
                                               grad_accum=2, device=torch.device("cpu"), dtype=torch.float32,
                                               warmup=1, iters=3)
    assert ms > 0 and len(seen) == 4
    assert all(call == in_the_model for call in seen)


def test_report_gives_attention_share_per_variant(tmp_path):
    report = run_main(tmp_path, "--attn", "naive,sdpa")
    for name in ("naive", "sdpa"):
        result = report["variants"][name]
        assert 0 < result["attention_share"] == result["attention_ms_per_step"] / result["median_ms_per_step"]
    row = next(line for line in (tmp_path / "out" / "results.md").read_text().splitlines()
               if line.startswith("| sdpa |"))
    header = next(line for line in (tmp_path / "out" / "results.md").read_text().splitlines()
                  if line.startswith("| variant |"))
    column = header.split(" | ").index("attn %")
    assert row.split(" | ")[column] == f"{100 * report['variants']['sdpa']['attention_share']:.0f}"


def test_compiled_runs_keep_naive_eager_and_say_so(tmp_path, monkeypatch):
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda model, **kw: compiled.append(model) or model)
    report = run_main(tmp_path, "--attn", "naive,sdpa", "--compile")
    assert [r["compiled"] for r in (report["variants"]["naive"], report["variants"]["sdpa"])] == [False, True]
    assert len(compiled) == 1 and compiled[0].transformer.h[0].attn.attention is nanogpt.sdpa_attention
    markdown = (tmp_path / "out" / "results.md").read_text()
    assert "| naive (eager) |" in markdown and "| sdpa |" in markdown


def test_cpu_default_run_writes_the_report(tmp_path):
    """The command line as a user runs it, with few steps: JSON, markdown and PNGs appear; fa_ck's
    auto dispatch trains beside sdpa, naming its backend, and the Triton kernels' short run in the
    interpreter matches its sdpa's loss."""
    out = tmp_path / "report"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", HIP_VISIBLE_DEVICES="")
    env.pop("TRITON_INTERPRET", None)
    done = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "bench", "nanogpt.py"),
                           "--steps", "4", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "No GPU found: running the tiny preset" in done.stdout
    for name in ("results.json", "results.md", "loss_curves.png", "tokens_per_s.png"):
        assert (out / name).stat().st_size > 0, name
    assert not (out / "peak_memory.png").exists()  # nothing measured, nothing drawn
    report = json.loads((out / "results.json").read_text())
    assert report["preset"] == "tiny" and report["device"]["type"] == "cpu"
    assert "nanogpt.py --steps 4" in report["command"]
    assert report["versions"]["torch"] == torch.__version__ and report["date"]
    assert set(report["variants"]) == set(nanogpt.VARIANTS)
    for name in ("sdpa", "naive", "auto"):
        result = report["variants"][name]
        assert result["status"] == "ok", result
        assert result["steps_done"] == 4 and math.isfinite(result["final_val_loss"])
        assert result["median_ms_per_step"] > 0 and result["tokens_per_s"] > 0
    auto = report["variants"]["auto"]
    assert auto["served_by"] == "reference" and abs(auto["val_loss_delta_vs_sdpa"]) < 1e-4
    triton = report["variants"]["triton"]
    assert triton["status"] == "ok" and triton["interpreted"], triton.get("reason")
    run = triton["separate_run"]
    assert triton["steps_done"] == run["steps"] and run["sdpa"]["steps_done"] == run["steps"]
    # fp32 on both sides: the kernels' loss sits within float rounding of sdpa's on the same run
    assert abs(triton["final_val_loss"] - run["sdpa"]["final_val_loss"]) < 1e-4
    assert abs(triton["val_loss_delta_vs_sdpa"]) < 1e-4
    for name, result in report["variants"].items():
        assert result["status"] in ("ok", "skipped", "failed")
        if result["status"] != "ok":
            assert result["reason"], name
    markdown = (out / "results.md").read_text()
    assert "| sdpa |" in markdown and "| naive |" in markdown and "## Not run" in markdown
    assert "| auto (reference) |" in markdown and "| triton |" in markdown
    # the summary tables close stdout: the main run's, then the short interpreted run's
    main_table, short_table = done.stdout.split("Δ val vs sdpa")[-2:]
    assert "sdpa" in main_table and "naive" in main_table and "auto (reference)" in main_table
    assert "triton" in short_table and "report:" in short_table
    for name, result in report["variants"].items():
        if result["status"] == "skipped":
            assert done.stdout.count(f"{name}: {result['reason']}") == 1, name


@pytest.mark.skipif(os.environ.get("RUN_NANOGPT_DDP") != "1", reason="set RUN_NANOGPT_DDP=1 (CI runs .ci/nanogpt_ddp.sh)")
def test_ddp_two_processes():
    done = subprocess.run(["bash", os.path.join(REPO_ROOT, ".ci", "nanogpt_ddp.sh")],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHON=sys.executable))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "nanogpt DDP check passed" in done.stdout


def test_gpu_runs_compile_and_keep_the_tokens_per_step():
    gpu = nanogpt.parse_args([], on_gpu=True)
    assert gpu.compile and (gpu.preset, gpu.block, gpu.batch) == ("gpt2", 1024, 64)
    long = nanogpt.parse_args(["--preset", "gpt2-long"], on_gpu=True)
    assert (long.block, long.batch) == (8192, 8)
    assert nanogpt.parse_args(["--preset", "gpt2-long", "--block", "16384"], on_gpu=True).batch == 4
    assert not nanogpt.parse_args(["--no-compile"], on_gpu=True).compile
    assert not nanogpt.parse_args([], on_gpu=False).compile
    assert nanogpt.parse_args(["--compile"], on_gpu=False).compile
    assert nanogpt.parse_args(["--batch", "3"], on_gpu=True).batch == 3


def test_long_context_preset_is_gpt2_at_8k():
    long = config_from_preset("gpt2-long")
    gpt2 = config_from_preset("gpt2")
    assert (long.n_layer, long.n_head, long.n_embd, long.vocab_size) == (gpt2.n_layer, gpt2.n_head, gpt2.n_embd,
                                                                         gpt2.vocab_size)
    assert long.block_size == 8192 and "gpt2-long" in nanogpt.PRESET_LR


def test_compiled_model_takes_fa_ck_without_a_graph_break_and_trains_as_eager():
    """fullgraph=True fails on any graph break, fa_ck's ops included; aot_eager traces forward and
    backward as the GPU's inductor does, without compiling C++ here."""
    import fa_ck

    def attention(q, k, v):
        return fa_ck.attention(q, k, v, causal=True)
    torch.manual_seed(0)
    init = GPT(TINY, attention).state_dict()
    idx = torch.randint(0, TINY.vocab_size, (3, 24))     # one batch, so that the loss must fall
    losses = {}
    for compiled in (False, True):
        model = GPT(TINY, attention)
        model.load_state_dict(init)
        run = torch.compile(model, fullgraph=True, backend="aot_eager") if compiled else model
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        losses[compiled] = []
        for step in range(4):
            _, loss = run(idx[:, :-1].contiguous(), idx[:, 1:].contiguous())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses[compiled].append(loss.item())
    assert losses[True][-1] < losses[True][0]
    assert max(abs(a - b) for a, b in zip(losses[True], losses[False])) < 1e-5


# ---------------------------------------------------------------------------- sampling (bench/sample.py)

def test_sampling_with_the_kv_cache_gives_the_no_cache_tokens():
    """Greedy decoding in fp32 on the CPU: fa_ck.flash_attn_with_kvcache, appending in place, picks the
    tokens that the whole prefix through SDPA picks, the prompt's causal prefill included."""
    import fa_ck
    torch.manual_seed(0)
    model = GPT(TINY, sample.sdpa_causal).eval()
    prompt = torch.randint(0, TINY.vocab_size, (3, 7))
    cached = sample.generate_cached(model, fa_ck, prompt, 20, torch.float32)
    plain = sample.generate_uncached(model, prompt, 20)
    assert cached.shape == plain.shape == (3, 20)
    assert torch.equal(cached, plain)
    assert sample.first_divergence(cached, plain) is None
    moved = plain.clone()
    moved[1, 12:] = (moved[1, 12:] + 1) % TINY.vocab_size
    assert sample.first_divergence(plain, moved) == 12


def test_report_holds_the_sampling_section_and_no_sample_drops_it(tmp_path):
    report = run_main(tmp_path, "--attn", "sdpa")
    section = report["sampling"]
    assert section["status"] == "ok" and section["weights"] == "sdpa", section
    assert section["same_tokens"] and section["first_divergence"] is None
    assert section["cached_tokens_per_s"] > 0 and section["uncached_tokens_per_s"] > 0
    assert section["prompt"] + section["new_tokens"] <= 32 and section["served_by"] == "reference"
    markdown = (tmp_path / "out" / "results.md").read_text()
    assert "## Sampling: KV cache against no cache" in markdown and "| KV cache |" in markdown
    assert "sampling" not in run_main(tmp_path, "--attn", "sdpa", "--no-sample")
    assert sample.sample_trained(None, None, None, None, None, None)["status"] == "skipped"
