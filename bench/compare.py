"""fa_ck's speed at this tree against another commit, on one GPU, with the noise measured beside it.

    python bench/compare.py REV [--alternations 2] [--out DIR] -- [bench/kernels.py arguments]
    python bench/compare.py REV --summarize DIR        # the table again from DIR's runs

Takes REV's python/ from git (`git archive`) and runs this tree's bench/kernels.py once per tree and
alternation, the trees taking turns (this, REV, this, REV, ...), each process with its own fa_ck on
PYTHONPATH: the same harness, the same points, SDPA cuDNN timed in every process. Each point's
ratio to cuDNN is the median over a tree's processes; the change is this tree's over REV's. The
spread of one tree's processes at a point (max / min - 1 of their ratios) is the run's noise there,
measured, not assumed: a change smaller than it is not a change. Each process writes results.json
under DIR/<tree><n>/; the comparison goes to DIR/results.md and DIR/results.json (default
./fa_ck-results/compare-<rev>-<date>/).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # run as a script: `bench` importable
from bench.out_dir import RESULTS_DIR  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OURS = "fa_ck-triton"
WITHIN = 0.02        # issue 58's bar: each point's ratio to cuDNN within 2 % of the baseline's


def archive_python(rev: str, dest: Path) -> Path:
    """REV's python/ tree extracted under dest; -> the directory to put on PYTHONPATH."""
    data = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, "python"],
                          capture_output=True, check=True, timeout=60).stdout
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(dest, filter="data")
    return dest / "python"


def ratios(results_json: Path) -> dict:
    """{(point, mode): fa_ck's ratio to cuDNN} of one bench/kernels.py run."""
    rows = json.loads(Path(results_json).read_text())["points"]
    return {(r["point"], r["mode"]): r["ratio_cudnn"] for r in rows
            if r.get("backend") == OURS and r.get("ratio_cudnn") is not None}


def compare(this_runs: list[dict], base_runs: list[dict]) -> list[dict]:
    """Per point measured in every run of both trees: the median ratios, the change and each tree's spread."""
    keys = set.intersection(*(set(r) for r in this_runs + base_runs)) if this_runs and base_runs else set()
    out = []
    for key in sorted(keys):
        this, base = [r[key] for r in this_runs], [r[key] for r in base_runs]
        spread = max(max(v) / min(v) - 1 for v in (this, base))
        row = {"point": key[0], "mode": key[1], "base": statistics.median(base), "this": statistics.median(this),
               "spread": spread}
        row["change"] = row["this"] / row["base"] - 1
        row["verdict"] = ("kept" if abs(row["change"]) <= WITHIN else
                          "within noise" if abs(row["change"]) <= spread else
                          "faster" if row["change"] > 0 else "slower")
        out.append(row)
    return out


def summary(rows: list[dict]) -> dict:
    changes = [r["change"] for r in rows]
    return {"points": len(rows), "median_change": statistics.median(changes) if rows else None,
            "within_2pct": sum(abs(c) <= WITHIN for c in changes),
            "slower_beyond_noise": [f"{r['point']} {r['mode']}" for r in rows if r["verdict"] == "slower"],
            "median_spread": statistics.median(r["spread"] for r in rows) if rows else None}


def markdown(rows: list[dict], rev: str, this_name: str, runs: int) -> str:
    s = summary(rows)
    lines = [f"# fa_ck at {this_name} against {rev}: ratio to SDPA cuDNN", "",
             f"{runs} bench/kernels.py process(es) per tree, the trees taking turns; each ratio the median over "
             f"a tree's processes; spread: the widest max / min - 1 of one tree's processes (the noise).", "",
             f"- points: {s['points']}; median change {_pct(s['median_change'])}; within 2 %: {s['within_2pct']}; "
             f"median spread {_pct(s['median_spread'])}",
             f"- slower beyond 2 % and the noise: {', '.join(s['slower_beyond_noise']) or 'none'}", "",
             f"| point | mode | {rev} x cuDNN | {this_name} x cuDNN | change | spread | verdict |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['point']} | {r['mode']} | {r['base']:.3f} | {r['this']:.3f} | {_pct(r['change'])} | "
              f"{_pct(r['spread'])} | {r['verdict']} |" for r in rows]
    return "\n".join(lines) + "\n"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:+.1f} %"


def run_dirs(out: Path, tree: str) -> list[Path]:
    return sorted(p for p in out.glob(f"{tree}[0-9]*") if (p / "results.json").exists())


def write_report(out: Path, rev: str, this_name: str):
    this_runs, base_runs = ([ratios(p / "results.json") for p in run_dirs(out, t)] for t in ("this", "base"))
    rows = compare(this_runs, base_runs)
    report = markdown(rows, rev, this_name, min(len(this_runs), len(base_runs)))
    (out / "results.md").write_text(report)
    (out / "results.json").write_text(json.dumps({"rev": rev, "this": this_name, "summary": summary(rows),
                                                  "points": rows}, indent=1) + "\n")
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev", help="the commit to compare with (any git revision)")
    parser.add_argument("--alternations", type=int, default=2, help="processes per tree (default 2)")
    parser.add_argument("--out", type=Path, default=None, help="output directory")
    parser.add_argument("--summarize", type=Path, default=None, help="only write the table from DIR's runs")
    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args, kernels_args = parser.parse_args(argv[:split]), argv[split + 1:]      # after --: bench/kernels.py's
    if args.alternations < 1:
        parser.error(f"--alternations must be 1 or more, got {args.alternations}")
    from bench.decode import git_commit      # (imports torch: not needed for the rest)
    this_name = git_commit() or "this tree"
    if args.summarize:
        print(write_report(args.summarize, args.rev, this_name))
        return
    import datetime
    out = args.out or Path(RESULTS_DIR) / f"compare-{args.rev}-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    if run_dirs(out, "this") or run_dirs(out, "base"):
        raise SystemExit(f"--out {out} holds earlier runs, which the comparison would mix in: give another")
    out.mkdir(parents=True, exist_ok=True)
    base_python = archive_python(args.rev, out / f"tree-{args.rev}")
    for n in range(args.alternations):
        for tree, python in (("this", REPO / "python"), ("base", base_python)):
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(python),
                                                                             os.environ.get("PYTHONPATH")]))}
            imported = subprocess.run([sys.executable, "-c", "import fa_ck; print(fa_ck.__file__)"], env=env,
                                      capture_output=True, text=True, check=True).stdout.strip()
            if not Path(imported).resolve().is_relative_to(python.resolve()):
                raise SystemExit(f"{tree}: fa_ck imports from {imported}, not {python} (PYTHONPATH is not first?)")
            cmd = [sys.executable, str(REPO / "bench" / "kernels.py"), *kernels_args, "--out", str(out / f"{tree}{n}")]
            print(f"== {tree} ({this_name if tree == 'this' else args.rev}), run {n + 1}: {' '.join(cmd[1:])}",
                  flush=True)
            subprocess.run(cmd, env=env, check=True)
    print(write_report(out, args.rev, this_name))


if __name__ == "__main__":
    main()
