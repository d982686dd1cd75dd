"""The exact filters of the short-document index, for many candidates at once.

A short document of n shingles posts its first p(n) = n - ceil(T n) + 1 shingles in one global
order (fingerprint order; ``Settings.short_index_prefix``), each with its position in that
prefix. A candidate met there is described by how many of the query's indexed shingles it
shares (``shared``), the position in the query's prefix of the last of them (``last``) and the
candidate's own position of that shingle (``last_other``). Two sets of n and m shingles with
J >= T overlap in o >= ceil(T (n + m) / (1 + T)) shingles, so a pair that can still reach T
passes three tests (AllPairs and PPJoin, Xiao et al. 2008):

* length: min(n, m) >= T max(n, m);
* count: ``shared`` >= ``least_shared(n, m)``;
* position: every shared shingle after the last one met comes after it in both sets, so
  o <= shared + min(n - last - 1, m - last_other - 1).

``unseen`` is how many of the query's keys may each hide one more shared shingle (stop keys,
keys dropped as repeated 32-bit values); it is added to ``shared`` everywhere, and a position
that is too small (stored ones saturate at 255) only loosens the last test: no pair at or
above T is dropped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["least_shared", "short_pairs_kept"]

I64 = npt.NDArray[np.int64]
_EPSILON = 1e-9  # keeps float rounding (0.7 * 10 = 7.000000000000001) from moving a ceiling


def _ceil(values: npt.NDArray[np.floating[Any]]) -> I64:
    rounded: I64 = np.ceil(values - _EPSILON).astype(np.int64)
    return rounded


def least_shared(count: I64 | int, sizes: I64, threshold: float) -> I64:
    """The fewest indexed shingles two short documents of ``count`` and ``sizes`` shingles
    must share to resemble at ``threshold``, for many pairs.

    Positional reasoning on the prefixes of ``Settings.short_index_prefix``: with
    J(A, B) >= T the overlap o is at least ceil(T(|A| + |B|) / (1 + T)), and in the global
    order the first o - max(ceil(T|A|), ceil(T|B|)) + 1 shared shingles lie in both
    prefixes. A candidate met under fewer keys cannot reach T and is dropped before its
    sketch is read. Where the sizes alone rule T out, more than both counts together (a
    count no pair reaches)."""
    n = np.asarray(count, dtype=np.int64)
    m = np.asarray(sizes, dtype=np.int64)
    smaller, larger = np.minimum(n, m), np.maximum(n, m)
    overlap = _ceil(threshold * (n + m) / (1.0 + threshold))
    least = np.maximum(1, overlap - np.maximum(_ceil(threshold * larger), 1) + 1)
    out_of_reach = (smaller <= 0) | (smaller < threshold * larger - _EPSILON)
    result: I64 = np.where(out_of_reach, n + m + 1, least)
    return result


def short_pairs_kept(
    count: I64 | int,
    unseen: I64 | int,
    sizes: I64,
    shared: I64,
    last: I64,
    last_other: I64,
    threshold: float,
) -> npt.NDArray[np.bool_]:
    """For each candidate (arrays of equal length; ``count`` and ``unseen`` are the query's,
    scalars or one per candidate): may the pair still resemble at ``threshold``?"""
    n = np.asarray(count, dtype=np.int64)
    m = np.asarray(sizes, dtype=np.int64)
    hits = np.asarray(shared, dtype=np.int64) + np.asarray(unseen, dtype=np.int64)
    overlap = _ceil(threshold * (n + m) / (1.0 + threshold))
    after = np.minimum(n - np.asarray(last) - 1, m - np.asarray(last_other) - 1)
    kept: npt.NDArray[np.bool_] = (hits >= least_shared(n, m, threshold)) & (
        hits + after >= overlap
    )
    return kept
