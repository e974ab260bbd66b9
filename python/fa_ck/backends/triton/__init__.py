"""The triton backend: our FlashAttention-2 kernels (forward.py, backward.py), launched here.

Runs on NVIDIA and AMD GPUs, and on the CPU under TRITON_INTERPRET=1 (set before import),
which is how CI tests the kernels themselves. This module is the backend's API (available,
unsupported, forward, backward, quantize_fp8, dropout_mask), its output buffers and config
choice, and each call's slow path; launch_gluon.py launches the Hopper Gluon kernels, quantize.py
makes the fp8 forward's inputs, plans.py every launch and the replay of a call signature's
launches, host.py helpers they share.
"""
from __future__ import annotations

import contextlib
import math
import os

import torch

from ...params import FP8_DTYPES, AttnParams
from . import configs, launch_gluon, plans, tuning
from .host import _causal_mask, _cdiv, _lse_strides, _placeholders, _raw_max, _strides, _tma_ok
from .plans import _launch, _tma_allocator

NAME = "triton"
MAX_HEAD_DIM = 256
MAX_GRID_Z = 65535        # batch entries (or varlen sequences) are the grid's z
MAX_GRID_Y = 65535        # heads are its y (fp8 quantisation's: q's heads, then k's and v's)
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

try:
    import triton
    from . import quantize
    from .quantize import quantize_fp8  # noqa: F401  (the backend's API)
    from .backward import bwd_dkdv_kernel, bwd_dq_kernel, bwd_preprocess, dq_from_acc
    from .forward import fwd_kernel
    _IMPORT_ERROR = ""
except Exception as e:  # no triton, or a triton too old for our kernels
    _IMPORT_ERROR = f"{type(e).__name__}: {e}"


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
    quantised = p.fp8 and q.dtype not in FP8_DTYPES
    heads = q.shape[-2] + (k.shape[-2] + v.shape[-2] if quantised else 0)
    if heads > MAX_GRID_Y:
        return (f"{q.shape[-2]} heads{f' ({heads} with the k and v heads quantised alongside)' if quantised else ''}: "
                f"the launch grid's y holds {MAX_GRID_Y}")
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
            bench=None, gluon_possible: bool = False, group: int = 1, fp8_inputs: bool = False) -> dict:
    """The kernel's switches (defaults, then FA_CK_TRITON_CONFIG; TMA only where `tma_possible`,
    a Gluon kernel only where `gluon_possible`, no one pass for deterministic calls; group: q
    heads per kv head, which the Gluon dK/dV kernel's default depends on; fp8_inputs: the
    caller's fp8, read as it comes, so no P_REGS and no Q_CONVERT), then
    tiles: the heuristic for those switches, or autotuned when switched on, with any
    FA_CK_TRITON_CONFIG tiles on top.
    Without autotune the answer is remembered per everything it reads: working it out took
    ~25 us of host time per kernel and call (h200-20261130-sixth call 1)."""
    autotune = bench is not None and tuning.autotune_enabled()
    key = None if autotune else (kernel, configs.arch(q.device), q.dtype, head_dim, p.fp8, p.has_window, p.deterministic,
                                 configs.gluon_wins(kernel, head_dim, sk, p.has_window, group),
                                 configs.dkdv_host_desc_wins(head_dim, p.has_window, sk, _causal_mask(p)),
                                 configs.dkdv_persistent_wins(head_dim, sk, False),
                                 configs.dkdv_dynamic_wins(head_dim, _causal_mask(p), sk, group),
                                 configs.dkdv_tma_store_wins(sq, group, not p.deterministic, head_dim),
                                 kernel == "fwd" and configs.fwd_gluon_short_causal(head_dim, p.window_right == 0, sq,
                                                                                     sk, p.fp8),
                                 kernel == "fwd" and _three_warpgroups(q, head_dim, p, sq, sk),
                                 kernel == "fwd" and (sq % 128, sk % 128, p.window_left < 0, p.varlen), tma_possible,
                                 gluon_possible, fp8_inputs, os.environ.get("FA_CK_TRITON_CONFIG", ""))
    if key not in _CONFIGS:
        cfg = _work_out_config(kernel, q, head_dim, p, sq, sk, tma_possible, bench, gluon_possible, group, fp8_inputs)
        if key is None:
            return cfg
        _CONFIGS[key] = cfg
    return dict(_CONFIGS[key])                # a copy: callers may not change the remembered one


