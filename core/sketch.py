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

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import numpy as np
import numpy.typing as npt
import xxhash

from ._hashing import drop_repeats
from .exceptions import SketchMismatchError
from .settings import Settings

__all__ = [
    "Columns",
    "Estimate",
    "ExtraSample",
    "Samples",
    "Sketch",
    "estimate",
    "estimate_columns",
    "estimate_pairs",
    "sketch_family",
]

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]
_NO_CUTOFF = (1 << 32) - 1  # the largest 32-bit value: a complete sketch keeps every value
_HIGH = np.uint64(32)  # a sample value is the high 32 bits of a shingle fingerprint
#: sample values (both sides) estimated in one vectorised pass, about 64 pairs at s = 256:
#: temporaries of 256 KB stay in cache and reuse their pages, where larger ones are faulted
#: in afresh for every pass
_VALUES_PER_CALL = 1 << 15


def sketch_family(settings: Settings) -> int:
    """Sketches compare only within one family: same seed, tokens, shingle and sample sizes
    (and sketch kind).

    A stable 64-bit hash, the same in every process: sketches made in a prepare process (or
    another worker) are compared with those made here, and ``hash()`` of a string is
    randomised per process."""
    described = (
        f"{settings.seed}\x1f{settings.token_unit}\x1f{settings.shingle_size}"
        f"\x1f{settings.sample_kept}"
    )
    if settings.sketch != "minhash":  # the min-hash families stay what they were
        described += f"\x1f{settings.sketch}"
    return xxhash.xxh3_64_intdigest(described.encode())


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
        size = settings.sample_kept
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


class Estimate(msgspec.Struct, frozen=True, gc=False):
    """Estimated resemblance of two documents and containment of each in the other.

    A frozen msgspec Struct that the garbage collector does not track (it holds numbers
    only): the union stage decodes one per verified pair and keeps it through a batch."""

    resemblance: float
    containment: float  # of the first document in the second
    containment_reverse: float  # of the second in the first
    exact: bool
    #: SimHash mode: the Hamming distance of the two SimHashes, which found the pair
    distance: int | None = None


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


@dataclass(frozen=True, slots=True)
class Samples:
    """Many bare samples laid end to end: their values (each sample ascending) and lengths."""

    values: U32
    lengths: npt.NDArray[np.int64]

    @classmethod
    def of(cls, samples: Sequence[U32]) -> Samples:
        lengths = np.fromiter((len(v) for v in samples), np.int64, len(samples))
        values = np.concatenate(samples) if len(samples) else np.zeros(0, np.uint32)
        return cls(values.astype(np.uint32, copy=False), lengths)

    def __len__(self) -> int:
        return len(self.lengths)

    def take(self, indices: npt.NDArray[np.intp]) -> Samples:
        """The samples at ``indices``, in that order (one may be taken several times)."""
        starts = np.cumsum(self.lengths) - self.lengths
        lengths = self.lengths[indices]
        offsets = np.cumsum(lengths) - lengths
        at = np.repeat(starts[indices] - offsets, lengths) + np.arange(int(lengths.sum()))
        return Samples(self.values[at], lengths)


@dataclass(frozen=True, slots=True)
class ExtraSample:
    """Per pair, what a second uniform sample of the shingles adds to the containment
    estimate (``neardup.core.containment``): the values both documents share in it, and the
    values of each document in it."""

    shared: npt.NDArray[np.int64]
    first: npt.NDArray[np.int64]
    second: npt.NDArray[np.int64]


def estimate_columns(
    first: Sequence[U32] | Samples,
    first_counts: Sequence[int],
    second: Sequence[U32] | Samples,
    second_counts: Sequence[int],
    sample_size: int,
    extra: ExtraSample | None = None,
) -> Columns:
    """``estimate_pairs`` on bare samples and shingle counts (all of one sketch family, which
    the caller vouches for), as columns: resemblance, containment, reverse containment and
    exactness of each pair. For callers that keep few of many estimates.

    With ``extra``, each containment counts the extra sample's values beside the sketches'
    (except for an exact pair: its sketches hold both sets whole)."""
    left = first if isinstance(first, Samples) else Samples.of(first)
    right = second if isinstance(second, Samples) else Samples.of(second)
    if not len(left) == len(first_counts) == len(right) == len(second_counts):
        raise ValueError("every pair needs two samples and two shingle counts")
    left_ends, right_ends = np.cumsum(left.lengths), np.cumsum(right.lengths)
    ends = left_ends + right_ends
    # cut where the running count of values passes each multiple of the budget
    budgets = np.arange(_VALUES_PER_CALL, int(ends[-1]) if len(ends) else 0, _VALUES_PER_CALL)
    cuts = np.searchsorted(ends, budgets)
    left_at, right_at = _starts(left.lengths), _starts(right.lengths)
    passes = [
        _estimate_pass(
            left.values[left_at[start] : left_ends[end - 1]],
            left.lengths[start:end],
            np.asarray(first_counts[start:end], dtype=np.int64),
            right.values[right_at[start] : right_ends[end - 1]],
            right.lengths[start:end],
            np.asarray(second_counts[start:end], dtype=np.int64),
            sample_size,
        )
        for start, end in itertools.pairwise(sorted({0, *cuts.tolist(), len(left)}))
    ]
    if not passes:
        empty = np.zeros(0, np.float64)
        return empty, empty, empty, np.zeros(0, np.bool_)
    if len(passes) == 1:  # a query's few pairs: no columns to join
        resemblance, shared, left_in, right_in, exact = passes[0]
    else:
        resemblance, shared, left_in, right_in, exact = (
            np.concatenate(column) for column in zip(*passes, strict=True)
        )
    if extra is not None:
        adds = ~exact
        shared = shared + np.where(adds, extra.shared, 0)
        left_in = left_in + np.where(adds, extra.first, 0)
        right_in = right_in + np.where(adds, extra.second, 0)
    containment = np.minimum(shared / np.maximum(left_in, 1), 1.0)
    reverse = np.minimum(shared / np.maximum(right_in, 1), 1.0)
    return resemblance, containment, reverse, exact


