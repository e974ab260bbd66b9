"""Backends. Each module here exposes the same four functions; dispatch.py chooses one.

    NAME: str
    available() -> tuple[bool, str]
        (True, "") when this backend can run on this machine, else (False, why not).
    unsupported(q, k, v, p: AttnParams) -> str | None
        None when it can serve this call, else the capability it lacks, in a few words
        ("softcap", "head_dim 300 > 256", "CPU tensors").
    forward(q, k, v, p) -> (out, lse)
    backward(do, q, k, v, out, lse, p, dlse=None) -> (dq, dk, dv)
        dlse: the gradient reaching lse, or None when lse does not feed the loss.

Layout (flash-attn's): batch mode q (B, Sq, Hq, D), k and v (B, Sk, Hkv, D); varlen mode
(p.cu_seqlens_q set) q (total_q, Hq, D), k and v (total_k, Hkv, D). The last dim is
contiguous; other strides are arbitrary. out has q's shape and dtype, lse is float32,
(B, Hq, Sq) in batch mode and (Hq, total_q) in varlen mode, natural log, -inf for a row
that sees no key. dk, dv have k's and v's shapes (GQA gradients already summed over
the group). A backend never imports another backend.

KV-cache decoding (flash_attn_with_kvcache). A backend MAY also expose
    kvcache_unsupported(q, k_cache, v_cache, p: KVCacheParams) -> str | None
        None when it can serve this call, else what it lacks ("page_size 16", "leftpad").
    kvcache_forward(q, k_cache, v_cache, p) -> (out (B, Sq, Hq, D) in q's dtype, lse (B, Hq, Sq) float32)
A backend without both cannot serve KV-cache calls ("no KV-cache path" in explain_kvcache()). It MAY
also expose the append (reference.kvcache_append's torch ops serve a backend without it):
    kvcache_append(q, k_cache, v_cache, k, v, cache_seqlens, rotary_cos, rotary_sin, interleaved,
                   q_per_position, p) -> q
        writes k and v into the cache in place at cache_seqlens (int32 (B,)), rotating k, and returns
        q rotated (a new tensor) when rotary_cos is given, else q; no host sync.
kvcache_forward then gets q rotated and the cache holding the new keys and values: it
never writes the cache and never reads a value back to the host (no .item(), no .tolist()),
so a decode step can be captured in a CUDA graph. Layouts and masks: params.KVCacheParams.
"""
