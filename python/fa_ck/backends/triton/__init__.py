"""The triton backend: our FlashAttention-2 kernels (kernels/), on NVIDIA and AMD GPUs, and on the
CPU under TRITON_INTERPRET=1 (set before import), which is how CI tests the kernels themselves.

A call flows: availability (can it serve this call) -> forward_host / backward_host (buffers, the
replay plan or the slow path) -> config (the one place that decides each kernel's config, from a
CallSpec of the call) -> the launchers (forward_host, backward_host, gluon_launch; fp8.py quantises
first) -> fast_path (every launch) -> kernels/. docs/architecture.md walks through it.
KV-cache decoding: kvcache_unsupported (availability) -> decode_host (buffers, a DecodeSpec,
config.decode_config, the launches) -> kernels/append.py, then kernels/decode.py.
"""
from __future__ import annotations

import contextlib

import torch

from ...params import AttnParams, KVCacheParams
from .availability import available, kvcache_unsupported, unsupported

NAME = "triton"
__all__ = ["NAME", "available", "unsupported", "forward", "backward", "kvcache_unsupported", "kvcache_append",
           "kvcache_forward", "quantize_fp8", "dropout_mask"]


def _on_device_of(t: torch.Tensor):
    """Triton launches on the current CUDA device: make it the tensors' (q on cuda:1 while cuda:0 is
    current would otherwise run on the wrong GPU)."""
    if t.is_cuda and t.device.index != torch.cuda.current_device():
        return torch.cuda.device(t.device)
    return contextlib.nullcontext()


def forward(q, k, v, p: AttnParams):
    from .forward_host import forward as run
    with _on_device_of(q):
        return run(q, k, v, p)


def backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    from .backward_host import backward as run
    with _on_device_of(q):
        return run(do, q, k, v, out, lse, p, dlse)


def kvcache_append(q, k_cache, v_cache, k, v, cache_seqlens, rotary_cos, rotary_sin, interleaved, q_per_position,
                   p: KVCacheParams):
    """The append in place and rotary, in one fused kernel (kernels/append.py) -> q, rotated with rotary."""
    from .decode_host import append as run
    with _on_device_of(q):
        return run(q, k_cache, v_cache, k, v, cache_seqlens, rotary_cos, rotary_sin, interleaved, q_per_position, p)


def kvcache_forward(q, k_cache, v_cache, p: KVCacheParams):
    """Decoding against a KV cache (the cache already holds the new keys) -> (out (B, Sq, Hq, D) in q's
    dtype, lse (B, Hq, Sq) float32). Never writes the cache, never syncs the host."""
    from .decode_host import forward as run
    with _on_device_of(q):
        return run(q, k_cache, v_cache, p)


def quantize_fp8(x: torch.Tensor, dtype: torch.dtype, keys_contiguous: bool = False, target_max: float = 0.0):
    """x (B, S, H, D) -> (x in fp8 `dtype`, its (B, H) float32 descales), one scale per (batch, head)."""
    from .fp8 import quantize_fp8 as run
    return run(x, dtype, keys_contiguous, target_max)


def dropout_mask(rng, batch: int, heads: int, seqlen_q: int, seqlen_k: int, dropout_p: float) -> torch.Tensor:
    """The keep mask (bool, (batch, heads, seqlen_q, seqlen_k)) our kernels apply for this rng (varlen:
    pass the longest sequences; the kernels' row stride is max_seqlen_k)."""
    from .buffers import cdiv
    from .kernels.forward import dropout_mask_kernel
    keep = torch.empty((batch, heads, seqlen_q, seqlen_k), dtype=torch.int8, device=rng.device)
    bm, bn = 32, 32
    dropout_mask_kernel[(cdiv(seqlen_q, bm), heads, batch)](keep, rng, seqlen_q, seqlen_k, seqlen_k, dropout_p,
                                                            BLOCK_M=bm, BLOCK_N=bn)
    return keep.bool()
