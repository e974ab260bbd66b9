"""What the device is: the architecture a call's configs are chosen for, its SM count, and the
fp8 format it multiplies. Cached per device (every call asks)."""
from __future__ import annotations

import os

import torch

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"     # read once: Triton reads it when kernels are decorated

_ARCH: dict = {}
_SM_COUNT: dict = {}


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def arch(device: torch.device) -> str:
    """'interpreter' (TRITON_INTERPRET=1, or tensors off the GPU), 'cuda:sm90', 'hip:gfx942', ..."""
    if INTERPRET or device.type != "cuda":
        return "interpreter"
    index = _index(device)
    if index not in _ARCH:
        if torch.version.hip:
            _ARCH[index] = "hip:" + torch.cuda.get_device_properties(index).gcnArchName.split(":")[0]
        else:
            major, minor = torch.cuda.get_device_capability(index)
            _ARCH[index] = f"cuda:sm{major}{minor}"
    return _ARCH[index]


def sm_count(device: torch.device) -> int:
    """Multiprocessors of the device (a persistent grid's programs); an H100's or H200's 132 off a GPU."""
    if device.type != "cuda":
        return 132
    index = _index(device)
    if index not in _SM_COUNT:
        _SM_COUNT[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SM_COUNT[index]


def fp8_dtype(device):
    """The fp8 format a device (or an arch() name) multiplies natively, or None where it has no fp8
    matrix unit: the fnuz formats on MI300X (gfx942); the OCP ones on gfx950, NVIDIA sm89+ and in
    the interpreter (which cannot run fnuz at all)."""
    name = device if isinstance(device, str) else arch(device)
    if name == "interpreter":
        return torch.float8_e4m3fn
    if name.startswith("hip:"):
        if name == "hip:gfx942":
            return torch.float8_e4m3fnuz
        return torch.float8_e4m3fn if name.startswith("hip:gfx95") else None
    return torch.float8_e4m3fn if int(name.split("sm")[-1]) >= 89 else None
