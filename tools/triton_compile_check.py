"""Compile the Triton and Gluon kernels fa_ck launches for gfx942 (MI300X) and sm_90 (H100/H200), or
the --targets named, without a GPU; print one row per kernel (registers, spills, LDS/shared,
occupancy, matrix instructions) and fail when a kernel does not compile or lacks what it must have.

Where the kernels come from: the representative calls of triton_calls.py (CALLS, FP8_CALLS; DECODE_CALLS through the
backend's kvcache_forward, where flash_attn_with_kvcache ends) run through fa_ck's public API on CPU
tensors with the device faked to the target's (fake_device: the triton backend's
device facts patched, every launch recorded instead of run). The recorded launches are deduplicated
by (kernel, Triton's specialisation of the arguments, constexprs) and each is compiled as Triton's
own launcher compiles it: its binder specialises the arguments (a pointer's dtype and 16-byte
alignment, an integer's divisibility by 16, host-made tensor descriptors) into the signature and
attributes of an ASTSource. So the configs are the backend's own (config.py); none is decided here.
FA_CK_TRITON_CONFIG, when set, applies to every call as it would at run time.

Gates:
- a compile error, or a call the backend refuses;
- an attention kernel without matrix instructions (MFMA, wgmma, mma.sync, tcgen05.mma); an fp8 one
  (FP8) with any but fp8 ones (v_mfma_*fp8* / *bf8* on gfx942, v_mfma_*_f8f6f4 with fp8 operands on
  gfx950, .e4m3 / .e5m2 on NVIDIA, tcgen05.mma kind::f8f6f4 on sm100): no emulation through fp16;
- on AMD a VGPR spill or scratch (up to d128, without dropout or ALiBi: amd_spills_gated), or a pointer
  compiled without the attributes the HIP launcher gives it (16-byte aligned, within 2 GiB: buffer loads);
- on gfx942 the attention kernels' figures against bench/results/triton_gfx942_gate.json (gate_check): new
  spills, fewer waves (occupancy, or registers past a step), more MFMA work per useful FLOP (32x32 MFMAs on
  16-row waves compute QK^T and dP twice), or more key-block loop instructions per FLOP than INSTR_SLACK
  allows; a change that moves them for good reason rewrites the file with --write-gate;
- on sm90 a Gluon kernel's stack past GLUON_STACK_BYTES, ptxas serialising its wgmmas (its -v notes
  say so, Triton does not), or shared memory other than sizes.py estimates (config.py refuses tiles
  and drops TMA stores by that estimate).
The Triton kernels the tests define for themselves are compiled too (tests_own_launches).

    python tools/triton_compile_check.py [--targets gfx942 sm90] [--results FILE] [--fp8-only]
    python tools/triton_compile_check.py --targets gfx950 sm89 sm100 sm120 --fp8-only   (CI)
    python tools/triton_compile_check.py --targets sm90 --match gluon "d256"   (a few rows)
    python tools/triton_compile_check.py --targets gfx942 --write-gate      (new gfx942 defaults: the gate file)
    FA_CK_TRITON_CONFIG='{"fwd": {"num_warps": 8}}' python tools/triton_compile_check.py --targets gfx942 \
        --amd-options '{"matrix_instr_nonkdim": 16}' --match fwd_kernel    (try a variant: not gated)
    python tools/triton_compile_check.py --amd-reference flash_attn-2.8.3.post2.tar.gz   (AMD's own kernels,
        their default configs, for gfx942, printed in CI; the sdist from `pip download flash-attn==2.8.3.post2
        --no-deps --no-binary :all: --no-build-isolation`, as tools/flash_attn_suite.sh fetches it)
"""
from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    os.environ.pop("TRITON_INTERPRET", None)        # real compiles: read when the kernels are decorated

import argparse  # noqa: E402
import concurrent.futures as cf  # noqa: E402
import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from unittest import mock  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton._utils import find_paths_if, get_iterable_path  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.compiler.compiler import make_backend  # noqa: E402
from triton.runtime.jit import create_function_from_signature  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from ck_compile_check import NVIDIA_MMA, _cuda_usage, _wgmma_notes, parse_amdgcn  # noqa: E402

from triton_calls import CALLS, DECODE_CALLS, FP8_CALLS, Call, DecodeCall, run_call  # noqa: E402,F401

tb = importlib.import_module("fa_ck.backends.triton")       # (fa_ck.backends is the function)
device = importlib.import_module("fa_ck.backends.triton.device")
sizes = importlib.import_module("fa_ck.backends.triton.sizes")
fast_path = importlib.import_module("fa_ck.backends.triton.fast_path")
keyed = importlib.import_module("fa_ck.backends.triton.fast_path.keyed")

