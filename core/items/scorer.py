"""Scoring pairs of items under a model: features once an item, levels and weights a pair.

``Scorer.features`` readies an item (its words with their rarity weights, its codes);
``Scorer.compare`` names the level of each comparison of two readied items, and
``Scorer.score`` turns them into a match weight, a match probability and each field's
similarity (what events and queries report).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from .compare import (
    MISSING,
    CategoryFeatures,
    Comparison,
    Features,
    IdentifierFeatures,
    TextFeatures,
    category_level,
    codes_level,
    codes_of,
    comparisons_of,
    features_of,
    geo_level,
    identifier_level,
    longtext_level,
    number_level,
    numbers_level,
    words_level,
)
from .model import ItemModel
from .schema import ItemSchema
from .similarity import ItemMatch
from .values import (
    SKETCH_SIZE,
    FieldValue,
    GeoValue,
    NumberValue,
)

__all__ = ["COMMON_CODE_SHARE", "ItemFeatures", "Scorer", "word_weight"]

#: a code held by more than this share of the sampled items (or 3 of them) is common
COMMON_CODE_SHARE = 0.001
#: a value's share of the items is never taken below this many items (one pair is two)
_LEAST_COUNT = 1.0
#: past the strongest agreement on where an item is (address, location), the share each
#: further one counts for
PLACE_SHARE = 0.25


def word_weight(total: int, holding: int) -> float:
    """The rarity weight of a word that ``holding`` of ``total`` items hold (an unseen word
    counts as held by none)."""
    return math.log1p(max(1, total) / (holding + 1))


@dataclass(slots=True)
class ItemFeatures:
    """An item readied for comparisons: per field its features (None: missing), its codes."""

    fields: list[Features | None]
    codes: tuple[int, ...]


_Comparer = Callable[[ItemFeatures, ItemFeatures, dict[str, float]], int]


def _identifier(a: IdentifierFeatures, b: IdentifierFeatures) -> tuple[int, float]:
    level = identifier_level(a, b)
    return level, level / 2.0


def _number(a: NumberValue, b: NumberValue) -> tuple[int, float]:
    level = number_level(a, b)
    return level, level / 3.0


def _geo(a: GeoValue, b: GeoValue, radius: float) -> tuple[int, float]:
    level, distance = geo_level(a, b, radius)
    return level, radius / (radius + distance)


class Scorer:
    """Pairs scored under one schema and one model."""

    def __init__(self, schema: ItemSchema, model: ItemModel, threshold: float | None = None):
        self.schema = schema
        self.model = model
        self.threshold = schema.threshold if threshold is None else threshold
        self.comparisons = comparisons_of(schema)
        if not model.matches(schema):
            raise ValueError("the model was fitted for another schema's comparisons")
        self._log_m = [[math.log2(max(x, 1e-12)) for x in m] for m in model.m]
        self._log_u = [[math.log2(max(x, 1e-12)) for x in u] for u in model.u]
        self._top = [len(m) - 1 for m in model.m]
        self.weights = [
            [math.log2(max(m, 1e-12) / max(u, 1e-12)) for m, u in zip(ms, us, strict=True)]
            for ms, us in zip(model.m, model.u, strict=True)
        ]
        self._word_weights: list[dict[int, float]] = []
        self._default_weight: list[float] = []
        for index in range(len(schema.fields)):
            counts = model.words_of(index)
            table = counts.as_dict()
            self._word_weights.append(
                {key: word_weight(counts.total, count) for key, count in table.items()}
            )
            self._default_weight.append(word_weight(counts.total, 0))
        values = [model.values_of(at) for at in range(len(self.comparisons))]
        self._values = [counts.as_dict() for counts in values]
        self._value_totals = [counts.total for counts in values]
        code_counts = model.codes.as_dict()
        bound = max(3.0, COMMON_CODE_SHARE * model.codes.total)
        self.common_codes = frozenset(key for key, n in code_counts.items() if n > bound)
        self._radius = [spec.radius or 1.0 for spec in schema.fields]
        self._place = [
            at
            for at, comparison in enumerate(self.comparisons)
            if comparison.kind == "geo"
            or (
                comparison.kind in ("words", "numbers")
                and schema.fields[comparison.field].reading == "address"
            )
        ]
        self._least_weight = schema.least_weight
        self._level_of = [self._comparer(comparison) for comparison in self.comparisons]
        # Y -> [(X, bits)]: Y's evidence for a match counts less where X agrees on a series
        self._series: dict[int, list[tuple[int, float]]] = {}
        for x, y, bits in model.series:
            self._series.setdefault(y, []).append((x, bits))
        # verify's order, the most telling first, each with the most the later ones can add
        most = [self._most_for(at) for at in range(len(self.comparisons))]
        order = sorted(range(len(most)), key=lambda at: (-most[at], at))
        self._bounded = [(at, sum(most[k] for k in order[i + 1 :])) for i, at in enumerate(order)]
        #: the weight (log2 odds) the threshold asks, a little under it (rounding; a
        #: probability of 1 is reached at a finite weight, 60 at most)
        odds = self.threshold / (1.0 - self.threshold) if self.threshold < 1.0 else math.inf
        self.needed = min(math.log2(odds), 39.0) - 1e-3

    def features(self, values: Sequence[FieldValue | None]) -> ItemFeatures:
        fields: list[Features | None] = []
        for index, (spec, value) in enumerate(zip(self.schema.fields, values, strict=True)):
            if value is None:
                fields.append(None)
                continue
            fields.append(
                features_of(spec, value, self._word_weights[index], self._default_weight[index])
            )
        return ItemFeatures(fields, tuple(sorted(codes_of(self.schema, values))))

    def compare(self, a: ItemFeatures, b: ItemFeatures) -> tuple[list[int], dict[str, float]]:
        """Each comparison's level (``MISSING`` where it cannot be made), and each field's
        similarity in [0, 1] (fields missing in either item left out)."""
        scores: dict[str, float] = {}
        levels = [level_of(a, b, scores) for level_of in self._level_of]
        return levels, scores

    def _comparer(self, comparison: Comparison) -> _Comparer:
        """Comparison's level for a pair, its field's similarity into the scores: one
        function per comparison, chosen once (the fit compares hundreds of thousands of
        pairs; choosing by kind and checking types every pair was a tenth of its time)."""
        index = comparison.field
        if index < 0:
            common = self.common_codes

            def codes(a: ItemFeatures, b: ItemFeatures, scores: dict[str, float]) -> int:
                return codes_level(a.codes, b.codes, common)

            return codes
        name = self.schema.fields[index].name
        radius = self._radius[index]
        # Any: ``features_of`` made this field's features of the kind compared here
        kinds: dict[str, Callable[[Any, Any], tuple[int, float]]] = {
            "words": words_level,
            "category": category_level,
            "identifier": _identifier,
            "number": _number,
            "geo": partial(_geo, radius=radius),
            "longtext": partial(longtext_level, size=SKETCH_SIZE),
        }
        similar = kinds.get(comparison.kind)
        if similar is None:  # a text's numbers: a level, and no similarity of their own

            def numbers(a: ItemFeatures, b: ItemFeatures, scores: dict[str, float]) -> int:
                left: Any = a.fields[index]
                right: Any = b.fields[index]
                return MISSING if left is None or right is None else numbers_level(left, right)

            return numbers
        found = similar

        def compared(a: ItemFeatures, b: ItemFeatures, scores: dict[str, float]) -> int:
            left: Any = a.fields[index]
            right: Any = b.fields[index]
            if left is None or right is None:
                return MISSING
            level, scores[name] = found(left, right)
            return level

        return compared

    def exact_value(self, comparison: int, features: ItemFeatures) -> int | None:
        """The hash of the value an exact agreement of this comparison agrees on."""
        index = self.comparisons[comparison].field
        found = features.fields[index] if index >= 0 else None
        if isinstance(found, (TextFeatures, CategoryFeatures, IdentifierFeatures)):
            return found.exact
        return None

    def evidence(self, levels: Sequence[int], a: ItemFeatures) -> list[float]:
        """Per comparison, log2(m / u) at the pair's level (0 where MISSING); an exact
        agreement is weighed by its value's own frequency (``a``: either item); a text's
        evidence for a match loses the series' discount where the pair agrees on one
        (``series.py``)."""
        found = [self._evidence_at(at, level, a) for at, level in enumerate(levels)]
        for y, series in self._series.items():
            if found[y] > 0.0:
                cut = max((b for x, b in series if levels[x] == self._top[x]), default=0.0)
                found[y] = max(0.0, found[y] - cut)
        agreeing = [at for at in self._place if found[at] > 0.0]
        if len(agreeing) > 1:
            # an address and a location say where an item is, once: every business in a
            # building agrees on both, so past the strongest, each counts for a share
            strongest = max(agreeing, key=lambda at: found[at])
            for at in agreeing:
                if at != strongest:
                    found[at] *= PLACE_SHARE
        return found

    def evidence_rows(
        self, levels: npt.NDArray[np.int8], firsts: Sequence[ItemFeatures]
    ) -> npt.NDArray[np.float64]:
        """``evidence`` of many pairs at once (a row of levels each, ``firsts``: either item
        of each): the same numbers, looked up by column; the fit scores tens of thousands."""
        rows, columns = levels.shape
        found = np.zeros((rows, columns))
        for at in range(columns):
            column = levels[:, at].astype(np.int64)
            present = column != MISSING
            found[present, at] = np.asarray(self.weights[at])[column[present]]
            top = len(self.weights[at]) - 1
            if self._values[at]:
                for row in np.flatnonzero(column == top).tolist():
                    found[row, at] = self._evidence_at(at, top, firsts[row])
        for y, series in self._series.items():
            cut = np.zeros(rows)
            for x, bits in series:
                cut = np.where(levels[:, x] == self._top[x], np.maximum(cut, bits), cut)
            positive = found[:, y] > 0.0
            found[positive, y] = np.maximum(0.0, found[positive, y] - cut[positive])
        if len(self._place) > 1:
            place = found[:, self._place]
            agreeing = place > 0.0
            several = agreeing.sum(axis=1) > 1
            if several.any():
                strongest = np.argmax(np.where(agreeing, place, -np.inf), axis=1)
                shared = agreeing & several[:, None]
                shared[np.arange(rows), strongest] = False
                found[:, self._place] = np.where(shared, place * PLACE_SHARE, place)
        return found

    def _evidence_at(self, at: int, level: int, a: ItemFeatures) -> float:
        if level == MISSING:
            return 0.0
        log_u = self._log_u[at][level]
        if level == len(self._log_m[at]) - 1 and self._values[at]:
            value = self.exact_value(at, a)
            if value is not None:
                # chance agreement on this value: its own share, not the mean's
                share = max(_LEAST_COUNT, self._values[at].get(value, 0))
                log_u = math.log2(share / self._value_totals[at])
        return self._log_m[at][level] - log_u

    def _most_for(self, at: int) -> float:
        """The most comparison ``at`` can add to a pair's weight (scaled; 0 if never
        positive): its best level's evidence, at the rarest value for an exact agreement."""
        most = max(m - u for m, u in zip(self._log_m[at], self._log_u[at], strict=True))
        if self._values[at]:
            rarest = math.log2(_LEAST_COUNT / self._value_totals[at])
            most = max(most, self._log_m[at][-1] - rarest)
        scale = self.model.scales[at][0] if self.model.scales else 1.0
        return max(0.0, most * scale)

    def weight(self, levels: Sequence[int], a: ItemFeatures) -> float:
        """The match weight (log2 odds) of a pair at ``levels``: the prior odds plus each
        comparison's evidence, scaled as the model learned (``fit.py``: evidence that
        near misses share counts for less)."""
        total = self.model.prior
        for at, evidence in enumerate(self.evidence(levels, a)):
            total += self._scaled(at, evidence)
        return total

    def _scaled(self, at: int, evidence: float) -> float:
        scales = self.model.scales
        if not scales:
            return evidence
        return evidence * (scales[at][0] if evidence > 0 else scales[at][1])

    def score(self, a: ItemFeatures, b: ItemFeatures) -> ItemMatch:
        """The pair's match probability, its fields' similarities, and the verdict (at the
        threshold or above, and with fields in common weighing ``min_weight`` or more)."""
        levels, scores = self.compare(a, b)
        return self._verdict(levels, scores, a, b)

    def verify(self, a: ItemFeatures, b: ItemFeatures) -> ItemMatch | None:
        """``score``, for a pair that can reach the threshold; None as soon as the
        comparisons made, with the most the others could add, fall short of it. The
        comparisons go most telling first (a candidate that shares a postcode and no name
        stops after the name), and the bound is exact (the place share and the series'
        discount only lower evidence), so the verdicts are ``score``'s."""
        levels = [MISSING] * len(self.comparisons)
        scores: dict[str, float] = {}
        total = self.model.prior
        for at, rest in self._bounded:
            level = levels[at] = self._level_of[at](a, b, scores)
            total += self._scaled(at, self._evidence_at(at, level, a))
            if total + rest < self.needed:
                return None
        return self._verdict(levels, scores, a, b)

    def _verdict(
        self, levels: Sequence[int], scores: dict[str, float], a: ItemFeatures, b: ItemFeatures
    ) -> ItemMatch:
        weight = self.weight(levels, a)
        probability = 1.0 / (1.0 + math.exp2(-max(-60.0, min(60.0, weight))))
        matched = probability >= self.threshold - 1e-12
        if matched and self._least_weight > 0.0:
            common = sum(
                spec.weight
                for spec, left, right in zip(self.schema.fields, a.fields, b.fields, strict=True)
                if left is not None and right is not None
            )
            matched = common >= self._least_weight - 1e-9
        return ItemMatch(probability, scores, matched)
