"""Compile check for AMD GPUs without an AMD GPU: what the ROCm path compiles to, for gfx942.

CK mode (default): generates a representative subset of the CK FMHA instances setup.py ships
(CK's own codegen), compiles them and our csrc glue device-only with upstream clang and
tools/hip_stub (no ROCm needed), prints one row per kernel (VGPR, AGPR, SGPR, spills, LDS,
occupancy, MFMA count, compile seconds) and fails when something does not compile, when an attention
kernel has no MFMA, when a CK kernel makes calls (s_swappc) other than to ROCm's device math library
(__ocml_*: this stub build has no device libraries to inline; the split-KV combine kernel's exp/log
call it), or on a spill our flags cause. The subset covers the forward, the backward, the KV-cache
split-KV kernels (dense and paged) with their combine kernel, and two of the KV-cache append (appendkv) kernels.
--match PATTERN compiles only the subset entries whose label matches (fnmatch); with --results it replaces
only their rows of the results file and keeps the others.

--triton: compiles Triton kernels with triton.compile for ("hip", "gfx942", 64) and
("cuda", 90, 32); `compile_triton` is the reusable piece.

CK sources: --ck, else $CK_DIR, else the composable_kernel/ submodule when populated, else
the CK tree inside the amd-aiter wheel (pip download, unpacked under .ckcache/, never committed;
that tree is composable_kernel at the commit our submodule pins). Whichever it is, its files are
checked against tools/ck_pin.sha256 (tools/ck_pin.py) before anything is compiled.

Spills: a kernel that spills with fa_ck's flags (our_flags(): setup.py's, as close as upstream clang allows) is
compiled again with CK's own example flags (build_ck.ck_example_flags); the check fails when CK's flags do not
spill (our flags cause it) and records the spill as the compiler's when they do. It also counts the shipped
instances per kernel kind and head dim (failing when they differ from build_ck.SHIPPED_COUNTS) and turns the
measured compile seconds into a build-time table for the default and some FA_CK_HDIMS subsets.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import build_ck  # noqa: E402
import ck_pin  # noqa: E402

AITER_WHEEL = "amd-aiter==0.1.7.post2.dev18"
CK_COMMIT = ck_pin.CK_COMMIT   # what that wheel carries; the submodule pin
CACHE = ROOT / ".ckcache"
STUB = ROOT / "tools" / "hip_stub"

# (label, api, filter): one CK codegen filter each; forward: the first matching kernel is compiled,
# backward: the three kernels (dot_do_o, dq_dk_dv, convert_dq) of the matching dq_dk_dv.
SUBSET = [
    ("fwd fp16 d128 batch", "fwd", "fmha_fwd_d128_fp16_batch_*_psddv_nlogits_nbias_nmask_lse_ndropout_*"),
    ("fwd bf16 d128 batch causal", "fwd", "fmha_fwd_d128_bf16_batch_*_psddv_nlogits_nbias_mask_lse_ndropout_*"),
    ("fwd fp16 d64 group causal", "fwd", "fmha_fwd_d64_fp16_group_*_nlogits_nbias_mask_lse_ndropout_*"),
    ("fwd bf16 d64 batch alibi+mask+dropout", "fwd",
     "fmha_fwd_d64_bf16_batch_*_psddv_nlogits_alibi_mask_lse_dropout_*"),
    ("fwd fp16 d128 batch softcap", "fwd", "fmha_fwd_d128_fp16_batch_*_psddv_logits_nbias_nmask_lse_ndropout_*"),
    ("bwd fp16 d128 batch causal", "bwd",
     "*@*@fmha_bwd_d128_fp16_batch_*_npad_nbias_ndbias_mask_ndropout_ndeterministic_*"),
    ("bwd bf16 d64 group deterministic+dropout", "bwd",
     "*@*@fmha_bwd_d64_bf16_group_*_nbias_ndbias_nmask_dropout_*_deterministic_*"),
    # KV-cache: the split-KV kernel (its combine kernel with the first entry); combine@split-KV filters
    ("kvcache bf16 d128 paged", "fwd_splitkv",
     "fmha_fwd_splitkv_combine_d128_bf16_group_*@fmha_fwd_splitkv_d128_bf16_group_*_nlogits_nbias_nmask_*_pagedkv"),
    ("kvcache fp16 d64 dense alibi+mask", "fwd_splitkv",
     "fmha_fwd_splitkv_combine_d64_fp16_group_*@fmha_fwd_splitkv_d64_fp16_group_*_nlogits_alibi_mask_*_npagedkv"),
    # the KV-cache append: the kernels decoding (Sq % 64 != 0) runs, which pad the query length and head dim
    ("kvcache append bf16 d128 paged half-rotary", "fwd_appendkv",
     "fmha_fwd_appendkv_d128_bf16_*_vr_psskddv_half_pagedkv"),
    ("kvcache append fp16 d64 dense", "fwd_appendkv", "fmha_fwd_appendkv_d64_fp16_*_vr_psskddv"),
]


# ---------------------------------------------------------------- CK sources

def ck_tree_here(cache: Path = CACHE) -> Path | None:
    """A CK tree already on this machine (CK_DIR, the submodule, or the wheel's tree unpacked in the
    cache), or None; downloads nothing."""
    try:
        return build_ck.find_ck()
    except build_ck.CKNotFound:
        cached = sorted(cache.glob("ck-*/include/ck_tile"))
        return cached[0].parents[1] if cached else None


def ck_from_wheel(cache: Path = CACHE) -> Path:
    """Unpack only the CK subtree of the amd-aiter wheel into the cache (downloaded once)."""
    dest = cache / f"ck-{CK_COMMIT[:12]}"
    if (dest / "include" / "ck_tile").is_dir():
        return dest
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("amd_aiter-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", AITER_WHEEL,
                        "-d", str(cache)], check=True)
        wheels = sorted(cache.glob("amd_aiter-*.whl"))
    prefix = "aiter_meta/3rdparty/composable_kernel/"
    tmp = dest.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(wheels[-1]) as z:
        for name in z.namelist():
            if name.startswith(prefix) and not name.endswith("/"):
                out = tmp / name[len(prefix):]
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(z.read(name))
    tmp.rename(dest)
    return dest


def locate_ck(arg: str | None) -> Path:
    return locate_ck_and_source(arg)[0]


def locate_ck_and_source(arg: str | None) -> tuple[Path, str]:
    """(CK tree, where it came from, in words for error messages)."""
    if arg:
        return Path(arg).resolve(), "--ck"
    try:
        ck = build_ck.find_ck()
        return ck, ("CK_DIR" if os.environ.get("CK_DIR") else "the composable_kernel submodule")
    except build_ck.CKNotFound:
        return ck_from_wheel(), f"the amd-aiter wheel's tree cached in {CACHE}"


# ---------------------------------------------------------------- compiling and reading the ISA

def our_flags() -> list[str]:
    """setup.py's flags for a CK instance (build_ck.ck_hip_flags of HIP 6.2-7.1) as close as upstream clang 22 allows:
    without -amdgpu-coerce-illegal-types (clang 22 rejects it) and the inlining pair build_ck.ROCM_ONLY_FLAGS (see
    docs/rocm.md: clang 22 takes over 20 minutes on one instance with it)."""
    return build_ck.CK_HIP_FLAGS + build_ck.CK_DEFINES


def clang_cmd(clang: str, ck: Path, arch: str, src: Path, out: Path, flags: list[str] | None = None) -> list[str]:
    inc = [f"-I{p}" for p in build_ck.include_dirs(ck)]
    return ([clang, "-x", "hip", f"--offload-arch={arch}", "--cuda-device-only", "-nogpulib", "-nogpuinc",
             "-include", "__clang_hip_runtime_wrapper.h", f"-I{STUB}"]
            + (our_flags() if flags is None else flags) + inc + ["-S", "-o", str(out), str(src)])


def compile_one(clang, ck, arch, src: Path, out_dir: Path, flags: list[str] | None = None) -> dict:
    """seconds: wall time; cpu: the compiler's own CPU seconds (user + system, from wait4), which the build-time
    arithmetic uses: on shared cores the wall time grows with the load, the CPU time hardly."""
    out = out_dir / (src.stem + ".s")
    t0 = time.time()
    proc = subprocess.Popen(clang_cmd(clang, ck, arch, src, out, flags), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    stderr = proc.stderr.read()
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    res = {"src": src, "seconds": time.time() - t0, "cpu": usage.ru_utime + usage.ru_stime,
           "ok": proc.returncode == 0, "asm": out}
    if proc.returncode:
        res["error"] = "\n".join(x for x in stderr.splitlines() if "error" in x)[:2000] or stderr[-2000:]
    return res


_META = {"vgpr": r"\.vgpr_count:\s+(\d+)", "agpr": r"\.agpr_count:\s+(\d+)", "sgpr": r"\.sgpr_count:\s+(\d+)",
         "vgpr_spill": r"\.vgpr_spill_count:\s+(\d+)", "sgpr_spill": r"\.sgpr_spill_count:\s+(\d+)",
         "lds": r"\.group_segment_fixed_size:\s+(\d+)", "scratch": r"\.private_segment_fixed_size:\s+(\d+)"}


def parse_amdgcn(text: str) -> list[dict]:
    """One dict per kernel in an amdgcn .s: register/LDS figures from the metadata, MFMA and
    call counts from the kernel's own body, occupancy from the comment block after it."""
    meta = {}
    if "amdhsa.kernels:" in text:
        section = text.split("amdhsa.kernels:", 1)[1]
        for chunk in re.split(r"\n  - ", section)[1:]:
            name = re.search(r"\.name:\s+(\S+)", chunk)
            if name:
                meta[name.group(1)] = {k: int(m.group(1)) if (m := re.search(p, chunk)) else 0
                                       for k, p in _META.items()}
    kernels = []
    for name, fields in meta.items():
        start = text.find(f"\n{name}:")
        end = text.find(".Lfunc_end", start)
        body = text[start:end] if start >= 0 else ""
        occ = re.search(r"; Occupancy:\s+(\d+)", text[end:]) if end >= 0 else None
        kernels.append(dict(name=name, **fields, occupancy=int(occ.group(1)) if occ else 0,
                            mfma=len(re.findall(r"^\s*v_mfma", body, re.M)),
                            calls=len(re.findall(r"^\s*s_swappc", body, re.M)), libm_calls=libm_calls(body)))
    return kernels


