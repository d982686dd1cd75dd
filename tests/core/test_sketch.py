"""Estimator accuracy against exact values computed on the same shingle sets.

Tolerances are derived from the documented standard deviation sqrt(J(1-J)/s); seeds are fixed.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import (
    Samples,
    Settings,
    Sketch,
    SketchMismatchError,
    estimate,
    estimate_columns,
    estimate_pairs,
    sketch_family,
)


def _pair(
    rng: np.random.Generator, size_a: int, size_b: int, shared: int
) -> tuple[np.ndarray, np.ndarray]:
    pool = np.unique(rng.integers(0, 2**64 - 1, size=size_a + size_b, dtype=np.uint64))
    rng.shuffle(pool)
    common = pool[:shared]
    a = np.unique(np.concatenate([common, pool[shared:size_a]]))
    b = np.unique(np.concatenate([common, pool[size_a : size_a + size_b - shared]]))
    return a, b


def _exact(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    common = len(np.intersect1d(a, b))
    return common / (len(a) + len(b) - common), common / len(a)


@pytest.mark.parametrize("resemblance", [0.2, 0.5, 0.8, 0.95])
def test_resemblance_error_matches_the_documented_deviation(resemblance: float) -> None:
    settings = Settings()
    rng = np.random.default_rng(20261122)
    errors = []
    for _ in range(300):
        size = int(rng.integers(400, 3000))
        shared = round(2 * size * resemblance / (1 + resemblance))
        a, b = _pair(rng, size, size, shared)
        exact, _ = _exact(a, b)
        errors.append(
            estimate(
                Sketch.from_shingles(a, settings), Sketch.from_shingles(b, settings)
            ).resemblance
            - exact
        )
    sigma = np.sqrt(resemblance * (1 - resemblance) / settings.sample_size)
    assert abs(np.mean(errors)) < 4 * sigma / np.sqrt(len(errors))  # unbiased
    assert np.std(errors) < 1.15 * sigma  # no worse than documented
    assert np.max(np.abs(errors)) < 5 * sigma


def test_containment_of_an_excerpt() -> None:
    settings = Settings()
    rng = np.random.default_rng(7)
    errors = []
    for _ in range(200):
        big = int(rng.integers(800, 2000))
        part = int(big * rng.uniform(0.3, 0.7))
        a, b = _pair(rng, part, big, part)  # a is wholly inside b
        e = estimate(Sketch.from_shingles(a, settings), Sketch.from_shingles(b, settings))
        errors.append(e.containment - 1.0)
        assert e.containment_reverse == pytest.approx(part / big, abs=0.15)
    assert max(abs(x) for x in errors) < 1e-9  # nothing of a is outside b, so every sample agrees


def test_small_sets_are_compared_exactly() -> None:
    settings = Settings()
    rng = np.random.default_rng(3)
    for _ in range(100):
        a, b = _pair(rng, int(rng.integers(1, 128)), int(rng.integers(1, 128)), 0)
        shared = rng.integers(0, min(len(a), len(b)) + 1)
        b = np.unique(np.concatenate([b, a[:shared]]))
        e = estimate(Sketch.from_shingles(a, settings), Sketch.from_shingles(b, settings))
        assert e.exact
        resemblance, containment = _exact(a, b)
        assert e.resemblance == pytest.approx(resemblance)
        assert e.containment == pytest.approx(containment)


def test_sketches_of_different_settings_refuse_to_compare() -> None:
    values = np.arange(1, 500, dtype=np.uint64) << np.uint64(40)
    with pytest.raises(SketchMismatchError, match="same Settings"):
        estimate(
            Sketch.from_shingles(values, Settings()), Sketch.from_shingles(values, Settings(seed=9))
        )


def test_empty_documents_resemble_nothing() -> None:
    empty = Sketch.from_shingles(np.zeros(0, np.uint64), Settings())
    other = Sketch.from_shingles(np.arange(10, dtype=np.uint64), Settings())
    assert estimate(empty, other).resemblance == 0.0


def _random_sketches(rng: np.random.Generator, sizes: npt.NDArray[np.int64]) -> list[Sketch]:
    settings = Settings()
    return [
        Sketch.from_shingles(
            np.unique(rng.integers(0, 2**64, size=int(n), dtype=np.uint64)), settings
        )
        for n in sizes
    ]


def test_many_pairs_are_estimated_as_one_at_a_time() -> None:
    rng = np.random.default_rng(3)
    sketches = _random_sketches(rng, rng.integers(1, 600, size=50))
    first = [sketches[i] for i in rng.integers(0, 50, size=5000)]
    second = [sketches[i] for i in rng.integers(0, 50, size=5000)]
    together = estimate_pairs(first, second)  # more pairs than one vectorised pass takes
    assert together == [estimate(a, b) for a, b in zip(first, second, strict=True)]


def test_samples_laid_end_to_end_estimate_as_lists() -> None:
    rng = np.random.default_rng(4)
    sketches = _random_sketches(rng, rng.integers(0, 600, size=300))
    first, second = sketches[:150], sketches[150:]
    counts = [s.shingle_count for s in first], [s.shingle_count for s in second]
    as_lists = estimate_columns(
        [s.values for s in first], counts[0], [s.values for s in second], counts[1], 256
    )
    flat = estimate_columns(
        Samples.of([s.values for s in first]),
        counts[0],
        Samples.of([s.values for s in second]),
        counts[1],
        256,
    )
    for a, b in zip(as_lists, flat, strict=True):
        assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="two samples"):
        estimate_columns(Samples.of([s.values for s in first]), counts[0][1:], [], [], 256)


def _by_definition(a: Sketch, b: Sketch) -> tuple[float, float, float, bool]:
    """The MIN_s estimators as the module docstring states them, one pair, in plain Python."""
    mine, theirs = set(a.values.tolist()), set(b.values.tolist())
    exact = a.complete and b.complete
    union = sorted(mine | theirs)
    sample = union if exact else union[: a.sample_size]
    resemblance = sum(v in mine and v in theirs for v in sample) / len(sample) if sample else 0.0
    cutoff = min(
        max(s.values.tolist()) if not s.complete and len(s.values) else 2**32 for s in (a, b)
    )
    shared = sum(v <= cutoff for v in mine & theirs)
    below_a, below_b = sum(v <= cutoff for v in mine), sum(v <= cutoff for v in theirs)
    return resemblance, shared / max(below_a, 1), shared / max(below_b, 1), exact


@given(
    st.lists(
        st.tuples(
            st.sets(st.integers(0, 2**32 - 1), max_size=40),
            st.sets(st.integers(0, 2**32 - 1), max_size=40),
            st.sets(st.integers(0, 2**32 - 1), max_size=40),
            st.integers(0, 3),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_vectorised_estimates_equal_the_definitions(
    pairs: list[tuple[set[int], set[int], set[int], int, int]],
) -> None:
    settings = Settings(sample_size=16, short_limit=8)
    family = sketch_family(settings)

    def sketch(values: set[int], extra: int) -> Sketch:
        kept = np.array(sorted(values)[:16], dtype=np.uint32)
        return Sketch(kept, len(values) * (1 + extra), 16, family)  # extra: unsampled rest

    first = [sketch(shared | a, x) for shared, a, _, x, _ in pairs]
    second = [sketch(shared | b, y) for shared, _, b, _, y in pairs]
    found = estimate_pairs(first, second)
    for got, a, b in zip(found, first, second, strict=True):
        expected = _by_definition(a, b)
        assert (got.resemblance, got.containment, got.containment_reverse, got.exact) == (
            pytest.approx(expected[0]),
            pytest.approx(expected[1]),
            pytest.approx(expected[2]),
            expected[3],
        )


@given(
    st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=20), min_size=1, max_size=8),
    st.data(),
)
def test_taking_samples_gives_each_in_the_order_asked(
    samples: list[list[int]], data: st.DataObject
) -> None:
    picks = data.draw(st.lists(st.integers(0, len(samples) - 1), max_size=12))
    laid = Samples.of([np.array(sample, np.uint32) for sample in samples])
    taken = laid.take(np.array(picks, np.intp))
    assert taken.lengths.tolist() == [len(samples[at]) for at in picks]
    assert taken.values.tolist() == [value for at in picks for value in samples[at]]
