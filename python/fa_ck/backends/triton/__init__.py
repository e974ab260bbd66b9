"""The triton backend: our FlashAttention-2 kernels (forward.py, backward.py), launched here.

Runs on NVIDIA and AMD GPUs, and on the CPU under TRITON_INTERPRET=1 (set before import),
which is how CI tests the kernels themselves.
"""
from __future__ import annotations

import contextlib
import math
import os
import struct
import threading

import torch

from ...params import FP8_DTYPES, AttnParams
from . import configs, tuning
from .launch import launch, run_compiled

NAME = "triton"
MAX_HEAD_DIM = 256
MAX_GRID_Z = 65535        # batch entries (or varlen sequences) are the grid's z
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

try:
    import triton
    from .backward import bwd_dkdv_kernel, bwd_dq_kernel, bwd_preprocess
    from .forward import fwd_kernel
    _IMPORT_ERROR = ""
except Exception as e:  # no triton, or a triton too old for our kernels
    _IMPORT_ERROR = f"{type(e).__name__}: {e}"
try:                      # where Triton keeps its allocator (see _tma_allocator)
    from triton.runtime import _allocation
except ImportError:
    _allocation = None
try:
    from .backward_gluon import bwd_dkdv_gluon_kernel, bwd_dq_gluon_kernel
    from .forward_gluon import fwd_gluon_kernel
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    _GLUON_ERROR = ""
except Exception as e:  # a Triton without Gluon's Hopper API: forward.py serves every call
    _GLUON_ERROR = f"{type(e).__name__}: {e}"


def available() -> tuple[bool, str]:
    if _IMPORT_ERROR:
        return False, f"triton is not importable ({_IMPORT_ERROR})"
    if configs.INTERPRET:
        return True, "TRITON_INTERPRET=1: kernels run in the interpreter on CPU tensors"
    if not torch.cuda.is_available():
        return False, "no GPU (set TRITON_INTERPRET=1 before importing fa_ck to run the kernels on the CPU)"
    return True, ""


def unsupported(q, k, v, p: AttnParams) -> str | None:
    ok, why = available()
    if not ok:
        return why
    if q.device.type == "cpu" and not configs.INTERPRET:
        return "CPU tensors (outside TRITON_INTERPRET=1)"
    if q.device.type not in ("cpu", "cuda"):
        return f"{q.device.type} tensors"
    if q.dtype not in _DTYPES and not (p.fp8 and q.dtype in FP8_DTYPES):
        return f"dtype {q.dtype}"
    batch = p.cu_seqlens_q.numel() - 1 if p.varlen else q.shape[0]
    if batch > MAX_GRID_Z:
        return f"{'sequences' if p.varlen else 'batch'} {batch} (the launch grid's z holds {MAX_GRID_Z})"
    if q.shape[-1] > MAX_HEAD_DIM or v.shape[-1] != q.shape[-1]:
        return f"head_dim {q.shape[-1]} (supported: 1..{MAX_HEAD_DIM}, same for q, k and v)"
    if p.fp8:
        native = configs.fp8_dtype(q.device)
        if native is None:
            return f"fp8 on {configs.arch(q.device)} (no fp8 matrix instructions)"
        if q.dtype in FP8_DTYPES and q.dtype != native:
            return f"fp8 inputs in {q.dtype} (this device multiplies {native})"
        if p.varlen:
            return "fp8 with varlen (per-sequence scales are not implemented)"
        if p.dropout_p > 0:
            return "fp8 with dropout (not implemented)"
    return None


def quantize_fp8(x: torch.Tensor, dtype: torch.dtype, keys_contiguous: bool = False):
    """x (B, S, H, D) -> (x in fp8 `dtype`, descale (B, H) float32), one scale per (batch, head):
    scale = fp8 max / amax, so the largest |x| lands on the format's max; x ~= x8 * descale.
    keys_contiguous (for v): the same logical tensor stored (B, H, D, S) in memory. Two kernels
    (quantize.py): the amax, then the scaled, rounded copy."""
    from .quantize import amax_kernel, quantize_kernel
    b, s, h, d = x.shape
    fmax = torch.finfo(dtype).max
    x8 = _empty_bshd((b, s, h, d), dtype, x.device, keys_contiguous)
    if not x.numel():        # torch's amax of nothing is 0: the scale of an all-zero head
        return x8, 1.0 / (fmax / torch.zeros((b, h), dtype=torch.float32, device=x.device).clamp_min(1e-12))
    # the interpreter has no fnuz type and a wrong fp32 -> fp8 cast: there the kernel writes the
    # values already on the fp8 grid in float32, and torch's cast of them is exact
    out = _empty_bshd((b, s, h, d), torch.float32, x.device, keys_contiguous) if configs.INTERPRET else x8
    if x.stride(-1) != 1:
        x = x.contiguous()
    amax_bits = torch.zeros((b, h), dtype=torch.int32, device=x.device)
    descale = torch.empty((b, h), dtype=torch.float32, device=x.device)
    block_s = 16 if configs.INTERPRET else 64
    grid = (_cdiv(s, block_s), h, b)
    block_d = triton.next_power_of_2(d)
    _launch(amax_kernel, grid, (x, amax_bits, x.stride(0), x.stride(1), x.stride(2), s, d, h),
            dict(BLOCK_S=block_s, BLOCK_D=block_d))
    emin = (-7 if dtype == torch.float8_e4m3fnuz else -6) if configs.INTERPRET else 0
    _launch(quantize_kernel, grid,
            (x, out, amax_bits, descale, x.stride(0), x.stride(1), x.stride(2), *out.stride(), s, d, h, fmax),
            dict(BLOCK_S=block_s, BLOCK_D=block_d, ROUND_EMIN=emin))
    if out is not x8:
        x8.copy_(out)
    return x8, descale


