"""The CPU side of bench/nanogpt.py: how many threads to use, and the Triton kernels' short run.

Outside Triton's interpreter fa_ck's kernels cannot run on the CPU, and inside it one step of the
tiny preset takes about a minute. So on the CPU the `triton` variant trains a run of its own, short
enough for the interpreter (SHORT_RUN), in a child process started with TRITON_INTERPRET=1 (it
must be set before triton is imported), beside sdpa on the very same run; its loss is compared
with that sdpa's, not with the main run's.
"""

import json
import os
import subprocess
import sys
import time

# The tiny preset at a short block: a few seconds a step in the interpreter.
SHORT_RUN = dict(preset="tiny", batch=2, block=32, steps=4)
SHORT_RUN_DIR = "triton-interpreted"


def default_threads():
    """Every core this process may use (torch's own default takes one per physical core)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def describe_short_run():
    return (f"preset {SHORT_RUN['preset']}, batch {SHORT_RUN['batch']} x block {SHORT_RUN['block']}, "
            f"{SHORT_RUN['steps']} steps")


def short_run_command(args, out_dir, threads, time_budget=None):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nanogpt.py")
    command = [sys.executable, script, "--attn", "sdpa,triton", "--dtype", "fp32",
               "--eval-every", str(SHORT_RUN["steps"]), "--eval-iters", "1", "--seed", str(args.seed),
               "--threads", str(threads), "--out", out_dir, "--no-plots"]
    for key in ("preset", "batch", "block", "steps"):
        command += [f"--{key}", str(SHORT_RUN[key])]
    if args.data:
        command += ["--data", args.data]
    if time_budget is not None:
        command += ["--time-budget", f"{time_budget:.1f}"]
    return command


def short_interpreted_run(args, out_dir, threads, time_budget=None):
    """Train sdpa and triton on SHORT_RUN in a child process under TRITON_INTERPRET=1; the result
    for the `triton` variant, with the child's sdpa under result['separate_run']['sdpa']."""
    child_out = os.path.join(out_dir, SHORT_RUN_DIR)
    command = short_run_command(args, child_out, threads, time_budget)
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="", HIP_VISIBLE_DEVICES="")
    env.pop("WORLD_SIZE", None)
    started = time.time()
    # stderr passes through: the child's progress bars are the user's progress
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True)
    wall_s = time.time() - started
    try:
        with open(os.path.join(child_out, "results.json")) as f:
            child = json.load(f)["variants"]
    except (OSError, ValueError, KeyError):
        child = {}
    result = dict(child.get("triton") or {"status": "failed"})
    sdpa = child.get("sdpa") or {"status": "failed"}
    result["separate_run"] = dict(SHORT_RUN, interpreted=True, out=child_out, wall_s=wall_s,
                                  sdpa=sdpa, command=command)
    result["interpreted"] = True
    if done.returncode != 0 and result.get("status") in (None, "ok", "pending"):
        tail = done.stdout.strip().splitlines()[-1:] or [""]
        result["status"], result["reason"] = "failed", f"short run exited {done.returncode}: {tail[0][:300]}"
    elif result.get("status") == "ok" and sdpa.get("status") != "ok":
        result["status"], result["reason"] = "failed", f"the short run's sdpa: {sdpa.get('reason', sdpa['status'])}"
    return result
