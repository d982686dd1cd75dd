"""The resemblance sketch: Broder's bottom-s sample (MIN_s) of a document's shingle set.

Each document keeps the s smallest of its shingle fingerprints (their high 32 bits, which keep
the order). Since fingerprints are uniformly mixed, that is a uniform random sample of the
shingle set, and two samples compare as follows:

* **resemblance** r(A, B) = |A∩B| / |A∪B|: take U, the s smallest values of S_A ∪ S_B (they
  are exactly the s smallest of A ∪ B); the estimate is |U ∩ S_A ∩ S_B| / |U|. Unbiased, with
  standard deviation about sqrt(r(1-r)/s): 0.031 at r = 0.5 and s = 256, 0.025 at r = 0.8.
* **containment** c(A, B) = |A∩B| / |A|: below τ = min(max S_A, max S_B) both samples are
  complete, so the share of A's sampled values below τ that B also has estimates c. Its standard
  deviation is about sqrt(c(1-c)/m), m being the number of A's values below τ (about
  s·min(1, |A|/|B|)).

A document with at most s shingles keeps its whole set (``complete``), and two complete
sketches give exact resemblance and containment: short documents are compared exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._hashing import drop_repeats
from .exceptions import SketchMismatchError
from .settings import Settings

__all__ = [
    "Columns",
    "Estimate",
    "Sketch",
    "estimate",
    "estimate_columns",
    "estimate_pairs",
    "sketch_family",
]

U32 = npt.NDArray[np.uint32]
_NO_CUTOFF = (1 << 32) - 1  # the largest 32-bit value: a complete sketch keeps every value
_HIGH = np.uint64(32)  # a sample value is the high 32 bits of a shingle fingerprint
#: pairs estimated in one vectorised pass: at s = 256 each temporary (int64, both sides) is
#: 2 MB, and about eight are alive at once
_PAIRS_PER_CALL = 512


def sketch_family(settings: Settings) -> int:
    """Sketches compare only within one family: same seed, tokens, shingle and sample sizes."""
    return hash((settings.seed, settings.token_unit, settings.shingle_size, settings.sample_size))


@dataclass(frozen=True, slots=True, eq=False)
class Sketch:
    """A bottom-s sample of a shingle set, with the size of the full set."""

    values: U32
    shingle_count: int
    sample_size: int
    family: int

    @classmethod
    def from_shingles(
        cls, fingerprints: npt.NDArray[np.uint64], settings: Settings, family: int | None = None
    ) -> Sketch:
        """Sketch of a sorted, unique array of shingle fingerprints (``family``: the
        settings' ``sketch_family``, when the caller already has it)."""
        size = settings.sample_size
        # the high bits of an ascending array are ascending: no sort needed
        high = drop_repeats((fingerprints[: 2 * size] >> _HIGH).astype(np.uint32))
        return cls(
            high[:size],
            len(fingerprints),
            size,
            sketch_family(settings) if family is None else family,
        )

    @property
    def complete(self) -> bool:
        """True when the sample is the whole shingle set."""
        return self.shingle_count <= self.sample_size


@dataclass(frozen=True, slots=True)
class Estimate:
    """Estimated resemblance of two documents and containment of each in the other."""

    resemblance: float
    containment: float  # of the first document in the second
    containment_reverse: float  # of the second in the first
    exact: bool


def estimate(a: Sketch, b: Sketch) -> Estimate:
    """Estimate resemblance and containment from two sketches of the same family."""
    return estimate_pairs([a], [b])[0]


def estimate_pairs(first: Sequence[Sketch], second: Sequence[Sketch]) -> list[Estimate]:
    """``estimate`` for many pairs at once (first[i] with second[i]), vectorised."""
    if len(first) != len(second):
        raise ValueError(f"{len(first)} first sketches but {len(second)} second ones")
    for a, b in zip(first, second, strict=True):
        if a.family != b.family or a.sample_size != b.sample_size:
            raise SketchMismatchError(
                "these sketches were made with different seeds, token units, shingle sizes or "
                f"sample sizes (sample sizes {a.sample_size} and {b.sample_size}): make both "
                "with the same Settings"
            )
    if not first:
        return []
    columns = estimate_columns(
        [s.values for s in first],
        [s.shingle_count for s in first],
        [s.values for s in second],
        [s.shingle_count for s in second],
        first[0].sample_size,
    )
    return [
        Estimate(r, c, v, e)
        for r, c, v, e in zip(*(column.tolist() for column in columns), strict=True)
    ]


Columns = tuple[
    npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.bool_]
]


