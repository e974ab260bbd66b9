"""tools/triton_compile_check.py's reading of AMD assembly: which MFMA instructions multiply fp8.
The tool itself (real compiles for gfx942 and sm_90, the fp8 forward for gfx950 / sm89 / sm100 /
sm120) runs in CI after the tests; importing it here would take TRITON_INTERPRET out of this
process, so it is read in a subprocess."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (instruction as the gfx942 / gfx950 assembly prints it, multiplies fp8)
LINES = [
    ("v_mfma_f32_32x32x16_fp8_fp8 a[0:15], v[4:5], v[6:7], a[0:15]", True),        # gfx942
    ("v_mfma_f32_32x32x16_bf8_fp8 a[0:15], v[4:5], v[6:7], a[0:15]", True),
    ("v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], 0", True),          # gfx950, e4m3 x e4m3
    ("v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], v[0:15] cbsz:1 blgp:1", True),   # e5m2
    ("v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], 0 cbsz:2", False),  # fp6 operand
    ("v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3] blgp:4", False),  # fp4 operand
    ("v_mfma_f32_32x32x8_f16 a[0:15], v[2:3], v[4:5], a[0:15]", False),           # fp16 emulation
    ("v_mfma_f32_32x32x16_bf16 v[0:15], v[16:19], v[20:23], v[0:15]", False),
]


def test_fp8_mfma_recognised_on_gfx942_and_gfx950():
    code = ("import sys; sys.path.insert(0, 'tools'); import triton_compile_check as t; "
            f"print([t._mfma_is_fp8(line) for line, _ in {LINES!r}])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str([want for _, want in LINES])