def _work_out_config(kernel: str, q, head_dim: int, p: AttnParams, sq: int, sk: int, tma_possible: bool,
                     bench, gluon_possible: bool, group: int = 1, fp8_inputs: bool = False) -> dict:
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
            "GLUON" in over_sw or configs.gluon_wins(kernel, head_dim, sk, p.has_window, group))
    if "ONE_PASS" in sw and "ONE_PASS" not in over_sw:   # by default only with the Gluon kernel, to d128
        sw["ONE_PASS"] = bool(sw.get("GLUON")) and configs.block_d(head_dim) <= 128
    # The switches for fp8 of 16-bit inputs in the Gluon kernel only (P in registers, q rounded in
    # the kernel): not in a 16-bit call's config, nor its autotune key; off for a caller's fp8 or
    # forward.py's kernel, and an error where asked for a caller's fp8 in the Gluon kernel.
    for name, why in (("P_REGS", "needs v's keys in the Gluon kernel's order, which only fa_ck's own "
                                 "quantisation writes; fp8 inputs run with P staged"),
                      ("Q_CONVERT", "rounds a 16-bit q inside the Gluon kernel; fp8 inputs have none")):
        if name in sw and not p.fp8:
            del sw[name]
        elif name in sw and (fp8_inputs or not sw.get("GLUON")):
            if fp8_inputs and sw.get("GLUON") and over_sw.get(name):
                raise ValueError(f"FA_CK_TRITON_CONFIG['fwd']: {name} {why} (drop {name})")
            sw[name] = False
        elif name == "Q_CONVERT" and name in sw and q.dtype in FP8_DTYPES:
            sw[name] = False                 # handed q8 (TMA cannot read q as it is): as launched, autotune's key too
    if kernel == "bwd_dkdv" and "HOST_DESC" not in over_sw:
        sw["HOST_DESC"] = configs.dkdv_host_desc_wins(head_dim, p.has_window, sk, _causal_mask(p))
    if kernel == "bwd_dkdv" and "FROM_ZERO" not in over_sw:
        sw["FROM_ZERO"] = configs.dkdv_from_zero_wins(head_dim, p.has_window)
    if p.deterministic and "ONE_PASS" in sw:
        sw["ONE_PASS"] = False               # atomics add in a different order every run
    if kernel == "bwd_dkdv" and "TMA_STORE" not in over_sw:
        sw["TMA_STORE"] = configs.dkdv_tma_store_wins(sq, group, sw.get("ONE_PASS", False), head_dim)
    if kernel == "bwd_dkdv" and sw["GLUON"] and sw["ONE_PASS"] and configs.block_d(head_dim) > 128:
        # past d128 the Gluon dK/dV kernel has no one pass: asked for, it is backward.py's
        if "GLUON" in over_sw:
            raise ValueError(f"FA_CK_TRITON_CONFIG['bwd_dkdv']: past head dim 128 the Gluon dK/dV kernel leaves dQ "
                             f"to its own kernel (head dim {head_dim}, GLUON and ONE_PASS asked); drop one")
        sw["GLUON"] = False
    if kernel == "bwd_dkdv" and "DYNAMIC" not in over_sw:
        sw["DYNAMIC"] = configs.dkdv_dynamic_wins(head_dim, _causal_mask(p), sk, group)
    if kernel == "bwd_dkdv" and "PERSISTENT" not in over_sw:   # (DYNAMIC's counter needs ONE_PASS)
        sw["PERSISTENT"] = configs.dkdv_persistent_wins(head_dim, sk, sw["DYNAMIC"] and sw["ONE_PASS"])
    tma = sw.get("TMA", False) and not sw.get("GLUON", False)
    gluon = sw.get("GLUON", False)
    cfg = configs.default(kernel, arch, head_dim, q.dtype, tma, gluon)
    if gluon and kernel == "fwd" and configs.fwd_gluon_short_causal(head_dim, p.window_right == 0, sq, sk, p.fp8):
        cfg["BLOCK_N"] = 64
    if gluon and kernel == "fwd" and not sw.get("PINGPONG") and not over_sw.get("LATE_SUM") \
            and _three_warpgroups(q, head_dim, p, sq, sk):      # (asked-for switches of two warpgroups win)
        cfg["BLOCK_M"] = 192
    if bench is not None and arch != "interpreter":
        if tuning.autotune_enabled():
            key = tuning.make_key(arch, kernel, q.dtype, head_dim, p.window_right == 0, sq, sk,
                                  "-".join(p.features() + [f"{k}={int(v)}" for k, v in sw.items()]))
            cands = [c for c in configs.candidates(kernel, arch, head_dim, q.dtype, tma, gluon)
                     if not gluon or _gluon_tiles_fit(kernel, {**c, **sw}, head_dim, q.dtype, p.fp8)]
            cfg = tuning.pick(key, cands, lambda c: bench({**c, **sw}), cfg)
    cfg = {**cfg, **over, **sw}
    for tile in ("BLOCK_M", "BLOCK_N"):      # (arange sizes in every kernel: a compile error otherwise)
        size = cfg[tile]
        if gluon and kernel == "fwd" and tile == "BLOCK_M" and size == 192:
            continue                         # three warpgroups of 64 queries (_check_gluon_tiles)
        if type(size) is not int or size < 1 or size & (size - 1):
            raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: {tile} must be a power of two (an integer), "
                             f"got {size!r}")
    if gluon:
        _check_gluon_tiles(kernel, cfg, head_dim, q.dtype, p.fp8)
    if gluon and kernel == "fwd" and cfg["BLOCK_M"] == 192:
        if over_sw.get("LATE_SUM"):
            raise ValueError("FA_CK_TRITON_CONFIG['fwd']: LATE_SUM is in the two-warpgroup Gluon forward only "
                             "(BLOCK_M 128), got BLOCK_M 192")
        cfg["LATE_SUM"] = False              # (three warpgroups add their row sums beside the exponentials)
    elif "LATE_SUM" in sw and "LATE_SUM" not in over_sw:   # (the Gluon forward's; where it measured faster)
        # (on the tiles chosen; autotune, if on, timed its candidates with the default, True)
        diag_first = configs.fwd_whole_blocks(sq, sk, cfg["BLOCK_M"], cfg["BLOCK_N"], p.window_left, p.window_right,
                                              p.varlen, p.fp8, bool(cfg.get("PINGPONG")),
                                              bool(cfg.get("FP8_DIAG_FIRST")))[1]
        cfg["LATE_SUM"] = gluon and configs.fwd_late_sum_wins(head_dim, p.has_window, p.fp8 and not fp8_inputs,
                                                              diag_first)
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


