"""The config one call of the triton backend runs with: the kernel's switches (configs.switches'
defaults and measured per-call decisions, FA_CK_TRITON_CONFIG on top), its tiles (the heuristic or
autotune), and the checks that an asked-for config is one the kernel can take, each a ValueError
naming the key before anything launches. __init__ asks _config once per kernel and call; the
answer is remembered per everything it reads.
"""
from __future__ import annotations

import os

import torch

from ...params import FP8_DTYPES, AttnParams
from . import configs, decisions, launch_gluon, tuning
from .host import _causal_mask, _tma_ok


_CONFIGS: dict = {}


def _config(kernel: str, q, head_dim: int, p: AttnParams, sq: int, sk: int, tma_possible: bool,
            bench=None, gluon_possible: bool = False, group: int = 1, fp8_inputs: bool = False) -> dict:
    """The kernel's switches (defaults, then FA_CK_TRITON_CONFIG; TMA only where `tma_possible`,
    a Gluon kernel only where `gluon_possible`, no one pass for deterministic calls; group: q
    heads per kv head, which the Gluon dK/dV kernel's default depends on; fp8_inputs: the
    caller's fp8: no Q_CONVERT), then
    tiles: the heuristic for those switches, or autotuned when switched on, with any
    FA_CK_TRITON_CONFIG tiles on top.
    Without autotune the answer is remembered per everything it reads: working it out took
    ~25 us of host time per kernel and call (h200-20261130-sixth call 1)."""
    autotune = bench is not None and tuning.autotune_enabled()
    key = None if autotune else (kernel, configs.arch(q.device), q.dtype, head_dim, p.fp8, p.has_window,
                                 p.deterministic,
                                 decisions.gluon_wins(kernel, head_dim, sk, p.has_window, group),
                                 decisions.dkdv_host_desc_wins(head_dim, p.has_window, sk, _causal_mask(p)),
                                 decisions.dkdv_persistent_wins(head_dim, sk, False),
                                 decisions.dkdv_dynamic_wins(head_dim, _causal_mask(p), sk, group),
                                 decisions.dkdv_tma_store_wins(sq, group, not p.deterministic, head_dim),
                                 kernel == "fwd" and decisions.fwd_gluon_short_causal(head_dim, p.window_right == 0, sq,
                                                                                     sk, p.fp8),
                                 kernel == "fwd" and _three_warpgroups(q, head_dim, p, sq, sk),
                                 kernel == "fwd" and (sq % 128, sk % 128, p.window_left < 0, p.varlen), tma_possible,
                                 # (what decisions.fwd_fp8_wide_blocks and fwd_q16_early_wins read of
                                 # the lengths and of q)
                                 kernel == "fwd" and p.fp8 and (sk % 256, sk >= 2048, sk <= 2048, _tma_ok(q),
                                                                decisions.positive_scale({}, p)),
                                 gluon_possible, fp8_inputs, os.environ.get("FA_CK_TRITON_CONFIG", ""))
    if key not in _CONFIGS:
        cfg = _work_out_config(kernel, q, head_dim, p, sq, sk, tma_possible, bench, gluon_possible, group, fp8_inputs)
        if key is None:
            return cfg
        _CONFIGS[key] = cfg
    return dict(_CONFIGS[key])                # a copy: callers may not change the remembered one


