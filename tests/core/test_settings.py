from __future__ import annotations

import pytest
from neardup.core import Settings, SettingsError, candidate_probability, choose_bands


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


def test_bands_chosen_from_threshold_meet_the_false_negative_bound() -> None:
    for threshold in (0.3, 0.5, 0.7, 0.8, 0.9):
        settings = Settings(threshold=threshold)
        assert settings.false_negative_probability(threshold) <= settings.max_false_negative
        # the next larger row count would miss the bound (the choice is the most selective one)
        rows = settings.rows_per_band + 1
        bands = settings.num_bins // rows
        assert 1 - candidate_probability(threshold, bands, rows) > settings.max_false_negative


def test_default_s_curve_is_documented_values() -> None:
    settings = Settings()
    assert (settings.band_count, settings.rows_per_band) == (42, 3)
    assert settings.false_negative_probability(0.5) == pytest.approx(0.00367, abs=1e-4)
    assert settings.false_negative_probability(0.8) < 1e-9
    assert choose_bands(128, 0.8, 0.05) == (18, 7)


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


def test_settings_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Settings().threshold = 0.9  # type: ignore[misc]
