"""Block sizes, warps and stages per kernel, architecture and head dim.

`default(...)` is the heuristic used when autotune is off; `candidates(...)` is the space
searched when it is on (tuning.pick caches the winner on disk). `switches(...)` holds each
kernel's switches by default; decisions.py refines them per call, where each measured faster;
`overrides(...)` reads FA_CK_TRITON_CONFIG. Shared-memory budgets of the Gluon kernels.
"""
from __future__ import annotations

import json
import os

import torch

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


_ARCH: dict = {}


def arch(device: torch.device) -> str:
    """'interpreter', 'cuda:sm90', 'hip:gfx942', ... (cached per device: every launch asks)."""
    if INTERPRET or device.type != "cuda":
        return "interpreter"
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _ARCH:
        if torch.version.hip:
            _ARCH[index] = "hip:" + torch.cuda.get_device_properties(index).gcnArchName.split(":")[0]
        else:
            major, minor = torch.cuda.get_device_capability(index)
            _ARCH[index] = f"cuda:sm{major}{minor}"
    return _ARCH[index]


def fp8_dtype(device):
    """The fp8 format a device (or an arch() name) multiplies natively, or None when it has no
    fp8 matrix unit. MI300X (gfx942) has the fnuz formats; gfx950, NVIDIA sm89+ and the
    interpreter the OCP ones (the interpreter cannot run fnuz at all)."""
    name = device if isinstance(device, str) else arch(device)
    if name == "interpreter":
        return torch.float8_e4m3fn
    if name.startswith("hip:"):
        if name == "hip:gfx942":
            return torch.float8_e4m3fnuz
        return torch.float8_e4m3fn if name.startswith("hip:gfx95") else None
    sm = int(name.split("sm")[-1])
    return torch.float8_e4m3fn if sm >= 89 else None


def block_d(head_dim: int) -> int:
    return max(16, 1 << (head_dim - 1).bit_length())


def for_fp8(cfg: dict) -> dict:
    """fp8 dots need K >= 32 (sm90 wgmma): PV's K is the key block, so at least 32 keys."""
    return dict(cfg, BLOCK_N=max(cfg["BLOCK_N"], 32))


def fp8_block_d(head_dim: int) -> int:
    """QK^T's K is the head dim block: at least 32 in fp8."""
    return max(32, block_d(head_dim))


def _cfg(bm, bn, warps, stages):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": warps, "num_stages": stages}


