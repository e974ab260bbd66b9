"""Compile, on the CPU for sm90, the kernels fa_ck's calls would launch over a set of shapes (dense
and causal d64 / d128 / d256, GQA, windows, varlen, fp8), and write kernel (with its switches) ->
sha1 of its PTX without debug lines, to compare two trees' kernels. Run from the repo root:
    TRITON_CACHE_DIR=$(mktemp -d) PYTHONPATH=python python bench/results/cpu-20261203-gluon-split/ptx_hashes.py OUT.json
(a fresh cache: a cached kernel would not be compiled again from the moved code)."""
import hashlib, json, re, sys
out_path = sys.argv[1]
sys.argv = ["x"]
sys.argv_out = out_path
sys.path.insert(0, "tools")
import sm90_offline_compile as oc
from triton.runtime.jit import JITFunction

hashes = {}
run = oc._run

def capture(self, *args, grid, warmup, **kwargs):
    label = f"{self.fn.__name__} " + " ".join(f"{k}={v}" for k, v in sorted(kwargs.items()) if k.isupper() or k in ("num_warps", "num_stages"))
    k = run(self, *args, grid=grid, warmup=True, **kwargs)
    ptx = k.asm["ptx"]
    ptx = "\n".join(l for l in ptx.splitlines() if not l.strip().startswith((".loc", ".file", "//")) )
    ptx = re.sub(r"\.section\s+\.debug.*", "", ptx, flags=re.S)
    hashes.setdefault(label, set()).add(hashlib.sha1(ptx.encode()).hexdigest()[:16])
    return None

oc.compile_only = lambda log, show=False: setattr(JITFunction, "run", capture)
shapes = [["--d", "128", "--causal"], ["--d", "128"], ["--d", "64", "--causal"], ["--d", "64", "--sq", "1024", "--sk", "1024"],
          ["--d", "256", "--causal"], ["--d", "128", "--hq", "8", "--hkv", "2", "--causal"],
          ["--d", "128", "--sq", "4096", "--sk", "4096", "--causal"], ["--d", "128", "--sq", "2048", "--sk", "2048", "--hq", "4", "--hkv", "1"],
          ["--d", "128", "--feat", '{"window_size": [64, 0]}'],
          ["--hq", "4", "--hkv", "2", "--lens", '[[5, 1, 0, 2], [1, 0, 3, 2]]', "--feat", '{"window_size": [3, 5]}'],
          ]
import fa_ck
for s in shapes:
    try:
        oc.main(s)
    except Exception as e:
        print("shape failed", s, type(e).__name__, str(e)[:200])
real = fa_ck.flash_attn_func
fa_ck.flash_attn_func = fa_ck.flash_attn_fp8_func
for s in (["--d", "128", "--causal"], ["--d", "64"], ["--d", "128", "--sq", "300", "--sk", "300"]):
    oc.main(s)
fa_ck.flash_attn_func = real
json.dump({k: sorted(v) for k, v in hashes.items()}, open(sys.argv_out, "w"), indent=0)
print(len(hashes), "kernels")
