"""What two items' fields say about each other: a level of agreement per comparison.

A comparison looks at one side of a pair's evidence and names how far it agrees, from 0
(disagrees) up; a comparison that cannot be made (a value missing in either item) is
``MISSING`` and says nothing. The model (``model.py``) gives each level a weight learned
from the data, so the levels only need to sort pairs into groups that the data can tell
apart; they are not scores.

Per field, by type:

* text, ``words``: the words compared with weights by rarity (the inverse of the share of
  items whose field holds the word, from the model's counts): a rare name word or code
  agreeing says more than "the", "restaurant" or "street". Words match when equal, or close
  in spelling (``FUZZY``: a typo), or as an initial and a word it begins. From the weight
  shared, the weighted Jaccard J (shared / union) and the containment C (shared / the
  lighter side's weight). Levels: the same words; J at 0.9, 0.75, 0.6; the lighter side
  contained (C ≥ 0.9: "harbour grill" in "harbour grill room") yet J below 0.6; J at 0.4 or
  character bigrams mostly shared (split and joined words); J at 0.2; less. Containment is a
  level of its own, so the data decides what it is worth: a one-word name inside a long one
  is contained but shares little of the long one's weight.
* text, ``numbers``: the numbers of the two texts (house numbers, suites, sizes): the same,
  one's within the other's, some in common but each with one the other lacks (two suites of
  one building), none in common. Missing unless both texts have numbers.
* category: equal; partly equal (the words of one within the other's, or half of them in
  common: "italian" and "italian northern", "springfield" and "springfield city"); not.
* identifier: equal; close (a phone's last seven digits, a code within the other); not.
* geo: the distance in bands of the field's radius r, from r/8 to 8r: how far apart matched
  records lie is learned per band, so a radius too small for the data costs little.
* number: equal (within 0.5 %), within 5 %, within 20 %, not.
* longtext: the estimated resemblance of the shingle samples at 0.7, 0.45, 0.25, 0.08.

Per item, ``codes``: the codes found in any text field or held by a code identifier
(``codes.py``): a rare one in common, only common ones in common, none in common.

Equal values also have their own frequency: equal names that half the items share say less
than equal rare names; ``Scorer.level_values`` names the value of an exact agreement so that
the model can weigh it by its frequency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import xxhash
from rapidfuzz.distance import Indel

from .geo import METRES_PER_DEGREE, haversine_m
from .schema import FieldSpec, ItemSchema
from .similarity import jaccard_sorted, sketch_resemblance
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
    "FUZZY",
    "MISSING",
    "Comparison",
    "ComparisonKind",
    "codes_of",
    "comparisons_of",
    "term_hash",
]

ComparisonKind = Literal[
    "words", "numbers", "codes", "category", "identifier", "geo", "number", "longtext"
]

#: the level of a comparison that cannot be made
MISSING = -1
#: the least spelling similarity (Indel, 0..1) of two words read as one with a typo
FUZZY = 0.8
#: an initial matching the word it begins counts for this share of their weights
_INITIAL = 0.5
#: levels per kind (0 = disagrees, the last = agrees most)
LEVELS: dict[str, int] = {
    "words": 8,
    "numbers": 4,
    "codes": 3,
    "category": 3,
    "identifier": 3,
    "geo": 8,
    "number": 4,
    "longtext": 5,
}
_GEO_BANDS = (8.0, 4.0, 2.0, 1.0, 0.5, 0.25, 0.125)  # in radii, the widest first
_LONGTEXT_BANDS = (0.08, 0.25, 0.45, 0.7)
_NUMBER_BANDS = (0.2, 0.05, 0.005)


def term_hash(kind: str, value: str) -> int:
    """64-bit hash of a counted term (a word of a field, a whole value, a code)."""
    return xxhash.xxh3_64_intdigest(f"{kind}\x1f{value}".encode())


def codes_of(schema: ItemSchema, values: Sequence[FieldValue | None]) -> frozenset[int]:
    """An item's codes: those found in its texts and the values of its code identifiers."""
    codes: set[int] = set()
    for spec, value in zip(schema.fields, values, strict=True):
        if isinstance(value, TextValue):
            codes.update(value.codes)
        elif isinstance(value, IdentifierValue) and spec.kind == "code":
            codes.add(term_hash("c", value.value))
    return frozenset(codes)


@dataclass(frozen=True, slots=True)
class Comparison:
    """One comparison: ``kind`` over the field at ``field`` (-1 for the item's codes)."""

    name: str
    kind: ComparisonKind
    field: int

    @property
    def levels(self) -> int:
        return LEVELS[self.kind]


