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

from collections.abc import Sequence
from dataclasses import dataclass

from .geo import geo_similarity, haversine_m
from .schema import FieldSpec
from .values import (
    CategoryValue,
    FieldValue,
    GeoValue,
    IdentifierValue,
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


def field_similarity(spec: FieldSpec, a: FieldValue, b: FieldValue, sketch_size: int) -> float:
    """The similarity of two values of one field."""
    if isinstance(a, TextValue) and isinstance(b, TextValue):
        return text_similarity(a, b)
    if isinstance(a, (CategoryValue, IdentifierValue)) and isinstance(
        b, (CategoryValue, IdentifierValue)
    ):
        return 1.0 if a.value == b.value else 0.0
    if isinstance(a, GeoValue) and isinstance(b, GeoValue):
        radius = spec.radius if spec.radius is not None else 1.0
        return geo_similarity(haversine_m(a.lat, a.lon, b.lat, b.lon), radius)
    if isinstance(a, LongTextValue) and isinstance(b, LongTextValue):
        return sketch_resemblance(a.sketch, b.sketch, sketch_size)
    if isinstance(a, NumberValue) and isinstance(b, NumberValue):
        return number_similarity(a.value, b.value)
    raise TypeError(f"field {spec.name!r}: values of different types {type(a)}, {type(b)}")


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
