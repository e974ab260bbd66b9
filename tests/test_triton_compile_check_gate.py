"""tools/triton_compile_check.py's gfx942 gate without compiling: its reading of the key-block loop in
AMD assembly, what it counts as a regression against bench/results/triton_gfx942_gate.json, that the
file holds today's defaults, and that launches are compiled with the HIP launcher's pointer attributes.
The compiles themselves run in CI (.ci/run: --targets gfx942 sm90)."""
import importlib
import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
check = importlib.import_module("triton_compile_check")

# an outer loop (GQA heads) around two key-block loops: a masked one and a longer unmasked one
ASM = """
fwd_kernel:
\ts_load_dwordx2 s[0:1], s[4:5], 0x0
.LBB0_1:
\tv_mov_b32 v0, 0
.LBB0_2:
\tds_read_b128 v[0:3], v4
\tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
\tv_exp_f32_e32 v5, v5
\ts_cbranch_scc1 .LBB0_2
.LBB0_3:
\tds_read_b128 v[0:3], v4
\tds_write_b64 v4, v[6:7]
\tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
\tv_mfma_f32_16x16x16_f16 a[0:3], v[0:1], v[2:3], a[0:3]
\tv_exp_f32_e32 v5, v5
\tv_exp_f32_e32 v6, v6
\ts_cbranch_vccnz .LBB0_3
\ts_add_u32 s0, s0, 1
\ts_cbranch_scc0 .LBB0_1
\ts_endpgm
"""


def test_the_loop_is_the_innermost_with_the_most_mfmas():
    assert check.amd_loop(ASM) == {"loop_instrs": 7, "loop_mfma": 2, "loop_mfma_flops": 16384 + 8192,
                                   "loop_ds_read": 1, "loop_ds_write": 1, "loop_exp": 2}
    assert check.amd_loop("k:\n\ts_endpgm\n") == {}


@pytest.mark.parametrize("vgpr,waves", [(128, 4), (168, 3), (200, 2), (256, 2), (257, 1), (258, 1), (512, 1)])
def test_waves_by_registers(vgpr, waves):
    assert check.reg_waves(vgpr) == waves


ROW = {"config": "128x64 w4 s2", "vgpr": 200, "agpr": 0, "reg_waves": 2, "occupancy": 2, "spill": 0, "scratch": 0,
       "lds": 16384, "mfma_work": 1.0, "instr_per_16k": 13.4, "loop_ds_read": 16, "loop_ds_write": 10, "loop_exp": 33}


@pytest.mark.parametrize("change,why", [
    (dict(spill=2, scratch=12), "spills"), (dict(occupancy=1), "occupancy 1"),
    (dict(vgpr=258, reg_waves=1), "258 registers allow 1 waves"), (dict(mfma_work=1.5), "MFMA work 1.5"),
    (dict(instr_per_16k=14.2), "14.2 loop instructions"),
])
def test_the_gate_fails_a_regression(change, why):
    bad = check.gate_check({"k | c": dict(ROW, **change)}, {"k | c": ROW}, complete=True)
    assert len(bad) == 1 and why in bad[0], bad


def test_the_gate_passes_gains_and_scheduling_noise():
    better = dict(ROW, vgpr=180, occupancy=3, reg_waves=2, instr_per_16k=14.0, config="128x32 w4 s2")
    assert check.gate_check({"k | c": better}, {"k | c": ROW}, complete=True) == []


def test_rows_that_appear_or_go_fail_only_a_complete_run():
    assert check.gate_check({}, {"k | c": ROW}, complete=False) == []
    assert "not compiled" in check.gate_check({}, {"k | c": ROW}, complete=True)[0]
    assert "not in" in check.gate_check({"k | c": ROW}, {}, complete=True)[0]


def test_the_gate_file_holds_todays_gfx942_defaults():
    """Each gated row's config is what config.py launches now: a change of default rewrites the file
    (--write-gate) once the compiled figures say it is no worse."""
    gated = json.loads(check.GATE_FILE.read_text())["rows"]
    now = {}
    for call in check.CALLS + check.FP8_CALLS:
        for kernel, _, _, c in check.record("gfx942", call):
            name = kernel.fn.__name__
            if name in check.GATED:
                now.setdefault(f"{name} | {call.label}", set()).add(
                    f"{c['BLOCK_M']}x{c['BLOCK_N']} w{c['num_warps']} s{c['num_stages']}")
    for key, row in gated.items():
        assert row["config"] in now[" | ".join(key.split(" | ")[:2])], key


def test_pointers_are_specialised_as_the_hip_launcher_does():
    """A 16-byte aligned tensor within 2 GiB: what the binder the compile check uses gives its pointers."""
    backend = check.make_backend(check.gpu_target("gfx942"))
    spec = backend.get_tensor_specialization(torch.zeros(64), align=True)
    assert all(a in backend.parse_attr(spec) for a in check.HIP_POINTER_ATTRS)
