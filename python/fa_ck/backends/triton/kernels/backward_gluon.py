"""The backward for Hopper (sm90) in Gluon, warp-specialised like forward_gluon.py: a dK/dV kernel
that can add dQ itself (ONE_PASS), and a dQ kernel (dq_gluon.py) for the calls without the one
pass (deterministic=True, head dims past 128, and calls whose dK and dV backward.py computes).
config.py decides which calls take each; FA_CK_TRITON_CONFIG sets them ('{"bwd_dkdv": {"gluon":
..., "one_pass": ...}}', '{"bwd_dq": {"gluon": ...}}').

dK and dV:

A work unit is 128 keys of one kv head (up to d128): two consumer warpgroups of 64 keys each (their own
partitions) and one producer warp that loads the unit's K and V once, then streams the query
blocks' Q and dO through NUM_BUF-deep rings by TMA (full/empty mbarriers, as in the forward;
that warp and the units' order: backward_gluon_loads.py).
A program takes one unit, or PERSISTENT several in turn (rings, barriers and, where shared memory
holds them, two K and V buffers carried across them: the next unit's tiles load under this one):
round-robin, or DYNAMIC from an atomic counter, the producer publishing each unit's number
(unit_smem) with its K and V, a number past the last unit telling the consumers to stop. Per
query block, each consumer computes, with keys along the rows (FlashAttention-2's transposed tiles):

    A = K Q^T - lse / scale,  B = V dO^T - delta
                                   (both issued async from those start values, -inf where masked;
                                    the exp2 of P^T runs under the second)
    P^T = exp2(A * scale_log2),  dS^T = P^T * B       (= exp(scale S^T - lse), P^T (dP^T - delta))
    dV += P^T dO,  dK += dS^T Q    (P^T and dS^T from registers)
    ONE_PASS: dS^T to shared memory; once both warpgroups' rows are there, each multiplies half
    of dQ's columns, dS K over all 128 keys, and hands the tile to the TMA unit as a reduce-add
    into DQ_ACC (fp32; backward.dq_from_acc scales it into dq). The add is waited for one block
    later, just before its tile is written again, so that the tensor cores do not idle on it.

The start values need scale > 0 (config.py sends other scales to backward.py).

Past head dim 128 (DSPLIT, _bwd_unit_dsplit) a unit is 64 keys that both warpgroups take, each
owning half of dK's and dV's columns; S^T and dP^T are split by queries instead, P^T and dS^T
shared through shared memory; no ONE_PASS there (dQ by the dQ kernel).

Plain calls only (fp16/bf16, head dim up to 256, causal and windows, varlen). GQA (GROUP q heads
per kv head) with host-made 4-D descriptors only (not varlen): a unit steps through its kv
head's q heads one after another, their query blocks all streamed through the same rings, dK and
dV summed over them in registers.

delta comes from bwd_preprocess (minus dlse when lse has a gradient), as for backward.py.
"""
from triton._C.libtriton import ir
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language._core import builtin
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                               warpgroup_mma_wait)

from .backward_gluon_loads import bwd_producer, dkdv_tile, unit_at
from .gluon_common import acc_layout, partition_barrier, head_desc, gl_scores, store_out


@builtin
def _tma_add(desc, coord, src, _semantic=None):
    """The tile in shared memory `src` added into desc's tile at coord by the TMA unit
    (cp.reduce.async.bulk.tensor: whole lines reduced in L2; rows and columns past the
    descriptor's bounds skipped), asynchronously: tma.store_wait before src is written again.
    Gluon's hopper.tma wraps the copies but not this op, which its builder has."""
    coord = _semantic._convert_to_ir_values(coord, require_i64=False)
    _semantic.builder.create_async_tma_reduce(ir.DESCRIPTOR_REDUCE_KIND.ADD, desc.handle, coord, src.handle)


@gluon.jit
def _query_stats(lse_base, delta_base, m0, seqlen_q, BLOCK_M: gl.constexpr, layout: gl.constexpr):
    """lse / scale and delta of queries [m0, m0 + BLOCK_M): lse_base holds lse / scale, +inf where a
    query saw no key (bwd_preprocess: once per row, not per key block here); a query past seqlen_q
    gets +inf too, so its P^T = exp2(scale_log2 * (S^T - lse / scale)) is 0."""
    offs_m = m0 + gl.arange(0, BLOCK_M, layout=layout)
    row_ok = offs_m < seqlen_q
    lse = gl.load(lse_base + offs_m, mask=row_ok, other=float("inf"))
    delta = gl.load(delta_base + offs_m, mask=row_ok, other=0.0)
    return lse, delta


@gluon.jit
def _masked(st, m0, offs_n, full_lo, full_hi, seqlen_q, seqlen_k, window_left, window_right,
            MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, COL0: gl.constexpr = 0):
    """S^T (keys offs_n along the rows, queries from m0 + COL0 along the columns: COL0 > 0 for
    the later columns of the query block at m0) at -inf where the mask hides a score, for query
    blocks that straddle its edge; others come back as they are."""
    if (m0 < full_lo) | (m0 >= full_hi):
        offs_m = m0 + COL0 + gl.arange(0, st.shape[1], layout=gl.SliceLayout(0, st.type.layout))
        st, _ = gl_scores(st, offs_m[None, :], offs_n[:, None], seqlen_q, seqlen_k, 1.0, 0.0, 0.0, 0.0,
                        window_left, window_right, False, False, MASK_LEFT, MASK_RIGHT, True)
    return st


