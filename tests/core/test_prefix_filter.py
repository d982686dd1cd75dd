"""The short-document index's exact filters: never drop a pair at or above T, and do prune."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import Settings
from neardup.core.prefix_filter import least_shared, short_pairs_kept


def _meeting(first: list[int], second: list[int], settings: Settings) -> tuple[int, int, int]:
    """(shared, last, last_other) of two sorted sets as the index sees them: the shingles both
    prefixes hold, and the positions of the last one in each prefix."""
    prefix_a = first[: settings.short_index_prefix(len(first))]
    prefix_b = second[: settings.short_index_prefix(len(second))]
    common = sorted(set(prefix_a) & set(prefix_b))
    if not common:
        return 0, 0, 0
    return len(common), prefix_a.index(common[-1]), prefix_b.index(common[-1])


def _least_shared_of_one(count: int, other: int, threshold: float) -> int:
    """``least_shared`` for one pair, written once more with scalars: the overlap of a pair
    at T, less the shingles the larger side indexes outside its prefix."""
    smaller, larger = sorted((count, other))
    if smaller <= 0 or smaller < threshold * larger - 1e-9:
        return count + other + 1
    overlap = math.ceil(threshold * (smaller + larger) / (1.0 + threshold) - 1e-9)
    indexed_elsewhere = max(math.ceil(threshold * larger - 1e-9), 1)
    return max(1, overlap - indexed_elsewhere + 1)


@given(
    shared=st.sets(st.integers(0, 200), min_size=1, max_size=60),
    only_a=st.sets(st.integers(0, 200), max_size=60),
    only_b=st.sets(st.integers(0, 200), max_size=60),
    threshold=st.sampled_from([0.3, 0.5, 0.55, 0.7, 0.8, 0.9, 1.0]),
    saturate=st.integers(0, 60),
)
def test_no_pair_at_or_above_the_threshold_is_dropped(
    shared: set[int], only_a: set[int], only_b: set[int], threshold: float, saturate: int
) -> None:
    # disjoint by residue mod 3, interleaved in the global order
    first = sorted({3 * x for x in shared} | {3 * x + 1 for x in only_a})
    second = sorted({3 * x for x in shared} | {3 * x + 2 for x in only_b})
    settings = Settings(threshold=threshold)
    met, last, last_other = _meeting(first, second, settings)
    # a stored position capped below its true value (as at 255) may only loosen the filter
    kept = short_pairs_kept(
        len(first),
        0,
        np.array([len(second)]),
        np.array([met]),
        np.array([last]),
        np.array([min(last_other, saturate)]),
        threshold,
    )
    if len(shared) >= threshold * len(set(first) | set(second)):
        assert met >= 1 and kept[0]


@given(
    count=st.integers(0, 300),
    other=st.integers(0, 300),
    threshold=st.sampled_from([0.3, 0.5, 0.55, 0.7, 0.8, 0.9, 1.0]),
)
def test_vectorised_count_bound_is_the_scalar_one(count: int, other: int, threshold: float) -> None:
    assert least_shared(count, np.array([other]), threshold)[0] == _least_shared_of_one(
        count, other, threshold
    )


def test_positions_prune_what_counts_alone_keep() -> None:
    # |A| = 10, |B| = 12 at T = 0.5 need an overlap of 8; prefixes of 6 and 7 sharing 3 pass
    # the count bound (3), but with the last shared shingle at the ends of both prefixes at
    # most 3 + min(10 - 6, 12 - 7) = 7 can be shared
    assert least_shared(10, np.array([12]), 0.5).tolist() == [3]
    args = (10, 0, np.array([12, 12]), np.array([3, 3]))
    kept = short_pairs_kept(*args, np.array([5, 2]), np.array([6, 2]), 0.5)
    assert kept.tolist() == [False, True]
    # and a stop key (unseen) that may hide a shared shingle keeps it
    assert short_pairs_kept(
        10, 1, np.array([12]), np.array([3]), np.array([5]), np.array([6]), 0.5
    )[0]
