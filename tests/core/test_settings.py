"""Settings: validation naming the bad value, band choice, JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import Settings, SettingsError, candidate_probability, choose_bands
from neardup.core.prefix_filter import least_shared


def _missed(settings: Settings, resemblance: float) -> float:
    """Probability that a pair of this resemblance is never proposed as a candidate (shares
    fewer than ``min_shared_bands`` super-shingles)."""
    return 1.0 - candidate_probability(
        resemblance, settings.band_count, settings.rows_per_band, settings.min_shared_bands
    )


def _least_shared(settings: Settings, count: int, other: int) -> int:
    """``least_shared`` of one pair: the indexed shingles two short documents must share."""
    return int(least_shared(count, np.array([other]), settings.threshold)[0])


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("shingle_size", 0, "shingle_size=0"),
        ("shingle_size", 65, "shingle_size=65"),
        ("threshold", 0.0, "threshold=0.0"),
        ("threshold", 1.5, "threshold=1.5"),
        ("sample_size", 8, "sample_size=8"),
        ("num_bins", 100, "num_bins=100"),
        ("token_unit", "sentence", "token_unit='sentence'"),
        ("short_limit", 1000, "short_limit=1000"),
        ("posting_cap", 1, "posting_cap=1"),
        ("seed", -1, "seed=-1"),
        ("min_shared_bands", 0, "min_shared_bands=0"),
        ("min_shared_bands", 129, "min_shared_bands=129"),
    ],
)
def test_bad_values_fail_fast_naming_value_and_fix(field: str, value: object, named: str) -> None:
    with pytest.raises(SettingsError, match="use") as caught:
        Settings(**{field: value})  # type: ignore[arg-type]
    assert named in str(caught.value)


def test_bands_must_come_in_pairs_and_fit_the_bins() -> None:
    with pytest.raises(SettingsError, match="bands"):
        Settings(bands=10)
    with pytest.raises(SettingsError, match="num_bins"):
        Settings(num_bins=64, bands=20, rows=4)
    assert Settings(bands=16, rows=8).band_count == 16
    with pytest.raises(SettingsError, match="min_shared_bands=3 is more than bands=2"):
        Settings(bands=2, rows=8, min_shared_bands=3)


@pytest.mark.parametrize("min_shared", [1, 2])
def test_bands_chosen_from_threshold_meet_the_false_negative_bound(min_shared: int) -> None:
    for threshold in (0.3, 0.5, 0.7, 0.8, 0.9):
        settings = Settings(threshold=threshold, min_shared_bands=min_shared)
        assert _missed(settings, threshold) <= settings.max_false_negative
        # the next larger row count would miss the bound (the choice is the most selective one)
        rows = settings.rows_per_band + 1
        bands = settings.num_bins // rows
        missed = 1 - candidate_probability(threshold, bands, rows, min_shared)
        assert missed > settings.max_false_negative
        # and one band fewer would miss it (each band is an index entry per document)
        fewer = settings.band_count - 1
        missed = 1 - candidate_probability(threshold, fewer, settings.rows_per_band, min_shared)
        assert missed > settings.max_false_negative


def test_default_s_curve_is_documented_values() -> None:
    settings = Settings()
    assert (settings.band_count, settings.rows_per_band, settings.min_shared_bands) == (37, 3, 2)
    assert _missed(settings, 0.5) == pytest.approx(0.0449, abs=1e-4)
    assert _missed(settings, 0.8) < 1e-7
    # a pair far below T: 35x less likely to be a candidate than with one band of 23 needed
    assert 1 - _missed(settings, 0.1) == pytest.approx(6.5e-4, abs=1e-5)
    assert candidate_probability(0.1, 23, 3) == pytest.approx(0.0228, abs=1e-4)
    assert choose_bands(128, 0.5, 0.05) == (23, 3)  # one band needed: the previous choice
    assert choose_bands(128, 0.8, 0.05) == (13, 7)
    assert choose_bands(128, 0.8, 0.05, 2) == (17, 6)
    assert choose_bands(128, 1.0, 0.05) == (1, 128)
    assert choose_bands(16, 0.05, 0.01) == (16, 1)  # nothing fits: every bin is a band


@given(
    resemblance=st.floats(0.0, 1.0),
    bands=st.integers(1, 64),
    rows=st.integers(1, 8),
    min_shared=st.integers(1, 4),
)
def test_candidate_probability_is_the_binomial_tail(
    resemblance: float, bands: int, rows: int, min_shared: int
) -> None:
    one = candidate_probability(resemblance, bands, rows)
    assert one == pytest.approx(1 - (1 - resemblance**rows) ** bands, abs=1e-12)
    more = candidate_probability(resemblance, bands, rows, min_shared)
    assert 0.0 <= more <= one + 1e-12  # needing more shared bands never finds more pairs
    assert candidate_probability(min(1.0, resemblance + 0.1), bands, rows, min_shared) >= (
        more - 1e-12
    )


def test_super_shingle_limit_covers_every_pair_a_short_document_can_make() -> None:
    # a short document (n < 100) reaches T = 0.5 with a longer one only if n >= 50
    assert Settings().super_shingle_limit == 50
    assert Settings(threshold=0.7, short_limit=10).super_shingle_limit == 7
    assert Settings(threshold=1.0, short_limit=1).super_shingle_limit == 1


def test_settings_round_trip_and_incompatibilities() -> None:
    settings = Settings(shingle_size=7, threshold=0.6)
    restored = Settings.from_json(settings.to_json())
    # the stored form pins the bands that were chosen, so a state keeps them
    assert restored.to_json() == settings.to_json()
    assert (restored.band_count, restored.rows_per_band) == (
        settings.band_count,
        settings.rows_per_band,
    )
    differences = Settings().incompatibilities(settings)
    assert any(d.startswith("shingle_size") for d in differences)
    assert not Settings().incompatibilities(Settings(posting_cap=10))


def test_simhash_mode_keeps_no_containment_index_and_no_threshold_of_its_own() -> None:
    simhash = Settings(sketch="simhash")
    assert simhash.containment_sample == 0  # the default index, switched off
    assert Settings().replace(sketch="simhash") == simhash  # as the CLI makes a new state's
    assert (simhash.sample_kept, simhash.join_floor) == (16, 0.7)
    assert (Settings().sample_kept, Settings(threshold=0.6).join_floor) == (256, 0.6)
    refused = [
        ({"sketch": "bloom"}, "sketch='bloom' is unknown"),
        ({"sketch": "simhash", "threshold": 0.8}, "threshold=0.8 does not apply"),
        ({"sketch": "simhash", "containment_threshold": 0.5}, "containment_threshold=0.5"),
        ({"sketch": "simhash", "containment_sample": 128}, "containment_sample=128"),
    ]
    for fields, named in refused:
        with pytest.raises(SettingsError, match="use") as caught:
            Settings(**fields)  # type: ignore[arg-type]
        assert named in str(caught.value)
    # asked for by name, even the default size is refused
    with pytest.raises(SettingsError, match="containment_sample=64: sketch='simhash'"):
        Settings().replace(sketch="simhash", containment_sample=64)
    with pytest.raises(SettingsError, match="keeps no containment index"):
        simhash.replace(containment_sample=64)
    assert simhash.replace(containment_sample=0, posting_cap=10).posting_cap == 10


def test_a_switch_of_sketch_is_an_incompatibility_and_older_settings_are_min_hash() -> None:
    simhash = Settings(sketch="simhash")
    assert Settings.from_json(simhash.to_json()).to_json() == simhash.to_json()
    assert "sketch: stored 'minhash', requested 'simhash'" in simhash.incompatibilities(Settings())
    older = {k: v for k, v in json.loads(Settings().to_json()).items() if k != "sketch"}
    # stored before the field: a min-hash state
    assert Settings.from_json(json.dumps(older)).to_json() == Settings().to_json()


def test_settings_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Settings().threshold = 0.9  # type: ignore[misc]


@given(
    shared=st.sets(st.integers(0, 200), min_size=1, max_size=40),
    only_a=st.sets(st.integers(0, 200), max_size=40),
    only_b=st.sets(st.integers(0, 200), max_size=40),
    threshold=st.sampled_from([0.3, 0.5, 0.55, 0.7, 0.8, 0.9, 1.0]),
)
def test_short_index_prefixes_of_resembling_sets_always_meet(
    shared: set[int], only_a: set[int], only_b: set[int], threshold: float
) -> None:
    # disjoint by residue mod 3, interleaved in order
    first = {3 * x for x in shared} | {3 * x + 1 for x in only_a}
    second = {3 * x for x in shared} | {3 * x + 2 for x in only_b}
    settings = Settings(threshold=threshold)
    prefix_a = set(sorted(first)[: settings.short_index_prefix(len(first))])
    prefix_b = set(sorted(second)[: settings.short_index_prefix(len(second))])
    needed = _least_shared(settings, len(first), len(second))
    assert needed == _least_shared(settings, len(second), len(first))
    if len(shared) >= threshold * len(first | second):
        assert len(prefix_a & prefix_b) >= needed >= 1
    elif min(len(first), len(second)) < threshold * max(len(first), len(second)) - 1e-9:
        assert needed > len(first) + len(second)  # ruled out by the counts alone


def test_short_index_prefix_is_as_short_as_the_guarantee_allows() -> None:
    settings = Settings(threshold=0.5)
    assert [settings.short_index_prefix(n) for n in (0, 1, 2, 3, 10, 199)] == [0, 1, 2, 2, 6, 100]
    # B inside A with J = 5/10: the prefixes meet in one shingle, which one fewer would miss
    a, b = list(range(10)), list(range(5, 10))
    prefix_a = set(a[: settings.short_index_prefix(len(a))])
    prefix_b = set(b[: settings.short_index_prefix(len(b))])
    assert prefix_a & prefix_b == {5}
    assert not set(a[: settings.short_index_prefix(len(a)) - 1]) & prefix_b


def test_the_least_shared_count_is_tight() -> None:
    # J = 8/16: each side's own shingles come first, so its prefix of 7 holds only 3 shared
    settings = Settings(threshold=0.5)
    a, b = [0, 1, 2, 3, *range(8, 16)], [4, 5, 6, 7, *range(8, 16)]
    prefix_a = set(a[: settings.short_index_prefix(len(a))])
    prefix_b = set(b[: settings.short_index_prefix(len(b))])
    assert len(prefix_a & prefix_b) == _least_shared(settings, 12, 12) == 3
    assert _least_shared(settings, 10, 21) == 32  # 10 < 0.5 * 21: out by size
