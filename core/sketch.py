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

__all__ = ["Estimate", "Sketch", "estimate", "estimate_pairs", "sketch_family"]

U32 = npt.NDArray[np.uint32]
_NO_CUTOFF = 1 << 32  # above every 32-bit sample value
#: pairs estimated in one vectorised pass (at s = 256, about 4 MB per temporary array)
_PAIRS_PER_CALL = 2048


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
    def from_shingles(cls, fingerprints: npt.NDArray[np.uint64], settings: Settings) -> Sketch:
        """Sketch of a sorted, unique array of shingle fingerprints."""
        # the high bits of an ascending array are ascending: no sort needed
        high = drop_repeats(
            (fingerprints[: 2 * settings.sample_size] >> np.uint64(32)).astype(np.uint32)
        )
        return cls(
            values=high[: settings.sample_size],
            shingle_count=len(fingerprints),
            sample_size=settings.sample_size,
            family=sketch_family(settings),
        )

    @property
    def complete(self) -> bool:
        """True when the sample is the whole shingle set."""
        return self.shingle_count <= self.sample_size

    def _cutoff(self) -> int | None:
        # values above the cut-off are not sampled; a complete sketch has none
        return None if self.complete or len(self.values) == 0 else int(self.values[-1])


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


def _flatten(
    sketches: Sequence[Sketch],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """All values in one ascending array, each tagged with its pair index in the high bits."""
    lengths = np.fromiter((len(s.values) for s in sketches), dtype=np.int64, count=len(sketches))
    owner = np.repeat(np.arange(len(sketches), dtype=np.int64), lengths)
    values = np.concatenate([s.values for s in sketches]).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return (owner << 32) | values, owner, starts


def estimate_pairs(first: Sequence[Sketch], second: Sequence[Sketch]) -> list[Estimate]:
    """``estimate`` for many pairs at once (first[i] with second[i]), vectorised.

    Both sides are flattened into one ascending array each (pair index in the high bits), so
    a single binary search finds, for every sampled value of a first sketch, whether its pair
    partner holds it and how many of the partner's values are smaller: its rank in the union.
    """
    if len(first) != len(second):
        raise ValueError(f"{len(first)} first sketches but {len(second)} second ones")
    if len(first) > _PAIRS_PER_CALL:  # bounded temporaries: ~10 arrays of pairs x s values
        return [
            found
            for start in range(0, len(first), _PAIRS_PER_CALL)
            for found in estimate_pairs(
                first[start : start + _PAIRS_PER_CALL], second[start : start + _PAIRS_PER_CALL]
            )
        ]
    for a, b in zip(first, second, strict=True):
        if a.family != b.family or a.sample_size != b.sample_size:
            raise SketchMismatchError(
                "these sketches were made with different seeds, token units, shingle sizes or "
                f"sample sizes (sample sizes {a.sample_size} and {b.sample_size}): make both "
                "with the same Settings"
            )
    pairs = len(first)
    if not pairs:
        return []
    left, owner, left_starts = _flatten(first)
    right, right_owner, right_starts = _flatten(second)
    position = np.searchsorted(right, left)
    shared = (
        right[np.minimum(position, max(len(right) - 1, 0))] == left if len(right) else position < 0
    )
    smaller_right = position - right_starts[owner]
    index_in_left = np.arange(len(left)) - left_starts[owner]
    shared_running = np.concatenate([[0], np.cumsum(shared)])
    shared_before = shared_running[:-1] - shared_running[left_starts[owner]]
    union_rank = index_in_left - shared_before + smaller_right + 1
    exact = np.array([a.complete and b.complete for a, b in zip(first, second, strict=True)])
    limit = np.where(exact, np.iinfo(np.int64).max, first[0].sample_size)
    left_sizes = np.bincount(owner, minlength=pairs)
    right_sizes = np.bincount(right_owner, minlength=pairs)
    shared_count = np.bincount(owner, weights=shared, minlength=pairs)
    union_size = np.minimum(left_sizes + right_sizes - shared_count, limit)
    shared_in_union = np.bincount(
        owner, weights=shared & (union_rank <= limit[owner]), minlength=pairs
    )
    cutoff = np.minimum(_cutoffs(first), _cutoffs(second))
    left_below = (left & 0xFFFFFFFF) <= cutoff[owner]
    right_below = np.bincount(
        right_owner, weights=(right & 0xFFFFFFFF) <= cutoff[right_owner], minlength=pairs
    )
    shared_below = np.bincount(owner, weights=shared & left_below, minlength=pairs)
    left_below_count = np.bincount(owner, weights=left_below, minlength=pairs)
    resemblance = np.where(union_size > 0, shared_in_union / np.maximum(union_size, 1), 0.0)
    containment = shared_below / np.maximum(left_below_count, 1)
    reverse = shared_below / np.maximum(right_below, 1)
    return [
        Estimate(float(r), float(c), float(v), bool(e))
        for r, c, v, e in zip(resemblance, containment, reverse, exact, strict=True)
    ]


def _cutoffs(sketches: Sequence[Sketch]) -> npt.NDArray[np.int64]:
    return np.array(
        [_NO_CUTOFF if (c := s._cutoff()) is None else c for s in sketches], dtype=np.int64
    )
