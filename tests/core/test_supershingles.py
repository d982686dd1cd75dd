"""Super-shingles follow the S-curve the bands were chosen by (statistical, fixed seed)."""

from __future__ import annotations

import numpy as np
import pytest
from neardup.core import Settings, candidate_probability, super_shingles

TRIALS = 1500


def _pairs(size: int, resemblance: float, rng: np.random.Generator) -> list[np.ndarray]:
    """``TRIALS`` pairs of random sets of ``size`` shingles with the given resemblance."""
    shared = round(2 * size * resemblance / (1 + resemblance))  # J = o / (2 size - o)
    sets = []
    for _ in range(TRIALS):
        common = rng.integers(0, 2**64, shared, dtype=np.uint64)
        for _ in "ab":
            own = rng.integers(0, 2**64, size - shared, dtype=np.uint64)
            sets.append(np.unique(np.concatenate([common, own])))
    return sets


@pytest.mark.parametrize("resemblance", [0.1, 0.2, 0.3, 0.5, 0.6])
@pytest.mark.parametrize("min_shared", [1, 2])
def test_pairs_share_enough_bands_as_often_as_the_s_curve_says(
    resemblance: float, min_shared: int
) -> None:
    # Documents of 1,000 shingles fill every bin, so bands are independent and the binomial
    # S-curve holds; tolerance: 4 standard deviations of a proportion over the trials.
    settings = Settings(min_shared_bands=min_shared)
    bands = super_shingles(_pairs(1000, resemblance, np.random.default_rng(7)), settings)
    shared = (bands[0::2] == bands[1::2]).sum(axis=1)
    found = float(np.mean(shared >= min_shared))
    expected = candidate_probability(
        resemblance, settings.band_count, settings.rows_per_band, min_shared
    )
    assert abs(found - expected) <= 4 * np.sqrt(expected * (1 - expected) / TRIALS) + 1e-3
