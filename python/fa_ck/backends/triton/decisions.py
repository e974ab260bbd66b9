"""Where each of the Gluon kernels' per-call switches measured faster on the H200: one function per
decision, its docstring the measurements behind it (bench/results). call_config.py asks them
for each call (configs.switches holds the defaults they refine); fwd_whole_blocks is the
forward's EVEN_N / DIAG_FIRST, which its launcher and the compile check ask too.
"""
import math

from .configs import block_d
from .host import _raw_max


def fwd_late_sum_wins(head_dim: int, masked: bool, fp8_p_regs: bool, diag_first: bool = False) -> bool:
    """Whether the Gluon forward adds each block's row sums in the next block (LATE_SUM): for fp8
    with P in registers (fp8_p_regs: measured on 16-bit inputs fa_ck quantises; a caller's fp8,
    whose v fa_ck copies into the kernel's order, runs the same loop but for Q_CONVERT, not
    measured) everywhere but masked calls (causal, windows) at
    head dims 65-128 whose loop branches on the mask per block (diag_first: the call streams each
    tile's diagonal block first, fwd_whole_blocks, so its loop has no masked softmax and takes it);
    not yet for 16-bit calls (not measured).
    h200-20261203-timeline call 5 (3 rounds, same run, x SDPA cuDNN's bf16 forward): d128 full
    S1k / S4k / S16k 0.79 / 1.14 / 1.35x -> 0.83 / 1.24 / 1.41x; d64 full 0.74 / 0.98 / 1.10x ->
    0.79 / 1.12 / 1.26x, causal 0.59 / 0.88 / 1.05x -> 0.59 / 0.95 / 1.19x; but d128 causal 0.63 /
    1.10 / 1.37x -> 0.63 / 1.08 / 1.33x (its loop, which branches on the mask per block, spills
    more: 15 spill stores against 12 in the sm90 compile). With the diagonal's block first
    (call 8, 3 rounds, same run) d128 causal S1k / S4k / S16k 0.65 / 1.12 / 1.41x -> 0.66 / 1.13 /
    1.42x (its loop spills nothing either way)."""
    return fp8_p_regs and (block_d(head_dim) <= 64 or not masked or diag_first)


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