# multiprocessors (CUs) per target: the persistent Gluon grids' programs (not part of a compile)
SMS = {"gfx942": 304, "gfx950": 256, "sm89": 128, "sm90": 132, "sm100": 148, "sm120": 170}
MATMUL_KERNELS = {"fwd_kernel", "bwd_dkdv_kernel", "bwd_dq_kernel", "fwd_gluon_kernel", "bwd_dkdv_gluon_kernel",
                  "bwd_dq_gluon_kernel", "decode_split_kernel"}
# stack bytes a Gluon kernel may spill, by kernel and head-dim block (Triton 3.7.1): outside the
# key-block loops where the forward spills; measured faster than the tiles that do not spill
GLUON_STACK_BYTES = {"fwd_gluon_kernel": {64: 64, 128: 64, 256: 128},
                     "bwd_dkdv_gluon_kernel": {64: 8, 128: 176, 256: 40},
                     "bwd_dq_gluon_kernel": {64: 0, 128: 0, 256: 40}}


@contextlib.contextmanager
def fake_device(target: str):
    """fa_ck's triton backend on CPU tensors as on a `target` GPU (as tests/fake_sm90.py fakes sm90):
    yields the list its launches, (kernel, grid, args, constexprs), are appended to instead of running."""
    arch = arch_name(target)
    log: list = []

    def launch(kernel, grid, args, constexprs, compiled=None):
        log.append((kernel, grid, args, constexprs))
    patches = [(device, "INTERPRET", False), (device, "arch", lambda dev: arch),
               (device, "sm_count", lambda dev: SMS.get(target, 132)), (tb, "available", lambda: (True, "")),
               (tb, "unsupported", lambda q, k, v, p: None), (keyed, "launch", launch)]
    env = {name: value for name, value in os.environ.items() if name not in ("FA_CK_AUTOTUNE", "FA_CK_FAST_PATH")}
    with contextlib.ExitStack() as stack:
        for owner, name, value in patches:
            stack.enter_context(mock.patch.object(owner, name, value))
        stack.enter_context(mock.patch.dict(os.environ, dict(env, FA_CK_POISON="0"), clear=True))
        fast_path.clear()
        try:
            yield log
        finally:
            fast_path.clear()


@dataclasses.dataclass
class Launch:
    """A distinct launch: what to compile (an ASTSource's parts) and the first call that made it."""
    kernel: object
    signature: dict
    constexprs: dict
    attrs: dict
    options: dict
    call: str

    @property
    def name(self) -> str:
        return self.kernel.fn.__name__

    @property
    def values(self) -> dict:
        """The constexprs by parameter name."""
        names = list(self.signature)
        return {names[path[0]]: value for path, value in self.constexprs.items() if len(path) == 1}

    def describe(self) -> str:
        """The constexprs of note: numbers by value, switches that are on by name (layouts left out)."""
        return " ".join(k if v is True else f"{k}={v}" for k, v in self.values.items()
                        if v is not False and isinstance(v, (bool, int, float)))

    def config(self) -> str:
        """Tiles, warps ("ws": a Gluon kernel's warp-specialised partitions) and stages."""
        c = self.values
        tiles = "x".join(str(c[n]) for n in ("BLOCK_M", "BLOCK_N", "BLOCK_S", "BLOCK") if n in c)
        stages = c.get("NUM_BUF", self.options.get("num_stages"))
        warps = "ws" if "NUM_BUF" in c else f"w{self.options.get('num_warps', 4)}"
        return " ".join(filter(None, (tiles, warps, stages and f"s{stages}")))


def specialise(kernel, args: tuple, constexprs: dict, backend) -> tuple:
    """(signature, constexprs, attrs, options) of a launch, as Triton's launcher works them out
    (JITFunction.run: its binder, then _pack_args) for `backend`'s target."""
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    bound, spec, options = binder(*args, **constexprs)
    types, specs = [s[0] for s in spec], [s[1] for s in spec]
    signature = dict(zip((p.name for p in kernel.params), types))
    # paths into nested tuples, as JITFunction.run makes them: (i,) for a parameter, (i, j) for a tuple's item
    values = list(bound.values())
    consts = {path: get_iterable_path(values, path) for path in find_paths_if(types, lambda _, t: t == "constexpr")}
    attrs = {path: backend.parse_attr(get_iterable_path(specs, path))
             for path in find_paths_if(specs, lambda _, s: isinstance(s, str))}
    return signature, consts, attrs, options


def record(target: str, call: Call) -> list:
    """The launches, (kernel, grid, args, constexprs), that `call` makes on a faked `target` device."""
    with fake_device(target) as log:
        run_call(call)
    return log