def default(kernel: str, arch_name: str, head_dim: int, dtype: torch.dtype, tma: bool = False,
            gluon: bool = False) -> dict:
    """kernel: 'fwd', 'bwd_dkdv' (BLOCK_N keys per program, BLOCK_M queries per step) or 'bwd_dq';
    tma: the kernel loads its streamed tiles through TMA (fewer registers: wider tiles fit);
    gluon: the Hopper forward of forward_gluon.py (num_stages: the depth of its K and V rings)."""
    d = block_d(head_dim)
    if gluon and kernel == "fwd":
        # 128 queries (192 at d17-64 where fwd_gluon_three_warpgroups: _work_out_config), num_warps
        # 4 (each of its consumer warpgroups; a producer warp comes on top). 128 keys per block,
        # 2-deep rings. No spills at d128 (sm90, Triton 3.6 and 3.7.1). Head dims 129-256: 64 keys
        # per block (Q 64 KB + rings 128 KB of shared memory); 32 keys with 3-deep rings was 18-26 %
        # slower (h200-20261201-fourteenth call 6, at d256; d160 and d192 checked for correctness only).
        return _cfg(GLUON_BLOCK_M, 128 if d <= 128 else 64, GLUON_WARPS, 2)
    if gluon and kernel == "bwd_dq":
        # dq_gluon.py's dQ: 128 queries fixed; S, dP, dS and dQ live at once, so 64 keys per
        # block at d128 (128 would need ~240 registers, all the consumers get).
        # 3-deep K/V rings: +3-9% over 2 at d128 (h200-20261130-bwd call 6). Head dims 129-256:
        # 32 keys (Q and dO 128 KB + 3-deep rings 96 KB of shared memory; dQ holds 128 registers;
        # 64 keys spilled 256+ bytes), 3-deep rings though causal calls spill 40 bytes: fwd+bwd
        # +2 to +13 % over 2-deep at d256 S1k-16k (h200-20261201-fifteenth calls 1-2, one point
        # -9.5 % in call 1, +2.7 % in call 2's 5 rounds), +10-12 % at d160 / d192 S4k.
        if d > 128:
            return _cfg(GLUON_BLOCK_M, 32, GLUON_WARPS, 3)
        return _cfg(GLUON_BLOCK_M, 64 if d > 64 else 128, GLUON_WARPS, 3)
    if gluon and d > 128:
        # backward_gluon.py past d128 (_bwd_unit_dsplit): 64 keys, dK / dV split by columns across
        # the two warpgroups, 64 queries per step, 2-deep Q / dO rings (213 KB of shared memory,
        # no spills). h200-20261201-fifteenth call 1 (d256 fwd+bwd, same run): 128 queries per
        # step single-buffered -1 to -5 %, S^T / dP^T from zero level (-2 to +1 %).
        return dict(_cfg(64, gluon_block_n_bwd(head_dim), GLUON_WARPS, 2), STAGE_P=False)
    if gluon:
        # backward_gluon.py: 128 keys fixed (two warpgroups of 64), 64 queries per step, P^T and
        # dS^T as register operands. At d128 that spilled until the kernel stopped its loop-
        # invariant wgmma descriptors being hoisted (h200-20261130-seventh); since then it is as
        # fast as staging them through shared memory (STAGE_P) or faster: same run, fwd+bwd +0-8 %
        # (calls 3-5), and with ONE_PASS +1-2 % (call 5). At d64 staging was 4-9 % slower
        # (h200-20261130-sixth call 2).
        return dict(_cfg(64, GLUON_BLOCK_N_BWD, GLUON_WARPS, 2), STAGE_P=False)
    if arch_name == "interpreter":
        # Small, unequal blocks: CPU tests walk several blocks and both tile orientations.
        return _cfg(16, 32, 4, 1) if kernel == "bwd_dkdv" else _cfg(32, 16, 4, 1)
    wide = dtype == torch.float32
    if wide and d > 128:
        # fp32 tiles of 256-wide rows: the smallest tiles, single stage, to fit shared memory
        return _cfg(16, 32, 4, 1) if kernel != "fwd" else _cfg(32, 32, 4, 1)
    # The choices below compile without register spills (tools/triton_compile_check.py reads them);
    # wider tiles spilled on both targets.
    if arch_name.startswith("hip"):
        # MI300X: 64-wide wavefronts, 512 VGPRs (with AGPRs) per lane at occupancy 1.
        if kernel == "fwd":
            return _cfg(128, 64 if not wide else 32, 8 if d <= 64 else 4, 2) if d <= 128 else _cfg(64, 32, 4, 2)
        if kernel == "bwd_dkdv":
            return _cfg(16, 64 if d <= 128 else 32, 4, 2)
        return _cfg(128, 32, 8, 2) if d <= 64 else _cfg(64, 32, 4, 2)
    # NVIDIA (Hopper defaults; older parts get fewer stages)
    sm = int(arch_name.split("sm")[-1]) if "sm" in arch_name else 80
    stages = 3 if sm >= 80 else 2
    # d128 on the H200 (bench/results/h200-20261130-onepass/call3, same run): the TMA forward
    # with 128x128 tiles 5-14% faster than 128x64 plain loads at S >= 4k; dk/dv with 16x128
    # tiles (plain loads) 35-45% faster fwd+bwd than 32x64. Then (h200-20261130-final/call1):
    # dk/dv 32x128 a further 9-16% fwd+bwd at S >= 4k, though it spills (sm90 stack 48 B full,
    # 160 B causal): measured faster all the same.
    if kernel == "fwd":
        if d <= 64:
            # fp32 (tf32) with 3 stages hit a misaligned address under Triton 3.6 on the H200 at
            # d40, causal, GQA >= 2, Sq = Sk >= 64 (not at d32 / d48 / d80, nor with 2 stages, 64-row
            # or 32-key tiles or 8 warps: bench/results/h200-20261204-current call 10), as the dQ
            # kernel's 3 stages did (DQ_STAGES_MAX); fp32 takes 2, its autotune candidates too
            return _cfg(128, 64, 4, min(stages, FWD_FP32_STAGES_MAX) if wide else stages)
        if d <= 128:
            return _cfg(128, 128, 8, stages) if tma and not wide else _cfg(128, 64 if not wide else 32, 8, stages)
        return _cfg(64, 64 if not wide else 32, 8, 2)
    if kernel == "bwd_dkdv":
        if d <= 64:
            return _cfg(32, 128 if not wide else 64, 8, stages)
        if d <= 128:
            return _cfg(32, 128, 8, stages) if not wide and sm >= 90 else _cfg(32, 64, 8, stages)
        return _cfg(16, 64, 8, 2)
    # bwd_dq: 128x32 tiles with 8 warps and 3 stages break under Triton 3.6 on the H200: illegal or
    # misaligned addresses on varlen and on a dense bf16 1000x1000 d128 softcap call, and a silent
    # 27% dq error on a dense fp16 2331x33 d128 softcap call, every time; with 2 stages all run
    # right (bench/results/h200-20261130-onepass/call5). Two stages, see DQ_STAGES_MAX. 128x64
    # tiles (2 stages) were 7-12% faster fwd+bwd at d128, but faulted the same way (misaligned
    # address) on varlen calls with sequences of 0 and 1 tokens (h200-20261130-final/call2-3).
    if d <= 128:
        return _cfg(128 if not wide else 64, 32, 8, min(stages, DQ_STAGES_MAX))
    return _cfg(64, 32, 8, 2)


