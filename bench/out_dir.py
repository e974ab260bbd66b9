"""Where the bench tools write by default: ./fa_ck-results/<tool>-<device>-<date>/ under the
current directory, so a run never writes into the source tree (fa_ck-results/ is git-ignored)."""
from __future__ import annotations

import datetime
import re
from pathlib import Path

RESULTS_DIR = "fa_ck-results"


def device_slug(name: str) -> str:
    """A device name as a path part: 'NVIDIA H200' -> 'h200', 'AMD Instinct MI300X' -> 'mi300x'."""
    s = re.sub(r"^(nvidia|amd)\s+(instinct\s+)?", "", name.strip(), flags=re.I).lower()
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"


def default_out_dir(tool: str, device: str) -> Path:
    """fa_ck-results/<tool>-<device slug>-<YYYYmmdd-HHMMSS>, relative to the current directory."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(RESULTS_DIR) / f"{tool}-{device_slug(device)}-{stamp}"
