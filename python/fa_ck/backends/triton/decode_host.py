"""The KV-cache decoding host code: reads the call's facts into a DecodeSpec, makes out, lse and (with
several splits) the partials' workspace, poisoned under FA_CK_POISON=1, and launches what
config returns: append.py's fused append (append(), config.append_warps), then decode.py's split
kernel and its combine kernel (forward(), config.decode_config). It decides nothing, and never reads
a device value (no host sync)."""
from __future__ import annotations

import math
import os

import torch

from ...params import KVCacheParams
from . import buffers, device, fast_path
from .buffers import placeholders
from .config import DecodeConfig, DecodeSpec, append_warps, decode_config
from .kernels.append import append_kernel
from .kernels.decode import decode_combine_kernel, decode_split_kernel
from .sizes import block_d, pow2

LOG2E = 1.0 / math.log(2.0)


def decode_spec(q, k_cache, p: KVCacheParams) -> DecodeSpec:
    """What decode_config decides from: shapes, dtype, features, the device, and the cache's capacity
    (never the seqlens, which live on the device)."""
    b, sq, hq, d = q.shape
    page = k_cache.shape[1] if p.paged else 0
    capacity = p.block_table.shape[1] * page if p.paged else k_cache.shape[1]
    return DecodeSpec(arch=device.arch(q.device), dtype=q.dtype, head_dim=d, batch=b, seqlen_q=sq, heads_q=hq,
                      heads_kv=k_cache.shape[2], capacity=capacity,
                      page_size=page, window_left=p.window_left, window_right=p.window_right, softcap=p.softcap > 0,
                      alibi=p.alibi_slopes is not None, leftpad=p.leftpad is not None,
                      batch_idx=p.batch_idx is not None, num_splits=p.num_splits,
                      sm_count=device.sm_count(q.device), overrides=os.environ.get("FA_CK_TRITON_CONFIG", ""))


def append(q, k_cache, v_cache, k, v, cache_seqlens, rotary_cos, rotary_sin, interleaved: bool,
           q_per_position: bool, p: KVCacheParams):
    """append_kernel: k, v (B, n, Hkv, D) into the cache at cache_seqlens (int32 (B,)), rotating them
    and q with a rotary table. -> q, rotated into a new tensor with rotary, else as it was."""
    b, n, hkv, d = k.shape
    sq, hq = q.shape[1], q.shape[2]
    k, v = ((t if t.stride(-1) == 1 else t.contiguous()) for t in (k, v))    # (new tokens: a small copy)
    rotary = rotary_cos is not None
    q_out = buffers.empty(q.shape, q.dtype, q.device, buffers.poisoning()) if rotary else q
    tokens = max(n, sq if rotary else 0)
    if b == 0 or tokens == 0:
        return q_out
    ints, floats, _ = placeholders(q.device)
    table = p.block_table if p.paged else ints.view(1, 0)
    cos, sin = ((t if t.stride(-1) == 1 else t.contiguous()) for t in (rotary_cos, rotary_sin)) if rotary else (
        floats, floats)
    half = cos.shape[1] if rotary else 0
    page = k_cache.shape[1]
    capacity = table.shape[1] * page if p.paged else page
    fast_path.launch(append_kernel, (tokens, b), (
        q, k, v, q_out, k_cache, v_cache, cos, sin, cache_seqlens.contiguous(),
        p.batch_idx.contiguous() if p.batch_idx is not None else ints, table,
        q.stride()[:3], k.stride()[:3], v.stride()[:3], q_out.stride()[:3], k_cache.stride()[:3],
        v_cache.stride()[:3], table.stride(), (cos.stride(0), sin.stride(0)),
        n, sq, hq, hkv, d, half, capacity, k_cache.shape[0]), dict(
        BLOCK_HQ=pow2(hq) if rotary else 1, BLOCK_HK=pow2(hkv), BLOCK_D=block_d(d),
        PAGE=page if p.paged else 0, HAS_BATCH_IDX=p.batch_idx is not None and not p.paged, ROTARY=rotary,
        INTERLEAVED=interleaved, Q_PER_POSITION=q_per_position, num_warps=append_warps(hq, d), num_stages=1))
    return q_out


