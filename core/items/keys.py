"""An item's keys under a plan (``plan.py``): the tokens each atom contributes, combined.

Per atom (a field and a floor θ), the tokens two values reaching θ always share one of:

* text: θ ≤ 0.5, every word and n-gram (a score above 0 shares one); above, the first
  n - k + 1 of its n word tokens in the one global order (rare words first), k = ⌈φn⌉ and
  φ = 2θ - 1 the word Jaccard the score needs: two sets of Jaccard ≥ φ share at least k of
  the n (the other has at least φn), so the first they share is among those (prefix
  filtering, as in AllPairs and PPJoin). Width 2 keys on pairs of words, far rarer than
  words: every pair of the first n - max(k, 2) + 2, which hold the first two shared words
  whenever two are shared; a text with k < 2 may share a single word with a text as short as
  itself, so it also posts its words tagged with its length and looks them up tagged with
  each length m a partner can have (1 / (n + m - 1) ≥ φ).
* longtext: the same prefix of its bottom-s sketch (the estimate is a Jaccard of samples).
* category, identifier: the value.
* geo: the geohash cell of a grid for radius·√(1 - θ), the distance within which the score
  is at least θ; it looks up every cell a point within that distance may lie in.
* number: its log-scale bucket of width ln(1/r), looking up the neighbouring ones, r the
  least ratio of two numbers scoring θ (``similarity.number_ratio``; θ = 0: any score above 0).

A rule's keys are the cross product of its atoms' tokens, hashed to 64 bits with the rule's
number. Posted keys go to the index; probes are looked up (a location posts its cell and
looks up the cells around it; a short text posts its words tagged with its own length and
looks them up tagged with its partners' lengths).
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Sequence

import xxhash

from .cover import prefix_length
from .geo import GeoGrid
from .normalise import token_hash
from .plan import KeyPlan, KeyRule, plan_keys, uncovered
from .schema import ItemSchema
from .similarity import number_ratio, word_floor
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
    "KeyMaker",
    "KeyPlan",
    "KeyRule",
    "number_keys",
    "plan_keys",
    "prefix_length",
    "uncovered",
    "word_keys",
]

_Tokens = tuple[list[int], list[int]]


class KeyMaker:
    """An item's keys under a plan: ``posted`` (stored in the index) and ``probes`` (looked up).
    For every pair that can reach the threshold, each one's probes meet the other's posted
    keys."""

    def __init__(self, schema: ItemSchema, plan: KeyPlan | None = None) -> None:
        self.schema = schema
        self.plan = plan_keys(schema) if plan is None else plan
        self._grids = {
            (index, floor): GeoGrid((spec.radius or 1.0) * math.sqrt(1.0 - floor))
            for index, spec in enumerate(schema.fields)
            if spec.type == "geo"
            for floor in self.plan.floors[index]
        }

    def tokens(self, index: int, floor: float, width: int, value: FieldValue) -> _Tokens:
        """The tokens field ``index`` contributes at ``floor``: (posted, looked up)."""
        if isinstance(value, TextValue):
            if word_floor(floor) <= 0.0:  # word Jaccard may be 0: any shared word or n-gram
                every = [*value.word_tokens, *value.grams]
                return every, every
            return word_keys(value.word_tokens, word_floor(floor), width)
        if isinstance(value, LongTextValue):
            prefix = list(value.sketch[: prefix_length(len(value.sketch), floor)])
            return prefix, prefix
        if isinstance(value, (CategoryValue, IdentifierValue)):
            return [value.token], [value.token]
        if isinstance(value, GeoValue):
            grid = self._grids[(index, floor)]
            cell = token_hash("geo", grid.cell(value.lat, value.lon))
            return [cell], [token_hash("geo", c) for c in grid.cells_within(value.lat, value.lon)]
        assert isinstance(value, NumberValue)
        return number_keys(value.value, floor)

    def keys(self, values: Sequence[FieldValue | None]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(posted, probes): sorted distinct 64-bit keys of every rule whose fields are present."""
        posted: set[int] = set()
        probes: set[int] = set()
        for rule_posted, rule_probes in self.keys_by_rule(values):
            posted.update(rule_posted)
            probes.update(rule_probes)
        return tuple(sorted(posted)), tuple(sorted(probes))

    def keys_by_rule(self, values: Sequence[FieldValue | None]) -> list[_Tokens]:
        """(posted, probes) of each rule of the plan, in order (empty where a field is missing)."""
        cache: dict[tuple[int, float, int], _Tokens] = {}
        out: list[_Tokens] = []
        for number, rule in enumerate(self.plan.rules):
            parts = []
            for atom in rule.atoms:
                value = values[atom[0]]
                if value is None:
                    out.append(([], []))
                    break
                if atom not in cache:
                    cache[atom] = self.tokens(*atom, value)
                parts.append(cache[atom])
            else:
                out.append(
                    (
                        _combine(number, [post for post, _ in parts]),
                        _combine(number, [probe for _, probe in parts]),
                    )
                )
        return out


def word_keys(words: Sequence[int], floor: float, width: int) -> _Tokens:
    """(posted, looked up) tokens of word tokens in the key order, such that two texts whose
    word Jaccard is at least ``floor`` (> 0) meet: words (width 1) or pairs of words (2)."""
    count = len(words)
    if width == 1:
        prefix = list(words[: prefix_length(count, floor)])
        return prefix, prefix
    least = max(1, math.ceil(floor * count - 1e-9))  # words shared with any partner
    pairs = [
        xxhash.xxh32_intdigest(struct.pack("<2I", *pair))
        for pair in itertools.combinations(words[: count - max(least, 2) + 2], 2)
    ]
    if least >= 2:
        return pairs, list(pairs)
    # a partner may share one word: it is as short as 1 / (count + m - 1) ≥ floor allows
    longest = math.floor(1.0 / floor + 1.0 - count + 1e-9)
    posted = pairs + [_sized(word, count) for word in words]
    probes = pairs + [_sized(word, m) for word in words for m in range(1, longest + 1)]
    return posted, probes


def _sized(word: int, count: int) -> int:
    return xxhash.xxh32_intdigest(struct.pack("<2I", word, count), seed=1)


def _combine(rule_number: int, lists: Sequence[Sequence[int]]) -> list[int]:
    return [
        xxhash.xxh3_64_intdigest(struct.pack(f"<B{len(combo)}I", rule_number, *combo))
        for combo in itertools.product(*lists)
    ]


def number_keys(number: float, floor: float) -> _Tokens:
    """(posted, looked up) tokens of a number, such that two scoring ``floor`` or more meet."""
    ratio = number_ratio(floor)  # a score above 0 (floor 0) is a ratio above 1 - τ
    if number == 0.0 or ratio >= 1.0:
        token = token_hash("num", repr(number))
        return [token], [token]
    sign = "+" if number > 0 else "-"
    # ratios of at least ``ratio``: logarithms at most one bucket's width apart (a hair
    # wider, so that rounding at the very boundary cannot put them two buckets apart)
    width = -math.log(ratio) * (1.0 + 1e-9) + 1e-15
    bucket = math.floor(math.log(abs(number)) / width)
    post = [token_hash("num", f"{sign}{bucket}")]
    return post, [token_hash("num", f"{sign}{bucket + step}") for step in (-1, 0, 1)]