GLUON_BLOCK_M, GLUON_WARPS = 128, 4    # forward_gluon.py: two consumer warpgroups of 64 queries (or 192: three)
GLUON_BLOCK_N_BWD = 128                # backward_gluon.py to d128: two consumer warpgroups of 64 keys


def gluon_block_n_bwd(head_dim: int) -> int:
    """Keys per unit of backward_gluon.py's dK/dV kernel: two consumer warpgroups of 64 keys up to
    d128; past it 64 keys that both take, each owning half of dK's and dV's columns."""
    return 64 if block_d(head_dim) > 128 else GLUON_BLOCK_N_BWD


DQ_STAGES_MAX = 2      # NVIDIA bwd_dq with BLOCK_M 128 (see default)
FWD_FP32_STAGES_MAX = 2     # NVIDIA fwd (forward.py) in fp32 up to d64 (see default)


def dq_breaks_on_nvidia(cfg: dict) -> bool:
    """bwd_dq configurations that faulted or miscomputed on the H200 under Triton 3.6 (see
    default): 128-row tiles with more than DQ_STAGES_MAX stages or more than 32 keys."""
    return cfg["BLOCK_M"] >= 128 and (cfg["num_stages"] > DQ_STAGES_MAX or cfg["BLOCK_N"] > 32)


# Triton 3.6's ptxas crashes (SIGSEGV) on our TMA kernels with 2 stages: the d128 forward at
# 128x128 (h200-20261130-final/call1), the dq kernel's former TMA path (dense and varlen) and the
# d256 forward. Triton 3.7.1 compiles the same kernels for sm90 on the CPU; not run on a GPU yet.
TMA_MIN_STAGES = 3


