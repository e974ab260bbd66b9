"""FlashAttention forward for Hopper (sm90) in Gluon: warp-specialised, and the softmax of key
block j runs while the tensor cores multiply P_{j-1} V_{j-1}.

Plain Triton compiles forward.py to QK^T wgmma | wait | softmax | PV wgmma | wait: nothing
overlaps the softmax. Gluon states the schedule itself (FlashAttention-3's intra-warpgroup
overlap), per key block j:

    issue S_j = Q K_j^T (async) | issue O += P_{j-1} V_{j-1} (async) | wait for S_j only
    softmax(S_j) -> P_j, alpha_j    (while the PV multiply runs)
    wait for the PV multiply | O *= alpha_j

The grid is persistent: each program takes work units (pairs of a head's query tiles,
forward_gluon_loads.unit_tile) in turn. A tile is 128 queries of one head: two consumer
warpgroups of 64 rows each (their own partitions, so neither waits on the other), or 192 with
three, and one producer warp that streams K and V through NUM_BUF-deep rings of shared memory by
TMA (forward_gluon_loads.py), so that no consumer stalls on a CTA-wide barrier before a load.
"full" barriers tell the consumers a tile has landed; "empty" barriers (every consumer arrives)
tell the producer the multiply that read a buffer has completed. P stays in registers as
wgmma's A operand.

Masks: a block that straddles a mask edge or the sequence's end takes the masked softmax, chosen
per block at run time. Where the host knows which blocks those are, the kernel compiles only
what runs, as code beside the loop slows it (docs/performance.md, Kernel choices): EVEN_N (keys
in whole blocks, no window) has no masked softmax, DIAG_FIRST (causal calls in whole blocks)
streams each tile's diagonal block first, so only a warpgroup's first block is masked.

Serves the plain calls (fp16/bf16, head dim up to 256 (64-key blocks past 128), causal and
sliding windows, varlen, GQA); softcap, ALiBi and dropout stay with forward.py. Writes the same
out and lse.

FP8 (e4m3fn at head dims 33-128 whose fp8 rows TMA can address; config.py decides): the scheme
of forward.py (per-(batch, head) descales folded into the score scale, P in [0, P_SCALE] rounded
to fp8, out times v's descale), P_SCALE folded into the exponential (the row sum carries it too,
so out needs no division by it). fp8 wgmma reads both operands K-major, so v arrives
keys-contiguous and streams as (head_dim, keys) tiles (V_KEYS_MAJOR). P stays in registers as
the PV multiply's A operand, v's keys stored in the order that makes this work
(p_key_order). Q_CONVERT: q arrives 16-bit and each consumer rounds its rows to e4m3
itself (_convert_q), as the quantisation launch would have; Q16_EARLY: then it releases Q's
16-bit tile at once, so the next tile's Q, and the K and V loads the producer issues after it,
do not wait for this tile's last QK^T. LATE_SUM: a block's row sums are added in the next
block (see _attend). F16_SCORES (fa_ck's own quantisation, q and k to QK_MAX 16): S in f16 and
the loop's softmax on f16 pairs, a quarter of its exponentials on the FMA pipe
(softmax_f16.py); a tile whose scale could carry a score past f16 takes the wide step, chosen
per tile at run time, or every tile does (F16_WIDE: the one-fma loop not compiled).

ptxas places the PV wait right after the row max, above the exponentials, though the PTX has it
after them.
"""
import math

import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                               warpgroup_mma_wait)

from .common import softmax_step, warpgroup_blocks
from .forward_gluon_loads import producer, unit_tile, unit_count
from .softmax_f16 import f16_scores_fit, f16_step, fp8_operand_f16, row_sum_f16
from .gluon_common import (acc_layout, block_key, invalidate_rings, partition_barrier, ring_barriers, gl_scores,
                           store_out)

# The key-block bounds per warpgroup and the softmax step are forward.py's, compiled again as Gluon.
_warpgroup_blocks = gluon.jit(warpgroup_blocks.fn)
_softmax_step = gluon.jit(softmax_step.fn)


@gluon.constexpr_function
def _log2(x):
    return math.log2(x)


@gluon.jit
def _softmax(qk, m_i, l_i, offs_m, offs_n, seqlen_q, seqlen_k, scale_log2, window_left, window_right,
             MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, MASKED: gl.constexpr, RAW_MAX: gl.constexpr,
             P_LOG2: gl.constexpr, ROW_SUM: gl.constexpr = True):
    """One online-softmax step: (p, alpha, new row max, new row sum); RAW_MAX, P_LOG2: see
    common.softmax_step (RAW_MAX where CallSpec.raw_max allows; p and the row sum come out times
    2^P_LOG2). ROW_SUM False: the row sum is only rescaled (l_i * alpha); the caller adds p's."""
    s, _ = gl_scores(qk, offs_m[:, None], offs_n[None, :], seqlen_q, seqlen_k, 1.0 if RAW_MAX else scale_log2,
                   0.0, 0.0, 0.0, window_left, window_right, False, False, MASK_LEFT, MASK_RIGHT, MASKED)
    p, alpha, m_new = _softmax_step(s, m_i, scale_log2, RAW_MAX, MASKED, P_LOG2)
    if ROW_SUM:
        l_i = l_i * alpha + gl.sum(p, 1)
    else:
        l_i = l_i * alpha
    return p, alpha, m_new, l_i


