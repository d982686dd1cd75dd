"""Per-field similarity in [0, 1] and the combined score of two items.

* text: the mean of the Jaccard of the word sets and that of the character n-gram sets (the
  words reward exact spelling, the n-grams survive typos and split or joined words); 0 when
  both texts have numbers and share none of them. Kept apart so that a score of s needs word
  Jaccard ≥ 2s - 1: a high floor is then keyed on a text's first few words (``keys.py``).
* longtext: resemblance estimated from the two bottom-s samples (Broder's MIN_s: of the s
  smallest values of the union, the share found in both; exact below s shingles).
* category, identifier: 1 when the normalised values are equal, else 0.
* geo: 1 at the same place, linearly down to 0 at the field's radius.
* number: 1 - r / τ for a relative difference r = |a - b| / max(|a|, |b|) below τ =
  ``NUMBER_TOLERANCE``, else 0 (and for opposite signs): two unrelated prices rarely differ by
  less than half, and min/max alone would give them 0.5.

The combined score is the weighted mean over the fields both items have (a field missing or
empty in either is left out, neither a match nor a mismatch); tokens are never pooled across
fields. A pair whose common fields weigh less than the schema's ``least_weight`` is no match,
whatever its score (two records with only a city in common say nothing). Each similarity
bounds a Jaccard (or estimate) of the sets the keys are cut from, which is what the key
plan's guarantee rests on (``keys.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from .geo import METRES_PER_DEGREE, geo_similarity, haversine_m
from .schema import FieldSpec
from .values import (
    CategoryValue,
    FieldValue,
    GeoValue,
    LongTextValue,
    NumberValue,
    TextValue,
)

__all__ = [
    "NUMBER_TOLERANCE",
    "WORD_SHARE",
    "ItemMatch",
    "combine",
    "field_similarity",
    "jaccard_sorted",
    "match_or_none",
    "number_ratio",
    "number_similarity",
    "sketch_resemblance",
    "text_similarity",
    "word_floor",
]

#: the words' share of a text's score (the n-grams have the rest)
WORD_SHARE = 0.5
#: numbers differing by this share of the larger one or more have similarity 0
NUMBER_TOLERANCE = 0.25


@dataclass(frozen=True, slots=True)
class ItemMatch:
    """The verdict on a pair: the combined score, each compared field's score (fields missing
    in either item are absent), and whether the score reaches the schema's threshold."""

    score: float
    fields: dict[str, float]
    matched: bool


def jaccard_sorted(a: Sequence[int], b: Sequence[int]) -> float:
    """|A ∩ B| / |A ∪ B| of two sequences of distinct values (0 when either is empty)."""
    if not a or not b:
        return 0.0
    shared = len(set(a).intersection(b))
    return shared / (len(a) + len(b) - shared)


def sketch_resemblance(a: Sequence[int], b: Sequence[int], size: int) -> float:
    """Broder's estimate from two bottom-``size`` samples (sorted): among the ``size`` smallest
    values of their union, the share present in both."""
    if not a or not b:
        return 0.0
    union = sorted(set(a).union(b))[:size]
    in_a, in_b = set(a), set(b)
    both = sum(1 for value in union if value in in_a and value in in_b)
    return both / len(union)


def number_similarity(a: float, b: float) -> float:
    """1 - r / τ for a relative difference r below τ, else 0; 0 for opposite signs."""
    if a == b:
        return 1.0
    if a * b <= 0.0:
        return 0.0
    relative = 1.0 - min(abs(a), abs(b)) / max(abs(a), abs(b))
    return max(0.0, 1.0 - relative / NUMBER_TOLERANCE)


def number_ratio(score: float) -> float:
    """The least ratio min/max of two numbers of the same sign scoring ``score`` or more."""
    return 1.0 - NUMBER_TOLERANCE * (1.0 - score)


def text_similarity(a: TextValue, b: TextValue) -> float:
    """Mean of the word and n-gram Jaccards; 0 when both have numbers and share none."""
    if a.numbers and b.numbers and not set(a.numbers).intersection(b.numbers):
        return 0.0
    words = jaccard_sorted(a.word_tokens, b.word_tokens)
    return WORD_SHARE * words + (1.0 - WORD_SHARE) * jaccard_sorted(a.grams, b.grams)


