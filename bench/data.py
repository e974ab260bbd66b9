"""Token data for bench/nanogpt.py: where the tokens come from and which batches a step sees.

Three sources, never a download:
- a directory with nanoGPT's train.bin / val.bin (uint16 GPT-2 token ids, read by np.memmap;
  an optional meta.pkl, as nanoGPT's char-level sets have, gives the vocabulary size);
- a text file, read as bytes: byte-level tokens, vocabulary 256, the last 10% for validation;
- nothing: the .py sources of Python's own standard library, byte-level, split the same way.

Batches are a pure function of (seed, rank, step): every attention variant sees the same
windows in the same order, and a data-parallel rank draws only from its own contiguous
shard of the tokens.
"""

import os
import pickle
import sys
import sysconfig
from dataclasses import dataclass

import numpy as np
import torch

GPT2_VOCAB_SIZE = 50257
BYTE_VOCAB_SIZE = 256
VAL_FRACTION = 0.1
TRAIN_STREAM, VAL_STREAM = 0, 1  # separate random streams, so eval never shifts training data


@dataclass
class TokenData:
    train: np.ndarray      # 1-D token ids (np.memmap for .bin files)
    val: np.ndarray
    vocab_size: int        # number of distinct token ids the model must cover
    description: str       # where the tokens came from, for the report


def load_tokens(path=None, stdlib_max_bytes=None):
    """TokenData from a nanoGPT data directory, a text file, or (path None) the stdlib."""
    if path is None:
        return stdlib_corpus(max_bytes=stdlib_max_bytes)
    if os.path.isdir(path):
        return nanogpt_bin_dir(path)
    if os.path.isfile(path):
        return text_file(path)
    raise FileNotFoundError(f"--data {path!r} is neither a directory with train.bin/val.bin nor a file")


def nanogpt_bin_dir(path):
    files = {split: os.path.join(path, f"{split}.bin") for split in ("train", "val")}
    missing = [f for f in files.values() if not os.path.isfile(f)]
    if missing:
        raise FileNotFoundError(f"nanoGPT data directory {path!r} lacks {', '.join(missing)}")
    vocab_size = GPT2_VOCAB_SIZE
    meta_path = os.path.join(path, "meta.pkl")
    if os.path.isfile(meta_path):
        # nanoGPT's character-level sets (shakespeare_char) record their vocabulary here
        with open(meta_path, "rb") as f:
            vocab_size = int(pickle.load(f)["vocab_size"])
    train = np.memmap(files["train"], dtype=np.uint16, mode="r")
    val = np.memmap(files["val"], dtype=np.uint16, mode="r")
    return TokenData(train, val, vocab_size,
                     f"nanoGPT token files in {os.path.abspath(path)} "
                     f"({len(train):,} train / {len(val):,} val tokens, uint16, vocab {vocab_size})")


def split_bytes(raw, description):
    tokens = np.frombuffer(raw, dtype=np.uint8)
    n_val = int(len(tokens) * VAL_FRACTION)
    train, val = tokens[:len(tokens) - n_val], tokens[len(tokens) - n_val:]
    return TokenData(train, val, BYTE_VOCAB_SIZE,
                     f"{description} ({len(train):,} train / {len(val):,} val byte tokens, vocab 256)")


def text_file(path):
    with open(path, "rb") as f:
        raw = f.read()
    return split_bytes(raw, f"bytes of {os.path.abspath(path)}")


def stdlib_corpus(max_bytes=None):
    """The standard library's .py sources in a fixed (sorted) order. Ships with every
    Python, so it needs no download; tests and third-party packages are left out so the
    corpus is the same wherever this Python version is installed."""
    root = sysconfig.get_paths()["stdlib"]
    skip_dirs = {"site-packages", "dist-packages", "test", "tests", "__pycache__", "idlelib"}
    chunks, n_files, total = [], 0, 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs)
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(dirpath, name), "rb") as f:
                chunks.append(f.read())
            n_files += 1
            total += len(chunks[-1])
            if max_bytes is not None and total >= max_bytes:
                break
        if max_bytes is not None and total >= max_bytes:
            break
    if not chunks:
        raise FileNotFoundError(f"no .py files under the standard library at {root}")
    raw = b"\n".join(chunks)
    if max_bytes is not None:
        raw = raw[:max_bytes]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return split_bytes(raw, f"Python {version} standard library .py sources, {n_files} files")


class BatchSampler:
    """Random (x, y) windows, y being x shifted by one token.

    The windows of step s on rank r depend only on (seed, r, s), not on the attention
    variant, the micro-batch split or what ran before. Rank r of `world` samples inside
    the r-th contiguous shard of the tokens, so ranks never train on the same window.
    """

    def __init__(self, data, batch_size, block_size, device, seed=1337, rank=0, world_size=1):
        self.data = data
        self.batch_size = batch_size
        self.block_size = block_size
        self.device = torch.device(device)
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        for split in ("train", "val"):
            lo, hi = self._shard(split)
            if hi - lo < 1:
                raise ValueError(f"{split} data has {len(getattr(data, split)):,} tokens: too few for "
                                 f"block {block_size} on {world_size} rank(s)")

    def _shard(self, split):
        """[lo, hi): the window starts this rank may draw from."""
        tokens = getattr(self.data, split)
        shard = len(tokens) // self.world_size
        lo = self.rank * shard
        hi = lo + shard - self.block_size - 1
        return lo, hi

    def _batch(self, split, stream, index):
        tokens = getattr(self.data, split)
        lo, hi = self._shard(split)
        rng = np.random.default_rng([self.seed, stream, self.rank, index])
        starts = rng.integers(lo, hi, size=self.batch_size)
        windows = np.stack([np.asarray(tokens[s:s + self.block_size + 1], dtype=np.int64) for s in starts])
        x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))
        y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))
        if self.device.type == "cuda":
            # pinned host memory lets the copy overlap with the GPU's work
            return (x.pin_memory().to(self.device, non_blocking=True),
                    y.pin_memory().to(self.device, non_blocking=True))
        return x.to(self.device), y.to(self.device)

    def train_batch(self, step):
        return self._batch("train", TRAIN_STREAM, step)

    def val_batch(self, index):
        """The index-th validation batch: the same at every evaluation and for every variant."""
        return self._batch("val", VAL_STREAM, index)
