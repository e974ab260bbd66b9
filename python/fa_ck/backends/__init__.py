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
"""
