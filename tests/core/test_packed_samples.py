"""Packed samples: every batch of samples comes back value for value, in less room."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis import strategies as st
from neardup.core.packed_samples import RAW, WHOLE_TAG, pack_samples, unpack_samples

U32 = npt.NDArray[np.uint32]


def _round_trip(samples: list[U32]) -> list[bytes]:
    lengths = np.array([len(sample) for sample in samples], np.int64)
    values = np.concatenate(samples) if samples else np.zeros(0, np.uint32)
    parts = pack_samples(values.astype(np.uint32), lengths)
    got, got_lengths = unpack_samples(parts)
    assert got_lengths.tolist() == lengths.tolist()
    assert got.dtype == np.uint32
    assert got.tolist() == values.tolist()
    return parts


_ascending = st.lists(st.integers(0, 2**32 - 1), max_size=300, unique=True).map(
    lambda values: np.array(sorted(values), np.uint32)
)
_any_order = st.lists(st.integers(0, 2**32 - 1), max_size=40).map(
    lambda values: np.array(values, np.uint32)
)


@given(st.lists(st.one_of(_ascending, _any_order), max_size=12))
def test_any_batch_comes_back_value_for_value(samples: list[U32]) -> None:
    _round_trip(samples)


@given(st.lists(_ascending, min_size=1, max_size=8), st.data())
def test_a_subset_of_the_packed_decodes_alone(samples: list[U32], data: st.DataObject) -> None:
    """A verifier reads some candidates' stored sketches, in any order, with a sketch kept
    whole (a document of the same batch) among them."""
    lengths = np.array([len(sample) for sample in samples], np.int64)
    parts = pack_samples(np.concatenate(samples), lengths)
    picked = data.draw(st.lists(st.integers(0, len(samples) - 1), max_size=10))
    whole = [WHOLE_TAG + samples[0].astype("<u4").tobytes() if len(samples[0]) else b""]
    got, got_lengths = unpack_samples([*(parts[at] for at in picked), *whole])
    expected = [*(samples[at] for at in picked), samples[0]]
    assert got_lengths.tolist() == [len(sample) for sample in expected]
    assert got.tolist() == np.concatenate(expected).tolist()


def test_a_page_sample_takes_about_its_gaps_bits() -> None:
    """The 256 smallest of 800 uniform 32-bit values: gaps of about 2**32 / 800, so about
    25 bits a value (32 kept whole)."""
    rng = np.random.default_rng(7)
    samples = [
        np.unique(rng.integers(0, 2**32, 800, dtype=np.uint64).astype(np.uint32))[:256]
        for _ in range(200)
    ]
    parts = _round_trip(samples)
    bits = 8 * sum(map(len, parts)) / sum(map(len, samples))
    assert 23 < bits < 27, bits
    assert all(part[0] != RAW for part in parts)


def test_what_cannot_be_packed_is_kept_whole() -> None:
    descending = np.array([9, 5, 1], np.uint32)
    extremes = np.array([0, 2**32 - 1], np.uint32)
    parts = _round_trip([descending, np.zeros(0, np.uint32), extremes, np.array([7], np.uint32)])
    assert parts[0] == WHOLE_TAG + descending.astype("<u4").tobytes()
    assert parts[1] == b""
    assert parts[2][0] == 32  # the widest gap there is
    assert len(parts[3]) == 7  # a width, a count and the value: no gap
