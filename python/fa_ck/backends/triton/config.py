"""The one place that decides how the triton backend runs a call.

`forward_config(spec)` and `backward_config(spec)` are pure functions of a frozen `CallSpec` (the
call's shapes, dtypes and features, the device's architecture and the facts the host code read off
the tensors), memoised on it; `decode_config` likewise of a `DecodeSpec` (KV-cache decoding). They
return frozen configs, one per kernel, that the launchers launch as they are. Each kernel's config
is worked out in two steps:

1. its knobs (the fields marked KNOB: which kernel, the tiles, the switches that are real choices)
   from the heuristics below, with FA_CK_TRITON_CONFIG's values on top (a debugging aid, checked
   against the knobs' names) or, under autotune, the tiles it timed fastest;
2. everything else from the knobs and the call, with checks that raise a ValueError naming the
   knob where the kernel cannot take what was asked.

Where a default is about speed, docs/performance.md ("Kernel choices") holds the measurements behind
it; a choice that guards correctness says so beside it.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field

import torch

from . import sizes
from .sizes import block_d

KNOB = {"knob": True}          # field metadata: set by the heuristics, FA_CK_TRITON_CONFIG or autotune
GLUON_WARPS = 4                # a Gluon kernel's consumer warpgroup (a producer warp comes on top)
TMA_MIN_STAGES = 3             # Triton 3.6's ptxas crashes on the TMA forward with 2 stages
DQ_STAGES_MAX = 2              # NVIDIA dQ (forward.py's twin) faulted on 128-row tiles with 3 stages
FWD_FP32_STAGES_MAX = 2        # NVIDIA fp32 forward up to d64 faulted with 3 stages (GQA, causal)
F16_SCORES_QK_MAX = 16.0       # q, k quantised to this max: a score of 128 products stays under f16's 65504
THREE_WG_TILE_COST = 1.5 / 1.06   # a 192-query tile's time in 128-query tiles (measured at d64)


@dataclass(frozen=True)
class CallSpec:
    """A call as the host code saw it: everything its configs depend on."""
    arch: str                    # device.arch(): "cuda:sm90", "hip:gfx942", "interpreter"
    dtype: torch.dtype           # q's
    head_dim: int
    batch: int                   # (varlen: the number of sequences)
    seqlen_q: int                # (varlen: the longest)
    seqlen_k: int
    heads_q: int
    heads_kv: int
    window_left: int = -1        # causal is window_right 0
    window_right: int = -1
    varlen: bool = False
    softcap: bool = False
    alibi: bool = False
    dropout: bool = False
    deterministic: bool = False
    fp8: bool = False
    fp8_inputs: bool = False     # the caller's fp8 q, k, v (else 16-bit ones that fa_ck quantises)
    scale_positive: bool = True  # softmax scale > 0
    scale_log2_normal: bool = True   # scale / ln 2 is a positive normal float32
    out_bytes: int = 2           # bytes per element of out
    sm_count: int = 132
    # facts about this call's tensors (buffers.tma_ok, buffers.host_desc_ok, gluon_launch.gluon_ok)
    tma_ok: bool = False         # forward: TMA can read k and v as the kernel reads them
    q_tma_ok: bool = False       # fp8 of 16-bit inputs: TMA can read q as it is
    gluon_ok: bool = False       # the Gluon kernels take these tensors and features
    host_desc_ok: bool = False   # host-made descriptors can describe q, k, v (and dO)
    dkdv_tma_ok: bool = False    # backward: dK and dV can leave by TMA stores
    dq_tma_ok: bool = False      # backward: dQ can leave by TMA stores
    overrides: str = ""          # FA_CK_TRITON_CONFIG

    @property
    def group(self) -> int:
        return self.heads_q // self.heads_kv

    @property
    def masked(self) -> bool:
        return self.window_left >= 0 or self.window_right >= 0

    @property
    def causal_only(self) -> bool:
        return self.window_right == 0 and self.window_left < 0

    @property
    def sm(self) -> int:
        """The NVIDIA compute capability as 90, 80, ...; 0 elsewhere."""
        return int(self.arch.split("sm")[-1]) if self.arch.startswith("cuda:sm") else 0

    @property
    def raw_max(self) -> bool:
        """The softmax may take the row max of raw scores: the score is q.k times a positive
        normal scale (no softcap or ALiBi), so the order of the scores is the raw one."""
        return self.scale_log2_normal and not self.softcap and not self.alibi


@dataclass(frozen=True)
class FwdConfig:
    gluon: bool = field(metadata=KNOB)       # forward_gluon.py (sm90) rather than forward.py
    block_m: int = field(metadata=KNOB)      # queries per tile (Gluon: 128, or 192 = three warpgroups)
    block_n: int = field(metadata=KNOB)      # keys per block
    num_warps: int = field(metadata=KNOB)
    num_stages: int = field(metadata=KNOB)   # (Gluon: the depth of the K / V rings)
    tma: bool = field(metadata=KNOB)         # forward.py: K and V tiles through TMA
    host_desc: bool = field(metadata=KNOB)   # Gluon: q, k, v as host-made TMA descriptors
    tma_store: bool = field(metadata=KNOB)   # Gluon: out through shared memory as a TMA store
    late_sum: bool = field(metadata=KNOB)    # Gluon: a block's row sums added in the next block
    f16_scores: bool = field(metadata=KNOB)  # Gluon fp8: QK^T summed in f16, the softmax on f16 pairs
    f16_wide: bool = field(metadata=KNOB)    # Gluon fp8 f16 scores: the wide step on every tile
    q16_early: bool = field(metadata=KNOB)   # Gluon fp8: q's 16-bit tile released once rounded
    raw_max: bool = False                    # the row max of raw scores (exact: CallSpec.raw_max)
    q_convert: bool = False                  # Gluon fp8: the kernel rounds 16-bit q itself
    p_regs: bool = False                     # Gluon fp8: P stays in registers (v's keys reordered)
    qk_max: float = 0.0                      # fp8: q's and k's quantised max (0: the format's)
    even_n: bool = False                     # Gluon: the keys fill whole blocks
    diag_first: bool = False                 # Gluon: causal tiles stream their diagonal block first
    o_cols: int = 0                          # Gluon TMA store: columns of out staged per store
    programs: int = 0                        # Gluon: the persistent grid


@dataclass(frozen=True)
class DkdvConfig:
    gluon: bool = field(metadata=KNOB)       # backward_gluon.py (sm90) rather than backward.py
    block_m: int = field(metadata=KNOB)      # queries per step
    block_n: int = field(metadata=KNOB)      # keys per program or unit
    num_warps: int = field(metadata=KNOB)
    num_stages: int = field(metadata=KNOB)
    one_pass: bool = field(metadata=KNOB)    # Gluon: dQ added here by TMA reduce-adds (no dQ kernel)
    host_desc: bool = field(metadata=KNOB)   # Gluon: host-made descriptors (always for GQA)
    from_zero: bool = field(metadata=KNOB)   # Gluon: S^T and dP^T multiplies start from zero
    persistent: bool = field(metadata=KNOB)  # Gluon: at most one program per SM, units in turn
    dynamic: bool = field(metadata=KNOB)     # Gluon persistent one pass: units from an atomic counter
    tma_store: bool = field(metadata=KNOB)   # Gluon: dK and dV through shared memory as TMA stores
    num_kv: int = 1                          # Gluon persistent: K / V buffers (the next unit's loads early)
    tail_heads: int = 0                      # Gluon dynamic causal: heads dealt heaviest unit first
    programs: int = 0                        # Gluon: the grid


@dataclass(frozen=True)
class DqConfig:
    gluon: bool = field(metadata=KNOB)       # dq_gluon.py (sm90) rather than backward.py
    block_m: int = field(metadata=KNOB)
    block_n: int = field(metadata=KNOB)
    num_warps: int = field(metadata=KNOB)
    num_stages: int = field(metadata=KNOB)
    tma_store: bool = False                  # Gluon: dQ leaves by TMA stores


@dataclass(frozen=True)
class BwdConfig:
    dkdv: DkdvConfig
    dq: DqConfig | None                      # None: the dK/dV kernel's one pass computes dQ
    preprocess_block_m: int                  # bwd_preprocess's rows per program
    dq_scale_block: int                      # dq_from_acc's elements per program (one pass)


KERNELS = {"fwd": FwdConfig, "bwd_dkdv": DkdvConfig, "bwd_dq": DqConfig}
COUNTS = ("num_splits",)       # integer knobs besides the tiles


def knobs(kind) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind) if f.metadata.get("knob"))


TILES = ("block_m", "block_n", "num_warps", "num_stages")


# ---------------------------------------------------------------------------------- overrides

@functools.lru_cache(maxsize=64)
def overrides(text: str) -> dict:
    """FA_CK_TRITON_CONFIG: JSON {kernel: {knob: value}}, e.g. '{"bwd_dkdv": {"one_pass": false}}',
    with kernels fwd, bwd_dkdv, bwd_dq and decode and their configs' knobs (any case) -> {kernel: {knob: value}}."""
    if not text.strip():
        return {}
    try:
        table = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"FA_CK_TRITON_CONFIG is not JSON ({e}): {text!r}") from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise ValueError(f"FA_CK_TRITON_CONFIG must map kernel names to objects, got {text!r}")
    out, kinds = {}, {**KERNELS, **DECODE_KERNELS}
    for kernel, asked in table.items():
        if kernel not in kinds:
            raise ValueError(f"FA_CK_TRITON_CONFIG: unknown kernel {kernel!r} (expected one of {sorted(kinds)})")
        allowed = knobs(kinds[kernel])
        values = {name.lower(): value for name, value in asked.items()}
        bad = sorted(set(values) - set(allowed))
        if bad:
            raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: unknown keys {bad} (allowed: {list(allowed)})")
        for name, value in values.items():
            ints = name in TILES or name in COUNTS
            if (type(value) is not int) if ints else (type(value) is not bool):
                raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: {name} must be "
                                 f"{'an integer' if ints else 'true or false'}, got {value!r}")
        out[kernel] = values
    return out