def comparisons_of(schema: ItemSchema) -> tuple[Comparison, ...]:
    """The comparisons a schema's items are scored by, in a fixed order."""
    found: list[Comparison] = []
    coded = False
    for index, spec in enumerate(schema.fields):
        if spec.type == "text":
            found.append(Comparison(spec.name, "words", index))
            found.append(Comparison(f"{spec.name}#numbers", "numbers", index))
            coded = True
        else:
            found.append(Comparison(spec.name, spec.type, index))
            coded = coded or (spec.type == "identifier" and spec.kind == "code")
    if coded:
        found.append(Comparison("#codes", "codes", -1))
    return tuple(found)


@dataclass(slots=True)
class TextFeatures:
    """A text value ready to compare: its distinct words with their weights."""

    words: tuple[str, ...]
    weights: tuple[float, ...]
    total: float
    exact: int  # hash of the whole word sequence
    numbers: frozenset[int]
    grams: frozenset[int]
    where: dict[str, int]  # each word's position


@dataclass(slots=True)
class CategoryFeatures:
    exact: int
    words: frozenset[str]


@dataclass(slots=True)
class IdentifierFeatures:
    exact: int
    value: str
    kind: str


Features = (
    TextFeatures | CategoryFeatures | IdentifierFeatures | GeoValue | NumberValue | LongTextValue
)


def text_features(value: TextValue, weight_of: dict[int, float], default: float) -> TextFeatures:
    words = tuple(dict.fromkeys(value.words.split()))
    weights = tuple(weight_of.get(term_hash("t", word), default) for word in words)
    return TextFeatures(
        words,
        weights,
        sum(weights),
        term_hash("v", value.words),
        frozenset(value.numbers),
        frozenset(value.grams),
        {word: at for at, word in enumerate(words)},
    )


def category_features(value: CategoryValue) -> CategoryFeatures:
    return CategoryFeatures(term_hash("v", value.value), frozenset(value.value.split()))


def identifier_features(value: IdentifierValue, kind: str) -> IdentifierFeatures:
    return IdentifierFeatures(term_hash("v", value.value), value.value, kind)


def features_of(
    spec: FieldSpec, value: FieldValue, weight_of: dict[int, float], default: float
) -> Features:
    """A value's features for its comparisons (``weight_of``: word weights by term hash)."""
    if isinstance(value, TextValue):
        return text_features(value, weight_of, default)
    if isinstance(value, CategoryValue):
        return category_features(value)
    if isinstance(value, IdentifierValue):
        return identifier_features(value, spec.kind)
    return value


def _word_match(a: str, b: str) -> float:
    long_a, long_b = len(a), len(b)
    if long_a == 1 or long_b == 1:
        return _INITIAL if a[0] == b[0] else 0.0
    if long_a < 4 or long_b < 4:
        return 0.0
    # Indel's similarity is at most 1 - |la - lb| / (la + lb): words of lengths that far
    # apart are not close, and most pairs of a random pair's words are (no call at all)
    if abs(long_a - long_b) > (long_a + long_b) * (1.0 - FUZZY) + 1e-9:
        return 0.0
    similarity = Indel.normalized_similarity(a, b)
    return similarity if similarity >= FUZZY else 0.0


def shared_weight(a: TextFeatures, b: TextFeatures) -> tuple[float, float, float]:
    """The weight two texts share (equal words count whole, close ones by their closeness),
    and the weight each side sheds: a close pair counts at its lighter word's weight, since a
    misspelt common word is rare only because it is misspelt."""
    if len(a.words) == 1 and len(b.words) == 1:
        # a given name, a surname: the loops below, without their lists and sets
        weight_a, weight_b = a.weights[0], b.weights[0]
        if a.words[0] == b.words[0]:
            return (weight_a + weight_b) * 0.5, 0.0, 0.0
        close = _word_match(a.words[0], b.words[0])
        if close <= 0.0:
            return 0.0, 0.0, 0.0
        lighter = min(weight_a, weight_b)
        return close * lighter, weight_a - lighter, weight_b - lighter
    where = b.where
    shared = shed_a = shed_b = 0.0
    taken: set[int] = set()
    left: list[int] = []
    for at, word in enumerate(a.words):
        other = where.get(word)
        if other is None:
            left.append(at)
        else:
            shared += (a.weights[at] + b.weights[other]) * 0.5
            taken.add(other)
    if left and len(taken) < len(b.words):
        for at in left:
            best, best_at = 0.0, -1
            for other, word in enumerate(b.words):
                if other in taken:
                    continue
                close = _word_match(a.words[at], word)
                if close > best:
                    best, best_at = close, other
            if best_at >= 0:
                lighter = min(a.weights[at], b.weights[best_at])
                shared += best * lighter
                shed_a += a.weights[at] - lighter
                shed_b += b.weights[best_at] - lighter
                taken.add(best_at)
    return shared, shed_a, shed_b


