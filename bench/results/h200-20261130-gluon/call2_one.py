"""One d128 S16k bf16 forward (B1 H16), for profiling under ncu; FA_CK_TRITON_CONFIG picks the kernel."""
import torch
import fa_ck
q, k, v = (torch.randn(1, 16384, 16, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
for _ in range(3):
    fa_ck.flash_attn_func(q, k, v)
torch.cuda.synchronize()