def _asked(spec, kernel: str) -> dict:
    return dict(overrides(spec.overrides).get(kernel, {}))


def _bad(kernel: str, text: str) -> ValueError:
    return ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: {text}")


def _check_tiles(kernel: str, cfg: dict, allow_192: bool = False):
    for name in ("block_m", "block_n"):      # (arange sizes in every kernel)
        size = cfg[name]
        if size == 192 and name == "block_m" and allow_192:
            continue
        if size < 1 or size & (size - 1):
            raise _bad(kernel, f"{name} must be a power of two, got {size}")


def _check_gluon_side(kernel: str, cfg: dict, side: str, rows: int):
    if (cfg[side], cfg["num_warps"]) != (rows, GLUON_WARPS):
        raise _bad(kernel, f"the Gluon kernel has {side} {rows} and num_warps {GLUON_WARPS} (two warpgroups of "
                           f"64 rows); got {side} {cfg[side]}, num_warps {cfg['num_warps']} (set \"gluon\": false "
                           f"for other tiles)")


def _check_smem(kernel: str, what: str, need: int, cfg: dict, tile: str, head_dim: int, hint: str = ""):
    if need > sizes.SM90_BYTES:
        raise _bad(kernel, f"{what} needs {need} bytes of shared memory with {tile} {cfg[tile]} and num_stages "
                           f"{cfg['num_stages']} at head dim {head_dim} (sm90 has {sizes.SM90_BYTES}); use fewer "
                           f"stages or smaller tiles{hint}")


