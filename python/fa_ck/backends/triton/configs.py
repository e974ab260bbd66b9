"""Block sizes, warps and stages per kernel, architecture and head dim.

`default(...)` is the heuristic used when autotune is off; `candidates(...)` is the space
searched when it is on (tuning.pick caches the winner on disk).
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
            return _cfg(128, 64, 4, stages)
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


def fwd_late_sum_wins(head_dim: int, masked: bool, own_fp8: bool, diag_first: bool = False) -> bool:
    """Whether the Gluon forward adds each block's row sums in the next block (LATE_SUM): for fp8
    of 16-bit inputs (own_fp8: P in registers) everywhere but masked calls (causal, windows) at
    head dims 65-128 whose loop branches on the mask per block (diag_first: the call streams each
    tile's diagonal block first, fwd_whole_blocks, so its loop has no masked softmax and takes it);
    not yet for 16-bit calls or a caller's fp8 (not measured).
    h200-20261203-timeline call 5 (3 rounds, same run, x SDPA cuDNN's bf16 forward): d128 full
    S1k / S4k / S16k 0.79 / 1.14 / 1.35x -> 0.83 / 1.24 / 1.41x; d64 full 0.74 / 0.98 / 1.10x ->
    0.79 / 1.12 / 1.26x, causal 0.59 / 0.88 / 1.05x -> 0.59 / 0.95 / 1.19x; but d128 causal 0.63 /
    1.10 / 1.37x -> 0.63 / 1.08 / 1.33x (its loop, which branches on the mask per block, spills
    more: 15 spill stores against 12 in the sm90 compile). With the diagonal's block first
    (call 8, 3 rounds, same run) d128 causal S1k / S4k / S16k 0.65 / 1.12 / 1.41x -> 0.66 / 1.13 /
    1.42x (its loop spills nothing either way)."""
    return own_fp8 and (block_d(head_dim) <= 64 or not masked or diag_first)


def fwd_gluon_short_causal(head_dim: int, right_edge_at_diagonal: bool, seqlen_q: int, seqlen_k: int,
                           fp8: bool) -> bool:
    """Whether the Gluon forward takes 64 keys per block, not 128: at head dims 33-64, 16-bit, where
    the right edge is the diagonal (causal, with or without a left window), seqlen_k <= 512 and
    seqlen_q >= seqlen_k, so that a tile of 128 queries sees at most 4 blocks of 128 keys and
    2.5 on average. Such tiles are short chains (QK^T, the masked softmax, PV, the epilogue) that
    nothing overlaps; with half-size blocks the next block's QK^T runs under the first one's
    softmax. h200-20261201-twentieth call 1 (B32 H32 d64 S512 causal, GPU time with the host
    hidden, same run): 174.7 us against 200.7 with 128 keys (cuDNN 133.8: 0.67x -> 0.77x). Lost
    where tiles see more blocks: S512 full 231.6 us against 205.7, S1024 causal 262.6 against
    237.7, nanoGPT's shape 387.6 against 343.9; level at d128 S512 causal (122.4 against 125.2)."""
    return (block_d(head_dim) == 64 and right_edge_at_diagonal and not fp8 and seqlen_k <= 512
            and seqlen_q >= seqlen_k)


def fwd_gluon_three_warpgroups(head_dim: int, masked: bool, seqlen_q: int, seqlen_k: int, fp8: bool,
                               varlen: bool, heads: int, sm_count: int) -> bool:
    """Whether the Gluon forward takes 192 queries per tile (three consumer warpgroups of 64,
    BLOCK_M 192: FlashAttention-3's d64 tile), not 128: at head dims 17-64, 16-bit, on full
    attention (no causal mask or window), not varlen, from 2048 queries and keys, where the
    grid's tiles fill the GPU's SMs as well (heads: batch x q heads; see below). A third warp
    per scheduler hides more of the softmax's latencies, which at d64 weigh as much as the
    multiplies. h200-20261202-three-wg (bf16, GPU time with the host hidden, same runs): call 2,
    d64 S2k-16k full 0.92-0.96x -> 0.98-1.02x of cuDNN; call 4, d32 S4k / S16k 1.06x / 1.10x ->
    1.20x / 1.21x, d48 S4k 0.92x -> 0.97x (d16 not timed). Lost elsewhere (call 1, d64): S512 /
    S1024 full -2 / -6 % (the last tile of a head mostly past the sequence: 1024 = 5.33 x 192),
    causal -3 to -50 % (a tile's warpgroups see different numbers of 128-key blocks on the
    diagonal and wait for the slowest; at S1024 the last tile's rows past the sequence still
    walk every block).
    Fewer, longer tiles fill fewer SMs: with 8 heads of 4096 queries, 256 tiles of 128 take two
    rounds of 132 SMs and 176 tiles of 192 take two rounds too, each 1.4 times as long. So 192
    only where its rounds of tiles, each costing THREE_WG_TILE_COST of a 128-query tile, come out
    shorter (every timed point: 2752-2816 tiles of 192, predicted 2.7-7 % shorter, measured 5-6 %)."""
    if not (32 <= block_d(head_dim) <= 64 and not masked and not fp8 and not varlen and seqlen_q >= 2048
            and seqlen_k >= 2048):
        return False
    rounds = [-(-heads * -(-seqlen_q // bm) // max(sm_count, 1)) for bm in (128, 192)]
    return rounds[1] * THREE_WG_TILE_COST < rounds[0]


# A 192-query tile's time in 128-query tiles: 1.5 times the work, done 6 % faster (h200-20261202-three-wg
# calls 1-2 at d64 S4k-16k full: 4458.8 us against 4725.0, 1161.2 against 1232.6)
THREE_WG_TILE_COST = 1.5 / 1.06


def gluon_block_n_bwd(head_dim: int) -> int:
    """Keys per unit of backward_gluon.py's dK/dV kernel: two consumer warpgroups of 64 keys up to
    d128; past it 64 keys that both take, each owning half of dK's and dV's columns."""
    return 64 if block_d(head_dim) > 128 else GLUON_BLOCK_N_BWD


def gluon_wins(kernel: str, head_dim: int, seqlen_k: int, masked: bool = False, group: int = 1) -> bool:
    """Where a Gluon kernel beat its Triton twin on the H200 (bf16, same runs); masked: causal or
    a sliding window.
    fwd: everywhere since its softmax takes the row max of the raw scores (h200-20261130-eleventh
    call 2, same run: at d64 S1024 causal 0.77x -> 0.85x cuDNN and the nanoGPT shape 0.80x ->
    0.88x, where forward.py had served). Before that (h200-20261130-gluon): at head dims 65-128 everywhere (call 4: +13-22% at
    S >= 4k; call 6, timed alternately: +4-10% at S1024-2048, causal or not); at d64 from S4k and
    on full calls (persistent, host-made descriptors; h200-20261130-ninth call 2, 5 rounds: S4k
    causal +9 %, full +4 %, S1024 full +4 %; S1024 causal -1 %, the nanoGPT shape +1 %: level, so
    forward.py stays there). Before persistence (call 4): at d64 S4k -4 to -6%, S1024 causal -10%,
    the nanoGPT shape -30% (descriptors per tile and pipeline fill not amortised).
    bwd_dq (h200-20261130-bwd, call 6, fwd+bwd with 3-deep rings): d128 +7-24% at every length;
    d64 +3-10% from S4k, -4 to -6% at S1024 (nanoGPT's shape among them).
    bwd_dkdv, since it adds dQ itself (ONE_PASS; h200-20261130-seventh calls 5, 9): at head
    dims 65-128 everywhere (S1024 +5-12 % over backward.py's dK/dV and the Gluon dQ); at d64 from
    S4k, and on masked calls at any length (the nanoGPT shape +6 %, twice). Since host-made
    descriptors (h200-20261130-tenth calls 1-3, fwd+bwd, same run): also d64 full S1024, the one
    point left to backward.py's kernels, +8.5 % and +14 % (two runs): everywhere.
    Past d128 (h200-20261201-fifteenth calls 1-3, fwd+bwd at d256 S1k-16k, same runs): both Gluon
    kernels 0.92-0.98x of cuDNN (3-deep dQ rings: 0.95-1.11x) where backward.py's gave 0.28-0.37x.
    Before that (calls 1, 5, 6): from S4k, d128 causal +10-14% and d64 +4-18%; d128 full -2 to -5%
    (32 queries per step there: 64 spilled) and S1024 -3 to -10%. With 64 staged queries per step
    at d128 (h200-20261130-sixth calls 2-3): +3-7 % fwd+bwd over those choices from S4k, causal
    or not; at S1024 -5 % full, and causal +8 % in one run, -11 % in the next (that point swings
    between runs), so from 4k keys only, as at d64.
    GQA's dK/dV (group q heads per kv head): see gqa_dkdv_gluon_wins."""
    d = block_d(head_dim)
    if kernel == "fwd":
        return True
    if kernel == "bwd_dq":
        return d > 64 or seqlen_k >= 4096
    return gqa_dkdv_gluon_wins(group, seqlen_k, masked)


def gqa_dkdv_gluon_wins(group: int, seqlen_k: int, masked: bool) -> bool:
    """Where GQA's dK and dV (group q heads per kv head) came faster from the Gluon kernel, each
    unit stepping through its kv head's q heads, than from backward.py's kernel (which served GQA
    before), fwd+bwd on the H200 (bf16, same run, h200-20261201-fifteenth call 9): 4 q heads per
    kv head at d128 S1k-16k +13-20 %, d256 S4k 2.2-2.5x; 8 at d64 S4k +18-20 %, at S1024 full
    +16 % but causal -21 % (256 units of 128 keys on 132 SMs, each walking 8 heads' query
    blocks: too few, too uneven units for the tail). So not for masked calls of more than 4 q
    heads per kv head up to 1024 keys (one point measured there, keyed on the length rather than
    the unit count that explains it; groups 5-7 and above 8 untimed). Asked for
    ('{"bwd_dkdv": {"GLUON": true}}'), GQA takes the Gluon kernel there too."""
    return group == 1 or not (masked and group > 4 and seqlen_k <= 1024)


def dkdv_host_desc_wins(head_dim: int, masked: bool, seqlen_k: int, causal: bool = False) -> bool:
    """Where the Gluon dK/dV kernel on host-made descriptors (HOST_DESC) beat the same kernel
    building its descriptors per program, fwd+bwd on the H200 (bf16, same run,
    h200-20261130-ninth call 1): d64 everywhere (the nanoGPT shape +15 %, causal +2-5 %, full
    0 to -1 %), d128 full +1-4 %. d128 causal then lost (S1024 -24 %, S4k and S16k -1 %), before
    repeated calls replayed their plans; since (h200-20261130-tenth calls 1 and 6) S1024 +8 %
    twice, S4k level (-1 %, +0.4 %), S16k -1 % and -8 %: below 4k keys only. Since LSE_PREP
    (h200-20261202-kvregs call 9, backward GPU time, one run) d128 causal S4k +3.5 %, S16k level;
    and a persistent grid (dkdv_dynamic_wins) needs them: on causal calls up to d128 too (other
    windows not measured). causal: the mask is causal's alone (window_right 0, no window_left)."""
    return block_d(head_dim) <= 64 or not masked or seqlen_k < 4096 or (causal and block_d(head_dim) <= 128)


def dkdv_from_zero_wins(head_dim: int, masked: bool = False) -> bool:
    """Where the Gluon dK/dV kernel's S^T and dP^T multiplies starting from zero (FROM_ZERO) beat
    starting from -lse / scale and -delta, fwd+bwd on the H200 (bf16, same run,
    h200-20261130-tenth call 3): d64 full S4k +8 % (two passes); masked calls -1 to -3 % (their
    mask is applied after the multiply, on its critical path); d128 -2 to -7 % everywhere (80-112
    bytes of spills)."""
    return block_d(head_dim) <= 64 and not masked


def dkdv_dynamic_wins(head_dim: int, causal: bool = False, seqlen_k: int = 0, group: int = 1) -> bool:
    """Where the persistent Gluon dK/dV grid taking its units from an atomic counter (DYNAMIC)
    beat round-robin units and one program per unit, fwd+bwd on the H200 (bf16, same run,
    h200-20261130-thirteenth call 1): d64 +2 to +4 % over one program per unit from 4k keys
    (S16k causal level, where round-robin lost 19 %), S1024 full +5 %, causal and nanoGPT level
    with round-robin; d128 -2 to -3.5 % at five of six points (one K / V buffer: the next unit's
    loads wait for this one's multiplies). Since LSE_PREP (h200-20261202-kvregs call 9, backward
    GPU time, one run, d128): causal S4k +5 % over one program per unit (0.88x -> 0.92x of
    cuDNN), S16k level, S1024 -2 %, full S4k -2 %: so also on causal d65-128 calls from 2k keys
    (their units differ in length, and the counter hands the short ones out last; other windows
    not measured): h200-20261203-threshold call 1, four runs (bf16 and fp16, two each), S2048
    +1.8-2.0 %, S3072 +1.2-2.0 % (once +6.2 %), S4k level, S1024 -2 % again. With GQA (group q
    heads per kv head, whose units weigh group-fold) and the counter's tail dealt heaviest first
    (TAIL_LPT) from 1k keys too: h200-20261203-no-q8 calls 4-5 (fwd+bwd, two runs), d128 S1024
    causal GQA 4 0.90-0.91x -> 1.02-1.03x of cuDNN (round-robin programs before), GQA 2 0.94x ->
    0.97x, S512 level; without GQA S1024 0.97x against 1.02x (a run where two identical
    configs differed by 6 %): not there. causal: as in dkdv_host_desc_wins."""
    d = block_d(head_dim)
    return d <= 64 or (d <= 128 and causal and (seqlen_k >= 2048 or (group > 1 and seqlen_k >= 1024)))


def dkdv_tma_store_wins(seqlen_q: int, group: int = 1, one_pass: bool = True, head_dim: int = 128) -> bool:
    """Where the Gluon dK/dV kernel's dK and dV by TMA stores (TMA_STORE) beat plain stores from
    the accumulators, the backward's GPU time on the H200 (bf16, same runs, one-pass calls of one
    q head per kv head, h200-20261202-dkdv-store calls 1 and 3): units of few query blocks, whose
    epilogue weighs. d128 S512 causal 0.85x -> 0.97x of cuDNN, full 0.85x -> 0.93x, S1024 causal
    0.86x -> 0.95x, full 0.84x -> 0.89x; d64 S512 causal 1.00x -> 1.09x, nanoGPT's shape 0.95x ->
    1.00x; two-pass d64 full (call 6) S512 0.99x -> 1.09x, S1024 0.94x -> 1.01x. At d128 S4k they
    lost 2 % (causal) and 4 % (full). Up to 1024 query rows; GQA and two-pass calls past d64 (not
    measured; 8-16 bytes more spills under Triton 3.7.1) keep plain stores."""
    return seqlen_q <= 1024 and group == 1 and (one_pass or block_d(head_dim) <= 64)


def dkdv_persistent_wins(head_dim: int, seqlen_k: int, dynamic: bool) -> bool:
    """Where a persistent Gluon dK/dV grid (PERSISTENT) beat one program per unit, fwd+bwd on the
    H200 (bf16, same runs): with DYNAMIC (dkdv_dynamic_wins, which needs ONE_PASS) everywhere.
    Round-robin (h200-20261130-twelfth call 4, program count coprime to the key blocks per head):
    at 1024 keys, the nanoGPT shape +3.5 %, d64 causal +3 %, d128 causal +5 %, full level (+0.3 %,
    +0.7 %); from 4k keys level to -6 % (d128) and to -19 % (d64 S16k causal): a static
    round-robin of units whose lengths differ up to 128-fold, against the hardware's dispatch
    of the next program to whichever SM is free."""
    return dynamic or seqlen_k <= 1024


DQ_STAGES_MAX = 2      # NVIDIA bwd_dq with BLOCK_M 128 (see default)


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
    no softcap or ALiBi; fp8 only in the Gluon kernel, on fa_ck's own descales): one instruction
    fewer per score. On the H200 (h200-20261130-eleventh calls 2 and 8, same runs): the Gluon
    forward +3-12 %, forward.py +0.5-3.6 % at d64 and +0-1.3 % at d128; the Gluon fp8 forward at
    d128 (h200-20261130-twelfth call 1) +3.5 % at S4k, +7.5 % at S16k full, -2.3 % S16k causal.
    On gfx942 compile-checked only: VALU instructions -4 to -6 % per forward kernel, VGPRs at d128
    308/320 -> 286/291.
    P_REGS (fwd, GLUON, fp8 of 16-bit inputs: __init__ decides): P stays in registers as the PV
    multiply's A operand, its keys and v's stored in an order that makes the QK^T accumulator's
    registers that operand (forward_gluon._keys_for_registers, quantize.key_position); else P is
    staged through shared memory (a caller's fp8 v, read as it comes: asking P_REGS there is an
    error where the Gluon kernel would run). The loop's SASS at d128
    -17 %; on the H200 (h200-20261201-seventeenth calls 2-3, same runs) +1-2 % at S4k-16k, S1k
    +3 % full and +23 % causal.
    Q_CONVERT (fwd, GLUON, fp8 of 16-bit inputs whose q TMA can read: __init__ decides): the
    kernel rounds q itself from q's amax bits, bit for bit as quantize_kernel, which then writes
    no q8. On the H200 (h200-20261203-late-wait call 2, 5 rounds, same run) d128 +0.5 to +3.0 %
    at S1k-16k (S1k full 0.75 -> 0.78x of cuDNN, S16k full 1.33 -> 1.35x); the quantisation's
    GPU time at 16k tokens 127-132 -> 103-109 us (call 5).
    LATE_SUM (fwd, GLUON; __init__ decides per call, fwd_late_sum_wins): each block's row sums are
    added in the next block, not beside the exponentials, where each sum's FADD waited on a
    MUFU.EX2 two before it. Any two-warpgroup Gluon forward can take it; on by default for fp8 of
    16-bit inputs but masked calls past d64 that do not stream the diagonal first
    (h200-20261203-timeline call 5: d128 full S4k 1.14 -> 1.24x of cuDNN's bf16 forward, S16k
    1.35 -> 1.41x, d64 +6-16 %), not for 16-bit calls (call 6: d64 level or -2 to -5 %; at d128
    it spills)."""
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
        out["LATE_SUM"] = True               # (the Gluon kernel's, where fwd_late_sum_wins: __init__ decides)
        if fp8:
            # causal calls in whole tiles (fwd_whole_blocks): h200-20261203-timeline call 8 (3 rounds,
            # same run, x cuDNN's bf16 forward) d128 causal S1k / S4k / S16k 0.63 / 1.08 / 1.36x ->
            # 0.65 / 1.12 / 1.41x, d64 causal 0.59 / 0.95 / 1.18x -> 0.62 / 0.99 / 1.24x
            out["FP8_DIAG_FIRST"] = True
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


SMEM_BYTES_SM90 = 232448      # shared memory a program may have on sm90 (227 KB)


def fwd_whole_blocks(sq: int, sk: int, bm: int, bn: int, window_left: int, window_right: int, varlen: bool,
                     fp8: bool, pingpong: bool = False, fp8_diag_first: bool = False) -> tuple:
    """(EVEN_N, DIAG_FIRST) for the Gluon forward (forward_gluon.fwd_gluon_kernel). EVEN_N: the keys
    fill whole blocks, so without a window no block needs the mask. DIAG_FIRST: causal 16-bit calls
    whose queries fill whole 128-row tiles and keys whole key blocks: then in every tile, for each
    warpgroup, the diagonal's block is the only one masked among those it reads, and with 64-key
    blocks (no PINGPONG) the one it cannot see is the tile's last (test_gluon_forward checks this
    by brute force); the blocks stream last to first. fp8 only with fp8_diag_first (the switch
    FP8_DIAG_FIRST, on by default since h200-20261203-timeline call 8: +3-5 % on causal fp8
    calls): its P rounds against the running max, so the order of the blocks shows in the output
    (its emulation then walks them last to first).
    h200-20261202-even-n calls 1 and 3 (GPU time, same runs): EVEN_N d128 full +1.5 %, d64 full
    +4.5-7 %; DIAG_FIRST on top, causal d64 S1024 / nanoGPT +6 %, d128 S512 +8 %, S1k-16k +2-3 %;
    at 64-key blocks (call 5) d64 S512 causal 0.83x -> 0.91x of cuDNN, S256 0.83x -> 0.87x, d256
    S512 causal 1.02x -> 1.06x, S1024 level."""
    even_n = not varlen and sk % bn == 0
    diag_first = even_n and bm == 128 and (bn == 128 or (bn == 64 and not pingpong)) and sq % bm == 0 \
        and window_left < 0 and window_right == 0 and (not fp8 or fp8_diag_first)
    return even_n, diag_first


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
            "TMA_STORE", "RAW_MAX", "P_REGS", "Q_CONVERT", "LATE_SUM", "FP8_DIAG_FIRST"),
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