def _work_out_config(kernel: str, q, head_dim: int, p: AttnParams, sq: int, sk: int, tma_possible: bool,
                     bench, gluon_possible: bool, group: int = 1, fp8_inputs: bool = False) -> dict:
    arch = configs.arch(q.device)
    over = configs.overrides(kernel)
    tma_asked = "TMA" in over
    defaults = configs.switches(kernel, arch, head_dim, p.fp8)
    over_sw = {k: over.pop(k) for k in [*over] if k in defaults or k in ("TMA", "ONE_PASS", "GLUON")}
    sw = {**defaults, **over_sw}
    if "TMA" in sw:
        sw["TMA"] = bool(sw["TMA"]) and tma_possible
    if "GLUON" in sw:                        # asked for, or by default where it measured faster
        sw["GLUON"] = bool(sw["GLUON"]) and gluon_possible and (
            "GLUON" in over_sw or decisions.gluon_wins(kernel, head_dim, sk, p.has_window, group))
    if "ONE_PASS" in sw and "ONE_PASS" not in over_sw:   # by default only with the Gluon kernel, to d128
        sw["ONE_PASS"] = bool(sw.get("GLUON")) and configs.block_d(head_dim) <= 128
    # The Gluon fp8 kernel's own switches (P in registers, q rounded in the kernel): not in a 16-bit
    # call's config, nor its autotune key; off in forward.py's kernel. P_REGS for a caller's fp8
    # too (fa_ck copies v into the kernel's key order: quantize.keys_for_registers); Q_CONVERT
    # off for it, and an error where asked in the Gluon kernel.
    for name in ("P_REGS", "Q_CONVERT"):
        refused = fp8_inputs and name == "Q_CONVERT"
        if name in sw and not p.fp8:
            del sw[name]
        elif name in sw and (refused or not sw.get("GLUON")):
            if refused and sw.get("GLUON") and over_sw.get(name):
                raise ValueError("FA_CK_TRITON_CONFIG['fwd']: Q_CONVERT rounds a 16-bit q inside the Gluon kernel; "
                                 "fp8 inputs have none (drop Q_CONVERT)")
            sw[name] = False
        elif name == "Q_CONVERT" and name in sw and q.dtype in FP8_DTYPES:
            sw[name] = False                 # handed q8 (TMA cannot read q as it is): as launched, autotune's key too
    if kernel == "bwd_dkdv" and "HOST_DESC" not in over_sw:
        sw["HOST_DESC"] = decisions.dkdv_host_desc_wins(head_dim, p.has_window, sk, _causal_mask(p))
    if kernel == "bwd_dkdv" and "FROM_ZERO" not in over_sw:
        sw["FROM_ZERO"] = decisions.dkdv_from_zero_wins(head_dim, p.has_window)
    if p.deterministic and "ONE_PASS" in sw:
        sw["ONE_PASS"] = False               # atomics add in a different order every run
    if kernel == "bwd_dkdv" and "TMA_STORE" not in over_sw:
        sw["TMA_STORE"] = decisions.dkdv_tma_store_wins(sq, group, sw.get("ONE_PASS", False), head_dim)
    if kernel == "bwd_dkdv" and sw["GLUON"] and sw["ONE_PASS"] and configs.block_d(head_dim) > 128:
        # past d128 the Gluon dK/dV kernel has no one pass: asked for, it is backward.py's
        if "GLUON" in over_sw:
            raise ValueError(f"FA_CK_TRITON_CONFIG['bwd_dkdv']: past head dim 128 the Gluon dK/dV kernel leaves dQ "
                             f"to its own kernel (head dim {head_dim}, GLUON and ONE_PASS asked); drop one")
        sw["GLUON"] = False
    if kernel == "bwd_dkdv" and "DYNAMIC" not in over_sw:
        sw["DYNAMIC"] = decisions.dkdv_dynamic_wins(head_dim, _causal_mask(p), sk, group)
    if kernel == "bwd_dkdv" and "PERSISTENT" not in over_sw:   # (DYNAMIC's counter needs ONE_PASS)
        sw["PERSISTENT"] = decisions.dkdv_persistent_wins(head_dim, sk, sw["DYNAMIC"] and sw["ONE_PASS"])
    tma = sw.get("TMA", False) and not sw.get("GLUON", False)
    gluon = sw.get("GLUON", False)
    asked_wide = over.pop("F16_WIDE", None)
    if asked_wide is not None and not isinstance(asked_wide, bool):
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: F16_WIDE is true or false (every tile of the fp8 "
                         f"forward's f16 scores the wide step, or not), got {asked_wide!r}")
    if asked_wide and over_sw.get("F16_SCORES") is False:
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: F16_WIDE is a step of F16_SCORES' f16 scores, which "
                         f"are asked off here: drop one")

    def with_wide(c: dict) -> dict:
        """c with F16_WIDE where its scores may be f16 (the launcher takes it only where they are):
        as asked, else decisions.fwd_f16_wide_only on c's tiles; elsewhere (16-bit calls) none."""
        if not (gluon and kernel == "fwd" and c.get("F16_SCORES")):
            return c
        return {**c, "F16_WIDE": decisions.fwd_f16_wide_only(c, head_dim) if asked_wide is None else asked_wide}
    cfg = configs.default(kernel, arch, head_dim, q.dtype, tma, gluon)
    if gluon and kernel == "fwd" and decisions.fwd_gluon_short_causal(head_dim, p.window_right == 0, sq, sk, p.fp8):
        cfg["BLOCK_N"] = 64
    if gluon and kernel == "fwd" and "BLOCK_N" not in over and decisions.fwd_fp8_wide_blocks(
            sw, not fp8_inputs and _tma_ok(q), head_dim, sk, p) and configs.fwd_gluon_smem(
            head_dim, {**cfg, **over, **sw, "BLOCK_N": 256, "TMA_STORE": False}, q.dtype, True) \
            <= configs.SMEM_BYTES_SM90:       # (not with 3-deep rings asked for at d128)
        cfg["BLOCK_N"] = 256
    if gluon and kernel == "fwd" and not sw.get("PINGPONG") and not over_sw.get("LATE_SUM") \
            and _three_warpgroups(q, head_dim, p, sq, sk):      # (asked-for switches of two warpgroups win)
        cfg["BLOCK_M"] = 192
    if bench is not None and arch != "interpreter":
        if tuning.autotune_enabled():
            # (the call's own tiles in the key: a length bucket holds calls that cannot take each
            # other's, e.g. 256-key blocks at 4096 keys and not at 2176; an asked F16_WIDE is timed)
            own = [f"own={cfg['BLOCK_M']}x{cfg['BLOCK_N']}"] + ([] if asked_wide is None else
                                                               [f"F16_WIDE={int(asked_wide)}"])
            key = tuning.make_key(arch, kernel, q.dtype, head_dim, p.window_right == 0, sq, sk,
                                  "-".join(p.features() + [f"{k}={int(v)}" for k, v in sw.items()] + own))
            cands = [c for c in configs.candidates(kernel, arch, head_dim, q.dtype, tma, gluon)
                     if not gluon or _gluon_tiles_fit(kernel, {**c, **sw}, head_dim, q.dtype, p.fp8)]
            if cfg not in cands:      # the call's own tiles (256 keys for fp8, 64 for short causal, 192
                cands = [cfg] + cands     # queries) are searched too: autotune never loses them
            cfg = tuning.pick(key, cands, lambda c: bench(with_wide({**c, **sw})), cfg)
    cfg = with_wide({**cfg, **over, **sw})
    if not cfg.get("F16_SCORES") and "EXP2_POLY" not in over_sw and "EXP2_POLY" not in over:
        cfg.pop("EXP2_POLY", None)           # (the default's polynomial goes with the default's f16 scores)
    poly = cfg.get("EXP2_POLY", 0)
    if type(poly) is not int or poly not in (0, 2, 4):
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: EXP2_POLY is 1 in how many of the fp8 forward's "
                         f"exponentials a polynomial takes, with F16_SCORES: 0 (none), 2 or 4, got {poly!r}")
    if "F16_SCORES" not in cfg:
        cfg.pop("EXP2_POLY", None)           # (checked, then dropped: 16-bit calls have no f16 scores)
    if cfg.get("EXP2_POLY") and not cfg.get("F16_SCORES"):
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: EXP2_POLY works on F16_SCORES' f16 scores (the fp8 "
                         f"forward's default), which are off here: drop EXP2_POLY or ask for F16_SCORES")
    for tile in ("BLOCK_M", "BLOCK_N"):      # (arange sizes in every kernel: a compile error otherwise)
        size = cfg[tile]
        if gluon and kernel == "fwd" and tile == "BLOCK_M" and size == 192:
            continue                         # three warpgroups of 64 queries (_check_gluon_tiles)
        if type(size) is not int or size < 1 or size & (size - 1):
            raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: {tile} must be a power of two (an integer), "
                             f"got {size!r}")
    if gluon:
        _check_gluon_tiles(kernel, cfg, head_dim, q.dtype, p.fp8)
    if gluon and kernel == "fwd" and cfg["BLOCK_M"] == 192:
        if over_sw.get("LATE_SUM"):
            raise ValueError("FA_CK_TRITON_CONFIG['fwd']: LATE_SUM is in the two-warpgroup Gluon forward only "
                             "(BLOCK_M 128), got BLOCK_M 192")
        cfg["LATE_SUM"] = False              # (three warpgroups add their row sums beside the exponentials)
    elif "LATE_SUM" in sw and "LATE_SUM" not in over_sw:   # (the Gluon forward's; where it measured faster)
        # (on the tiles chosen; autotune, if on, timed its candidates with the default, True)
        diag_first = decisions.fwd_whole_blocks(sq, sk, cfg["BLOCK_M"], cfg["BLOCK_N"], p.window_left, p.window_right,
                                              p.varlen, p.fp8, bool(cfg.get("PINGPONG")),
                                              bool(cfg.get("FP8_DIAG_FIRST")))[1]
        cfg["LATE_SUM"] = gluon and decisions.fwd_late_sum_wins(head_dim, p.has_window,
                                                              p.fp8 and bool(cfg.get("P_REGS")), diag_first)
    if "Q16_EARLY" in sw and "Q16_EARLY" not in over_sw:   # (on the tiles chosen, as LATE_SUM)
        cfg["Q16_EARLY"] = decisions.fwd_q16_early_wins(head_dim, cfg["BLOCK_N"], sk)
    if gluon and kernel == "fwd" and not cfg.get("HOST_DESC", True):
        cfg["TMA_STORE"] = False             # its store goes through a host-made descriptor
    smem = configs.fwd_gluon_smem(head_dim, cfg, q.dtype, p.fp8) if gluon and kernel == "fwd" else 0
    if cfg.get("TMA_STORE") and smem > configs.SMEM_BYTES_SM90:
        if "TMA_STORE" in over_sw and ("num_stages" in over or "BLOCK_N" in over):   # tiles the user chose
            raise ValueError(f"FA_CK_TRITON_CONFIG['fwd']: TMA_STORE needs {smem} bytes of shared memory with "
                             f"BLOCK_N {cfg['BLOCK_N']} and num_stages {cfg['num_stages']} at head dim {head_dim} "
                             f"(sm90 has {configs.SMEM_BYTES_SM90}); use fewer stages or keys per block")
        cfg["TMA_STORE"] = False             # by default (or over tuned tiles) only where it fits
    if tma and cfg["num_stages"] < configs.TMA_MIN_STAGES and arch != "interpreter":
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: TMA (on{'' if tma_asked else ' by default'} for this "
                         f"call) with num_stages {cfg['num_stages']} crashes Triton 3.6's ptxas; use "
                         f"{configs.TMA_MIN_STAGES}+ stages or \"TMA\": false")
    return cfg


