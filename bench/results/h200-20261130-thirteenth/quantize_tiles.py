"""The fp8 quantisation's two kernels (quantize.py) at other tile heights and warp counts: GPU us
per (B4, S4096, H16, d128) bf16 tensor (64 MiB), by triton.testing.do_bench, and the bandwidth it
makes (amax reads the tensor; quantize reads it and writes the fp8 copy, q/k head-dim-contiguous).
    python bench/results/h200-20261130-thirteenth/quantize_tiles.py      (PYTHONPATH=python)"""
import torch
import triton

from fa_ck.backends.triton.quantize import amax_kernel, quantize_kernel

b, s, h, d = 4, 4096, 16, 128
x = torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda")
x8 = torch.empty(b, s, h, d, dtype=torch.float8_e4m3fn, device="cuda")
amax = torch.zeros(b, h, dtype=torch.int32, device="cuda")
descale = torch.empty(b, h, dtype=torch.float32, device="cuda")
ref = x.float().abs().amax(dim=(1, 3)).view(torch.int32)
for block_s in (64, 128, 256, 512):
    for warps in (4, 8):
        grid = (triton.cdiv(s, block_s), h, b)

        def run_amax():
            amax.zero_()
            amax_kernel[grid](x, amax, *x.stride()[:3], s, d, h, BLOCK_S=block_s, BLOCK_D=d, num_warps=warps)

        def run_quantize():
            quantize_kernel[grid](x, x8, amax, descale, *x.stride()[:3], *x8.stride(), s, d, h, 448.0,
                                  BLOCK_S=block_s, BLOCK_D=d, ROUND_EMIN=0, num_warps=warps)
        run_amax()
        ok = torch.equal(amax, ref)
        t_amax = triton.testing.do_bench(run_amax, warmup=25, rep=200, return_mode="median") * 1e3
        t_q = triton.testing.do_bench(run_quantize, warmup=25, rep=200, return_mode="median") * 1e3
        print(f"BLOCK_S {block_s:4d} warps {warps}: amax {t_amax:6.1f} us ({x.nbytes / t_amax / 1e6:.2f} TB/s, "
              f"{'exact' if ok else 'WRONG'}), quantize {t_q:6.1f} us ({1.5 * x.nbytes / t_q / 1e6:.2f} TB/s)")
