"""Split-KV flash-decoding: a few queries against a long KV cache, dense or paged.

decode_split_kernel runs one program per (kv head of a batch row, tile of packed rows, key split).
GQA packing: the `group` q heads that read one kv head, times the Sq queries, are the rows of one
tile (row r is query r // group of q head hk * group + r % group), so each K / V block is loaded
once for all of them. The keys batch row b sees are [leftpad[b], seqlens_k[b]), device values, so
each program works out its range here: the key blocks any row of its tile may see, in equal shares
per split. A split left without keys writes out 0 and lse -inf, which the combine weighs as nothing.

With one split the kernel writes out (q's dtype) and lse itself. With more, each split writes its
normalised partial out (fp32) and lse to a workspace, and decode_combine_kernel reduces the splits
of each row: out = sum_s exp(lse_s - lse) * out_s, lse = log(sum_s exp(lse_s)).

Key j of batch row b lies, in a dense cache, at cache row batch_idx[b] (or b), position j; in a
paged one at page block_table[b, j // PAGE], position j % PAGE. With PAGE >= BLOCK_N a block
(aligned to BLOCK_N) lies in one page: one table entry per block. Smaller pages are gathered key by key.
Scores are in log2 units (common.scores). Masks and ALiBi are bottom-right aligned on the visible
keys: query i sits at key position seqlens_k[b] - Sq + i, counted from the cache row's start.
"""
import triton
import triton.language as tl

from .common import scores, softmax_step, wide