def _empty_bshd(shape, dtype, device, keys_contiguous: bool) -> torch.Tensor:
    """An uninitialised (B, S, H, D) tensor; keys_contiguous: stored (B, H, D, S) in memory, each
    row of keys padded to a multiple of 16 elements so that TMA can address it (fp8's v: rows of
    S bytes, which the Gluon forward could not take at S = 300)."""
    b, s, h, d = shape
    if keys_contiguous:
        padded = -(-s // 16) * 16
        return torch.empty((b, h, d, padded), dtype=dtype, device=device)[..., :s].permute(0, 3, 1, 2)
    return torch.empty(shape, dtype=dtype, device=device)


def _keys_contiguous(v: torch.Tensor) -> torch.Tensor:
    """v (B, S, H, D) with stride(1) == 1 (see forward.py), copied only when it is not already."""
    if v.stride(1) == 1 or v.shape[1] <= 1:
        return v
    return _empty_bshd(v.shape, v.dtype, v.device, True).copy_(v)


def _fp8_inputs(q, k, v, p: AttnParams):
    """(q8, k8, v8, q_descale, k_descale, v_descale, out dtype) for the fp8 kernel."""
    if q.dtype in FP8_DTYPES:
        b, hq, hkv = q.shape[0], q.shape[2], k.shape[2]
        ones = lambda h: torch.ones((b, h), dtype=torch.float32, device=q.device)  # noqa: E731
        qd = p.q_descale if p.q_descale is not None else ones(hq)
        kd = p.k_descale if p.k_descale is not None else ones(hkv)
        vd = p.v_descale if p.v_descale is not None else ones(hkv)
        return (q, k, _keys_contiguous(v), qd.contiguous(), kd.contiguous(), vd.contiguous(),
                p.out_dtype or torch.bfloat16)
    dtype = configs.fp8_dtype(q.device)
    (q8, qd), (k8, kd) = (quantize_fp8(t, dtype) for t in (q, k))
    v8, vd = quantize_fp8(v, dtype, keys_contiguous=True)
    return q8, k8, v8, qd, kd, vd, q.dtype


_GUARD = 4096          # elements of NaN canary on each side of a poisoned buffer
_canaries: list = []


def _poisoning() -> bool:
    return os.environ.get("FA_CK_POISON") == "1"


def _empty(shape, dtype, device, poison: bool):
    """Output buffers. poison (FA_CK_POISON=1, tests; read once per call by _poisoning) fills them
    with NaN and surrounds them with NaN canaries: an element the kernels never write cannot pass
    for a right answer, and a write past either end is caught by _check_canaries()."""
    if not poison:
        return torch.empty(shape, dtype=dtype, device=device)
    n = math.prod(shape)
    buf = torch.full((n + 2 * _GUARD,), float("nan"), dtype=dtype, device=device)
    _canaries.append(buf)
    return buf[_GUARD:_GUARD + n].view(shape)


def _check_canaries(what: str):
    """Raise if a kernel wrote outside an output buffer (poison mode only)."""
    bufs, _canaries[:] = list(_canaries), []
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        return                               # reading them would sync inside a CUDA graph capture
    for buf in bufs:
        guards = torch.cat([buf[:_GUARD], buf[-_GUARD:]])
        if not torch.isnan(guards.float()).all():
            raise RuntimeError(f"fa_ck triton {what}: a kernel wrote outside its output buffer")


def _flags(q, p: AttnParams, head_dim: int) -> dict:
    bd = configs.fp8_block_d(head_dim) if p.fp8 else configs.block_d(head_dim)
    return dict(
        BLOCK_D=bd, EVEN_D=bd == head_dim,
        VARLEN=p.varlen, SOFTCAP=p.softcap > 0, ALIBI=p.alibi_slopes is not None,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0, DROPOUT=p.dropout_p > 0,
        DOT_F32=configs.INTERPRET and q.dtype in (torch.bfloat16, *FP8_DTYPES),
    )


def _scalars(p: AttnParams) -> dict:
    log2e = 1.0 / math.log(2.0)
    cap = p.softcap if p.softcap > 0 else 1.0
    return dict(scale_log2=p.scale * log2e, softcap_in=p.scale / cap, softcap_out=cap * log2e,
                window_left=p.window_left, window_right=p.window_right, dropout_p=float(p.dropout_p))


def _shape(q, k, p: AttnParams):
    """(batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, 4-D strides helper)."""
    if p.varlen:
        return p.cu_seqlens_q.numel() - 1, p.max_seqlen_q, p.max_seqlen_k, q.shape[1], k.shape[1], q.shape[2]
    return q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]


def _strides(t, varlen: bool):
    """(batch, seq, head) strides; a packed varlen tensor has no batch stride."""
    st = t.stride()
    return (0, st[0], st[1]) if varlen else st[:3]


def _lse_strides(lse, varlen: bool):
    return (0, lse.stride(0)) if varlen else (lse.stride(0), lse.stride(1))


_PLACEHOLDERS: dict = {}


def _placeholders(device):
    """Stand-ins for absent tensor arguments, made once per device (fresh ones cost a fill
    kernel and allocations on every call); kernels never read them: their switches (VARLEN,
    ALIBI, DROPOUT) are off. Empty, not zeroed: made inside a CUDA graph capture, a fill would
    not run until replay."""
    if device not in _PLACEHOLDERS:
        _PLACEHOLDERS[device] = (torch.empty(0, dtype=torch.int32, device=device),
                                 torch.empty(0, dtype=torch.float32, device=device),
                                 torch.empty(2, dtype=torch.int64, device=device))
    return _PLACEHOLDERS[device]


def _extras(q, p: AttnParams):
    dummy, no_slopes, no_rng = _placeholders(q.device)
    slopes = p.alibi_slopes if p.alibi_slopes is not None else no_slopes
    slope_stride = slopes.stride(0) if slopes.dim() == 2 else 0
    rng = p.rng if p.rng is not None else no_rng
    cu_q = p.cu_seqlens_q if p.varlen else dummy
    cu_k = p.cu_seqlens_k if p.varlen else dummy
    return slopes, slope_stride, rng, cu_q, cu_k


_CONFIGS: dict = {}


