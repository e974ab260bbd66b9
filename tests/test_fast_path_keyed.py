"""fast_path/keyed.py: a repeated launch skips Triton's binding only when nothing Triton
specialises on has changed; where this Triton lacks (or has changed) what the key or the launch
relies on, it warns once and takes Triton's launcher. A stand-in kernel records which path each
launch took (runs on the CPU; the GPU test runs the real kernels through it, each shape more than
once). Also here: fast_path.launch and its switch, FA_CK_FAST_PATH."""
import importlib
import inspect
import types
import warnings

import pytest
import torch
from conftest import GPU
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend
from triton.runtime.jit import KernelInterface

import fake_sm90

fast_path = importlib.import_module("fa_ck.backends.triton.fast_path")
keyed = importlib.import_module("fa_ck.backends.triton.fast_path.keyed")
device = importlib.import_module("fa_ck.backends.triton.device")
gluon_launch = importlib.import_module("fa_ck.backends.triton.gluon_launch")


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
    """A FakeKernel, keyed.py as on an sm90 GPU (Triton's driver faked), its state fresh and
    restored after the test (a fallback a test provokes must not stay)."""
    monkeypatch.setattr(device, "INTERPRET", False)
    CURRENT["device"] = 0
    active = types.SimpleNamespace(get_current_device=lambda: CURRENT["device"],
                                   get_current_stream=lambda device: "stream7")
    monkeypatch.setattr(keyed, "driver", types.SimpleNamespace(active=active))
    monkeypatch.setattr(keyed, "_COMPILED", {})
    monkeypatch.setattr(keyed, "_FLAGS", {})
    monkeypatch.setattr(keyed, "_MISSING", "")
    monkeypatch.setitem(keyed._STATE, "problem", "")
    monkeypatch.setitem(keyed._STATE, "warned", False)
    monkeypatch.setattr(keyed, "_backend", lambda device: make_backend(GPUTarget("cuda", 90, 32)))
    return FakeKernel()


def test_repeated_launch_goes_straight_to_the_compiled_kernel(kernel):
    x1, x2 = torch.zeros(64), torch.ones(64)
    keyed.launch(kernel, (4, 2, 1), (x1, 128, 0.5), dict(BLOCK=32, num_warps=4))
    keyed.launch(kernel, (4, 2, 1), (x2, 128, 0.5), dict(BLOCK=32, num_warps=4))
    assert len(kernel.jit_launches) == 1
    # every parameter in signature order (the constexpr too), launch options left out
    assert kernel.compiled.runs == [((4, 2, 1), (x2, 128, 0.5, 32))]


def test_launch_returns_the_compiled_kernel_and_takes_it_back(kernel):
    """launch() -> the compiled kernel (first launch and repeated ones); given it back (as a plan
    does), it launches it without keying; run_compiled hands it the arguments the same way; None
    where Triton's path is taken every time."""
    x1, x2 = torch.zeros(64), torch.ones(64)
    consts = dict(BLOCK=32, num_warps=4)
    assert keyed.launch(kernel, (4, 2, 1), (x1, 128, 0.5), consts) is kernel.compiled
    assert keyed.launch(kernel, (4, 2, 1), (x1, 128, 0.5), consts) is kernel.compiled
    keyed.run_compiled(kernel.compiled, kernel, (4, 2, 1), (x2, 128, 0.5), consts)
    keyed._COMPILED.clear()                      # (given the compiled kernel, no key is looked up)
    assert keyed.launch(kernel, (4, 2, 1), (x1, 64, 0.5), consts, kernel.compiled) is kernel.compiled
    assert len(kernel.jit_launches) == 1
    assert kernel.compiled.runs == [((4, 2, 1), (x1, 128, 0.5, 32)), ((4, 2, 1), (x2, 128, 0.5, 32)),
                                    ((4, 2, 1), (x1, 64, 0.5, 32))]
    assert keyed.launch(kernel, (4, 2, 1), (x1, 128, 0.5), dict(num_warps=4)) is None   # BLOCK left to Triton


def test_run_compiled_takes_a_grid_of_fewer_dimensions(kernel):
    """A 1-D or 2-D grid, as kernel[grid] takes it, runs with the missing dimensions 1."""
    x = torch.zeros(64)
    keyed.launch(kernel, (5,), (x, 128, 0.5), dict(BLOCK=32, num_warps=4))
    keyed.launch(kernel, (5,), (x, 128, 0.5), dict(BLOCK=32, num_warps=4))
    keyed.run_compiled(kernel.compiled, kernel, (3, 2), (x, 128, 0.5), dict(BLOCK=32, num_warps=4))
    assert [grid for grid, _ in kernel.compiled.runs] == [(5, 1, 1), (3, 2, 1)]