def _three_warpgroups(q, head_dim: int, p: AttnParams, sq: int, sk: int) -> bool:
    """configs.fwd_gluon_three_warpgroups for this call (q: (B, S, H, D), or packed for varlen,
    which the rule leaves out); SMs of q's GPU (132, an H100's or H200's, off a GPU: CPU tests)."""
    if p.varlen:
        return False
    sms = launch_gluon._sm_count(q.device) if q.is_cuda else 132
    return configs.fwd_gluon_three_warpgroups(head_dim, p.has_window, sq, sk, p.fp8, p.varlen,
                                              q.shape[0] * q.shape[2], sms)


def _gluon_tiles_fit(kernel: str, cfg: dict, head_dim: int, dtype: torch.dtype, fp8: bool) -> bool:
    """Whether _check_gluon_tiles takes cfg (autotune searches only the candidates that fit the
    call's switches: 32 queries per step are a two-pass candidate only, for one)."""
    try:
        _check_gluon_tiles(kernel, dict(cfg), head_dim, dtype, fp8)
    except ValueError:
        return False
    return True


def _check_gluon_tiles(kernel: str, cfg: dict, head_dim: int, dtype: torch.dtype, fp8: bool):
    """A Gluon kernel's config (asked-for tiles among it) against what the kernel can take, each
    failure a ValueError naming the key: its fixed side (two warpgroups of 64 rows; the 16-bit
    forward to head dim 64 also three, BLOCK_M 192, without PINGPONG), its shared memory (Q / dO
    and the rings), and past d128 the dK/dV kernel's queries per step."""
    side, rows = (("BLOCK_N", configs.gluon_block_n_bwd(head_dim)) if kernel == "bwd_dkdv"
                  else ("BLOCK_M", configs.GLUON_BLOCK_M))
    if kernel == "fwd" and cfg["BLOCK_M"] == 192:
        if fp8 or configs.block_d(head_dim) > 64:
            raise ValueError(f"FA_CK_TRITON_CONFIG['fwd']: BLOCK_M 192 (three consumer warpgroups) is for 16-bit "
                             f"inputs at head dims up to 64, where each warpgroup's tiles fit 160 registers; got "
                             f"{'fp8' if fp8 else str(dtype)} at head dim {head_dim}")
        if cfg.get("PINGPONG"):
            raise ValueError("FA_CK_TRITON_CONFIG['fwd']: PINGPONG takes turns between two warpgroups: BLOCK_M 128, "
                             "got 192")
        rows = 192
    if (cfg[side], cfg["num_warps"]) != (rows, configs.GLUON_WARPS):
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: the Gluon kernel has {side} {rows} and num_warps "
                         f"{configs.GLUON_WARPS} (two warpgroups of 64 rows); got {side} {cfg[side]}, "
                         f"num_warps {cfg['num_warps']} (set \"GLUON\": false for other tiles)")
    wide = configs.block_d(head_dim) > 128
    if kernel == "bwd_dkdv" and wide:
        cfg["STAGE_P"] = False               # (it stages P^T and dS^T through shared memory anyway)
        if cfg["BLOCK_M"] not in (64, 128):  # (the ones run on a GPU; 16 does not compile)
            raise ValueError(f"FA_CK_TRITON_CONFIG['bwd_dkdv']: past head dim 128 the Gluon dK/dV kernel takes 64 or "
                             f"128 queries per step (BLOCK_M), got {cfg['BLOCK_M']}")
    if kernel == "bwd_dkdv" and not wide and cfg.get("ONE_PASS") and cfg["BLOCK_M"] < 64:
        # (one pass adds each step's dQ from a wgmma of BLOCK_M rows, and a wgmma has 64 or more;
        # 32 compiles to "error encountered during parsing": h200-20261203-standing call 5)
        raise ValueError(f"FA_CK_TRITON_CONFIG['bwd_dkdv']: one pass (dQ in the Gluon dK/dV kernel) takes 64 or more "
                         f"queries per step (BLOCK_M), got {cfg['BLOCK_M']} (set \"ONE_PASS\": false for fewer)")
    if kernel == "fwd" and fp8 and cfg["BLOCK_N"] < 32:    # (an fp8 wgmma's K is 32: P V's is the key block)
        raise ValueError(f"FA_CK_TRITON_CONFIG['fwd']: the Gluon fp8 forward takes 32 or more keys per block "
                         f"(BLOCK_N), got {cfg['BLOCK_N']} (set \"GLUON\": false for other tiles)")
    if kernel == "fwd":                      # Q and the K / V rings alone (TMA_STORE is dropped where it does not fit)
        what, tiles = "the Gluon forward", configs.fwd_gluon_smem(head_dim, dict(cfg, TMA_STORE=False), dtype, fp8)
    elif kernel == "bwd_dq":
        what, tiles = "the Gluon dQ kernel", configs.dq_gluon_smem(head_dim, cfg, dtype)
    else:   # (the launcher gives up the second K / V buffer, then the TMA stores, where they do not fit)
        what, tiles = "the Gluon dK/dV kernel", configs.dkdv_gluon_smem(head_dim, dict(cfg, TMA_STORE=False), dtype)
    if tiles > configs.SMEM_BYTES_SM90:
        tile = "BLOCK_M" if kernel == "bwd_dkdv" else "BLOCK_N"
        raise ValueError(f"FA_CK_TRITON_CONFIG[{kernel!r}]: {what} needs {tiles} bytes of shared memory with {tile} "
                         f"{cfg[tile]} and num_stages {cfg['num_stages']} at head dim {head_dim} (sm90 has "
                         f"{configs.SMEM_BYTES_SM90}); use fewer stages or smaller tiles"
                         + (" (or Q_CONVERT false: its 16-bit Q tile)" if kernel == "fwd" and cfg.get("Q_CONVERT") else ""))


