"""Call 3's host-made descriptors gave wrong outputs: isolate the 4-D TMA load (device call 4).
A copy kernel loads one (rows, cols) tile of head (b, h) through a host 4-D descriptor into a
2-D shared buffer (index `buf` of a ring, reshaped to 4-D as the forward does), reads it back
and stores it; compared with torch's slice. Then the forward with host and device descriptors.
    python bench/results/h200-20261130-eighth/call4_desc_debug.py
"""
import importlib

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

tb = importlib.import_module("fa_ck.backends.triton")


@gluon.jit
def copy_kernel(desc, OUT, b, h, row, BUF: gl.constexpr, SMEM: gl.constexpr, RESHAPE: gl.constexpr):
    R: gl.constexpr = desc.block_type.shape[2]
    C: gl.constexpr = desc.block_type.shape[3]
    ring = gl.allocate_shared_memory(desc.dtype, [2, R, C], SMEM)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, desc.block_type.nbytes)
    if RESHAPE:
        tma.async_copy_global_to_shared(desc, [b, h, row, 0], bar, ring.index(BUF).reshape([1, 1, R, C]))
    else:
        tma.async_copy_global_to_shared(desc, [b, h, row, 0], bar, ring.index(BUF)._reinterpret(desc.dtype, [1, 1, R, C], desc.layout))
    mbarrier.wait(bar, 0)
    blocked: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    tile = ring.index(BUF).load(blocked)
    r = gl.arange(0, R, layout=gl.SliceLayout(1, blocked))
    c = gl.arange(0, C, layout=gl.SliceLayout(0, blocked))
    gl.store(OUT + r[:, None] * C + c[None, :], tile)


def copy_check():
    for rows, cols in [(128, 128), (128, 64), (64, 16)]:
        for buf in (0, 1):
            for reshape in (True,):
                x = torch.randn(2, 300, 3, cols, dtype=torch.bfloat16, device="cuda")
                x4 = x.permute(0, 2, 1, 3)
                block = [1, 1, rows, cols]
                layout = gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16)
                desc = TensorDescriptor(x4, list(x4.shape), list(x4.stride()), block, layout)
                out = torch.full((rows, cols), float("nan"), dtype=torch.bfloat16, device="cuda")
                smem = gl.NVMMASharedLayout.get_default_for([rows, cols], gl.bfloat16)
                copy_kernel[(1,)](desc, out, 1, 2, 200, BUF=buf, SMEM=smem, RESHAPE=reshape, num_warps=4)
                ref = torch.zeros(rows, cols, dtype=torch.bfloat16, device="cuda")
                n = min(rows, 300 - 200)
                ref[:n] = x[1, 200:200 + n, 2]
                bad = (out != ref)
                print(f"copy {rows}x{cols} buf {buf} reshape {reshape}: wrong {int(bad.sum())} of {bad.numel()}",
                      f"rows {bad.any(1).nonzero().flatten()[:8].tolist()} cols {bad.any(0).nonzero().flatten()[:8].tolist()}",
                      flush=True)


def forward_check():
    import fa_ck
    from fa_ck import reference
    for shape in [(1, 128, 1, 128), (1, 256, 2, 128), (2, 300, 3, 64)]:
        b, s, h, d = shape
        q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        ref, _ = reference.attention(q.double(), k.double(), v.double(), dtype=torch.float64)
        for host in (False, True):
            import os
            os.environ["FA_CK_TRITON_CONFIG"] = f'{{"fwd": {{"GLUON": true, "HOST_DESC": {str(host).lower()}}}}}'
            out = fa_ck.flash_attn_func(q, k, v, backend="triton")
            err = ((out.double() - ref).norm() / ref.norm()).item()
            rows_bad = ((out.double() - ref).abs().amax(dim=(0, 2, 3)) > 0.05).nonzero().flatten()
            print(f"forward {shape} host {host}: rel err {err:.3g}, bad rows {rows_bad[:10].tolist()}", flush=True)


copy_check()
forward_check()
