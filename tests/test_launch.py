"""backends/triton/launch.py: a repeated launch skips Triton's binding only when nothing Triton
specialises on has changed. A stand-in kernel records which path each launch took (runs on the
CPU; the GPU suites run the real kernels through it, each shape more than once)."""
import importlib
import inspect
import types

import pytest
import torch
from conftest import GPU
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend

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


def _param(name, constexpr=False, do_not_specialize=False):
    return types.SimpleNamespace(name=name, is_constexpr=constexpr, annotation_type="", is_const=False,
                                 do_not_specialize=do_not_specialize, do_not_specialize_on_alignment=False)


class FakeKernel:
    """Parameters x, n, scale (runtime), BLOCK (constexpr); num_warps is a launch option.
    n_plain: n is do_not_specialize (Triton keys only its width)."""
    arg_names = ["x", "n", "scale", "BLOCK"]

    def __init__(self, n_plain=False):
        self.params = [_param("x"), _param("n", do_not_specialize=n_plain), _param("scale"), _param("BLOCK", True)]
        self.jit_launches = []
        self.compiled = FakeCompiled()

    def __getitem__(self, grid):
        def go(*args, **kwargs):
            self.jit_launches.append((grid, args, kwargs))
            return self.compiled
        return go


CURRENT = {"device": 0}


@pytest.fixture
def kernel(monkeypatch):
    monkeypatch.setattr(launch_mod, "INTERPRET", False)
    CURRENT["device"] = 0
    active = types.SimpleNamespace(get_current_device=lambda: CURRENT["device"],
                                   get_current_stream=lambda device: "stream7")
    monkeypatch.setattr(launch_mod, "driver", types.SimpleNamespace(active=active))
    monkeypatch.setattr(launch_mod, "_COMPILED", {})
    monkeypatch.setattr(launch_mod, "_FLAGS", {})
    monkeypatch.setattr(launch_mod, "_backend", lambda device: make_backend(GPUTarget("cuda", 90, 32)))
    return FakeKernel()


def test_repeated_launch_goes_straight_to_the_compiled_kernel(kernel):
    x1, x2 = torch.zeros(64), torch.ones(64)
    launch_mod.launch(kernel, (4, 2, 1), (x1, 128, 0.5), dict(BLOCK=32, num_warps=4))
    launch_mod.launch(kernel, (4, 2, 1), (x2, 128, 0.5), dict(BLOCK=32, num_warps=4))
    assert len(kernel.jit_launches) == 1
    # every parameter in signature order (the constexpr too), launch options left out
    assert kernel.compiled.runs == [((4, 2, 1), (x2, 128, 0.5, 32))]


def test_launch_returns_the_compiled_kernel_for_run_compiled(kernel):
    """launch() -> the compiled kernel (first launch and repeated ones); run_compiled hands it the
    arguments as the direct path does; None where Triton's path is taken every time."""
    x1, x2 = torch.zeros(64), torch.ones(64)
    assert launch_mod.launch(kernel, (4, 2, 1), (x1, 128, 0.5), dict(BLOCK=32, num_warps=4)) is kernel.compiled
    assert launch_mod.launch(kernel, (4, 2, 1), (x1, 128, 0.5), dict(BLOCK=32, num_warps=4)) is kernel.compiled
    launch_mod.run_compiled(kernel.compiled, kernel, (4, 2, 1), (x2, 128, 0.5), dict(BLOCK=32, num_warps=4))
    assert len(kernel.jit_launches) == 1
    assert kernel.compiled.runs == [((4, 2, 1), (x1, 128, 0.5, 32)), ((4, 2, 1), (x2, 128, 0.5, 32))]
    assert launch_mod.launch(kernel, (4, 2, 1), (x1, 128, 0.5), dict(num_warps=4)) is None   # BLOCK left to Triton


def test_run_compiled_takes_a_grid_of_fewer_dimensions(kernel):
    """A 1-D or 2-D grid, as kernel[grid] takes it, runs with the missing dimensions 1 (a 1-D
    grid once failed only on a replay, h200-20261130-twelfth call 2)."""
    x = torch.zeros(64)
    launch_mod.launch(kernel, (5,), (x, 128, 0.5), dict(BLOCK=32, num_warps=4))
    launch_mod.launch(kernel, (5,), (x, 128, 0.5), dict(BLOCK=32, num_warps=4))
    launch_mod.run_compiled(kernel.compiled, kernel, (3, 2), (x, 128, 0.5), dict(BLOCK=32, num_warps=4))
    assert [grid for grid, _ in kernel.compiled.runs] == [(5, 1, 1), (3, 2, 1)]


@pytest.mark.parametrize("change", ["int multiple of 16", "int one", "int width", "constexpr", "constexpr type",
                                    "option", "dtype", "alignment", "current device"])
