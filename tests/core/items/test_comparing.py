"""Pairs of a fit compared elsewhere (``comparing.py``): the model is the one fitted with
everything compared here, to the last bit, whatever went where; work sent under counts that
the fit then replaced is dropped."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
from neardup.core.items.comparing import Compared, Here, comparer_of
from neardup.core.items.fit import fit
from neardup.core.items.model import ItemModel
from neardup.core.items.prepare import ItemPreparer, PreparedItem
from neardup.core.items.schema import ItemSchema

from bench.items import listings
from bench.items.entities import near_equal_records
from bench.items.evaluate import SCHEMAS


class _Deferred:
    """Pairs sent away: the first half compared there when awaited, the rest here (as a
    second process would have done the first half meanwhile, and not started the rest)."""

    def __init__(self, there: Here, pairs: Sequence[tuple[int, int]]) -> None:
        self._there = there
        self.pairs = pairs
        self.cancelled = False

    def __call__(self, here: Here) -> Compared:
        assert not self.cancelled
        half = len(self.pairs) // 2
        first, rest = self._there(self.pairs[:half]), here(self.pairs[half:])
        return np.concatenate((first[0], rest[0])), np.concatenate((first[1], rest[1]))

    def cancel(self) -> None:
        self.cancelled = True


class _Recorded:
    """An ``Elsewhere`` in this process, computing with a scorer of its own, keeping what it
    was sent."""

    def __init__(self, schema: ItemSchema, items: Sequence[PreparedItem]) -> None:
        self.schema, self.items = schema, items
        self.sent: list[tuple[ItemModel, _Deferred]] = []

    def __call__(self, model: ItemModel, pairs: Sequence[tuple[int, int]]) -> _Deferred:
        deferred = _Deferred(comparer_of(self.schema, model, self.items), pairs)
        self.sent.append((model, deferred))
        return deferred


def _listings_schema() -> ItemSchema:
    return ItemSchema.from_toml((SCHEMAS / "listings.toml").read_text())


def test_a_fit_with_pairs_compared_elsewhere_is_the_fit_without() -> None:
    schema = _listings_schema()
    preparer = ItemPreparer(schema)
    items = [preparer.prepare(listing.record) for listing in listings.generate(1500, 5)]
    elsewhere = _Recorded(schema, items)
    assert fit(schema, items, seed=1, elsewhere=elsewhere) == fit(schema, items, seed=1)
    # the random pairs and half the candidates went there
    sent = [len(deferred.pairs) for _, deferred in elsewhere.sent]
    assert len(sent) >= 2 and sum(sent) > 40_000


def test_work_sent_under_counts_the_fit_replaced_is_dropped() -> None:
    # 120 near-equal records of one business: the fit counts its words once an entity, and
    # compares everything again under those counts
    records = near_equal_records(120, seed=3) + [x.record for x in listings.generate(120, 3)]
    random.Random(3).shuffle(records)
    schema = _listings_schema()
    preparer = ItemPreparer(schema)
    items = [preparer.prepare(record) for record in records]
    elsewhere = _Recorded(schema, items)
    assert fit(schema, items, seed=1, elsewhere=elsewhere) == fit(schema, items, seed=1)
    models = [model for model, _ in elsewhere.sent]
    first = models[0]
    assert any(model != first for model in models)  # counts by item, then by entity
    assert all(deferred.cancelled for model, deferred in elsewhere.sent if model == first)
    assert not any(deferred.cancelled for model, deferred in elsewhere.sent if model != first)