def estimate_columns(
    first: Sequence[U32],
    first_counts: Sequence[int],
    second: Sequence[U32],
    second_counts: Sequence[int],
    sample_size: int,
) -> Columns:
    """``estimate_pairs`` on bare samples and shingle counts (all of one sketch family, which
    the caller vouches for), as columns: resemblance, containment, reverse containment and
    exactness of each pair. For callers that keep few of many estimates."""
    if not len(first) == len(first_counts) == len(second) == len(second_counts):
        raise ValueError("every pair needs two samples and two shingle counts")
    passes = [
        _estimate_pass(
            first[start : start + _PAIRS_PER_CALL],
            np.asarray(first_counts[start : start + _PAIRS_PER_CALL], dtype=np.int64),
            second[start : start + _PAIRS_PER_CALL],
            np.asarray(second_counts[start : start + _PAIRS_PER_CALL], dtype=np.int64),
            sample_size,
        )
        for start in range(0, len(first), _PAIRS_PER_CALL)  # bounded temporaries
    ]
    if not passes:
        empty = np.zeros(0, np.float64)
        return empty, empty, empty, np.zeros(0, np.bool_)
    joined = [np.concatenate(column) for column in zip(*passes, strict=True)]
    return joined[0], joined[1], joined[2], joined[3]


def _estimate_pass(
    first: Sequence[U32],
    first_counts: npt.NDArray[np.int64],
    second: Sequence[U32],
    second_counts: npt.NDArray[np.int64],
    sample_size: int,
) -> Columns:
    """Both sides flattened into one ascending array each (pair index in the high bits),
    merged with one stable sort."""
    pairs = len(first)
    # One array of (pair, value, side) keys: first sketches on side 0, second ones on side 1.
    # Each half is ascending, so a stable sort is one linear merge; a value both sketches of a
    # pair hold then appears twice in a row, and the pair's union is its distinct values.
    left_lengths = np.fromiter((len(v) for v in first), np.int64, pairs)
    right_lengths = np.fromiter((len(v) for v in second), np.int64, pairs)
    values = np.concatenate([*first, *second]).astype(np.int64)
    left_total = int(left_lengths.sum())
    pair_ids = np.arange(pairs, dtype=np.int64)
    owner = np.concatenate([np.repeat(pair_ids, left_lengths), np.repeat(pair_ids, right_lengths)])
    keys = (owner << 33) | (values << 1)
    merged = keys.copy()
    merged[left_total:] |= 1
    merged.sort(kind="stable")
    base = merged >> 1
    repeat = np.flatnonzero(base[1:] == base[:-1]) + 1  # second copies of shared values
    distinct = np.ones(len(merged), dtype=np.int64)
    distinct[repeat] = 0
    distinct_upto = np.cumsum(distinct)
    pair_sizes = left_lengths + right_lengths
    shared_owner = merged[repeat] >> 33
    shared_values = base[repeat] & 0xFFFFFFFF
    # 1-based rank in the pair's union of each shared value (a pair's first key is distinct)
    union_rank = distinct_upto[repeat] - distinct_upto[_starts(pair_sizes)[shared_owner]] + 1
    exact = (first_counts <= sample_size) & (second_counts <= sample_size)
    limit = np.where(exact, np.iinfo(np.int64).max, sample_size)
    shared_count = np.bincount(shared_owner, minlength=pairs)
    union_size = np.minimum(pair_sizes - shared_count, limit)
    shared_in_union = np.bincount(shared_owner[union_rank <= limit[shared_owner]], minlength=pairs)
    # containment: below the smaller cut-off both samples are complete
    cutoff = np.minimum(
        _cutoffs(first_counts, values[:left_total], left_lengths, sample_size),
        _cutoffs(second_counts, values[left_total:], right_lengths, sample_size),
    )
    shared_below = np.bincount(shared_owner[shared_values <= cutoff[shared_owner]], minlength=pairs)
    bounds = (pair_ids << 33) | (cutoff << 1)
    left_below = np.searchsorted(keys[:left_total], bounds, "right") - _starts(left_lengths)
    right_below = np.searchsorted(keys[left_total:], bounds, "right") - _starts(right_lengths)
    resemblance = np.where(union_size > 0, shared_in_union / np.maximum(union_size, 1), 0.0)
    containment = shared_below / np.maximum(left_below, 1)
    reverse = shared_below / np.maximum(right_below, 1)
    return resemblance, containment, reverse, exact


def _starts(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.cumsum(lengths) - lengths


def _cutoffs(
    counts: npt.NDArray[np.int64],
    values: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    sample_size: int,
) -> npt.NDArray[np.int64]:
    """Each sketch's cut-off: values above it are not sampled. Its largest sampled value, or
    ``_NO_CUTOFF`` for a complete one (``values``: the sketches' values laid end to end)."""
    sampled = (counts > sample_size) & (lengths > 0)
    last = np.cumsum(lengths) - 1
    return np.where(sampled, values[np.maximum(last, 0)] if len(values) else 0, _NO_CUTOFF)
