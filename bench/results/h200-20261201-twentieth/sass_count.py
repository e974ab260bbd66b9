"""Compile, for sm90 on the CPU (tools/sm90_offline_compile.py), every kernel one fa_ck call
launches, then list each cubin: name, registers, stack bytes (ptxas's spills) and SASS
instructions, and write them with a count per opcode to OUTJSON. Needs Triton 3.6 beside
(`pip install --target /tmp/t36pkg triton==3.6.0`: the H200's version, with its nvdisasm and
cuobjdump). From the repo root, TREE being the python/ tree to compile:
  PYTHONPATH=TREE:/tmp/t36pkg python bench/results/h200-20261201-twentieth/sass_count.py OUTJSON \
      -- --b 2 --sq 1024 --sk 1024 --d 64 --causal      (tools/sm90_offline_compile.py's arguments)"""
import glob, json, os, subprocess, sys, tempfile, collections
cache = tempfile.mkdtemp()
os.environ["TRITON_CACHE_DIR"] = cache
out = sys.argv[1]; argv = sys.argv[sys.argv.index("--") + 1:]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
import sm90_offline_compile as soc
rc = soc.main(argv)
import triton
nvdis = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")
res = {}
for cub in glob.glob(f"{cache}/*/*.cubin"):
    meta = json.load(open(cub[:-6] + ".json"))
    sass = subprocess.run([nvdis, "-c", cub], capture_output=True, text=True).stdout
    ops = collections.Counter()
    for line in sass.splitlines():
        if "/*" in line and ";" in line:
            ins = line.split("*/", 1)[1].strip().lstrip("{").strip()
            if ins.startswith("@"):
                ins = ins.split(None, 1)[1]
            op = ins.split()[0].rstrip(";") if ins else ""
            if op:
                ops[op] += 1
    ru = subprocess.run([nvdis.replace("nvdisasm", "cuobjdump"), "--dump-resource-usage", cub], capture_output=True, text=True).stdout
    fields = dict(kv.split(":") for kv in ru.split("Function", 1)[1].split("\n", 1)[1].split())
    regs, stack, n = int(fields["REG"]), int(fields["STACK"]), sum(ops.values())
    res[meta["name"]] = dict(regs=regs, spills=stack, n=n, ops=dict(ops))
    print(f"{meta['name'][:60]:<60} regs {regs} spills {stack} instr {n}")
json.dump(res, open(out, "w"), indent=1)
sys.exit(rc)
