"""Summarise an ncu source-page CSV (SASS): the instructions with the most stall samples."""
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
head = next(i for i, r in enumerate(rows) if any("Source" in c for c in r))
cols = rows[head]
print("columns:", [c for c in cols if "Stall" in c or "Sampl" in c][:30])
samp = next(i for i, c in enumerate(cols) if "Sampling (All" in c)
src = next(i for i, c in enumerate(cols) if c.strip() in ("Source", "# Source") or "Source" in c)
stall_cols = [i for i, c in enumerate(cols) if c.startswith("stall_") or "Stall" in c]
data = []
for r in rows[head + 1:]:
    try:
        data.append((float(r[samp] or 0), r))
    except (ValueError, IndexError):
        pass
total = sum(d[0] for d in data) or 1
print(f"total samples {total:.0f}")
for n, r in sorted(data, key=lambda d: -d[0])[:45]:
    reasons = sorted(((float(r[i] or 0), cols[i]) for i in stall_cols if r[i] not in ("", "0")), reverse=True)[:3]
    print(f"{100 * n / total:5.1f}%  {r[src][:70]:<70} {reasons}")