@gluon.jit
def _probs_t(k_tile, v_tile, q_t, do_t, s_zero, lse_s, delta, m0, offs_n, full_lo, full_hi, seqlen_q, seqlen_k,
             scale_log2, window_left, window_right, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
             FROM_ZERO: gl.constexpr, C0: gl.constexpr):
    """One step's S^T = K Q^T and dP^T = V dO^T (issued async; queries from C0 of the block), then
    P^T once S^T is in: (P^T, dP^T still running). FROM_ZERO: the multiplies start from zero and
    the mask and lse come after. Else they start from -lse/scale (-inf where the mask hides a
    score) and -delta, so P^T = exp2(scale_log2 * acc) and dS^T = P^T * acc: no per-query vectors
    or mask in registers at the step's peak. (Keys past seqlen_k start at -inf too, which their
    rows, never stored, do not need: without it ptxas spills at d128.)"""
    if FROM_ZERO:
        st = warpgroup_mma(k_tile, q_t, s_zero, use_acc=False, is_async=True)
        dpt = warpgroup_mma(v_tile, do_t, s_zero, use_acc=False, is_async=True)
    else:
        key_ok = offs_n[:, None] < seqlen_k
        st0 = _masked(gl.where(key_ok, s_zero - lse_s[None, :], float("-inf")), m0, offs_n, full_lo, full_hi,
                      seqlen_q, seqlen_k, window_left, window_right, MASK_LEFT, MASK_RIGHT, C0)
        st = warpgroup_mma(k_tile, q_t, st0, is_async=True)
        dpt0 = gl.where(key_ok, s_zero - delta[None, :], 0.0)
        dpt = warpgroup_mma(v_tile, do_t, dpt0, is_async=True)
    st = warpgroup_mma_wait(1, deps=[st])
    if FROM_ZERO:
        st = _masked(st, m0, offs_n, full_lo, full_hi, seqlen_q, seqlen_k, window_left, window_right, MASK_LEFT,
                     MASK_RIGHT, C0)
        pt = gl.exp2(st * scale_log2 - (lse_s * scale_log2)[None, :])
    else:
        pt = gl.exp2(st * scale_log2)
    return pt, dpt


@gluon.jit
def _bwd_consumer(o_smem, shared, VARLEN: gl.constexpr, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
                  ONE_PASS: gl.constexpr, FROM_ZERO: gl.constexpr, WG: gl.constexpr, HOST_DESC: gl.constexpr,
                  PERSISTENT: gl.constexpr, DYNAMIC: gl.constexpr, GROUP: gl.constexpr, TMA_STORE: gl.constexpr):
    """Warpgroup WG (0 or 1), per work unit (dkdv_tile): its keys [n0, n0 + 64) (rows 64 * WG of
    the unit's K and V buffer; past d128 the unit's 64 keys, columns WG * BLOCK_D / 2 on: see
    _consume_unit) against the unit's query blocks, of every q head of its kv head (GROUP, GQA;
    _bwd_unit), then their dK and dV
    stored (from registers, or TMA_STORE through o_smem, this warpgroup's (64, BLOCK_D) staging
    tile, as TMA stores through DK_DESC / DV_DESC) while the producer may already load the next
    unit's tiles; j counts
    steps across units (the Q / dO ring's and ds_full / ds_free's phases). DYNAMIC: each unit's
    number read from unit_smem once its K and V are in (unit_at), until one past the last. One
    unit (not PERSISTENT) without a loop: a loop over units (one trip) spills more at d128.
    shared: the run-time arguments both warpgroups take alike (bwd_dkdv_gluon_kernel's tuple)."""
    k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, dq_smem, ds_full, ds_free, kv_bar, kv_empty, q_full, q_empty, \
        unit_smem, LSE, DELTA, DK, DV, DK_DESC, DV_DESC, dq_desc, lse_strides, dk_strides, dv_strides, u0, n_units, \
        n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k, head_dim, scales, window = shared
    if DYNAMIC or PERSISTENT:    # units from the counter (unit_at), or every num_programs-th from u0
        j = 0
        t = 0
        if DYNAMIC:
            u = unit_at(unit_smem, kv_bar, t)
        else:
            u = u0
        while u < n_units:
            j = _consume_unit(k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, dq_smem, o_smem, ds_full, ds_free,
                              kv_bar, kv_empty, q_full, q_empty, LSE, DELTA, DK, DV, DK_DESC, DV_DESC, dq_desc,
                              lse_strides, dk_strides, dv_strides, u, j, t, n_kb, num_heads, CU_Q, CU_K, seqlen_q,
                              seqlen_k, head_dim, scales, window, VARLEN, MASK_LEFT, MASK_RIGHT, ONE_PASS,
                              FROM_ZERO, WG, HOST_DESC, GROUP, TMA_STORE)
            t += 1
            if DYNAMIC:
                u = unit_at(unit_smem, kv_bar, t)
            else:
                u += gl.num_programs(0)
    else:
        _consume_unit(k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, dq_smem, o_smem, ds_full, ds_free, kv_bar,
                      kv_empty, q_full, q_empty, LSE, DELTA, DK, DV, DK_DESC, DV_DESC, dq_desc, lse_strides,
                      dk_strides, dv_strides, u0, u0 * 0, u0 * 0, n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k,
                      head_dim, scales, window, VARLEN, MASK_LEFT, MASK_RIGHT, ONE_PASS, FROM_ZERO, WG, HOST_DESC,
                      GROUP, TMA_STORE)
    if ONE_PASS or TMA_STORE:
        tma.store_wait(0)