def switches(kernel: str, arch_name: str, head_dim: int, fp8: bool) -> dict:
    """The kernels' algorithmic switches (FA_CK_TRITON_CONFIG may set them too).

    TMA (fwd, bwd_dkdv): stream tiles through Hopper's tensor memory accelerator. On by default
    where the H200 measured a gain: the forward at head dims 65-128 (bf16/fp16, with the wider
    tiles of `default`). At d64 plain loads were as fast or faster; dk/dv was slower with TMA
    than without at the same tiles (call3); Triton 3.6's ptxas crashes on the d256 forward and
    with fewer than TMA_MIN_STAGES stages. The dq kernel has no TMA path: it gained nothing
    (call2), and under Triton 3.6 it crashed ptxas with 2 stages and computed wrong results
    with 3. The launcher also needs tensors TMA can address and, for dk/dv, one q head per kv
    head (see backward()).
    GLUON (fwd): the Hopper forward written in Gluon (forward_gluon.py), whose softmax overlaps
    the PV multiply; sm90 at head dims up to 256 (fp8: 33-128, where q's and k's fp8 rows are
    16-byte aligned for TMA: multiples of 16), for the calls it serves (see
    launch_gluon._gluon_ok; others run forward.py). PINGPONG (with GLUON): its two consumer warpgroups
    take turns to issue their multiplies, so one's softmax runs under the other's. PERSISTENT
    (with GLUON): one program per SM walks the tiles, loading the next tile's Q, K and V under
    this one's tail. HOST_DESC (with GLUON): q, k, v go as TMA descriptors made on the host
    (never for varlen), not built per tile on the device. TMA_STORE (with HOST_DESC): out leaves
    through shared memory as a TMA store, not waited for until the next tile's (past d128 in two
    halves through a tile half as wide: fwd_gluon_out_cols).
    GLUON (bwd_dkdv): dK and dV by backward_gluon.py (sm90, head dims to 256, GQA where
    gqa_dkdv_gluon_wins and host-made descriptors can serve it); GLUON (bwd_dq): dQ by
    dq_gluon.py (sm90). On by default where `gluon_wins` (for the calls they serve).
    TMA_STORE (bwd_dq, with GLUON): dQ leaves through each warpgroup's rows of Q's tile (free
    once its multiplies are done) as a TMA store, not from the accumulator's registers.
    ONE_PASS (bwd_dkdv): dQ added inside the dK/dV kernel (never with deterministic=True): by
    the Gluon kernel's TMA reduce-adds, on by default wherever that kernel serves the call up to
    d128 (the launcher decides, once it knows): it beat the Gluon dK/dV + dQ pair on the H200 (bf16, same
    runs) at head dims 65-128 everywhere (h200-20261130-seventh call 5: fwd+bwd d128 S>=4k +8-16 %,
    S1024 +5-12 %), at d64 on masked calls (from 4k keys +6-7 %; the nanoGPT shape +6 % over
    backward.py's kernels, calls 5 and 9) and, since host-made descriptors, on full d64 calls
    (h200-20261130-tenth calls 1-3: S1024 +8.5 % and +14 % over backward.py's kernels, S4k +1-2 %
    over two passes, three runs). By backward.py's fp32 atomics only when asked (on the H200 that
    lost to two passes except at d128 causal S >= 4k, call1).
    HOST_DESC (bwd_dkdv, with GLUON): q, k, v, dO and dQ's fp32 buffer as host-made descriptors,
    as the forward has them; on by default where dkdv_host_desc_wins (the launcher decides: it
    knows the mask), and always for GQA (its units step through q heads by descriptor
    coordinate: "HOST_DESC": false is overridden there).
    FROM_ZERO (bwd_dkdv, with GLUON): S^T and dP^T start from zero, lse, delta and the mask applied
    after; with start values ptxas waits for S^T's multiply before issuing dP^T's
    (backward_gluon._bwd_consumer). LSE_PREP (bwd_dkdv, with GLUON): the kernel reads lse / scale
    (+inf for empty rows) that bwd_preprocess wrote once per row, not lse, converted per key block.
    On the H200 (h200-20261130-twelfth call 1, fwd+bwd, same run) d64 +2 to +8 % at five of six
    points (S16k causal level), nanoGPT +1.7 %; d128 -6 to +3 % then (its causal kernel spilled 8
    bytes more). Since (h200-20261202-kvregs calls 5 and 7, backward GPU time, same runs) d128 +1
    to +9 % to 4k keys, S16k full +4.5 %, causal level; d96 +7 %; d192-256 +1 to +3 %: on by
    default at every head dim.
    PERSISTENT (bwd_dkdv, with GLUON and host-made descriptors, more units than SMs): at most one
    program per SM, each taking 128-key units (64 past d128) in turn. With two K and V buffers
    (where shared memory holds them: the defaults' up to d64) the next unit's K, V, Q and dO load under this
    one's last steps; with one (d128) its loads wait for this unit's multiplies and overlap only
    its dK / dV stores. By default where dkdv_persistent_wins. DYNAMIC (with PERSISTENT and
    ONE_PASS): one program per SM, units past the first ones handed out by an atomic counter (as
    the hardware hands the next program to whichever SM frees), not round-robin; by default where
    dkdv_dynamic_wins. TMA_STORE (bwd_dkdv, with GLUON and host-made descriptors, up to d128,
    where shared memory holds two 64-row staging tiles beside the rest): dK and dV leave through
    shared memory as TMA stores, not from the accumulators' registers; by default where
    dkdv_tma_store_wins. TAIL_LPT (bwd_dkdv, with DYNAMIC, causal calls): the counter deals the
    last heads' units heaviest first across those heads, not head by head
    (launch_gluon._lpt_tail_heads). On the H200 (h200-20261203-no-q8 call 3, same run) causal
    fwd+bwd with GQA 4 at S2k-8k +6-8 % (d128 0.92-0.95x -> 0.99-1.01x of cuDNN, d64 0.89-0.90x
    -> 0.95-0.97x), without GQA at S4k +2-3 % (d128 0.98x -> 1.02x).
    RAW_MAX (fwd, both kernels): the softmax's row max of the raw scores, each scaled inside its
    exponential's argument (common.softmax_step), where host._raw_max allows (a positive scale,
    no softcap or ALiBi; fp8 only in the Gluon kernel, with any descales): one instruction
    fewer per score. On the H200 (h200-20261130-eleventh calls 2 and 8, same runs): the Gluon
    forward +3-12 %, forward.py +0.5-3.6 % at d64 and +0-1.3 % at d128; the Gluon fp8 forward at
    d128 (h200-20261130-twelfth call 1) +3.5 % at S4k, +7.5 % at S16k full, -2.3 % S16k causal.
    On gfx942 compile-checked only: VALU instructions -4 to -6 % per forward kernel, VGPRs at d128
    308/320 -> 286/291.
    P_REGS (fwd, GLUON, fp8: call_config decides): P stays in registers as the PV multiply's A
    operand, its keys and v's stored in an order that makes the QK^T accumulator's registers that
    operand (forward_gluon._keys_for_registers, quantize.key_position: quantising writes v so, a
    caller's fp8 v is copied so, quantize.keys_for_registers); else P is staged through shared
    memory (and a caller's keys-contiguous fp8 v is read as it comes). The loop's SASS at d128
    -17 %; on the H200 (h200-20261201-seventeenth calls 2-3, same runs) +1-2 % at S4k-16k, S1k
    +3 % full and +23 % causal.
    Q_CONVERT (fwd, GLUON, fp8 of 16-bit inputs whose q TMA can read: call_config decides): the
    kernel rounds q itself from q's amax bits, bit for bit as quantize_kernel, which then writes
    no q8. On the H200 (h200-20261203-late-wait call 2, 5 rounds, same run) d128 +0.5 to +3.0 %
    at S1k-16k (S1k full 0.75 -> 0.78x of cuDNN, S16k full 1.33 -> 1.35x); the quantisation's
    GPU time at 16k tokens 127-132 -> 103-109 us (call 5).
    LATE_SUM (fwd, GLUON; call_config decides per call, decisions.fwd_late_sum_wins): each block's row sums are
    added in the next block, not beside the exponentials, where each sum's FADD waited on a
    MUFU.EX2 two before it. Any two-warpgroup Gluon forward can take it; on by default for fp8 of
    16-bit inputs but masked calls past d64 that do not stream the diagonal first
    (h200-20261203-timeline call 5: d128 full S4k 1.14 -> 1.24x of cuDNN's bf16 forward, S16k
    1.35 -> 1.41x, d64 +6-16 %), not for 16-bit calls (call 6: d64 level or -2 to -5 %; at d128
    it spills).
    F16_SCORES, EXP2_POLY (fwd, GLUON, fp8 of 16-bit inputs; on by default, EXP2_POLY 4, where
    decisions.fwd_f16_scores takes them): q and k quantised to 16 (F16_SCORES_QK_MAX), QK^T summed
    into f16, the loop's softmax on f16 pairs (softmax_f16.py); EXP2_POLY 2 or 4: 1 in that many
    exponentials by a quadratic on the FMA pipe. Heads whose scale could carry a score past f16
    take the wide form of the f16 step (softmax_f16._f16_scores_fit, _f16_step's F16_WIDE); F16_WIDE
    true: every tile takes it, the one-fma step not compiled (the default on 256-key blocks past d64:
    call_config, decisions.fwd_f16_wide_only). Full
    calls then take 256-key blocks (decisions.fwd_fp8_wide_blocks). On the H200 (h200-20261204-emu
    call 2, 2 rounds, x cuDNN's bf16 kernel in the same run) F16_SCORES with EXP2_POLY 4 ran d128
    S4k full / causal 1.33 / 1.35x -> 1.43 / 1.49x, S16k 1.44 / 1.46x -> 1.53 / 1.60x, d64 S4k full
    1.16 -> 1.18x, errors unchanged; alone, F16_SCORES was -3 to +6 %."""
    sm = int(arch_name.split("sm")[-1]) if arch_name.startswith("cuda:sm") else 0
    d = block_d(head_dim)
    if kernel == "bwd_dq":
        return {"GLUON": sm == 90 and d <= 256, "TMA_STORE": True}
    out = {"TMA": sm >= 90 and 64 < d <= 128 and not fp8 and kernel == "fwd"}
    if kernel == "fwd":
        out["RAW_MAX"] = True                # where host._raw_max allows (both forward kernels)
        # fp8 (h200-20261130-bwd call 9): +5-22 % over forward.py's fp8 kernel at d128; at d64 -9 %
        # then, since P in registers (h200-20261201-eighteenth call 2, 3 rounds) level on full calls
        # (-1 to +2 %), causal +4 % (S1k) to +13-15 % (S4k / S16k)
        # d256 (h200-20261201-fourteenth call 6, same run): 0.85-1.07x of cuDNN, forward.py 0.36-0.41x
        out["GLUON"] = sm == 90 and d <= (128 if fp8 else 256) and (not fp8 or d >= 64)
        out["PINGPONG"] = False
        # h200-20261130-eighth call 5 (with host-made descriptors, same run): d128 S1024 full
        # +8 %, S4k +4-7 %, S16k -2..+1 %, d64 S16k +2 %; S1024 causal too noisy to call.
        out["PERSISTENT"] = True
        out["HOST_DESC"] = True
        # h200-20261130-eighth call 6 (same run): d128 forward +1 to +12 % at five of six points
        # (S1024 full 0.87 -> 0.98x), -1 % at S16k full; at d64 then -4 to +1 %. Since the raw
        # row max (h200-20261130-eleventh calls 5-6, same runs) d64 too: nanoGPT +4 % twice,
        # causal S1024 / S4k +2.7 % twice, full S1024-16k -2.7 to +1.2 %. Past d128, through tiles
        # half as wide (h200-20261202-d256 call 1, GPU time, same run): d256 S512 full 0.76 ->
        # 0.97x of cuDNN, causal 0.79 -> 1.02x, S1024 0.81 / 0.84 -> 1.00 / 1.09x, S4k 0.95 / 1.05
        # -> 1.01 / 1.14x, d192 S512 0.69 / 0.74 -> 0.85 / 0.90x: the plain stores' epilogue took
        # 5.4 us per d256 tile, the TMA store's 1.1
        out["TMA_STORE"] = True
        out["P_REGS"] = True                 # (fp8 in the Gluon kernel only)
        out["Q_CONVERT"] = True              # (fp8 of 16-bit inputs in the Gluon kernel only)
        out["LATE_SUM"] = True               # (the Gluon kernel's: call_config decides, decisions.fwd_late_sum_wins)
        if fp8:
            # causal calls in whole tiles (fwd_whole_blocks): h200-20261203-timeline call 8 (3 rounds,
            # same run, x cuDNN's bf16 forward) d128 causal S1k / S4k / S16k 0.63 / 1.08 / 1.36x ->
            # 0.65 / 1.12 / 1.41x, d64 causal 0.59 / 0.95 / 1.18x -> 0.62 / 0.99 / 1.24x
            out["FP8_DIAG_FIRST"] = True
            # where decisions.fwd_f16_scores takes it; the wide f16 step for heads whose scale
            # could carry a score past f16 (softmax_f16._f16_scores_fit), on every tile of 256-key
            # blocks past d64 (F16_WIDE, not a switch of its own: call_config decides it per tiles)
            out["F16_SCORES"] = True
            out["EXP2_POLY"] = 4
            out["Q16_EARLY"] = True          # (with Q_CONVERT) where decisions.fwd_q16_early_wins
    if kernel == "bwd_dkdv":
        out["ONE_PASS"] = False
        out["GLUON"] = sm == 90 and d <= 256
        out["HOST_DESC"] = True              # where dkdv_host_desc_wins; the launcher decides
        out["FROM_ZERO"] = True              # where dkdv_from_zero_wins; the launcher decides
        # d128 (h200-20261202-kvregs call 5, GPU time, same run): S512-4k +1 to +9 % (S1024 full
        # 0.88 -> 0.95x of cuDNN), S16k full +4 %, causal level; the dQ wgmma no longer waits for
        # the next block's lse load. (Measured -6 to +3 % in h200-20261130-twelfth call 1, with
        # older kernels.) Past d128 and at d96 (call 7): d256 +1 to +3 %, d192 causal +1 %, d96 +7 %
        # at S1024 full.
        out["LSE_PREP"] = True
        out["TMA_STORE"] = True              # where dkdv_tma_store_wins; the launcher: up to d128, where it fits
        out["PERSISTENT"] = False            # where dkdv_persistent_wins; _work_out_config decides
        out["DYNAMIC"] = False               # where dkdv_dynamic_wins; _work_out_config decides
        if out["GLUON"]:
            out["TAIL_LPT"] = True           # DYNAMIC's causal calls (launch_gluon._lpt_tail_heads)
    return out


