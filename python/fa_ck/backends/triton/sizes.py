"""Sizes the kernels are built from: the head dim's block, and the shared memory each Gluon
(sm90) kernel allocates for a choice of tiles, which config.py checks against the 227 KB a
program may have."""
from __future__ import annotations

SM90_BYTES = 232448          # shared memory an sm90 program may have
BARRIERS = 1024              # a little for each kernel's mbarriers


def pow2(n: int) -> int:
    """n rounded up to a power of two (1 for n <= 1): a tile's side."""
    return 1 << max(n - 1, 0).bit_length()


def block_d(head_dim: int) -> int:
    """The head dim rounded up to a power of two, at least 16 (a dot's K)."""
    return max(16, pow2(head_dim))


def fp8_block_d(head_dim: int) -> int:
    """fp8 dots take K >= 32: QK^T's K is the head dim block."""
    return max(32, block_d(head_dim))


def keys_padded(seqlen_k: int) -> int:
    """A keys-contiguous fp8 v's row length: the keys padded to a multiple of 16, so that TMA can
    address each row (and the register order of P, in groups of 16, covers the last keys)."""
    return -(-seqlen_k // 16) * 16


def fwd_gluon(head_dim: int, block_m: int, block_n: int, num_stages: int, in_bytes: int,
              q_convert: bool = False, out_bytes: int = 0) -> int:
    """forward_gluon.py: Q (192 queries as four 64-row tiles), the K and V rings, fp8 with
    q_convert also q's 16-bit tile, and with out_bytes the TMA store's staging tiles of out."""
    fp8 = in_bytes == 1
    d = fp8_block_d(head_dim) if fp8 else block_d(head_dim)
    q_rows = 256 if block_m == 192 else block_m
    total = q_rows * d * in_bytes + 2 * num_stages * block_n * d * in_bytes + (q_rows * d * 2 if fp8 and q_convert else 0)
    if out_bytes:
        total += block_m * fwd_out_cols(head_dim, block_m, block_n, num_stages, in_bytes, q_convert, out_bytes) * out_bytes
    return total + BARRIERS


def fwd_out_cols(head_dim: int, block_m: int, block_n: int, num_stages: int, in_bytes: int, q_convert: bool,
                 out_bytes: int) -> int:
    """Columns of out each consumer warpgroup stages for the TMA store: the whole head dim where
    that fits beside the rest, else half (out then leaves in two stores)."""
    d = fp8_block_d(head_dim) if in_bytes == 1 else block_d(head_dim)
    rest = fwd_gluon(head_dim, block_m, block_n, num_stages, in_bytes, q_convert)
    return d if rest + block_m * d * out_bytes <= SM90_BYTES else d // 2


def dq_gluon(head_dim: int, block_n: int, num_stages: int, in_bytes: int) -> int:
    """dq_gluon.py: Q and dO of its 128 queries and the K and V rings."""
    d = block_d(head_dim)
    return 2 * 128 * d * in_bytes + 2 * num_stages * block_n * d * in_bytes + BARRIERS


def dkdv_keys(head_dim: int) -> int:
    """Keys per unit of backward_gluon.py: two warpgroups of 64 up to d128; past it 64 keys that
    both take, each owning half of dK's and dV's columns."""
    return 64 if block_d(head_dim) > 128 else 128


def dkdv_gluon(head_dim: int, block_m: int, num_stages: int, in_bytes: int, one_pass: bool, num_kv: int = 1,
               tma_store: bool = False) -> int:
    """backward_gluon.py: num_kv K and V tiles, the Q and dO rings, P^T past d128, dS^T with one
    pass or past d128, dQ's two fp32 tiles with one pass, and dK's / dV's staging tiles for the
    TMA stores (up to d128)."""
    d, bn = block_d(head_dim), dkdv_keys(head_dim)
    total = 2 * num_kv * bn * d * in_bytes + 2 * num_stages * block_m * d * in_bytes
    if d > 128:
        total += bn * block_m * in_bytes
    if one_pass or d > 128:
        total += bn * block_m * in_bytes
    if one_pass:
        total += block_m * d * 4
    if tma_store and d <= 128:
        total += 2 * 64 * d * in_bytes
    return total + BARRIERS
