"""How much each comparison's evidence counts, and the prior odds of a match.

Fellegi and Sunter add up the comparisons' evidence, log2(m / u), as if the fields were
independent. Among random pairs they nearly are; among the candidates they are not: every
business in one building agrees on its address, its location and its city, every song of
an album on its artist, album, label and date. ``calibrate`` learns by how much that
overcounts, by logistic regression on the evidence split into what speaks for a match and
what speaks against it, with one scale each a comparison: matches are the anchor pairs
(``fit.py``), non-matches random pairs and near misses, the candidates that join an item
whose match is found to one outside its group and barely agree on the primary field (the
heaviest text: a name, a title). The scales are pulled toward 1 (Fellegi-Sunter as it is),
the evidence for a match may count less, against it more.

``prior_odds``: the log2 odds that two items of the corpus match, λ / (1 - λ), λ the share
of matches among all the pairs that could be compared: the fixed point of λ = (the sum of
the candidates' match probabilities under λ) / pairs.

Written here with numpy: the regression has a few dozen parameters and its bounds (scales
within [0, 1] for, [1, 4] against) hold parameters out of a Newton step while the
gradient pushes them against one; a solver library would be more code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["LEAST_ANCHORS", "NEAR_MISS_LEVEL", "calibrate", "prior_odds", "scaled"]

#: anchor pairs the regression needs (fewer: the scales stay at 1)
LEAST_ANCHORS = 5
_ITERATIONS = 100
#: rows of each group (matches, near misses, chance pairs) the regression takes at most
_ROWS = 20_000


def scaled(
    evidence: npt.NDArray[np.float64], scales: Sequence[tuple[float, float]]
) -> npt.NDArray[np.float64]:
    if not scales:
        total: npt.NDArray[np.float64] = evidence.sum(axis=1)
        return total
    positive = np.array([s[0] for s in scales])
    negative = np.array([s[1] for s in scales])
    scaled: npt.NDArray[np.float64] = (
        np.maximum(evidence, 0.0) * positive + np.minimum(evidence, 0.0) * negative
    ).sum(axis=1)
    return scaled


def calibrate(
    pairs: Sequence[tuple[int, int]],
    evidence: npt.NDArray[np.float64],
    chance: npt.NDArray[np.float64],
    anchors: Sequence[int],
    items: int,
    primary: npt.NDArray[np.int8] | None,
    start: float,
) -> tuple[tuple[tuple[float, float], ...], float | None]:
    """How much each comparison's evidence counts, for and against, learned by logistic
    regression: matches are the anchors, non-matches random pairs and near misses (the
    candidates joining an anchored item to an item outside its anchored group, whose primary
    field, the heaviest text, barely agrees: the song beside it on the album, the shop next
    door; a record with the same name is more likely the same one again). Fellegi-Sunter
    adds up evidence as if the fields were independent; among candidates they are not (a
    building's address, location and city agree together for every business in it), and
    near misses show by how much that overcounts."""
    count = evidence.shape[1]
    if len(anchors) < LEAST_ANCHORS:
        return tuple((1.0, 1.0) for _ in range(count)), None
    group = list(range(items))

    def find(x: int) -> int:
        while group[x] != x:
            group[x] = group[group[x]]
            x = group[x]
        return x

    anchored: set[int] = set()
    for row in anchors:
        a, b = pairs[row]
        anchored.update((a, b))
        group[find(a)] = find(b)
    near = [
        row
        for row, (a, b) in enumerate(pairs)
        if (a in anchored or b in anchored)
        and find(a) != find(b)
        and (primary is None or primary[row] <= NEAR_MISS_LEVEL)
    ]
    positives = evidence[np.asarray(anchors)[_sample(len(anchors))]]
    near_misses = evidence[np.asarray(near, dtype=np.int64)[_sample(len(near))]]
    chance = chance[_sample(len(chance))]
    groups = [positives, near_misses, chance] if near else [positives, chance]
    features = np.vstack(groups)
    target = np.concatenate([np.ones(len(positives)), np.zeros(len(features) - len(positives))])
    # matches weigh as much as non-matches, near misses as much as chance pairs
    shares = [0.5, 0.25, 0.25] if near else [0.5, 0.5]
    weight = np.concatenate(
        [
            np.full(len(group), share / len(group))
            for group, share in zip(groups, shares, strict=False)
        ]
    )
    design = np.hstack([np.maximum(features, 0.0), np.minimum(features, 0.0)])
    beta, intercept = _logistic(design, target, weight, start)
    return tuple((float(beta[c]), float(beta[count + c])) for c in range(count)), intercept


def _sample(size: int) -> npt.NDArray[np.int64]:
    """At most ``_ROWS`` of ``size`` rows, drawn with a fixed seed: each group's share of
    the regression is fixed, so a sample of it is fitted as the whole would be, faster."""
    if size <= _ROWS:
        return np.arange(size, dtype=np.int64)
    return np.sort(np.random.default_rng(size).choice(size, _ROWS, replace=False))


def _logistic(
    design: npt.NDArray[np.float64],
    target: npt.NDArray[np.float64],
    weight: npt.NDArray[np.float64],
    start: float,
) -> tuple[npt.NDArray[np.float64], float]:
    """Scales and the intercept (in bits) of a weighted logistic regression on evidence in
    bits, by Newton steps on the parameters off their bounds, pulled toward 1
    (Fellegi-Sunter as it is) by a ridge of ``_RIDGE``: the first half (evidence for) within
    [0, 1], the second (against) within [1, ``_MOST_AGAINST``]."""
    rows, count = design.shape
    x = np.hstack([design * math.log(2.0), np.ones((rows, 1))])
    # the intercept starts at, and is pulled toward, the prior odds (``start``, bits): when
    # the evidence parts matches from non-matches cleanly, any intercept between them fits
    beta = np.append(np.ones(count), start * math.log(2.0))
    center = beta.copy()
    ridge = np.append(np.full(count, _RIDGE), _INTERCEPT_RIDGE)
    # evidence for a match may count less (overcounted), against it more (undercounted)
    half = count // 2
    lower = np.concatenate([np.zeros(half), np.ones(count - half), [-np.inf]])
    upper = np.concatenate([np.ones(half), np.full(count - half, _MOST_AGAINST), [np.inf]])
    for _ in range(_ITERATIONS):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ beta, -60.0, 60.0)))
        gradient = x.T @ (weight * (p - target)) + ridge * (beta - center)
        hessian = (x * (weight * p * (1.0 - p))[:, None]).T @ x + np.diag(ridge + 1e-9)
        # a parameter at a bound that the gradient pushes against stays there: a full
        # Newton step clipped afterwards would swing the others back and forth instead
        free = ~(((beta <= lower) & (gradient > 0)) | ((beta >= upper) & (gradient < 0)))
        step = np.zeros_like(beta)
        step[free] = np.linalg.solve(hessian[np.ix_(free, free)], gradient[free])
        step *= min(1.0, _LARGEST_STEP / max(1e-12, float(np.abs(step).max())))
        moved = np.clip(beta - step, lower, upper)
        done = float(np.abs(moved - beta).max()) < 1e-6
        beta = moved
        if done:
            break
    return beta[:count], float(beta[count]) / math.log(2.0)


#: a near miss's primary field is at this level or below (words: J < 0.4, no bigrams)
NEAR_MISS_LEVEL = 1
#: the pull of the scales toward 1 (per scale, in the units of a weighted log loss)
_RIDGE = 0.05
#: the pull of the intercept toward the prior odds (per nat squared)
_INTERCEPT_RIDGE = 1e-5
#: a Newton step moves no parameter by more than this (separable classes drift otherwise)
_LARGEST_STEP = 1.0
#: evidence against a match counts at most this many times over
_MOST_AGAINST = 4.0


def prior_odds(weights: npt.NDArray[np.float64], comparable: float) -> float:
    """log2 odds λ / (1 - λ) that two items match, λ the share of matches among all the
    pairs that can be compared: the fixed point of λ = (sum of the candidates' match
    probabilities under λ) / pairs (pairs that are no candidates: about none)."""
    odds = -10.0
    for _ in range(_ITERATIONS):
        probability = 1.0 / (1.0 + np.exp2(-np.clip(weights + odds, -60.0, 60.0)))
        expected = max(0.5, float(probability.sum()))
        new = math.log2(expected / max(1.0, comparable - expected))
        if abs(new - odds) < 1e-4:
            return new
        odds = new
    return odds