# ---------------------------------------------------------------------------------- tiles

def _tiles(bm, bn, warps, stages) -> dict:
    return {"block_m": bm, "block_n": bn, "num_warps": warps, "num_stages": stages}


def default_tiles(kernel: str, spec: CallSpec, gluon: bool, tma: bool = False) -> dict:
    """Tiles by kernel, architecture, head dim and dtype; on NVIDIA and AMD the choices compile
    without register spills (tools/triton_compile_check.py reads them)."""
    d, wide, arch = block_d(spec.head_dim), spec.dtype == torch.float32, spec.arch
    if gluon:
        if kernel == "fwd":                  # 128 queries; 64 keys past d128 (Q and the rings fit)
            return _tiles(128, 128 if d <= 128 else 64, GLUON_WARPS, 2)
        if kernel == "bwd_dq":               # 3-deep K / V rings; dQ's registers bound the keys
            return _tiles(128, 32 if d > 128 else 64 if d > 64 else 128, GLUON_WARPS, 3)
        return _tiles(64, sizes.dkdv_keys(spec.head_dim), GLUON_WARPS, 2)
    if arch == "interpreter":                # small unequal blocks: CPU tests walk several of both
        return _tiles(16, 32, 4, 1) if kernel == "bwd_dkdv" else _tiles(32, 16, 4, 1)
    if wide and d > 128:                     # fp32 rows of 256: the smallest tiles fit shared memory
        return _tiles(16, 32, 4, 1) if kernel != "fwd" else _tiles(32, 32, 4, 1)
    if arch.startswith("hip"):               # MI300X: 64-wide wavefronts, 512 VGPRs at occupancy 1, 256 at 2
        # 4 warps, the forward's and dQ's of 32 query rows each, so that 32x32 MFMAs compute nothing twice;
        # at d128 the 16-bit forward's 32 keys, dQ's 16 and the masked dK/dV's one stage fit 256 VGPRs (2 waves)
        if kernel == "fwd":
            return _tiles(128, 64 if (d <= 64 and not wide) or (spec.fp8 and d <= 128) else 32, 4, 2)
        if kernel == "bwd_dkdv":
            return _tiles(16, 64, 4, 1 if 64 < d <= 128 and spec.masked and not wide else 2)
        return _tiles(128, 32 if d <= 64 and not wide else 16, 4, 2)
    sm = spec.sm or 80
    stages = 3 if sm >= 80 else 2
    if kernel == "fwd":
        if d <= 64:
            return _tiles(128, 64, 4, min(stages, FWD_FP32_STAGES_MAX) if wide else stages)
        if d <= 128:
            return _tiles(128, 128, 8, stages) if tma and not wide else _tiles(128, 32 if wide else 64, 8, stages)
        return _tiles(64, 32 if wide else 64, 8, 2)
    if kernel == "bwd_dkdv":
        if d <= 64:
            return _tiles(32, 64 if wide else 128, 8, stages)
        if d <= 128:
            return _tiles(32, 128 if not wide and sm >= 90 else 64, 8, stages)
        return _tiles(16, 64, 8, 2)
    if d <= 128:                             # (correctness: see dq_breaks_on_nvidia)
        return _tiles(64 if wide else 128, 32, 8, min(stages, DQ_STAGES_MAX))
    return _tiles(64, 32, 8, 2)


def dq_breaks_on_nvidia(tiles: dict) -> bool:
    """backward.py's dQ tiles that faulted or computed wrong results on the H200 under Triton 3.6:
    128-row tiles with more than DQ_STAGES_MAX stages or more than 32 keys."""
    return tiles["block_m"] >= 128 and (tiles["num_stages"] > DQ_STAGES_MAX or tiles["block_n"] > 32)


