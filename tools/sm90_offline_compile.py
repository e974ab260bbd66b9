"""Compile, on the CPU, every Triton kernel that an fa_ck call would launch on an sm90 GPU (H100,
H200), with Triton's own argument specialisation (alignment, integers equal to 1), and launch
nothing: compiler crashes (ptxas) reproduce without a GPU. Uses whatever Triton is installed;
the H200 has 3.6, so for its crashes install that one beside: `pip install --target DIR
triton==3.6.0` and run with PYTHONPATH=DIR:python.

    python tools/sm90_offline_compile.py --b 3 --sq 2 --sk 1 --hq 8 --hkv 2 --d 16 --dtype bfloat16 --causal
    FA_CK_TRITON_CONFIG='{"fwd": {"num_stages": 2}}' python tools/sm90_offline_compile.py --d 128
    python tools/sm90_offline_compile.py --scan     # edge shapes (lengths 1, 0/1-token varlen, d16-256)

Prints each kernel compiled (name, constexprs of note, warps/stages) and OK or the error (its
first line; with FA_CK_FULL_ERRORS=1 the innermost cause in full).
Outputs are garbage (no kernel runs); only the compiles mean anything.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.pop("TRITON_INTERPRET", None)

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime import driver as triton_driver  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402


class _Sm90:
    """Just enough of a Triton driver for JITFunction.run to specialise and compile for sm90."""
    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_active_torch_device(self):
        return torch.device("cpu")


_run = JITFunction.run


def compile_only(log: list, show_specialization: bool = False):
    """Make every launch a warm-up (compile, no launch) and record in `log` what compiled; with
    show_specialization, also how Triton specialised the runtime arguments (pointer alignment,
    integers equal to 1 or divisible by 16)."""
    run = _run

    def compiling_run(self, *args, grid, warmup, **kwargs):
        label = f"{self.fn.__name__} " + " ".join(f"{k}={v}" for k, v in kwargs.items()
                                                  if k.isupper() or k in ("num_warps", "num_stages"))
        if show_specialization:
            _, _, _, _, binder = self.device_caches[0]
            _, spec, _ = binder(*args, **kwargs)
            names = [p.name for p in self.params]
            label += "\n           " + " ".join(f"{n}:{s[1]}" for n, s in zip(names, spec)
                                                  if s[0] != "constexpr" and s[1] not in (None, ""))
        try:
            run(self, *args, grid=grid, warmup=True, **kwargs)
            log.append((label, "OK"))
        except Exception as e:  # noqa: BLE001  (report every kernel, crashed or not)
            log.append((label, _error_text(e)))
        return None
    JITFunction.run = compiling_run


def _error_text(e: Exception) -> str:
    """A compile error's first line; with FA_CK_FULL_ERRORS=1 the innermost cause's whole text (a
    Gluon kernel's error wraps each partition's: the one that says what is wrong comes last)."""
    if not os.environ.get("FA_CK_FULL_ERRORS"):
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    while e.__cause__ is not None:
        e = e.__cause__
    return f"{type(e).__name__}: {e}"


# --scan: edge shapes where Triton's specialisation differs from the usual (lengths of 1, empty
# and one-token varlen sequences, GQA, head dims from 16 to 256) across the features; the
# H200 sweep found a ptxas crash at one of them. Plain calls up to d256 take the Gluon forward.
_LENS = json.dumps([[5, 1, 0, 2], [1, 0, 3, 2]])
SCAN = [["--d", str(d), *shape] for d in (16, 64, 128, 256) for shape in (
    ["--b", "3", "--sq", "2", "--sk", "1", "--hq", "8", "--hkv", "2", "--causal"],
    ["--b", "1", "--sq", "1", "--sk", "33", "--hq", "4", "--hkv", "1", "--dtype", "float16",
     "--feat", '{"softcap": 5.0}'],
    ["--b", "2", "--sq", "17", "--sk", "1", "--hq", "2", "--hkv", "2", "--causal", "--alibi", "head"],
    ["--hq", "2", "--hkv", "1", "--causal", "--lens", _LENS, "--feat", '{"dropout_p": 0.1}'],
    ["--hq", "2", "--hkv", "2", "--lens", _LENS, "--alibi", "batch", "--feat", '{"window_size": [3, 0]}'],
    ["--hq", "4", "--hkv", "2", "--lens", _LENS, "--feat", '{"window_size": [3, 5]}'])]   # Gluon forward up to d256


def scan() -> int:
    """main() over SCAN; 1 when any kernel failed to compile."""
    bad = [argv for argv in SCAN if main(argv) != 0]
    print(f"{len(SCAN)} shapes, {len(bad)} with a kernel that did not compile"
          + "".join(f"\n  {' '.join(b)}" for b in bad))
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("b", 2), ("sq", 256), ("sk", 256), ("hq", 4), ("hkv", 4), ("d", 128)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--dtype", default="bfloat16", choices=["float16", "bfloat16", "float32"])
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--lens", type=str, default=None, help="varlen: JSON [[lens_q...], [lens_k...]]")
    ap.add_argument("--feat", type=str, default="{}", help="JSON of more flash_attn_func arguments")
    ap.add_argument("--alibi", choices=["head", "batch"], default=None, help="ALiBi slopes per head or per (batch, head)")
    ap.add_argument("--show-specialization", action="store_true")
    ap.add_argument("--scan", action="store_true", help="compile the edge shapes of SCAN instead")
    args = ap.parse_args(argv)
    if args.scan:
        return scan()

    triton_driver.set_active(_Sm90())
    os.environ["FA_CK_FAST_PATH"] = "0"            # every launch through kernel[grid](...): JITFunction.run
    import fa_ck
    import importlib
    tb = importlib.import_module("fa_ck.backends.triton")   # (fa_ck.backends is the function)
    device = importlib.import_module("fa_ck.backends.triton.device")
    device.INTERPRET = False
    device.arch = lambda dev: "cuda:sm90"          # the sm90 configs (tiles, TMA, Gluon) for CPU tensors
    device.sm_count = lambda dev: 132              # an H100/H200's SMs: the persistent kernels' programs
    tb.available = lambda: (True, "")
    tb.unsupported = lambda q, k, v, p: None       # CPU tensors are fine: nothing launches
    log: list = []
    compile_only(log, args.show_specialization)

    dtype = getattr(torch, args.dtype)
    feat = dict(json.loads(args.feat), causal=args.causal, backend="triton")
    batch = len(json.loads(args.lens)[0]) if args.lens else args.b
    if args.alibi:
        feat["alibi_slopes"] = torch.rand((args.hq,) if args.alibi == "head" else (batch, args.hq)) * 0.3
    if args.lens:
        lens_q, lens_k = json.loads(args.lens)
        cu = lambda lens: torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32)  # noqa: E731
        q = torch.randn(sum(lens_q), args.hq, args.d, dtype=dtype, requires_grad=True)
        k, v = (torch.randn(sum(lens_k), args.hkv, args.d, dtype=dtype, requires_grad=True) for _ in range(2))
        out = fa_ck.flash_attn_varlen_func(q, k, v, cu(lens_q), cu(lens_k), max(lens_q), max(lens_k), **feat)
    else:
        q = torch.randn(args.b, args.sq, args.hq, args.d, dtype=dtype, requires_grad=True)
        k, v = (torch.randn(args.b, args.sk, args.hkv, args.d, dtype=dtype, requires_grad=True) for _ in range(2))
        out = fa_ck.flash_attn_func(q, k, v, **feat)
    out.backward(torch.ones_like(out))
    print(f"triton {triton.__version__}, sm90, {json.dumps(vars(args))}")
    for label, status in log:
        print(f"  {status:<8} {label}" if status == "OK" else f"  FAILED   {label}\n           {status}")
    return 0 if all(s == "OK" for _, s in log) else 1


if __name__ == "__main__":
    sys.exit(main())
