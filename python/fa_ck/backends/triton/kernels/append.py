"""The KV cache's append, fused: rotary on q and the new keys, and the new keys and values written
into the cache in place, in one launch (torch ops take a launch per step, see reference.kvcache_append).

append_kernel runs one program per (token t, batch row b). Program (t, b) writes new token t of row
b at position cache_seqlens[b] + t of its cache row: row batch_idx[b] (or b) of a dense cache, or
page block_table[b, pos // PAGE], slot pos % PAGE of a paged one. With rotary it also rotates query t
(at position cache_seqlens[b] + t, or cache_seqlens[b] for every query) into QOUT.

Rotary turns dims (d, partner(d)) for d < 2 * half, in float32, as reference.rotary does:
x'[d] = x[d] * cos[pos, col] + sign * x[partner] * sin[pos, col], with partner d ^ 1, col d // 2 and
sign -1 on even d when interleaved, else partner d +- half, col d % half and sign -1 below half.
A write outside the cache (possible only with the interface's value checks off: a position past
the capacity, a cache row or block-table entry naming no row or page) is dropped.
"""
import triton
import triton.language as tl

from .common import wide


@triton.jit
def _rotated(X, offs_h, offs_d, stride_h, heads, head_dim, COS, SIN, half,
             ROTARY: tl.constexpr, INTERLEAVED: tl.constexpr):
    """Heads x dims of one token at X, in float32, rotated when ROTARY by the rotary table rows at COS, SIN."""
    inside = (offs_h[:, None] < heads) & (offs_d[None, :] < head_dim)
    x = tl.load(X + offs_h[:, None] * stride_h + offs_d[None, :], mask=inside, other=0.0).to(tl.float32)
    if ROTARY:
        if INTERLEAVED:
            partner = offs_d ^ 1
            col = offs_d // 2
            sign = tl.where(offs_d % 2 == 0, -1.0, 1.0)
        else:
            low = offs_d < half
            partner = tl.where(low, offs_d + half, offs_d - half)
            col = tl.where(low, offs_d, offs_d - half)
            sign = tl.where(low, -1.0, 1.0)
        turns = offs_d < 2 * half
        other = tl.load(X + offs_h[:, None] * stride_h + partner[None, :], mask=inside & turns[None, :], other=0.0)
        c = tl.load(COS + col, mask=turns, other=1.0).to(tl.float32)
        s = tl.load(SIN + col, mask=turns, other=0.0).to(tl.float32)
        x = x * c[None, :] + (sign * s)[None, :] * other.to(tl.float32)
    return x, inside


@triton.jit
def append_kernel(Q, K, V, QOUT, KC, VC, COS, SIN, LENS, BATCH_IDX, TABLE,
                  q_strides, k_strides, v_strides, qout_strides, kc_strides, vc_strides, table_strides,
                  rotary_rows, n_new, seqlen_q, heads_q, heads_kv, head_dim, half, capacity,
                  num_blocks, BLOCK_HQ: tl.constexpr, BLOCK_HK: tl.constexpr, BLOCK_D: tl.constexpr,
                  PAGE: tl.constexpr, HAS_BATCH_IDX: tl.constexpr, ROTARY: tl.constexpr,
                  INTERLEAVED: tl.constexpr, Q_PER_POSITION: tl.constexpr):
    """q_strides / k_strides / v_strides / qout_strides: (batch, token, head); kc_strides / vc_strides: the
    cache's (row or page, position, head); rotary_rows: the row strides of COS and SIN (columns
    contiguous); num_blocks: the cache's rows (dense) or pages (paged)."""
    t = tl.program_id(0)
    b = tl.program_id(1)
    offs_d = tl.arange(0, BLOCK_D)
    lens = tl.load(LENS + b)
    if t < n_new:
        pos = lens + t
        offs_h = tl.arange(0, BLOCK_HK)
        kx, inside = _rotated(K + wide(b) * k_strides[0] + t * k_strides[1], offs_h, offs_d, k_strides[2], heads_kv,
                              head_dim, COS + wide(pos) * rotary_rows[0], SIN + wide(pos) * rotary_rows[1], half,
                              ROTARY, INTERLEAVED)
        vx = tl.load(V + wide(b) * v_strides[0] + t * v_strides[1] + offs_h[:, None] * v_strides[2] + offs_d[None, :],
                     mask=inside)
        if PAGE == 0:
            row = tl.load(BATCH_IDX + b) if HAS_BATCH_IDX else b
            ok = (pos < capacity) & (row >= 0) & (row < num_blocks)
            k_at = wide(row) * kc_strides[0] + wide(pos) * kc_strides[1]
            v_at = wide(row) * vc_strides[0] + wide(pos) * vc_strides[1]
        else:
            ok = pos < capacity
            page = tl.load(TABLE + wide(b) * table_strides[0] + (pos // PAGE) * table_strides[1], mask=ok, other=-1)
            ok = ok & (page >= 0) & (page < num_blocks)
            k_at = wide(page) * kc_strides[0] + (pos % PAGE) * kc_strides[1]
            v_at = wide(page) * vc_strides[0] + (pos % PAGE) * vc_strides[1]
        keep = inside & ok
        tl.store(KC + k_at + offs_h[:, None] * kc_strides[2] + offs_d[None, :], kx.to(KC.dtype.element_ty), mask=keep)
        tl.store(VC + v_at + offs_h[:, None] * vc_strides[2] + offs_d[None, :], vx.to(VC.dtype.element_ty), mask=keep)
    if ROTARY:
        if t < seqlen_q:
            at = lens + t if Q_PER_POSITION else lens
            offs_h = tl.arange(0, BLOCK_HQ)
            qx, inside = _rotated(Q + wide(b) * q_strides[0] + t * q_strides[1], offs_h, offs_d, q_strides[2], heads_q,
                                  head_dim, COS + wide(at) * rotary_rows[0], SIN + wide(at) * rotary_rows[1], half,
                                  ROTARY, INTERLEAVED)
            tl.store(QOUT + wide(b) * qout_strides[0] + t * qout_strides[1] + offs_h[:, None] * qout_strides[2]
                     + offs_d[None, :], qx.to(QOUT.dtype.element_ty), mask=inside)
