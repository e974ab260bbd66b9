"""flash_attn.flash_attn_interface: fa_ck's flash-attn 2.8 functions under flash-attn's names."""
import fa_ck
from fa_ck import (  # noqa: F401
    flash_attn_func,
    flash_attn_kvpacked_func,
    flash_attn_qkvpacked_func,
    flash_attn_varlen_func,
    flash_attn_varlen_kvpacked_func,
    flash_attn_varlen_qkvpacked_func,
)
from fa_ck.interface import s_dmask_block_n as _get_block_size_n  # noqa: F401

HAS_KVCACHE = hasattr(fa_ck, "flash_attn_with_kvcache")

if HAS_KVCACHE:
    from fa_ck import flash_attn_with_kvcache  # noqa: F401
else:
    def flash_attn_with_kvcache(*args, **kwargs):
        """Absent from fa_ck: the suite's conftest skips the tests that call it."""
        raise NotImplementedError("fa_ck has no flash_attn_with_kvcache yet")
