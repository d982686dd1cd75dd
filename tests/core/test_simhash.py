"""SimHash (core/simhash.py) and Manku's tables (core/simhash_tables.py)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import Settings, Sketch, Tokenizer, shingle_sets
from neardup.core import simhash as simhash_module
from neardup.core.simhash import (
    VERIFY_SAMPLE,
    Features,
    concat_features,
    document_simhashes,
    hamming,
    simhash_batch,
    simhash_sets,
    token_features,
    verified,
    verifier_sample,
)
from neardup.core.simhash_tables import (
    DEFAULT_DISTANCE,
    KEY_BITS,
    TableScheme,
    default_tables,
    manku_tables,
    table_keys,
)

U64 = npt.NDArray[np.uint64]
HASHES = st.integers(0, 2**64 - 1)
DOCS = st.lists(st.lists(st.tuples(HASHES, st.integers(1, 50)), max_size=40), max_size=8)
#: schemes the guarantee is checked for: one level and nested, small and large k
SCHEMES = [(1, 2), (2, 3), (2, 4), (3, 4), (3, 5), (3, (4, 4)), (4, 6), (5, 6), (6, 7), (6, 8)]


def _reference(features: list[tuple[int, int]]) -> int:
    """Charikar's SimHash bit by bit: bit i is 1 when the weights of the features with bit i
    set outweigh those with bit i clear."""
    result = 0
    for bit in range(64):
        vote = sum(w if value >> bit & 1 else -w for value, w in features)
        if vote > 0:
            result |= 1 << bit
    return result


def _features(docs: list[list[tuple[int, int]]], weighted: bool = True) -> Features:
    lengths = [len(d) for d in docs]
    values = np.array([v for d in docs for v, _ in d], dtype=np.uint64)
    weights = np.array([w for d in docs for _, w in d], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return Features(values, offsets, weights if weighted else None)


# --- SimHash -----------------------------------------------------------------------------


@given(DOCS)
def test_vectorised_simhash_is_the_scalar_reference(docs: list[list[tuple[int, int]]]) -> None:
    weighted = simhash_batch(_features(docs)).tolist()
    unweighted = simhash_batch(_features(docs, weighted=False)).tolist()
    assert weighted == [_reference(d) for d in docs]
    assert unweighted == [_reference([(v, 1) for v, _ in d]) for d in docs]


def test_documents_are_independent_of_their_batch_and_of_the_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(7)
    docs = [
        [
            (int(v), int(w))
            for v, w in zip(rng.integers(0, 2**63, n), rng.integers(1, 9, n), strict=True)
        ]
        for n in rng.integers(0, 30, 50)
    ]
    whole = simhash_batch(_features(docs))
    alone = np.concatenate([simhash_batch(_features([d])) for d in docs])
    monkeypatch.setattr(simhash_module, "_DOCS_PER_PASS", 3)
    in_passes = simhash_batch(_features(docs))
    assert whole.tolist() == alone.tolist() == in_passes.tolist()
    assert whole.tolist() == simhash_batch(_features(docs)).tolist()  # deterministic


def test_known_small_cases() -> None:
    a, b, c = 0b1100, 0b1010, 0b1001
    docs = [[], [(a, 1)], [(a, 1), (~a & (2**64 - 1), 1)], [(a, 1), (b, 1), (c, 1)]]
    assert simhash_batch(_features(docs)).tolist() == [
        0,  # no features
        a,  # one feature is its own SimHash
        0,  # a feature and its complement tie at every bit: ties are 0
        0b1000,  # the majority of each bit
    ]
    # a feature of weight 3 outvotes two of weight 1 on every bit where they agree against it
    assert simhash_batch(_features([[(a, 3), (b, 1), (c, 1)]])).tolist() == [a]


def test_weights_must_be_positive() -> None:
    features = Features(
        np.array([1], np.uint64), np.array([0, 1], np.int64), np.array([0], np.int64)
    )
    with pytest.raises(ValueError, match="positive"):
        simhash_batch(features)
    with pytest.raises(ValueError, match="offsets"):
        Features(np.array([1], np.uint64), np.array([0, 2], np.int64))


@given(st.lists(HASHES, max_size=30), st.lists(HASHES, max_size=30))
def test_set_features_weigh_each_value_once(a: list[int], b: list[int]) -> None:
    sets = [np.unique(np.array(x, dtype=np.uint64)) for x in (a, b)]
    expected = [_reference([(int(v), 1) for v in s]) for s in sets]
    assert simhash_sets(sets).tolist() == expected


WORDS = st.sampled_from(["a", "b", "c", "the", "cat", "sat", "on", "mat"])


@given(st.lists(st.lists(WORDS, max_size=30), min_size=1, max_size=5))
def test_token_features_count_each_word(docs: list[list[str]]) -> None:
    tokens = Tokenizer(1).hash_batch([" ".join(d) for d in docs])
    for weighting in ("binary", "tf", "log_tf"):
        features = token_features(tokens, weighting)
        assert len(features) == len(docs)
        for index, words in enumerate(docs):
            lo, hi = features.offsets[index], features.offsets[index + 1]
            counts = sorted(Counter(words).values())
            weights = [1] * (hi - lo) if features.weights is None else features.weights[lo:hi]
            expected = {
                "binary": [1] * len(counts),
                "tf": counts,
                "log_tf": [n.bit_length() for n in counts],  # 1 + floor(log2 n)
            }[weighting]
            assert sorted(int(w) for w in weights) == sorted(expected)
            assert np.all(np.diff(features.values[lo:hi].astype(np.float64)) > 0)


def test_token_features_refuse_an_unknown_weighting() -> None:
    with pytest.raises(ValueError, match="weighting"):
        token_features(Tokenizer(1).hash_batch(["a"]), "idf")  # type: ignore[arg-type]


@given(DOCS, DOCS)
def test_concatenated_features_are_each_documents_features_together(
    first: list[list[tuple[int, int]]], second: list[list[tuple[int, int]]]
) -> None:
    documents = min(len(first), len(second))
    first, second = first[:documents], second[:documents]
    joined = concat_features(_features(first), _features(second, weighted=False))
    expected = [a + [(v, 1) for v, _ in b] for a, b in zip(first, second, strict=True)]
    assert simhash_batch(joined).tolist() == [_reference(d) for d in expected]
    assert joined.lengths.tolist() == [len(d) for d in expected]


def test_near_duplicate_texts_are_closer_than_unrelated_ones() -> None:
    words = [f"w{i}" for i in range(400)]
    edited = list(words)
    edited[200] = "changed"
    rng = np.random.default_rng(3)
    unrelated = [f"u{i}" for i in rng.integers(0, 10_000, 400)]
    tokens = Tokenizer(1).hash_batch([" ".join(t) for t in (words, edited, unrelated)])
    hashes = simhash_sets(shingle_sets(tokens, 5, seed=1))
    near, far = hamming(hashes[0], hashes[1]), hamming(hashes[0], hashes[2])
    assert int(near) <= 6 < 20 <= int(far)


def test_the_default_fingerprint_is_word_unigrams_weighted_by_log_tf() -> None:
    tokens = Tokenizer(1).hash_batch(["the cat sat on the mat the end", "", "a b c"])
    expected = simhash_batch(token_features(tokens, "log_tf"))
    assert document_simhashes(tokens).tolist() == expected.tolist()
    assert int(document_simhashes(tokens)[1]) == 0


@given(st.lists(HASHES, max_size=60, unique=True))
def test_the_verifier_sample_is_a_small_bottom_s_sketch(values: list[int]) -> None:
    shingles = np.array(sorted(values), dtype=np.uint64)
    settings = Settings(sample_size=VERIFY_SAMPLE, short_limit=VERIFY_SAMPLE)
    sample = verifier_sample(shingles)
    assert sample.tolist() == Sketch.from_shingles(shingles, settings).values.tolist()
    assert len(sample) <= VERIFY_SAMPLE


def test_verified_pairs_are_those_estimated_at_the_floor() -> None:
    base = [i << 40 for i in range(1, 11)]  # distinct high 32 bits, ten shingles
    near = [*base[:9], 99 << 40]  # 9 shared of 11: exactly 0.818 (both sets complete)
    far = [*base[:5], *(i << 40 for i in range(100, 105))]  # 5 of 15: 0.333
    sets = [np.array(sorted(x), dtype=np.uint64) for x in (base, near, far)]
    samples = [verifier_sample(x) for x in sets]
    kept = verified([samples[0], samples[0]], [10, 10], [samples[1], samples[2]], [10, 10])
    assert kept.tolist() == [True, False]
    assert verified([samples[0]], [10], [samples[1]], [10], floor=0.85).tolist() == [False]


# --- Hamming distance --------------------------------------------------------------------


@given(HASHES, HASHES, HASHES)
def test_hamming_is_a_metric_and_counts_differing_bits(a: int, b: int, c: int) -> None:
    d = int(hamming(a, b))
    assert d == bin(a ^ b).count("1")
    assert int(hamming(a, a)) == 0
    assert d == int(hamming(b, a))
    assert int(hamming(a, c)) <= d + int(hamming(b, c))
    assert int(hamming(a, a ^ (2**64 - 1))) == 64


@given(st.lists(HASHES, min_size=1, max_size=50))
def test_vectorised_hamming_and_its_fallback_agree(values: list[int]) -> None:
    a = np.array(values, dtype=np.uint64)
    b = a[::-1].copy()
    expected = [bin(x ^ y).count("1") for x, y in zip(values, values[::-1], strict=True)]
    assert hamming(a, b).tolist() == expected
    assert simhash_module._popcount(a ^ b).tolist() == expected


# --- Manku's tables ----------------------------------------------------------------------


def _flip(value: int, positions: list[int]) -> int:
    for p in positions:
        value ^= 1 << p
    return value


@pytest.mark.parametrize(("distance", "blocks"), SCHEMES)
@given(data=st.data())
def test_every_pair_within_the_distance_shares_a_key(
    distance: int, blocks: int | tuple[int, ...], data: st.DataObject
) -> None:
    scheme = manku_tables(distance, blocks)
    value = data.draw(HASHES, label="fingerprint")
    flips = data.draw(
        st.lists(st.integers(0, 63), max_size=distance, unique=True), label="flipped bits"
    )
    keys = table_keys(np.array([value, _flip(value, flips)], dtype=np.uint64), scheme)
    assert np.any(keys[0] == keys[1])


@pytest.mark.parametrize(("distance", "blocks"), [(1, 2), (2, 3), (2, 4), (3, 4), (3, (4, 4))])
def test_no_set_of_at_most_k_differing_bits_escapes_every_table(
    distance: int, blocks: int | tuple[int, ...]
) -> None:
    """Exhaustively: a pair differs exactly in some set of at most k positions, and shares a
    table's key when that table keys on none of them."""
    masks = manku_tables(distance, blocks).masks
    for size in range(distance + 1):
        for positions in itertools.combinations(range(64), size):
            differing = sum(1 << p for p in positions)
            assert any(mask & differing == 0 for mask in masks), positions


