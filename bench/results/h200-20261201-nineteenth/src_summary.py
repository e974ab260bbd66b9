"""Summarise ncu --page source --csv (SASS): samples by opcode class and stall reason, top instructions."""
import csv, sys, collections, re
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[1]; data = rows[2:]
ix = {h: i for i, h in enumerate(hdr)}
stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
tot = collections.Counter(); byop = collections.Counter(); byop_reason = collections.defaultdict(collections.Counter)
allsamp = 0
lines = []
for r in data:
    if len(r) < len(hdr): continue
    src = r[ix["Source"]].strip()
    s = int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
    allsamp += s
    m = re.match(r"(@!?U?P\w+\s+)?([A-Z0-9_]+)", src)
    op = m.group(2) if m else src[:10]
    byop[op] += s
    for st in stalls:
        v = int(r[ix[st]] or 0)
        tot[st] += v; byop_reason[op][st] += v
    lines.append((s, r[ix["Address"]][-5:], src[:70], {st[6:]: int(r[ix[st]] or 0) for st in stalls if int(r[ix[st]] or 0) > 0.1 * max(s, 1)}))
print("total samples", allsamp)
print("by reason:", [(k[6:], round(100 * v / allsamp, 1)) for k, v in tot.most_common(10)])
print("by opcode:")
for op, v in byop.most_common(14):
    print(f"  {op:14s} {100*v/allsamp:5.1f}%  ", [(k[6:], round(100 * x / allsamp, 1)) for k, x in byop_reason[op].most_common(3)])
print("top instructions:")
idx = {id(l): i for i, l in enumerate(lines)}
for i, l in sorted(enumerate(lines), key=lambda t: -t[1][0])[:int(sys.argv[2]) if len(sys.argv) > 2 else 25]:
    print(f"  #{i:5d} {100*l[0]/allsamp:5.2f}% {l[2]:70s} {l[3]}")
