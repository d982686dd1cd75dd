"""A large dense entity (equal and near-equal records of one business) among ordinary
listings: it ends as one cluster that takes no other listing, whatever the arrival order
and the batch size, given the stored model. The timings at thousands of records:
``python -m bench.items.entities``."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from neardup.core.items.model import ItemModel
from neardup.core.items.schema import ItemSchema
from neardup.state import State
from neardup.state.items import check_or_store_schema, stored_model

from bench.items import listings
from bench.items.entities import equal_records, near_equal_records
from tests.helpers import partition, store_item_model

SCHEMA = Path(__file__).resolve().parents[3] / "bench" / "items" / "schemas" / "listings.toml"


def _clusters(
    folder: Path, records: list[dict[str, Any]], batch_size: int, model: ItemModel | None
) -> tuple[set[frozenset[str]], ItemModel]:
    """The clusters of a run over ``records``, and its model (``model``: stored first, so
    that the run matches under it rather than fitting its own)."""
    from neardup.streams.running.embedded import run

    inputs = folder / "items.jsonl"
    inputs.write_text("".join(json.dumps(record) + "\n" for record in records))
    with State.open(folder / "state") as state:
        schema = check_or_store_schema(state.store, ItemSchema.from_toml(SCHEMA.read_text()))
        assert schema is not None
        if model is not None:
            store_item_model(state, model)
        run(state, [str(inputs)], items=schema, batch_size=batch_size)
        stored = stored_model(state.store)
        assert stored is not None
        return partition(state), stored


_EXAMPLES = settings(max_examples=4, deadline=None, derandomize=True, phases=[Phase.generate])
_ENTITIES = given(
    equal=st.integers(min_value=0, max_value=150),
    near=st.integers(min_value=0, max_value=150),
    seed=st.integers(min_value=0, max_value=2**16),
    batch_size=st.sampled_from([7, 64, 500]),
)


def _records(equal: int, near: int, seed: int) -> tuple[list[dict[str, Any]], set[str]]:
    """An entity of equal and near-equal records among 200 listings, shuffled; its ids."""
    entity = equal_records(equal) + near_equal_records(near, seed)
    records = entity + [listing.record for listing in listings.generate(200, seed)]
    random.Random(seed).shuffle(records)
    return records, {str(record["id"]) for record in entity}


@_EXAMPLES
@_ENTITIES
def test_a_large_entity_ends_the_same_in_any_order(
    tmp_path_factory: Any, equal: int, near: int, seed: int, batch_size: int
) -> None:
    """The final clusters depend on the stored model, not on the order (the model fitted on
    another order's first items may differ, as any sample would)."""
    records, _ = _records(equal, near, seed)
    first, model = _clusters(tmp_path_factory.mktemp("run"), records, batch_size, None)
    second, _ = _clusters(tmp_path_factory.mktemp("run"), records[::-1], batch_size, model)
    assert first == second


@_EXAMPLES
@_ENTITIES
def test_a_large_entity_is_one_cluster(
    tmp_path_factory: Any, equal: int, near: int, seed: int, batch_size: int
) -> None:
    records, ids = _records(equal, near, seed)
    found, _ = _clusters(tmp_path_factory.mktemp("run"), records, batch_size, None)
    if len(ids) > 1:
        assert [cluster for cluster in found if cluster & ids] == [frozenset(ids)]