def libm_calls(body: str) -> int:
    """Calls (s_swappc) to ROCm's device math library (__ocml_*), found by the symbol whose address went
    into the called register pair: with no device libraries (-nogpulib) their bodies cannot be inlined."""
    target, n = {}, 0
    for line in body.splitlines():
        m = re.match(r"\s*s_add_u32\s+s(\d+),\s*s\d+,\s*(\S+)@rel32@lo", line)
        if m:
            target[m[1]] = m[2]
        m = re.match(r"\s*s_swappc_b64\s+s\[\d+:\d+\],\s*s\[(\d+):\d+\]", line)
        if m and target.get(m[1], "").startswith("__ocml_"):
            n += 1
    return n


def shipped_words(totals: dict) -> str:
    return (f"{totals['fwd']} forward + {totals['bwd']} backward + {totals['kvcache']} KV-cache (split-KV, "
            "combine and appendkv) kernels")


def short(src: Path) -> str:
    # drop the long tile description from CK's file name, keep the kind and features
    name = re.sub(r"_b\d+x\d[\dx]*(_r[\dx]+)*(_w[\dx]+)*", "", src.stem)
    for noise in ("_gfx9", "_nskip", "_nsquant", "_ntrload", "_qr_async_vr"):
        name = name.replace(noise, "")
    return name


