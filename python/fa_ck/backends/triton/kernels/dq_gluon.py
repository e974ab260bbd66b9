"""The dQ kernel of the Gluon backward for Hopper (sm90) (backward_gluon.py: the dK/dV kernel, and
which calls take this one).

dQ: one program owns 128 queries of one q head (two consumer warpgroups of 64; GQA too: K and
V come from the head's kv head), Q and dO loaded once, K and V streamed through the forward's
rings (gluon_common.stream_kv). Per key block j, software-pipelined across blocks:

    issue S_j = Q K_j^T, dP_j = dO V_j^T, then dQ += dS_{j-1} K_{j-1}   (all async)
    P_j = exp2(S_j * scale_log2 - lse) while dP_j and the dQ multiply run
    dS_j = P_j * (dP_j - delta)

delta comes from bwd_preprocess (minus dlse when lse has a gradient), as for backward.py.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from .gluon_common import (acc_layout, invalidate_rings, gl_key_blocks, ring_barriers, head_desc, gl_scores, gl_sequence,
                           store_out, stream_kv)


@gluon.jit
def _dq_producer(q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, q_bar, k_full, v_full,
                 k_empty, v_empty, m0, lo, n_blocks):
    """One warp: Q and dO once (one barrier), then the K and V rings as in the forward."""
    mbarrier.expect(q_bar, q_desc.block_type.nbytes + do_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [m0, 0], q_bar, q_smem)
    tma.async_copy_global_to_shared(do_desc, [m0, 0], q_bar, do_smem)
    stream_kv(k_desc, v_desc, k_smem, v_smem, k_full, v_full, k_empty, v_empty, lo, n_blocks)


@gluon.jit
def _dq_probs(st, lse2, n0, full_lo, full_hi, offs_m, offs_n0, seqlen_q, seqlen_k, scale_log2, window,
              MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr):
    """P of one key block from its raw scores, masked only where the block straddles an edge."""
    window_left, window_right = window
    offs_n = n0 + offs_n0
    if (n0 < full_lo) | (n0 >= full_hi):
        s, _ = gl_scores(st, offs_m[:, None], offs_n[None, :], seqlen_q, seqlen_k, scale_log2, 0.0, 0.0, 0.0,
                       window_left, window_right, False, False, MASK_LEFT, MASK_RIGHT, True)
    else:
        s, _ = gl_scores(st, offs_m[:, None], offs_n[None, :], seqlen_q, seqlen_k, scale_log2, 0.0, 0.0, 0.0,
                       window_left, window_right, False, False, MASK_LEFT, MASK_RIGHT, False)
    return gl.exp2(s - lse2[:, None])


@gluon.jit
def _dq_consumer(q_smem, do_smem, k_smem, v_smem, q_bar, k_full, v_full, k_empty, v_empty, lse_base, delta_base,
                 dq_base, dq_desc, stride_dqs, m0, lo, full_lo, full_hi, n_blocks, seqlen_q, seqlen_k, head_dim, scales,
                 window, MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr, TMA_STORE: gl.constexpr):
    """One warpgroup: queries [m0, m0 + 64) against the key blocks, then their dQ. TMA_STORE: dQ
    leaves through this warpgroup's rows of Q's tile, free once its multiplies are done, as a
    TMA store (dq_desc: a descriptor of (64, BLOCK_D) tiles of the head's dQ rows). scales:
    (scale, scale_log2); window: (left, right)."""
    scale, scale_log2 = scales
    ROWS: gl.constexpr = q_smem.shape[0]
    BLOCK_D: gl.constexpr = q_smem.shape[1]
    BLOCK_N: gl.constexpr = k_smem.shape[1]
    NUM_BUF: gl.constexpr = k_smem.shape[0]
    dtype: gl.constexpr = q_smem.dtype
    s_layout: gl.constexpr = acc_layout(BLOCK_N, dtype)
    d_layout: gl.constexpr = acc_layout(BLOCK_D, dtype)
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=d_layout, k_width=2)
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)

    offs_m = m0 + gl.arange(0, ROWS, layout=row_s)
    offs_n0 = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    s_zero = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    dq = gl.zeros([ROWS, BLOCK_D], gl.float32, d_layout)
    row_ok = offs_m < seqlen_q
    lse = gl.load(lse_base + offs_m, mask=row_ok, other=float("inf"))
    delta = gl.load(delta_base + offs_m, mask=row_ok, other=0.0)
    # lse in log2 units; a query that saw no key (-inf) must give P = 0, so +inf (as for dK/dV)
    lse2 = gl.where(lse == float("-inf"), float("inf"), lse * 1.4426950408889634)
    mbarrier.wait(q_bar, 0)

    if n_blocks > 0:
        # Block 0: S_0, dP_0 and dS_0; no dQ multiply to overlap yet.
        mbarrier.wait(k_full.index(0), 0)
        st = warpgroup_mma(q_smem, k_smem.index(0).permute((1, 0)), s_zero, use_acc=False, is_async=True)
        mbarrier.wait(v_full.index(0), 0)
        dp = warpgroup_mma(do_smem, v_smem.index(0).permute((1, 0)), s_zero, use_acc=False, is_async=True)
        st = warpgroup_mma_wait(1, deps=[st])
        p = _dq_probs(st, lse2, lo, full_lo, full_hi, offs_m, offs_n0, seqlen_q, seqlen_k, scale_log2, window,
                      MASK_LEFT, MASK_RIGHT)
        dp = warpgroup_mma_wait(0, deps=[dp])
        mbarrier.arrive(v_empty.index(0), count=1)
        ds = gl.convert_layout((p * (dp - delta[:, None])).to(dtype), a_layout)

        for j in range(1, n_blocks):
            buf = j % NUM_BUF
            prev = (j - 1) % NUM_BUF
            mbarrier.wait(k_full.index(buf), (j // NUM_BUF) & 1)
            st = warpgroup_mma(q_smem, k_smem.index(buf).permute((1, 0)), s_zero, use_acc=False, is_async=True)
            mbarrier.wait(v_full.index(buf), (j // NUM_BUF) & 1)
            dp = warpgroup_mma(do_smem, v_smem.index(buf).permute((1, 0)), s_zero, use_acc=False, is_async=True)
            dq = warpgroup_mma(ds, k_smem.index(prev), dq, is_async=True)
            st = warpgroup_mma_wait(2, deps=[st])            # S_j done; dP_j and dQ may still run
            p = _dq_probs(st, lse2, lo + j * BLOCK_N, full_lo, full_hi, offs_m, offs_n0, seqlen_q, seqlen_k,
                          scale_log2, window, MASK_LEFT, MASK_RIGHT)
            dp = warpgroup_mma_wait(1, deps=[dp])
            mbarrier.arrive(v_empty.index(buf), count=1)
            dq, ds = warpgroup_mma_wait(0, deps=[dq, ds])
            mbarrier.arrive(k_empty.index(prev), count=1)
            ds = gl.convert_layout((p * (dp - delta[:, None])).to(dtype), a_layout)

        last = (n_blocks - 1) % NUM_BUF
        dq = warpgroup_mma(ds, k_smem.index(last), dq, is_async=True)
        dq, ds = warpgroup_mma_wait(0, deps=[dq, ds])
        mbarrier.arrive(k_empty.index(last), count=1)

    if TMA_STORE:       # (rows past seqlen_q and columns past head_dim are not written)
        store_out(dq_desc, q_smem, (dq * scale).to(dtype), 0, 0, m0, 0, False)
        tma.store_wait(0)                   # the tile read before the program ends
    else:
        # int64 base at this warpgroup's first row, 32-bit offsets within the tile
        rows = gl.arange(0, ROWS, layout=gl.SliceLayout(1, d_layout))
        cols = gl.arange(0, BLOCK_D, layout=gl.SliceLayout(0, d_layout))
        ok = (m0 + rows[:, None] < seqlen_q) & (cols[None, :] < head_dim)
        dq_rows = dq_base + m0.to(gl.int64) * stride_dqs
        gl.store(dq_rows + rows[:, None] * stride_dqs + cols[None, :], (dq * scale).to(dtype), mask=ok)


@gluon.jit
def bwd_dq_gluon_kernel(Q, K, V, DO, LSE, DELTA, DQ, CU_Q, CU_K, q_strides, k_strides, v_strides, do_strides,
                        dq_strides, lse_strides, seqlen_q, seqlen_k, group, head_dim, scales, window,
                        BLOCK_N: gl.constexpr, BLOCK_D: gl.constexpr, NUM_BUF: gl.constexpr, VARLEN: gl.constexpr,
                        MASK_LEFT: gl.constexpr, MASK_RIGHT: gl.constexpr,
                        SMEM_Q: gl.constexpr, SMEM_KV: gl.constexpr, TMA_STORE: gl.constexpr,
                        num_warps: gl.constexpr):
    """num_warps = 4: the first consumer warpgroup; the second and the producer warp are workers.
    TMA_STORE: dQ by TMA stores (see _dq_consumer), its descriptor made here. *_strides: (batch,
    seq, head) strides (varlen: batch 0), lse_strides (batch, head) (DELTA's too); scales: (scale,
    scale_log2); window: (left, right)."""
    stride_qb, stride_qs, stride_qh = q_strides
    stride_kb, stride_ks, stride_kh = k_strides
    stride_vb, stride_vs, stride_vh = v_strides
    stride_dob, stride_dos, stride_doh = do_strides
    stride_dqb, stride_dqs, stride_dqh = dq_strides
    stride_lb, stride_lh = lse_strides
    window_left, window_right = window
    BLOCK_M: gl.constexpr = 128
    HALF: gl.constexpr = 64
    # Last query blocks first: under a causal mask they carry the most keys.
    pid_m = gl.num_programs(0) - 1 - gl.program_id(0)
    h = gl.program_id(1)
    b = gl.program_id(2)
    m0 = pid_m * BLOCK_M
    q_start, k_start, seqlen_q, seqlen_k = gl_sequence(CU_Q, CU_K, b, seqlen_q, seqlen_k, VARLEN)
    if m0 >= seqlen_q:
        return
    b64 = b.to(gl.int64)
    hk = (h // group).to(gl.int64)
    h64 = h.to(gl.int64)
    q_desc = head_desc(Q + b64 * stride_qb + h64 * stride_qh, q_start, stride_qs, seqlen_q, head_dim, BLOCK_M, BLOCK_D,
                   SMEM_Q)
    do_desc = head_desc(DO + b64 * stride_dob + h64 * stride_doh, q_start, stride_dos, seqlen_q, head_dim, BLOCK_M,
                    BLOCK_D, SMEM_Q)
    k_desc = head_desc(K + b64 * stride_kb + hk * stride_kh, k_start, stride_ks, seqlen_k, head_dim, BLOCK_N, BLOCK_D,
                   SMEM_KV)
    v_desc = head_desc(V + b64 * stride_vb + hk * stride_vh, k_start, stride_vs, seqlen_k, head_dim, BLOCK_N, BLOCK_D,
                   SMEM_KV)
    lse_base = LSE + b64 * stride_lb + h64 * stride_lh + q_start
    delta_base = DELTA + b64 * stride_lb + h64 * stride_lh + q_start
    dq_base = DQ + b64 * stride_dqb + h64 * stride_dqh + q_start * stride_dqs
    dq_desc = q_desc                        # (a stand-in without TMA_STORE)
    if TMA_STORE:
        dq_desc = head_desc(DQ + b64 * stride_dqb + h64 * stride_dqh, q_start, stride_dqs, seqlen_q, head_dim, HALF,
                        BLOCK_D, SMEM_Q)

    lo, full_lo, full_hi, hi = gl_key_blocks(m0, seqlen_q, seqlen_k, window_left, window_right, BLOCK_M, BLOCK_N,
                                           MASK_LEFT, MASK_RIGHT)
    n_blocks = gl.cdiv(gl.maximum(hi - lo, 0), BLOCK_N)

    dtype: gl.constexpr = Q.dtype.element_ty
    q_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, BLOCK_D], SMEM_Q)
    do_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, BLOCK_D], SMEM_Q)
    k_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_N, BLOCK_D], SMEM_KV)
    v_smem = gl.allocate_shared_memory(dtype, [NUM_BUF, BLOCK_N, BLOCK_D], SMEM_KV)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_full, v_full, k_empty, v_empty = ring_barriers(NUM_BUF)
    mbarrier.init(q_bar, count=1)

    gl.warp_specialize([
        (_dq_consumer, (q_smem.slice(0, HALF), do_smem.slice(0, HALF), k_smem, v_smem, q_bar, k_full, v_full,
                        k_empty, v_empty, lse_base, delta_base, dq_base, dq_desc, stride_dqs, m0, lo, full_lo,
                        full_hi, n_blocks, seqlen_q, seqlen_k, head_dim, scales, window, MASK_LEFT,
                        MASK_RIGHT, TMA_STORE)),
        (_dq_consumer, (q_smem.slice(HALF, HALF), do_smem.slice(HALF, HALF), k_smem, v_smem, q_bar, k_full, v_full,
                        k_empty, v_empty, lse_base, delta_base, dq_base, dq_desc, stride_dqs, m0 + HALF, lo, full_lo,
                        full_hi, n_blocks, seqlen_q, seqlen_k, head_dim, scales, window, MASK_LEFT,
                        MASK_RIGHT, TMA_STORE)),
        (_dq_producer, (q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, q_bar, k_full, v_full,
                        k_empty, v_empty, m0, lo, n_blocks)),
    ], [4, 1], [240, 24])

    mbarrier.invalidate(q_bar)
    invalidate_rings(k_full, v_full, k_empty, v_empty)