def _three_warpgroups(q, head_dim: int, p: AttnParams, sq: int, sk: int) -> bool:
    """decisions.fwd_gluon_three_warpgroups for this call (q: (B, S, H, D), or packed for varlen,
    which the rule leaves out); SMs of q's GPU (132, an H100's or H200's, off a GPU: CPU tests)."""
    if p.varlen:
        return False
    sms = launch_gluon._sm_count(q.device) if q.is_cuda else 132
    return decisions.fwd_gluon_three_warpgroups(head_dim, p.has_window, sq, sk, p.fp8, p.varlen,
                                              q.shape[0] * q.shape[2], sms)


def _gluon_tiles_fit(kernel: str, cfg: dict, head_dim: int, dtype: torch.dtype, fp8: bool) -> bool:
    """Whether _check_gluon_tiles takes cfg (autotune searches only the candidates that fit the
    call's switches: 32 queries per step are a two-pass candidate only, for one)."""
    try:
        _check_gluon_tiles(kernel, dict(cfg), head_dim, dtype, fp8)
    except ValueError:
        return False
    return True


def _check_gluon_tiles(kernel: str, cfg: dict, head_dim: int, dtype: torch.dtype, fp8: bool):
    """A Gluon kernel's config (asked-for tiles among it) against what the kernel can take, each
    failure a ValueError naming the key: its fixed side (two warpgroups of 64 rows; the 16-bit
    forward to head dim 64 also three, BLOCK_M 192, without PINGPONG), its shared memory (Q / dO
    and the rings), and past d128 the dK/dV kernel's queries per step."""
    side, rows = (("BLOCK_N", configs.gluon_block_n_bwd(head_dim)) if kernel == "bwd_dkdv"
                  else ("BLOCK_M", configs.GLUON_BLOCK_M))
    if kernel == "fwd" and cfg["BLOCK_M"] == 192:
        if fp8 or configs.block_d(head_dim) > 64:
            raise ValueError(f"FA_CK_TRITON_CONFIG['fwd']: BLOCK_M 192 (three consumer warpgroups) is for 16-bit "
                             f"inputs at head dims up to 64, where each warpgroup's tiles fit 160 registers; got "
                             f"{'fp8' if fp8 else str(dtype)} at head dim {head_dim}")
        if cfg.get("PINGPONG"):
            raise ValueError("FA_CK_TRITON_CONFIG['fwd']: PINGPONG takes turns between two warpgroups: BLOCK_M 128, "
                             "got 192")
        rows = 192
    if (cfg[side], cfg["num_warps"]) != (rows, configs.GLUON_WARPS):
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: the Gluon kernel has {side} {rows} and num_warps "
                         f"{configs.GLUON_WARPS} (two warpgroups of 64 rows); got {side} {cfg[side]}, "
                         f"num_warps {cfg['num_warps']} (set \"GLUON\": false for other tiles)")
    wide = configs.block_d(head_dim) > 128
    if kernel == "bwd_dkdv" and wide:
        cfg["STAGE_P"] = False               # (it stages P^T and dS^T through shared memory anyway)
        if cfg["BLOCK_M"] not in (64, 128):  # (the ones run on a GPU; 16 does not compile)
            raise ValueError(f"FA_CK_TRITON_CONFIG['bwd_dkdv']: past head dim 128 the Gluon dK/dV kernel takes 64 or "
                             f"128 queries per step (BLOCK_M), got {cfg['BLOCK_M']}")
    if kernel == "bwd_dkdv" and not wide and cfg.get("ONE_PASS") and cfg["BLOCK_M"] < 64:
        # (one pass adds each step's dQ from a wgmma of BLOCK_M rows, and a wgmma has 64 or more;
        # 32 compiles to "error encountered during parsing": h200-20261203-standing call 5)
        raise ValueError(f"FA_CK_TRITON_CONFIG['bwd_dkdv']: one pass (dQ in the Gluon dK/dV kernel) takes 64 or more "
                         f"queries per step (BLOCK_M), got {cfg['BLOCK_M']} (set \"ONE_PASS\": false for fewer)")
    if kernel == "fwd" and fp8 and cfg["BLOCK_N"] < 32:    # (an fp8 wgmma's K is 32: P V's is the key block)
        raise ValueError(f"FA_CK_TRITON_CONFIG['fwd']: the Gluon fp8 forward takes 32 or more keys per block "
                         f"(BLOCK_N), got {cfg['BLOCK_N']} (set \"GLUON\": false for other tiles)")
    if kernel == "fwd":                      # Q and the K / V rings alone (TMA_STORE is dropped where it does not fit)
        what, tiles = "the Gluon forward", configs.fwd_gluon_smem(head_dim, dict(cfg, TMA_STORE=False), dtype, fp8)
    elif kernel == "bwd_dq":
        what, tiles = "the Gluon dQ kernel", configs.dq_gluon_smem(head_dim, cfg, dtype)
    else:   # (the launcher gives up the second K / V buffer, then the TMA stores, where they do not fit)
        what, tiles = "the Gluon dK/dV kernel", configs.dkdv_gluon_smem(head_dim, dict(cfg, TMA_STORE=False), dtype)
    if tiles > configs.SMEM_BYTES_SM90:
        tile = "BLOCK_M" if kernel == "bwd_dkdv" else "BLOCK_N"
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: {what} needs {tiles} bytes of shared memory with {tile} "
                         f"{cfg[tile]} and num_stages {cfg['num_stages']} at head dim {head_dim} (sm90 has "
                         f"{configs.SMEM_BYTES_SM90}); use fewer stages or smaller tiles"
                         + (" (or Q_CONVERT false: its 16-bit Q tile)"
                            if kernel == "fwd" and cfg.get("Q_CONVERT") else ""))
