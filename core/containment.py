"""The containment sample: Broder's MOD_m sample, with m chosen per document by its size.

Resemblance compares documents of about the same size; containment c(A, B) = |A∩B| / |A|
asks how much of a small A is inside a large B, and a bottom-s sketch of B samples only a
share s/|B| of B's shingles: about s·|A|/|B| of A's values fall where both sketches are
complete, 13 for an excerpt of 5 %, too few to find or to measure it by.

A document of n shingles also keeps the sample values (high 32 bits of its shingle
fingerprints) that are 0 modulo m, m the smallest power of two with n/m <= P
(``Settings.containment_sample``): between P/2 and P values, every value when n <= P. They go
into an inverted index. The samples nest: a value 0 modulo 2m is 0 modulo m, so any two
documents compare at the coarser modulus M = max(m_A, m_B), and a key one document looks up
and the other posted is always one of (A∩B) mod M. A query looks up every one of its values
(its m is 1), so it meets each stored document at that document's own modulus.

The estimate joins both uniform samples: the shared values below the sketches' common
cut-off (``neardup.core.sketch``) plus the shared values 0 modulo M, over A's values in the
same two domains; for an excerpt of 5 % of a large source that is about 13 + P/40 values
instead of 13, and for sources under s shingles the sketch alone is complete and exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ._hashing import U64, drop_repeats
from .shingles import top_bits

__all__ = ["MAX_LEVEL", "containment_keys", "kept_at_levels", "level_counts", "sampled_at"]

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]

#: a sample value has 32 bits: at level 32 only the value 0 is kept
MAX_LEVEL = 32


def containment_keys(fingerprints: U64, level: int) -> U32:
    """The sample values (high 32 bits, ascending, distinct) of a sorted, unique array of
    shingle fingerprints whose low ``level`` bits are all 0."""
    if level > 0:  # the low bits of the high half, tested before anything is copied
        mask = np.uint64(((1 << min(level, MAX_LEVEL)) - 1) << 32)
        fingerprints = fingerprints[(fingerprints & mask) == 0]
    kept: U32 = drop_repeats(top_bits(fingerprints))
    return kept


def _trailing_zeros(values: U32) -> I64:
    """Trailing zero bits of each 32-bit value (32 for 0)."""
    v = values.astype(np.int64)
    lowest = v & -v  # the lowest set bit, alone
    zeros = np.full(len(v), MAX_LEVEL, np.int64)
    set_ = lowest > 0
    zeros[set_] = np.log2(lowest[set_]).astype(np.int64)
    return zeros


def level_counts(keys: U32) -> I64:
    """For a sample, how many of its values each level keeps: entry L counts the values whose
    low L bits are 0 (33 entries, levels 0 to 32)."""
    histogram = np.bincount(_trailing_zeros(keys), minlength=MAX_LEVEL + 1)
    return np.cumsum(histogram[::-1])[::-1].astype(np.int64)


def sampled_at(
    counts: Sequence[I64], levels: npt.ArrayLike, samples: npt.ArrayLike | None = None
) -> I64:
    """``counts[samples[i]][levels[i]]`` for every i: how many values a sample keeps at a
    level (``counts``: ``level_counts`` of each sample; ``samples`` by default 0, 1, ...)."""
    table = np.asarray(counts, np.int64).reshape(len(counts), MAX_LEVEL + 1)
    at = np.clip(np.asarray(levels, np.int64), 0, MAX_LEVEL)
    rows = np.arange(len(counts)) if samples is None else np.asarray(samples, np.int64)
    result: I64 = table[rows, at]
    return result


def kept_at_levels(values: U32, lengths: I64, levels: npt.ArrayLike) -> I64:
    """For samples laid end to end in ``values`` (sample i: the next ``lengths[i]``), how
    many values of sample i are 0 modulo 2**levels[i]: ``level_counts(sample)[level]`` for
    all of them in one pass."""
    lengths = np.asarray(lengths, np.int64)
    at = np.clip(np.asarray(levels, np.int64), 0, MAX_LEVEL).astype(np.uint64)
    # kept at level L: the low L bits are 0, one mask test a value (counting trailing zeros
    # took a float log2 of each: most of verifying a batch's containment pairs)
    masks = np.repeat((np.uint64(1) << at) - np.uint64(1), lengths)
    kept = (np.asarray(values, np.uint32).astype(np.uint64) & masks) == 0
    total = np.concatenate([np.zeros(1, np.int64), np.cumsum(kept, dtype=np.int64)])
    ends = np.cumsum(lengths)
    counts: I64 = total[ends] - total[ends - lengths]
    return counts
