"""Which persistent program of the Gluon forward takes which causal tile (SCHEDULE): the default
round-robin over pairs of query blocks (forward_gluon_loads._tile), then light tiles moved from
the most loaded programs to the least, so that the last round leaves fewer SMs idle.

Causal d128 S4k at 4 x 16 heads has 1024 units of 33 key blocks over 132 programs: 100 programs
take 8 (264 blocks), 32 take 7 (231), the mean is 256. In the same run 3 x 22 heads (8 units each)
ran +3.3 % TFLOP/s, full calls +2.3 % (bench/results/h200-20261204-streamk call 1). Full calls'
tiles all weigh the same, so only splitting them along keys would help, which lost (STREAM_K,
same folder). Causal tiles weigh 1 to n_m blocks, and the light ones fill the gap: moving one from
the most to the least loaded program while that narrows their gap takes S4k to 258 blocks, nanoGPT's
64 x 12 x S1024 from 216 to 212. Every tile is computed as before, only elsewhere: out and lse are
bit for bit the same. Moved tiles go last in their new program's list (the last round's heads,
whose K and V are still in L2).

The schedule lives on the device as int32: each program's first entry (programs + 1 of them),
then the entries, a tile each as (batch x heads + head) x query blocks + query block. Made once per
shape and device and never written (host._constant_tensors: a replay's plan passes it as it is).
"""
from __future__ import annotations

import functools

import torch

from .host import _cdiv, _constant_tensors


def tile_blocks(sq: int, sk: int, bm: int, bn: int, window_right: int) -> tuple:
    """Key blocks per query block of a causal (or right-windowed) call without a left window:
    forward_gluon_loads._tile's count (common.key_blocks: keys from 0 to the window's end)."""
    return tuple(_cdiv(min(max(m0 + bm + sk - sq + window_right, 0), sk), bn) for m0 in range(0, sq, bm))


@functools.lru_cache(maxsize=64)
def balanced(heads: int, blocks: tuple, programs: int) -> tuple | None:
    """(starts, tiles) over `programs` for `heads` x len(blocks) tiles weighing blocks[query block]
    key blocks, or None where moving tiles does not shorten the longest program. Starts with the
    kernel's own round-robin (unit u, the pair of query blocks n_m-1-k and k of head u // per_head,
    to program u % programs), then moves tiles from the most loaded program (its last first) to
    the least loaded, each time the one closest to half their gap, while one narrows it."""
    n_m = len(blocks)
    per_head = (n_m + 1) // 2
    lists = [[] for _ in range(programs)]
    for u in range(heads * per_head):
        bh, k = divmod(u, per_head)
        lists[u % programs].append(bh * n_m + n_m - 1 - k)
        if k < n_m - 1 - k:
            lists[u % programs].append(bh * n_m + k)
    load = [sum(blocks[t % n_m] for t in tiles) for tiles in lists]
    before = max(load)
    while True:
        most = max(range(programs), key=load.__getitem__)
        least = min(range(programs), key=load.__getitem__)
        gap = load[most] - load[least]
        best = None
        for i in range(len(lists[most]) - 1, -1, -1):
            w = blocks[lists[most][i] % n_m]
            if 0 < w < gap and (best is None or abs(2 * w - gap) < abs(2 * best[1] - gap)):
                best = (i, w)
        if best is None:
            break
        lists[least].append(lists[most].pop(best[0]))
        load[most] -= best[1]
        load[least] += best[1]
    if max(load) >= before:
        return None
    starts = [0]
    for tiles in lists:
        starts.append(starts[-1] + len(tiles))
    return tuple(starts), tuple(t for tiles in lists for t in tiles)


def schedule(device, heads: int, blocks: tuple, programs: int) -> torch.Tensor | None:
    """balanced()'s schedule as the kernel reads it (int32 on device), made once; None where it
    gains nothing, or while a CUDA graph is being captured (its copy would run only at replay)."""
    key = ("tile_schedule", heads, blocks, programs)
    made = _constant_tensors(device)
    if key not in made:
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
            return None
        plan = balanced(heads, blocks, programs)
        made[key] = None if plan is None else torch.tensor(plan[0] + plan[1], dtype=torch.int32, device=device)
    return made[key]
