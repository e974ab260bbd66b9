"""Randomised correctness sweep on a GPU: thousands of random calls (shapes, GQA, masks, windows,
ALiBi, softcap, dropout, varlen, dtypes, deterministic backward or not) against the float64
reference, forward and gradients.

    python bench/random_sweep.py --workers 8 --time-budget 300 [--out DIR]
    python bench/random_sweep.py --replay DIR/results.json [--case 1-9 12-58] [--repeat 3]

With several GPUs, worker w runs on GPU w % count (--workers 24 on two GPUs: 12 each).

Writes results.json (every case with its relative errors) and summary.md (counts, worst cases) to
--out (default ./fa_ck-results/random_sweep-<gpu>-<date>/).
Exit status 1 when any case fails its bound. Needs a GPU (on the CPU use the pytest suite).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("FA_CK_POISON", "1")   # NaN-filled outputs and canaries, as in the unit tests
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # run as a script: `bench` importable
import fa_ck  # noqa: E402
from bench.out_dir import default_out_dir  # noqa: E402
from attn_check import check, check_varlen  # noqa: E402  (the same comparison the unit tests use)


def draw(rng: random.Random) -> dict:
    group = rng.choice([1, 1, 2, 4, 8])
    hkv = rng.choice([1, 2, 4])
    b = rng.choice([1, 2, 3])
    sq = rng.choice([1, 2, 17, 64, 127, 128, 129, 500, 1000, 2048, rng.randint(1, 3000)])
    sk = sq if rng.random() < 0.5 else rng.choice([1, 33, 256, 1023, rng.randint(1, 3000)])
    feat = dict(causal=rng.random() < 0.5, softmax_scale=rng.choice([None, None, 0.02, 0.5]))
    if rng.random() < 0.3:
        feat["window_size"] = (rng.choice([-1, 0, 16, 255]), rng.choice([-1, 0, 7]))
    if rng.random() < 0.2:
        feat["softcap"] = rng.choice([5.0, 30.0])
    if rng.random() < 0.25:
        feat["alibi"] = rng.random() < 0.5
    if rng.random() < 0.15:
        feat["dropout_p"] = rng.choice([0.1, 0.5])
    feat["deterministic"] = rng.random() < 0.5   # both backward paths, through flash_attn_*'s argument
    lens = None
    if rng.random() < 0.3:                   # varlen: b sequences of random lengths (some empty)
        b = rng.randint(1, 12)
        lens_q = [rng.choice([0, 1, rng.randint(1, 300), rng.randint(1, 1500)]) for _ in range(b)]
        lens_k = lens_q if rng.random() < 0.5 else [rng.choice([0, 1, rng.randint(1, 1500)]) for _ in range(b)]
        lens = [lens_q, lens_k]
    return dict(b=b, sq=sq, sk=sk, lens=lens, hq=hkv * group, hkv=hkv,
                d=rng.choice([16, 32, 40, 64, 80, 96, 111, 128, 160, 192, 256]),
                dtype=rng.choice(["float16", "bfloat16"]), feat=feat)


def check_case(case: dict, device: str = "cuda") -> dict:
    """attn_check on one drawn case (as draw() makes it, or read back from results.json): its
    errors, or AssertionError. Gradients past their bound pass when within 2x the reference run
    in the input dtype, or within it of the reference with FA2's delta (attn_check._compare);
    the summary counts those apart."""
    feat = dict(case["feat"])
    if "alibi" in feat:
        batch = len(case["lens"][0]) if case["lens"] else case["b"]
        feat["alibi_slopes"] = torch.rand((batch, case["hq"]) if feat.pop("alibi") else (case["hq"],),
                                          device=device) * 0.3
    if "window_size" in feat:
        feat["window_size"] = tuple(feat["window_size"])      # a list once read back from JSON
    kw = dict(dtype=getattr(torch, case["dtype"]), device=device, same_precision=True, **feat)
    if case["lens"]:
        return check_varlen(*case["lens"], case["hq"], case["hkv"], case["d"], **kw)
    return check(case["b"], case["sq"], case["sk"], case["hq"], case["hkv"], case["d"], **kw)


def run_cases(seed: int, cases: int, budget: float, device: str = "cuda") -> list[dict]:
    """Draw and check cases until `cases` are done or `budget` seconds have passed."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    rows, t0 = [], time.time()
    for i in range(cases):
        if time.time() - t0 > budget:
            break
        case = draw(rng)
        row = {"case": f"{seed}-{i}", **case, "feat": dict(case["feat"])}
        if device == "cuda":
            row["gpu"] = torch.cuda.current_device()   # a fault may belong to one GPU
        for _ in range(2):
            try:
                row["errors"] = check_case(case, device)
                row["ok"] = True
            except torch.cuda.OutOfMemoryError:
                if device == "cuda":         # several workers share the GPU: free the cache, try again
                    torch.cuda.empty_cache()
                continue
            except AssertionError as e:
                row["ok"], row["failure"] = False, str(e)
            except Exception as e:  # a crash is a failure too, with its type
                row["ok"], row["failure"] = False, f"{type(e).__name__}: {e}"
            break
        else:  # out of memory twice (the float64 reference): not run, which is no pass and no failure
            row["ok"], row["not_run"] = None, "out of memory"
        rows.append(row)
        if not row["ok"] and "CUDA" in row.get("failure", ""):
            break                            # the context is gone: later cases would all fail
    return rows