def _config(kernel: str, q, head_dim: int, p: AttnParams, sq: int, sk: int, tma_possible: bool,
            bench=None, gluon_possible: bool = False) -> dict:
    """The kernel's switches (defaults, then FA_CK_TRITON_CONFIG; TMA only where `tma_possible`,
    the Gluon forward only where `gluon_possible`, no one pass for deterministic calls), then
    tiles: the heuristic for those switches, or autotuned when switched on, with any
    FA_CK_TRITON_CONFIG tiles on top.
    Without autotune the answer is remembered per everything it reads: working it out took
    ~25 us of host time per kernel and call (h200-20261130-sixth call 1)."""
    autotune = bench is not None and tuning.autotune_enabled()
    key = None if autotune else (kernel, configs.arch(q.device), q.dtype, head_dim, p.fp8, p.has_window, p.deterministic,
                                 configs.gluon_wins(kernel, head_dim, sk, p.has_window),
                                 configs.dkdv_host_desc_wins(head_dim, p.has_window, sk), tma_possible,
                                 gluon_possible, os.environ.get("FA_CK_TRITON_CONFIG", ""))
    if key not in _CONFIGS:
        cfg = _work_out_config(kernel, q, head_dim, p, sq, sk, tma_possible, bench, gluon_possible)
        if key is None:
            return cfg
        _CONFIGS[key] = cfg
    return dict(_CONFIGS[key])                # a copy: callers may not change the remembered one


def _work_out_config(kernel: str, q, head_dim: int, p: AttnParams, sq: int, sk: int, tma_possible: bool,
                     bench, gluon_possible: bool) -> dict:
    arch = configs.arch(q.device)
    over = configs.overrides(kernel)
    tma_asked = "TMA" in over
    defaults = configs.switches(kernel, arch, head_dim, p.fp8)
    over_sw = {k: over.pop(k) for k in [*over] if k in defaults or k in ("TMA", "ONE_PASS", "GLUON")}
    sw = {**defaults, **over_sw}
    if "TMA" in sw:
        sw["TMA"] = bool(sw["TMA"]) and tma_possible
    if "GLUON" in sw:                        # asked for, or by default where it measured faster
        sw["GLUON"] = bool(sw["GLUON"]) and gluon_possible and (
            "GLUON" in over_sw or configs.gluon_wins(kernel, head_dim, sk, p.has_window))
    if "ONE_PASS" in sw and "ONE_PASS" not in over_sw:   # by default only with the Gluon kernel
        sw["ONE_PASS"] = bool(sw.get("GLUON"))
    if kernel == "bwd_dkdv" and "HOST_DESC" not in over_sw:
        sw["HOST_DESC"] = configs.dkdv_host_desc_wins(head_dim, p.has_window, sk)
    if kernel == "bwd_dkdv" and "FROM_ZERO" not in over_sw:
        sw["FROM_ZERO"] = configs.dkdv_from_zero_wins(head_dim, p.has_window)
    if p.deterministic and "ONE_PASS" in sw:
        sw["ONE_PASS"] = False               # atomics add in a different order every run
    tma = sw.get("TMA", False) and not sw.get("GLUON", False)
    gluon = sw.get("GLUON", False)
    cfg = configs.default(kernel, arch, head_dim, q.dtype, tma, gluon)
    if bench is not None and arch != "interpreter":
        if tuning.autotune_enabled():
            key = tuning.make_key(arch, kernel, q.dtype, head_dim, p.window_right == 0, sq, sk,
                                  "-".join(p.features() + [f"{k}={int(v)}" for k, v in sw.items()]))
            cfg = tuning.pick(key, configs.candidates(kernel, arch, head_dim, q.dtype, tma, gluon),
                              lambda c: bench({**c, **sw}), cfg)
    cfg = {**cfg, **over, **sw}
    if gluon:                                # the Gluon kernels fix one tile side: two warpgroups of 64 rows
        side, rows = (("BLOCK_N", configs.GLUON_BLOCK_N_BWD) if kernel == "bwd_dkdv"
                      else ("BLOCK_M", configs.GLUON_BLOCK_M))
        if (cfg[side], cfg["num_warps"]) != (rows, configs.GLUON_WARPS):
            raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: the Gluon kernel has {side} {rows} and num_warps "
                             f"{configs.GLUON_WARPS} (two warpgroups of 64 rows); got {side} {cfg[side]}, "
                             f"num_warps {cfg['num_warps']} (set \"GLUON\": false for other tiles)")
    if gluon and kernel == "fwd" and not cfg.get("HOST_DESC", True):
        cfg["TMA_STORE"] = False             # its store goes through a host-made descriptor
    smem = configs.fwd_gluon_smem(head_dim, cfg, q.dtype, p.fp8) if gluon and kernel == "fwd" else 0
    if cfg.get("TMA_STORE") and smem > configs.SMEM_BYTES_SM90:
        if "TMA_STORE" in over_sw and ("num_stages" in over or "BLOCK_N" in over):   # tiles the user chose
            raise ValueError(f"FA_CK_TRITON_CONFIG['fwd']: TMA_STORE needs {smem} bytes of shared memory with "
                             f"BLOCK_N {cfg['BLOCK_N']} and num_stages {cfg['num_stages']} at head dim {head_dim} "
                             f"(sm90 has {configs.SMEM_BYTES_SM90}); use fewer stages or keys per block")
        cfg["TMA_STORE"] = False             # by default (or over tuned tiles) only where it fits
    if tma and cfg["num_stages"] < configs.TMA_MIN_STAGES and arch != "interpreter":
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: TMA (on{'' if tma_asked else ' by default'} for this "
                         f"call) with num_stages {cfg['num_stages']} crashes Triton 3.6's ptxas; use "
                         f"{configs.TMA_MIN_STAGES}+ stages or \"TMA\": false")
    return cfg


def _tma_ok(*tensors, keys_contiguous=None) -> bool:
    """Whether our TMA paths can serve these (.., S, H, D) tensors: head dim at most 128 (Triton
    3.6's ptxas crashed on the d256 TMA forward), unit stride along the tile's inner dim (the
    head dim; the keys for `keys_contiguous`, fp8's v), 16-byte aligned base and other strides
    (a head's tile may start at any row)."""
    for t in tensors:
        if t.shape[-1] > 128 or t.data_ptr() % 16:
            return False
        strides = t.stride()
        inner = 1 if t is keys_contiguous else len(strides) - 1
        size = t.element_size()
        for i, st in enumerate(strides):
            if (st != 1) if i == inner else (st * size) % 16:
                return False
    return True


