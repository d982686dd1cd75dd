"""Candidate keys of an item under a model: two items are compared when they share one.

An item posts, and looks up:

* per text field, its rarest words (by the model's counts; an unseen word counts as the
  rarest, equal counts by hash): the first ``prefix(n)`` of its n words. Two texts that
  share most of their weight share their rarest words, so they meet on one (prefix
  filtering, as in AllPairs and PPJoin, ordered by rarity); a short text inside a long one
  meets it on its own rarest word when that word is among the long one's rarest;
* each code it holds (in a text or in a code identifier), and each identifier's value;
* per longtext field, the two smallest values of its shingle sample (two descriptions of
  resemblance r share the smallest with probability r);
* a category's value when it is rare (cities are not; a code-like category may be), and a
  category's value with each of the heaviest text field's rarest two words;
* per geo field with a text field beside it, its cell at twice the radius with each of the
  heaviest text field's rarest two words: a place whose name is spelt otherwise still meets
  its neighbours (looked up in the cells around it).

The guarantee is measured, not proved: candidate recall (the share of the pairs at or above
the threshold that share a key), by brute force on the bench corpora
(``bench/items/README.md``). A key held by ``posting_cap`` items becomes a stop key, as for
pages. The order depends on the model's counts: when the model is fitted again, the keys are
made again (``streams/detection/item_fit.py``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import xxhash

from .compare import codes_of, comparisons_of, term_hash
from .geo import GeoGrid
from .model import ItemModel
from .schema import ItemSchema
from .values import (
    CategoryValue,
    FieldValue,
    GeoValue,
    IdentifierValue,
    LongTextValue,
    TextValue,
)

__all__ = ["PAIRED", "RARE_SHARE", "Blocker"]

_KEY = struct.Struct("<BBQ")
_PAIR = struct.Struct("<BBQQ")


#: a word held by at most this share of the sampled items (or ``_RARE_COUNT``) is a key alone
RARE_SHARE = 0.01
_RARE_COUNT = 10
#: a word held by more than this share (or ``_COMMON_COUNT``) is common: alone it is no key,
#: nor with another common one ("SIGMOD Record")
COMMON_SHARE = 0.05
_COMMON_COUNT = 20
#: pairs of a text's rarest words that it posts: every pair of the first few
PAIRED = 3


def _key(kind: int, field: int, token: int) -> int:
    return xxhash.xxh3_64_intdigest(_KEY.pack(kind, field, token))


class Blocker:
    """Keys under one schema and model."""

    def __init__(self, schema: ItemSchema, model: ItemModel) -> None:
        self.schema = schema
        words = [model.words_of(index) for index in range(len(schema.fields))]
        self._counts = [counts.as_dict() for counts in words]
        self._totals = [counts.total for counts in words]
        self._categories = [i for i, spec in enumerate(schema.fields) if spec.type == "category"]
        # each category's value counts (the comparison of a category is its field's only one)
        self._values: dict[int, tuple[dict[int, int], int]] = {}
        for at, comparison in enumerate(comparisons_of(schema)):
            counts = model.values_of(at)
            if comparison.kind == "category" and counts.total:
                self._values[comparison.field] = (counts.as_dict(), counts.total)
        texts = [i for i, spec in enumerate(schema.fields) if spec.type == "text"]
        self._main = max(texts, key=lambda i: schema.fields[i].weight) if texts else None
        self._grids = {
            index: GeoGrid(2.0 * (spec.radius or 1.0))
            for index, spec in enumerate(schema.fields)
            if spec.type == "geo"
        }

    def _rare_value(self, index: int, value: CategoryValue) -> bool:
        """Whether a category's value is rare enough to be a key alone (a value the sample
        did not see counts as rare)."""
        counts = self._values.get(index)
        if counts is None:
            return True
        held, total = counts
        return held.get(term_hash("v", value.value), 0) <= max(_RARE_COUNT, RARE_SHARE * total)

    def rarest(self, index: int, value: TextValue) -> list[int]:
        """A text's distinct words' term hashes, the rarest first."""
        counts = self._counts[index]
        terms = {term_hash("t", word) for word in value.words.split()}
        return sorted(terms, key=lambda term: (counts.get(term, 0), term))

    def _text_keys(self, index: int, rarest: list[int]) -> list[int]:
        counts = self._counts[index]
        total = self._totals[index]
        rare = max(_RARE_COUNT, RARE_SHARE * total)
        common = max(_COMMON_COUNT, COMMON_SHARE * total)
        half = 1 + len(rarest) // 2
        keys = [
            _key(1, index, term)
            for at, term in enumerate(rarest[:half])
            if counts.get(term, 0) <= (common if at == 0 and len(rarest) <= 2 else rare)
        ]
        head = rarest[:PAIRED]
        keys.extend(
            xxhash.xxh3_64_intdigest(_PAIR.pack(6, index, a, b))
            for i, a in enumerate(head)
            for b in head[i + 1 :]
            if counts.get(a, 0) <= common  # the rarer of the two: a pair of common words is
        )
        return keys

    def keys(self, values: Sequence[FieldValue | None]) -> tuple[list[int], list[int]]:
        """(posted, looked up): 64-bit keys, distinct."""
        posted: set[int] = set()
        probes: set[int] = set()
        main_words: list[int] = []
        rare_words: list[int] = []
        for index, value in enumerate(values):
            if isinstance(value, TextValue):
                rarest = self.rarest(index, value)
                if index == self._main:
                    main_words = rarest[:2]
                rare_words.extend(_key(1, index, term) for term in rarest[:1])
                posted.update(self._text_keys(index, rarest))
            elif isinstance(value, IdentifierValue):
                posted.add(_key(2, index, term_hash("v", value.value)))
            elif isinstance(value, LongTextValue):
                posted.update(_key(3, index, token) for token in value.sketch[:2])
        posted.update(_key(4, 0, code) for code in codes_of(self.schema, values))
        for index in self._categories:
            value = values[index]
            if not isinstance(value, CategoryValue):
                continue
            posted.update(
                xxhash.xxh3_64_intdigest(_PAIR.pack(7, index, value.token, word))
                for word in main_words
            )
            if self._rare_value(index, value):
                posted.add(_key(8, index, value.token))
        probes.update(posted)
        for index, grid in self._grids.items():
            value = values[index]
            if not isinstance(value, GeoValue) or not rare_words:
                continue
            cell = term_hash("g", grid.cell(value.lat, value.lon))
            around = [term_hash("g", c) for c in grid.cells_within(value.lat, value.lon)]
            for word in set(main_words) | set(rare_words):
                posted.add(xxhash.xxh3_64_intdigest(_PAIR.pack(5, index, cell, word)))
                probes.update(
                    xxhash.xxh3_64_intdigest(_PAIR.pack(5, index, other, word)) for other in around
                )
        return sorted(posted), sorted(probes)
