"""What short_fwd.py and short_bwd.py share: a call's GPU time with the host's time taken out,
and their JSON and table."""
import json, os, statistics, time
import torch

_flush = []


def gpu_ms(fn, reps=25):
    """Median ms of fn's kernels: each call queued behind a ~1 ms sleep kernel (the GPU stays
    busy while the host enqueues the call) and an L2 flush, its events bracketing its kernels."""
    if not _flush:
        _flush.append(torch.empty(256 << 20, dtype=torch.int8, device="cuda"))
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        torch.cuda._sleep(1_000_000)
        _flush[0].zero_()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); fn(); e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1))
    return statistics.median(times)


def gpu_ms_each(fns: dict, reps=25) -> dict:
    """gpu_ms of every fn in fns (name -> fn), interleaved: each repetition times each fn once, in
    an order rotated per repetition, so a drift of the GPU's clocks during a point falls on all
    alike (timed one after another, the later backends of a point read up to 4 % slower in one
    pass than in the next: h200-20261202-split-q call 1)."""
    if not fns:
        return {}
    if not _flush:
        _flush.append(torch.empty(256 << 20, dtype=torch.int8, device="cuda"))
    names = list(fns)
    for name in names:
        for _ in range(3):
            fns[name]()
    times = {name: [] for name in names}
    for i in range(reps):
        for name in names[i % len(names):] + names[:i % len(names)]:
            torch.cuda._sleep(1_000_000)
            _flush[0].zero_()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(); fns[name](); e1.record()
            torch.cuda.synchronize()
            times[name].append(e0.elapsed_time(e1))
    return {name: statistics.median(t) for name, t in times.items()}


def finish(rows, name, header, cells, **meta):
    """Write $OUT/<name>.json; print a table last: point, backend, GPU us, x cuDNN, cells(row)."""
    out_dir = os.environ.get("OUT", "/tmp")
    json.dump({**meta, "rows": rows, "torch": torch.__version__, "date": time.strftime("%F %T")},
              open(f"{out_dir}/{name}.json", "w"), indent=1)
    base = {r["point"]: r.get("gpu_us") for r in rows if r["backend"] == "cudnn"}
    print(f"\n| point | backend | {' | '.join(header)} |")
    print("|---" * (len(header) + 2) + "|")
    for r in rows:
        if "error" in r:
            print(f"| {r['point']} | {r['backend']} | {r['error'][:80]} |" + " |" * (len(header) - 1))
            continue
        print(f"| {r['point']} | {r['backend']} | {r['gpu_us']:.1f} | {base[r['point']] / r['gpu_us']:.2f} | "
              + " | ".join(cells(r)) + " |")
