"""backends/triton/launch.py: a repeated launch skips Triton's binding only when nothing Triton
specialises on has changed. A stand-in kernel records which path each launch took (runs on the
CPU; the GPU suites run the real kernels through it, each shape more than once)."""
import importlib
import types

import pytest
import torch

launch_mod = importlib.import_module("fa_ck.backends.triton.launch")


class FakeCompiled:
    function, packed_metadata = "function", "packed"

    def __init__(self):
        self.runs = []

    def launch_metadata(self, grid, stream, *args):
        return ("meta", grid, stream)

    def run(self, g0, g1, g2, stream, function, packed, meta, enter_hook, exit_hook, *args):
        assert (function, packed, meta) == ("function", "packed", ("meta", (g0, g1, g2), "stream7"))
        self.runs.append(((g0, g1, g2), args))


class FakeKernel:
    """Parameters x, n, scale (runtime), BLOCK (constexpr); num_warps is a launch option."""
    arg_names = ["x", "n", "scale", "BLOCK"]

    def __init__(self):
        self.jit_launches = []
        self.compiled = FakeCompiled()

    def __getitem__(self, grid):
        def go(*args, **kwargs):
            self.jit_launches.append((grid, args, kwargs))
            return self.compiled
        return go


@pytest.fixture
def kernel(monkeypatch):
    monkeypatch.setattr(launch_mod, "INTERPRET", False)
    active = types.SimpleNamespace(get_current_device=lambda: 0, get_current_stream=lambda device: "stream7")
    monkeypatch.setattr(launch_mod, "driver", types.SimpleNamespace(active=active))
    monkeypatch.setattr(launch_mod, "_COMPILED", {})
    return FakeKernel()


def test_repeated_launch_goes_straight_to_the_compiled_kernel(kernel):
    x1, x2 = torch.zeros(64), torch.ones(64)
    launch_mod.launch(kernel, (4, 2, 1), (x1, 128, 0.5), dict(BLOCK=32, num_warps=4))
    launch_mod.launch(kernel, (4, 2, 1), (x2, 128, 0.5), dict(BLOCK=32, num_warps=4))
    assert len(kernel.jit_launches) == 1
    # every parameter in signature order (the constexpr too), launch options left out
    assert kernel.compiled.runs == [((4, 2, 1), (x2, 128, 0.5, 32))]


@pytest.mark.parametrize("change", ["int", "float", "constexpr", "option", "dtype", "alignment"])
def test_anything_triton_specialises_on_takes_tritons_path(kernel, change):
    x = torch.zeros(64)
    args, consts = (x, 128, 0.5), dict(BLOCK=32, num_warps=4)
    launch_mod.launch(kernel, (1, 1, 1), args, consts)
    if change == "int":
        args = (x, 129, 0.5)
    elif change == "float":
        args = (x, 128, 0.25)
    elif change == "constexpr":
        consts = dict(BLOCK=64, num_warps=4)
    elif change == "option":
        consts = dict(BLOCK=32, num_warps=8)
    elif change == "dtype":
        args = (x.double(), 128, 0.5)
    else:                                     # 4 bytes past a 16-byte boundary
        args = (x[1:], 128, 0.5)
        assert args[0].data_ptr() % 16 and x.data_ptr() % 16 == 0
    launch_mod.launch(kernel, (1, 1, 1), args, consts)
    assert len(kernel.jit_launches) == 2 and not kernel.compiled.runs


def test_the_interpreter_always_takes_tritons_path(kernel, monkeypatch):
    monkeypatch.setattr(launch_mod, "INTERPRET", True)
    for _ in range(2):
        launch_mod.launch(kernel, (1, 1, 1), (torch.zeros(4), 4, 1.0), dict(BLOCK=16))
    assert len(kernel.jit_launches) == 2 and not kernel.compiled.runs


def test_ints_floats_and_bools_that_compare_equal_stay_apart(kernel):
    x = torch.zeros(4)
    for n in (1, 1.0, True):
        launch_mod.launch(kernel, (1, 1, 1), (x, n, 0.5), dict(BLOCK=16))
    assert len(kernel.jit_launches) == 3


# ---------------------------------------------------------------------------- on a GPU

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_repeated_calls_take_the_direct_path_and_stay_right(monkeypatch, d):
    """Three calls of one shape on fresh inputs (forward and backward against the float64
    reference): the later ones launch every kernel directly. Then the same shape from unaligned
    storage: Triton's path (its pointers are not 16-byte aligned), right too."""
    from attn_check import check
    from fa_ck import reference
    direct = []
    real = launch_mod.driver

    class Counting:                           # the direct path asks the driver for the stream
        class active:
            get_current_device = staticmethod(real.active.get_current_device)

            @staticmethod
            def get_current_stream(device):
                direct.append(device)
                return real.active.get_current_stream(device)
    monkeypatch.setattr(launch_mod, "driver", Counting)
    for i in range(3):
        check(2, 300, 333, 4, 2, d, dtype=torch.bfloat16, device="cuda", causal=True)
        assert bool(direct) == (i > 0)
    import fa_ck
    x = torch.randn(3 * 2 * 300 * 4 * d + 1, device="cuda").to(torch.bfloat16)
    q, k, v = (x[1 + i * 2 * 300 * 4 * d:][:2 * 300 * 4 * d].view(2, 300, 4, d) for i in range(3))
    assert q.data_ptr() % 16
    out = fa_ck.flash_attn_func(q, k, v, causal=True)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=True, dtype=torch.float64)
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2