# ---------------------------------------------------------------- the CK check

def run_ck(args) -> int:
    ck, source = locate_ck_and_source(args.ck)
    try:   # before anything is generated or compiled: results must be of the pinned CK
        ck_pin.verify(ck, source=source)
    except ck_pin.CKPinMismatch as e:
        print(f"ck_compile_check: {e}", file=sys.stderr)
        return 2
    clang = args.clang
    if not shutil.which(clang):
        print(f"ck_compile_check: {clang} not found (apt-get install clang-22 lld-22 llvm-22)", file=sys.stderr)
        return 2
    work = Path(args.out).resolve()
    shutil.rmtree(work, ignore_errors=True)
    t_start = time.time()
    clang_version = subprocess.run([clang, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"CK: {ck}\ncompiler: {clang_version}\narch: {args.arch}, jobs: {args.jobs}")

    # 1. the whole shipped set through CK's codegen: instance count, and its dispatchers compile
    full = work / "full"
    shipped = build_ck.generate(ck, full, [args.arch])
    counts = build_ck.count_instances(p for p in shipped if "_api" not in p.name)
    totals = build_ck.group_totals(counts)
    print(f"shipped set (setup.py): {shipped_words(totals)} for {args.arch}")
    print("  " + ", ".join(f"{kind} d{h}: {n}" for (kind, h), n in counts.items()))
    failures = []
    if totals != build_ck.SHIPPED_COUNTS:
        failures.append(f"the shipped set has {shipped_words(totals)}, build_ck.SHIPPED_COUNTS says "
                        f"{shipped_words(build_ck.SHIPPED_COUNTS)}: a filter or the CK pin changed the set")

    # 2. the subset's kernels
    jobs = []   # (label, src, expect_mfma)
    for i, (label, api, filt) in enumerate(SUBSET):
        if args.match and not fnmatch.fnmatch(label, args.match):
            continue
        files = [p for p in build_ck.generate(ck, work / f"sub{i}", [args.arch], api=api, filters=filt)
                 if "api" not in p.name]
        if not files:
            print(f"FAIL: codegen gave no kernel for {label!r} ({filt})")
            return 1
        if api == "fwd":
            jobs.append((label, files[0], True))
        elif api == "fwd_appendkv":  # copies and rotates: no matrix multiply
            jobs.append((label, files[0], False))
        elif api == "fwd_splitkv":   # the split-KV kernel; the combine kernel (no MFMA) once
            jobs.append((label, next(f for f in files if f.name.startswith("fmha_fwd_splitkv_d")), True))
            if not any(j[1].name.startswith("fmha_fwd_splitkv_combine_") for j in jobs):
                jobs.append((label, next(f for f in files if f.name.startswith("fmha_fwd_splitkv_combine_")
                                         and "_lse_" in f.name), False))
        else:   # the first of each backward kernel kind; only dq_dk_dv multiplies (MFMA)
            for kind in ("fmha_bwd_dot_do_o_", "fmha_bwd_d", "fmha_bwd_convert_dq_"):
                f = next(f for f in files if f.name.startswith(kind) and (kind != "fmha_bwd_d" or
                                                                           f.name[len(kind)].isdigit()))
                jobs.append((label, f, kind == "fmha_bwd_d"))
    # 3. our glue and CK's dispatchers of the shipped set (host code in a device compile: must parse)
    glue = [("glue", ROOT / "csrc" / "ck_fwd.hip", None), ("glue", ROOT / "csrc" / "ck_bwd.hip", None),
            ("dispatch", full / "fmha_fwd_api.cpp", None), ("dispatch", full / "fmha_bwd_api.cpp", None),
            ("dispatch", full / "fmha_fwd_splitkv_api.cpp", None),
            ("dispatch", full / "fmha_fwd_appendkv_api.cpp", None)]
    asm_dir = work / "asm"
    asm_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = {pool.submit(compile_one, clang, ck, args.arch, src, asm_dir): (label, src, exp)
                for label, src, exp in jobs + glue}
        for fut in cf.as_completed(futs):
            label, src, expect = futs[fut]
            res = fut.result()
            print(f"  compiled {src.name[:90]} in {res['seconds']:.0f}s ({res['cpu']:.0f} s CPU)"
                  f"{'' if res['ok'] else '  FAILED'}", flush=True)
            if not res["ok"]:
                failures.append(f"{src.name}: does not compile:\n{res['error']}")
                continue
            if expect is None:
                continue
            kernels = parse_amdgcn(res["asm"].read_text())
            if not kernels:
                failures.append(f"{src.name}: no kernel in the output")
            for i, k in enumerate(kernels):   # a file's kernels (instances of one template) told apart by number
                name = short(src) + (f" [{i + 1}/{len(kernels)}]" if len(kernels) > 1 else "")
                rows.append(dict(label=label, kernel=name, seconds=res["seconds"], cpu=res["cpu"], src=src, **k))
                if expect and k["mfma"] == 0:
                    failures.append(f"{src.name}: no MFMA instruction")
                if k["calls"] > k["libm_calls"]:
                    failures.append(f"{src.name}: {k['calls'] - k['libm_calls']} calls (s_swappc) in the kernel")
    order = {label: i for i, (label, _, _) in enumerate(SUBSET)}
    rows.sort(key=lambda r: (order[r["label"]], r["kernel"]))
    # 4. the spill gate: a kernel that spills with our flags is compiled again with CK's example flags
    spill_notes = spill_gate(clang, ck, args.arch, rows, work / "asm_ck_flags", args.jobs, failures)
    table = format_table(rows)
    print(table)
    for note in spill_notes:
        print("  " + note)
    # 5. build time by arithmetic: the measured seconds per kernel kind times the instance counts (with --match,
    # the other kinds' seconds from the results file's rows)
    prior = prior_results(Path(args.results), args.match) if args.match and args.results else None
    estimate = build_time_table(ck, args.arch, rows + (prior["rows"] if prior else []), counts)
    print(estimate)
    elapsed = time.time() - t_start
    status = "FAILED" if failures else "passed"
    print(f"ck_compile_check: {len(rows)} kernels + {len(glue)} glue/dispatch units, {status}, {elapsed / 60:.1f} min")
    for f in failures:
        print("FAIL:", f)
    if args.results and not failures:
        if prior:
            table, spill_notes = merge_results(table, spill_notes, prior)
        write_results(Path(args.results), table, clang_version, args, elapsed, counts, spill_notes, estimate, prior)
    return 1 if failures else 0


def direction_of(kernel: str) -> str:
    return "fwd" if kernel.startswith("fmha_fwd") else "bwd"


def spill_gate(clang, ck, arch, rows, out_dir: Path, jobs: int, failures: list) -> list[str]:
    """Compile every kernel that spills with our flags again with CK's own example flags (build_ck.ck_example_flags).
    Spills there too: the compiler's (recorded, not a failure). None there: our flags' (a failure)."""
    spilling = {r["src"]: r for r in rows if r["vgpr_spill"] or r["sgpr_spill"]}
    for r in rows:
        r["ck_flags_spill"] = "-"
    if not spilling:
        return ["no kernel spills with fa_ck's flags"]
    out_dir.mkdir(parents=True, exist_ok=True)
    notes = []
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(compile_one, clang, ck, arch, src, out_dir,
                            build_ck.ck_example_flags(direction_of(src.name))): src for src in spilling}
        for fut in cf.as_completed(futs):
            src, res = futs[fut], fut.result()
            print(f"  compiled {src.name[:90]} with CK's example flags in {res['seconds']:.0f}s "
                  f"({res['cpu']:.0f} s CPU)"
                  f"{'' if res['ok'] else '  FAILED'}", flush=True)
            if not res["ok"]:
                failures.append(f"{src.name}: does not compile with CK's example flags:\n{res['error']}")
                continue
            theirs = {k["name"]: k for k in parse_amdgcn(res["asm"].read_text())}
            for r in rows:
                if r["src"] != src or r["name"] not in theirs:
                    continue
                t = theirs[r["name"]]
                r["ck_flags_spill"] = f"{t['vgpr_spill']}/{t['sgpr_spill']}"
                ours = f"{r['vgpr_spill']} VGPRs/{r['sgpr_spill']} SGPRs ({r['scratch']} B scratch)"
                if t["vgpr_spill"] or t["sgpr_spill"]:
                    libm = (f", with {r['libm_calls']} calls to __ocml_* math that a ROCm build inlines"
                            if r.get("libm_calls") else "")
                    notes.append(f"{r['kernel']}: spills {ours} with fa_ck's flags and {t['vgpr_spill']}/"
                                 f"{t['sgpr_spill']} ({t['scratch']} B) with CK's example flags: the compiler's"
                                 f"{libm}")
                else:
                    failures.append(f"{r['kernel']}: spills {ours} with fa_ck's flags, none with CK's example "
                                    "flags (build_ck.ck_example_flags): fa_ck's flags cause it")
    return sorted(notes)


