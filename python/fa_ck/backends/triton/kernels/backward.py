"""FlashAttention-2 backward:

    delta = rowsum(dO * O), lse / scale                     (bwd_preprocess)
    dK, dV for one key block, summed over its GQA group     (bwd_dkdv_kernel, transposed tiles)
    dQ for one query block                                  (bwd_dq_kernel)

Deterministic (no atomics), at the cost of computing QK^T and dO V^T twice; the Hopper dK/dV kernel
(backward_gluon.py) adds dQ itself, and dq_from_acc scales its fp32 sum into dq.

P is recomputed from the saved lse; the dropout mask is regenerated from the same seed.
With dropout the forward used P~ = P * Z / (1 - p):  dV = P~^T dO,  dP~ = dO V^T,
dS = P * (dP~ * Z / (1 - p) - delta).  Softcap multiplies dS by 1 - tanh^2.
"""
import triton
import triton.language as tl

from .common import (dropout_keep, head_constants, head_ptr, key_blocks, load_tile, query_block, query_blocks,
                     scores, sequence, wide)


@triton.jit
def bwd_preprocess(O, DO, DELTA, LSE, LSE_S, DQ_ACC, o_strides, do_strides, lse_strides, acc_strides, n_acc,
                   seqlen_q, head_dim, scale, CU_Q,
                   BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, VARLEN: tl.constexpr, ZERO_DQ: tl.constexpr):
    """delta = rowsum(O * dO), and LSE_S = lse / scale (+inf where lse is -inf: a query that saw no
    key) for the Gluon dK/dV kernel: once per row here, not once per key block there. DELTA, LSE and
    LSE_S share strides. ZERO_DQ (the one pass, not varlen): also zero the rows of DQ_ACC (its fp32
    dQ, q's shape) this program covers, and the 4 elements past its n_acc (the dK/dV kernel's unit
    counter): one launch and one pass over memory less than a fill. Strides as in forward.py."""
    stride_ob, stride_os, stride_oh = o_strides
    stride_dob, stride_dos, stride_doh = do_strides
    stride_lb, stride_lh = lse_strides
    stride_ab, stride_as, stride_ah = acc_strides
    pid_m = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2)
    q_start, _, seqlen_q, _ = sequence(CU_Q, CU_Q, b, seqlen_q, seqlen_q, VARLEN)
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    rows = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    ok = (offs_m[:, None] < seqlen_q) & (offs_d[None, :] < head_dim)
    b = b.to(tl.int64)
    o = tl.load(head_ptr(O, b, h, stride_ob, stride_oh) + (q_start + m0) * stride_os + rows[:, None] * stride_os
                + offs_d[None, :], mask=ok, other=0.0).to(tl.float32)
    do = tl.load(head_ptr(DO, b, h, stride_dob, stride_doh) + (q_start + m0) * stride_dos + rows[:, None] * stride_dos
                 + offs_d[None, :], mask=ok, other=0.0).to(tl.float32)
    row_ok = offs_m < seqlen_q
    tl.store(head_ptr(DELTA, b, h, stride_lb, stride_lh) + q_start + offs_m, tl.sum(o * do, 1), mask=row_ok)
    lse = tl.load(head_ptr(LSE, b, h, stride_lb, stride_lh) + q_start + offs_m, mask=row_ok, other=0.0)
    tl.store(head_ptr(LSE_S, b, h, stride_lb, stride_lh) + q_start + offs_m,
             tl.where(lse == float("-inf"), float("inf"), lse / scale), mask=row_ok)
    if ZERO_DQ:
        tl.store(head_ptr(DQ_ACC, b, h, stride_ab, stride_ah) + wide(offs_m)[:, None] * stride_as + offs_d[None, :],
                 tl.zeros([BLOCK_M, BLOCK_D], tl.float32), mask=ok)
        if (pid_m == 0) & (h == 0) & (b == 0):
            tail = tl.arange(0, 4)
            tl.store(DQ_ACC + n_acc + tail, tl.zeros([4], tl.float32))


