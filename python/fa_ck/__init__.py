"""fa_ck: exact, fused FlashAttention-2 for PyTorch (Composable Kernel on ROCm, Triton everywhere).

    import fa_ck
    out = fa_ck.attention(q, k, v, causal=True)     # SDPA layout (batch, heads, seq, head_dim)
    out = fa_ck.flash_attn_func(q, k, v, causal=True)  # flash-attn layout (batch, seq, heads, head_dim)
    out = fa_ck.attention(q, k, v, causal=True, fp8=True)  # fp8 forward (QK^T and PV in fp8)
    out = fa_ck.flash_attn_with_kvcache(q, k_cache, v_cache, k, v, cache_seqlens=lens, causal=True)  # decoding
"""
try:
    import torch  # noqa: F401  (fa_ck never installs torch: it uses the one you have)
except ImportError as e:  # pragma: no cover
    raise ImportError("fa_ck needs PyTorch: install the build for your GPU first "
                      "(https://pytorch.org/get-started/), then fa_ck") from e

# The subpackage fa_ck.backends is loaded first so that the function backends() below, not
# the subpackage, is what `fa_ck.backends` names (a later submodule import would rebind it).
from . import backends as _backends_package  # noqa: F401
from .dispatch import backends
from .interface import (attention, explain, flash_attn_fp8_func, flash_attn_func, flash_attn_kvpacked_func,
                        flash_attn_qkvpacked_func, flash_attn_varlen_func, flash_attn_varlen_kvpacked_func,
                        flash_attn_varlen_qkvpacked_func)
from .kvcache import explain_kvcache, flash_attn_with_kvcache

__version__ = "0.1.0"
__all__ = ["attention", "backends", "explain", "flash_attn_func", "flash_attn_fp8_func", "flash_attn_varlen_func",
           "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func", "flash_attn_varlen_qkvpacked_func",
           "flash_attn_varlen_kvpacked_func", "flash_attn_with_kvcache", "explain_kvcache", "__version__"]