def _tma_allocator():
    """Device-side TMA descriptors live in global scratch that Triton asks an allocator for; set
    one (torch's caching allocator) where none is set. It is a context variable, so the autograd
    thread and others need it too: called before every launch that builds descriptors."""
    _note(_SET_TMA_ALLOCATOR)
    try:
        unset = isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
    except AttributeError:                   # a Triton that keeps it elsewhere: set ours
        unset = True
    if unset:
        triton.set_allocator(_scratch)


_SCRATCH: dict = {}


def _scratch(size: int, alignment: int, stream):
    """Global scratch for a launch's device-side TMA descriptors: one buffer per stream, grown
    as needed and reused (the launches of a stream run in order, and each needs it only while it
    runs), instead of an allocation per launch on the host's critical path."""
    if configs.INTERPRET or torch.cuda.is_current_stream_capturing():
        # (a CUDA graph keeps the addresses it captured: a buffer regrown later would be freed)
        return torch.empty(size, dtype=torch.int8, device="cpu" if configs.INTERPRET else "cuda")
    key = (torch.cuda.current_device(), stream)
    buf = _SCRATCH.get(key)
    if buf is None or buf.numel() < size:
        buf = _SCRATCH[key] = torch.empty(max(size, 1 << 20), dtype=torch.int8, device="cuda")
    return buf


