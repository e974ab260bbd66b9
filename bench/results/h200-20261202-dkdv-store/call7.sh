# Device call 7 of this folder (nvidia-h200, 2026-12-02; call 10 of the session, the last ~240 s of device
# time): the GPU tests after 07be171 (a barrier after each store_wait whose thread alone waited; dK / dV TMA
# stores through host-made descriptors only; the dQ kernel both ways), a selection, 16 at a time.
#   bash bench/results/h200-20261202-dkdv-store/call7.sh      (from the repo root)
set -uo pipefail
source bench/device_env.sh
timeout 130 python3 -m pytest tests/test_gluon_backward.py tests/test_gluon_forward.py -m "gpu and not bigmem" -q \
    -p no:warnings -n 16 -rf -k "(dkdv_matches_reference and (plain_stores or host_desc_one_pass or \
one_pass_registers)) or dq_matches_reference or (forward_matches_reference and defaults and (shape8 or shape10))" \
    2>&1 | grep -v "^\s*$" | grep -v "Warn\|warner" | tail -8 | tee "$OUT/tests.txt"
