"""flash_attn as flash-attn 2.8.3's tests import it, served by fa_ck (tools/flash_attn_suite.sh lays it out)."""
__version__ = "2.8.3.post2"

from flash_attn.flash_attn_interface import (  # noqa: F401
    flash_attn_func,
    flash_attn_kvpacked_func,
    flash_attn_qkvpacked_func,
    flash_attn_varlen_func,
    flash_attn_varlen_kvpacked_func,
    flash_attn_varlen_qkvpacked_func,
    flash_attn_with_kvcache,
)