def _cdiv(a: int, b: int) -> int:
    """Grid sizes; triton.cdiv is a constexpr_function in Triton 3.7, ~7 us of host time a call."""
    return -(-a // b)


def _launch_cfg(cfg: dict) -> dict:
    return {k: cfg[k] for k in ("num_warps", "num_stages")}


def _device_of(t: torch.Tensor):
    """Triton launches on the current CUDA device: make it the tensors' (q on cuda:1 while cuda:0
    is current would otherwise run on the wrong GPU)."""
    if t.is_cuda and t.device.index != torch.cuda.current_device():
        return torch.cuda.device(t.device)
    return contextlib.nullcontext()


# ---------------------------------------------------------------- repeated calls
# A call's slow path works out its kernels, configs, grids, constexprs and scalar arguments from
# its signature (_plan_key): that took most of the ~100 us of Python host time an attention call
# cost on top of its launches, while the kernels of a short call run for ~200 us (B16 S1024 H16
# d128 on the H200). So the slow path's launches are noted down (_Recording) as a _Plan, and a
# later call of the same signature only allocates its outputs, makes its host-made descriptors
# and launches the same kernels with the same arguments, its own tensors in place of the first
# call's.

_PLANS: dict = {}
_MAX_PLANS = 1024          # a model has a few signatures; a sweep over many may refill it
_FLOATS = struct.Struct("=3d")
_SET_TMA_ALLOCATOR = "_tma_allocator()"   # a step of a plan besides its launches
_recording = threading.local()             # .steps: the list a call being recorded notes into


def _plan_key(kind: str, p: AttnParams, poison: bool, inputs, outputs, *extra):
    """Everything a call's slow path decides from, or None for calls that always take it: its
    input tensors (shape, strides, dtype, 16-byte alignment of the data pointer, which _tma_ok
    checks, and which of them are one and the same tensor), the alignment of its fresh outputs
    (their shapes, strides and dtypes follow from the inputs and FA_CK_POISON), its scalar
    parameters (the floats by their bits: -0.0 is not 0.0), the device and its architecture,
    the interpreter switch and the environment switches read per call (FA_CK_TRITON_CONFIG,
    FA_CK_POISON). Always slow: calls with tensors among their parameters (ALiBi slopes,
    dropout's RNG state, varlen's cu_seqlens, fp8 descales: a plan would have to key or carry
    them), fp8 (quantisation launches and allocates on its own) and autotune (a search may run;
    _config does not remember its answer either)."""
    if (p.fp8 or p.alibi_slopes is not None or p.rng is not None or p.cu_seqlens_q is not None
            or p.cu_seqlens_k is not None or p.q_descale is not None or p.k_descale is not None
            or p.v_descale is not None or not (type(p.scale) is type(p.softcap) is type(p.dropout_p) is float)
            or tuning.autotune_enabled()):
        return None
    device = inputs[0].device
    ids = [id(t) for t in inputs]
    return (kind, device, configs.arch(device), configs.INTERPRET, poison, os.environ.get("FA_CK_TRITON_CONFIG", ""),
            *[(t.shape, t.stride(), t.dtype, t.data_ptr() % 16 == 0) for t in inputs],
            *[t.data_ptr() % 16 == 0 for t in outputs],
            None if len(set(ids)) == len(ids) else tuple(map(ids.index, ids)),
            _FLOATS.pack(p.scale, p.softcap, p.dropout_p), p.causal, p.window_left, p.window_right,
            p.deterministic, p.max_seqlen_q, p.max_seqlen_k, p.out_dtype, *extra)


def _note(step):
    """Note a step of the slow path down, when a plan is being recorded in this thread."""
    steps = getattr(_recording, "steps", None)
    if steps is not None:
        steps.append(step)


def _launch(kernel, grid: tuple, args: tuple, constexprs: dict):
    """launch(), as the slow path calls it: noted down for the call's plan."""
    _note((kernel, grid, args, constexprs))
    launch(kernel, grid, args, constexprs)


class _Recording:
    """`with _Recording(key) as rec: <slow path>; rec.save(slots)` keeps what the slow path
    launched as the _Plan for `key` (nothing when key is None, or when the slow path raised)."""

    def __init__(self, key):
        self.key = key

    def __enter__(self):
        _recording.steps = [] if self.key is not None else None
        return self

    def __exit__(self, *exc):
        _recording.steps = None

    def save(self, slots, one_pass: bool = False):
        steps = _recording.steps
        plan = _Plan.make(steps, slots, one_pass) if steps is not None else None
        if plan is not None:
            if len(_PLANS) >= _MAX_PLANS:
                _PLANS.clear()
            _PLANS[self.key] = plan


class _Plan:
    """The steps of a call signature's slow path: its launches (kernel, grid and constexprs as
    they were; the arguments with the call's own tensors, and host-made descriptors of them,
    replaced by their place among the call's `slots`) and where it set the TMA allocator.
    one_pass: the backward's dK/dV kernel added dQ into an fp32 buffer (the last slot), which
    the caller makes (zeros) and scales into dq."""

    def __init__(self, steps: list, one_pass: bool):
        self.steps, self.one_pass = steps, one_pass
        # each launch's compiled kernel, once a replay has had it from launch(): the plan's key
        # holds everything Triton specialises the arguments on (shapes, strides, dtypes,
        # alignment), so later replays hand their arguments straight to it (run_compiled)
        self.compiled = [None] * len(steps)

    @classmethod
    def make(cls, steps: list, slots, one_pass: bool):
        """The plan, or None when a launch took a tensor that is neither a slot nor one of the
        device's placeholders (a tensor of this call alone that a replay could not supply)."""
        where = {id(t): i for i, t in enumerate(slots) if t is not None}
        constants = _placeholders(slots[0].device)
        plan = []
        for step in steps:
            if step is _SET_TMA_ALLOCATOR:
                plan.append(step)
                continue
            kernel, grid, args, constexprs = step
            fixed, subs = list(args), []
            for pos, arg in enumerate(args):
                if isinstance(arg, torch.Tensor):
                    base, desc = arg, None
                elif not _GLUON_ERROR and isinstance(arg, TensorDescriptor):
                    base, desc = arg.base, _rebased(arg, None)   # (the plan keeps no tensor of the call alive)
                else:
                    continue
                slot = where.get(id(base))
                if slot is None:
                    if desc is None and any(base is c for c in constants):
                        continue
                    return None
                fixed[pos] = None
                subs.append((pos, slot, desc))
            plan.append((kernel, grid, tuple(fixed), tuple(subs), constexprs))
        return cls(plan, one_pass)

    def replay(self, slots, start: int = 0, stop: int | None = None, direct: bool = True):
        """Make steps[start:stop] again, on these slots; direct=False: every launch through
        launch(), which specialises its arguments afresh."""
        stop = len(self.steps) if stop is None else stop
        for i in range(start, stop):
            step = self.steps[i]
            if step is _SET_TMA_ALLOCATOR:
                _tma_allocator()
                continue
            kernel, grid, fixed, subs, constexprs = step
            args = list(fixed)
            for pos, slot, desc in subs:
                args[pos] = slots[slot] if desc is None else _rebased(desc, slots[slot])
            if not direct:
                launch(kernel, grid, tuple(args), constexprs)
            elif self.compiled[i] is None:
                self.compiled[i] = launch(kernel, grid, tuple(args), constexprs)
            else:
                run_compiled(self.compiled[i], kernel, grid, tuple(args), constexprs)


def _rebased(desc, base):
    """A host-made descriptor like `desc` (shape, strides, block, layout: the signature's) of `base`."""
    new = object.__new__(TensorDescriptor)
    new.__dict__.update(desc.__dict__)
    new.base = base
    return new


def forward(q, k, v, p: AttnParams):
    with _device_of(q):
        return _forward(q, k, v, p)


def backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    with _device_of(q):
        return _backward(do, q, k, v, out, lse, p, dlse)


def _forward(q, k, v, p: AttnParams):
    b, sq, sk, hq, hkv, d = _shape(q, k, p)
    out_dtype = q.dtype
    if p.fp8:
        q, k, v, qd, kd, vd, out_dtype = _fp8_inputs(q, k, v, p)
        fp8 = dict(FP8=True, P_SCALE=float(torch.finfo(v.dtype).max))
    else:
        qd = kd = vd = _placeholders(q.device)[1]          # no descales (an empty float32 stand-in)
        fp8 = dict(FP8=False, P_SCALE=1.0)
    poison = _poisoning()
    out = _empty(q.shape, out_dtype, q.device, poison)
    lse = _empty((hq, q.shape[0]) if p.varlen else (b, hq, sq), torch.float32, q.device, poison)
    slots = (q, k, v, out, lse)
    key = _plan_key("fwd", p, poison, slots[:3], slots[3:])
    plan = _PLANS.get(key)
    if plan is not None:
        plan.replay(slots)
    else:
        with _Recording(key) as rec:
            _launch_forward(q, k, v, out, lse, qd, kd, vd, fp8, p)
            rec.save(slots)
    if _canaries:
        _check_canaries("forward")
        out, lse = out.clone(), lse.clone()   # own storage, as the op's fake kernel promises
    return out, lse


def _launch_forward(q, k, v, out, lse, qd, kd, vd, fp8: dict, p: AttnParams):
    """The forward's slow path: works out the kernel, its config and its arguments, and launches it."""
    b, sq, sk, hq, hkv, d = _shape(q, k, p)
    slopes, slope_stride, rng, cu_q, cu_k = _extras(q, p)
    flags, scal = _flags(q, p, d), _scalars(p)
    descale_strides = (qd.stride(0), kd.stride(0)) if p.fp8 else (0, 0)

    tma_possible = _tma_ok(k, v, keys_contiguous=v if p.fp8 else None)
    gluon_possible = _gluon_ok(q, k, v, out, p, kv_tma_ok=tma_possible)

    def run(cfg):
        if cfg.get("GLUON"):
            return _forward_gluon(q, k, v, out, lse, cu_q, cu_k, qd, kd, vd, p, cfg, sq, sk, hq, hkv, b, d, scal,
                                  fp8["P_SCALE"])
        if p.fp8:
            cfg = configs.for_fp8(cfg)
        if cfg["TMA"]:
            _tma_allocator()
        grid = (_cdiv(sq, cfg["BLOCK_M"]), hq, b)
        _launch(fwd_kernel, grid,
                (q, k, v, out, lse, slopes, rng, cu_q, cu_k, qd, kd, vd,
                 *_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), v.stride(-1),
                 *_strides(out, p.varlen), *_lse_strides(lse, p.varlen), slope_stride, *descale_strides,
                 sq, sk, hq // hkv, d, scal["scale_log2"], scal["softcap_in"], scal["softcap_out"],
                 scal["window_left"], scal["window_right"], scal["dropout_p"], sk),
                dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], TMA=cfg["TMA"], **flags, **fp8, **_launch_cfg(cfg)))

    run(_config("fwd", q, d, p, sq, sk, tma_possible, bench=_bencher(run), gluon_possible=gluon_possible))