def test_anything_triton_specialises_on_takes_tritons_path(kernel, change):
    x = torch.zeros(64)
    args, consts = (x, 128, 0.5), dict(BLOCK=32, num_warps=4)
    launch_mod.launch(kernel, (1, 1, 1), args, consts)
    if change == "int multiple of 16":
        args = (x, 129, 0.5)
    elif change == "int one":
        args = (x, 1, 0.5)
    elif change == "int width":
        args = (x, 2**32, 0.5)
    elif change == "constexpr":
        consts = dict(BLOCK=64, num_warps=4)
    elif change == "constexpr type":
        consts = dict(BLOCK=32.0, num_warps=4)
    elif change == "option":
        consts = dict(BLOCK=32, num_warps=8)
    elif change == "dtype":
        args = (x.double(), 128, 0.5)
    elif change == "alignment":              # 4 bytes past a 16-byte boundary
        args = (x[1:], 128, 0.5)
        assert args[0].data_ptr() % 16 and x.data_ptr() % 16 == 0
    else:
        CURRENT["device"] = 1
    launch_mod.launch(kernel, (1, 1, 1), args, consts)
    assert len(kernel.jit_launches) == 2 and not kernel.compiled.runs


def test_what_triton_does_not_specialise_on_shares_the_kernel(kernel, monkeypatch):
    """A float, an int that stays a multiple of 16 (or not), a do_not_specialize int: the compiled
    kernel is reused, with this call's values."""
    x = torch.zeros(64)
    launch_mod.launch(kernel, (1, 1, 1), (x, 128, 0.5), dict(BLOCK=32))
    launch_mod.launch(kernel, (1, 1, 1), (x, 144, 0.25), dict(BLOCK=32))
    launch_mod.launch(kernel, (1, 1, 1), (x, 17, 0.25), dict(BLOCK=32))      # not a multiple of 16: Triton's path
    launch_mod.launch(kernel, (1, 1, 1), (x, 33, 0.25), dict(BLOCK=32))
    assert len(kernel.jit_launches) == 2
    assert kernel.compiled.runs == [((1, 1, 1), (x, 144, 0.25, 32)), ((1, 1, 1), (x, 33, 0.25, 32))]
    plain = FakeKernel(n_plain=True)
    for n in (16, 17, 1):
        launch_mod.launch(plain, (1, 1, 1), (x, n, 0.5), dict(BLOCK=32))
    assert len(plain.jit_launches) == 1 and [args[1] for _, args in plain.compiled.runs] == [17, 1]


def test_rocm_keys_whether_storage_lies_within_2gib(kernel, monkeypatch):
    """Triton on AMD compiles 32-bit buffer offsets for storage of at most 2 GiB: a call past it
    must not reuse the kernel of a smaller one (the key takes the HIP backend's specialisation;
    meta tensors stand in for the large one)."""
    monkeypatch.setattr(launch_mod, "_backend", lambda device: make_backend(GPUTarget("hip", "gfx942", 64)))
    small, large = torch.zeros(16), torch.empty(2**31 + 64, dtype=torch.int8, device="meta").view(torch.float32)
    for x in (small, torch.ones(16), large):
        launch_mod.launch(kernel, (1, 1, 1), (x, 16, 0.5), dict(BLOCK=16))
    assert len(kernel.jit_launches) == 2 and len(kernel.compiled.runs) == 1


def test_a_kernel_left_to_its_constexpr_defaults_always_takes_tritons_path(kernel):
    for _ in range(2):
        launch_mod.launch(kernel, (1, 1, 1), (torch.zeros(4), 4, 1.0), {})      # BLOCK: Triton's default
    assert len(kernel.jit_launches) == 2 and not kernel.compiled.runs


def test_every_launch_site_passes_every_constexpr(monkeypatch):
    """The launchers in backends/triton hand every parameter over, runtime ones positionally (else
    the direct path could not key or rebuild the arguments and would never be taken): forward,
    backward and fp8 quantisation, in the interpreter on the CPU, compiled on a GPU; the Gluon
    launchers on the GPU (test below)."""
    from attn_check import rand
    import fa_ck
    plans = importlib.import_module("fa_ck.backends.triton.plans")
    seen = []

    def recording(kernel, grid, args, constexprs):
        missing = set(kernel.arg_names[len(args):]) - set(constexprs)
        lead = list(inspect.signature(kernel.fn).parameters.values())[:len(args)]
        if len(lead) < len(args) or any(p.annotation is not inspect.Parameter.empty for p in lead):
            # (what launch._param_flags asks of a compiled kernel's params: no constexpr, no annotation)
            missing.add("(a constexpr or annotated leading parameter)")
        seen.append((getattr(kernel, "__name__", kernel), missing))
        return launch_mod.launch(kernel, grid, args, constexprs)
    monkeypatch.setattr(plans, "launch", recording)
    # the interpreter on the CPU; on a GPU compiled kernels (CPU tensors cannot reach them)
    device, dtype = ("cuda", torch.bfloat16) if GPU else ("cpu", torch.float32)
    q, k, v = (rand(1, 20, 2, 32, dtype=dtype, device=device) for _ in range(3))
    fa_ck.flash_attn_func(q, k, v, causal=True).sum().backward()
    fa_ck.flash_attn_fp8_func(q.detach(), k.detach(), v.detach(), causal=True)
    assert len(seen) >= 6 and all(not missing for _, missing in seen), seen