@pytest.mark.parametrize("change", ["int multiple of 16", "int one", "int width", "constexpr", "constexpr type",
                                    "option", "dtype", "alignment", "current device"])
def test_anything_triton_specialises_on_takes_tritons_path(kernel, change):
    x = torch.zeros(64)
    args, consts = (x, 128, 0.5), dict(BLOCK=32, num_warps=4)
    keyed.launch(kernel, (1, 1, 1), args, consts)
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
    keyed.launch(kernel, (1, 1, 1), args, consts)
    assert len(kernel.jit_launches) == 2 and not kernel.compiled.runs


def test_what_triton_does_not_specialise_on_shares_the_kernel(kernel):
    """A float, an int that stays a multiple of 16 (or not), a do_not_specialize int: the compiled
    kernel is reused, with this call's values."""
    x = torch.zeros(64)
    keyed.launch(kernel, (1, 1, 1), (x, 128, 0.5), dict(BLOCK=32))
    keyed.launch(kernel, (1, 1, 1), (x, 144, 0.25), dict(BLOCK=32))
    keyed.launch(kernel, (1, 1, 1), (x, 17, 0.25), dict(BLOCK=32))      # not a multiple of 16: Triton's path
    keyed.launch(kernel, (1, 1, 1), (x, 33, 0.25), dict(BLOCK=32))
    assert len(kernel.jit_launches) == 2
    assert kernel.compiled.runs == [((1, 1, 1), (x, 144, 0.25, 32)), ((1, 1, 1), (x, 33, 0.25, 32))]
    plain = FakeKernel(n_plain=True)
    for n in (16, 17, 1):
        keyed.launch(plain, (1, 1, 1), (x, n, 0.5), dict(BLOCK=32))
    assert len(plain.jit_launches) == 1 and [args[1] for _, args in plain.compiled.runs] == [17, 1]


def test_rocm_keys_whether_storage_lies_within_2gib(kernel, monkeypatch):
    """Triton on AMD compiles 32-bit buffer offsets for storage of at most 2 GiB: a call past it
    must not reuse the kernel of a smaller one (the key takes the HIP backend's specialisation;
    meta tensors stand in for the large one)."""
    monkeypatch.setattr(keyed, "_backend", lambda device: make_backend(GPUTarget("hip", "gfx942", 64)))
    small, large = torch.zeros(16), torch.empty(2**31 + 64, dtype=torch.int8, device="meta").view(torch.float32)
    for x in (small, torch.ones(16), large):
        keyed.launch(kernel, (1, 1, 1), (x, 16, 0.5), dict(BLOCK=16))
    assert len(kernel.jit_launches) == 2 and len(kernel.compiled.runs) == 1


def test_a_kernel_left_to_its_constexpr_defaults_always_takes_tritons_path(kernel):
    for _ in range(2):
        keyed.launch(kernel, (1, 1, 1), (torch.zeros(4), 4, 1.0), {})      # BLOCK: Triton's default
    assert len(kernel.jit_launches) == 2 and not kernel.compiled.runs


def test_the_interpreter_always_takes_tritons_path(kernel, monkeypatch):
    monkeypatch.setattr(device, "INTERPRET", True)
    for _ in range(2):
        keyed.launch(kernel, (1, 1, 1), (torch.zeros(4), 4, 1.0), dict(BLOCK=16))
    assert len(kernel.jit_launches) == 2 and not kernel.compiled.runs


def test_ints_floats_and_bools_that_compare_equal_stay_apart(kernel):
    x = torch.zeros(4)
    for n in (1, 1.0, True):
        keyed.launch(kernel, (1, 1, 1), (x, n, 0.5), dict(BLOCK=16))
    for block in (16.0, True):               # constexprs too: 16 above
        keyed.launch(kernel, (1, 1, 1), (x, 1, 0.5), dict(BLOCK=block))
    assert len(kernel.jit_launches) == 5 and not kernel.compiled.runs


# ---------------------------------------------------------------------------- fallbacks