def _gluon_ok(q, k, v, out, p: AttnParams, kv_tma_ok: bool | None = None) -> bool:
    """Whether the Gluon kernels serve this call: fp16/bf16 (the forward: also quantised e4m3fn
    q, k, v with keys-contiguous v) without softcap, ALiBi or dropout (masks, windows and
    varlen they have; GQA the forward and dQ), tensors TMA can address (see _tma_ok; `out` is
    dO for the backward). kv_tma_ok: _tma_ok of k and v when the caller has it already."""
    dtype_ok = q.dtype in (torch.float16, torch.bfloat16) or (p.fp8 and q.dtype == torch.float8_e4m3fn)
    if _GLUON_ERROR or configs.INTERPRET or not dtype_ok or p.softcap != 0 or p.alibi_slopes is not None \
            or p.dropout_p != 0:
        return False
    if kv_tma_ok is None:
        return _tma_ok(q, k, v, out, keys_contiguous=v if p.fp8 else None)
    return kv_tma_ok and _tma_ok(q, out)


_SMEM_LAYOUTS: dict = {}


def _gl_dtype(dtype: torch.dtype):
    return {torch.float16: gl.float16, torch.float8_e4m3fn: gl.float8e4nv, torch.float32: gl.float32}.get(dtype, gl.bfloat16)


def _smem_layout4(block: list, dtype: torch.dtype):
    key = (*block, dtype)
    if key not in _SMEM_LAYOUTS:
        _SMEM_LAYOUTS[key] = gl.NVMMASharedLayout.get_default_for(block, _gl_dtype(dtype))
    return _SMEM_LAYOUTS[key]


def _smem_layout(rows: int, cols: int, dtype: torch.dtype):
    """The swizzled shared-memory layout TMA writes and wgmma reads, for (rows, cols) tiles."""
    key = (rows, cols, dtype)
    if key not in _SMEM_LAYOUTS:
        _SMEM_LAYOUTS[key] = gl.NVMMASharedLayout.get_default_for([rows, cols], _gl_dtype(dtype))
    return _SMEM_LAYOUTS[key]