@triton.jit
def _block_offsets(TABLE_ROW, stride_tn, n0, offs_n, key_ok, stride_kp, stride_ks, stride_vp, stride_vs,
                   PAGE: tl.constexpr, BLOCK_N: tl.constexpr):
    """Where keys n0 + offs_n lie in K's and V's head: (K's block offset, K's per-key offsets, V's
    block offset, V's per-key offsets). The block offsets are int64 scalars; the per-key ones stay
    32-bit where the block is contiguous rows (dense, or whole pages), else they hold each key's page."""
    if PAGE == 0:
        k_block = wide(n0) * stride_ks
        v_block = wide(n0) * stride_vs
        k_keys = offs_n * stride_ks
        v_keys = offs_n * stride_vs
    elif PAGE >= BLOCK_N:
        page = wide(tl.load(TABLE_ROW + n0 // PAGE * stride_tn))
        within = n0 % PAGE
        k_block = page * stride_kp + within * stride_ks
        v_block = page * stride_vp + within * stride_vs
        k_keys = offs_n * stride_ks
        v_keys = offs_n * stride_vs
    else:
        j = n0 + offs_n
        pages = wide(tl.load(TABLE_ROW + j // PAGE * stride_tn, mask=key_ok, other=0))
        k_block = wide(0)
        v_block = wide(0)
        k_keys = pages * stride_kp + (j % PAGE) * stride_ks
        v_keys = pages * stride_vp + (j % PAGE) * stride_vs
    return k_block, k_keys, v_block, v_keys


@triton.jit
def _split_range(lo, hi, tile, split, num_splits, seqlen_q, group, window_left, window_right,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr):
    """Keys [start, end) of this split: its share of the BLOCK_N-aligned blocks holding the keys in
    [lo, hi) that some row of the tile may see (its first and last query bound the window)."""
    first_q = tile * BLOCK_M // group
    last_q = (tl.minimum(tile * BLOCK_M + BLOCK_M, seqlen_q * group) - 1) // group
    k_lo = lo
    k_hi = hi
    if MASK_LEFT:
        k_lo = tl.maximum(lo, hi - seqlen_q + first_q - window_left)
    if MASK_RIGHT:
        k_hi = tl.minimum(hi, hi - seqlen_q + last_q + window_right + 1)
    first = k_lo // BLOCK_N * BLOCK_N
    blocks = tl.cdiv(tl.maximum(k_hi - first, 0), BLOCK_N)
    per_split = tl.cdiv(blocks, num_splits)
    start = first + split * per_split * BLOCK_N
    end = tl.minimum(start + per_split * BLOCK_N, k_hi)
    return start, end


@triton.jit
def decode_split_kernel(Q, K, V, OUT, LSE, SEQLENS, LEFTPAD, BATCH_IDX, TABLE, SLOPES,
                        q_strides, k_strides, v_strides, out_strides, lse_strides, table_strides, slope_strides,
                        sizes, softmax, window,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, EVEN_D: tl.constexpr,
                        PAGE: tl.constexpr, HAS_LEFTPAD: tl.constexpr, HAS_BATCH_IDX: tl.constexpr,
                        SOFTCAP: tl.constexpr, ALIBI: tl.constexpr, MASK_LEFT: tl.constexpr,
                        MASK_RIGHT: tl.constexpr, DOT_F32: tl.constexpr):
    """Strides: q's (batch, seq, head); k's and v's (cache row, seq, head), paged (page, seq in page,
    head); OUT's (batch, query, head, split) and LSE's (batch, head, query, split), whose split stride
    is 0 when they are the final out and lse; the block table's (row, entry), the ALiBi slopes' (batch, head).
    sizes: (seqlen_q, heads_kv, group, head_dim); softmax: (scale_log2, softcap_in, softcap_out);
    window: (left, right). PAGE: 0 for a dense cache."""
    stride_qb, stride_qs, stride_qh = q_strides
    stride_kb, stride_ks, stride_kh = k_strides
    stride_vb, stride_vs, stride_vh = v_strides
    stride_ob, stride_os, stride_oh, stride_osplit = out_strides
    stride_lb, stride_lh, stride_ls, stride_lsplit = lse_strides
    stride_tb, stride_tn = table_strides
    stride_sb, stride_sh = slope_strides
    seqlen_q, heads_kv, group, head_dim = sizes
    scale_log2, softcap_in, softcap_out = softmax
    window_left, window_right = window
    b = tl.program_id(0) // heads_kv
    hk = tl.program_id(0) % heads_kv
    tile = tl.program_id(1)
    split = tl.program_id(2)

    # the tile's packed rows: query qi of q head h
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < seqlen_q * group
    qi = rows // group
    h = hk * group + rows % group
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim

    # the row's visible keys [lo, hi), and this split's share of them
    hi = tl.load(SEQLENS + b)
    lo = 0
    if HAS_LEFTPAD:
        lo = tl.load(LEFTPAD + b)
    start, end = _split_range(lo, hi, tile, split, tl.num_programs(2), seqlen_q, group, window_left, window_right,
                              BLOCK_M, BLOCK_N, MASK_LEFT, MASK_RIGHT)

    q_ptrs = Q + wide(b) * stride_qb + qi[:, None] * stride_qs + h[:, None] * stride_qh + offs_d[None, :]
    q = tl.load(q_ptrs, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    if DOT_F32:
        q = q.to(tl.float32)
    slope_log2 = tl.zeros([BLOCK_M], tl.float32)
    if ALIBI:
        slope_log2 = tl.load(SLOPES + b * stride_sb + h * stride_sh, mask=row_ok, other=0.0) * 1.4426950408889634

    if PAGE == 0:
        cache_row = b
        if HAS_BATCH_IDX:
            cache_row = tl.load(BATCH_IDX + b)
        k_head = K + wide(cache_row) * stride_kb + hk * stride_kh
        v_head = V + wide(cache_row) * stride_vb + hk * stride_vh
    else:
        k_head = K + wide(hk) * stride_kh
        v_head = V + wide(hk) * stride_vh
    table_row = TABLE + wide(b) * stride_tb

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for n0 in range(start, end, BLOCK_N):
        j = n0 + offs_n
        key_ok = (j >= lo) & (j < end)
        k_block, k_keys, v_block, v_keys = _block_offsets(table_row, stride_tn, n0, offs_n, key_ok, stride_kb,
                                                          stride_ks, stride_vb, stride_vs, PAGE, BLOCK_N)
        k_mask = key_ok[None, :]
        v_mask = key_ok[:, None]
        if not EVEN_D:
            k_mask = k_mask & d_ok[:, None]
            v_mask = v_mask & d_ok[None, :]
        kt = tl.load(k_head + k_block + k_keys[None, :] + offs_d[:, None], mask=k_mask, other=0.0)
        v = tl.load(v_head + v_block + v_keys[:, None] + offs_d[None, :], mask=v_mask, other=0.0)
        if DOT_F32:
            kt = kt.to(tl.float32)
            v = v.to(tl.float32)
        s, _ = scores(tl.dot(q, kt), qi[:, None], j[None, :], seqlen_q, hi, scale_log2, softcap_in, softcap_out,
                      slope_log2[:, None], window_left, window_right, SOFTCAP, ALIBI, MASK_LEFT, MASK_RIGHT, True)
        s = tl.where(key_ok[None, :], s, float("-inf"))
        p, alpha, m_i = softmax_step(s, m_i, scale_log2, False, True)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)

    empty = l_i == 0.0                       # the row saw no key here: out 0, lse -inf
    out = acc * tl.where(empty, 0.0, 1.0 / tl.where(empty, 1.0, l_i))[:, None]
    lse = tl.where(empty, float("-inf"), (m_i + tl.math.log2(tl.where(empty, 1.0, l_i))) * 0.6931471805599453)
    o_ptrs = (OUT + wide(b) * stride_ob + wide(split) * stride_osplit + qi[:, None] * stride_os
              + h[:, None] * stride_oh + offs_d[None, :])
    tl.store(o_ptrs, out.to(OUT.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])
    lse_ptrs = LSE + wide(b) * stride_lb + wide(split) * stride_lsplit + h * stride_lh + qi * stride_ls
    tl.store(lse_ptrs, lse, mask=row_ok)


@triton.jit
def decode_combine_kernel(PART_O, PART_LSE, OUT, LSE, part_o_strides, part_lse_strides, out_strides, lse_strides,
                          num_splits, head_dim, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, EVEN_D: tl.constexpr):
    """One program per (query, q head, batch row): its splits' partial outs weighed by exp(lse_s - lse).
    Strides: the partials' (batch, head, query, split); out's (batch, query, head); lse's (batch, head, query)."""
    stride_pb, stride_ph, stride_pq, stride_ps = part_o_strides
    stride_plb, stride_plh, stride_plq, stride_pls = part_lse_strides
    stride_ob, stride_oq, stride_oh = out_strides
    stride_lb, stride_lh, stride_lq = lse_strides
    i = tl.program_id(0)
    h = tl.program_id(1)
    b = wide(tl.program_id(2))
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < head_dim
    part_o = PART_O + b * stride_pb + h * stride_ph + i * stride_pq
    part_lse = PART_LSE + b * stride_plb + h * stride_plh + i * stride_plq

    m = tl.full([], float("-inf"), tl.float32)
    l_sum = tl.zeros([], tl.float32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    for s0 in range(0, num_splits, BLOCK_S):
        s_ok = s0 + offs_s < num_splits
        lse_s = tl.load(part_lse + (s0 + offs_s) * stride_pls, mask=s_ok, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(lse_s, 0))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        w = tl.exp(lse_s - m_safe)
        alpha = tl.exp(m - m_safe)
        mask = s_ok[:, None] if EVEN_D else s_ok[:, None] & d_ok[None, :]
        o_s = tl.load(part_o + (s0 + offs_s)[:, None] * stride_ps + offs_d[None, :], mask=mask, other=0.0)
        acc = acc * alpha + tl.sum(w[:, None] * o_s, 0)
        l_sum = l_sum * alpha + tl.sum(w, 0)
        m = m_new

    empty = l_sum == 0.0
    out = acc * tl.where(empty, 0.0, 1.0 / tl.where(empty, 1.0, l_sum))
    tl.store(OUT + b * stride_ob + i * stride_oq + h * stride_oh + offs_d, out.to(OUT.dtype.element_ty), mask=d_ok)
    tl.store(LSE + b * stride_lb + h * stride_lh + i * stride_lq,
             tl.where(empty, float("-inf"), m + tl.log(tl.where(empty, 1.0, l_sum))))
