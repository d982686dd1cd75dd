"""Super-shingles: one-permutation min-hashing cut into bands, each band hashed to 64 bits.

Every shingle fingerprint is re-mixed and thrown into one of k bins by its top bits; a bin
keeps its smallest value (one-permutation hashing, O(n) for any k, instead of k hash
functions over every shingle). Empty bins borrow the value of the next non-empty bin to their
right, tagged with the distance (rotation densification), so that every document has k values.
Bins are then cut into b bands of r values; each band is hashed to one super-shingle. Two
documents of resemblance J share at least one super-shingle with probability about
1 - (1 - J**r)**b: the S-curve ``candidate_probability`` documents (``min_shared_bands`` of
them: the binomial tail it computes).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._hashing import U64, fmix64, seeded_constant
from .settings import Settings

__all__ = ["super_shingles"]

_BIN_MIX, _DENSIFY, _BAND_BASE, _BAND_MIX = 5, 6, 7, 8
_EMPTY = np.uint64((1 << 64) - 1)


def min_hash_bins(shingle_sets: list[U64], settings: Settings) -> U64:
    """A (documents x k) array of one-permutation min-hash values, densified."""
    k = settings.num_bins
    bin_bits = k.bit_length() - 1
    counts = np.fromiter((len(s) for s in shingle_sets), dtype=np.int64, count=len(shingle_sets))
    bins = np.full(len(shingle_sets) * k, _EMPTY, dtype=np.uint64)
    if counts.sum():
        mixed = fmix64(
            np.concatenate(shingle_sets) ^ np.uint64(seeded_constant(settings.seed, _BIN_MIX))
        )
        row = np.repeat(np.arange(len(shingle_sets), dtype=np.int64), counts)
        slot = row * k + (mixed >> np.uint64(64 - bin_bits)).astype(np.int64)
        np.minimum.at(bins, slot, mixed & np.uint64((1 << (64 - bin_bits)) - 1))
    table = bins.reshape(len(shingle_sets), k)
    return _densify(table, seeded_constant(settings.seed, _DENSIFY))


def _densify(table: U64, step: int) -> U64:
    k = table.shape[1]
    filled = table != _EMPTY
    columns = np.arange(2 * k)
    never = np.int64(4 * k)
    source = np.where(np.concatenate([filled, filled], axis=1), columns, never)
    # the first filled column at or to the right of each column, wrapping around once
    nearest = np.minimum.accumulate(source[:, ::-1], axis=1)[:, ::-1][:, :k]
    has_any = filled.any(axis=1)
    nearest[~has_any] = np.arange(k)
    distance = (nearest - np.arange(k)).astype(np.uint64)
    rows = np.arange(table.shape[0])[:, None]
    values = table[rows, nearest % k] + distance * np.uint64(step)
    values[~has_any] = _EMPTY
    densified: U64 = values
    return densified


def super_shingles(shingle_sets: list[U64], settings: Settings) -> U64:
    """A (documents x b) array of super-shingles (documents with no shingles get none)."""
    bands, rows = settings.band_count, settings.rows_per_band
    table = min_hash_bins(shingle_sets, settings)[:, : bands * rows]
    table = table.reshape(len(shingle_sets), bands, rows)
    base = np.uint64(seeded_constant(settings.seed, _BAND_BASE, odd=True))
    combined = np.zeros((len(shingle_sets), bands), dtype=np.uint64)
    for j in range(rows):
        combined = combined * base + table[:, :, j]
    band_tags = np.arange(bands, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    mix = np.uint64(seeded_constant(settings.seed, _BAND_MIX))
    result: npt.NDArray[np.uint64] = fmix64(combined ^ band_tags[None, :] ^ mix)
    return result
