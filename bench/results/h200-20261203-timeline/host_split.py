"""Where a replayed forward call's host time goes, layer by layer, on the GPU machine: each layer's
function wrapped with a perf_counter timer (interface._run, ops._forward, the triton backend's
_forward, quantize.fp8_buffers, quantize.fp8_inputs' absence aside, _Plan.replay, each direct
launch), 2000 calls of a tiny host-bound shape (B1 S128 H2 d128 causal), fp8 of bf16 inputs and
bf16; then single torch calls in loops (empty, zeros, a slice's view) for scale. Time per call in
us, inclusive of the layers below. Prints a table last; writes $OUT/host_split.json.
    python3 bench/results/h200-20261203-timeline/host_split.py"""
import functools, json, os, time
import torch
import fa_ck
from fa_ck import interface, ops
from fa_ck.backends import triton as tb
from fa_ck.backends.triton import driver_launch, plans, quantize

spent, counts = {}, {}


def timed(owner, name, label):
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - t
            counts[label] = counts.get(label, 0) + 1
    setattr(owner, name, wrapper)


timed(interface, "_run", "interface._run")
timed(ops, "_forward", "ops._forward")
timed(tb, "_forward", "triton._forward")
timed(quantize, "fp8_buffers", "quantize.fp8_buffers")
timed(plans._Plan, "replay", "_Plan.replay")
timed(plans, "_plan_key", "plans._plan_key")
timed(driver_launch.DirectLaunch, "__call__", "DirectLaunch.__call__ (each launch)")

q, k, v = (torch.randn(1, 128, 2, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
calls = {"fp8": lambda: fa_ck.flash_attn_fp8_func(q, k, v, causal=True),
         "bf16": lambda: fa_ck.flash_attn_func(q, k, v, causal=True)}
rows = []
N = 2000
for name, fn in calls.items():
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    best = None
    for _ in range(3):
        spent.clear()
        counts.clear()
        t = time.perf_counter()
        for _ in range(N):
            fn()
        torch.cuda.synchronize()
        total = time.perf_counter() - t
        if best is None or total < best[0]:
            best = (total, dict(spent), dict(counts))
    total, sp, ct = best
    rows.append(dict(call=name, layer="whole call (loop)", us=round(total / N * 1e6, 1), n=N))
    for label in sp:
        rows.append(dict(call=name, layer=label, us=round(sp[label] / N * 1e6, 1), n=ct[label] // N))
n = 12
x = torch.empty(1 << 20, dtype=torch.float32, device="cuda")
singles = {"torch.empty(12, f32, cuda)": lambda: torch.empty(n, dtype=torch.float32, device="cuda"),
           "torch.zeros(12, i32, cuda)": lambda: torch.zeros(n, dtype=torch.int32, device="cuda"),
           "torch.empty(1,128,2,128 fp8)": lambda: torch.empty(1, 128, 2, 128, dtype=torch.float8_e4m3fn, device="cuda"),
           "x[0:4].view(2, 2)": lambda: x[0:4].view(2, 2)}
for name, fn in singles.items():
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20000):
        fn()
    torch.cuda.synchronize()
    rows.append(dict(call="single", layer=name, us=round((time.perf_counter() - t) / 20000 * 1e6, 2), n=1))
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "host_split.json"), "w"), indent=1)
print("| call | layer | us per call (inclusive) | times per call |\n|---|---|---|---|")
for r in rows:
    print(f"| {r['call']} | {r['layer']} | {r['us']} | {r['n']} |")