# FA_CK_HDIMS choices the build-time table shows (None: the default, every head dim)
HDIM_CHOICES = (None, (64, 128, 256), (64, 128), (128,), (64,))


def per_kind_seconds(rows) -> dict[tuple[str, int], float]:
    """Mean measured compile CPU seconds (wall seconds where there is no CPU figure) per (kernel kind, head dim)."""
    seconds: dict[tuple[str, int], list[float]] = {}
    for r in rows:
        seconds.setdefault(build_ck.kernel_kind(r["kernel"]), []).append(r.get("cpu", r["seconds"]))
    return {k: sum(v) / len(v) for k, v in seconds.items()}


def seconds_for(measured: dict, kind: str, hdim: int) -> tuple[float, str]:
    """Measured seconds for (kind, hdim); else the nearest measured head dim of that kind (the larger one on a
    tie, the largest for head dims above every measured one), with where it came from."""
    if (kind, hdim) in measured:
        return measured[(kind, hdim)], "measured"
    dims = sorted(h for k, h in measured if k == kind)
    near = min(dims, key=lambda h: (abs(h - hdim), -h))
    return measured[(kind, near)], f"d{near}'s"


BORROWED_NAMES = {"fwd_splitkv": "split-KV", "fwd_splitkv_combine": "combine", "fwd_appendkv": "appendkv"}


