"""Shingling: sets of w-token fingerprints, vectorised over a batch."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import Tokenizer, shingle_sets

WORDS = st.sampled_from(["a", "b", "c", "d", "the", "cat", "sat", "on", "mat"])


def _sets(texts: list[str], w: int) -> list[np.ndarray]:
    return shingle_sets(Tokenizer(1).hash_batch(texts), w, seed=1)


@given(st.lists(st.lists(WORDS, max_size=25), min_size=1, max_size=5), st.integers(1, 6))
def test_shingle_set_size_is_the_number_of_distinct_w_grams(docs: list[list[str]], w: int) -> None:
    sets = _sets([" ".join(d) for d in docs], w)
    for words, fingerprints in zip(docs, sets, strict=True):
        if len(words) >= w:
            expected = {tuple(words[i : i + w]) for i in range(len(words) - w + 1)}
        else:
            expected = {tuple(words)} if words else set()
        assert len(fingerprints) == len(expected)
        assert np.all(np.diff(fingerprints.astype(np.float64)) >= 0) or len(fingerprints) < 2


@given(st.lists(WORDS, min_size=1, max_size=25), st.lists(WORDS, min_size=1, max_size=25))
def test_shared_w_grams_give_shared_fingerprints(a: list[str], b: list[str]) -> None:
    w = 3
    sa, sb = _sets([" ".join(a), " ".join(b)], w)

    def grams(ws: list[str]) -> set[tuple[str, ...]]:
        return (
            {tuple(ws[i : i + w]) for i in range(len(ws) - w + 1)} if len(ws) >= w else {tuple(ws)}
        )

    assert len(np.intersect1d(sa, sb)) == len(grams(a) & grams(b))


def test_shingles_never_span_two_documents() -> None:
    spanning = _sets(["one two"], 2)[0]  # would exist if "zero one" + "two three" ran together
    together = _sets(["zero one", "two three"], 2)
    assert len(together[0]) == 1 and len(together[1]) == 1
    assert len(np.intersect1d(spanning, np.concatenate(together))) == 0


def test_seed_changes_every_fingerprint() -> None:
    tokens = Tokenizer(1).hash_batch(["a b c d e f g h"])
    assert not np.intersect1d(shingle_sets(tokens, 3, 1)[0], shingle_sets(tokens, 3, 2)[0]).size


def test_a_batch_shorter_than_one_shingle() -> None:
    sets = _sets(["a b", "c"], 5)
    assert [len(s) for s in sets] == [1, 1]
