"""The one-byte size classes of the super-shingle index and the length filter over them."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import may_resemble, size_class
from neardup.core.length_filter import SIZE_CLASSES

SIZES = st.integers(1, 2_000_000)
THRESHOLDS = st.sampled_from([0.3, 0.5, 0.55, 0.7, 0.8, 0.9, 1.0])


@given(count=SIZES, other=SIZES, threshold=THRESHOLDS)
def test_no_pair_the_sizes_allow_is_dropped(count: int, other: int, threshold: float) -> None:
    classes = size_class(np.array([other]))
    assert 0 <= classes[0] < SIZE_CLASSES
    if min(count, other) >= threshold * max(count, other):
        assert may_resemble(count, classes, threshold)[0]


@given(count=SIZES, ratio=st.floats(1.1, 100.0), threshold=THRESHOLDS)
def test_sizes_a_class_apart_beyond_the_threshold_are_dropped(
    count: int, ratio: float, threshold: float
) -> None:
    # classes are at most 2^(1/16) = 4.4 % wide: a size 10 % beyond the bound is out
    larger = int(count / threshold * ratio) + 1
    smaller = int(count * threshold / ratio) - 1
    if larger < 400_000:  # the last class is open
        assert not may_resemble(count, size_class(np.array([larger])), threshold)[0]
    if smaller >= 1:
        assert not may_resemble(count, size_class(np.array([smaller])), threshold)[0]


def test_classes_are_exact_for_small_sizes_and_ordered() -> None:
    sizes = np.arange(0, 600_000, 7)
    classes = size_class(sizes)
    assert (np.diff(classes) >= 0).all() and classes.max() == SIZE_CLASSES - 1
    assert size_class(np.arange(32)).tolist() == list(range(32))