def build_time_table(ck, arch, rows, counts, cores: int = 64) -> str:
    measured = per_kind_seconds(rows)
    lines = ["| FA_CK_HDIMS | forward kernels | backward kernels | KV-cache kernels | core-hours | "
             "wall on 64 cores (min) | head dims timed from another's |", "|---|---|---|---|---|---|---|"]
    for hd in HDIM_CHOICES:
        c = counts if hd is None else build_ck.count_instances(
            build_ck.list_instances(ck, [arch], hdims=list(hd)))
        total, borrowed = 0.0, set()
        for (kind, h), n in c.items():
            sec, src = seconds_for(measured, kind, h)
            total += n * sec
            if src != "measured":
                borrowed.add(f"d{h} {BORROWED_NAMES.get(kind, build_ck.KIND_GROUP[kind])} ({src})")
        g = build_ck.group_totals(c)
        longest = max(seconds_for(measured, k, h)[0] for (k, h) in c)
        wall = max(total / cores, longest) / 60
        name = "all (default)" if hd is None else ",".join(map(str, hd))
        lines.append(f"| {name} | {g['fwd']} | {g['bwd']} | {g['kvcache']} | {total / 3600:.1f} | {wall:.0f} | "
                     f"{', '.join(sorted(borrowed)) or '-'} |")
    return "\n".join(lines)