def candidates(kernel: str, spec: CallSpec, cfg) -> list[dict]:
    """The tiles autotune times for a call whose default config is cfg: a short list around it
    (each costs a compile), never a tiling that is known to break."""
    d, gluon = block_d(spec.head_dim), cfg.gluon
    own = {name: getattr(cfg, name) for name in TILES}
    if gluon and kernel == "fwd":
        out = [_tiles(128, bn, GLUON_WARPS, st) for bn in (128, 64, 32) for st in (2, 3)]
        if 32 <= d <= 64 and spec.dtype in (torch.float16, torch.bfloat16):
            out += [_tiles(192, 128, GLUON_WARPS, st) for st in (2, 3)]
        out = [c for c in out if (d <= 128 and c["block_n"] > 32) or d > 128]
    elif gluon and kernel == "bwd_dq":
        out = ([_tiles(128, 32, GLUON_WARPS, st) for st in (3, 2)] if d > 128 else
               [_tiles(128, bn, GLUON_WARPS, st) for bn in ((64, 128) if d <= 64 else (64,)) for st in (2, 3)])
    elif gluon:
        out = ([_tiles(64, 64, GLUON_WARPS, 2), _tiles(128, 64, GLUON_WARPS, 1)] if d > 128 else
               [_tiles(bm, 128, GLUON_WARPS, st) for bm in (64, 32) for st in (2, 3)] if d <= 64 else
               [_tiles(64, 128, GLUON_WARPS, 2)] + [_tiles(32, 128, GLUON_WARPS, st) for st in (2, 3)])
    else:
        hip = spec.arch.startswith("hip")
        stages = (1, 2) if hip else (2, 3, 4)
        tiles = ({"fwd": [(128, 64), (128, 128), (64, 64), (128, 32)], "bwd_dkdv": [(32, 128), (32, 64), (16, 64),
                  (64, 128)], "bwd_dq": [(128, 32), (64, 32), (128, 64), (64, 64)]} if d <= 128 else
                 {"fwd": [(64, 64), (64, 32), (32, 64)], "bwd_dkdv": [(16, 64), (16, 32), (32, 32)],
                  "bwd_dq": [(64, 32), (32, 32), (64, 16)]})[kernel]
        out = [_tiles(bm, bn, w, stages[1]) for bm, bn in tiles for w in (4, 8)]
        out += [_tiles(*tiles[0], w, s) for w in (4, 8) for s in (stages[0], stages[-1])]
        if kernel == "bwd_dq" and not hip:
            out = [c for c in out if not dq_breaks_on_nvidia(c)]
        if kernel == "fwd" and not hip and spec.dtype == torch.float32 and d <= 64:
            out = [dict(c, num_stages=min(c["num_stages"], FWD_FP32_STAGES_MAX)) for c in out]
        if kernel == "fwd" and cfg.tma:
            out = [c for c in out if c["num_stages"] >= TMA_MIN_STAGES]
    unique = []
    for c in [own] + out:
        if c not in unique:
            unique.append(c)
    return unique


# ---------------------------------------------------------------------------------- forward

def fwd_whole_blocks(spec: CallSpec, bm: int, bn: int) -> tuple[bool, bool]:
    """(even_n, diag_first) of the Gluon forward. even_n: the keys fill whole blocks. diag_first:
    causal calls whose queries fill whole 128-row tiles and keys whole blocks (128 or 64 keys):
    each warpgroup's one masked block is then the diagonal's, streamed first (the blocks go last
    to first)."""
    even_n = not spec.varlen and spec.seqlen_k % bn == 0
    diag_first = (even_n and bm == 128 and bn in (64, 128) and spec.seqlen_q % bm == 0
                  and spec.window_left < 0 and spec.window_right == 0)
    return even_n, diag_first


def _f16_scores_ok(spec: CallSpec, q_convert: bool, late_sum: bool, bm: int, bn: int) -> bool:
    """Whether the Gluon fp8 forward can sum its scores in f16: fa_ck's own quantisation with q
    rounded in the kernel (q and k then go to F16_SCORES_QK_MAX), row sums a block late, 128
    queries, the raw row max, and no masked block past a warpgroup's first."""
    if not (q_convert and late_sum and bm == 128 and spec.raw_max):
        return False
    even_n, diag_first = fwd_whole_blocks(spec, bm, bn)
    return diag_first or (even_n and not spec.masked)


