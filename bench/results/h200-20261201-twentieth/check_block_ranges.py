"""A Python model of per_warpgroup_blocks.patch's block ranges (common.key_blocks, transcribed),
checked by brute force on random lengths, windows and 64/128-key blocks: for each warpgroup of
64 rows in each 128-query tile, no block it leaves unread holds a score its rows can see, no block
it treats as whole hides one, and the tile's blocks cover every visible key.
    python3 bench/results/h200-20261201-twentieth/check_block_ranges.py   (~5 min; prints 'bad 0 ...')"""
import random
def cdiv(a, b): return -(-a // b)
def key_blocks(m0, sq, sk, wl, wr, BM, BN, ML, MR):
    off = sk - sq; lo = 0; hi = sk; full_lo = 0; full_hi = sk // BN * BN
    if ML:
        lo = max(m0 + off - wl, 0) // BN * BN
        full_lo = cdiv(max(m0 + BM - 1 + off - wl, 0), BN) * BN
    if MR:
        hi = min(max(m0 + BM + off + wr, 0), sk)
        full_hi = min(full_hi, max(m0 + off + wr + 1, 0) // BN * BN)
    hi = max(hi, lo); full_lo = min(max(full_lo, lo), hi); full_hi = min(max(full_hi, full_lo), hi)
    return lo, full_lo, full_hi, hi
def visible(i, j, sq, sk, wl, wr, ML, MR):
    d = i + sk - sq
    return j < sk and (not ML or j >= d - wl) and (not MR or j <= d + wr)
random.seed(0); bad = 0; skipped = 0; unmasked_gain = 0
for trial in range(1500):
    sq, sk = random.randint(1, 400), random.randint(1, 400)
    BN = random.choice([64, 128])
    ML, MR = random.random() < 0.4, random.random() < 0.8
    wl = random.randint(0, sk - 1) if ML else -1
    wr = random.choice([0, 0, random.randint(0, max(sq - 1, 0))]) if MR else -1
    if not (ML or MR): continue
    for m0t in range(0, sq, 128):
        lo, flo_t, fhi_t, hi = key_blocks(m0t, sq, sk, wl, wr, 128, BN, ML, MR)
        n_blocks = cdiv(max(hi - lo, 0), BN)
        if n_blocks == 0: continue
        for row0 in (0, 64):
            m0 = m0t + row0
            _, flo, fhi, hi_m = key_blocks(m0, sq, sk, wl, wr, 64, BN, ML, MR)
            n_mine = min(cdiv(max(hi_m - lo, 0), BN), n_blocks) or n_blocks
            skipped += n_blocks - n_mine
            rows = [i for i in range(m0, m0 + 64) if i < sq]
            for jb in range(n_blocks):
                n0 = lo + jb * BN
                keys = range(n0, n0 + BN)
                vis = [visible(i, j, sq, sk, wl, wr, ML, MR) for i in rows for j in keys]
                if jb >= n_mine and any(vis): bad += 1; print("skipped a visible block", sq, sk, wl, wr, BN, m0t, row0, jb)
                unmasked = not ((n0 < flo) | (n0 >= fhi))
                if jb < n_mine and unmasked and not all(vis) and rows: bad += 1; print("unmasked block with hidden score", sq, sk, wl, wr, BN, m0t, row0, jb)
                if unmasked and ((n0 < flo_t) | (n0 >= fhi_t)): unmasked_gain += 1
            # every visible key of these rows lies in the tile's blocks
            for i in rows:
                for j in range(sk):
                    if visible(i, j, sq, sk, wl, wr, ML, MR) and not (lo <= j < lo + n_blocks * BN): bad += 1
print("bad", bad, "blocks skipped", skipped, "blocks newly unmasked", unmasked_gain)