def _forward_gluon(q, k, v, out, lse, cu_q, cu_k, qd, kd, vd, p: AttnParams, cfg, sq, sk, hq, hkv, b, d, scal,
                   p_scale):
    """Launch forward_gluon.py into out and lse. q, k and v go as TMA descriptors made here
    (HOST_DESC), or for varlen (and on request) as pointers, the kernel building each tile's
    descriptors on the device. fp8: q, k, v quantised (v keys-contiguous), qd, kd, vd their descales."""
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    bd = configs.fp8_block_d(d) if p.fp8 else configs.block_d(d)
    host_desc = bool(cfg.get("HOST_DESC", True)) and not p.varlen and _host_desc_ok(q, k, v)
    # (float32 out, fp8 inputs' option, keeps plain stores: its TMA store has not run on a GPU)
    tma_store = host_desc and bool(cfg.get("TMA_STORE")) and out.element_size() == 2 and \
        configs.fwd_gluon_smem(d, cfg, q.dtype, p.fp8, out.element_size()) <= configs.SMEM_BYTES_SM90
    o_arg = _desc4(out, bm // 2, bd) if tma_store else out     # (unused without TMA_STORE)
    if host_desc:
        q_arg, k_arg = _desc4(q, bm, bd), _desc4(k, bn, bd)
        v_arg = _desc4(v, bd, bn, keys_contiguous=True) if p.fp8 else _desc4(v, bn, bd)
    else:
        _tma_allocator()
        q_arg, k_arg, v_arg = q, k, v
    persistent = bool(cfg.get("PERSISTENT"))
    units = b * hq * (_cdiv(_cdiv(sq, bm), 2) if persistent else _cdiv(sq, bm))     # forward_gluon._tile
    grid = max(1, min(units, _sm_count(q.device)) if persistent else units)
    _launch(fwd_gluon_kernel, (grid, 1, 1), (
        q_arg, k_arg, v_arg, out, o_arg, lse, cu_q, cu_k, qd, kd, vd,
        *_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), v.stride(-1),
        *_strides(out, p.varlen), *_lse_strides(lse, p.varlen),
        qd.stride(0) if p.fp8 else 0, kd.stride(0) if p.fp8 else 0, sq, sk, b, hq, hq // hkv, d, scal["scale_log2"],
        scal["window_left"], scal["window_right"]), dict(
        BLOCK_N=bn, BLOCK_D=bd, NUM_BUF=cfg["num_stages"], VARLEN=p.varlen,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
        SMEM_Q=_smem_layout(bm, bd, q.dtype), SMEM_KV=_smem_layout(bn, bd, q.dtype),
        SMEM_V=_smem_layout(bd, bn, q.dtype) if p.fp8 else _smem_layout(bn, bd, q.dtype),
        SMEM_P=_smem_layout(bm // 2, bn, q.dtype),
        PINGPONG=bool(cfg.get("PINGPONG")), PERSISTENT=persistent, FP8=p.fp8, P_SCALE=p_scale, HOST_DESC=host_desc,
        TMA_STORE=tma_store, SMEM_O=_smem_layout(bm // 2, bd, out.dtype), num_warps=cfg["num_warps"]))


def _host_desc_ok(*tensors) -> bool:
    """Whether host-made descriptors can describe these (B, S, H, D) tensors: nothing empty (a
    tensor map has no zero-sized dimension), and no stride 0 on a dimension longer than 1 (an
    expanded tensor: TMA's strides are not known to take 0; such calls build theirs per tile)."""
    return all(t.numel() > 0 and all(st != 0 or n == 1 for st, n in zip(t.stride(), t.shape)) for t in tensors)


def _desc4(t: torch.Tensor, rows: int, cols: int, keys_contiguous: bool = False):
    """A host-made TMA descriptor for (rows, cols) tiles of t (B, S, H, D) taken as (B, H, S, D),
    or with keys_contiguous (fp8's v) as (B, H, D, S): tiles of one (batch, head), rows and
    columns past the tensor's arriving as zeros. Made without TensorDescriptor's checks, which
    _tma_ok has done (alignment, strides): they were a fifth of the forward's host time."""
    b, s, h, d = t.shape
    sb, ss, sh, sd = t.stride()
    block = [1, 1, rows, cols]
    desc = object.__new__(TensorDescriptor)
    desc.base, desc.block_shape, desc.layout, desc.padding = t, block, _smem_layout4(block, t.dtype), "zero"
    desc.shape, desc.strides = ([b, h, d, s], [sb, sh, sd, ss]) if keys_contiguous else ([b, h, s, d], [sb, sh, ss, sd])
    return desc


_SM_COUNTS: dict = {}


def _sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the device: a persistent kernel's program count."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SM_COUNTS:
        _SM_COUNTS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SM_COUNTS[index]


def _dkdv_gluon(q, k, v, do, lse, delta, dk, dv, dq_acc, cu_q, cu_k, p: AttnParams, cfg, sq, sk, hkv, b, d, scal):
    """Launch backward_gluon.py into dk and dv, and with ONE_PASS dQ / scale into dq_acc (fp32 zeros).
    HOST_DESC: q, k, v, do, dq_acc as host-made 4-D descriptors (not for varlen, empty or
    expanded tensors: those build theirs per program)."""
    bm, bn, bd = cfg["BLOCK_M"], cfg["BLOCK_N"], configs.block_d(d)
    one_pass = bool(cfg["ONE_PASS"])
    host_desc = bool(cfg.get("HOST_DESC")) and not p.varlen and _host_desc_ok(q, k, v, do)
    if host_desc:
        args = (_desc4(q, bm, bd), _desc4(k, bn, bd), _desc4(v, bn, bd), _desc4(do, bm, bd))
        dq_arg = _desc4(dq_acc, bm, bd // 2) if one_pass else dq_acc
    else:
        _tma_allocator()
        args, dq_arg = (q, k, v, do), dq_acc
    _launch(bwd_dkdv_gluon_kernel, (_cdiv(sk, bn), hkv, b), (
        *args, lse, delta, dk, dv, dq_arg, cu_q, cu_k,
        *_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), *_strides(do, p.varlen),
        *_strides(dk, p.varlen), *_strides(dv, p.varlen), *(_strides(dq_acc, p.varlen) if one_pass else (0, 0, 0)),
        *_lse_strides(lse, p.varlen), sq, sk, d,
        p.scale, scal["scale_log2"], scal["window_left"], scal["window_right"]), dict(
        BLOCK_M=bm, BLOCK_D=bd, NUM_BUF=cfg["num_stages"], VARLEN=p.varlen,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
        SMEM_KV=_smem_layout(bn, bd, q.dtype), SMEM_Q=_smem_layout(bm, bd, q.dtype),
        STAGE_P=bool(cfg.get("STAGE_P")), SMEM_P=_smem_layout(bn // 2, bm, q.dtype), ONE_PASS=one_pass,
        SMEM_DQ=_smem_layout(bm, bd // 2, torch.float32), HOST_DESC=host_desc,
        FROM_ZERO=bool(cfg.get("FROM_ZERO")), num_warps=cfg["num_warps"]))


def _dq_gluon(q, k, v, do, lse, delta, dq, cu_q, cu_k, p: AttnParams, cfg, sq, sk, hq, hkv, b, d, scal):
    """Launch backward_gluon.py's dQ kernel into dq (FA_CK_TRITON_CONFIG bwd_dq GLUON)."""
    _tma_allocator()
    bm, bn, bd = cfg["BLOCK_M"], cfg["BLOCK_N"], configs.block_d(d)
    _launch(bwd_dq_gluon_kernel, (_cdiv(sq, bm), hq, b), (
        q, k, v, do, lse, delta, dq, cu_q, cu_k,
        *_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), *_strides(do, p.varlen),
        *_strides(dq, p.varlen), *_lse_strides(lse, p.varlen), sq, sk, hq // hkv, d,
        p.scale, scal["scale_log2"], scal["window_left"], scal["window_right"]), dict(
        BLOCK_N=bn, BLOCK_D=bd, NUM_BUF=cfg["num_stages"], VARLEN=p.varlen,
        MASK_LEFT=p.window_left >= 0, MASK_RIGHT=p.window_right >= 0,
        SMEM_Q=_smem_layout(bm, bd, q.dtype), SMEM_KV=_smem_layout(bn, bd, q.dtype), num_warps=cfg["num_warps"]))


def _backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    lse = lse.contiguous()                   # delta below shares lse's strides
    if do.stride(-1) != 1:
        do = do.contiguous()
    poison = _poisoning()
    dq = _empty(q.shape, q.dtype, q.device, poison)
    dk = _empty(k.shape, k.dtype, k.device, poison)
    dv = _empty(v.shape, v.dtype, v.device, poison)
    delta = _empty(lse.shape, torch.float32, lse.device, poison)
    slots = [do, q, k, v, out, lse, dq, dk, dv, delta]
    key = _plan_key("bwd", p, poison, slots[:6], slots[6:], dlse is None)
    plan = _PLANS.get(key)
    if plan is not None:
        plan.replay(slots, stop=1)           # the slow path's first launch: bwd_preprocess, into delta
        if dlse is not None:
            delta -= dlse
        dq_acc = torch.zeros(q.shape, dtype=torch.float32, device=q.device) if plan.one_pass else None
        # (the one slot made after the key: its alignment is the allocator's, 16 bytes or more
        # under torch's; were it less, the compiled kernels' specialisation would not hold)
        plan.replay(slots + [dq_acc], start=1, direct=dq_acc is None or dq_acc.data_ptr() % 16 == 0)
    else:
        with _Recording(key) as rec:
            dq_acc = _launch_backward(do, q, k, v, out, lse, dq, dk, dv, delta, p, dlse)
            rec.save(slots + [dq_acc], one_pass=dq_acc is not None)
    if dq_acc is not None:                   # ONE_PASS: dq was accumulated by bwd_dkdv
        torch.mul(dq_acc, p.scale, out=dq)
    if _canaries:
        _check_canaries("backward")
        dq, dk, dv = dq.clone(), dk.clone(), dv.clone()
    return dq, dk, dv


def _launch_backward(do, q, k, v, out, lse, dq, dk, dv, delta, p: AttnParams, dlse):
    """The backward's slow path: works out the kernels, their configs and their arguments, and
    launches them; -> ONE_PASS's fp32 dq buffer (dq / scale, for the caller to scale into dq),
    or None when a dQ kernel wrote dq."""
    b, sq, sk, hq, hkv, d = _shape(q, k, p)
    slopes, slope_stride, rng, cu_q, cu_k = _extras(q, p)
    flags, scal = _flags(q, p, d), _scalars(p)
    bd = flags["BLOCK_D"]

    pre_bm = 64 if configs.arch(q.device) != "interpreter" else 32
    _launch(bwd_preprocess, (_cdiv(sq, pre_bm), hq, b),
            (out, do, delta, *_strides(out, p.varlen), *_strides(do, p.varlen), *_lse_strides(lse, p.varlen), sq, d, cu_q),
            dict(BLOCK_M=pre_bm, BLOCK_D=bd, VARLEN=p.varlen))

    if dlse is not None:
        # d lse / d S = P, so a gradient on lse enters as dS = P * (dP - (delta - dlse))
        delta -= dlse
    common = (*_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), *_strides(do, p.varlen))
    tail = (sq, sk, hq // hkv, d, p.scale, scal["scale_log2"], scal["softcap_in"], scal["softcap_out"],
            scal["window_left"], scal["window_right"], scal["dropout_p"], sk)

    dq_acc = _placeholders(q.device)[1]     # ONE_PASS's fp32 dq, made below when it runs
    # dk/dv builds its q and dO descriptors inside the loop over a kv head's q heads, which Triton
    # 3.6's pipeliner cannot always handle: TMA only without GQA (group 1 compiles the loop away).
    tma_dkdv = hq == hkv and _tma_ok(q, do)

    def run_dkdv(cfg):
        nonlocal dq_acc
        if cfg["ONE_PASS"]:                  # fresh zeros for every launch (autotune runs several)
            dq_acc = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
        if cfg.get("GLUON"):
            return _dkdv_gluon(q, k, v, do, lse, delta, dk, dv, dq_acc, cu_q, cu_k, p, cfg, sq, sk, hkv, b, d, scal)
        if cfg["TMA"]:
            _tma_allocator()
        _launch(bwd_dkdv_kernel, (_cdiv(sk, cfg["BLOCK_N"]), hkv, b),
                (q, k, v, do, lse, delta, dk, dv, dq_acc, slopes, rng, cu_q, cu_k, *common,
                 *_strides(dk, p.varlen), *_strides(dv, p.varlen),
                 *(_strides(dq_acc, p.varlen) if cfg["ONE_PASS"] else (0, 0, 0)), *_lse_strides(lse, p.varlen),
                 slope_stride, *tail),
                dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], ONE_PASS=cfg["ONE_PASS"], TMA=cfg["TMA"], **flags,
                     **_launch_cfg(cfg)))

    def run_dq(cfg):
        if cfg.get("GLUON"):
            return _dq_gluon(q, k, v, do, lse, delta, dq, cu_q, cu_k, p, cfg, sq, sk, hq, hkv, b, d, scal)
        _launch(bwd_dq_kernel, (_cdiv(sq, cfg["BLOCK_M"]), hq, b),
                (q, k, v, do, lse, delta, dq, slopes, rng, cu_q, cu_k, *common,
                 *_strides(dq, p.varlen), *_lse_strides(lse, p.varlen), slope_stride, *tail),
                dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], **flags, **_launch_cfg(cfg)))

    gluon_ok = _gluon_ok(q, k, v, do, p)
    # one q head per kv head (see backward_gluon); a positive scale: its multiplies start from
    # -lse / scale, which a zero or negative scale would turn into NaN or +inf
    gluon_dkdv = hq == hkv and gluon_ok and p.scale > 0
    cfg = _config("bwd_dkdv", q, d, p, sq, sk, tma_dkdv, bench=_bencher(run_dkdv), gluon_possible=gluon_dkdv)
    run_dkdv(cfg)
    if cfg["ONE_PASS"]:                      # dq was accumulated by bwd_dkdv
        return dq_acc
    run_dq(_config("bwd_dq", q, d, p, sq, sk, False, bench=_bencher(run_dq), gluon_possible=gluon_ok))
    return None


def _bencher(run):
    """Time one config of a launch (used only when autotune searches)."""
    def bench(cfg):
        # 5 ms / 20 ms windows picked configs slower than the defaults on the H200 (clocks still
        # ramping, too few repeats): warm longer and time longer.
        return triton.testing.do_bench(lambda: run(cfg), warmup=25, rep=60, return_mode="median")
    return bench


def dropout_mask(rng, batch: int, heads: int, seqlen_q: int, seqlen_k: int, dropout_p: float) -> torch.Tensor:
    """The keep mask (bool, (batch, heads, seqlen_q, seqlen_k)) our kernels apply for this rng
    (varlen: pass the max sequence lengths; the kernels' row stride is max_seqlen_k)."""
    from .forward import dropout_mask_kernel
    keep = torch.empty((batch, heads, seqlen_q, seqlen_k), dtype=torch.int8, device=rng.device)
    bm, bn = 32, 32
    grid = (_cdiv(seqlen_q, bm), heads, batch)
    dropout_mask_kernel[grid](keep, rng, seqlen_q, seqlen_k, seqlen_k, dropout_p,
                              BLOCK_M=bm, BLOCK_N=bn)
    return keep.bool()
