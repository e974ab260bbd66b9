"""The Gluon fp8 forward's loops in SASS, per variant, compiled for sm90 on the CPU (no GPU): each
loop that issues a wgmma (a backward branch's range holding GMMA instructions), its instruction
count and opcodes, and the instructions outside such loops. Written for the fourteenth session's
question: did F16_FIRST and Q16_EARLY (h200-20261204-tile calls 1-2) change the key-block loop
itself, or only the code around it? Needs Triton 3.6 (the H200's, with its nvdisasm).
  PYTHONPATH=TREE:/tmp/t36pkg python bench/results/h200-20261204-tile/sass_loops.py ROW VARIANT=JSON ...
TREE: the python/ tree to compile (its tools/ beside it); ROW: a row name of
tools/triton_compile_check.py without "fwd gluon "; VARIANT=JSON: constexprs set over the row's."""
import collections, json, os, re, subprocess, sys, tempfile
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
tree = os.environ["PYTHONPATH"].split(":")[0]
sys.path.insert(0, os.path.join(tree, "..", "tools"))
import triton
import triton_compile_check as tcc

NVDISASM = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")


def sass_of(fn, sig, consts, cfg):
    keep = {}
    real = triton.compile

    def compile_and_keep(*a, **k):
        kernel = real(*a, **k)
        keep["cubin"] = kernel.asm["cubin"]
        return kernel
    triton.compile = compile_and_keep
    try:
        tcc.compile_triton(fn, sig, consts, "sm90", num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
                           divisible=tcc.divisible(sig), gluon=True)
    finally:
        triton.compile = real
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(keep["cubin"])
        f.flush()
        return subprocess.run([NVDISASM, "-c", f.name], capture_output=True, text=True).stdout


def instructions(sass):
    """[(address, label or None, opcode, text)] in order."""
    out, label = [], None
    for line in sass.splitlines():
        m = re.match(r"\s*(\.L_x_\d+):", line)
        if m:
            label = m.group(1)
            continue
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s*(.*?);", line)
        if m:
            text = m.group(2).strip().lstrip("{").strip()
            body = text.split(None, 1)[1] if text.startswith("@") else text
            out.append((int(m.group(1), 16), label, body.split()[0] if body else "", text))
            label = None
    return out


def loops(ins):
    """(first, last) index ranges of backward branches' loops that hold a wgmma."""
    at = {lab: i for i, (_, lab, _, _) in enumerate(ins) if lab}
    found = []
    for i, (_, _, op, text) in enumerate(ins):
        m = re.search(r"BRA\s+`?\(?(\.L_x_\d+)", text)
        if op == "BRA" and m and m.group(1) in at and at[m.group(1)] < i:
            lo = at[m.group(1)]
            if any("GMMA" in o for _, _, o, _ in ins[lo:i + 1]):
                found.append((lo, i))
    # innermost loops only: drop a range that holds another
    return [r for r in found if not any(o != r and r[0] <= o[0] and o[1] <= r[1] for o in found)]


def main(argv):
    row, variants = argv[0], dict(v.split("=", 1) for v in argv[1:]) or {"as-is": "{}"}
    for name, fn, sig, consts, cfg in tcc.gluon_kernels():
        if name == "fwd gluon " + row:
            break
    else:
        raise SystemExit(f"no row {row!r}")
    print("| variant | loop | instructions | GMMA | MUFU | FMUL/FFMA/FADD | HFMA2/HADD2/HMUL2 | F2FP | BAR/SYNCS | outside wgmma loops |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    first_loop = {}
    for vname, text in variants.items():
        extra = json.loads(text)
        c = dict(consts, **extra)
        s = dict(sig, **{k: "constexpr" for k in extra})
        ins = instructions(sass_of(fn, s, c, cfg))
        inside = 0
        lo, hi = loops(ins)[0]
        first_loop[vname] = collections.Counter(o for _, _, o, _ in ins[lo:hi + 1])
        for k, (lo, hi) in enumerate(loops(ins)):
            ops = collections.Counter(o for _, _, o, _ in ins[lo:hi + 1])
            inside += hi - lo + 1
            grp = lambda *names: sum(n for o, n in ops.items() if o.split(".")[0] in names)
            print(f"| {vname} | {k} (0x{ins[lo][0]:x}-0x{ins[hi][0]:x}) | {hi - lo + 1} | {grp('HGMMA', 'QGMMA')} | "
                  f"{grp('MUFU')} | {grp('FMUL', 'FFMA', 'FADD')} | {grp('HFMA2', 'HADD2', 'HMUL2')} | {grp('F2FP')} | "
                  f"{grp('BAR', 'SYNCS')} | {len(ins) - inside if k == len(loops(ins)) - 1 else ''} |")
    base, *others = first_loop
    for vname in others:      # loop 0's opcodes that changed, against the first variant
        diff = {o: first_loop[vname][o] - first_loop[base][o] for o in first_loop[vname] | first_loop[base]}
        print(f"\nloop 0, {vname} less {base}: " + ", ".join(
            f"{o} {n:+d}" for o, n in sorted(diff.items(), key=lambda x: -abs(x[1])) if n))


if __name__ == "__main__":
    main(sys.argv[1:])
