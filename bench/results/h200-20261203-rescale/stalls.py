"""Stall samples of the Gluon forward's loop per SASS opcode, from Nsight Compute's source page (call2.sh's
sass_<fp8|bf16>.csv): the loop is the instructions executed >= 1e6 times (per warp and key block; the idle
padding warps' NOPs and the producer's polling fall outside it). Shares are of the loop's samples.
    python stalls.py call2/sass_fp8.csv [CHUNK]     (CHUNK: also the loop's profile in runs of CHUNK instructions)"""
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
head = rows[1]; data = [r for r in rows[2:] if len(r) >= len(head)]
ix = {h: i for i, h in enumerate(head)}
reasons = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
# loop body: instructions executed per warp-block count (>= 1e6)
recs = []
for r in data:
    n = int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
    ex = int(r[ix["Instructions Executed"]] or 0)
    src = r[ix["Source"]].strip()
    recs.append((int(r[ix["Address"]], 16), src, n, ex, {k: int(r[ix[k]] or 0) for k in reasons}))
loop = [x for x in recs if x[3] >= 1_000_000]
tot = sum(x[2] for x in loop)
print("loop instrs", len(loop), "samples", tot, "of", sum(x[2] for x in recs))
c = collections.Counter()
for x in loop: c.update(x[4])
print({k[6:]: f"{v/tot:.1%}" for k, v in c.most_common(10)})
op = collections.Counter(); cnt = collections.Counter(); opr = collections.defaultdict(collections.Counter)
for a, src, n, ex, d in loop:
    o = (src.split()[1] if src.startswith("@") else src.split()[0]).split(".")[0]
    op[o] += n; cnt[o] += 1; opr[o].update(d)
for o, n in op.most_common(14):
    print(f"{o:10s} n={cnt[o]:4d} {n/tot:6.1%}", {k[6:]: f"{v/tot:.1%}" for k, v in opr[o].most_common(3)})
# contiguous segments: print per-address running profile in chunks of 40 instructions of the first consumer loop
if len(sys.argv) > 2:
    loop.sort()
    seg = []
    for i in range(0, len(loop), int(sys.argv[2])):
        ch = loop[i:i+int(sys.argv[2])]
        ops = collections.Counter((s.split()[1] if s.startswith("@") else s.split()[0]).split(".")[0] for _, s, *_ in ch)
        print(f"{ch[0][0]&0xfffff:05x} {sum(x[2] for x in ch)/tot:6.1%}", dict(ops.most_common(4)))
