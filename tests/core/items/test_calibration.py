"""The calibration's regression reaches the optimum of its bounded problem: checked by the
optimality conditions (a free parameter's gradient is zero; one held at a bound has a
gradient pushing against it) on evidence that holds some scales at their bounds."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from neardup.core.items import calibration


def _evidence(seed: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Evidence in bits of three comparisons for 600 matches and 1,200 non-matches: the
    first two agree together (one building's address and location), so their evidence for
    a match is overcounted; the third's evidence against a match is undercounted."""
    rng = np.random.default_rng(seed)
    rows = []
    for match in (1.0,) * 600 + (0.0,) * 1200:
        together = rng.random() < (0.9 if match else 0.4)
        address = 6.0 if together else -3.0
        location = 5.0 if together else -2.0
        third = rng.normal(2.0, 1.0) if match else rng.normal(-1.0, 1.5)
        rows.append((address, location, third, match))
    table = np.array(rows)
    return table[:, :3], table[:, 3]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_regression_meets_its_optimality_conditions(seed: int) -> None:
    features, target = _evidence(seed)
    count = features.shape[1]
    weight = np.where(target == 1.0, 0.5 / 600, 0.5 / 1200)
    design = np.hstack([np.maximum(features, 0.0), np.minimum(features, 0.0)])
    scales, intercept = calibration._logistic(design, target, weight, start=-8.0)

    beta = np.append(scales, intercept * math.log(2.0))
    x = np.hstack([design * math.log(2.0), np.ones((len(design), 1))])
    center = np.append(np.ones(2 * count), -8.0 * math.log(2.0))
    ridge = np.append(np.full(2 * count, calibration._RIDGE), calibration._INTERCEPT_RIDGE)
    p = 1.0 / (1.0 + np.exp(-(x @ beta)))
    gradient = x.T @ (weight * (p - target)) + ridge * (beta - center)
    lower = np.concatenate([np.zeros(count), np.ones(count), [-np.inf]])
    upper = np.concatenate([np.ones(count), np.full(count, calibration._MOST_AGAINST), [np.inf]])
    at_lower, at_upper = beta <= lower + 1e-9, beta >= upper - 1e-9
    free = ~(at_lower | at_upper)
    assert np.all(np.abs(gradient[free]) < 1e-5), (beta, gradient)
    assert np.all(gradient[at_lower] > -1e-5), (beta, gradient)
    assert np.all(gradient[at_upper] < 1e-5), (beta, gradient)
    # the data hold some scale at a bound: the conditions above are not all about zeros
    assert (at_lower | at_upper).any()