@triton.jit
def dq_from_acc(DQ_ACC, DQ, n, scale, BLOCK: tl.constexpr):
    """dq = DQ_ACC * scale in dq's dtype, both contiguous, taken flat: the one pass's fp32 sum of dS K
    (/ scale) into the gradient (torch.mul(..., out=dq) with the dtype change runs unvectorised)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    tl.store(DQ + offs, (tl.load(DQ_ACC + offs, mask=ok) * scale).to(DQ.dtype.element_ty), mask=ok)


@triton.jit
def _dkdv_blocks(dk, dv, k, v, q_ptrs, do_ptrs, q_offs, do_offs, lse_ptrs, delta_ptrs, start, end, offs_m0, offs_n,
                 d_ok, stride_qs, stride_dos, seqlen_q, seqlen_k, scale_log2, softcap_in, softcap_out, slope_log2,
                 window_left, window_right, seed, rng_row, dropout_p, BLOCK_M: tl.constexpr, EVEN_D: tl.constexpr,
                 SOFTCAP: tl.constexpr, ALIBI: tl.constexpr, MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr,
                 DROPOUT: tl.constexpr, DOT_F32: tl.constexpr, MASKED: tl.constexpr):
    q_ptrs += wide(start) * stride_qs
    do_ptrs += wide(start) * stride_dos
    for m0 in range(start, end, BLOCK_M):
        offs_m = m0 + offs_m0
        row_ok = offs_m < seqlen_q
        q = load_tile(q_ptrs, q_offs, row_ok[:, None], d_ok[None, :], MASKED, EVEN_D)
        do = load_tile(do_ptrs, do_offs, row_ok[:, None], d_ok[None, :], MASKED, EVEN_D)
        if MASKED:
            lse2 = tl.load(lse_ptrs + offs_m, mask=row_ok, other=float("inf"))
            delta = tl.load(delta_ptrs + offs_m, mask=row_ok, other=0.0)
        else:
            lse2 = tl.load(lse_ptrs + offs_m)
            delta = tl.load(delta_ptrs + offs_m)
        if DOT_F32:
            q = q.to(tl.float32)
            do = do.to(tl.float32)
        # lse2: lse in log2 units; a row that saw nothing (-inf) must give P = 0, so use +inf.
        lse2 = tl.where(lse2 == float("-inf"), float("inf"), lse2 * 1.4426950408889634)
        qkt = tl.dot(k, tl.trans(q))                                   # (BLOCK_N, BLOCK_M)
        s, t = scores(qkt, offs_m[None, :], offs_n[:, None], seqlen_q, seqlen_k, scale_log2,
                      softcap_in, softcap_out, slope_log2, window_left, window_right,
                      SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, MASKED)
        pt = tl.math.exp2(s - lse2[None, :])
        dpt = tl.dot(v, tl.trans(do))
        if DROPOUT:
            keep = dropout_keep(seed, offs_m[None, :], offs_n[:, None], rng_row, dropout_p)
            inv_keep = 1.0 / (1.0 - dropout_p)
            pt_drop = tl.where(keep, pt * inv_keep, 0.0)
            dpt = tl.where(keep, dpt * inv_keep, 0.0)
        else:
            pt_drop = pt
        dst = pt * (dpt - delta[None, :])
        if SOFTCAP:
            dst = dst * (1.0 - t * t)
        if not DOT_F32:
            pt_drop = pt_drop.to(do.dtype)
            dst = dst.to(q.dtype)
        dv += tl.dot(pt_drop, do)
        dk += tl.dot(dst, q)
        q_ptrs += BLOCK_M * stride_qs
        do_ptrs += BLOCK_M * stride_dos
    return dk, dv


@triton.jit
def bwd_dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, SLOPES, RNG, CU_Q, CU_K,
                    q_strides, k_strides, v_strides, do_strides, dk_strides, dv_strides, lse_strides, stride_sb,
                    seqlen_q, seqlen_k, group, head_dim, scale, softmax, window, dropout_p, rng_row,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                    EVEN_D: tl.constexpr, VARLEN: tl.constexpr, SOFTCAP: tl.constexpr, ALIBI: tl.constexpr,
                    MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr, DROPOUT: tl.constexpr,
                    DOT_F32: tl.constexpr):
    """Strides and scalars as in forward.py; one program per (key block, kv head, batch)."""
    stride_qb, stride_qs, stride_qh = q_strides
    stride_kb, stride_ks, stride_kh = k_strides
    stride_vb, stride_vs, stride_vh = v_strides
    stride_dob, stride_dos, stride_doh = do_strides
    stride_dkb, stride_dks, stride_dkh = dk_strides
    stride_dvb, stride_dvs, stride_dvh = dv_strides
    stride_lb, stride_lh = lse_strides
    scale_log2, softcap_in, softcap_out = softmax
    window_left, window_right = window
    pid_n = tl.program_id(0)
    hk = tl.program_id(1)
    b = tl.program_id(2)
    num_heads = tl.num_programs(1) * group
    q_start, k_start, seqlen_q, seqlen_k = sequence(CU_Q, CU_K, b, seqlen_q, seqlen_k, VARLEN)
    n0 = pid_n * BLOCK_N
    if n0 >= seqlen_k:
        return
    b64 = b.to(tl.int64)
    offs_n = n0 + tl.arange(0, BLOCK_N)
    offs_m0 = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    kv_ok = (offs_n[:, None] < seqlen_k) & d_ok[None, :]
    cols = tl.arange(0, BLOCK_N)
    k_off = (b64 * stride_kb + hk.to(tl.int64) * stride_kh + (k_start + n0) * stride_ks
             + cols[:, None] * stride_ks + offs_d[None, :])
    v_off = (b64 * stride_vb + hk.to(tl.int64) * stride_vh + (k_start + n0) * stride_vs
             + cols[:, None] * stride_vs + offs_d[None, :])
    k = tl.load(K + k_off, mask=kv_ok, other=0.0)
    v = tl.load(V + v_off, mask=kv_ok, other=0.0)
    if DOT_F32:
        k = k.to(tl.float32)
        v = v.to(tl.float32)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    q_offs = offs_m0[:, None] * stride_qs + offs_d[None, :]      # 32-bit tile offsets (see forward.py)
    do_offs = offs_m0[:, None] * stride_dos + offs_d[None, :]
    lo, full_lo, full_hi, hi = query_blocks(n0, seqlen_q, seqlen_k, window_left, window_right,
                                            BLOCK_M, BLOCK_N, MASK_LEFT, MASK_RIGHT)
    for g in range(0, group):                 # every q head that reads this kv head
        h = hk * group + g
        h64 = h.to(tl.int64)
        q_ptrs = head_ptr(Q, b64, h64, stride_qb, stride_qh) + q_start * stride_qs
        do_ptrs = head_ptr(DO, b64, h64, stride_dob, stride_doh) + q_start * stride_dos
        lse_ptrs = head_ptr(LSE, b64, h64, stride_lb, stride_lh) + q_start
        delta_ptrs = head_ptr(DELTA, b64, h64, stride_lb, stride_lh) + q_start
        slope_log2, seed = head_constants(SLOPES, RNG, b, h, num_heads, stride_sb, ALIBI, DROPOUT)
        dk, dv = _dkdv_blocks(dk, dv, k, v, q_ptrs, do_ptrs, q_offs, do_offs, lse_ptrs, delta_ptrs, lo, full_lo,
                              offs_m0, offs_n, d_ok, stride_qs, stride_dos, seqlen_q, seqlen_k, scale_log2, softcap_in,
                              softcap_out, slope_log2, window_left, window_right, seed, rng_row, dropout_p, BLOCK_M, EVEN_D,
                              SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, DROPOUT, DOT_F32, True)
        dk, dv = _dkdv_blocks(dk, dv, k, v, q_ptrs, do_ptrs, q_offs, do_offs, lse_ptrs, delta_ptrs, full_lo, full_hi,
                              offs_m0, offs_n, d_ok, stride_qs, stride_dos, seqlen_q, seqlen_k, scale_log2, softcap_in,
                              softcap_out, slope_log2, window_left, window_right, seed, rng_row, dropout_p, BLOCK_M, EVEN_D,
                              SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, DROPOUT, DOT_F32, False)
        dk, dv = _dkdv_blocks(dk, dv, k, v, q_ptrs, do_ptrs, q_offs, do_offs, lse_ptrs, delta_ptrs, full_hi, hi,
                              offs_m0, offs_n, d_ok, stride_qs, stride_dos, seqlen_q, seqlen_k, scale_log2, softcap_in,
                              softcap_out, slope_log2, window_left, window_right, seed, rng_row, dropout_p, BLOCK_M, EVEN_D,
                              SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, DROPOUT, DOT_F32, True)
    dk_off = (b64 * stride_dkb + hk.to(tl.int64) * stride_dkh + (k_start + n0) * stride_dks
              + cols[:, None] * stride_dks + offs_d[None, :])
    dv_off = (b64 * stride_dvb + hk.to(tl.int64) * stride_dvh + (k_start + n0) * stride_dvs
              + cols[:, None] * stride_dvs + offs_d[None, :])
    tl.store(DK + dk_off, (dk * scale).to(DK.dtype.element_ty), mask=kv_ok)
    tl.store(DV + dv_off, dv.to(DV.dtype.element_ty), mask=kv_ok)


@triton.jit
def _dq_blocks(dq, q, do, lse2, delta, k_ptrs, v_ptrs, k_offs, v_offs, start, end, offs_m, offs_n0,
               d_ok, stride_ks, stride_vs, seqlen_q, seqlen_k, scale_log2, softcap_in, softcap_out,
               slope_log2, window_left, window_right, seed, rng_row, dropout_p,
               BLOCK_N: tl.constexpr, EVEN_D: tl.constexpr, SOFTCAP: tl.constexpr, ALIBI: tl.constexpr,
               MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr, DROPOUT: tl.constexpr,
               DOT_F32: tl.constexpr, MASKED: tl.constexpr):
    k_ptrs += wide(start) * stride_ks
    v_ptrs += wide(start) * stride_vs
    for n0 in range(start, end, BLOCK_N):
        offs_n = n0 + offs_n0
        kt = load_tile(k_ptrs, k_offs, offs_n[None, :] < seqlen_k, d_ok[:, None], MASKED, EVEN_D)
        vt = load_tile(v_ptrs, v_offs, offs_n[None, :] < seqlen_k, d_ok[:, None], MASKED, EVEN_D)
        if DOT_F32:
            kt = kt.to(tl.float32)
            vt = vt.to(tl.float32)
        qk = tl.dot(q, kt)
        s, t = scores(qk, offs_m[:, None], offs_n[None, :], seqlen_q, seqlen_k, scale_log2,
                      softcap_in, softcap_out, slope_log2, window_left, window_right,
                      SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, MASKED)
        p = tl.math.exp2(s - lse2[:, None])
        dp = tl.dot(do, vt)
        if DROPOUT:
            keep = dropout_keep(seed, offs_m[:, None], offs_n[None, :], rng_row, dropout_p)
            dp = tl.where(keep, dp / (1.0 - dropout_p), 0.0)
        ds = p * (dp - delta[:, None])
        if SOFTCAP:
            ds = ds * (1.0 - t * t)
        if DOT_F32:
            dq += tl.dot(ds, tl.trans(kt))
        else:
            dq += tl.dot(ds.to(kt.dtype), tl.trans(kt))
        k_ptrs += BLOCK_N * stride_ks
        v_ptrs += BLOCK_N * stride_vs
    return dq


# Sequence lengths stay runtime values: Triton specialises integers equal to 1, and ptxas (Triton
# 3.6 and 3.7.1) crashes on this kernel compiled for sm90 with seqlen_k == 1 (d16, causal, GQA;
# tools/sm90_offline_compile.py reproduces it).
@triton.jit(do_not_specialize=["seqlen_q", "seqlen_k", "rng_row"])
def bwd_dq_kernel(Q, K, V, DO, LSE, DELTA, DQ, SLOPES, RNG, CU_Q, CU_K,
                  q_strides, k_strides, v_strides, do_strides, dq_strides, lse_strides, stride_sb,
                  seqlen_q, seqlen_k, group, head_dim, scale, softmax, window, dropout_p, rng_row,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                  EVEN_D: tl.constexpr, VARLEN: tl.constexpr, SOFTCAP: tl.constexpr, ALIBI: tl.constexpr,
                  MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr, DROPOUT: tl.constexpr,
                  DOT_F32: tl.constexpr):
    """Strides and scalars as in forward.py; one program per (query block, head, batch)."""
    stride_qb, stride_qs, stride_qh = q_strides
    stride_kb, stride_ks, stride_kh = k_strides
    stride_vb, stride_vs, stride_vh = v_strides
    stride_dob, stride_dos, stride_doh = do_strides
    stride_dqb, stride_dqs, stride_dqh = dq_strides
    stride_lb, stride_lh = lse_strides
    scale_log2, softcap_in, softcap_out = softmax
    window_left, window_right = window
    m0, h, b, num_heads, q_start, k_start, seqlen_q, seqlen_k = query_block(CU_Q, CU_K, seqlen_q, seqlen_k,
                                                                            BLOCK_M, VARLEN)
    if m0 >= seqlen_q:
        return
    hk = h // group
    b64 = b.to(tl.int64)
    h64 = h.to(tl.int64)
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    row_ok = offs_m < seqlen_q
    q_ok = row_ok[:, None] & d_ok[None, :]
    rows = tl.arange(0, BLOCK_M)
    q = tl.load(head_ptr(Q, b64, h64, stride_qb, stride_qh) + (q_start + m0) * stride_qs
                + rows[:, None] * stride_qs + offs_d[None, :], mask=q_ok, other=0.0)
    do = tl.load(head_ptr(DO, b64, h64, stride_dob, stride_doh) + (q_start + m0) * stride_dos
                 + rows[:, None] * stride_dos + offs_d[None, :], mask=q_ok, other=0.0)
    if DOT_F32:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    l_off = b64 * stride_lb + h64 * stride_lh + q_start + offs_m
    lse2 = tl.load(LSE + l_off, mask=row_ok, other=float("inf"))
    lse2 = tl.where(lse2 == float("-inf"), float("inf"), lse2 * 1.4426950408889634)
    delta = tl.load(DELTA + l_off, mask=row_ok, other=0.0)
    k_ptrs = head_ptr(K, b64, hk, stride_kb, stride_kh) + k_start * stride_ks
    v_ptrs = head_ptr(V, b64, hk, stride_vb, stride_vh) + k_start * stride_vs
    k_offs = offs_n0[None, :] * stride_ks + offs_d[:, None]       # 32-bit tile offsets (see forward.py)
    v_offs = offs_n0[None, :] * stride_vs + offs_d[:, None]
    slope_log2, seed = head_constants(SLOPES, RNG, b, h, num_heads, stride_sb, ALIBI, DROPOUT)
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    lo, full_lo, full_hi, hi = key_blocks(m0, seqlen_q, seqlen_k, window_left, window_right,
                                          BLOCK_M, BLOCK_N, MASK_LEFT, MASK_RIGHT)
    dq = _dq_blocks(dq, q, do, lse2, delta, k_ptrs, v_ptrs, k_offs, v_offs,
                    lo, full_lo, offs_m, offs_n0, d_ok,
                    stride_ks, stride_vs, seqlen_q, seqlen_k, scale_log2, softcap_in, softcap_out,
                    slope_log2, window_left, window_right, seed, rng_row, dropout_p,
                    BLOCK_N, EVEN_D, SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, DROPOUT, DOT_F32, True)
    dq = _dq_blocks(dq, q, do, lse2, delta, k_ptrs, v_ptrs, k_offs, v_offs,
                    full_lo, full_hi, offs_m, offs_n0, d_ok,
                    stride_ks, stride_vs, seqlen_q, seqlen_k, scale_log2, softcap_in, softcap_out,
                    slope_log2, window_left, window_right, seed, rng_row, dropout_p,
                    BLOCK_N, EVEN_D, SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, DROPOUT, DOT_F32, False)
    dq = _dq_blocks(dq, q, do, lse2, delta, k_ptrs, v_ptrs, k_offs, v_offs,
                    full_hi, hi, offs_m, offs_n0, d_ok,
                    stride_ks, stride_vs, seqlen_q, seqlen_k, scale_log2, softcap_in, softcap_out,
                    slope_log2, window_left, window_right, seed, rng_row, dropout_p,
                    BLOCK_N, EVEN_D, SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, DROPOUT, DOT_F32, True)
    tl.store(head_ptr(DQ, b64, h64, stride_dqb, stride_dqh) + (q_start + m0) * stride_dqs
             + rows[:, None] * stride_dqs + offs_d[None, :], (dq * scale).to(DQ.dtype.element_ty), mask=q_ok)