def _launch_cfg(cfg: dict) -> dict:
    return {k: cfg[k] for k in ("num_warps", "num_stages")}


def _device_of(t: torch.Tensor):
    """Triton launches on the current CUDA device: make it the tensors' (q on cuda:1 while cuda:0
    is current would otherwise run on the wrong GPU)."""
    if t.is_cuda and t.device.index != torch.cuda.current_device():
        return torch.cuda.device(t.device)
    return contextlib.nullcontext()


def forward(q, k, v, p: AttnParams):
    with _device_of(q):
        return _forward(q, k, v, p)


def backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    with _device_of(q):
        return _backward(do, q, k, v, out, lse, p, dlse)


_WORKSPACE = 5               # the fp8 workspace's place among a forward's slots: (q, k, v, out, lse, workspace)


def _forward(q, k, v, p: AttnParams):
    b, sq, sk, hq, hkv, d = _shape(q, k, p)
    out_dtype = (p.out_dtype or torch.bfloat16) if q.dtype in FP8_DTYPES else q.dtype
    poison = _poisoning()
    out = _empty(q.shape, out_dtype, q.device, poison)
    lse = _empty((hq, q.shape[0]) if p.varlen else (b, hq, sq), torch.float32, q.device, poison)
    # (the key leaves out fp8's workspace: a fresh allocation, its parts at 256-byte offsets)
    key = plans._plan_key("fwd", p, poison, (q, k, v), (out, lse))
    plan = plans._PLANS.get(key)
    if plan is not None:
        # fp8 of 16-bit inputs: the quantised k, v (q where the kernel reads q8) and their scales are
        # parts of a workspace made per call, a slot of the plan, so that such calls replay too (their
        # slow path cost ~0.8 ms of host time per call on the H200: more than the kernels below 4k
        # keys); one tensor at the size the slow path's had, its parts taken by byte offset
        quantises = p.fp8 and q.dtype not in FP8_DTYPES
        work = (quantize.fp8_workspace(plan.slot_bytes[_WORKSPACE], q.device),) if quantises else ()
        plan.replay((q, k, v, out, lse, *work))
    else:
        with plans._Recording(key) as rec:
            work = _launch_forward(q, k, v, out, lse, p)
            rec.save((q, k, v, out, lse, *work))
    if _canaries:
        _check_canaries("forward")
        out, lse = out.clone(), lse.clone()   # own storage, as the op's fake kernel promises
    return out, lse


