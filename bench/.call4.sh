export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
date -u
timeout 60 python3 -m pytest tests/test_gpu_scale.py::test_varlen_64_sequences_32k_tokens -q -p no:cacheprovider --tb=short 2>&1 | tail -3
timeout 70 python3 -m pytest tests/test_fp8.py -q -n 14 -p no:cacheprovider --tb=line -rf 2>&1 | grep -E "^/|Error|FAILED|passed|failed" | tail -12
