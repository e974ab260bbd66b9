"""Medians of standing_ab.py's rounds per point and variant (kernel and call us, x cuDNN's kernel).
    python3 summarize.py callN/standing_ab.jsonl"""
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
points = list(dict.fromkeys(r["point"] for r in rows))
for p in points:
    rs = [r for r in rows if r["point"] == p]
    ck = statistics.median(r["cudnn"]["kernel_us"] for r in rs)
    cells = []
    for n in ("own", "own, q8", "fp8 in", "cudnn"):
        k = statistics.median(r[n]["kernel_us"] for r in rs)
        c = statistics.median(r[n]["call_us"] for r in rs)
        cells.append(f"{n}: kernel {k:.1f} ({ck / k:.2f}x), call {c:.1f}")
    print(f"| {p} | " + " | ".join(cells) + " |")