def _launch_forward(q, k, v, out, lse, p: AttnParams) -> tuple:
    """The forward's slow path: quantises (fp8 of 16-bit inputs), works out the kernel, its config
    and its arguments, and launches it. Returns the workspace quantising wrote into (quantize.
    fp8_buffers' last item; with no q8 where the kernel rounds q itself) as a 1-tuple, or () where
    nothing was quantised."""
    b, sq, sk, hq, hkv, d = _shape(q, k, p)
    qd = kd = vd = _placeholders(q.device)[1]              # no descales (an empty float32 stand-in)
    fp8 = dict(FP8=False, P_SCALE=1.0)
    p_regs = fp8_inputs = False
    buffers = ()
    if p.fp8:
        # which kernel runs depends on the fp8 tensors it reads, which exist (fa_ck's buffers) before
        # they are written: the Gluon kernel keeps P in registers (P_REGS) where fa_ck quantises,
        # writing v's keys in that kernel's order; a caller's fp8 v is read as it comes, P staged
        fp8_inputs = q.dtype in FP8_DTYPES
        if fp8_inputs:
            v = quantize.keys_contiguous(v)
            fp8_q, fp8_k, fp8_v = q, k, v
        else:
            # q8 is made below only where the kernel reads it; until then k8 stands in for it: a
            # fresh contiguous tensor of the same fp8 type and head dim, so TMA reads the one exactly
            # where it reads the other (16-byte rows, base and strides)
            buffers = quantize.fp8_buffers(q, k, v, with_q8=False)
            fp8_q, fp8_k, fp8_v = buffers[1], buffers[1], buffers[2]
        fp8 = dict(FP8=True, P_SCALE=float(torch.finfo(fp8_v.dtype).max))
        tma_possible = _tma_ok(fp8_k, fp8_v, keys_contiguous=fp8_v)
        gluon_possible = launch_gluon._gluon_ok(fp8_q, fp8_k, fp8_v, out, p)
        # (q for its shape and device; the config's switches follow p.fp8, not q's type)
        chosen = _config("fwd", q, d, p, sq, sk, tma_possible, gluon_possible=gluon_possible, fp8_inputs=fp8_inputs)
        p_regs = bool(chosen.get("P_REGS"))
        # Q_CONVERT: q stays 16-bit, the Gluon kernel rounds each tile of it (where TMA reads q as it is)
        q_convert = bool(chosen.get("Q_CONVERT")) and _tma_ok(q)
        if not (fp8_inputs or q_convert):
            buffers = quantize.add_q8(buffers, q)
        q, k, v, qd, kd, vd = quantize.fp8_inputs(q, k, v, p, buffers, p_regs, q_convert)
    else:
        tma_possible = _tma_ok(k, v)
        gluon_possible = launch_gluon._gluon_ok(q, k, v, out, p)
    slopes, slope_stride, rng, cu_q, cu_k = _extras(q, p)
    flags, scal = _flags(q, p, d), _scalars(p)
    descale_strides = (qd.stride(0), kd.stride(0)) if p.fp8 else (0, 0)

    def run(cfg):
        if p_regs != bool(cfg.get("P_REGS")):   # (autotune tunes tiles, not switches)
            raise AssertionError("fp8: v's keys were laid out for another kernel than the one configured")
        if p.fp8 and q.dtype != k.dtype and not cfg.get("GLUON"):
            raise AssertionError("fp8: q was left 16-bit for the Gluon kernel (Q_CONVERT), not this one")
        if cfg.get("GLUON"):
            return launch_gluon._forward_gluon(q, k, v, out, lse, cu_q, cu_k, qd, kd, vd, p, cfg, sq, sk, hq, hkv, b,
                                               d, scal, fp8["P_SCALE"])
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
                # (not its fp8 kernel: with RAW_MAX it spilled on sm90, 16 / 96 bytes at d64 full / causal)
                dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], TMA=cfg["TMA"],
                     RAW_MAX=_raw_max(cfg, p, scal["scale_log2"]) and not p.fp8, **flags, **fp8, **_launch_cfg(cfg)))

    run(_config("fwd", q, d, p, sq, sk, tma_possible, bench=_bencher(run), gluon_possible=gluon_possible,
                fp8_inputs=fp8_inputs))
    return buffers[-1:]