def test_the_tables_are_manku_s() -> None:
    # one level: C(b, k) tables keyed by b - k of b blocks
    scheme = manku_tables(3, 6)
    assert scheme.tables == 20 and set(scheme.key_bits) <= {31, 32, 33}
    assert manku_tables(3, 5).tables == 10 and set(manku_tables(3, 5).key_bits) == {25, 26}
    # the paper's 16 tables of 28 bits for k = 3: one 16-bit block of 4, then one 12-bit
    # block of the 48 bits left
    nested = manku_tables(3, (4, 4))
    assert nested.tables == 16 and set(nested.key_bits) == {28}
    assert all(bin(m).count("1") == 28 for m in nested.masks)
    assert len(set(nested.masks)) == 16
    assert scheme.bytes_per_document() == 20 * 16 + 8
    # 2**20 random fingerprints against 20 tables of about 32 bits: 1/200 of a candidate
    assert math.isclose(
        scheme.expected_random_candidates(2**20), sum(2.0 ** (20 - p) for p in scheme.key_bits)
    )


def _packed(value: int, mask: int) -> int:
    key = 0
    for position in range(63, -1, -1):
        if mask >> position & 1:
            key = key << 1 | (value >> position & 1)
    return key


@given(st.lists(HASHES, min_size=1, max_size=20))
def test_keys_are_the_table_index_and_the_masked_bits_in_order(values: list[int]) -> None:
    scheme = manku_tables(3, (4, 4))
    keys = table_keys(np.array(values, dtype=np.uint64), scheme)
    assert keys.shape == (len(values), 16)
    for row, value in zip(keys.tolist(), values, strict=True):
        for table, (key, mask) in enumerate(zip(row, scheme.masks, strict=True)):
            assert key >> KEY_BITS == table  # keys of different tables never meet
            assert key & ((1 << KEY_BITS) - 1) == _packed(value, mask)


def test_impossible_schemes_are_refused() -> None:
    with pytest.raises(ValueError, match="more blocks than the distance"):
        manku_tables(3, 3)
    with pytest.raises(ValueError, match="more blocks than the distance"):
        manku_tables(3, (4, 2))
    with pytest.raises(ValueError, match="at most 256"):
        manku_tables(5, 12)
    with pytest.raises(ValueError, match="at most 56"):
        manku_tables(1, 10)
    with pytest.raises(ValueError, match="distance"):
        manku_tables(-1, 4)


def test_the_default_tables_are_manku_s_for_k_3() -> None:
    scheme = default_tables()
    assert scheme.distance == DEFAULT_DISTANCE == 3
    assert scheme.tables == 16 and set(scheme.key_bits) == {28}


def test_a_scheme_is_a_plain_value() -> None:
    assert manku_tables(4, 6) == manku_tables(4, 6)
    assert isinstance(manku_tables(4, 6), TableScheme)
    assert table_keys(np.zeros(0, np.uint64), manku_tables(2, 3)).shape == (0, 3)