def test_gluon_kernels_can_take_the_direct_path():
    """Gluon kernels compile even under the interpreter: their runtime parameters all come
    first and are plain (no constexpr or annotation among them), as launch._param_flags needs."""
    gluon = importlib.import_module("fa_ck.backends.triton.launch_gluon")
    if gluon._GLUON_ERROR:
        pytest.skip(f"no Gluon in this Triton: {gluon._GLUON_ERROR}")
    for kernel in (gluon.fwd_gluon_kernel, gluon.bwd_dkdv_gluon_kernel, gluon.bwd_dq_gluon_kernel):
        n = sum(not p.is_constexpr for p in kernel.params)
        assert all(p.is_constexpr for p in kernel.params[n:]), kernel
        assert launch_mod._param_flags(kernel, n) is not None, kernel


def test_the_interpreter_always_takes_tritons_path(kernel, monkeypatch):
    monkeypatch.setattr(launch_mod, "INTERPRET", True)
    for _ in range(2):
        launch_mod.launch(kernel, (1, 1, 1), (torch.zeros(4), 4, 1.0), dict(BLOCK=16))
    assert len(kernel.jit_launches) == 2 and not kernel.compiled.runs


def test_ints_floats_and_bools_that_compare_equal_stay_apart(kernel):
    x = torch.zeros(4)
    for n in (1, 1.0, True):
        launch_mod.launch(kernel, (1, 1, 1), (x, n, 0.5), dict(BLOCK=16))
    for block in (16.0, True):               # constexprs too: 16 above
        launch_mod.launch(kernel, (1, 1, 1), (x, 1, 0.5), dict(BLOCK=block))
    assert len(kernel.jit_launches) == 5 and not kernel.compiled.runs


# ---------------------------------------------------------------------------- on a GPU

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_repeated_calls_take_the_direct_path_and_stay_right(monkeypatch, d):
    """Three calls of one shape on fresh inputs (forward and backward against the float64
    reference): the later ones launch every kernel directly. Then the same shape from unaligned
    storage: Triton's path (its pointers are not 16-byte aligned), right too. (Replays straight to
    the driver are off here: test_driver_launch.py checks them against this path.)"""
    from attn_check import check
    from fa_ck import reference
    plans = importlib.import_module("fa_ck.backends.triton.plans")
    monkeypatch.setenv("FA_CK_DIRECT_LAUNCH", "0")
    monkeypatch.setattr(launch_mod, "_COMPILED", {})
    direct, total = [], []
    real = launch_mod.driver

    class Counting:                           # only the direct path asks launch.py's driver for the stream
        class active:
            get_current_device = staticmethod(real.active.get_current_device)

            @staticmethod
            def get_current_stream(device):
                direct.append(device)
                return real.active.get_current_stream(device)
    monkeypatch.setattr(launch_mod, "driver", Counting)
    monkeypatch.setattr(plans, "launch", lambda *a: (total.append(1), launch_mod.launch(*a))[1])
    # (the third call replays its plan into the compiled kernels: run_compiled, the direct path too)
    monkeypatch.setattr(plans, "run_compiled", lambda *a: (total.append(1), launch_mod.run_compiled(*a))[1])
    for i in range(3):
        before = len(direct), len(total)
        check(2, 300, 333, 4, 2, d, dtype=torch.bfloat16, device="cuda", causal=True)
        launched, went_direct = len(total) - before[1], len(direct) - before[0]
        assert launched >= 4 and went_direct == (0 if i == 0 else launched), (i, launched, went_direct)
    import fa_ck
    x = torch.randn(3 * 2 * 300 * 4 * d + 1, device="cuda").to(torch.bfloat16)
    q, k, v = (x[1 + i * 2 * 300 * 4 * d:][:2 * 300 * 4 * d].view(2, 300, 4, d) for i in range(3))
    assert q.data_ptr() % 16
    out = fa_ck.flash_attn_func(q, k, v, causal=True)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=True, dtype=torch.float64)
    assert ((out.double() - ref).norm() / ref.norm()).item() < 1e-2