def _estimate_pass(
    left_values: U32,
    left_lengths: npt.NDArray[np.int64],
    first_counts: npt.NDArray[np.int64],
    right_values: U32,
    right_lengths: npt.NDArray[np.int64],
    second_counts: npt.NDArray[np.int64],
    sample_size: int,
) -> tuple[npt.NDArray[np.float64], I64, I64, I64, npt.NDArray[np.bool_]]:
    """Resemblance, then (for containment) the shared values below the pair's cut-off and
    each side's values below it, and exactness.

    Both sides flattened into one ascending array each (pair index in the high bits),
    merged with one stable sort."""
    pairs = len(left_lengths)
    # One array of (pair, value) keys: first sketches, then second ones. Each half is
    # ascending, so a stable sort is one linear merge; a value both sketches of a pair hold
    # then appears twice in a row, and the pair's union is its distinct values.
    left_total = len(left_values)
    pair_ids = np.arange(pairs, dtype=np.int64)
    keys = np.repeat(
        np.concatenate([pair_ids, pair_ids]), np.concatenate([left_lengths, right_lengths])
    )
    keys <<= 32  # in place: each full-length temporary costs as much as the arithmetic
    keys[:left_total] |= left_values
    keys[left_total:] |= right_values
    merged = np.sort(keys, kind="stable")
    repeat = np.flatnonzero(merged[1:] == merged[:-1]) + 1
    shared_keys = merged[repeat]
    shared_owner = shared_keys >> 32
    shared_values = shared_keys & 0xFFFFFFFF
    pair_sizes = left_lengths + right_lengths
    starts = _starts(pair_sizes)
    # 1-based rank in the pair's union of each shared value: distinct keys up to a position
    # are the position + 1 less the repeats up to it (a pair's first key is never a repeat)
    distinct_before = starts + 1 - np.searchsorted(repeat, starts)
    union_rank = repeat - np.arange(len(repeat)) - distinct_before[shared_owner] + 1
    exact = (first_counts <= sample_size) & (second_counts <= sample_size)
    limit = np.where(exact, np.iinfo(np.int64).max, sample_size)
    shared_count = np.bincount(shared_owner, minlength=pairs)
    union_size = np.minimum(pair_sizes - shared_count, limit)
    shared_in_union = np.bincount(shared_owner[union_rank <= limit[shared_owner]], minlength=pairs)
    # containment: below the smaller cut-off both samples are complete
    cutoff = np.minimum(
        _cutoffs(first_counts, left_values, left_lengths, sample_size),
        _cutoffs(second_counts, right_values, right_lengths, sample_size),
    )
    shared_below = np.bincount(shared_owner[shared_values <= cutoff[shared_owner]], minlength=pairs)
    bounds = (pair_ids << 32) | cutoff
    left_below = np.searchsorted(keys[:left_total], bounds, "right") - _starts(left_lengths)
    right_below = np.searchsorted(keys[left_total:], bounds, "right") - _starts(right_lengths)
    resemblance = np.where(union_size > 0, shared_in_union / np.maximum(union_size, 1), 0.0)
    return resemblance, shared_below, left_below, right_below, exact


def _starts(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.cumsum(lengths) - lengths


def _cutoffs(
    counts: npt.NDArray[np.int64],
    values: U32,
    lengths: npt.NDArray[np.int64],
    sample_size: int,
) -> npt.NDArray[np.int64]:
    """Each sketch's cut-off: values above it are not sampled. Its largest sampled value, or
    ``_NO_CUTOFF`` for a complete one (``values``: the sketches' values laid end to end)."""
    sampled = (counts > sample_size) & (lengths > 0)
    last = np.cumsum(lengths) - 1
    cutoffs = np.where(sampled, values[np.maximum(last, 0)] if len(values) else 0, _NO_CUTOFF)
    return cutoffs.astype(np.int64, copy=False)
