"""Exact scores, components and pair-counting scores on hand-made examples."""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt
import pytest

from bench import truth


def _u(*values: int) -> npt.NDArray[np.uint64]:
    return np.array(sorted(set(values)), dtype=np.uint64)


SETS = [
    _u(*range(1, 11)),  # 0: A
    _u(*range(1, 9), 11, 12),  # 1: B, J(A, B) = 8 / 12
    _u(100, 101),  # 2: unrelated
    _u(1, 2),  # 3: inside A, J(A, D) = 0.2, J(B, D) = 0.2
    _u(),  # 4: empty
    _u(100, 101, 102, 103),  # 5: J(2, 5) = 0.5 exactly
]


def test_pair_scores_hand_made() -> None:
    s = truth.pair_scores(SETS)
    got = {
        (int(i), int(j)): (int(c), float(jac), float(con))
        for i, j, c, jac, con in zip(
            s.i, s.j, s.intersection, s.jaccard, s.containment, strict=True
        )
    }
    assert got == {
        (0, 1): (8, 8 / 12, 0.8),
        (0, 3): (2, 0.2, 1.0),
        (1, 3): (2, 0.2, 1.0),
        (2, 5): (2, 0.5, 1.0),
    }
    assert s.sizes.tolist() == [10, 10, 2, 2, 0, 4]


def test_components_hand_made() -> None:
    s = truth.pair_scores(SETS)
    assert truth.true_clusters(s, 0.5) == [[0, 1], [2, 5]]
    assert truth.true_clusters(s, 0.6) == [[0, 1]]
    assert truth.true_clusters(s, 0.2) == [[0, 1, 3], [2, 5]]
    assert truth.true_clusters(s, 1.0, measure="containment") == [[0, 1, 3], [2, 5]]
    assert truth.components(6, np.array([4, 3, 0]), np.array([5, 4, 3])) == [[0, 3, 4, 5]]


def test_repeated_values_rejected() -> None:
    with pytest.raises(ValueError, match="unique"):
        truth.pair_scores([np.array([1, 1], dtype=np.uint64), _u(1)])


def test_matches_brute_force_with_tiny_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    sets = [
        np.unique(rng.integers(0, 60, int(rng.integers(0, 25))).astype(np.uint64))
        for _ in range(70)
    ]
    monkeypatch.setattr(truth, "BLOCK_WORK", 40)
    monkeypatch.setattr(truth, "BLOCK_BINS", 300)
    s = truth.pair_scores(sets)
    got = {(int(i), int(j)): int(c) for i, j, c in zip(s.i, s.j, s.intersection, strict=True)}
    expected = {}
    for a, b in itertools.combinations(range(len(sets)), 2):
        c = len(np.intersect1d(sets[a], sets[b]))
        if c:
            expected[(a, b)] = c
    assert got == expected


def test_pairwise_scores_hand_made() -> None:
    p, r, f = truth.pairwise_scores([["a", "b", "c"]], [["a", "b"], ["c", "d"]])
    assert p == pytest.approx(1 / 3)
    assert r == pytest.approx(1 / 2)
    assert f == pytest.approx(0.4)
    assert truth.pairwise_scores([[1, 2], [3, 4, 5]], [[4, 5, 3], [2, 1]]) == (1.0, 1.0, 1.0)
    assert truth.pairwise_scores([], [[1, 2]]) == (1.0, 0.0, 0.0)
    # big clusters: 10 items predicted together, truth two halves: TP = 2 * C(5, 2) = 20
    p, r, _ = truth.pairwise_scores([list(range(10))], [list(range(5)), list(range(5, 10))])
    assert (p, r) == (20 / 45, 1.0)


def test_pairwise_scores_rejects_overlap() -> None:
    with pytest.raises(ValueError, match="two predicted clusters"):
        truth.pairwise_scores([[1, 2], [2, 3]], [[1, 2]])
