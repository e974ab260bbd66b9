"""Hardware counters (Nsight Compute) for where fa_ck's attention kernels and cuDNN's stand apart
(issue 6): one forward + backward of the nanoGPT shape (B64 H12 S1024 d64 causal) and of d128 S4k
(B4 H16 causal), bf16, by fa_ck's Triton backend and by SDPA cuDNN, each inside its own
cudaProfilerStart/Stop window after warm-up (compiles and plan recording happen outside).
    ncu --profile-from-start off ... python bench/results/h200-20261201-fourteenth/ncu_shapes.py
(PYTHONPATH=python; call2.sh has the full ncu command)."""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import fa_ck

for b, s, h, d in ((64, 1024, 12, 64), (4, 4096, 16, 128)):
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
    do = torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda")
    qt, kt, vt = (t.detach().transpose(1, 2).contiguous().requires_grad_() for t in (q, k, v))
    dot = do.transpose(1, 2).contiguous()

    def ours():
        fa_ck.flash_attn_func(q, k, v, causal=True).backward(do)

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True).backward(dot)
    for fn in (ours, cudnn):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print(f"profiled {fn.__name__} d{d} S{s} B{b}xH{h} causal", flush=True)
