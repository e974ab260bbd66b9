"""Test setup: without a GPU, the Triton kernels run in the interpreter on the CPU.

TRITON_INTERPRET must be set before triton decorates our kernels, so it is set here, before
anything imports fa_ck. FA_CK_POISON=1 makes the triton backend fill its outputs with NaN
before the kernels run: an element they fail to write shows up as NaN.
"""
import os
import sys

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ["FA_CK_POISON"] = "1"

import pytest  # noqa: E402

GPU = torch.cuda.is_available()
DEVICE = "cuda" if GPU else "cpu"


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


@pytest.fixture(autouse=True)
def _no_plans_from_other_tests():
    """The triton backend replays a call signature's launches (fast_path's plans); tests patch what
    they are worked out from (device.arch, device.sm_count, ...), so no test is served the launches
    another test's patches made."""
    fast_path = sys.modules.get("fa_ck.backends.triton.fast_path")
    if fast_path is not None:
        fast_path.clear()
    yield