def forward(q, k_cache, v_cache, p: KVCacheParams):
    """-> out (B, Sq, Hq, D) in q's dtype, lse (B, Hq, Sq) float32."""
    b, sq, hq, d = q.shape
    cfg = decode_config(decode_spec(q, k_cache, p))
    poison = buffers.poisoning()
    out = buffers.empty(q.shape, q.dtype, q.device, poison)
    lse = buffers.empty((b, hq, sq), torch.float32, q.device, poison)
    if cfg.num_splits == 1:
        launch_split(q, k_cache, v_cache, out, lse, p, cfg,
                     (*out.stride()[:3], 0), (*lse.stride(), 0))
    else:
        part_o = buffers.empty((b, hq, sq, cfg.num_splits, d), torch.float32, q.device, poison)
        part_lse = buffers.empty((b, hq, sq, cfg.num_splits), torch.float32, q.device, poison)
        po, pl = part_o.stride(), part_lse.stride()
        launch_split(q, k_cache, v_cache, part_o, part_lse, p, cfg, (po[0], po[2], po[1], po[3]), pl)
        launch_combine(part_o, part_lse, out, lse, cfg)
    if buffers.has_canaries():
        buffers.check_canaries("decode")
        out, lse = out.clone(), lse.clone()   # own storage, not views into the canaried buffers
    return out, lse


def launch_split(q, k_cache, v_cache, o, lse, p: KVCacheParams, cfg: DecodeConfig, o_strides, lse_strides):
    """decode_split_kernel into o and lse: out and lse themselves (split strides 0), or the partials.
    o_strides: (batch, query, head, split); lse_strides: (batch, head, query, split)."""
    b, sq, hq, d = q.shape
    hkv = k_cache.shape[2]
    ints, floats, _ = placeholders(q.device)
    table = p.block_table if p.paged else ints.view(1, 0)
    slopes = p.alibi_slopes if p.alibi_slopes is not None else floats
    slopes = slopes if slopes.dim() == 2 else slopes.view(1, -1).expand(b, -1)     # (batch stride 0)
    leftpad, batch_idx = (t.contiguous() if t is not None else ints for t in (p.leftpad, p.batch_idx))
    cap = p.softcap if p.softcap > 0 else 1.0
    bd = block_d(d)
    fast_path.launch(decode_split_kernel, (b * hkv, cfg.row_tiles, cfg.num_splits), (
        q, k_cache, v_cache, o, lse, p.seqlens_k.contiguous(), leftpad, batch_idx, table, slopes,
        q.stride()[:3], k_cache.stride()[:3], v_cache.stride()[:3], o_strides, lse_strides,
        table.stride(), slopes.stride(),
        (sq, hkv, hq // hkv, d), (p.scale * LOG2E, p.scale / cap, cap * LOG2E), (p.window_left, p.window_right)), dict(
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_D=bd, EVEN_D=bd == d, PAGE=k_cache.shape[1] if p.paged else 0,
        HAS_LEFTPAD=p.leftpad is not None, HAS_BATCH_IDX=p.batch_idx is not None and not p.paged,
        SOFTCAP=p.softcap > 0, ALIBI=p.alibi_slopes is not None, MASK_LEFT=p.window_left >= 0,
        MASK_RIGHT=p.window_right >= 0, DOT_F32=device.INTERPRET and q.dtype == torch.bfloat16,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages))


def launch_combine(part_o, part_lse, out, lse, cfg: DecodeConfig):
    """decode_combine_kernel: the partials (batch, head, query, split, d) into out and lse."""
    b, hq, sq, splits, d = part_o.shape
    bd = block_d(d)
    fast_path.launch(decode_combine_kernel, (sq, hq, b), (
        part_o, part_lse, out, lse, part_o.stride()[:4], part_lse.stride(), out.stride()[:3], lse.stride(),
        splits, d), dict(BLOCK_S=cfg.combine_block_s, BLOCK_D=bd, EVEN_D=bd == d, num_warps=cfg.combine_warps,
        num_stages=1))