def _three_warpgroups(spec: CallSpec) -> bool:
    """192 queries per tile (three consumer warpgroups): 16-bit full attention at head dims 17-64 from
    2048 queries and keys, where its fewer, longer tiles take fewer rounds of the SMs."""
    if not (32 <= block_d(spec.head_dim) <= 64 and not spec.masked and not spec.fp8 and not spec.varlen
            and spec.seqlen_q >= 2048 and spec.seqlen_k >= 2048):
        return False
    heads = spec.batch * spec.heads_q
    rounds = [-(-heads * -(-spec.seqlen_q // bm) // max(spec.sm_count, 1)) for bm in (128, 192)]
    return rounds[1] * THREE_WG_TILE_COST < rounds[0]


def _fwd_knobs(spec: CallSpec) -> tuple[dict, dict]:
    """(the forward's knobs by the heuristics, FA_CK_TRITON_CONFIG's)."""
    d, sm, fp8 = block_d(spec.head_dim), spec.sm, spec.fp8
    asked = _asked(spec, "fwd")
    # (the Gluon kernels are Hopper's: asked for elsewhere, forward.py serves)
    gluon = asked.get("gluon", d <= (128 if fp8 else 256) and (not fp8 or d >= 64)) and spec.gluon_ok and sm == 90
    tma = asked.get("tma", sm >= 90 and 64 < d <= 128 and not fp8) and spec.tma_ok and not gluon
    q_convert = fp8 and gluon and not spec.fp8_inputs
    k = {"gluon": gluon, "tma": tma, "host_desc": True, "tma_store": True, "late_sum": True,
         "f16_scores": fp8, "f16_wide": False, "q16_early": fp8}
    k.update({name: asked[name] for name in k if name in asked and name not in ("gluon", "tma")})
    k.update(default_tiles("fwd", spec, gluon, tma))
    if gluon and not fp8 and d == 64 and spec.window_right == 0 and spec.seqlen_k <= 512 \
            and spec.seqlen_q >= spec.seqlen_k:
        k["block_n"] = 64                    # short causal tiles: the next block's QK^T under this softmax
    wide = (q_convert and spec.q_tma_ok and k["f16_scores"] and k["late_sum"] and spec.raw_max and not spec.masked
            and not spec.varlen and spec.seqlen_k % 256 == 0 and (d <= 64 or spec.seqlen_k >= 2048))
    if wide and "block_n" not in asked and sizes.fwd_gluon(spec.head_dim, asked.get("block_m", k["block_m"]), 256,
                                                           asked.get("num_stages", k["num_stages"]), 1,
                                                           q_convert=True) <= sizes.SM90_BYTES:
        k["block_n"] = 256                   # f16 scores take half the registers: 256 keys per block
    if gluon and not asked.get("late_sum") and _three_warpgroups(spec):
        k["block_m"] = 192
    k.update({name: asked[name] for name in TILES if name in asked})
    return k, asked


def _forward(spec: CallSpec, k: dict, asked: dict) -> FwdConfig:
    d, fp8, gluon = block_d(spec.head_dim), spec.fp8, k["gluon"]
    if "f16_wide" in asked and not k["f16_scores"]:
        raise _bad("fwd", "f16_wide is a step of f16_scores' f16 scores, which are off here: drop one")
    _check_tiles("fwd", k, allow_192=gluon)
    bm, bn = k["block_m"], k["block_n"]
    q_convert = fp8 and gluon and not spec.fp8_inputs and spec.q_tma_ok
    if not gluon:
        if k["tma"] and spec.dtype == torch.float32 and d <= 64 and spec.sm:
            raise _bad("fwd", f"tma takes {TMA_MIN_STAGES}+ stages, which fault in the fp32 forward up to head dim 64 "
                              f"under Triton 3.6 (head dim {spec.head_dim}); use \"tma\": false")
        if k["tma"] and k["num_stages"] < TMA_MIN_STAGES and spec.arch != "interpreter":
            raise _bad("fwd", f"tma with num_stages {k['num_stages']} crashes Triton 3.6's ptxas; use "
                              f"{TMA_MIN_STAGES}+ stages or \"tma\": false")
        # (fp8 dots take K >= 32: PV's K is the key block)
        return FwdConfig(**{**k, "block_n": max(bn, 32) if fp8 else bn, "host_desc": False, "tma_store": False,
                            "late_sum": False, "f16_scores": False, "f16_wide": False, "q16_early": False},
                         raw_max=spec.raw_max and not fp8)
    rows = 128
    if bm == 192:
        if fp8 or d > 64:
            raise _bad("fwd", f"block_m 192 (three consumer warpgroups) is for 16-bit inputs at head dims up to 64, "
                              f"got {'fp8' if fp8 else str(spec.dtype)} at head dim {spec.head_dim}")
        if asked.get("late_sum"):
            raise _bad("fwd", "late_sum is in the two-warpgroup Gluon forward only (block_m 128), got block_m 192")
        rows = 192
    _check_gluon_side("fwd", k, "block_m", rows)
    if fp8 and bn < 32:
        raise _bad("fwd", f"the Gluon fp8 forward takes 32 or more keys per block (block_n), got {bn}")
    own_q_convert = fp8 and not spec.fp8_inputs        # (the 16-bit Q tile, counted where it may be)
    _check_smem("fwd", "the Gluon forward", sizes.fwd_gluon(spec.head_dim, bm, bn, k["num_stages"],
                spec.dtype.itemsize if not fp8 else 1, q_convert=own_q_convert), k, "block_n", spec.head_dim,
                " (or f16_scores false)" if own_q_convert else "")
    even_n, diag_first = fwd_whole_blocks(spec, bm, bn)
    late_sum = k["late_sum"] if "late_sum" in asked else (
        bm != 192 and fp8 and (d <= 64 or not spec.masked or diag_first))
    late_sum = late_sum and bm != 192
    f16_scores = k["f16_scores"] and fp8 and _f16_scores_ok(spec, q_convert, late_sum, bm, bn)
    q16_early = k["q16_early"] if "q16_early" in asked else (d > 64 or bn != 256 or spec.seqlen_k <= 2048)
    f16_wide = k["f16_wide"] if "f16_wide" in asked else (bn == 256 and d > 64)
    elem = 1 if fp8 else spec.dtype.itemsize
    host_desc = k["host_desc"] and not spec.varlen and spec.host_desc_ok
    # out's staging tiles beside the rest, where shared memory holds them (counted at the widest out)
    fits = sizes.fwd_gluon(spec.head_dim, bm, bn, k["num_stages"], elem, q_convert=own_q_convert,
                          out_bytes=4 if fp8 else elem) <= sizes.SM90_BYTES
    if k["tma_store"] and not fits and "tma_store" in asked and ("num_stages" in asked or "block_n" in asked):
        raise _bad("fwd", f"tma_store does not fit shared memory beside block_n {bn} and num_stages "
                          f"{k['num_stages']} at head dim {spec.head_dim}; use fewer stages or keys per block")
    tma_store = host_desc and k["tma_store"] and fits and spec.out_bytes == 2
    n_m = -(-spec.seqlen_q // bm)
    per_head = -(-n_m // 2)                  # units: pairs of query blocks (heavy with light)
    units = spec.batch * spec.heads_q * per_head
    programs = coprime_programs(units, per_head, spec.sm_count) if n_m % 2 else min(units, spec.sm_count)
    return FwdConfig(**{**k, "late_sum": late_sum, "f16_scores": f16_scores, "f16_wide": f16_wide and f16_scores,
                        "q16_early": q16_early and q_convert, "host_desc": host_desc, "tma_store": tma_store,
                        "tma": False}, raw_max=spec.raw_max, q_convert=q_convert, p_regs=fp8,
                     qk_max=F16_SCORES_QK_MAX if f16_scores else 0.0,
                     even_n=even_n, diag_first=diag_first,
                     o_cols=sizes.fwd_out_cols(spec.head_dim, bm, bn, k["num_stages"], elem, q_convert, spec.out_bytes),
                     programs=max(1, programs))


@functools.lru_cache(maxsize=4096)
def forward_config(spec: CallSpec) -> FwdConfig:
    """The forward's config for this call."""
    return _forward(spec, *_fwd_knobs(spec))


def forward_with_tiles(spec: CallSpec, tiles: dict) -> FwdConfig:
    """forward_config with other tiles (autotune's candidates)."""
    k, asked = _fwd_knobs(spec)
    return _forward(spec, {**k, **tiles}, asked)


# ---------------------------------------------------------------------------------- backward

def _dkdv_knobs(spec: CallSpec) -> tuple[dict, dict]:
    d, group, sk = block_d(spec.head_dim), spec.group, spec.seqlen_k
    asked = _asked(spec, "bwd_dkdv")
    possible = (spec.gluon_ok and spec.scale_positive
                and (group == 1 or (not spec.varlen and spec.host_desc_ok)))
    # GQA through the Gluon kernel, but not masked calls of more than 4 q heads per kv head to 1024 keys
    wins = group == 1 or not (spec.masked and group > 4 and sk <= 1024)
    gluon = asked.get("gluon", d <= 256 and wins) and possible and spec.sm == 90
    one_pass = asked.get("one_pass", gluon and d <= 128) and not spec.deterministic
    k = {"gluon": gluon, "one_pass": one_pass}
    k["host_desc"] = asked.get("host_desc", d <= 64 or not spec.masked or sk < 4096 or (spec.causal_only and d <= 128))
    k["from_zero"] = asked.get("from_zero", d <= 64 and not spec.masked)
    k["dynamic"] = asked.get("dynamic", d <= 64 or (d <= 128 and spec.causal_only
                                                    and (sk >= 2048 or (group > 1 and sk >= 1024))))
    k["persistent"] = asked.get("persistent", (k["dynamic"] and one_pass) or sk <= 1024)
    k["tma_store"] = asked.get("tma_store", spec.seqlen_q <= 1024 and group == 1 and (one_pass or d <= 64))
    if one_pass and not gluon:
        raise _bad("bwd_dkdv", "one_pass adds dQ by the Gluon dK/dV kernel's TMA reduce-adds, which does not "
                               "serve this call (set \"one_pass\": false)")
    if one_pass and d > 128:
        raise _bad("bwd_dkdv", f"past head dim 128 the Gluon dK/dV kernel leaves dQ to its own kernel (head dim "
                               f"{spec.head_dim}); drop one_pass")
    k.update(default_tiles("bwd_dkdv", spec, gluon))
    k.update({name: asked[name] for name in TILES if name in asked})
    return k, asked


def _dkdv(spec: CallSpec, k: dict, asked: dict) -> DkdvConfig:
    d = block_d(spec.head_dim)
    _check_tiles("bwd_dkdv", k)
    if not k["gluon"]:
        return DkdvConfig(**{**k, "host_desc": False, "from_zero": False, "persistent": False, "dynamic": False,
                             "tma_store": False})
    _check_gluon_side("bwd_dkdv", k, "block_n", sizes.dkdv_keys(spec.head_dim))
    if d > 128 and k["block_m"] not in (64, 128):
        raise _bad("bwd_dkdv", f"past head dim 128 the Gluon dK/dV kernel takes 64 or 128 queries per step "
                               f"(block_m), got {k['block_m']}")
    if k["one_pass"] and k["block_m"] < 64:     # (a wgmma has 64 rows or more)
        raise _bad("bwd_dkdv", f"one pass takes 64 or more queries per step (block_m), got {k['block_m']} "
                               f"(set \"one_pass\": false for fewer)")
    elem = spec.dtype.itemsize

    def need(num_kv, tma_store):
        return sizes.dkdv_gluon(spec.head_dim, k["block_m"], k["num_stages"], elem, k["one_pass"], num_kv, tma_store)
    _check_smem("bwd_dkdv", "the Gluon dK/dV kernel", need(1, False), k, "block_m", spec.head_dim)
    # from_zero leaves keys past seqlen_k unmasked: harmless for dK/dV (never stored), but one pass adds
    # their dS into dQ, where an overflowing P makes NaN. Chosen only where every key block is whole
    ragged = spec.varlen or spec.seqlen_k % k["block_n"] != 0
    if k["from_zero"] and k["one_pass"] and ragged and "from_zero" not in asked:
        k = {**k, "from_zero": False}
    host_desc = (k["host_desc"] or spec.group > 1) and not spec.varlen and spec.host_desc_ok
    key_blocks = -(-spec.seqlen_k // k["block_n"])
    units, sms = key_blocks * spec.heads_kv * spec.batch, spec.sm_count
    persistent = k["persistent"] and host_desc and units > sms
    tma_store = host_desc and k["tma_store"] and d <= 128 and spec.dkdv_tma_ok
    num_kv = 2 if persistent and need(2, tma_store) <= sizes.SM90_BYTES else 1
    tma_store = tma_store and need(num_kv, True) <= sizes.SM90_BYTES
    dynamic = persistent and k["one_pass"] and k["dynamic"]
    programs = sms if dynamic else coprime_programs(units, key_blocks, sms) if persistent else units
    # the last two waves of units dealt heaviest first, so that the programs end together
    tail = min(spec.batch * spec.heads_kv, -(-2 * sms // key_blocks)) if dynamic and spec.causal_only else 0
    return DkdvConfig(**{**k, "host_desc": host_desc, "persistent": persistent, "tma_store": tma_store,
                         "dynamic": dynamic}, num_kv=num_kv, tail_heads=tail, programs=programs)


def _dq(spec: CallSpec) -> DqConfig:
    d = block_d(spec.head_dim)
    asked = _asked(spec, "bwd_dq")
    gluon = asked.get("gluon", d <= 256 and (d > 64 or spec.seqlen_k >= 4096)) and spec.gluon_ok and spec.sm == 90
    k = {"gluon": gluon, **default_tiles("bwd_dq", spec, gluon)}
    k.update({name: asked[name] for name in TILES if name in asked})
    return dq_with(spec, k)


def dq_with(spec: CallSpec, k: dict) -> DqConfig:
    _check_tiles("bwd_dq", k)
    if k["gluon"]:
        _check_gluon_side("bwd_dq", k, "block_m", 128)
        _check_smem("bwd_dq", "the Gluon dQ kernel", sizes.dq_gluon(spec.head_dim, k["block_n"], k["num_stages"],
                                                                    spec.dtype.itemsize), k, "block_n", spec.head_dim)
    return DqConfig(**k, tma_store=k["gluon"] and spec.dq_tma_ok)


@functools.lru_cache(maxsize=4096)
def backward_config(spec: CallSpec) -> BwdConfig:
    """The backward's configs for this call: the dK/dV kernel's, and the dQ kernel's unless the
    dK/dV kernel adds dQ itself (one pass)."""
    dkdv = _dkdv(spec, *_dkdv_knobs(spec))
    return backward_with(spec, dkdv, None if dkdv.one_pass else _dq(spec))


def backward_with(spec: CallSpec, dkdv: DkdvConfig, dq: DqConfig | None) -> BwdConfig:
    interp = spec.arch == "interpreter"
    return BwdConfig(dkdv, dq, preprocess_block_m=32 if interp else 64, dq_scale_block=256 if interp else 4096)


def dkdv_with_tiles(spec: CallSpec, tiles: dict) -> DkdvConfig:
    k, asked = _dkdv_knobs(spec)
    return _dkdv(spec, {**k, **tiles}, asked)


def dq_with_tiles(spec: CallSpec, tiles: dict) -> DqConfig:
    base = _dq(spec)
    return dq_with(spec, {"gluon": base.gluon, **tiles})


def coprime_programs(units: int, per_head: int, sm_count: int) -> int:
    """A persistent grid over units whose weights differ within a head: at most one program per SM,
    their count coprime to the units per head, so that each program's units (p, p + P, ...) cycle
    through every unit of a head instead of keeping to a few of them."""
    if units <= sm_count:
        return units
    programs = sm_count
    while programs > 1 and _gcd(programs, per_head) != 1:
        programs -= 1
    return programs


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


# ---------------------------------------------------------------------------------- decoding

DECODE_RESIDENT = {"hip": 2, "cuda": 3}   # split programs an SM holds at once at the default tiles (LDS, smem)
DECODE_ROUND_FILL = 0.9        # chosen splits: the fewest whose programs fill their last round of SMs this much
DECODE_SPLIT_KEYS = 256        # the fewest cache keys per chosen split: shorter ones do not pay for the combine
DECODE_CHOSEN_SPLITS_MAX = 128
DECODE_GRID_Z = 65535          # splits are the split kernel's grid z


@dataclass(frozen=True)
class DecodeSpec:
    """A KV-cache decoding call as decode_host saw it: everything decode_config depends on. Never
    the device's seqlens (reading them would sync the host): the cache's capacity stands in."""
    arch: str                    # device.arch()
    dtype: torch.dtype           # q's (and the cache's)
    head_dim: int
    batch: int
    seqlen_q: int
    heads_q: int
    heads_kv: int
    capacity: int                # keys a batch row's cache can hold: S_cache, or max_blocks * page_size
    page_size: int = 0           # 0: a dense cache
    window_left: int = -1        # causal is window_right 0
    window_right: int = -1
    softcap: bool = False
    alibi: bool = False
    leftpad: bool = False
    batch_idx: bool = False
    num_splits: int = 0          # the caller's (0: decode_config chooses)
    sm_count: int = 132
    overrides: str = ""          # FA_CK_TRITON_CONFIG

    @property
    def rows(self) -> int:
        """Packed rows per kv head: each query times the q heads that read that kv head."""
        return self.seqlen_q * (self.heads_q // self.heads_kv)


@dataclass(frozen=True)
class DecodeConfig:
    block_m: int = field(metadata=KNOB)      # packed rows per tile (16 or more: a dot's side)
    block_n: int = field(metadata=KNOB)      # keys per block
    num_warps: int = field(metadata=KNOB)
    num_stages: int = field(metadata=KNOB)
    num_splits: int = field(metadata=KNOB)   # key splits per tile; past 1 the combine kernel reduces them
    row_tiles: int = 1                       # tiles of packed rows per kv head
    whole_pages: bool = False                # paged with page_size >= block_n: a key block lies in one page
    combine_block_s: int = 1                 # splits the combine kernel reduces per step
    combine_warps: int = 4


DECODE_KERNELS = {"decode": DecodeConfig}


def decode_tiles(spec: DecodeSpec) -> dict:
    """Tiles by architecture and head dim: one tile holds up to 64 packed rows; 64 keys per block
    (32 past d128), wide enough for full-width loads of each key's row."""
    d = block_d(spec.head_dim)
    bm = min(block_d(spec.rows), 64)         # (a power of two from 16)
    if spec.arch == "interpreter":           # 32 keys: pages of 16 are gathered, larger ones read whole
        return _tiles(bm, 32, 4, 1)
    bn = 64 if d <= 128 else 32
    if spec.arch.startswith("hip"):
        return _tiles(bm, bn, 4, 2)
    # Triton's NVIDIA pipeliner gives the block table's load stages of its own: paged calls take two
    # more to keep two K / V blocks in flight, as dense ones do
    stages = 3 if spec.arch.startswith("cuda:sm") and int(spec.arch[7:]) >= 80 else 2
    return _tiles(bm, bn, 4, stages + 2 if spec.page_size else stages)


def decode_splits(spec: DecodeSpec, block_m: int, block_n: int) -> int:
    """Key splits that fill the GPU: the fewest whose programs fill the SMs' rounds of resident programs
    to DECODE_ROUND_FILL (else the best fill), each split over at least DECODE_SPLIT_KEYS of the cache."""
    programs = spec.batch * spec.heads_kv * -(-spec.rows // block_m)
    slots = spec.sm_count * DECODE_RESIDENT["hip" if spec.arch.startswith("hip") else "cuda"]
    most = max(1, min(DECODE_CHOSEN_SPLITS_MAX, spec.capacity // max(DECODE_SPLIT_KEYS, block_n)))
    best, best_fill = 1, 0.0
    for splits in range(1, most + 1):
        n = programs * splits
        fill = n / (-(-n // slots) * slots)
        if fill >= DECODE_ROUND_FILL:
            return splits
        if fill > best_fill:
            best, best_fill = splits, fill
    return best


@functools.lru_cache(maxsize=4096)
def decode_config(spec: DecodeSpec) -> DecodeConfig:
    """The decode kernels' config for this call. Splits: FA_CK_TRITON_CONFIG's, else the caller's
    (at most the cache's key blocks: more could only be empty), else decode_splits."""
    asked = _asked(spec, "decode")
    k = {**decode_tiles(spec), **{name: asked[name] for name in TILES if name in asked}}
    _check_tiles("decode", k)
    for name in ("block_m", "block_n"):
        if k[name] < 16:
            raise _bad("decode", f"{name} must be 16 or more (a dot's side), got {k[name]}")
    if k["num_warps"] not in (1, 2, 4, 8, 16) or k["num_stages"] < 1:
        raise _bad("decode", f"num_warps must be a power of two up to 16 and num_stages 1 or more, got "
                             f"num_warps {k['num_warps']}, num_stages {k['num_stages']}")
    blocks = max(1, -(-spec.capacity // k["block_n"]))
    if "num_splits" in asked:
        splits = asked["num_splits"]
        if not 1 <= splits <= DECODE_GRID_Z:
            raise _bad("decode", f"num_splits must be 1 to {DECODE_GRID_Z}, got {splits}")
    elif spec.num_splits > 0:
        splits = min(spec.num_splits, blocks, DECODE_GRID_Z)
    else:
        splits = decode_splits(spec, k["block_m"], k["block_n"])
    return DecodeConfig(**k, num_splits=splits, row_tiles=-(-spec.rows // k["block_m"]),
                        whole_pages=spec.page_size >= k["block_n"],
                        combine_block_s=min(1 << (splits - 1).bit_length(), 16))


def append_warps(heads_q: int, head_dim: int) -> int:
    """kernels/append.py's warps: a program holds one token's q heads x head dims."""
    return 4 if heads_q * head_dim <= 4096 else 8
