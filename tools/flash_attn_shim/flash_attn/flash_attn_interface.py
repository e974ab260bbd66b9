"""flash_attn.flash_attn_interface: fa_ck's flash-attn 2.8 functions under flash-attn's names."""
from fa_ck import (  # noqa: F401
    flash_attn_func,
    flash_attn_kvpacked_func,
    flash_attn_qkvpacked_func,
    flash_attn_varlen_func,
    flash_attn_varlen_kvpacked_func,
    flash_attn_varlen_qkvpacked_func,
    flash_attn_with_kvcache,
)
from fa_ck.interface import s_dmask_block_n as _get_block_size_n  # noqa: F401