@gluon.jit
def _consume_unit(k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, dq_smem, o_smem, ds_full, ds_free, kv_bar,
                  kv_empty, q_full, q_empty, LSE, DELTA, DK, DV, DK_DESC, DV_DESC, dq_desc, lse_strides, dk_strides,
                  dv_strides, u, j, t, n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k, head_dim, scales, window,
                  VARLEN: gl.constexpr, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, ONE_PASS: gl.constexpr,
                  FROM_ZERO: gl.constexpr, WG: gl.constexpr, HOST_DESC: gl.constexpr, GROUP: gl.constexpr,
                  TMA_STORE: gl.constexpr):
    """_bwd_consumer's unit u, the program's t-th, after j steps -> j after it. DSPLIT (head dims
    past 128, _bwd_unit_dsplit): the warpgroup's dK and dV are the unit's 64 keys by half the
    columns, not 64 of its 128 keys by every column. TMA_STORE (host-made descriptors, up to
    d128): dK, then dV, through o_smem to TMA stores, the second once the first has read the
    tile, rather than plain stores from the accumulators' layout. lse_strides: LSE's and DELTA's
    (batch, head) strides; dk_strides, dv_strides: (batch, seq, head); scales: (scale,
    scale_log2); window: (left, right)."""
    stride_lb, stride_lh = lse_strides
    stride_dkb, stride_dks, stride_dkh = dk_strides
    stride_dvb, stride_dvs, stride_dvh = dv_strides
    scale, scale_log2 = scales
    window_left, window_right = window
    BLOCK_N: gl.constexpr = k_smem.shape[1]
    BLOCK_D: gl.constexpr = k_smem.shape[2]
    DSPLIT: gl.constexpr = BLOCK_D > 128
    ROWS: gl.constexpr = BLOCK_N if DSPLIT else BLOCK_N // 2
    COLS: gl.constexpr = BLOCK_D // 2 if DSPLIT else BLOCK_D
    BLOCK_M: gl.constexpr = q_smem.shape[1]
    NUM_KV: gl.constexpr = k_smem.shape[0]
    dtype: gl.constexpr = q_smem.dtype
    d_layout: gl.constexpr = acc_layout(COLS, dtype)
    ROW0: gl.constexpr = 0 if DSPLIT else WG * ROWS
    COL0: gl.constexpr = WG * COLS if DSPLIT else 0
    b, h, n0, q_start, k_start, sq, sk, lo, full_lo, full_hi, n_blocks = dkdv_tile(
        u, n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k, window, BLOCK_M, BLOCK_N, VARLEN, MASK_LEFT, MASK_RIGHT)
    b64 = b.to(gl.int64)
    h64 = h.to(gl.int64)
    # (GQA: the group's first q head; _bwd_unit steps through the others)
    lse_base = LSE + b64 * stride_lb + (h64 * GROUP) * stride_lh + q_start
    delta_base = DELTA + b64 * stride_lb + (h64 * GROUP) * stride_lh + q_start
    kb = t % NUM_KV
    if DSPLIT:
        dk, dv, j = _bwd_unit_dsplit(k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, ds_full, ds_free,
                                     kv_bar.index(kb), q_full, q_empty, lse_base, delta_base, kb, (t // NUM_KV) & 1,
                                     j, n0, lo, full_lo, full_hi, n_blocks, sq, sk, scale_log2, window_left,
                                     window_right, MASK_LEFT, MASK_RIGHT, FROM_ZERO, WG, stride_lh, GROUP)
    else:
        dk, dv, j = _bwd_unit(k_smem, v_smem, q_smem, do_smem, ds_smem, dq_smem, ds_full, ds_free,
                              kv_bar.index(kb), q_full, q_empty, lse_base, delta_base, dq_desc, kb, (t // NUM_KV) & 1,
                              j, n0 + ROW0, lo, full_lo, full_hi, n_blocks, sq, sk, scale_log2,
                              window_left, window_right, MASK_LEFT, MASK_RIGHT, ONE_PASS, FROM_ZERO, WG, b,
                              h * GROUP, HOST_DESC, stride_lh, GROUP)
    mbarrier.arrive(kv_empty.index(kb), count=1)  # the unit's multiplies, all waited for, read K and V no more
    if TMA_STORE:   # rows past seqlen_k and columns past head_dim are not written
        tma.store_wait(0)                         # the last unit's dV (and dQ's adds) have left shared memory
        partition_barrier()                      # (the wait is the issuing thread's)
        store_out(DK_DESC, o_smem, (dk * scale).to(dtype), b, h, n0 + ROW0, 0)
        tma.store_wait(0)
        partition_barrier()
        store_out(DV_DESC, o_smem, dv.to(dtype), b, h, n0 + ROW0, 0)
    else:
        # int64 bases at this warpgroup's first key, 32-bit offsets within the tile
        rows = gl.arange(0, ROWS, layout=gl.SliceLayout(1, d_layout))
        cols = COL0 + gl.arange(0, COLS, layout=gl.SliceLayout(0, d_layout))
        ok = (n0 + ROW0 + rows[:, None] < sk) & (cols[None, :] < head_dim)
        key0 = k_start + n0 + ROW0
        gl.store(DK + b64 * stride_dkb + h64 * stride_dkh + key0 * stride_dks + rows[:, None] * stride_dks
                 + cols[None, :], (dk * scale).to(dtype), mask=ok)
        gl.store(DV + b64 * stride_dvb + h64 * stride_dvh + key0 * stride_dvs + rows[:, None] * stride_dvs
                 + cols[None, :], dv.to(dtype), mask=ok)
    return j


@gluon.jit
def _bwd_unit(k_smem, v_smem, q_smem, do_smem, ds_smem, dq_smem, ds_full, ds_free, kv_bar, q_full, q_empty,
              lse_base, delta_base, dq_desc, kb, kv_phase, j, n0, lo, full_lo, full_hi, n_blocks, seqlen_q, seqlen_k,
              scale_log2, window_left, window_right, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
              ONE_PASS: gl.constexpr, FROM_ZERO: gl.constexpr, WG: gl.constexpr, b, h,
              HOST_DESC: gl.constexpr, stride_lh, GROUP: gl.constexpr):
    """One work unit of _bwd_consumer: keys [n0, n0 + 64) (rows 64 * WG of K and V buffer kb,
    complete on kv_bar at kv_phase) against its n_blocks query blocks from lo, of each of the
    GROUP q heads from h (the kv head's first; GQA) in turn; j: the steps done
    before it -> (dK / scale, dV, j after it).
    FROM_ZERO: S^T and dP^T start from zero, lse, delta and the mask applied after (registers for
    the per-query vectors at the step's peak); else from start values (below), which ptxas copies
    into the accumulator registers between the two multiplies, and so waits for S^T's to finish
    before it issues dP^T's (ptxas C7517).
    P^T and dS^T are the dV and dK multiplies' A operands in registers. ONE_PASS: once both warpgroups'
    dS^T rows are in ds_smem, columns [WG * BLOCK_D / 2, (WG + 1) * BLOCK_D / 2) of dS K (K of all
    128 keys) are added to dQ by a TMA reduce-add through dq_desc; ds_full / ds_free hand ds_smem
    between the two warpgroups.
    Each tile that never moves within the unit (K, V, P^T, dS^T) comes through a leading axis
    indexed by `zero` (+ kb), 0 (kb) but not provably so: with a constant address the multiplies'
    wgmma descriptors are hoisted out of the loop, where they hold registers for all of it (and
    spill at d128)."""
    ROWS: gl.constexpr = 64
    BLOCK_D: gl.constexpr = k_smem.shape[2]
    BLOCK_M: gl.constexpr = q_smem.shape[1]
    NUM_BUF: gl.constexpr = q_smem.shape[0]
    dtype: gl.constexpr = q_smem.dtype
    s_layout: gl.constexpr = acc_layout(BLOCK_M, dtype)
    d_layout: gl.constexpr = acc_layout(BLOCK_D, dtype)
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=d_layout, k_width=2)
    col_s: gl.constexpr = gl.SliceLayout(0, s_layout)
    ROW0: gl.constexpr = WG * ROWS
    HALF_D: gl.constexpr = BLOCK_D // 2
    D0: gl.constexpr = WG * HALF_D
    q_layout: gl.constexpr = acc_layout(HALF_D, dtype)

    offs_n = n0 + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))
    s_zero = gl.zeros([ROWS, BLOCK_M], gl.float32, s_layout)
    dq_zero = gl.zeros([BLOCK_M, HALF_D], gl.float32, q_layout)
    dk = gl.zeros([ROWS, BLOCK_D], gl.float32, d_layout)
    dv = gl.zeros([ROWS, BLOCK_D], gl.float32, d_layout)
    lse_s, delta = _query_stats(lse_base, delta_base, lo, seqlen_q, BLOCK_M, col_s)
    mbarrier.wait(kv_bar, kv_phase)
    # K_REGS: up to d64 with ONE_PASS, S^T = K Q^T takes K's rows from registers, read from shared
    # memory once per unit: wgmma's A operand from shared memory shares its bandwidth with every
    # other operand (one pass only: docs/performance.md, "Kernel choices")
    K_REGS: gl.constexpr = BLOCK_D <= 64 and ONE_PASS
    if K_REGS:
        k_a: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=s_layout, k_width=2)
        k_reg = k_smem.index(kb).slice(ROW0, ROWS).load(k_a)
    for g in range(GROUP):                    # GQA: the kv head's q heads in turn (GROUP 1: one trip)
        lse_g = lse_base + g * stride_lh
        delta_g = delta_base + g * stride_lh
        for i in range(n_blocks):
            m0 = lo + i * BLOCK_M
            buf = j % NUM_BUF
            mbarrier.wait(q_full.index(buf), (j // NUM_BUF) & 1)
            zero = (m0 < 0).to(gl.int32)
            kz = zero + kb                        # kb, but not provably loop-invariant (see above)
            if K_REGS:
                k_tile = k_reg
            else:
                k_tile = k_smem.index(kz).slice(ROW0, ROWS)
            pt, dpt = _probs_t(k_tile, v_smem.index(kz).slice(ROW0, ROWS),
                               q_smem.index(buf).permute((1, 0)), do_smem.index(buf).permute((1, 0)), s_zero, lse_s,
                               delta, m0, offs_n, full_lo, full_hi, seqlen_q, seqlen_k, scale_log2, window_left,
                               window_right, MASK_LEFT, MASK_RIGHT, FROM_ZERO, 0)
            dpt = warpgroup_mma_wait(0, deps=[dpt])
            dst = (pt * (dpt - delta[None, :])).to(dtype) if FROM_ZERO else (pt * dpt).to(dtype)
            if ONE_PASS:                          # dS^T to shared memory for dQ's multiply
                mbarrier.wait(ds_free, (j & 1) ^ 1, pred=j > 0)     # both warpgroups' last ones read it
                dst_smem = ds_smem.index(zero).slice(ROW0, ROWS)
                dst_smem.store(dst)
                fence_async_shared()
            pt_a = gl.convert_layout(pt.to(dtype), a_layout)
            dst_a = gl.convert_layout(dst, a_layout)
            dv = warpgroup_mma(pt_a, do_smem.index(buf), dv, is_async=True)
            dk = warpgroup_mma(dst_a, q_smem.index(buf), dk, is_async=True)
            if ONE_PASS:
                mbarrier.arrive(ds_full, count=1)
                mbarrier.wait(ds_full, j & 1)     # the other warpgroup's dS^T rows are in too
                dq = warpgroup_mma(ds_smem.index(zero).permute((1, 0)), k_smem.index(kz).slice(D0, HALF_D, dim=1),
                                   dq_zero, use_acc=False, is_async=True)
            lse_s, delta = _query_stats(lse_g, delta_g, m0 + BLOCK_M, seqlen_q, BLOCK_M, col_s)
            if ONE_PASS:
                dv, dk, dq, pt_a, dst_a = warpgroup_mma_wait(0, deps=[dv, dk, dq, pt_a, dst_a])
            else:
                dv, dk, pt_a, dst_a = warpgroup_mma_wait(0, deps=[dv, dk, pt_a, dst_a])
            mbarrier.arrive(q_empty.index(buf), count=1)
            if ONE_PASS:
                mbarrier.arrive(ds_free, count=1)
                # dQ's columns through shared memory to a TMA reduce-add, not waited for here: the
                # next block's waits only until this one has read its tile
                dq_tile = dq_smem.index(WG)
                tma.store_wait(0)
                partition_barrier()              # (the wait is the issuing thread's)
                dq_tile.store(dq)
                fence_async_shared()
                partition_barrier()              # the whole tile written before one thread issues the add
                if HOST_DESC:                     # a 4-D descriptor over (batch, heads, rows, head_dim)
                    _tma_add(dq_desc, [b, h + g, m0, D0], dq_tile.reshape([1, 1, dq_tile.shape[0], dq_tile.shape[1]]))
                else:
                    _tma_add(dq_desc, [m0, D0], dq_tile)
            j += 1
        if GROUP > 1:                         # the next q head's first block (the last head: its own)
            gn = gl.minimum(g + 1, GROUP - 1)
            lse_s, delta = _query_stats(lse_base + gn * stride_lh, delta_base + gn * stride_lh, lo, seqlen_q,
                                        BLOCK_M, col_s)
    return dk, dv, j


@gluon.jit
def _bwd_unit_dsplit(k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, ds_full, ds_free, kv_bar, q_full, q_empty,
                     lse_base, delta_base, kb, kv_phase, j, n0, lo, full_lo, full_hi, n_blocks, seqlen_q, seqlen_k,
                     scale_log2, window_left, window_right, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
                     FROM_ZERO: gl.constexpr, WG: gl.constexpr, stride_lh, GROUP: gl.constexpr):
    """_bwd_unit for head dims past 128, where a warpgroup cannot hold dK and dV of 64 keys over
    every column (2 x 128 fp32 registers per thread at d256): both warpgroups take the unit's 64
    keys [n0, n0 + 64), warpgroup WG owns columns [WG * BLOCK_D / 2, (WG + 1) * BLOCK_D / 2) of
    their dK and dV, and the S^T / dP^T of a step are split by queries instead: WG computes those
    of queries [m0 + WG * BLOCK_M / 2, ...) over the whole head dim, and P^T / dS^T go through
    shared memory (p_smem[WG], ds_smem[WG]), where the other warpgroup reads them for its own
    columns (ds_full / ds_free hand them over). Per step, in issue order:

        S^T, dP^T of own queries;  P^T -> p_smem[WG];  dV += P^T dO (own queries)
        dS^T -> ds_smem[WG];  dK += dS^T Q (own queries);  (both warpgroups' tiles in)
        dV += P^T dO, dK += dS^T Q (the other warpgroup's queries)

    -> (dK / scale, dV of the own columns, j after the unit)."""
    ROWS: gl.constexpr = k_smem.shape[1]
    BLOCK_D: gl.constexpr = k_smem.shape[2]
    BLOCK_M: gl.constexpr = q_smem.shape[1]
    NUM_BUF: gl.constexpr = q_smem.shape[0]
    dtype: gl.constexpr = q_smem.dtype
    COLS: gl.constexpr = BLOCK_M // 2
    C0: gl.constexpr = WG * COLS                   # own queries within the block
    C1: gl.constexpr = (1 - WG) * COLS             # the other warpgroup's
    HALF_D: gl.constexpr = BLOCK_D // 2
    D0: gl.constexpr = WG * HALF_D                 # own columns of dK and dV
    s_layout: gl.constexpr = acc_layout(COLS, dtype)
    d_layout: gl.constexpr = acc_layout(HALF_D, dtype)
    col_s: gl.constexpr = gl.SliceLayout(0, s_layout)

    offs_n = n0 + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))
    s_zero = gl.zeros([ROWS, COLS], gl.float32, s_layout)
    dk = gl.zeros([ROWS, HALF_D], gl.float32, d_layout)
    dv = gl.zeros([ROWS, HALF_D], gl.float32, d_layout)
    lse_s, delta = _query_stats(lse_base, delta_base, lo + C0, seqlen_q, COLS, col_s)
    mbarrier.wait(kv_bar, kv_phase)
    for g in range(GROUP):                    # GQA: the kv head's q heads in turn (GROUP 1: one trip)
        lse_g = lse_base + g * stride_lh
        delta_g = delta_base + g * stride_lh
        for i in range(n_blocks):
            m0 = lo + i * BLOCK_M
            buf = j % NUM_BUF
            mbarrier.wait(q_full.index(buf), (j // NUM_BUF) & 1)
            zero = (m0 < 0).to(gl.int32)
            kz = zero + kb                            # kb, not provably loop-invariant (see _bwd_unit)
            q_tile = q_smem.index(buf)
            do_tile = do_smem.index(buf)
            pt, dpt = _probs_t(k_smem.index(kz), v_smem.index(kz), q_tile.slice(C0, COLS).permute((1, 0)),
                               do_tile.slice(C0, COLS).permute((1, 0)), s_zero, lse_s, delta, m0, offs_n, full_lo,
                               full_hi, seqlen_q, seqlen_k, scale_log2, window_left, window_right, MASK_LEFT,
                               MASK_RIGHT, FROM_ZERO, C0)
            mbarrier.wait(ds_free, (j & 1) ^ 1, pred=j > 0)     # both read last step's tiles
            p_own = p_smem.index(WG + zero)
            p_own.store(pt.to(dtype))
            fence_async_shared()                      # the generic-proxy store before wgmma's async read
            dv = warpgroup_mma(p_own, do_tile.slice(C0, COLS).slice(D0, HALF_D, dim=1), dv, is_async=True)
            dpt = warpgroup_mma_wait(1, deps=[dpt])
            dst = (pt * (dpt - delta[None, :])).to(dtype) if FROM_ZERO else (pt * dpt).to(dtype)
            ds_own = ds_smem.index(WG + zero)
            ds_own.store(dst)
            fence_async_shared()
            mbarrier.arrive(ds_full, count=1)
            dk = warpgroup_mma(ds_own, q_tile.slice(C0, COLS).slice(D0, HALF_D, dim=1), dk, is_async=True)
            mbarrier.wait(ds_full, j & 1)             # the other warpgroup's P^T and dS^T are in
            dv = warpgroup_mma(p_smem.index(1 - WG + zero), do_tile.slice(C1, COLS).slice(D0, HALF_D, dim=1), dv,
                               is_async=True)
            dk = warpgroup_mma(ds_smem.index(1 - WG + zero), q_tile.slice(C1, COLS).slice(D0, HALF_D, dim=1), dk,
                               is_async=True)
            lse_s, delta = _query_stats(lse_g, delta_g, m0 + BLOCK_M + C0, seqlen_q, COLS, col_s)
            dv, dk = warpgroup_mma_wait(0, deps=[dv, dk])
            mbarrier.arrive(q_empty.index(buf), count=1)
            mbarrier.arrive(ds_free, count=1)
            j += 1
        if GROUP > 1:                             # the next q head's first block (the last head: its own)
            gn = gl.minimum(g + 1, GROUP - 1)
            lse_s, delta = _query_stats(lse_base + gn * stride_lh, delta_base + gn * stride_lh, lo + C0, seqlen_q,
                                        COLS, col_s)
    return dk, dv, j


@gluon.jit
def bwd_dkdv_gluon_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, DK_DESC, DV_DESC, DQ_ACC, DQ_BUF, counter_offset, CU_Q, CU_K,
                          q_strides, k_strides, v_strides, do_strides, dk_strides, dv_strides, dq_strides,
                          lse_strides, seqlen_q, seqlen_k, head_dim, scales, window, num_heads, batch, tail_heads,
                          BLOCK_M: gl.constexpr, BLOCK_D: gl.constexpr, NUM_BUF: gl.constexpr, NUM_KV: gl.constexpr,
                          VARLEN: gl.constexpr, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
                          SMEM_KV: gl.constexpr, SMEM_Q: gl.constexpr, SMEM_P: gl.constexpr,
                          ONE_PASS: gl.constexpr, SMEM_DQ: gl.constexpr, HOST_DESC: gl.constexpr,
                          FROM_ZERO: gl.constexpr, PERSISTENT: gl.constexpr,
                          DYNAMIC: gl.constexpr, GROUP: gl.constexpr, TMA_STORE: gl.constexpr, SMEM_O: gl.constexpr,
                          num_warps: gl.constexpr):
    """A 1-D grid over work units (dkdv_tile: 128 keys of one kv head, 64 past d128): one program
    per unit, or with HOST_DESC a PERSISTENT one, fewer programs each taking every num_programs-th unit, its
    rings and barriers carried from one unit to the next; DYNAMIC (with ONE_PASS): program p's
    first unit is p, its next ones num_programs + an atomic add on the int32 zero at DQ_BUF +
    counter_offset (DQ_BUF: DQ_ACC's tensor, counter_offset its element count).
    NUM_KV: K and V buffers (2 lets a persistent program load the next unit's under this one).
    num_warps = 4: the first consumer warpgroup; the second and the producer warp are workers.
    GROUP: q heads per kv head (GQA, HOST_DESC only: Q, dO, dQ's descriptors span the q heads,
    K, V, DK, DV the kv heads); a unit walks its kv head's q heads one after another.
    tail_heads (DYNAMIC): the last heads whose units are dealt heaviest first (dealt_unit); 0: none.
    LSE holds lse / scale, +inf for empty rows (bwd_preprocess), not lse. SMEM_P: the layout of the
    P^T / dS^T tiles that go through shared memory (dS^T with ONE_PASS; both past d128). ONE_PASS: dQ / scale
    added into DQ_ACC (fp32, zeroed by the caller) by TMA reduce-adds of (BLOCK_M, BLOCK_D / 2)
    tiles (SMEM_DQ: their layout). HOST_DESC: Q, K, V, DO (and DQ_ACC with ONE_PASS) are host-made
    4-D TMA descriptors over (batch, heads, rows, head_dim), not pointers (no varlen): no
    descriptors built per program.
    TMA_STORE (HOST_DESC, up to d128): dK and dV leave by TMA stores of (64, BLOCK_D) tiles (SMEM_O),
    staged per warpgroup, through DK_DESC / DV_DESC, host-made 4-D descriptors; without it they
    are written from registers (DK_DESC, DV_DESC unused). *_strides: (batch, seq, head) strides
    (varlen: batch 0; dq_strides DQ_ACC's, with ONE_PASS), lse_strides LSE's and DELTA's (batch,
    head); scales: (scale, scale_log2); window: (left, right)."""
    stride_qb, stride_qs, stride_qh = q_strides
    stride_kb, stride_ks, stride_kh = k_strides
    stride_vb, stride_vs, stride_vh = v_strides
    stride_dob, stride_dos, stride_doh = do_strides
    stride_dqb, stride_dqs, stride_dqh = dq_strides
    DSPLIT: gl.constexpr = BLOCK_D > 128           # _bwd_unit_dsplit: 64 keys, dK / dV split by columns
    BLOCK_N: gl.constexpr = 64 if DSPLIT else 128
    HALF: gl.constexpr = 64
    gl.static_assert(not (DSPLIT and ONE_PASS), "past d128: two passes")
    gl.static_assert(HOST_DESC or not PERSISTENT, "per-program descriptors serve one unit")
    gl.static_assert(HOST_DESC or GROUP == 1, "GQA: 4-D descriptors over every q head")
    gl.static_assert(PERSISTENT or not DYNAMIC, "DYNAMIC schedules a persistent grid")
    gl.static_assert(ONE_PASS or not DYNAMIC, "DYNAMIC's counter lies past dQ's buffer")
    gl.static_assert(HOST_DESC and not DSPLIT or not TMA_STORE, "dK / dV by TMA stores: host-made descriptors, "
                     "up to d128 (shared memory)")
    u0 = gl.program_id(0)
    n_kb = gl.cdiv(seqlen_k, BLOCK_N)               # seqlen_k: the longest sequence's (varlen)
    n_units = n_kb * num_heads * batch
    if HOST_DESC:
        k_desc, v_desc, q_desc, do_desc, dq_desc, dk_desc, dv_desc = K, V, Q, DO, DQ_ACC, DK_DESC, DV_DESC
        dtype: gl.constexpr = Q.dtype
    else:   # one unit per program: its descriptors (varlen: its sequence's bounds) made here
        b, h, n0, q_start, k_start, sq, sk, _, _, _, _ = dkdv_tile(u0, n_kb, num_heads, CU_Q, CU_K, seqlen_q,
                                                                    seqlen_k, window, BLOCK_M, BLOCK_N, VARLEN,
                                                                    MASK_LEFT, MASK_RIGHT)
        if n0 >= sk:
            return
        b64 = b.to(gl.int64)
        h64 = h.to(gl.int64)
        k_desc = head_desc(K + b64 * stride_kb + h64 * stride_kh, k_start, stride_ks, sk, head_dim, BLOCK_N,
                       BLOCK_D, SMEM_KV)
        v_desc = head_desc(V + b64 * stride_vb + h64 * stride_vh, k_start, stride_vs, sk, head_dim, BLOCK_N,
                       BLOCK_D, SMEM_KV)
        q_desc = head_desc(Q + b64 * stride_qb + h64 * stride_qh, q_start, stride_qs, sq, head_dim, BLOCK_M,
                       BLOCK_D, SMEM_Q)
        do_desc = head_desc(DO + b64 * stride_dob + h64 * stride_doh, q_start, stride_dos, sq, head_dim, BLOCK_M,
                        BLOCK_D, SMEM_Q)
        if ONE_PASS:
            dq_desc = head_desc(DQ_ACC + b64 * stride_dqb + h64 * stride_dqh, q_start, stride_dqs, sq, head_dim,
                            BLOCK_M, BLOCK_D // 2, SMEM_DQ)
        else:
            dq_desc = k_desc                                  # stand-in, never used
        dk_desc, dv_desc = DK_DESC, DV_DESC                   # stand-ins, never used (TMA_STORE needs HOST_DESC)
        dtype: gl.constexpr = Q.dtype.element_ty

    # K, V and dS^T with a leading axis: see _bwd_unit
    k_smem = gl.allocate_shared_memory(dtype, [NUM_KV, BLOCK_N, BLOCK_D], SMEM_KV)
    v_smem = gl.allocate_shared_memory(dtype, [NUM_KV, BLOCK_N, BLOCK_D], SMEM_KV)
    q_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_M, BLOCK_D], SMEM_Q)
    do_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_M, BLOCK_D], SMEM_Q)
    p_smem, ds_smem = q_smem, q_smem                          # stand-ins where operands stay in registers
    if DSPLIT:    # P^T and dS^T of each warpgroup's queries, read by both
        p_smem = gl.allocate_shared_memory(dtype, [2, BLOCK_N, BLOCK_M // 2], SMEM_P)
        ds_smem = gl.allocate_shared_memory(dtype, [2, BLOCK_N, BLOCK_M // 2], SMEM_P)
    if ONE_PASS:
        ds_smem = gl.allocate_shared_memory(dtype, [1, BLOCK_N, BLOCK_M], SMEM_P)  # dS^T, 64 rows per warpgroup
    dq_smem = q_smem
    if ONE_PASS:   # each warpgroup's dQ columns on their way to the TMA reduce-add
        dq_smem = gl.allocate_shared_memory(gl.float32, [2, BLOCK_M, BLOCK_D // 2], SMEM_DQ)
    o_smem0, o_smem1 = q_smem.index(0), q_smem.index(0)      # stand-ins: plain stores
    if TMA_STORE:  # each warpgroup's dK, then dV, on their way to the TMA stores
        o_smem = gl.allocate_shared_memory(dtype, [2, HALF, BLOCK_D], SMEM_O)
        o_smem0, o_smem1 = o_smem.index(0), o_smem.index(1)
    kv_bar = gl.allocate_shared_memory(gl.int64, [NUM_KV, 1], mbarrier.MBarrierLayout())
    kv_empty = gl.allocate_shared_memory(gl.int64, [NUM_KV, 1], mbarrier.MBarrierLayout())
    # DYNAMIC: each K / V buffer's unit number, from producer to consumers (a stand-in otherwise)
    unit_smem = gl.allocate_shared_memory(gl.int32, [NUM_KV, 1], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    # DYNAMIC: units past the first num_programs are handed out by an int32 counter of zero in
    # dQ's buffer, just past its elements (the launcher allocates it so)
    counter = (DQ_BUF + counter_offset).to(gl.pointer_type(gl.int32), bitcast=True)
    q_full = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [NUM_BUF, 1], mbarrier.MBarrierLayout())
    ds_full = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    ds_free = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(ds_full, count=2)                 # one arrival per consumer warpgroup
    mbarrier.init(ds_free, count=2)
    for i in gl.static_range(NUM_KV):
        mbarrier.init(kv_bar.index(i), count=1)
        mbarrier.init(kv_empty.index(i), count=2)   # one arrival per consumer warpgroup
    for i in gl.static_range(NUM_BUF):
        mbarrier.init(q_full.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=2)

    # the consumers' common run-time arguments as one tuple (constexprs go one by one: a tuple
    # assigned to a name holds values)
    shared = (k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, dq_smem, ds_full, ds_free, kv_bar, kv_empty, q_full,
              q_empty, unit_smem, LSE, DELTA, DK, DV, dk_desc, dv_desc, dq_desc, lse_strides, dk_strides, dv_strides,
              u0, n_units, n_kb, num_heads, CU_Q, CU_K, seqlen_q, seqlen_k, head_dim, scales, window)
    gl.warp_specialize([
        (_bwd_consumer, (o_smem0, shared, VARLEN, MASK_LEFT, MASK_RIGHT, ONE_PASS, FROM_ZERO, 0, HOST_DESC,
                         PERSISTENT, DYNAMIC, GROUP, TMA_STORE)),
        (_bwd_consumer, (o_smem1, shared, VARLEN, MASK_LEFT, MASK_RIGHT, ONE_PASS, FROM_ZERO, 1, HOST_DESC,
                         PERSISTENT, DYNAMIC, GROUP, TMA_STORE)),
        (bwd_producer, (k_desc, v_desc, q_desc, do_desc, k_smem, v_smem, q_smem, do_smem, kv_bar, kv_empty, q_full,
                         q_empty, unit_smem, counter, u0, n_units, n_kb, num_heads, tail_heads, CU_Q, CU_K, seqlen_q,
                         seqlen_k, window, VARLEN, MASK_LEFT, MASK_RIGHT, HOST_DESC, PERSISTENT,
                         DYNAMIC, GROUP)),
    ], [4, 1], [240, 24])

    mbarrier.invalidate(ds_full)
    mbarrier.invalidate(ds_free)
    for i in gl.static_range(NUM_KV):
        mbarrier.invalidate(kv_bar.index(i))
        mbarrier.invalidate(kv_empty.index(i))
    for i in gl.static_range(NUM_BUF):
        mbarrier.invalidate(q_full.index(i))
        mbarrier.invalidate(q_empty.index(i))