# F16_SCORES: q and k quantised to this max, not the format's, so that a sum of 128 products of
# them (a score, summed in f16 by the Gluon fp8 kernel) stays under f16's 65504 (16 * 16 * 128 = 32768)
F16_SCORES_QK_MAX = 16.0
SMEM_BYTES_SM90 = 232448      # shared memory a program may have on sm90 (227 KB)


def fwd_gluon_smem(head_dim: int, cfg: dict, dtype: torch.dtype, fp8: bool = False, out_bytes: int = 0) -> int:
    """Shared memory (bytes) forward_gluon.py allocates: Q (fp8 with Q_CONVERT: and its 16-bit
    tile), the K and V rings, P for fp8 (unless P_REGS), out's staging tiles for TMA_STORE
    (fwd_gluon_out_cols), and a little for its barriers."""
    d = fp8_block_d(head_dim) if fp8 else block_d(head_dim)
    elem = 1 if fp8 else torch.finfo(dtype).bits // 8
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    q_rows = 256 if bm == 192 else bm         # (192 queries: four 64-row tiles, shapes being powers of two)
    total = q_rows * d * elem + 2 * cfg["num_stages"] * bn * d * elem + \
        (q_rows * bn if fp8 and not cfg.get("P_REGS") else 0) + \
        (q_rows * d * 2 if fp8 and cfg.get("Q_CONVERT") else 0)
    if cfg.get("TMA_STORE"):
        total += bm * fwd_gluon_out_cols(head_dim, cfg, dtype, fp8, out_bytes) * (out_bytes or (4 if fp8 else elem))
    return total + 1024