def words_similarity(a: TextFeatures, b: TextFeatures) -> tuple[float, float]:
    """(weighted Jaccard, containment of the lighter side) of two texts; the same either
    way round (close words are paired from the side whose words sort first)."""
    if a.total <= 0.0 or b.total <= 0.0:
        return 0.0, 0.0
    if b.words < a.words:
        a, b = b, a
    shared, shed_a, shed_b = shared_weight(a, b)
    total_a, total_b = a.total - shed_a, b.total - shed_b
    union = total_a + total_b - shared
    lighter = min(total_a, total_b)
    return (
        shared / union if union > 0 else 1.0,
        shared / lighter if lighter > 0 else 1.0,
    )


def words_level(a: TextFeatures, b: TextFeatures) -> tuple[int, float]:
    """The level of two texts' words, and their weighted Jaccard (the field's score)."""
    if a.exact == b.exact:
        return 7, 1.0
    jaccard, contained = words_similarity(a, b)
    if jaccard >= 0.9:
        return 6, jaccard
    if jaccard >= 0.75:
        return 5, jaccard
    if jaccard >= 0.6:
        return 4, jaccard
    if contained >= 0.9:
        return 3, jaccard
    if jaccard >= 0.4:
        return 2, jaccard
    grams = jaccard_sorted(a.grams, b.grams)
    if grams >= 0.6:
        return 2, jaccard
    if jaccard >= 0.2 or grams >= 0.4:
        return 1, jaccard
    return 0, jaccard


def numbers_level(a: TextFeatures, b: TextFeatures) -> int:
    """3: the same numbers; 2: one's within the other's ("12 Main St" and "12 Main St Ste
    200"); 1: some shared, each with one the other lacks (a building's suites, "100" and
    "400"); 0: none shared."""
    if not a.numbers or not b.numbers:
        return MISSING
    if a.numbers == b.numbers:
        return 3
    if a.numbers <= b.numbers or b.numbers <= a.numbers:
        return 2
    return 1 if a.numbers & b.numbers else 0


def category_level(a: CategoryFeatures, b: CategoryFeatures) -> tuple[int, float]:
    if a.exact == b.exact:
        return 2, 1.0
    shared = len(a.words & b.words)
    if shared and (
        shared == min(len(a.words), len(b.words)) or 2 * shared >= len(a.words | b.words)
    ):
        return 1, shared / len(a.words | b.words)
    return 0, 0.0


def identifier_level(a: IdentifierFeatures, b: IdentifierFeatures) -> int:
    if a.exact == b.exact:
        return 2
    if a.kind == "phone":
        return 1 if len(a.value) >= 7 and a.value[-7:] == b.value[-7:] else 0
    short, long = sorted((a.value, b.value), key=len)
    return 1 if len(short) >= 4 and short in long else 0


def geo_level(a: GeoValue, b: GeoValue, radius: float) -> tuple[int, float]:
    """The distance band (7: within r/8 ... 1: within 8r, 0: farther), and the distance."""
    widest = _GEO_BANDS[0] * radius
    if abs(a.lat - b.lat) * METRES_PER_DEGREE > widest:
        return 0, math.inf
    distance = haversine_m(a.lat, a.lon, b.lat, b.lon)
    level = 0
    for band, reach in enumerate(_GEO_BANDS, start=1):
        if distance > reach * radius:
            break
        level = band
    return level, distance


def number_level(a: NumberValue, b: NumberValue) -> int:
    if a.value == b.value:
        return 3
    if a.value * b.value <= 0.0:
        return 0
    relative = 1.0 - min(abs(a.value), abs(b.value)) / max(abs(a.value), abs(b.value))
    level = 0
    for band, reach in enumerate(_NUMBER_BANDS, start=1):
        if relative > reach:
            break
        level = band
    return level


def longtext_level(a: LongTextValue, b: LongTextValue, size: int) -> tuple[int, float]:
    resemblance = sketch_resemblance(a.sketch, b.sketch, size)
    level = 0
    for band, reach in enumerate(_LONGTEXT_BANDS, start=1):
        if resemblance < reach:
            break
        level = band
    return level, resemblance


def codes_level(a: Sequence[int], b: Sequence[int], common: frozenset[int]) -> int:
    """Codes of two items: a rare one shared (2), only common ones (1), none (0)."""
    if not a or not b:
        return MISSING
    shared = set(a).intersection(b)
    if not shared:
        return 0
    return 2 if shared - common else 1
