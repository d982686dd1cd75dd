"""The containment sample: levels by size, nested samples, counts per level, settings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import (
    Settings,
    SettingsError,
    containment_keys,
    kept_at_levels,
    level_counts,
    sampled_at,
)
from neardup.core.shingles import top_bits


@pytest.mark.parametrize(
    ("count", "level"), [(0, 0), (1, 0), (64, 0), (65, 1), (128, 1), (129, 2), (10_000, 8)]
)
def test_a_document_keeps_between_half_and_all_of_p_keys(count: int, level: int) -> None:
    settings = Settings(containment_sample=64)
    assert settings.containment_level(count) == level
    assert count <= 64 << level and (level == 0 or count > 64 << (level - 1))


_fingerprints = st.lists(st.integers(0, 2**64 - 1), max_size=300).map(
    lambda values: np.unique(np.array(values, dtype=np.uint64))
)


@given(_fingerprints, st.integers(0, 8))
def test_samples_nest_and_keep_the_values_with_low_bits_zero(
    fingerprints: np.ndarray, level: int
) -> None:
    everything = containment_keys(fingerprints, 0)
    assert everything.tolist() == sorted(set(top_bits(fingerprints).tolist()))
    coarse, fine = containment_keys(fingerprints, level + 1), containment_keys(fingerprints, level)
    assert set(coarse.tolist()) <= set(fine.tolist())  # two levels compare at the coarser
    assert fine.tolist() == [v for v in everything.tolist() if v % (1 << level) == 0]


@given(st.lists(st.integers(0, 2**32 - 1), max_size=200, unique=True))
def test_counts_per_level_are_what_each_level_keeps(values: list[int]) -> None:
    keys = np.array(sorted(values), np.uint32)
    counts = level_counts(keys)
    assert len(counts) == 33
    for level in range(33):
        assert counts[level] == sum(v % (1 << level) == 0 for v in values)
    assert sampled_at([counts, counts], [0, 40]).tolist() == [len(values), counts[32]]


@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 2**32 - 1), max_size=40), st.integers(-2, 40)),
        max_size=8,
    )
)
def test_counts_at_levels_of_many_samples_at_once_are_each_sample_s_own(
    samples: list[tuple[list[int], int]],
) -> None:
    values = np.array([v for sample, _ in samples for v in sample], np.uint32)
    lengths = np.array([len(sample) for sample, _ in samples], np.int64)
    levels = [level for _, level in samples]
    expected = [
        int(sampled_at([level_counts(np.array(sample, np.uint32))], [level])[0])
        for sample, level in samples
    ]
    assert kept_at_levels(values, lengths, levels).tolist() == expected


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"containment_sample": 3}, r"containment_sample=3 is too small .* use at least 8"),
        ({"containment_sample": -1}, r"containment_sample=-1 is out of range"),
        ({"containment_threshold": 1.5}, r"containment_threshold=1.5 is out of range"),
        ({"containment_threshold": 0.0}, r"containment_threshold=0.0 is out of range"),
        (
            {"containment_sample": 0, "containment_threshold": 0.5},
            r"containment_threshold needs the containment index",
        ),
    ],
)
def test_bad_containment_settings_are_refused_by_name(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings(**changes)  # type: ignore[arg-type]


def test_the_event_threshold_is_a_run_setting_and_the_sample_is_not() -> None:
    stored = Settings()
    assert stored.replace(containment_threshold=0.7).incompatibilities(stored) == []
    assert stored.replace(containment_sample=32).incompatibilities(stored) == [
        "containment_sample: stored 64, requested 32"
    ]
