"""Benchmarks for fa_ck. `python bench/nanogpt.py` trains nanoGPT once per attention variant."""