@gluon.jit
def _step(qk, m_i, l_i, n0, full_lo, full_hi, offs_m, offs_n0, seqlen_q, seqlen_k, scale_log2,
          window_left, window_right, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, RAW_MAX: gl.constexpr,
          P_LOG2: gl.constexpr, MASK_AT: gl.constexpr, ROW_SUM: gl.constexpr = True):
    """_softmax, with the mask only in blocks that straddle a mask edge or the sequence end
    (MASK_AT "edges", decided per block), or where the caller knows: "all" (the block is masked)
    or "none" (whole: the masked softmax is not compiled at all). The mask sees keys counted from
    n0 (and the sequence's end less n0: the same comparisons), so no key index is made per column."""
    if MASK_AT != "edges":
        p, alpha, m_i, l_i = _softmax(qk, m_i, l_i, offs_m, offs_n0, seqlen_q, seqlen_k - n0, scale_log2,
                                      window_left, window_right, MASK_LEFT, MASK_RIGHT, MASK_AT == "all", RAW_MAX,
                                      P_LOG2, ROW_SUM)
    elif (n0 < full_lo) | (n0 >= full_hi):
        p, alpha, m_i, l_i = _softmax(qk, m_i, l_i, offs_m, offs_n0, seqlen_q, seqlen_k - n0, scale_log2,
                                      window_left, window_right, MASK_LEFT, MASK_RIGHT, True, RAW_MAX, P_LOG2,
                                      ROW_SUM)
    else:
        p, alpha, m_i, l_i = _softmax(qk, m_i, l_i, offs_m, offs_n0, seqlen_q, seqlen_k - n0, scale_log2,
                                      window_left, window_right, MASK_LEFT, MASK_RIGHT, False, RAW_MAX, P_LOG2,
                                      ROW_SUM)
    return p, alpha, m_i, l_i


@gluon.constexpr_function
def _mask_at(first, whole, diag_first):
    """_step's MASK_AT for a tile's first block (first) or the others: every block whole (whole:
    keys a whole number of blocks, no window), or DIAG_FIRST (the masked block on the diagonal
    streams first, the rest are whole), else decided per block."""
    if diag_first:
        return "all" if first else "none"
    return "none" if whole else "edges"


@gluon.jit
def _fp8_operand(p):
    """fp32 P (already times P_SCALE, in the A operand's layout) rounded to e4m3, four values of a
    row to a register: two conversions per register and nothing else (Triton's own conversion
    goes through bytes and rebuilds the registers: ~6 more instructions per register)."""
    return gl.inline_asm_elementwise(
        "{ .reg .b16 lo, hi; cvt.rn.satfinite.e4m3x2.f32 lo, $2, $1; "
        "cvt.rn.satfinite.e4m3x2.f32 hi, $4, $3; mov.b32 $0, {lo, hi}; }",
        "=r,r,r,r,r", [p], dtype=gl.int8, is_pure=True, pack=4).to(gl.float8e4nv, bitcast=True)


@gluon.jit
def _q_scales(QA, amax_slot, FP8_MAX: gl.constexpr):
    """(scale, descale) of q's (batch, head) from its amax bits (quantize.amax_kernel's slot), with
    quantize_kernel's arithmetic: the format's max / amax (a zero head: / 1e-12), then 1 / scale,
    both IEEE divisions, so Q_CONVERT rounds exactly as quantize_kernel would."""
    amax = gl.load(QA + amax_slot).to(gl.float32, bitcast=True)
    scale = gl.div_rn(FP8_MAX, gl.maximum(amax, 1e-12, propagate_nan=tl.PropagateNan.ALL))
    return scale, gl.div_rn(1.0, scale)


@gluon.jit
def _convert_q(q16_smem, q_smem, scale, FP8_MAX: gl.constexpr):
    """Q_CONVERT: this warpgroup's 16-bit Q rows, times scale, clamped and rounded to e4m3fn into
    q_smem, as quantize_kernel would have written them (so q needs no quantised copy in memory:
    one read of q instead of two reads and a write)."""
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    x = q16_smem.load(layout).to(gl.float32) * scale
    x = gl.minimum(gl.maximum(x, -FP8_MAX, propagate_nan=tl.PropagateNan.ALL), FP8_MAX,
                   propagate_nan=tl.PropagateNan.ALL)
    q_smem.store(x.to(q_smem.dtype))
    fence_async_shared()                  # the generic-proxy stores before wgmma's async reads
    partition_barrier()                  # every row written before the warpgroup's first QK^T


@gluon.jit
def _pv(p, v_tile, acc, FP8: gl.constexpr):
    """Issue acc += P V (async). fp8: p (fp32 or f16) is rounded to fp8 here, where the multiply
    uses it (see _p_operand), and the keys-major v tile is read through its transpose."""
    if FP8:
        if p.dtype == gl.float16:
            p = fp8_operand_f16(p)
        else:
            p = _fp8_operand(p)
        acc = warpgroup_mma(p, v_tile.permute((1, 0)), acc, is_async=True)
    else:
        acc = warpgroup_mma(p, v_tile, acc, is_async=True)
    return acc


