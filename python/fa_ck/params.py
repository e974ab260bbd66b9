"""What one attention call asks for, after the interface has checked and normalised it.

Every backend receives the same AttnParams, so "what does this call need" is decided
once, in interface.py, and each backend only answers "can I serve it" and "do it".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch

# fp8 formats fa_ck multiplies: OCP e4m3 (NVIDIA sm89+, gfx950) and its fnuz twin (MI300X).
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)


def mask_features(p) -> list[str]:
    """The score features both kinds of call share: causal, window, alibi, softcap."""
    f = ["causal"] if p.causal else []
    if p.window_left >= 0 or (p.window_right >= 0 and not (p.causal and p.window_right == 0)):
        f.append("window")
    if p.alibi_slopes is not None:
        f.append("alibi")
    if p.softcap > 0:
        f.append("softcap")
    return f


@dataclass
class AttnParams:
    scale: float                      # multiplies q.k (SDPA's `scale`, flash-attn's `softmax_scale`)
    causal: bool = False              # as asked; already folded into window_right (bottom-right aligned)
    window_left: int = -1             # -1: unbounded. Key j is visible to query i when
    window_right: int = -1            #   i + (sk - sq) - left <= j <= i + (sk - sq) + right
    alibi_slopes: Optional[torch.Tensor] = None   # float32, (Hq,) or (B, Hq); bias -slope * |i + sk - sq - j|
    softcap: float = 0.0              # > 0: scores become softcap * tanh(scores / softcap)
    dropout_p: float = 0.0
    rng: Optional[torch.Tensor] = None            # int64 (2,) [seed, offset] on the device, when dropout_p > 0
    deterministic: bool = False
    # varlen: q is (total_q, Hq, D), k/v (total_k, Hkv, D); batch mode: (B, S, H, D)
    cu_seqlens_q: Optional[torch.Tensor] = None  # int32 (B + 1,)
    cu_seqlens_k: Optional[torch.Tensor] = None
    max_seqlen_q: int = 0
    max_seqlen_k: int = 0
    fp8: bool = False
    # fp8 only: per-(batch, head) float32 descales of fp8 q (B, Hq), k and v (B, Hkv) (None: 1),
    # and the output dtype for fp8 inputs (None: bfloat16). bf16/fp16/fp32 inputs are quantised
    # by the backend and give their own dtype.
    q_descale: Optional[torch.Tensor] = None
    k_descale: Optional[torch.Tensor] = None
    v_descale: Optional[torch.Tensor] = None
    out_dtype: Optional[torch.dtype] = None
    extra: dict = field(default_factory=dict)

    @property
    def varlen(self) -> bool:
        return self.cu_seqlens_q is not None

    @property
    def has_window(self) -> bool:
        return self.window_left >= 0 or self.window_right >= 0

    def features(self) -> list[str]:
        """Names of the non-default features this call uses (explain() and errors quote them)."""
        f = mask_features(self)
        if self.dropout_p > 0:
            f.append("dropout")
        if self.varlen:
            f.append("varlen")
        if self.deterministic:
            f.append("deterministic")
        if self.fp8:
            f.append("fp8")
        return f


@dataclass
class KVCacheParams:
    """One decoding call against a KV cache (flash_attn_with_kvcache), after the interface has checked
    it, rotated q and the new keys, and appended the new keys and values to the cache.

    q (B, Sq, Hq, D). The cache is dense, k_cache/v_cache (B_cache, S_cache, Hkv, D), or paged,
    (num_blocks, page_size, Hkv, D) with `block_table`. Batch row b reads cache row batch_idx[b]
    (dense) or the pages block_table[b] (paged), keys leftpad[b] <= j < seqlens_k[b] (absolute
    positions in that row). Masks and ALiBi are bottom-right aligned on the visible keys: with
    sk_b = seqlens_k[b] - leftpad[b], query i sits at key position leftpad[b] + sk_b - Sq + i.
    """
    scale: float
    seqlens_k: torch.Tensor                       # int32 (B,): keys after the append, leftpad included
    causal: bool = False                          # as asked; already folded into window_right
    window_left: int = -1
    window_right: int = -1
    alibi_slopes: Optional[torch.Tensor] = None   # float32, (Hq,) or (B, Hq)
    softcap: float = 0.0
    leftpad: Optional[torch.Tensor] = None        # int32 (B,): first visible key of each row (None: 0)
    batch_idx: Optional[torch.Tensor] = None      # int32 (B,): cache row of each batch row (None: b)
    block_table: Optional[torch.Tensor] = None    # int32 (B, max_blocks): paged cache
    num_splits: int = 0                           # key splits; 0 lets the backend choose
    extra: dict = field(default_factory=dict)

    @property
    def paged(self) -> bool:
        return self.block_table is not None

    def features(self) -> list[str]:
        f = ["paged" if self.paged else "dense cache"] + mask_features(self)
        if self.leftpad is not None:
            f.append("leftpad")
        if self.batch_idx is not None:
            f.append("cache_batch_idx")
        return f