def gluon_wins(kernel: str, head_dim: int, seqlen_k: int, masked: bool = False, group: int = 1) -> bool:
    """Where a Gluon kernel beat its Triton twin on the H200 (bf16, same runs); masked: causal or
    a sliding window.
    fwd: everywhere since its softmax takes the row max of the raw scores (h200-20261130-eleventh
    call 2, same run: at d64 S1024 causal 0.77x -> 0.85x cuDNN and the nanoGPT shape 0.80x ->
    0.88x, where forward.py had served). Before that (h200-20261130-gluon): at head dims 65-128
    everywhere (call 4: +13-22% at S >= 4k; call 6, timed alternately: +4-10% at S1024-2048, causal
    or not); at d64 from S4k and on full calls (persistent, host-made descriptors;
    h200-20261130-ninth call 2, 5 rounds: S4k causal +9 %, full +4 %, S1024 full +4 %; S1024
    causal -1 %, the nanoGPT shape +1 %: level, so forward.py stays there). Before persistence
    (call 4): at d64 S4k -4 to -6%, S1024 causal -10%, the nanoGPT shape -30% (descriptors per
    tile and pipeline fill not amortised).
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


def fwd_fp8_wide_blocks(sw: dict, own_q_convert: bool, head_dim: int, sk: int, p) -> bool:
    """Whether the Gluon fp8 forward takes 256 keys per block, not 128: where its scores are f16
    (fwd_f16_scores), half the registers of f32 ones, on calls with no mask at all (no causal edge
    or window, not varlen) whose keys fill whole 256-key blocks: fa_ck's own quantisation with q
    rounded in the kernel (own_q_convert), P in registers, a positive scale (host._raw_max); at
    d128 from 2048 keys. h200-20261204-default (x cuDNN's bf16 kernel, same runs) call 3 (2
    rounds): d128 S4k full 1.45 -> 1.50x, S16k full 1.55 -> 1.67x, d64 S4k full 1.12 -> 1.37x;
    call 4 (3 rounds): d128 S2k 1.37 -> 1.39x, d64 S1k 1.05 -> 1.13x, S2k 1.12 -> 1.28x, but d128
    S1k 1.27 -> 1.21x (4 blocks per tile). Masked calls keep 128 keys: causal ones streaming the
    diagonal first took 256 in call 6 (2 rounds, same run): d128 S4k causal 1.55 -> 1.42x, S16k
    1.63 -> 1.61x, d64 S4k 1.18 -> 1.20x (every other tile's masked first block half hidden), and a
    masked block in the loop would be f32, which spills at 256 keys (136 bytes at d128, its
    wgmmas serialised). Asked from the switches, before the tiles: fwd_f16_scores on 128 x 256
    tiles is the launcher's own test of the scores being f16 there."""
    return bool(p.fp8 and sw.get("Q_CONVERT") and p.window_left < 0 and p.window_right < 0
                and fwd_f16_scores({**sw, "BLOCK_M": 128, "BLOCK_N": 256}, own_q_convert, 0, sk, p)
                and (block_d(head_dim) <= 64 or sk >= 2048))


def fwd_f16_wide_only(cfg: dict, head_dim: int) -> bool:
    """Whether the Gluon fp8 forward's f16 scores take the wide step on every tile (F16_WIDE: the
    row max subtracted first, one packed instruction more per pair, any logit size; the one-fma
    step and the guard that picks between them, softmax_f16._f16_scores_fit, not compiled): on
    256-key blocks past d64, where the guard's two loops left 8 bytes of stack and the wide loop
    alone none. h200-20261204-wide (x cuDNN's bf16 kernel, same runs, 3 rounds): call 1, d128 S2k /
    S4k / S16k full 1.38 / 1.51 / 1.63 -> 1.42 / 1.53 / 1.67x; call 5, d128 S2k 1.37 -> 1.41x. At
    d64 it lost 0.5-0.9 % (calls 1 and 5, S1k-4k full), on 128-key blocks (causal) 4-6 % at d128
    S4k / S16k, 2 % at d64 S4k: those keep the guard. Its precision on heads with an outlier
    channel of 20 / 40 in q and k (under the guard's limit: the one-fma step there) was the
    one-fma step's (call 4)."""
    return cfg.get("BLOCK_N") == 256 and block_d(head_dim) > 64


def fwd_q16_early_wins(head_dim: int, block_n: int, sk: int) -> bool:
    """Whether the Gluon fp8 forward (q rounded in the kernel) releases Q's 16-bit tile once both
    warpgroups have rounded it (Q16_EARLY), so the next tile's Q and the K, V behind it wait for no
    QK^T: everywhere but d64 full calls in 256-key blocks past 2048 keys. h200-20261204-tile (5
    rounds, kernel us, same runs): call 2, d128 S1k / S2k / S4k full / S4k causal / S8k causal
    175.3 / 293.5 / 537.5 / 307.5 / 555.0 -> 169.9 / 283.5 / 529.7 / 303.2 / 552.1 (S16k within
    its rounds' spread); call 6, d64 S1k / S2k full 137.8 / 230.2 -> 133.8 / 228.7, S4k causal
    274.7 -> 271.7, nanoGPT's 64 x 12 x 1024 causal 292.6 -> 283.1 (0.99 -> 1.03x cuDNN), but d64
    S4k full (256-key blocks) 418.4 -> 425.4 (calls 1 and 2 alike)."""
    return block_d(head_dim) > 64 or block_n != 256 or sk <= 2048


def positive_scale(cfg: dict, p) -> bool:
    """host._raw_max on the call's softmax scale in log2 units (the scores' raw row max: the f16
    scores need it)."""
    return _raw_max(cfg, p, p.scale * (1.0 / math.log(2.0)))


def fwd_f16_scores(cfg: dict, own_q_convert: bool, sq: int, sk: int, p) -> bool:
    """Whether the Gluon fp8 forward sums its scores in f16 (F16_SCORES in cfg, by default): on fa_ck's
    own quantisation with q rounded in the kernel (own_q_convert; q and k then go to 16, not the
    format's max), P in registers, row sums a block late, 128 queries per tile, the raw row max
    (host._raw_max, on the scale the launcher passes), and no masked key block past a warpgroup's
    first: whole key blocks without a window, or causal calls streaming the diagonal first
    (fwd_whole_blocks)."""
    if not (cfg.get("F16_SCORES") and own_q_convert and cfg.get("GLUON") and cfg.get("P_REGS")
            and cfg.get("LATE_SUM") and cfg["BLOCK_M"] == 128 and positive_scale(cfg, p)):
        return False
    even_n, diag_first = fwd_whole_blocks(sq, sk, cfg["BLOCK_M"], cfg["BLOCK_N"], p.window_left, p.window_right,
                                          p.varlen, True, bool(cfg.get("PINGPONG")), bool(cfg.get("FP8_DIAG_FIRST")))
    return diag_first or (even_n and p.window_left < 0 and p.window_right < 0)


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