@gluon.jit
def p_key_order(p):
    """P's keys reordered within each group of 16, bits (b3, c1, c0, b0) of a key's index to (c1, c0,
    b3, b0): the QK^T accumulator gives a thread keys 2c, 2c+1, 8+2c, 9+2c of a group, an fp8 A
    operand wants 4c..4c+3. After this reshuffle of indices, which moves no data, the
    accumulator's registers already are the operand's. V's keys are stored in the same order
    (quantize.key_position), so P V is unchanged."""
    R: gl.constexpr = p.shape[0]
    N: gl.constexpr = p.shape[1]
    return p.reshape([R, N // 32, 2, 2, 4, 2]).permute((0, 1, 2, 4, 3, 5)).reshape([R, N])


@gluon.jit
def _p_operand(p, dtype: gl.constexpr, layout: gl.constexpr):
    """P as the PV multiply's A operand, in registers: 16-bit, or for fp8 (already in [0, P_SCALE])
    still in fp32 with its keys reordered (p_key_order), _pv rounding it to fp8 just before
    its multiply (a loop-carried fp8 tensor Triton splits into bytes and rebuilds)."""
    if dtype.primitive_bitwidth == 8:
        operand = gl.convert_layout(p_key_order(p), layout)
    else:
        operand = gl.convert_layout(p.to(dtype), layout)
    return operand


@gluon.jit
def _row_sum(p, row: gl.constexpr):
    """P's row sums: f16 P (F16_SCORES) folded in pairs (softmax_f16.row_sum_f16), else Triton's sum."""
    if p.dtype == gl.float16:
        total = row_sum_f16(p, row)
    else:
        total = gl.sum(p, 1)
    return total


@gluon.jit
def _pv_wait(acc, p, dtype: gl.constexpr):
    """Wait for every multiply issued; P in registers is kept alive until its multiply is done
    (fp8: Triton's wait takes no 8-bit operands; _pv makes P's registers anew before each
    multiply and nothing writes them before this wait)."""
    if dtype.primitive_bitwidth == 8:
        acc = warpgroup_mma_wait(0, deps=[acc])
    else:
        acc, p = warpgroup_mma_wait(0, deps=[acc, p])
    return acc, p


@gluon.jit
def _release(k_full, v_full, k_empty, v_empty, start, n):
    """Ring positions [start, start + n), K and V that this warpgroup does not read: each released
    once it has landed (its full barrier), so the release counts for this fill and not an
    earlier one that the other warpgroup still reads."""
    NUM_BUF: gl.constexpr = k_full.shape[0]
    for j in range(n):
        buf = (start + j) % NUM_BUF
        phase = ((start + j) // NUM_BUF) & 1
        mbarrier.wait(k_full.index(buf), phase)
        mbarrier.arrive(k_empty.index(buf), count=1)
        mbarrier.wait(v_full.index(buf), phase)
        mbarrier.arrive(v_empty.index(buf), count=1)


@gluon.jit
def _attend(q_smem, k_smem, v_smem, q_empty, k_full, v_full, k_empty, v_empty, m0, lo, full_lo, full_hi, n_blocks,
            it, seqlen_q, seqlen_k, scale_log2, window_left, window_right,
            MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, P_SCALE: gl.constexpr, FP8: gl.constexpr,
            RAW_MAX: gl.constexpr, EVEN_N: gl.constexpr, DIAG_FIRST: gl.constexpr, Q_REGS: gl.constexpr,
            LATE_SUM: gl.constexpr, F16_SCORES: gl.constexpr, F16_WIDE: gl.constexpr = False, Q16_EARLY: gl.constexpr = False):
    """One warpgroup's 64 queries from m0 against n_blocks key blocks (n_blocks > 0) from ring
    position `it`: (acc, row max (of the raw scores with RAW_MAX, else in log2 units), row sum,
    rows laid out as acc's). Arrives on q_empty once its last QK^T is done (not with Q16_EARLY:
    _consumer has, once Q was rounded). Q_REGS: QK^T takes
    Q's rows from registers, read from shared memory once, not from shared memory per block (whose
    bandwidth every wgmma operand shares). LATE_SUM: P_j's row sum is added to l_i in the next
    block, once its PV multiply is issued, not beside its exponentials, where ptxas puts each sum's
    FADD two exponentials after the MUFU.EX2 it reads, so the warp waits on the MUFU's latency at
    every one. P then crosses the loop in fp32 and
    becomes the multiply's operand there (_p_operand). F16_SCORES: S comes out of QK^T in f16 and
    every block but the first takes softmax_f16.f16_step (the first takes _step in f32, its P then
    f16), P stays f16 across the loop; F16_WIDE: see there."""
    ROWS: gl.constexpr = q_smem.shape[0]
    BLOCK_D: gl.constexpr = q_smem.shape[1]
    BLOCK_N: gl.constexpr = k_smem.shape[1]
    NUM_BUF: gl.constexpr = k_smem.shape[0]
    dtype: gl.constexpr = q_smem.dtype
    P_LOG2: gl.constexpr = _log2(P_SCALE)      # 0 but for fp8
    WHOLE: gl.constexpr = EVEN_N and not MASK_LEFT and not MASK_RIGHT      # no block needs the mask
    # wgmma's K per instruction: 32 bytes (16 halves, 32 fp8 values)
    s_layout: gl.constexpr = acc_layout(BLOCK_N, dtype)
    o_layout: gl.constexpr = acc_layout(BLOCK_D, dtype)
    # A operand in registers: 32 bits of K per thread (two 16-bit or four fp8 values)
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout,
                                                 k_width=32 // dtype.primitive_bitwidth)
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    row_o: gl.constexpr = gl.SliceLayout(1, o_layout)

    offs_m = m0 + gl.arange(0, ROWS, layout=row_s)
    offs_n0 = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    gl.static_assert(not F16_SCORES or (FP8 and RAW_MAX and LATE_SUM and (WHOLE or DIAG_FIRST)),
                     "F16_SCORES: fp8, raw max, late sums, no masked block past the first")
    s_zero = gl.zeros([ROWS, BLOCK_N], gl.float16 if F16_SCORES else gl.float32, s_layout)
    acc = gl.zeros([ROWS, BLOCK_D], gl.float32, o_layout)
    m_i = gl.full([ROWS], float("-inf"), gl.float32, row_s)
    l_i = gl.zeros([ROWS], gl.float32, row_s)

    q_op = q_smem
    if Q_REGS:
        q_op = q_smem.load(gl.DotOperandLayout(operand_index=0, parent=s_layout,
                                               k_width=32 // dtype.primitive_bitwidth))
    # Block 0: S_0 and its softmax; nothing to multiply with V yet.
    buf = it % NUM_BUF
    mbarrier.wait(k_full.index(buf), (it // NUM_BUF) & 1)
    qk = warpgroup_mma(q_op, k_smem.index(buf).permute((1, 0)), s_zero, use_acc=False, is_async=True)
    qk = warpgroup_mma_wait(0, deps=[qk])
    mbarrier.arrive(k_empty.index(buf), count=1)
    p, alpha, m_i, l_i = _step(qk.to(gl.float32), m_i, l_i, block_key(lo, 0, n_blocks, BLOCK_N, DIAG_FIRST),
                               full_lo, full_hi, offs_m, offs_n0, seqlen_q, seqlen_k, scale_log2, window_left,
                               window_right, MASK_LEFT, MASK_RIGHT, RAW_MAX, P_LOG2, _mask_at(True, WHOLE, DIAG_FIRST),
                               not LATE_SUM)
    if F16_SCORES:
        p = p.to(gl.float16)
    if not LATE_SUM:
        p = _p_operand(p, dtype, p_layout)

    for j in range(1, n_blocks):
        buf = (it + j) % NUM_BUF
        prev = (it + j - 1) % NUM_BUF
        mbarrier.wait(k_full.index(buf), ((it + j) // NUM_BUF) & 1)
        mbarrier.wait(v_full.index(prev), ((it + j - 1) // NUM_BUF) & 1)
        qk = warpgroup_mma(q_op, k_smem.index(buf).permute((1, 0)), s_zero, use_acc=False, is_async=True)
        p_op = p
        if LATE_SUM:
            p_op = _p_operand(p, dtype, p_layout)
        acc = _pv(p_op, v_smem.index(prev), acc, FP8)
        if LATE_SUM:
            l_i = l_i + _row_sum(p, row_s)              # P_{j-1}'s row sum, while S_j is multiplied
        qk = warpgroup_mma_wait(1, deps=[qk])           # S_j done; the PV multiply may still run
        mbarrier.arrive(k_empty.index(buf), count=1)
        if F16_SCORES:
            p_next, alpha, m_i, l_i = f16_step(qk, m_i, l_i, scale_log2, P_LOG2, not LATE_SUM, F16_WIDE)
        else:
            p_next, alpha, m_i, l_i = _step(qk, m_i, l_i, block_key(lo, j, n_blocks, BLOCK_N, DIAG_FIRST), full_lo,
                                            full_hi, offs_m, offs_n0, seqlen_q, seqlen_k, scale_log2, window_left,
                                            window_right, MASK_LEFT, MASK_RIGHT, RAW_MAX, P_LOG2,
                                            _mask_at(False, WHOLE, DIAG_FIRST), not LATE_SUM)
        acc, p_op = _pv_wait(acc, p_op, dtype)
        mbarrier.arrive(v_empty.index(prev), count=1)
        acc = acc * gl.convert_layout(alpha, row_o)[:, None]
        p = p_next
        if not LATE_SUM:
            p = _p_operand(p_next, dtype, p_layout)
    if not Q16_EARLY:       # (Q16_EARLY: released once rounded, see _consumer)
        mbarrier.arrive(q_empty, count=1)     # the tile's QK^T are done: the producer may load the next Q

    last = (it + n_blocks - 1) % NUM_BUF
    mbarrier.wait(v_full.index(last), ((it + n_blocks - 1) // NUM_BUF) & 1)
    p_op = p
    if LATE_SUM:
        p_op = _p_operand(p, dtype, p_layout)
        l_i = l_i + _row_sum(p, row_s)
    acc = _pv(p_op, v_smem.index(last), acc, FP8)
    acc, p_op = _pv_wait(acc, p_op, dtype)
    mbarrier.arrive(v_empty.index(last), count=1)
    return acc, gl.convert_layout(m_i, row_o), gl.convert_layout(l_i, row_o)


@gluon.jit
def _consumer(q_smem, q16_smem, q_full, q_empty, o_smem, shared, row0: gl.constexpr, VARLEN: gl.constexpr,
              MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, P_SCALE: gl.constexpr, FP8: gl.constexpr,
              TMA_STORE: gl.constexpr, RAW_MAX: gl.constexpr, BLOCK_M: gl.constexpr, EVEN_N: gl.constexpr,
              DIAG_FIRST: gl.constexpr,
              Q_CONVERT: gl.constexpr, LATE_SUM: gl.constexpr, F16_SCORES: gl.constexpr = False,
              QK_MAX: gl.constexpr = 448.0, F16_WIDE: gl.constexpr = False,
              Q16_EARLY: gl.constexpr = False):
    """One warpgroup: rows [row0, row0 + 64) of each tile's BLOCK_M queries, then their out and lse;
    it tells the producer (q_empty) once its last QK^T of a tile is done, so the next Q loads
    under this tile's last PV multiply and epilogue (Q16_EARLY: earlier, see below). TMA_STORE: out leaves through
    o_smem as a TMA store (O_DESC, a host-made descriptor like Q's), waited for only before the
    next tile's out is written.
    shared: the run-time arguments every consumer takes alike (fwd_gluon_kernel's tuple); q_full,
    q_empty: the barriers of this warpgroup's Q rows (192 queries: its own; else the tile's).
    Q_CONVERT (fp8): Q arrives 16-bit in q16_smem and this warpgroup rounds its rows into q_smem
    (_convert_q); QD then holds q's amax bits, not its descales (_q_scales). Q16_EARLY (with
    Q_CONVERT): q_empty once the rows are rounded (q16_smem read; q_smem is this warpgroup's
    own), so the producer's next Q, and the K and V after it, wait for no QK^T."""
    k_smem, v_smem, k_full, v_full, k_empty, v_empty, O, O_DESC, LSE, CU_Q, CU_K, QD, KD, VD, \
        stride_ob, stride_os, stride_oh, stride_lb, stride_lh, stride_qdb, stride_kdb, seqlen_q, seqlen_k, batch, \
        num_heads, group, head_dim, scale_log2, window_left, window_right = shared
    ROWS: gl.constexpr = q_smem.shape[0]
    BLOCK_D: gl.constexpr = q_smem.shape[1]
    BLOCK_N: gl.constexpr = k_smem.shape[1]
    dtype: gl.constexpr = q_smem.dtype
    out_dtype: gl.constexpr = O.dtype.element_ty
    o_layout: gl.constexpr = acc_layout(BLOCK_D, dtype)
    row_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    # Q in registers for QK^T (_attend): up to d64 in 128-query tiles, 16-bit, raw row max, where it
    # spills nothing (docs/performance.md, "Kernel choices")
    Q_REGS: gl.constexpr = BLOCK_M == 128 and BLOCK_D <= 64 and not FP8 and RAW_MAX
    n_q = 0                                    # Q tiles used
    it = 0                                     # K/V blocks consumed
    for u in range(gl.program_id(0), unit_count(seqlen_q, batch, num_heads, BLOCK_M), gl.num_programs(0)):
        for second in range(2):
            b, h, m0, q_start, k_start, sq, sk, lo, full_lo, full_hi, n_blocks, active = unit_tile(
                u, second, CU_Q, CU_K, seqlen_q, seqlen_k, num_heads, window_left, window_right, BLOCK_M, BLOCK_N,
                VARLEN, MASK_LEFT, MASK_RIGHT)
            if active:
                m0 = m0 + row0
                b64 = b.to(gl.int64)
                out_scale = 1.0
                q_scale = 1.0                 # (Q_CONVERT's)
                tile_scale_log2 = scale_log2
                if FP8:     # descales folded as in forward.py
                    hk = (h // group).to(gl.int64)
                    if Q_CONVERT:
                        # (QK_MAX: e4m3fn's max, or 16 for F16_SCORES, as quantize_kernel scaled k)
                        q_scale, q_descale = _q_scales(QD, b64 * stride_qdb + h, QK_MAX)
                    else:
                        q_descale = gl.load(QD + b64 * stride_qdb + h)
                    tile_scale_log2 = scale_log2 * q_descale * gl.load(KD + b64 * stride_kdb + hk)
                    if RAW_MAX:     # scale_log2 > 0 (CallSpec.raw_max)
                        if not Q_CONVERT:     # a caller's descales, of any sign: a negative product
                            # is taken as (-q).k times its magnitude (the producer negates the rows)
                            tile_scale_log2 = gl.abs(tile_scale_log2)
                        # kept a normal float, as -inf times a product flushed to 0 would be NaN
                        # (the scores are ~0 then anyway)
                        tile_scale_log2 = gl.maximum(tile_scale_log2, 1.1754943508222875e-38)
                    out_scale = gl.load(VD + b64 * stride_kdb + hk)     # (P_SCALE cancels: in l_i too)
                if n_blocks > 0:
                    n_mine = n_blocks
                    if MASK_LEFT or MASK_RIGHT:
                        # This warpgroup's own rows against the tile's blocks: with 64 keys per block
                        # the diagonal's first block is whole for the second warpgroup (no mask),
                        # and its second one hidden from the first warpgroup (released unread).
                        full_lo, full_hi, n_mine = _warpgroup_blocks(m0, lo, n_blocks, sq, sk, window_left,
                                                                     window_right, ROWS, BLOCK_N, MASK_LEFT,
                                                                     MASK_RIGHT)
                    mbarrier.wait(q_full, n_q & 1)
                    if Q_CONVERT:
                        _convert_q(q16_smem, q_smem, q_scale, P_SCALE)
                        if Q16_EARLY:         # 16-bit Q read: the producer may load the next tile's
                            mbarrier.arrive(q_empty, count=1)     # now, under this one
                    first = it
                    if DIAG_FIRST:      # the blocks this warpgroup cannot see stream first (64-key blocks)
                        _release(k_full, v_full, k_empty, v_empty, it, n_blocks - n_mine)
                        first = it + n_blocks - n_mine
                    if F16_SCORES and not F16_WIDE:     # (the wide f16 loop where a scaled score could
                        wide = not f16_scores_fit(tile_scale_log2, QK_MAX, head_dim)    # leave f16's range)
                    else:
                        wide: gl.constexpr = F16_WIDE
                    if wide:
                        acc, m_i, l_i = _attend(q_smem, k_smem, v_smem, q_empty, k_full, v_full, k_empty, v_empty,
                                                m0, lo, full_lo, full_hi, n_mine, first, sq, sk, tile_scale_log2,
                                                window_left, window_right, MASK_LEFT, MASK_RIGHT, P_SCALE, FP8,
                                                RAW_MAX, EVEN_N, DIAG_FIRST, Q_REGS, LATE_SUM, F16_SCORES,
                                                True, Q16_EARLY)
                    else:
                        acc, m_i, l_i = _attend(q_smem, k_smem, v_smem, q_empty, k_full, v_full, k_empty, v_empty,
                                                m0, lo, full_lo, full_hi, n_mine, first, sq, sk, tile_scale_log2,
                                                window_left, window_right, MASK_LEFT, MASK_RIGHT, P_SCALE, FP8,
                                                RAW_MAX, EVEN_N, DIAG_FIRST, Q_REGS, LATE_SUM, F16_SCORES,
                                                False, Q16_EARLY)
                    if not DIAG_FIRST:
                        _release(k_full, v_full, k_empty, v_empty, it + n_mine, n_blocks - n_mine)
                    n_q += 1
                    it += n_blocks
                else:
                    acc = gl.zeros([ROWS, BLOCK_D], gl.float32, o_layout)
                    m_i = gl.full([ROWS], float("-inf"), gl.float32, row_o)
                    l_i = gl.zeros([ROWS], gl.float32, row_o)
                empty = l_i == 0.0                       # the row saw no key: out 0, lse -inf
                inv_l = gl.where(empty, 0.0, out_scale / gl.where(empty, 1.0, l_i))
                out = acc * inv_l[:, None]
                # int64 base at this warpgroup's first row, 32-bit offsets within the tile (rows *
                # stride passes 2^31 in tensors of more than 2^31 elements)
                rows = gl.arange(0, ROWS, layout=row_o)       # made here: no registers held across the loop
                cols = gl.arange(0, BLOCK_D, layout=gl.SliceLayout(0, o_layout))
                if TMA_STORE:      # rows past the sequence and columns past head_dim are not written
                    tma.store_wait(0)                 # the last tile's out has left o_smem
                    partition_barrier()              # (the wait is the issuing thread's)
                    out = out.to(out_dtype)
                    if o_smem.shape[1] == BLOCK_D:
                        store_out(O_DESC, o_smem, out, b, h, m0, 0)
                    else:       # a staging tile half as wide (past d128): out leaves in two halves
                        left, right = gl.split(out.reshape([ROWS, 2, BLOCK_D // 2]).permute((0, 2, 1)))
                        store_out(O_DESC, o_smem, left, b, h, m0, 0)
                        tma.store_wait(0)
                        partition_barrier()          # (the wait is the issuing thread's)
                        store_out(O_DESC, o_smem, right, b, h, m0, BLOCK_D // 2)
                else:
                    ok = (m0 + rows[:, None] < sq) & (cols[None, :] < head_dim)
                    o_rows = O + b64 * stride_ob + h.to(gl.int64) * stride_oh + (q_start + m0) * stride_os
                    gl.store(o_rows + rows[:, None] * stride_os + cols[None, :], out.to(out_dtype), mask=ok)
                if RAW_MAX:
                    m_i = m_i * tile_scale_log2
                log2_l = gl.log2(gl.where(empty, 1.0, l_i))
                if FP8:
                    log2_l = log2_l - _log2(P_SCALE)      # l_i sums P times P_SCALE
                lse = gl.where(empty, float("-inf"), (m_i + log2_l) * 0.6931471805599453)
                lse_rows = LSE + b64 * stride_lb + h.to(gl.int64) * stride_lh + q_start + m0
                gl.store(lse_rows + rows, lse, mask=m0 + rows < sq)
    if TMA_STORE:
        tma.store_wait(0)


@gluon.jit
def fwd_gluon_kernel(Q, K, V, O, O_DESC, LSE, CU_Q, CU_K, QD, KD, VD, q_strides, k_strides, v_strides, o_strides,
                     lse_strides, descale_strides, seqlen_q, seqlen_k, batch, num_heads, group, head_dim,
                     scale_log2, window,
                     BLOCK_N: gl.constexpr, BLOCK_D: gl.constexpr, NUM_BUF: gl.constexpr, VARLEN: gl.constexpr,
                     MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
                     SMEM_Q: gl.constexpr, SMEM_KV: gl.constexpr, SMEM_V: gl.constexpr, FP8: gl.constexpr,
                     P_SCALE: gl.constexpr, HOST_DESC: gl.constexpr, TMA_STORE: gl.constexpr, O_COLS: gl.constexpr,
                     SMEM_O: gl.constexpr, RAW_MAX: gl.constexpr, BLOCK_M: gl.constexpr, EVEN_N: gl.constexpr,
                     DIAG_FIRST: gl.constexpr,
                     Q_CONVERT: gl.constexpr, SMEM_Q8: gl.constexpr, LATE_SUM: gl.constexpr,
                     F16_SCORES: gl.constexpr, QK_MAX: gl.constexpr, num_warps: gl.constexpr,
                     F16_WIDE: gl.constexpr = False, Q16_EARLY: gl.constexpr = False):
    """A persistent 1-D grid over work units (unit_tile): each program takes every num_programs-th
    unit, its rings and barriers carried from one tile to the next. q_strides, k_strides,
    o_strides: (batch, seq, head) strides (varlen: batch 0); v_strides those and the head dim's;
    lse_strides (batch, head); descale_strides QD's and KD's batch strides; window (left,
    right). BLOCK_M: 128 queries per tile (two consumer warpgroups of 64), or 192 (three; 16-bit
    head dims up to 64, where a warpgroup's S, O and P fit the 160 registers that leaves each, as
    FlashAttention-3 tiles d64).
    num_warps = 4: the first consumer warpgroup; the others and the producer warp are workers.
    FP8: q, k, v in e4m3fn, descales QD (B, Hq), KD and VD (B, Hkv); v keys-contiguous (stride_vs
    1, rows of stride_vd) in quantize.key_position's order, each row of keys zero-padded to a
    multiple of 16 and described to that length, so that P stays in registers; SMEM_V is v's tile
    layout ((BLOCK_D, BLOCK_N) tiles for fp8). HOST_DESC: Q, K, V are host-made TMA descriptors
    (see producer), their strides unused. TMA_STORE: out is also written through O_DESC, (64,
    O_COLS) tiles of (batch, heads, rows, head_dim) (SMEM_O; O_COLS BLOCK_D, or half of it where
    shared memory holds no more: sizes.fwd_out_cols). RAW_MAX: see _softmax (CallSpec.raw_max:
    scale_log2 a positive normal float32; FP8: the folded scale's magnitude, kept >= 2^-126, a
    negative one negating q's rows: forward_gluon_loads._copy_q_signed). EVEN_N: seqlen_k is a
    multiple of BLOCK_N (not varlen): without a window no block needs the mask (_step).
    DIAG_FIRST (causal, EVEN_N, seqlen_q a multiple of 128, 128 queries per tile, 64 or 128 keys
    per block: config.fwd_whole_blocks): each tile's blocks stream last to first. A warpgroup
    releases unread the leading block it cannot see (64-key blocks), then its first block read,
    the diagonal's, is the only masked one (FlashAttention-3's order), so the loop compiles no
    masked softmax. Q_CONVERT (FP8, 128 queries): Q is q's 16-bit tensor, QD its amax bits
    (quantize.amax_kernel's, int32 (B, Hq)); each consumer rounds its rows into a (128, BLOCK_D)
    e4m3fn tile of layout SMEM_Q8 (_convert_q), bit for bit quantize_kernel's, to QK_MAX (the
    format's max, or 16 under F16_SCORES, as quantize_kernel wrote k). F16_SCORES (with
    Q_CONVERT, LATE_SUM, RAW_MAX, no masked block past a warpgroup's first): S in f16, the loop's
    softmax on f16 pairs, a quarter of the exponentials by a quadratic on the FMA pipe
    (softmax_f16.py); F16_WIDE: every tile takes the wide f16 step (else those
    softmax_f16.f16_scores_fit refuses). Q16_EARLY (Q_CONVERT): Q's 16-bit tile released once
    both consumers have rounded it, not after their last QK^T (_consumer)."""
    stride_qb, stride_qs, stride_qh = q_strides
    stride_kb, stride_ks, stride_kh = k_strides
    stride_vb, stride_vs, stride_vh, stride_vd = v_strides
    stride_ob, stride_os, stride_oh = o_strides
    stride_lb, stride_lh = lse_strides
    stride_qdb, stride_kdb = descale_strides
    window_left, window_right = window
    HALF: gl.constexpr = 64
    CONSUMERS: gl.constexpr = BLOCK_M // HALF
    gl.static_assert(BLOCK_M == 128 or BLOCK_M == 192, "BLOCK_M 128 or 192")
    gl.static_assert(not DIAG_FIRST or (BLOCK_M == 128 and EVEN_N and MASK_RIGHT and not MASK_LEFT),
                     "DIAG_FIRST: causal, whole key blocks, 128 queries")
    gl.static_assert(not Q_CONVERT or (FP8 and BLOCK_M == 128), "Q_CONVERT: fp8, 128 queries")
    gl.static_assert(not F16_SCORES or (Q_CONVERT and QK_MAX == 16.0), "F16_SCORES: Q_CONVERT, q and k to 16")
    gl.static_assert(not F16_WIDE or F16_SCORES, "F16_WIDE: with F16_SCORES")
    gl.static_assert(not Q16_EARLY or Q_CONVERT, "Q16_EARLY: with Q_CONVERT")
    if HOST_DESC:       # (the multiplies' type: K's, Q's too but under Q_CONVERT)
        dtype: gl.constexpr = K.dtype
        q_dtype: gl.constexpr = Q.dtype
    else:
        dtype: gl.constexpr = K.dtype.element_ty
        q_dtype: gl.constexpr = Q.dtype.element_ty
    if CONSUMERS == 3:      # one (64, BLOCK_D) tile per warpgroup (and one unused: shapes are powers of two)
        q_smem = gl.allocate_shared_memory(dtype, [4, HALF, BLOCK_D], SMEM_Q)
        q_smem0 = q_smem.index(0)
        q_smem1 = q_smem.index(1)
        q_smem2 = q_smem.index(2)
    else:
        q_smem = gl.allocate_shared_memory(q_dtype, [BLOCK_M, BLOCK_D], SMEM_Q)
        q_smem0 = q_smem.slice(0, HALF)
        q_smem1 = q_smem.slice(HALF, HALF)
        q_smem2 = q_smem0                    # (unused)
    q16_smem0 = q_smem0                      # Q_CONVERT: Q as loaded (16-bit); the multiplies' Q below
    q16_smem1 = q_smem1
    if Q_CONVERT:
        q8_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, BLOCK_D], SMEM_Q8)
        q_smem0 = q8_smem.slice(0, HALF)
        q_smem1 = q8_smem.slice(HALF, HALF)
    k_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_N, BLOCK_D], SMEM_KV)
    if FP8:
        v_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_D, BLOCK_N], SMEM_V)
    else:
        v_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_N, BLOCK_D], SMEM_V)
    if TMA_STORE:
        o_smem = gl.allocate_shared_memory(O.dtype.element_ty, [CONSUMERS, HALF, O_COLS], SMEM_O)  # one per WG
        o_smem0 = o_smem.index(0)
        o_smem1 = o_smem.index(1)
        o_smem2 = o_smem.index(CONSUMERS - 1)
    else:
        o_smem0 = q_smem0                    # stand-ins
        o_smem1 = q_smem0
        o_smem2 = q_smem0
    # Q's barriers: the tile's (both warpgroups arrive on q_empty), or with three warpgroups one
    # pair per warpgroup's rows (see _copy_q; a power-of-two count, the fourth unused)
    Q_BARS: gl.constexpr = 4 if CONSUMERS == 3 else 1
    q_full = gl.allocate_shared_memory(gl.int64, [Q_BARS, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [Q_BARS, 1], mbarrier.MBarrierLayout())
    # a caller's fp8 q under RAW_MAX: a tile to negate lands here first (forward_gluon_loads._copy_q_signed)
    NEG_Q: gl.constexpr = FP8 and RAW_MAX and not Q_CONVERT
    gl.static_assert(not NEG_Q or CONSUMERS == 2, "fp8: 128 queries")
    if NEG_Q:       # (only there: every other kernel stays as it was, shared memory included)
        q_landed = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())
        mbarrier.init(q_landed.index(0), count=1)
    else:
        q_landed = q_full                     # a stand-in, unused
    k_full, v_full, k_empty, v_empty = ring_barriers(NUM_BUF, CONSUMERS)
    for i in gl.static_range(Q_BARS):
        mbarrier.init(q_full.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=1 if CONSUMERS == 3 else CONSUMERS)

    # the consumers' common run-time arguments as one tuple (constexprs go one by one: a tuple
    # assigned to a name holds values)
    shared = (k_smem, v_smem, k_full, v_full, k_empty, v_empty, O, O_DESC, LSE, CU_Q, CU_K, QD, KD,
              VD, stride_ob, stride_os, stride_oh, stride_lb, stride_lh, stride_qdb, stride_kdb, seqlen_q, seqlen_k,
              batch, num_heads, group, head_dim, scale_log2, window_left, window_right)
    loads = (Q, K, V, CU_Q, CU_K, stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh, stride_vb,
             stride_vs, stride_vh, stride_vd, seqlen_q, seqlen_k, batch, num_heads, group, head_dim, window_left,
             window_right, q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, QD, KD,
             stride_qdb, stride_kdb, q_landed.index(0))
    if CONSUMERS == 2:
        gl.warp_specialize([
            (_consumer, (q_smem0, q16_smem0, q_full.index(0), q_empty.index(0), o_smem0, shared, 0, VARLEN,
                         MASK_LEFT, MASK_RIGHT, P_SCALE, FP8, TMA_STORE, RAW_MAX, BLOCK_M, EVEN_N, DIAG_FIRST,
                         Q_CONVERT, LATE_SUM, F16_SCORES, QK_MAX, F16_WIDE, Q16_EARLY)),
            (_consumer, (q_smem1, q16_smem1, q_full.index(0), q_empty.index(0), o_smem1, shared, HALF, VARLEN,
                         MASK_LEFT, MASK_RIGHT, P_SCALE, FP8, TMA_STORE, RAW_MAX, BLOCK_M, EVEN_N, DIAG_FIRST,
                         Q_CONVERT, LATE_SUM, F16_SCORES, QK_MAX, F16_WIDE, Q16_EARLY)),
            (producer, (loads, SMEM_Q, SMEM_KV, SMEM_V, VARLEN, MASK_LEFT, MASK_RIGHT, FP8, HOST_DESC, BLOCK_M,
                        DIAG_FIRST, NEG_Q)),
        ], [4, 1], [240, 24])
    else:
        # 16 warps (the producer's padded to a warpgroup): 128 registers each at launch; 160 for
        # the two worker consumers and 24 for the producer leave the first consumer 168
        gl.warp_specialize([
            (_consumer, (q_smem0, q_smem0, q_full.index(0), q_empty.index(0), o_smem0, shared, 0, VARLEN,
                         MASK_LEFT, MASK_RIGHT, P_SCALE, FP8, TMA_STORE, RAW_MAX, BLOCK_M, EVEN_N, DIAG_FIRST, False,
                         False, False)),
            (_consumer, (q_smem1, q_smem1, q_full.index(1), q_empty.index(1), o_smem1, shared, HALF, VARLEN,
                         MASK_LEFT, MASK_RIGHT, P_SCALE, FP8, TMA_STORE, RAW_MAX, BLOCK_M, EVEN_N, DIAG_FIRST, False,
                         False, False)),
            (_consumer, (q_smem2, q_smem2, q_full.index(2), q_empty.index(2), o_smem2, shared, 2 * HALF, VARLEN,
                         MASK_LEFT, MASK_RIGHT, P_SCALE, FP8, TMA_STORE, RAW_MAX, BLOCK_M, EVEN_N, DIAG_FIRST, False,
                         False, False)),
            (producer, (loads, SMEM_Q, SMEM_KV, SMEM_V, VARLEN, MASK_LEFT, MASK_RIGHT, FP8, HOST_DESC, BLOCK_M,
                        DIAG_FIRST, False)),
        ], [4, 4, 1], [160, 160, 24])

    for i in gl.static_range(Q_BARS):
        mbarrier.invalidate(q_full.index(i))
        mbarrier.invalidate(q_empty.index(i))
    if NEG_Q:
        mbarrier.invalidate(q_landed.index(0))
    invalidate_rings(k_full, v_full, k_empty, v_empty)