def _backward(do, q, k, v, out, lse, p: AttnParams, dlse=None):
    lse = lse.contiguous()                   # delta below shares lse's strides
    if do.stride(-1) != 1:
        do = do.contiguous()
    poison = _poisoning()
    dq = _empty(q.shape, q.dtype, q.device, poison)
    dk = _empty(k.shape, k.dtype, k.device, poison)
    dv = _empty(v.shape, v.dtype, v.device, poison)
    ins = [do, q, k, v, out, lse]
    # delta, lse / scale and, replaying a one-pass plan, its fp32 dQ buffer: one allocation, each
    # part 16-byte aligned (so the key takes them as aligned); an allocation cost ~15 us of host
    # time on autograd's thread (bench/results/h200-20261202-direct call 3)
    key = plans._plan_key("bwd", p, poison, ins, [dq, dk, dv], dlse is None)
    plan = plans._PLANS.get(key)
    n = lse.numel()
    n_pad = _cdiv(n, 4) * 4
    one_pass = plan is not None and plan.one_pass
    temps = _empty((2 * n_pad + (q.numel() + 4 if one_pass else 0),), torch.float32, lse.device, poison)
    delta, lse_s = temps[:n].view(lse.shape), temps[n_pad:n_pad + n].view(lse.shape)
    slots = ins + [dq, dk, dv, delta, lse_s]
    if plan is not None:
        # (the fp32 dQ buffer, zeroed by the replayed bwd_preprocess with the counter past its end:
        # plans are never of varlen calls, whose rows outside every sequence it would not zero)
        slots.append(temps[2 * n_pad:2 * n_pad + q.numel()].view(q.shape) if one_pass else None)
        if dlse is None:
            plan.replay(slots)
        else:
            plan.replay(slots, stop=1)                # the slow path's first launch: bwd_preprocess
            delta -= dlse
            plan.replay(slots, start=1)
    else:
        with plans._Recording(key) as rec:
            dq_acc = _launch_backward(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p, dlse)
            rec.save(slots + [dq_acc], one_pass=dq_acc is not None)
    if _canaries:
        _check_canaries("backward")
        dq, dk, dv = dq.clone(), dk.clone(), dv.clone()
    return dq, dk, dv