def _launch_three_times(kernel) -> list:
    """Three launches of one specialisation -> the RuntimeWarnings they raised."""
    x = torch.zeros(64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            keyed.launch(kernel, (2, 1, 1), (x, 128, 0.5), dict(BLOCK=32))
    return [w for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("error", [TypeError, AttributeError])
def test_a_launcher_that_changed_warns_once_and_takes_tritons_path(kernel, monkeypatch, error):
    """A Triton whose compiled kernels are launched otherwise (run_compiled raises before launching):
    that launch and every later one go through kernel[grid], with one warning."""
    def changed(*a, **kw):
        raise error("run() takes 9 positional arguments")
    monkeypatch.setattr(keyed, "run_compiled", changed)
    caught = _launch_three_times(kernel)
    assert len(caught) == 1 and "Triton's own launcher" in str(caught[0].message)
    assert len(kernel.jit_launches) == 3 and not kernel.compiled.runs
    assert keyed._STATE["problem"].startswith(error.__name__)
    other = FakeKernel()                                   # other kernels too, without another warning
    assert not _launch_three_times(other) and len(other.jit_launches) == 3


def test_a_triton_without_what_the_key_needs_warns_once_and_takes_tritons_path(kernel, monkeypatch):
    """keyed.py's imports failed (a Triton without native_specialize_impl, ...): every launch is
    kernel[grid], with one warning naming what is missing."""
    monkeypatch.setattr(keyed, "_MISSING", "ImportError: cannot import name 'native_specialize_impl'")
    monkeypatch.setitem(keyed._STATE, "problem", keyed._MISSING)
    caught = _launch_three_times(kernel)
    assert len(caught) == 1 and "native_specialize_impl" in str(caught[0].message)
    assert len(kernel.jit_launches) == 3 and not kernel.compiled.runs


def test_a_specialisation_that_changed_warns_once_and_takes_tritons_path(kernel, monkeypatch):
    """native_specialize_impl there but taking other arguments: the key cannot be made, so every
    launch is kernel[grid], with one warning."""
    monkeypatch.setattr(keyed, "native_specialize_impl", lambda *a: (_ for _ in ()).throw(
        TypeError("native_specialize_impl() takes 6 positional arguments")))
    caught = _launch_three_times(kernel)
    assert len(caught) == 1 and "native_specialize_impl" in str(caught[0].message)
    assert len(kernel.jit_launches) == 3 and not kernel.compiled.runs and not keyed._COMPILED


# ---------------------------------------------------------------------------- the switch

def test_fast_path_launch_follows_its_switch(kernel, monkeypatch):
    """fast_path.launch: keyed launches by default; with FA_CK_FAST_PATH=0 (read per call)
    kernel[grid](*args, **constexprs), keyed.py not asked."""
    x = torch.zeros(64)
    monkeypatch.delenv("FA_CK_FAST_PATH", raising=False)
    for _ in range(2):
        fast_path.launch(kernel, (1,), (x, 16, 0.5), dict(BLOCK=32))
    assert len(kernel.jit_launches) == 1 and len(kernel.compiled.runs) == 1
    monkeypatch.setenv("FA_CK_FAST_PATH", "0")
    monkeypatch.setattr(keyed, "launch", lambda *a, **kw: pytest.fail("keyed.launch with the fast path off"))
    for _ in range(2):
        fast_path.launch(kernel, (1,), (x, 16, 0.5), dict(BLOCK=32))
    assert kernel.jit_launches[1:] == [((1,), (x, 16, 0.5), dict(BLOCK=32))] * 2


def test_with_the_fast_path_off_nothing_is_recorded_and_every_launch_is_tritons(monkeypatch):
    """FA_CK_FAST_PATH=0 on the (faked) sm90 path: repeated forwards and backwards, fp8 too, each
    take the slow path (no plan recorded or replayed) and every launch is kernel[grid](...)."""
    log = fake_sm90.install(monkeypatch)
    monkeypatch.setenv("FA_CK_FAST_PATH", "0")
    grids = []
    monkeypatch.setattr(KernelInterface, "__getitem__",
                        lambda self, grid: lambda *args, **kwargs: grids.append((self, grid)))
    from fa_ck.params import AttnParams
    q, k, v = fake_sm90.inputs(d=64)
    per_call = []
    for fp8 in (False, True):
        p = AttnParams(scale=0.125, causal=True, window_right=0, fp8=fp8)
        assert fast_path.plan_key("fwd", p, False, (q, k, v), ()) is None
        for _ in range(3):
            start = len(grids)
            out, lse = fake_sm90.tb.forward(q, k, v, p)
            if not fp8:
                fake_sm90.tb.backward(torch.randn_like(out), q, k, v, out, lse, p)
            per_call.append([kernel.fn.__name__ for kernel, _ in grids[start:]])
    assert log.slow == ["forward", "backward"] * 3 + ["forward"] * 3
    assert set(log) <= {"set_allocator"}                     # (the fake's keyed.launch: never called)
    assert per_call[0] == per_call[1] == per_call[2] and per_call[3] == per_call[4] == per_call[5]
    assert "bwd_preprocess" in per_call[0] and per_call[3][:2] == ["amax_kernel", "quantize_kernel"]


# ---------------------------------------------------------------------------- every launch site

def test_every_launch_site_passes_every_constexpr(monkeypatch):
    """The launchers in backends/triton hand every parameter over, runtime ones positionally (else
    keyed.py could not key or rebuild the arguments and would never skip Triton's binding): forward,
    backward and fp8 quantisation, in the interpreter on the CPU, compiled on a GPU; the Gluon
    launchers on the GPU (test below)."""
    from attn_check import rand
    import fa_ck
    real, seen = keyed.launch, []

    def recording(kernel, grid, args, constexprs, compiled=None):
        missing = set(kernel.arg_names[len(args):]) - set(constexprs)
        lead = list(inspect.signature(kernel.fn).parameters.values())[:len(args)]
        if len(lead) < len(args) or any(p.annotation is not inspect.Parameter.empty for p in lead):
            # (what keyed.py asks of a kernel's leading params: no constexpr, no annotation)
            missing.add("(a constexpr or annotated leading parameter)")
        seen.append((getattr(kernel, "__name__", kernel), missing))
        return real(kernel, grid, args, constexprs, compiled)
    monkeypatch.setattr(keyed, "launch", recording)
    monkeypatch.delenv("FA_CK_FAST_PATH", raising=False)
    fast_path.clear()
    # the interpreter on the CPU; on a GPU compiled kernels (CPU tensors cannot reach them)
    dev, dtype = ("cuda", torch.bfloat16) if GPU else ("cpu", torch.float32)
    q, k, v = (rand(1, 20, 2, 32, dtype=dtype, device=dev) for _ in range(3))
    fa_ck.flash_attn_func(q, k, v, causal=True).sum().backward()
    fa_ck.flash_attn_fp8_func(q.detach(), k.detach(), v.detach(), causal=True)
    assert len(seen) >= 6 and all(not missing for _, missing in seen), seen


def test_gluon_kernels_can_be_keyed():
    """Gluon kernels compile even under the interpreter: their runtime parameters all come first and
    are plain (no constexpr or annotation among them), as keyed.py needs to key them."""
    if gluon_launch.GLUON_ERROR:
        pytest.skip(f"no Gluon in this Triton: {gluon_launch.GLUON_ERROR}")
    for kernel in (gluon_launch.fwd_gluon_kernel, gluon_launch.bwd_dkdv_gluon_kernel,
                   gluon_launch.bwd_dq_gluon_kernel):
        n = sum(not p.is_constexpr for p in kernel.params)
        assert all(p.is_constexpr for p in kernel.params[n:]), kernel
        assert not any(p.annotation_type for p in kernel.params[:n]), kernel


# ---------------------------------------------------------------------------- on a GPU

@pytest.mark.skipif(not GPU, reason="needs a GPU")
@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_repeated_calls_go_straight_to_the_compiled_kernels_and_stay_right(monkeypatch, d):
    """Three calls of one shape on fresh inputs (forward and backward against the float64
    reference): the later ones launch every kernel through run_compiled. Then the same shape from
    unaligned storage: Triton's path (its pointers are not 16-byte aligned), right too. (Replays
    straight to the driver are off here: test_fast_path_driver.py checks them against this path.)"""
    from attn_check import check, rel_err
    from fa_ck import reference
    import fa_ck
    driver = importlib.import_module("fa_ck.backends.triton.fast_path.driver")
    monkeypatch.delenv("FA_CK_FAST_PATH", raising=False)
    monkeypatch.setattr(driver.DirectLaunch, "make", classmethod(lambda cls, *a: None))
    monkeypatch.setattr(keyed, "_COMPILED", {})
    fast_path.clear()
    total, direct = [], []
    real_launch, real_run = keyed.launch, keyed.run_compiled
    monkeypatch.setattr(keyed, "launch", lambda *a: (total.append(1), real_launch(*a))[1])
    monkeypatch.setattr(keyed, "run_compiled", lambda *a, **kw: (direct.append(1), real_run(*a, **kw))[1])
    for i in range(3):
        before = len(direct), len(total)
        check(2, 300, 333, 4, 2, d, dtype=torch.bfloat16, device="cuda", causal=True)
        launched, went_direct = len(total) - before[1], len(direct) - before[0]
        assert launched >= 4 and went_direct == (0 if i == 0 else launched), (i, launched, went_direct)
    x = torch.randn(3 * 2 * 300 * 4 * d + 1, device="cuda").to(torch.bfloat16)
    q, k, v = (x[1 + i * 2 * 300 * 4 * d:][:2 * 300 * 4 * d].view(2, 300, 4, d) for i in range(3))
    assert q.data_ptr() % 16
    out = fa_ck.flash_attn_func(q, k, v, causal=True)
    ref, _ = reference.attention(q.double(), k.double(), v.double(), causal=True, dtype=torch.float64)
    assert rel_err(out, ref) < 1e-2