def fwd_gluon_out_cols(head_dim: int, cfg: dict, dtype: torch.dtype, fp8: bool = False, out_bytes: int = 0) -> int:
    """Columns of the tile of out that each consumer warpgroup stages in shared memory for
    TMA_STORE (64 rows of out_bytes elements; by default the input's, 4 for fp8, whose out may be
    float32): the whole head dim where that fits, else half of it, out then leaving in two
    stores (head dims past 128: Q and the rings take 192 KB)."""
    d = fp8_block_d(head_dim) if fp8 else block_d(head_dim)
    elem = out_bytes or (4 if fp8 else torch.finfo(dtype).bits // 8)
    rest = fwd_gluon_smem(head_dim, dict(cfg, TMA_STORE=False), dtype, fp8)
    return d if rest + cfg["BLOCK_M"] * d * elem <= SMEM_BYTES_SM90 else d // 2


def dq_gluon_smem(head_dim: int, cfg: dict, dtype: torch.dtype) -> int:
    """Shared memory (bytes) dq_gluon.py's dQ kernel allocates: Q and dO of its 128 queries,
    the K and V rings, and a little for its barriers."""
    d, elem = block_d(head_dim), torch.finfo(dtype).bits // 8
    return 2 * GLUON_BLOCK_M * d * elem + 2 * cfg["num_stages"] * cfg["BLOCK_N"] * d * elem + 1024


def dkdv_gluon_smem(head_dim: int, cfg: dict, dtype: torch.dtype, num_kv: int = 1) -> int:
    """Shared memory (bytes) backward_gluon.py's dK/dV kernel allocates: num_kv K and V tiles,
    the Q and dO rings, P^T with STAGE_P or past d128, dS^T with STAGE_P, ONE_PASS or past d128,
    dQ's two fp32 tiles with ONE_PASS, dK's / dV's two staging tiles with TMA_STORE (up to
    d128), and a little for its barriers."""
    d, elem = block_d(head_dim), torch.finfo(dtype).bits // 8
    bm, bn = cfg["BLOCK_M"], gluon_block_n_bwd(head_dim)
    total = 2 * num_kv * bn * d * elem + 2 * cfg["num_stages"] * bm * d * elem
    if cfg.get("STAGE_P") or d > 128:
        total += bn * bm * elem
    if cfg.get("STAGE_P") or cfg.get("ONE_PASS") or d > 128:
        total += bn * bm * elem
    if cfg.get("ONE_PASS"):
        total += bm * d * 4
    if cfg.get("TMA_STORE") and d <= 128:
        total += 2 * 64 * d * elem
    return total + 1024


def candidates(kernel: str, arch_name: str, head_dim: int, dtype: torch.dtype, tma: bool = False,
               gluon: bool = False) -> list[dict]:
    """A short list around the default: every candidate costs a compile during the search.
    tma: the kernel streams through TMA (fewer than TMA_MIN_STAGES stages are left out)."""
    d = block_d(head_dim)
    if gluon and kernel == "fwd":   # 3-deep rings fit shared memory up to d128; at d256 what fits
        out = [_cfg(GLUON_BLOCK_M, bn, GLUON_WARPS, st) for bn in (128, 64, 32) for st in (2, 3)]
        if 32 <= d <= 64 and dtype in (torch.float16, torch.bfloat16):   # three consumer warpgroups
            out += [_cfg(192, 128, GLUON_WARPS, st) for st in (2, 3)]
        return [c for c in out if (d <= 128 and c["BLOCK_N"] > 32)
                or (d > 128 and fwd_gluon_smem(head_dim, c, dtype) <= SMEM_BYTES_SM90)]
    if gluon and kernel == "bwd_dq":
        if d > 128:               # (3-deep rings spill 40 bytes causal and were faster all the same)
            return [_cfg(GLUON_BLOCK_M, 32, GLUON_WARPS, st) for st in (3, 2)]
        return [_cfg(GLUON_BLOCK_M, bn, GLUON_WARPS, st) for bn in ((64, 128) if d <= 64 else (64,)) for st in (2, 3)]
    if gluon and d > 128:         # 64 or 128 queries per step (the latter single-buffered: shared memory)
        return [dict(_cfg(64, 64, GLUON_WARPS, 2), STAGE_P=False), dict(_cfg(128, 64, GLUON_WARPS, 1), STAGE_P=False)]
    if gluon:
        if d <= 64:
            return [_cfg(bm, GLUON_BLOCK_N_BWD, GLUON_WARPS, st) for bm in (64, 32) for st in (2, 3)]
        return [dict(_cfg(64, GLUON_BLOCK_N_BWD, GLUON_WARPS, 2), STAGE_P=stage) for stage in (False, True)] + \
            [dict(_cfg(32, GLUON_BLOCK_N_BWD, GLUON_WARPS, st), STAGE_P=False) for st in (2, 3)]
    hip = arch_name.startswith("hip")
    stages = (1, 2) if hip else (2, 3, 4)
    if kernel == "fwd":
        tiles = [(128, 64), (128, 128), (64, 64), (128, 32)] if d <= 128 else [(64, 64), (64, 32), (32, 64)]
    elif kernel == "bwd_dkdv":
        tiles = [(32, 128), (32, 64), (16, 64), (64, 128)] if d <= 128 else [(16, 64), (16, 32), (32, 32)]
    else:
        tiles = [(128, 32), (64, 32), (128, 64), (64, 64)] if d <= 128 else [(64, 32), (32, 32), (64, 16)]
    out = [_cfg(bm, bn, w, stages[1]) for bm, bn in tiles for w in (4, 8)]
    out += [_cfg(*tiles[0], w, s) for w in (4, 8) for s in (stages[0], stages[-1])]
    if kernel == "bwd_dq" and not hip:   # never search into the configuration that breaks
        out = [c for c in out if not dq_breaks_on_nvidia(c)]
    if kernel == "fwd" and not hip and dtype == torch.float32 and d <= 64:     # (nor into that one)
        out = [dict(c, num_stages=min(c["num_stages"], FWD_FP32_STAGES_MAX)) for c in out]
    if tma:
        out = [c for c in out if c["num_stages"] >= TMA_MIN_STAGES]
    dflt = default(kernel, arch_name, head_dim, dtype, tma)
    uniq = []
    for c in [dflt] + out:
        if c not in uniq:
            uniq.append(c)
    return uniq


# Keys FA_CK_TRITON_CONFIG may set per kernel: tile sizes and launch settings, and the
# kernels' algorithmic switches (see forward.py and backward.py).
OVERRIDABLE = {
    "fwd": ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages", "TMA", "GLUON", "PINGPONG", "PERSISTENT", "HOST_DESC",
            "TMA_STORE", "RAW_MAX", "P_REGS", "Q_CONVERT", "LATE_SUM", "FP8_DIAG_FIRST",
            "F16_SCORES", "EXP2_POLY", "F16_WIDE", "Q16_EARLY"),
    "bwd_dkdv": ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages", "ONE_PASS", "TMA", "GLUON", "STAGE_P", "HOST_DESC",
                 "FROM_ZERO", "LSE_PREP", "PERSISTENT", "DYNAMIC", "TMA_STORE", "TAIL_LPT"),
    "bwd_dq": ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages", "GLUON", "TMA_STORE"),
}


def overrides(kernel: str) -> dict:
    """FA_CK_TRITON_CONFIG, read at call time: JSON {kernel: {key: value}} merged over the chosen
    config, e.g. '{"bwd_dkdv": {"BLOCK_M": 32, "ONE_PASS": false}, "fwd": {"TMA": false}}'. For measuring
    variants (bench/kernels.py --variant) and for working around a config that misbehaves."""
    text = os.environ.get("FA_CK_TRITON_CONFIG", "").strip()
    if not text:
        return {}
    try:
        table = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"FA_CK_TRITON_CONFIG is not JSON ({e}): {text!r}") from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise ValueError(f"FA_CK_TRITON_CONFIG must map kernel names to objects, got {text!r}")
    for name, cfg in table.items():
        if name not in OVERRIDABLE:
            raise ValueError(f"FA_CK_TRITON_CONFIG: unknown kernel {name!r} (expected one of {sorted(OVERRIDABLE)})")
        bad = sorted(set(cfg) - set(OVERRIDABLE[name]))
        if bad:
            raise ValueError(f"FA_CK_TRITON_CONFIG[{name!r}]: unknown keys {bad} (allowed: {OVERRIDABLE[name]})")
    return dict(table.get(kernel, {}))