def capture(target: str, calls: list) -> tuple[list, list]:
    """(the distinct launches of `calls` on `target`, failures of calls the backend refused)."""
    backend = make_backend(gpu_target(target))
    launches, seen, failures = [], set(), []
    for call in calls:
        try:
            log = record(target, call)
        except Exception as e:  # noqa: BLE001  (a refused call is a finding; the others go on)
            failures.append(f"{target} {call.label}: the call raised {type(e).__name__}: {str(e)[:200]}")
            continue
        for kernel, _, args, constexprs in log:
            sig, consts, attrs, options = specialise(kernel, args, constexprs, backend)
            key = (id(kernel), repr(sig), repr(consts), repr(attrs), repr(options))
            if key not in seen:
                seen.add(key)
                launches.append(Launch(kernel, sig, consts, attrs, options, call.label))
    return launches, failures


def arch_name(target: str) -> str:
    """device.arch()'s name for a target: "hip:gfx942", "cuda:sm90", ..."""
    return ("hip:" if target.startswith("gfx") else "cuda:") + target


def gpu_target(target: str) -> GPUTarget:
    return GPUTarget("cuda", int(target[2:]), 32) if target.startswith("sm") else GPUTarget("hip", target, 64)


def tests_own_launches():
    """(kernel, args, constexprs) of the Triton kernels the tests define for themselves: the tests run
    them in the interpreter, which takes any Python; compiled, a construct only it takes fails. Their
    modules are imported with the interpreter off (tests/conftest.py switches it on only where unset)."""
    sys.path.insert(0, str(ROOT / "tests"))
    with mock.patch.dict(os.environ, {"TRITON_INTERPRET": "0"}):
        import test_fp8
        import test_gluon_forward
    ints, floats = torch.zeros(64, dtype=torch.int32), torch.zeros(1024)
    for block_n in (64, 128):
        yield test_gluon_forward._warpgroup_ranges, (ints,) * 6 + (64,), dict(
            ROW0=64, BLOCK_N=block_n, MASK_LEFT=True, MASK_RIGHT=True, BLOCK=64)
    yield test_fp8._round_kernel, (floats, floats, 1024), dict(BLOCK=1024)


def tests_own(target: str) -> list:
    backend = make_backend(gpu_target(target))
    return [Launch(kernel, *specialise(kernel, args, consts, backend), "tests' own kernel")
            for kernel, args, consts in tests_own_launches()]


def mfma_is_fp8(line: str) -> bool:
    """An MFMA instruction (mnemonic and operands) that multiplies fp8: gfx942's *_fp8_fp8 / *_bf8_*
    forms, or gfx950's *_f8f6f4 form, whose cbsz / blgp fields pick each operand's format (0 e4m3,
    1 e5m2, absent = 0; 2-4 are fp6 / fp4, not fp8)."""
    op = line.split()[0]
    if "fp8" in op or "bf8" in op:
        return True
    if not op.endswith("f8f6f4"):
        return False
    fields = dict(re.findall(r"\b(cbsz|blgp):(\d+)", line))
    return all(int(fields.get(f, 0)) in (0, 1) for f in ("cbsz", "blgp"))


_INSTR = re.compile(r"^\s+([a-z_][a-z0-9_.]*)\b", re.M)
_LABEL = re.compile(r"^(\.LBB\d+_\d+):", re.M)
_BRANCH = re.compile(r"^\s+s_(?:cbranch_\w+|branch)\s+(\.LBB\d+_\d+)", re.M)
_MFMA_SHAPE = re.compile(r"^\s+v_mfma_\w*?_(\d+)x(\d+)x(\d+)", re.M)


def amd_loop(asm: str) -> dict:
    """The key-block (query-block) loop of an amdgcn kernel: of the innermost loops (ranges a backward
    branch closes, holding no other), the one with the most MFMAs (the shortest of those) -> its
    instructions, MFMAs and their FLOPs, ds_read / ds_write and exponentials."""
    labels = {m.group(1): m.start() for m in _LABEL.finditer(asm)}
    loops = [(labels[m.group(1)], m.end()) for m in _BRANCH.finditer(asm)
             if labels.get(m.group(1), m.start() + 1) <= m.start()]
    best = None
    for start, end in loops:
        if any(start <= a and b <= end and (a, b) != (start, end) for a, b in loops):
            continue
        ops = _INSTR.findall(asm, start, end)
        key = (sum(o.startswith("v_mfma") for o in ops), -len(ops))
        if best is None or key > best[0]:
            best = (key, ops, asm[start:end])
    if best is None or not best[0][0]:
        return {}
    _, ops, body = best
    return {"loop_instrs": len(ops), "loop_mfma": best[0][0],
            "loop_mfma_flops": sum(2 * int(a) * int(b) * int(c) for a, b, c in _MFMA_SHAPE.findall(body)),
            "loop_ds_read": sum(o.startswith("ds_read") for o in ops),
            "loop_ds_write": sum(o.startswith("ds_write") for o in ops),
            "loop_exp": sum(o.startswith("v_exp") for o in ops)}


