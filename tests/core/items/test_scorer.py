"""``Scorer.verify`` stops early only on pairs that cannot match: on every pair of a fitted
model's candidates and of random pairs, its verdict is ``score``'s."""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from neardup.core.items.fit import candidate_pairs, fit
from neardup.core.items.model import ItemModel
from neardup.core.items.prepare import ItemPreparer, PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.items.scorer import PLACE_SHARE, Scorer

from bench.items import listings

SCHEMAS = Path(__file__).resolve().parents[3] / "bench" / "items" / "schemas"


@cache
def _fitted(
    schema_file: str, flavour: str, rich: bool
) -> tuple[ItemSchema, list[PreparedItem], ItemModel]:
    schema = ItemSchema.from_toml((SCHEMAS / schema_file).read_text())
    preparer = ItemPreparer(schema)
    items = [preparer.prepare(x.record) for x in listings.generate(500, 3, flavour, rich)]
    return schema, items, fit(schema, items, seed=1)


@pytest.mark.parametrize(
    ("schema_file", "flavour", "rich"),
    [("listings.toml", "coords", False), ("listings-rich.toml", "plain", True)],
)
@pytest.mark.parametrize("threshold", [None, 0.2, 0.999, 1.0])
def test_verify_gives_the_verdicts_of_score(
    schema_file: str, flavour: str, rich: bool, threshold: float | None
) -> None:
    schema, items, model = _fitted(schema_file, flavour, rich)
    scorer = Scorer(schema, model, threshold)
    features = [scorer.features(item.values) for item in items]
    rng = random.Random(7)
    pairs = candidate_pairs(schema, model, items)
    pairs += [(rng.randrange(len(items)), rng.randrange(len(items))) for _ in range(3000)]
    stopped = matched = 0
    for a, b in pairs:
        full = scorer.score(features[a], features[b])
        early = scorer.verify(features[a], features[b])
        if early is None:
            stopped += 1
            assert not full.matched, (a, b, full)
        else:
            assert early == full
        matched += full.matched
    assert stopped > len(pairs) // 4  # the bound does stop the hopeless pairs early
    if threshold is None:
        assert matched > 120  # the corpus's duplicates are among the pairs


@pytest.mark.parametrize(
    ("schema_file", "flavour", "rich"),
    [("listings.toml", "coords", False), ("listings-rich.toml", "plain", True)],
)
def test_evidence_of_many_pairs_is_each_pair_s(schema_file: str, flavour: str, rich: bool) -> None:
    schema, items, model = _fitted(schema_file, flavour, rich)
    scorer = Scorer(schema, model)
    features = [scorer.features(item.values) for item in items]
    rng = random.Random(5)
    pairs = candidate_pairs(schema, model, items)
    pairs += [(rng.randrange(len(items)), rng.randrange(len(items))) for _ in range(1000)]
    levels = np.array([scorer.compare(features[a], features[b])[0] for a, b in pairs], np.int8)
    together = scorer.evidence_rows(levels, [features[a] for a, _ in pairs])
    one_by_one = [
        scorer.evidence(row.tolist(), features[a])
        for row, (a, _) in zip(levels, pairs, strict=True)
    ]
    assert np.abs(together - np.array(one_by_one)).max() < 1e-12
    # some pairs agree on where the item is twice (address and location, or the address's
    # words and numbers): the share is met
    raw = np.array([[scorer.weights[at][level] for at, level in enumerate(row)] for row in levels])
    assert (np.isclose(together, raw * PLACE_SHARE) & (raw > 0)).any()
