"""Medians of standing_poly.py's rounds per point and variant: kernel us and x cuDNN's kernel,
call us and x cuDNN's call (ratios taken within each round, then the median), round 0's error.
    python3 summarize.py callN/standing_poly.jsonl"""
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
names = [n for n in rows[0] if isinstance(rows[0][n], dict) and "kernel_us" in rows[0][n]]
print("| point | variant | kernel us | x cuDNN kernel | call us | x cuDNN call | rel. error |")
print("|---|---|---|---|---|---|---|")
for p in dict.fromkeys(r["point"] for r in rows):
    rs = [r for r in rows if r["point"] == p]
    for n in names:
        med = lambda f: statistics.median(f(r) for r in rs)     # noqa: E731
        err = [r[n]["rel_err"] for r in rs if "rel_err" in r[n]]
        print(f"| {p} | {n} | {med(lambda r: r[n]['kernel_us']):.1f} | {med(lambda r: r['x_cudnn_kernel'][n]):.3f} | "
              f"{med(lambda r: r[n]['call_us']):.1f} | {med(lambda r: r['x_cudnn_call'][n]):.3f} | "
              f"{err[0] if err else '-'} |")
