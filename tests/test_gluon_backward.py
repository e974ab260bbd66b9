"""The experimental Hopper dK/dV kernel in Gluon (backends/triton/backward_gluon.py): off by
default, its switch and configuration (CPU), and its gradients against the float64 reference on
an sm90 GPU when asked for. On the CPU it is only compiled for sm90
(tools/triton_compile_check.py's sm90 rows, which CI runs)."""
import importlib

import pytest
import torch

from attn_check import check, check_varlen, count_calls
from conftest import GPU
from fa_ck.params import AttnParams

tb = importlib.import_module("fa_ck.backends.triton")      # (fa_ck.backends is the function)
configs = tb.configs
SM90 = GPU and torch.cuda.get_device_capability() == (9, 0)
ASK = '{"bwd_dkdv": {"GLUON": true}}'


def _config(monkeypatch, possible=True, **kw):
    monkeypatch.setattr(configs, "arch", lambda device: "cuda:sm90")
    q = torch.randn(1, 16, 2, 128, dtype=torch.bfloat16)
    return tb._config("bwd_dkdv", q, 128, AttnParams(scale=0.1, **kw), 4096, 4096, tma_possible=True,
                      gluon_possible=possible)


def test_gluon_dkdv_off_unless_asked(monkeypatch):
    assert configs.switches("bwd_dkdv", "cuda:sm90", 128, False)["GLUON"] is False
    assert not _config(monkeypatch)["GLUON"]
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ASK)
    cfg = _config(monkeypatch)
    assert cfg["GLUON"] and not cfg["ONE_PASS"]
    assert (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"]) == (32, 128, 4)   # 64 queries spill at d128
    assert not _config(monkeypatch, possible=False)["GLUON"]                  # GQA, fp32, softcap, ...


def test_gluon_dkdv_checks_its_fixed_tile(monkeypatch):
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "BLOCK_N": 64}}')
    with pytest.raises(ValueError, match="the Gluon kernel has BLOCK_N 128 and num_warps 4"):
        _config(monkeypatch)
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", '{"bwd_dkdv": {"GLUON": true, "ONE_PASS": true}}')
    assert not _config(monkeypatch)["ONE_PASS"]                               # no atomics in the Gluon kernel
    assert configs.default("bwd_dkdv", "cuda:sm90", 64, torch.bfloat16, gluon=True)["BLOCK_M"] == 64
    for d in (64, 128):
        for c in configs.candidates("bwd_dkdv", "cuda:sm90", d, torch.bfloat16, gluon=True):
            assert (c["BLOCK_N"], c["num_warps"]) == (128, 4) and (d <= 64 or c["BLOCK_M"] == 32)


# ---------------------------------------------------------------------------- on an sm90 GPU

gpu = pytest.mark.skipif(not SM90 or bool(tb._GLUON_ERROR), reason="needs an sm90 GPU and Gluon")


@pytest.fixture
def gluon_dkdv_calls(monkeypatch):
    """Asks for the Gluon dK/dV kernel and counts its launches."""
    monkeypatch.setenv("FA_CK_TRITON_CONFIG", ASK)
    return count_calls(monkeypatch, tb, "_dkdv_gluon")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [
    (2, 1000, 1000, 4, 4, 128), (1, 2048, 2048, 2, 2, 64), (2, 777, 1531, 2, 2, 96), (3, 1531, 129, 2, 2, 128),
    (2, 1, 300, 2, 2, 128), (1, 300, 1, 2, 2, 64), (1, 130, 257, 2, 2, 32),
])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_dkdv_matches_reference(gluon_dkdv_calls, dtype, shape, causal):
    check(*shape, dtype=dtype, device="cuda", causal=causal, same_precision=True)
    assert gluon_dkdv_calls


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("window", [(64, 0), (200, 37), (5, -1)])
def test_gluon_dkdv_windows_and_varlen(gluon_dkdv_calls, window):
    check(2, 900, 1100, 2, 2, 128, dtype=torch.bfloat16, device="cuda", window_size=window, same_precision=True)
    check_varlen([5, 1, 0, 300, 129, 1000, 2], [1, 0, 3, 300, 700, 1000, 130], 2, 2, 128, dtype=torch.bfloat16,
                 device="cuda", window_size=window, same_precision=True)
    assert gluon_dkdv_calls
