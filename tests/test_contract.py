"""The calling contract at its edges (issue 59): double backward, meta tensors, argument types and
messages, empty heads, flash-attn's window_size types and paged calls. Values against the float64
reference."""
import pytest
import torch
import torch.nn.functional as F

import fa_ck
from fa_ck import ops, reference
from attn_check import FWD_TOL, assert_close, rand, tol
from conftest import DEVICE


def _qkv(b=1, h=2, s=8, d=16, **kw):
    return tuple(torch.randn(b, h, s, d, device=DEVICE, **kw) for _ in range(3))


# ------------------------------------------------------------------ arguments and messages

@pytest.mark.parametrize("backend", [None, "auto"])
def test_bad_env_backend_names_the_variable(monkeypatch, backend):
    monkeypatch.setenv("FA_CK_BACKEND", "bogus")
    kw = {} if backend is None else {"backend": backend}
    with pytest.raises(ValueError, match="FA_CK_BACKEND must be one of .*got 'bogus'"):
        fa_ck.attention(*_qkv(), **kw)
    with pytest.raises(ValueError, match=r"^backend must be one of .*got 'cuda'"):   # an argument: named as such
        fa_ck.attention(*_qkv(), backend="cuda")
