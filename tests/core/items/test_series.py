"""Series (``series.py``): a value many distinct entities share says what their other fields
will share by chance, and a partial agreement there counts for less.

The corpus: papers of twelve proceedings, each proceedings' titles drawn from its own topic
words (so two papers of one proceedings share title words far more often than two random
papers), with a lab's phone (two papers of one proceedings each); a fifth of the papers
listed twice, the second listing's title with a word dropped."""

from __future__ import annotations

import random
from functools import cache

import msgspec
import numpy as np
from neardup.core.items.compare import comparisons_of
from neardup.core.items.fit import fit
from neardup.core.items.model import ItemModel
from neardup.core.items.prepare import ItemPreparer, PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.items.scorer import Scorer
from neardup.core.items.series import series_discounts

SCHEMA = ItemSchema.from_toml(
    """
id = "id"

[fields.title]
type = "text"
weight = 3

[fields.venue]
type = "category"
weight = 1

[fields.phone]
type = "identifier"
kind = "phone"
weight = 2
"""
)


def _papers(seed: int) -> list[PreparedItem]:
    rng = random.Random(seed)
    common = [f"w{n}" for n in range(3000)]
    preparer = ItemPreparer(SCHEMA)
    items = []
    for venue in range(12):
        topic = [f"t{venue}x{n}" for n in range(15)]
        for paper in range(60):
            title = rng.sample(topic, 2) + rng.sample(common, 4)
            record = {
                "title": " ".join(title),
                "venue": f"proceedings {venue}",
                "phone": f"555{venue:02d}{paper // 2:05d}",
            }
            items.append(preparer.prepare({"id": f"{venue}-{paper}", **record}))
            if paper % 5 == 0:
                copy = {**record, "title": " ".join(title[:-1])}
                items.append(preparer.prepare({"id": f"{venue}-{paper}b", **copy}))
    rng.shuffle(items)
    return items


@cache
def _fitted() -> tuple[list[PreparedItem], ItemModel]:
    items = _papers(3)
    return items, fit(SCHEMA, items, seed=1)


def test_a_shared_venue_discounts_a_partial_title_and_a_phone_does_not() -> None:
    _, model = _fitted()
    names = [c.name for c in comparisons_of(SCHEMA)]
    found = {(names[x], names[y]): bits for x, y, bits in model.series}
    # two papers of one proceedings share topic words: a title agreeing in part there is
    # many times likelier by chance than between random papers
    assert found.get(("venue", "title"), 0.0) > 2.0, found
    # a shared phone is one paper listed twice as often as two papers of a lab: its pairs
    # are matches too often to be a series' (the non-matches among them share a venue)
    assert not any(x == "phone" for x, _ in found), found


def test_the_discount_lowers_a_series_pair_s_evidence_and_spares_others() -> None:
    items, model = _fitted()
    plain = Scorer(SCHEMA, msgspec.structs.replace(model, series=()))
    scorer = Scorer(SCHEMA, model)
    title = [c.name for c in scorer.comparisons].index("title")
    features = [scorer.features(item.values) for item in items]
    rng = random.Random(2)
    pairs = [(rng.randrange(len(items)), rng.randrange(len(items))) for _ in range(20_000)]
    lowered = 0
    rows, firsts = [], []
    for a, b in pairs:
        levels, _ = scorer.compare(features[a], features[b])
        rows.append(levels)
        firsts.append(features[a])
        before = plain.evidence(levels, features[a])[title]
        after = scorer.evidence(levels, features[a])[title]
        same_venue = items[a].values[1] == items[b].values[1]
        if not same_venue or before <= 0.0:
            assert after == before
        else:
            assert 0.0 <= after < before
            lowered += 1
    assert lowered > 10
    # many pairs at once: the same numbers
    together = scorer.evidence_rows(np.array(rows, np.int8), firsts)
    one_by_one = np.array([scorer.evidence(r, f) for r, f in zip(rows, firsts, strict=True)])
    assert np.abs(together - one_by_one).max() < 1e-12


def test_no_series_without_shared_values() -> None:
    items, model = _fitted()
    scorer = Scorer(SCHEMA, msgspec.structs.replace(model, series=()))
    features = [scorer.features(item.values) for item in items]
    # every item alone with its value: nothing is drawn
    unique = [features[0]]
    assert series_discounts(scorer, unique, random.Random(1)) == ()