def replay(rows: list[dict], ids: list[str] | None, repeat: int, device: str = "cuda") -> tuple[list[str], int]:
    """Check cases of a results.json again (those named in ids, else the failed ones), `repeat`
    times each on fresh inputs (seeds 0..repeat-1): (one line per try, failed tries)."""
    lines, failed = [], 0
    for r in [r for r in rows if (r["case"] in ids if ids else r["ok"] is False)]:
        for rep in range(repeat):
            torch.manual_seed(rep)
            head = f"case {r['case']} try {rep}:"
            try:
                errs = check_case(r, device)
                lines.append(f"{head} ok " + " ".join(f"{k} {v:.3g}" for k, v in errs.items() if not isinstance(v, dict))
                             + "".join(f" ({k}: {v})" for k, v in errs.items() if isinstance(v, dict)))
            except Exception as e:   # noqa: BLE001  (a wrong value or a crash: both are failures)
                failed += 1
                lines.append(f"{head} FAIL {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                if "CUDA" in str(e):
                    return lines + ["(stopped: the CUDA context is gone; replay the rest in a new process)"], failed
    return lines, failed


def _worker(args):
    seed, cases, budget, gpu = args
    torch.cuda.set_device(gpu)   # before any CUDA work: device="cuda" then means this GPU
    return run_cases(seed, cases, budget)


def summarize(env: dict, rows: list[dict]) -> list[str]:
    """summary.md's lines for a sweep's env and rows (also to redo it from a results.json)."""
    failed = [r for r in rows if r["ok"] is False]
    not_run = [r for r in rows if r["ok"] is None]
    by_baseline = [r for r in rows if r["ok"] and "same_precision" in r["errors"]]
    by_delta = [r for r in rows if r["ok"] and "fa2_delta" in r["errors"] and "same_precision" not in r["errors"]]
    worst = {}
    for key in ("out", "lse", "dq", "dk", "dv"):
        errs = [(r["errors"][key], r) for r in rows if r["ok"]]
        if errs:
            e, r = max(errs, key=lambda x: x[0])
            shape = f"varlen q{r['lens'][0]} k{r['lens'][1]}" if r["lens"] else f"b{r['b']} sq{r['sq']} sk{r['sk']}"
            worst[key] = f"{e:.3g} (case {r['case']}: {r['dtype']} {shape} hq{r['hq']} hkv{r['hkv']} d{r['d']} {r['feat']})"
    lines = [f"# Random sweep: {env['gpu']}, {env['date']}", "", f"Command: `{env['command']}`",
             f"Versions: torch {env['torch']}, triton {env['triton']}, fa_ck {env['fa_ck']}", "",
             f"{len(rows)} cases in {env['seconds']} s ({env['workers']} workers on {env['gpus']} GPUs): "
             f"{len(rows) - len(failed) - len(not_run)} passed ({len(by_baseline)} of them only by the "
             f"same-precision criterion, {len(by_delta)} only by FA2's delta), {len(failed)} failed, "
             f"{len(not_run)} not run (out of memory).", "",
             "A gradient past its fixed bound passes by the same-precision criterion when its error is at most "
             "twice that of the reference evaluated in the input dtype (flash-attn's criterion), or by FA2's "
             "delta when it is within the bound of the float64 reference whose delta = rowsum(dO * O) takes the "
             "output as stored (FlashAttention-2's backward; tests/attn_check.py).", "",
             "Worst relative error per quantity among passing cases:", ""]
    lines += [f"- {k}: {v}" for k, v in worst.items()]
    if by_baseline:
        lines += ["", "Passed by the same-precision criterion (error; the reference in the input dtype):", ""] + [
            f"- case {r['case']}: {r['dtype']} d{r['d']} {r['feat']}: "
            + ", ".join(f"{k} {r['errors'][k]:.3g} ({v:.3g})" for k, v in r["errors"]["same_precision"].items())
            for r in by_baseline[:50]]
    if by_delta:
        lines += ["", "Passed by FA2's delta (error; error against the reference with FA2's delta):", ""] + [
            f"- case {r['case']}: {r['dtype']} d{r['d']} {r['feat']}: "
            + ", ".join(f"{k} {r['errors'][k]:.3g} ({v:.3g})" for k, v in r["errors"]["fa2_delta"].items())
            for r in by_delta[:50]]
    if failed:
        lines += ["", "Failures:", ""] + [f"- case {r['case']}: {r['failure'][:300]}" for r in failed[:50]]
    if not_run:
        lines += ["", "Not run (out of memory twice):", ""] + [
            f"- case {r['case']}: {r['dtype']} b{r['b']} sq{r['sq']} sk{r['sk']} d{r['d']}" for r in not_run[:50]]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000, help="cases per worker at most")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1,
                    help="processes (seeds seed..seed+workers-1), worker w on GPU w %% GPU count; "
                         "compiles run in parallel")
    ap.add_argument("--time-budget", type=float, default=480, help="seconds; stop starting cases after this")
    ap.add_argument("--out", default=None, help="output directory (default ./fa_ck-results/random_sweep-<gpu>-<date>/)")
    ap.add_argument("--replay", type=Path, default=None, metavar="RESULTS_JSON",
                    help="check the failed cases of a results.json again (or those of --case), on fresh inputs")
    ap.add_argument("--case", nargs="+", default=None, help="with --replay: these case ids")
    ap.add_argument("--repeat", type=int, default=3, help="with --replay: tries per case")
    args = ap.parse_args()
    if args.replay:                          # on the CPU too, with TRITON_INTERPRET=1
        rows = json.loads(args.replay.read_text())["cases"]
        lines, failed = replay(rows, args.case, args.repeat, "cuda" if torch.cuda.is_available() else "cpu")
        print("\n".join(lines) or "no case to replay")
        return 1 if failed else 0
    if not torch.cuda.is_available():
        print("random_sweep needs a GPU; on the CPU run `python -m pytest tests/test_properties.py`")
        return 2
    out = Path(args.out or default_out_dir("random_sweep", torch.cuda.get_device_name()))
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    n_gpu = torch.cuda.device_count()
    jobs = [(args.seed + w, args.cases, args.time_budget, w % n_gpu) for w in range(args.workers)]
    if args.workers == 1:
        rows = _worker(jobs[0])
    else:
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(args.workers) as pool:
            rows = [r for part in pool.map(_worker, jobs) for r in part]
    env = {"command": " ".join(sys.argv), "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "triton": __import__("triton").__version__, "fa_ck": fa_ck.__version__,
           "python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
           "seconds": round(time.time() - t0, 1), "workers": args.workers, "gpus": min(args.workers, n_gpu)}
    (out / "results.json").write_text(json.dumps({"env": env, "cases": rows}, indent=1))
    lines = summarize(env, rows)
    failed = [r for r in rows if r["ok"] is False]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