# useful FLOPs of one loop step per BLOCK_M * BLOCK_N * BLOCK_D: QK^T and PV; dK/dV: S^T, dV, dP^T, dK; dQ: S, dP, dQ
STEP_FLOPS = {"fwd_kernel": 4, "bwd_dkdv_kernel": 8, "bwd_dq_kernel": 6}


def loop_work(launch: "Launch", st: dict) -> dict:
    """Per useful FLOP of a loop step (a wave's share of BLOCK_M x BLOCK_N x BLOCK_D): the MFMA work
    (1.0: none wasted) and the loop's instructions per 16k FLOP (one 32x32x8 MFMA's worth)."""
    c = launch.values
    if launch.name not in STEP_FLOPS or not st.get("loop_instrs"):
        return {}
    useful = STEP_FLOPS[launch.name] * c["BLOCK_M"] * c["BLOCK_N"] * c["BLOCK_D"] / launch.options.get("num_warps", 4)
    return {"mfma_work": round(st["loop_mfma_flops"] / useful, 2),
            "instr_per_16k": round(st["loop_instrs"] * 16384 / useful, 1)}


def figures(k, target: str) -> dict:
    """A compiled kernel's resources and matrix instructions (all, and those that multiply fp8)."""
    if target.startswith("gfx"):
        asm = k.asm["amdgcn"]
        found = parse_amdgcn(asm)
        st = {f: (found[0] if found else {}).get(f, 0)
              for f in ("vgpr", "agpr", "sgpr", "vgpr_spill", "sgpr_spill", "scratch", "occupancy")}
        ops = re.findall(r"^\s*(v_mfma_\w+[^\n]*)", asm, re.M)
        fp8 = [o for o in ops if mfma_is_fp8(o)]
        st.update(amd_loop(asm))
    else:
        ptx = k.asm["ptx"]
        st = _cuda_usage(k.asm["cubin"])
        # sm100's tcgen05.mma names only its operand family (kind::f8f6f4); the formats are in its
        # instruction descriptor, a run-time operand: fp8 where the kernel's inputs are
        ops = re.findall(NVIDIA_MMA, ptx)
        fp8 = [o for o in ops if "e4m3" in o or "e5m2" in o or "kind::f8f6f4" in o]
        if "wgmma.mma_async" in ptx:
            st.update(_wgmma_notes(ptx))
    st.update(lds=k.metadata.shared, matrix_ops=len(ops), fp8_ops=len(fp8))
    return st