def calls_cell(r) -> str:
    return f"{r['calls']} ({r['libm_calls']} __ocml)" if r.get("libm_calls") else str(r["calls"])


def format_table(rows) -> str:
    head = ("| instance | kernel | VGPR (incl. AGPR) | AGPR | SGPR | VGPR spill | SGPR spill | scratch B | LDS B "
            "| waves/SIMD | MFMA | calls | compile s (wall) | compile s (CPU) | spill V/S, CK's flags |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['kernel']} | {r['vgpr']} | {r['agpr']} | {r['sgpr']} | "
                     f"{r['vgpr_spill']} | {r['sgpr_spill']} | {r['scratch']} | {r['lds']} | {r['occupancy']} | "
                     f"{r['mfma']} | {calls_cell(r)} | {r['seconds']:.0f} | {r.get('cpu', 0):.0f} | "
                     f"{r.get('ck_flags_spill', '-')} |")
    return "\n".join(lines)


def prior_results(path: Path, match: str) -> dict | None:
    """From a results file: its date, and its table rows and spill notes of the subset entries not matching `match`
    (rows: dicts with label, kernel, seconds, cpu and the markdown line). None without a file."""
    if not path.is_file():
        return None
    text = path.read_text()
    date = re.search(r"^- date: (\S+)", text, re.M)
    rows = []
    for line in text.split("\n\nSpill gate", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 15 and cells[0] in {label for label, _, _ in SUBSET} and not fnmatch.fnmatch(cells[0], match):
            rows.append(dict(label=cells[0], kernel=cells[1], seconds=float(cells[12]), cpu=float(cells[13]),
                             line=line))
    kernels = {r["kernel"] for r in rows}
    notes = re.findall(r"^- (.+)$", text.split("Spill gate", 1)[1].split("\n\nInstances", 1)[0], re.M) \
        if "Spill gate" in text else []
    return {"date": date[1] if date else "?", "rows": rows, "match": match,
            "notes": [n for n in notes if n.split(":", 1)[0] in kernels]}


def merge_results(table: str, notes: list[str], prior: dict) -> tuple[str, list[str]]:
    """This run's table rows and spill notes together with the prior file's of the other subset entries, in SUBSET
    order."""
    head, new = table.splitlines()[:2], table.splitlines()[2:]
    by_label: dict[str, list[str]] = {}
    for line in [r["line"] for r in prior["rows"]] + new:
        by_label.setdefault(line.strip("|").split("|")[0].strip(), []).append(line)
    lines = head + [line for label, _, _ in SUBSET for line in by_label.get(label, [])]
    ours = [n for n in notes if not n.startswith("no kernel spills")]
    return "\n".join(lines), sorted(ours + prior["notes"]) or notes


def write_results(path: Path, table: str, clang_version: str, args, elapsed: float, counts: dict,
                  spill_notes: list[str], estimate: str, prior: dict | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    date, command = datetime.date.today().isoformat(), f"python tools/ck_compile_check.py --jobs {args.jobs}"
    if prior:
        command += f" --match '{prior['match']}'"
        date += f" (the rows matching `{prior['match']}`; the other rows are of {prior['date']})"
    # keep what follows the CK part (the Triton table is added by hand from `--triton`)
    tail = ""
    if path.is_file() and "\nTriton (" in path.read_text():
        tail = "\nTriton (" + path.read_text().split("\nTriton (", 1)[1]
    dims = sorted({h for _, h in counts})
    count_rows = "\n".join(f"| {kind} | " + " | ".join(str(counts.get((kind, h), 0)) for h in dims) +
                           f" | {sum(counts.get((kind, h), 0) for h in dims)} |" for kind in build_ck.KERNEL_KINDS)
    ours = " ".join(our_flags())
    path.write_text(
        f"# CK FMHA compile check, {args.arch}\n\n"
        f"- date: {date}\n- compiler: {clang_version} (upstream, device-only, "
        f"HIP stub tools/hip_stub; not ROCm's compiler)\n- CK: ROCm/composable_kernel {CK_COMMIT} "
        f"(files checked against tools/ck_pin.sha256)\n"
        f"- command: `{command}` ({elapsed / 60:.1f} min on "
        f"{os.cpu_count()} cores, shared)\n- shipped set (setup.py, this arch): "
        f"{shipped_words(build_ck.group_totals(counts))}\n"
        f"- fa_ck's flags (setup.py's for HIP 6.2-7.1 less `-mllvm -amdgpu-coerce-illegal-types=1`, which "
        f"clang 22 rejects, and the inlining pair `{' '.join(build_ck.ROCM_ONLY_FLAGS)}`): `{ours}`\n"
        f"- CK's example flags (spill gate): fwd `{' '.join(build_ck.ck_example_flags('fwd'))}`, bwd "
        f"`{' '.join(build_ck.ck_example_flags('bwd'))}`\n\n"
        "Register and spill figures come from upstream clang, not ROCm's: CK chooses code paths by compiler "
        "and HIP version, so a ROCm build can differ (see docs/rocm.md). What this proves: the kernels "
        "compile for gfx942, the attention kernels use MFMA, none makes calls (but to __ocml_* device math, "
        "which this stub build cannot inline), and spill no more with fa_ck's flags than with CK's own example "
        "flags. These kernels have not been run on an MI300X.\n\n"
        f"{table}\n\nSpill gate (a kernel that spills with fa_ck's flags, compiled again with CK's example flags):\n\n"
        + "".join(f"- {n}\n" for n in spill_notes) +
        "\nInstances generated per kernel kind and head dim (the shipped set, build_ck.SHIPPED_COUNTS):\n\n"
        "| kind | " + " | ".join(f"d{h}" for h in dims) + " | all |\n|" + "---|" * (len(dims) + 2) + "\n"
        f"{count_rows}\n\n"
        "Build time by arithmetic (tools/ck_compile_check.py `build_time_table`): each kernel kind's mean compile "
        "CPU seconds above (the compiler's own user + system time; its wall time on these shared cores is longer) "
        "times its instance count, per head dim, from "
        "CK's codegen listing for each FA_CK_HDIMS; wall time is core time / 64, or the longest single compile if "
        "that is longer (perfect packing, one architecture). Head dims the check does not compile take the nearest "
        "compiled head dim's seconds (named in the last column): an underestimate for d192 and d256, whose tiles "
        "are larger.\n\n"
        f"{estimate}\n{tail}")
    print(f"wrote {path}")


# ---------------------------------------------------------------- Triton

# an NVIDIA matrix instruction in PTX: sm90's wgmma, sm100's tcgen05.mma, mma.sync elsewhere
# (sm80 / sm89 / sm120); the rest of the mnemonic (\S*) names its operand types
NVIDIA_MMA = r"\b(?:wgmma\.mma_async|tcgen05\.mma|mma\.sync)\S*"


def compile_triton(fn, signature: dict, constexprs: dict, target: str | tuple, num_warps: int = 4,
                   num_stages: int = 2, divisible: tuple[str, ...] | None = None, gluon: bool = False) -> dict:
    """Compile a @triton.jit kernel for a GPU that need not be present; return its resource figures.

    signature: {arg name: "*fp16" | "i32" | "fp32" | "constexpr"}; constexprs: {name: value};
    target: ("hip", "gfx942", 64), ("cuda", 90, 32), or "gfx942" / "sm90"; divisible: args known to be
    multiples of 16 (default: every pointer), which is what lets loads be 16 bytes wide;
    gluon: fn is a @gluon.jit kernel.
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    if gluon:
        from triton.experimental.gluon._runtime import GluonASTSource as ASTSource  # noqa: N814

    if isinstance(target, str):
        target = ("cuda", int(target[2:]), 32) if target.startswith("sm") else ("hip", target, 64)
    names = list(signature)
    divisible = divisible if divisible is not None else tuple(n for n, t in signature.items() if t.startswith("*"))
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in divisible}
    src = ASTSource(fn=fn, signature=signature, constexprs={(names.index(k),): v for k, v in constexprs.items()},
                    attrs=attrs)
    t0 = time.time()
    k = triton.compile(src, target=GPUTarget(*target), options={"num_warps": num_warps, "num_stages": num_stages})
    stats = {"target": f"{target[0]}:{target[1]}", "num_warps": num_warps, "num_stages": num_stages,
             "lds": k.metadata.shared, "seconds": round(time.time() - t0, 1)}
    if target[0] == "hip":
        ks = parse_amdgcn(k.asm["amdgcn"])
        kk = ks[0] if ks else {}
        stats.update({f: kk.get(f, 0) for f in ("vgpr", "agpr", "sgpr", "vgpr_spill", "sgpr_spill",
                                               "scratch", "occupancy", "mfma", "calls")})
        stats["lds"] = k.metadata.shared        # Triton's LDS is dynamic: the amdgcn says 0
        stats["matrix_ops"] = stats["mfma"]
    else:
        stats.update(_cuda_usage(k.asm["cubin"]))
        stats["matrix_ops"] = len(re.findall(NVIDIA_MMA, k.asm["ptx"]))
        if "wgmma.mma_async" in k.asm["ptx"]:
            stats.update(_wgmma_notes(k.asm["ptx"]))
        stats["mfma"] = 0
    return stats


def _wgmma_notes(ptx: str) -> dict:
    """What ptxas says of a kernel's wgmma pipelining (its -v notes, which Triton does not show):
    wgmma_serialised, the reason when it made every wgmma wait for the one before (C7512: not
    enough registers; C7514: other instructions touch the accumulators while a wgmma runs), and
    injected_waits, the waits it added so other instructions may use registers a wgmma defines
    (C7517)."""
    import tempfile
    import triton
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    arch = re.search(r"^\.target\s+(sm_\w+)", ptx, re.M).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        out = subprocess.run([str(tool), f"-arch={arch}", "-v", str(src), "-o", str(Path(tmp) / "k.cubin")],
                             capture_output=True, text=True).stderr
    serialised = [c for c in ("C7512", "C7514") if f"({c})" in out]
    return {"wgmma_serialised": " ".join(serialised), "injected_waits": out.count("(C7517)")}


def _cuda_usage(cubin: bytes) -> dict:
    import tempfile
    import triton
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([str(tool), "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    g = lambda p: int(m.group(1)) if (m := re.search(p, out)) else 0  # noqa: E731
    return {"vgpr": g(r"REG:(\d+)"), "stack": g(r"STACK:(\d+)"), "smem": g(r"SHARED:(\d+)"),
            "vgpr_spill": g(r"STACK:(\d+)"), "agpr": 0, "sgpr": 0, "occupancy": 0, "calls": 0}


def _toy_dot_kernel():
    """A small tiled matmul with tl.dot: enough to prove compile_triton on both vendors."""
    import triton
    import triton.language as tl

    @triton.jit
    def toy_dot(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :],
                        mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :],
                        mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))
    return toy_dot


def run_triton(args) -> int:
    fn = _toy_dot_kernel()
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
    consts = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
    div = ("a_ptr", "b_ptr", "c_ptr", "stride_am", "stride_bk", "stride_cm")
    failures = []
    print("| kernel | target | warps | stages | regs (VGPR) | AGPR | SGPR | spill | LDS/smem B | waves/SIMD "
          "| MFMA/wgmma | compile s |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for target in (("hip", "gfx942", 64), ("cuda", 90, 32)):
        try:
            s = compile_triton(fn, sig, consts, target, num_warps=4, num_stages=2, divisible=div)
        except Exception as e:  # noqa: BLE001 - report every failure in the table run
            failures.append(f"toy_dot {target}: {type(e).__name__}: {e}")
            continue
        print(f"| toy_dot | {s['target']} | 4 | 2 | {s['vgpr']} | {s['agpr']} | {s['sgpr']} | {s['vgpr_spill']} "
              f"| {s['lds']} | {s['occupancy']} | {s['matrix_ops']} | {s['seconds']} |")
        if s["matrix_ops"] == 0:
            failures.append(f"toy_dot {target}: no MFMA/wgmma")
        if target[0] == "hip" and s["vgpr_spill"]:
            failures.append(f"toy_dot {target}: spills {s['vgpr_spill']} VGPRs")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triton", action="store_true", help="compile Triton kernels instead of CK's")
    ap.add_argument("--ck", help="composable_kernel tree (default: $CK_DIR, submodule, or the aiter wheel)")
    ap.add_argument("--arch", default="gfx942", choices=build_ck.SUPPORTED_ARCHS)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--clang", default=os.environ.get("FA_CK_CLANG", "clang++-22"))
    ap.add_argument("--out", default=str(ROOT / "build" / "ck_check"), help="work directory (build output)")
    ap.add_argument("--results", default=None,
                    help="write the table here as markdown, e.g. bench/results/ck_compile_check_gfx942.md")
    ap.add_argument("--match", default=None,
                    help="compile only the subset entries whose label matches this fnmatch pattern (e.g. "
                         "'kvcache append*'); with --results, replace only their rows")
    args = ap.parse_args(argv)
    return run_triton(args) if args.triton else run_ck(args)


if __name__ == "__main__":
    sys.exit(main())
