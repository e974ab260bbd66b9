"""tools/triton_compile_check.py without compiling: its reading of AMD assembly (which MFMA
instructions multiply fp8) and its capture of what fa_ck launches on a faked device. The compiles
themselves (gfx942 and sm_90; the fp8 forward for gfx950 / sm89 / sm100 / sm120) run in CI after
the tests."""
import dataclasses
import importlib
import sys
from pathlib import Path

import torch

from fa_ck.backends.triton.config import CallSpec, backward_config, forward_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
check = importlib.import_module("triton_compile_check")

# (instruction as the gfx942 / gfx950 assembly prints it, multiplies fp8)
LINES = [
    ("v_mfma_f32_32x32x16_fp8_fp8 a[0:15], v[4:5], v[6:7], a[0:15]", True),        # gfx942
    ("v_mfma_f32_32x32x16_bf8_fp8 a[0:15], v[4:5], v[6:7], a[0:15]", True),
    ("v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], 0", True),          # gfx950, e4m3 x e4m3
    ("v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], v[0:15] cbsz:1 blgp:1", True),   # e5m2
    ("v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], 0 cbsz:2", False),  # fp6 operand
    ("v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3] blgp:4", False),  # fp4 operand
    ("v_mfma_f32_32x32x8_f16 a[0:15], v[2:3], v[4:5], a[0:15]", False),           # fp16 emulation
    ("v_mfma_f32_32x32x16_bf16 v[0:15], v[16:19], v[20:23], v[0:15]", False),
]


def test_fp8_mfma_recognised_on_gfx942_and_gfx950():
    assert [check.mfma_is_fp8(line) for line, _ in LINES] == [want for _, want in LINES]


def test_capture_launches_the_gluon_kernels_with_the_configs_config_gives():
    call = check.Call(128, torch.bfloat16, causal=True)
    launched = {kernel.fn.__name__: (grid, c) for kernel, grid, _, c in check.record("sm90", call)}
    # the facts the host code reads off these contiguous bf16 tensors
    spec = CallSpec(arch="cuda:sm90", dtype=torch.bfloat16, head_dim=call.d, batch=call.b, seqlen_q=call.s,
                    seqlen_k=call.s, heads_q=call.hq, heads_kv=call.hkv, window_right=0, sm_count=132,
                    gluon_ok=True, host_desc_ok=True)
    fwd = forward_config(dataclasses.replace(spec, tma_ok=True))
    dkdv = backward_config(dataclasses.replace(spec, dkdv_tma_ok=True, dq_tma_ok=True)).dkdv
    assert fwd.gluon and dkdv.gluon
    grid, c = launched["fwd_gluon_kernel"]
    assert (c["BLOCK_M"], c["BLOCK_N"], c["NUM_BUF"], c["num_warps"]) == (
        fwd.block_m, fwd.block_n, fwd.num_stages, fwd.num_warps)
    assert (c["HOST_DESC"], c["TMA_STORE"], c["EVEN_N"], c["DIAG_FIRST"], grid[0]) == (
        fwd.host_desc, fwd.tma_store, fwd.even_n, fwd.diag_first, fwd.programs)
    grid, c = launched["bwd_dkdv_gluon_kernel"]
    assert (c["BLOCK_M"], c["NUM_BUF"], c["NUM_KV"], c["num_warps"]) == (
        dkdv.block_m, dkdv.num_stages, dkdv.num_kv, dkdv.num_warps)
    assert (c["ONE_PASS"], c["HOST_DESC"], c["PERSISTENT"], c["TMA_STORE"], grid[0]) == (
        dkdv.one_pass, dkdv.host_desc, dkdv.persistent, dkdv.tma_store, dkdv.programs)