def compile_launch(launch: Launch, target: str) -> dict:
    """Compile one launch for `target` -> its figures, or {"error": the first line of what failed}."""
    source = ASTSource
    if getattr(launch.kernel, "is_gluon", lambda: False)():
        from triton.experimental.gluon._runtime import GluonASTSource as source
    t0 = time.time()
    try:
        src = source(launch.kernel, launch.signature, launch.constexprs, launch.attrs)
        st = figures(triton.compile(src, target=gpu_target(target), options=launch.options), target)
    except Exception as e:  # noqa: BLE001  (a compile failure is a finding: the check goes on)
        return {"error": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"}
    return dict(st, seconds=round(time.time() - t0, 1))


_JOBS: list = []        # (target, Launch): forked workers compile them by index


def _compile_job(i: int) -> dict:
    target, launch = _JOBS[i]
    return compile_launch(launch, target)


def compile_all(jobs: list, workers: int) -> list:
    """compile_launch over jobs, in `workers` forked processes (the launches are not picklable: they
    are inherited), the Gluon kernels (the longest) first."""
    _JOBS[:] = jobs
    order = sorted(range(len(jobs)), key=lambda i: not getattr(jobs[i][1].kernel, "is_gluon", lambda: False)())
    if workers <= 1:
        return [_compile_job(i) for i in range(len(jobs))]
    results = [None] * len(jobs)
    with cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for i, st in zip(order, pool.map(_compile_job, order)):
            results[i] = st
    return results


def smem_estimate(launch: Launch) -> int | None:
    """sizes.py's shared memory for a Gluon kernel's constexprs (None for other kernels)."""
    c = launch.values
    in_bytes = 1 if c.get("FP8") else 2
    if launch.name == "fwd_gluon_kernel":
        out_bytes = {"*fp32": 4}.get(launch.signature["O"], 2) if c["TMA_STORE"] else 0
        return sizes.fwd_gluon(c["BLOCK_D"], c["BLOCK_M"], c["BLOCK_N"], c["NUM_BUF"], in_bytes, c["Q_CONVERT"],
                               out_bytes)
    if launch.name == "bwd_dkdv_gluon_kernel":
        return sizes.dkdv_gluon(c["BLOCK_D"], c["BLOCK_M"], c["NUM_BUF"], in_bytes, c["ONE_PASS"], c["NUM_KV"],
                                c["TMA_STORE"])
    if launch.name == "bwd_dq_gluon_kernel":
        return sizes.dq_gluon(c["BLOCK_D"], c["BLOCK_N"], c["NUM_BUF"], in_bytes)
    return None


# what Triton's HIP launcher gives a pointer to a 16-byte aligned tensor of at most 2 GiB (HIPBackend.
# get_tensor_specialization, parse_attr): without them the loads are not buffer loads and take far more registers
HIP_POINTER_ATTRS = (["tt.divisibility", 16], ["tt.pointer_range", 32])


def amd_spills_gated(c: dict) -> bool:
    """Whether AMD spills fail a launch: up to d128 without dropout or ALiBi. Past them the default
    tiles are known to spill; the table reports it."""
    return c.get("BLOCK_D", 0) <= 128 and not c.get("DROPOUT") and not c.get("ALIBI")


def gates(target: str, launch: Launch, st: dict) -> list:
    """What fails a compiled launch (module docstring: Gates)."""
    c, bad = launch.values, []
    if launch.name in MATMUL_KERNELS:
        if not st["matrix_ops"]:
            bad.append("no matrix instructions")
        elif c.get("FP8") and (not st["fp8_ops"] or st["fp8_ops"] < st["matrix_ops"]):
            bad.append(f"{st['fp8_ops']} fp8 and {st['matrix_ops'] - st['fp8_ops']} other matrix instructions "
                       "(want fp8 only: no emulation through fp16)")
    if target.startswith("gfx"):
        bare = [name for i, (name, ty) in enumerate(launch.signature.items()) if isinstance(ty, str)
                and ty.startswith("*") and not all(a in launch.attrs.get((i,), []) for a in HIP_POINTER_ATTRS)]
        if bare:
            bad.append(f"pointers {bare} compiled without {HIP_POINTER_ATTRS} (the HIP launcher gives them)")
    if target.startswith("gfx") and (st["vgpr_spill"] or st["scratch"]) and amd_spills_gated(c):
        bad.append(f"spills ({st['vgpr_spill']} VGPRs, {st['scratch']} bytes of scratch)")
    if launch.name in GLUON_STACK_BYTES:
        allowed = GLUON_STACK_BYTES[launch.name][c["BLOCK_D"]]
        if st["stack"] > allowed:
            bad.append(f"spills {st['stack']} bytes of stack (at most {allowed})")
        if st.get("wgmma_serialised"):
            bad.append(f"ptxas serialised its wgmmas ({st['wgmma_serialised']})")
        est = smem_estimate(launch)
        if not st["lds"] <= est <= st["lds"] + sizes.BARRIERS:
            bad.append(f"sizes.py estimates {est} bytes of shared memory, the kernel has {st['lds']}")
    return bad


GATE_FILE = ROOT / "bench" / "results" / "triton_gfx942_gate.json"
GATED = ("fwd_kernel", "bwd_dkdv_kernel", "bwd_dq_kernel")
INSTR_SLACK = 1.05          # loop instructions per FLOP may grow this much (scheduling noise between versions)


def reg_waves(vgpr: int) -> int:
    """Waves per SIMD a gfx942 kernel's registers allow (512 VGPRs and AGPRs in granules of 8)."""
    return min(8, 512 // max(8, -(-vgpr // 8) * 8))


def gate_rows(rows: list) -> dict:
    """The gfx942 rows of the attention kernels, by kernel and first call -> the figures the gate keeps."""
    out = {}
    for target, launch, st in rows:
        if target != "gfx942" or launch.name not in GATED:
            continue
        key = f"{launch.name} | {launch.call}"
        key = key if key not in out else f"{key} | {launch.describe()}"
        out[key] = {"config": launch.config(), "vgpr": st["vgpr"], "agpr": st["agpr"],
                    "reg_waves": reg_waves(st["vgpr"]), "occupancy": st["occupancy"], "spill": st["vgpr_spill"],
                    "scratch": st["scratch"], "lds": st["lds"],
                    **loop_work(launch, st), **{f: st.get(f, 0) for f in ("loop_ds_read", "loop_ds_write", "loop_exp")}}
    return out


def gate_check(now: dict, before: dict, complete: bool) -> list:
    """What regressed against the gate file: new spills, fewer waves (by the compiler's occupancy or by
    registers alone), more MFMA work or more loop instructions per FLOP; with every call compiled
    (complete), rows that appeared or went too."""
    bad = []
    for key, b in before.items():
        n = now.get(key)
        if n is None:
            if complete:
                bad.append(f"{key}: in {GATE_FILE.name} but not compiled (rewrite it with --write-gate)")
            continue
        was = f"(was {b['config']}, now {n['config']})"
        if n["spill"] > b["spill"] or n["scratch"] > b["scratch"]:
            bad.append(f"{key}: spills {n['spill']} VGPRs, {n['scratch']} B scratch, was {b['spill']}, "
                       f"{b['scratch']} {was}")
        if n["occupancy"] < b["occupancy"]:
            bad.append(f"{key}: occupancy {n['occupancy']}, was {b['occupancy']} {was}")
        if n["reg_waves"] < b["reg_waves"]:
            bad.append(f"{key}: {n['vgpr']} registers allow {n['reg_waves']} waves, {b['vgpr']} allowed "
                       f"{b['reg_waves']} {was}")
        if n.get("mfma_work", 0) > b.get("mfma_work", 0) + 0.01:
            bad.append(f"{key}: MFMA work {n['mfma_work']} per useful FLOP, was {b['mfma_work']} {was}")
        if n.get("instr_per_16k", 0) > b.get("instr_per_16k", 0) * INSTR_SLACK:
            bad.append(f"{key}: {n['instr_per_16k']} loop instructions per 16k FLOP, was {b['instr_per_16k']} "
                       f"(+{INSTR_SLACK - 1:.0%} allowed) {was}")
    if complete:
        bad += [f"{key}: not in {GATE_FILE.name} (add it with --write-gate)" for key in sorted(set(now) - set(before))]
    return bad


def gate_table(now: dict, before: dict) -> str:
    """Markdown: gfx942's attention kernels as fa_ck launches them, beside the gate file's figures."""
    lines = ["| kernel | first call | config | VGPR (AGPR) | waves: occupancy / registers | spill | LDS B "
             "| MFMA work | loop instr /16k FLOP | loop ds_read/ds_write/exp | gate file |", "|" + "---|" * 11]
    for key, n in now.items():
        b = before.get(key)
        kernel, call = key.split(" | ", 1)
        then = "new" if b is None else "same" if b == n else (
            f"{b['config']}: {b['vgpr']} ({b['agpr']}), {b['occupancy']}/{b['reg_waves']}, spill {b['spill']}, "
            f"{b.get('mfma_work')}, {b.get('instr_per_16k')}, {b['loop_ds_read']}/{b['loop_ds_write']}/{b['loop_exp']}")
        lines.append(f"| {kernel} | {call} | {n['config']} | {n['vgpr']} ({n['agpr']}) | {n['occupancy']} / "
                     f"{n['reg_waves']} | {n['spill']} | {n['lds']} | {n.get('mfma_work', '')} | "
                     f"{n.get('instr_per_16k', '')} | {n['loop_ds_read']}/{n['loop_ds_write']}/{n['loop_exp']} "
                     f"| {then} |")
    return "\n".join(lines)


def write_gate(now: dict) -> None:
    rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in now.items())
    GATE_FILE.write_text(f'{{"triton": "{triton.__version__}",\n "command": "python tools/triton_compile_check.py '
                         f'--targets gfx942 --write-gate",\n "rows": {{\n{rows}\n }}\n}}\n')


# ---------------------------------------------------------------- AMD's own (printed beside ours, not gated)

AMD_VERSION = "2.8.3.post2"     # flash-attn whose flash_attn_triton_amd kernels are compared (never committed)
# AMD's kernels' useful FLOPs of a loop step per BLOCK_M * BLOCK_N * head dim, as STEP_FLOPS
AMD_STEP = {"attn_fwd": 4, **{f"_bwd_kernel_{k}_{m}": f for k, f in (("dkdv", 8), ("dq", 6))
                              for m in ("causal", "noncausal")}}


def amd_reference_package(where: str):
    """flash-attn's flash_attn_triton_amd (under `where`: an sdist's tarball or directory) imported as a
    package of its own, without flash_attn's __init__ (which wants the CUDA extension)."""
    import importlib.util
    import tarfile
    path = Path(where)
    if path.is_file():
        import atexit
        import shutil
        import tempfile
        out = Path(tempfile.mkdtemp(prefix="fa_ck_amd_ref_"))
        atexit.register(shutil.rmtree, out, True)
        with tarfile.open(path) as tar:
            tar.extractall(out, [m for m in tar.getmembers() if "/flash_attn_triton_amd/" in m.name], filter="data")
        path = out
    found = next(path.rglob("flash_attn_triton_amd/fwd_prefill.py"), None)
    if found is None:
        raise SystemExit(f"no flash_attn_triton_amd/fwd_prefill.py under {where}")
    spec = importlib.util.spec_from_file_location("fa_amd_ref", found.parent / "__init__.py",
                                                  submodule_search_locations=[str(found.parent)])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["fa_amd_ref"] = pkg             # (its __init__ is empty; the modules import .utils)
    return (importlib.import_module("fa_amd_ref.fwd_prefill"), importlib.import_module("fa_amd_ref.bwd_prefill_split"))


def amd_reference_launches(where: str, target: str = "gfx942", tuned: bool = False) -> list:
    """AMD's forward (its default config, or with `tuned` each of its CDNA autotune configs) and its
    default ("split") backward for the bf16 calls of CALLS without features, recorded on CPU tensors
    and specialised as for fa_ck's."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction
    fwd, bwd = amd_reference_package(where)
    backend = make_backend(gpu_target(target))
    log = []

    def jit_run(self, *args, grid, warmup=False, **kwargs):
        log.append((self, args, kwargs))

    def tuned_run(self, *args, **kwargs):
        for config in fwd.get_cdna_autotune_configs()[0][:-1] if tuned else self.configs[:1]:   # (less its fall-back)
            log.append((self.fn, args, dict(kwargs, **config.all_kwargs())))
    launches = []
    with mock.patch.object(JITFunction, "run", jit_run), mock.patch.object(Autotuner, "run", tuned_run):
        for call in CALLS:
            if call.dtype != torch.bfloat16 or call.lens or call.hq != call.hkv or Call(call.d, causal=call.causal,
                                                                                         s=call.s) != call:
                continue
            log.clear()
            q, k, v, do = (torch.randn(call.b, call.s, call.hq, call.d, dtype=call.dtype) for _ in range(4))
            o, lse = torch.zeros_like(q), torch.zeros(call.b, call.hq, call.s)
            dq, dk, dv = (torch.zeros_like(t) for t in (q, k, v))
            scale = call.d ** -0.5
            fwd.attention_prefill_forward_triton_impl(q, k, v, o, scale, None, call.causal, None, "bshd", None, None,
                                                      call.s, call.s, None, None, 0.0, None, None, False, True,
                                                      None, None, None, None)
            bwd.attention_prefill_backward_triton_split_impl(do, q, k, v, o, lse, dq, dk, dv, scale, None, call.causal,
                                                             "bshd", None, None, call.s, call.s, 0.0, None, None, True,
                                                             *[None] * 8)
            for kernel, args, kwargs in log:
                if kernel.fn.__name__ in AMD_STEP:
                    parts = specialise(kernel, args, kwargs, backend)
                    if not any(la.kernel is kernel and (la.signature, la.constexprs, la.attrs, la.options) == parts
                               for la in launches):
                        launches.append(Launch(kernel, *parts, f"AMD {AMD_VERSION}: {call.label}"))
    return launches


def amd_reference_rows(where: str, workers: int, tuned: bool) -> str:
    """Markdown: AMD's kernels compiled for gfx942, with the figures of the gate table."""
    launches = amd_reference_launches(where, tuned=tuned)
    lines = ["| kernel | call | config | VGPR (AGPR) | occupancy | spill | LDS B | MFMA work | loop instr /16k FLOP "
             "| loop ds_read/ds_write/exp |", "|" + "---|" * 10]
    for launch, st in zip(launches, compile_all([("gfx942", la) for la in launches], workers)):
        if "error" in st:
            lines.append(f"| {launch.name} | {launch.call} | does not compile: {st['error']} |")
            continue
        c = launch.values
        m, n, d = c["BLOCK_M"], c["BLOCK_N"], c.get("BLOCK_DMODEL", c.get("HEAD_DIM"))
        useful = AMD_STEP[launch.name] * m * n * d / launch.options.get("num_warps", 4)
        work = st.get("loop_instrs") and (round(st["loop_mfma_flops"] / useful, 2),
                                          round(st["loop_instrs"] * 16384 / useful, 1))
        config = f"{m}x{n} w{launch.options.get('num_warps', 4)} s{launch.options.get('num_stages')} " \
                 f"wpe{launch.options.get('waves_per_eu', 0)}"
        lines.append(f"| {launch.name} | {launch.call} | {config} | {st['vgpr']} ({st['agpr']}) | {st['occupancy']} | "
                     f"{st['vgpr_spill']} | {st['lds']} | {work and work[0]} | {work and work[1]} | "
                     f"{st.get('loop_ds_read')}/{st.get('loop_ds_write')}/{st.get('loop_exp')} |")
    return "\n".join(lines)


def table(rows: list) -> str:
    """Markdown: one row per (target, launch, figures)."""
    lines = [("| target | kernel | first call | config | constexprs | VGPR/REG | AGPR | SGPR | spill | LDS/smem B "
              "| occupancy | matrix ops | MFMA work | loop instr /16k FLOP | loop ds_read/ds_write/exp "
              "| ptxas wgmma notes | compile s |"), "|" + "---|" * 17]
    for target, launch, st in rows:
        work = loop_work(launch, st)
        loop = (f"{work['mfma_work']} | {work['instr_per_16k']} | "
                f"{st['loop_ds_read']}/{st['loop_ds_write']}/{st['loop_exp']}") if work else " | | "
        notes = ", ".join(n for n in (st.get("wgmma_serialised") and f"serialised ({st['wgmma_serialised']})",
                                      st.get("injected_waits") and f"{st['injected_waits']} injected wait(s)") if n)
        ops = f"{st['matrix_ops']} ({st['fp8_ops']} fp8)" if st["fp8_ops"] else st["matrix_ops"]
        lines.append(f"| {target} | {launch.name} | {launch.call} | {launch.config()} | {launch.describe()} | "
                     f"{st['vgpr']} | {st['agpr']} | {st['sgpr']} | {st['vgpr_spill']} | {st['lds']} | "
                     f"{st['occupancy']} | {ops} | {loop} | {notes} | {st['seconds']} |")
    return "\n".join(lines)


def fp8_target(target: str) -> bool:
    return device.fp8_dtype(arch_name(target)) is not None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", nargs="+", default=["gfx942", "sm90"])
    ap.add_argument("--results", default=None, help="also write the table to this markdown file")
    ap.add_argument("--fp8-only", action="store_true", help="only the fp8 calls (FP8_CALLS)")
    ap.add_argument("--match", nargs="+", default=None,
                    help="compile only the launches whose kernel, first call or constexprs contain one of these")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compiles in parallel (processes)")
    ap.add_argument("--write-gate", action="store_true", help=f"rewrite {GATE_FILE.relative_to(ROOT)} from "
                    "this run's gfx942 figures (after a change that the gate fails for good reason)")
    ap.add_argument("--amd-options", default="", help="JSON compile options added to every AMD launch, to try "
                    "what fa_ck does not launch with, e.g. '{\"waves_per_eu\": 2, \"matrix_instr_nonkdim\": 16}'")
    ap.add_argument("--amd-reference", metavar="SDIST", default=None,
                    help=f"only compile AMD's Triton kernels of flash-attn {AMD_VERSION}'s sdist (a tarball or its "
                    "directory; `pip download flash-attn==VERSION --no-deps --no-binary :all:`) for gfx942")
    ap.add_argument("--amd-tuned", action="store_true", help="with --amd-reference: the forward in each of AMD's "
                    "CDNA autotune configs (its MI300X tuning) rather than its default")
    args = ap.parse_args(argv)
    t0 = time.time()
    if args.amd_reference:
        print(amd_reference_rows(args.amd_reference, args.jobs, args.amd_tuned))
        print(f"\ncompiled in {time.time() - t0:.0f} s with triton {triton.__version__} (compile-checked only)")
        return 0
    jobs, failures = [], []
    for target in args.targets:
        calls = [c for c in (FP8_CALLS if args.fp8_only else CALLS + FP8_CALLS + DECODE_CALLS)
                 if not c.fp8 or fp8_target(target)]
        launches, refused = capture(target, calls)
        if args.amd_options and target.startswith("gfx"):
            for launch in launches:
                launch.options = dict(launch.options, **json.loads(args.amd_options))
        failures += refused
        if not (args.fp8_only or args.match):
            launches += tests_own(target)
        jobs += [(target, launch) for launch in launches if not args.match or any(
            m in f"{launch.name} {launch.call} {launch.describe()}" for m in args.match)]
    captured = time.time() - t0
    rows = []
    for (target, launch), st in zip(jobs, compile_all(jobs, args.jobs)):
        if "error" in st:
            failures.append(f"{target} {launch.name} ({launch.call}): does not compile: {st['error']}")
            continue
        rows.append((target, launch, st))
        failures += [f"{target} {launch.name} ({launch.call}; {launch.config()}): {why}"
                     for why in gates(target, launch, st)]
    text = table(rows)
    print(text)
    if "gfx942" in args.targets and not args.fp8_only:
        now = gate_rows(rows)
        before = json.loads(GATE_FILE.read_text())["rows"] if GATE_FILE.exists() else {}
        print("\n== gfx942 defaults against " + str(GATE_FILE.relative_to(ROOT)) + " ==\n" + gate_table(now, before))
        tried = args.amd_options or os.environ.get("FA_CK_TRITON_CONFIG")
        if args.write_gate and not (tried or args.match or failures):
            write_gate(now)
            print(f"wrote {GATE_FILE.relative_to(ROOT)}")
        elif tried:
            print("(not gated: FA_CK_TRITON_CONFIG or --amd-options changes what is compiled)")
        else:
            failures += [f"gfx942 gate: {why}" for why in gate_check(now, before, complete=not args.match)]
    print(f"\n{len(rows)} kernels compiled in {time.time() - t0:.0f} s ({captured:.0f} s capturing the launches) "
          f"with triton {triton.__version__}")
    if args.results:
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(
            f"# Triton kernels compiled without a GPU ({time.strftime('%Y-%m-%d')})\n\n"
            f"Command: `python tools/triton_compile_check.py {' '.join(argv or sys.argv[1:])}`; "
            f"triton {triton.__version__}, torch {torch.__version__}. Compile-checked only: no run on these GPUs.\n"
            "NVIDIA (sm*) REG and spill come from cuobjdump (spill = stack bytes); wgmma notes from `ptxas -v` "
            "(C7512/C7514: wgmmas serialised; C7517: waits injected).\n\n" + text + "\n")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