def _dq_accumulator(q: torch.Tensor, zeros: bool = True) -> torch.Tensor:
    """ONE_PASS's fp32 dQ / scale buffer in q's shape (contiguous), with 16 bytes past its end for
    the Gluon dK/dV kernel's unit counter (launch_gluon._dkdv_gluon, DYNAMIC), both zeros: made
    so here (zeros), or left to bwd_preprocess (ZERO_DQ: calls other than varlen, whose rows
    outside every sequence no program of it covers)."""
    n = q.numel()
    return (torch.zeros if zeros else torch.empty)(n + 4, dtype=torch.float32, device=q.device)[:n].view(q.shape)


def _launch_backward(do, q, k, v, out, lse, dq, dk, dv, delta, lse_s, p: AttnParams, dlse):
    """The backward's slow path: works out the kernels, their configs and their arguments, and
    launches them; -> ONE_PASS's fp32 dq buffer (dq / scale, which dq_from_acc scaled into dq),
    or None when a dQ kernel wrote dq."""
    b, sq, sk, hq, hkv, d = _shape(q, k, p)
    slopes, slope_stride, rng, cu_q, cu_k = _extras(q, p)
    flags, scal = _flags(q, p, d), _scalars(p)
    bd = flags["BLOCK_D"]

    pre_bm = 64 if configs.arch(q.device) != "interpreter" else 32

    def preprocess(dq_zero):
        """bwd_preprocess, zeroing dq_zero too (ONE_PASS's buffer) unless it is None."""
        acc = dq_zero if dq_zero is not None else _placeholders(q.device)[1]
        _launch(bwd_preprocess, (_cdiv(sq, pre_bm), hq, b),
                (out, do, delta, lse, lse_s, acc, *_strides(out, p.varlen), *_strides(do, p.varlen),
                 *_lse_strides(lse, p.varlen), *(_strides(acc, False) if dq_zero is not None else (0, 0, 0)),
                 acc.numel(), sq, d, p.scale, cu_q),
                dict(BLOCK_M=pre_bm, BLOCK_D=bd, VARLEN=p.varlen, ZERO_DQ=dq_zero is not None))

    common = (*_strides(q, p.varlen), *_strides(k, p.varlen), *_strides(v, p.varlen), *_strides(do, p.varlen))
    tail = (sq, sk, hq // hkv, d, p.scale, scal["scale_log2"], scal["softcap_in"], scal["softcap_out"],
            scal["window_left"], scal["window_right"], scal["dropout_p"], sk)

    # dk/dv builds its q and dO descriptors inside the loop over a kv head's q heads, which Triton
    # 3.6's pipeliner cannot always handle: TMA only without GQA (group 1 compiles the loop away).
    tma_dkdv = hq == hkv and _tma_ok(q, do)

    def run_dkdv(cfg, dq_acc=None):
        """The dK/dV launch; ONE_PASS: into dq_acc (zeros; fresh ones when None: autotune's
        search runs several)."""
        if cfg["ONE_PASS"] and dq_acc is None:
            dq_acc = _dq_accumulator(q)
        acc = dq_acc if cfg["ONE_PASS"] else _placeholders(q.device)[1]
        if cfg.get("GLUON"):
            return launch_gluon._dkdv_gluon(q, k, v, do, lse_s if cfg.get("LSE_PREP") else lse, delta, dk, dv, acc,
                                            cu_q, cu_k, p, cfg, sq, sk, hkv, b, d, scal)
        if cfg["TMA"]:
            _tma_allocator()
        _launch(bwd_dkdv_kernel, (_cdiv(sk, cfg["BLOCK_N"]), hkv, b),
                (q, k, v, do, lse, delta, dk, dv, acc, slopes, rng, cu_q, cu_k, *common,
                 *_strides(dk, p.varlen), *_strides(dv, p.varlen),
                 *(_strides(acc, p.varlen) if cfg["ONE_PASS"] else (0, 0, 0)), *_lse_strides(lse, p.varlen),
                 slope_stride, *tail),
                dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], ONE_PASS=cfg["ONE_PASS"], TMA=cfg["TMA"], **flags,
                     **_launch_cfg(cfg)))

    def run_dq(cfg):
        if cfg.get("GLUON"):
            return launch_gluon._dq_gluon(q, k, v, do, lse, delta, dq, cu_q, cu_k, p, cfg, sq, sk, hq, hkv, b, d, scal)
        _launch(bwd_dq_kernel, (_cdiv(sq, cfg["BLOCK_M"]), hq, b),
                (q, k, v, do, lse, delta, dq, slopes, rng, cu_q, cu_k, *common,
                 *_strides(dq, p.varlen), *_lse_strides(lse, p.varlen), slope_stride, *tail),
                dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], **flags, **_launch_cfg(cfg)))

    gluon_ok = launch_gluon._gluon_ok(q, k, v, do, p)
    # GQA only through host-made 4-D descriptors (a unit steps through its kv head's q heads; not
    # varlen; by default where configs.gluon_wins); a positive scale: its multiplies start from
    # -lse / scale, which a zero or negative scale would turn into NaN or +inf
    gqa_ok = hq == hkv or (not p.varlen and launch_gluon._host_desc_ok(q, k, v, do))
    gluon_dkdv = gqa_ok and gluon_ok and p.scale > 0
    # the dK/dV config before bwd_preprocess, which zeroes ONE_PASS's buffer; autotune's search
    # (no plan is recorded then) runs bwd_preprocess first for the delta its launches read
    cfg = _config("bwd_dkdv", q, d, p, sq, sk, tma_dkdv, bench=_bencher(run_dkdv, setup=lambda: preprocess(None)),
                  gluon_possible=gluon_dkdv, group=hq // hkv)
    dq_acc = _dq_accumulator(q, zeros=p.varlen) if cfg["ONE_PASS"] else None
    preprocess(None if dq_acc is None or p.varlen else dq_acc)
    if dlse is not None:
        # d lse / d S = P, so a gradient on lse enters as dS = P * (dP - (delta - dlse))
        delta -= dlse
    run_dkdv(cfg, dq_acc)
    if cfg["ONE_PASS"]:                      # dq / scale was accumulated by bwd_dkdv
        block = 4096 if configs.arch(q.device) != "interpreter" else 256
        _launch(dq_from_acc, (_cdiv(dq.numel(), block),), (dq_acc, dq, dq.numel(), p.scale), dict(BLOCK=block))
        return dq_acc
    run_dq(_config("bwd_dq", q, d, p, sq, sk, False, bench=_bencher(run_dq), gluon_possible=gluon_ok))
    return None


def _bencher(run, setup=None):
    """Time one config of a launch (used only when autotune searches); setup: called once before
    the first timing."""
    def bench(cfg):
        nonlocal setup
        if setup is not None:
            setup, once = None, setup
            once()
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