def word_floor(score: float) -> float:
    """The word Jaccard a text score of ``score`` needs, n-grams all shared (≤ 0: none)."""
    return (score - (1.0 - WORD_SHARE)) / WORD_SHARE


def _text(spec: FieldSpec, a: TextValue, b: TextValue, sketch_size: int) -> float:
    return text_similarity(a, b)


def _equal(spec: FieldSpec, a: CategoryValue, b: CategoryValue, sketch_size: int) -> float:
    return 1.0 if a.value == b.value else 0.0


def _geo(spec: FieldSpec, a: GeoValue, b: GeoValue, sketch_size: int) -> float:
    radius = spec.radius if spec.radius is not None else 1.0
    # a great circle is never shorter than its north-south part: most pairs end here
    if abs(a.lat - b.lat) * METRES_PER_DEGREE >= radius:
        return 0.0
    return geo_similarity(haversine_m(a.lat, a.lon, b.lat, b.lon), radius)


def _longtext(spec: FieldSpec, a: LongTextValue, b: LongTextValue, sketch_size: int) -> float:
    return sketch_resemblance(a.sketch, b.sketch, sketch_size)


def _number(spec: FieldSpec, a: NumberValue, b: NumberValue, sketch_size: int) -> float:
    return number_similarity(a.value, b.value)


_Scorer = Callable[[FieldSpec, FieldValue, FieldValue, int], float]
#: each type's similarity; an item's values have the types its schema gives (items are
#: prepared, and stored, under one schema), so the field's type alone picks the measure
_SCORERS: dict[str, _Scorer] = {
    "text": cast(_Scorer, _text),
    "category": cast(_Scorer, _equal),
    "identifier": cast(_Scorer, _equal),
    "geo": cast(_Scorer, _geo),
    "longtext": cast(_Scorer, _longtext),
    "number": cast(_Scorer, _number),
}


def field_similarity(spec: FieldSpec, a: FieldValue, b: FieldValue, sketch_size: int) -> float:
    """The similarity of two values of one field (of the type its schema gives)."""
    return _SCORERS[spec.type](spec, a, b, sketch_size)


def combine(
    fields: Sequence[FieldSpec],
    a: Sequence[FieldValue | None],
    b: Sequence[FieldValue | None],
    threshold: float,
    sketch_size: int,
    least_weight: float = 0.0,
) -> ItemMatch:
    """The weighted mean of the fields both items have (values aligned with ``fields``); no
    match when those fields weigh less than ``least_weight``."""
    scores: dict[str, float] = {}
    total = weight = 0.0
    for spec, left, right in zip(fields, a, b, strict=True):
        if left is None or right is None:
            continue
        score = field_similarity(spec, left, right, sketch_size)
        scores[spec.name] = score
        total += spec.weight * score
        weight += spec.weight
    combined = total / weight if weight > 0 else 0.0
    # the epsilon keeps a sum of floats (3 * 0.7 + ...) from falling just short of a threshold
    enough = weight > 0 and weight >= least_weight - 1e-9
    return ItemMatch(combined, scores, enough and combined >= threshold - 1e-9)


#: how far below the threshold a bound must fall to end a pair early: far above the error
#: of a sum of a few weighted floats, so that an early end never differs from ``combine``
_EARLY_MARGIN = 1e-6


def match_or_none(
    fields: Sequence[FieldSpec],
    order: Sequence[int],
    a: Sequence[FieldValue | None],
    b: Sequence[FieldValue | None],
    threshold: float,
    sketch_size: int,
    least_weight: float = 0.0,
) -> ItemMatch | None:
    """``combine`` when the pair matches, else None; most candidates do not, and the fields
    are scored in ``order`` (most weight for their cost first), so that a pair stops once the fields
    left, all scoring 1, could no longer lift it to the threshold."""
    weight = 0.0
    for spec, left, right in zip(fields, a, b, strict=True):
        if left is not None and right is not None:
            weight += spec.weight
    if weight <= 0 or weight < least_weight - 1e-9:
        return None
    needed = threshold * weight - _EARLY_MARGIN
    left_over, total = weight, 0.0
    for index in order:
        left, right = a[index], b[index]
        if left is None or right is None:
            continue
        spec = fields[index]
        total += spec.weight * _SCORERS[spec.type](spec, left, right, sketch_size)
        left_over -= spec.weight
        if total + left_over < needed:
            return None
    match = combine(fields, a, b, threshold, sketch_size, least_weight)
    return match if match.matched else None
