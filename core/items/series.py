"""Series: values that many distinct entities share, and what agreeing on one implies.

Fellegi and Sunter add the comparisons' evidence as if fields were independent among
non-matches. They are not within a series: papers of one proceedings (one venue, one year)
share topic words in their titles, products of one brand share a product line's words.
Two items agreeing on such a value agree in part on their texts far more often than two
random items, so a partial agreement of a text says less there than its u, measured on
random pairs, claims. The chain rule says by how much: a pair's evidence is
log(m_X / u_X) + log(m_Y / u_Y|X), and u_Y|X is measured here.

A comparison X with whole values (a text's exact agreement, a category, an identifier) is
a series when pairs drawn among the items sharing one of its values are almost never
matches under the fitted model (``SERIES_MATCHED``): a venue or a year is, a phone or a
title is not (its shared values are mostly one entity's records, and their agreement on
other fields is the match itself). For each text comparison Y, the discount is
log2(P(Y agrees in part | X agrees, no match) / P(Y agrees in part | no match)) when
positive: ``Scorer.evidence`` takes it from Y's evidence for a match when X agrees at its
top level (the largest discount where several series agree; never below no evidence).

Pure: the fit (``fit.py``) gives the sample's features and the seeded generator.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence

from .compare import MISSING
from .scorer import ItemFeatures, Scorer

__all__ = ["SERIES_MATCHED", "SERIES_PAIRS", "series_discounts"]

#: pairs drawn among the items sharing a value, for each comparison with values
SERIES_PAIRS = 3000
#: a comparison whose shared values join matches in fewer than this share of the pairs
#: drawn among them is a series
SERIES_MATCHED = 0.01
#: pairs drawn before a comparison whose pairs are often matches is given up
_FIRST_LOOK = 300
#: pairs of a text comparison, both texts present, a discount is measured on at least
_LEAST_MEASURED = 1000


def series_discounts(
    scorer: Scorer,
    features: Sequence[ItemFeatures],
    rng: random.Random,
    each: Callable[[Iterable[list[int]]], Iterator[list[int]]] = iter,
) -> tuple[tuple[int, int, float], ...]:
    """(X, Y, bits) for each series comparison X and text comparison Y that agrees in part
    more often among X's non-matching pairs than among random ones (``scorer``: the fitted
    model, with its prior odds; ``each``: wraps the pairs, to stop a long fit)."""
    comparisons = scorer.comparisons
    texts = [at for at, c in enumerate(comparisons) if c.kind == "words"]
    chance = {at: 1.0 - scorer.model.u[at][0] for at in texts}
    found: list[tuple[int, int, float]] = []
    for x in range(len(comparisons)):
        groups = _shared_values(scorer, x, features)
        if not groups:
            continue
        weights = [len(group) * (len(group) - 1) for group in groups]
        drawn = rng.choices(groups, weights=weights, k=SERIES_PAIRS)
        matched = 0
        present: dict[int, int] = defaultdict(int)
        partial: dict[int, int] = defaultdict(int)
        for done, group in enumerate(each(drawn)):
            if done == _FIRST_LOOK and matched > 3 * SERIES_MATCHED * _FIRST_LOOK:
                break  # clearly an entity's values (a phone, a title): spare the rest
            a, b = rng.sample(group, 2)
            levels, _ = scorer.compare(features[a], features[b])
            if scorer.weight(levels, features[a]) >= scorer.needed:
                matched += 1
                continue
            for y in texts:
                if y != x and levels[y] != MISSING:
                    present[y] += 1
                    partial[y] += levels[y] >= 1
        if matched >= SERIES_MATCHED * SERIES_PAIRS:
            continue
        for y in texts:
            if present[y] < _LEAST_MEASURED or chance[y] <= 0.0:
                continue
            ratio = (partial[y] + 1) / (present[y] + 1) / chance[y]
            if ratio > 1.0:
                found.append((x, y, round(math.log2(ratio), 4)))
    return tuple(found)


def _shared_values(scorer: Scorer, at: int, features: Sequence[ItemFeatures]) -> list[list[int]]:
    """The items sharing each whole value of comparison ``at`` (values held once left out;
    none for a comparison whose values are not counted)."""
    if not scorer.model.values_of(at).total:
        return []
    holding: dict[int, list[int]] = defaultdict(list)
    for item, feature in enumerate(features):
        value = scorer.exact_value(at, feature)
        if value is not None:
            holding[value].append(item)
    return [items for items in holding.values() if len(items) > 1]
