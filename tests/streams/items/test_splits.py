"""Clusters that do not chain, and items that change: a hub weakly like three clusters is
cut off, the final clusters do not depend on the order, and updates and tombstones cut
clusters again."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from neardup.core.items.schema import ItemSchema
from neardup.state import State
from neardup.state.items import check_or_store_schema
from neardup.streams.detection.event_clusters import clusters_from_events
from neardup.streams.running.embedded import run

from tests.helpers import item_model_where, partition, store_item_model

#: three fields of equal weight, and a model (not learned) under which a pair sharing one
#: value of three matches: +10 bits, -2 for each of the two others, on prior odds of 2^-5
SCHEMA = ItemSchema.from_toml(
    'id = "id"\nlearn = false\n'
    + "".join(f'[fields.t{n}]\ntype = "category"\nweight = 1\n' for n in (1, 2, 3))
)
MODEL = item_model_where(SCHEMA, agree=10.0, disagree=-2.0, prior=-5.0)


def _item(item_id: str, *values: str) -> dict[str, Any]:
    return {"id": item_id, **{f"t{n}": v for n, v in enumerate(values, start=1)}}


def _clusters_of(letters: str = "abc", size: int = 4) -> list[dict[str, Any]]:
    return [_item(f"{x}{n}", x, x, x) for x in letters for n in range(1, size + 1)]


HUB = _item("hub", "a", "b", "c")


def _run(
    tmp_path: Path, name: str, records: list[dict[str, Any]], batch_size: int = 5
) -> tuple[set[frozenset[str]], list[dict[str, Any]]]:
    inputs = tmp_path / f"{name}.jsonl"
    inputs.write_text("".join(json.dumps(record) + "\n" for record in records))
    events = io.StringIO()
    with State.open(tmp_path / name) as state:
        check_or_store_schema(state.store, SCHEMA)
        store_item_model(state, MODEL)
        run(state, [str(inputs)], events=events, items=SCHEMA, batch_size=batch_size)
        return partition(state), [json.loads(line) for line in events.getvalue().splitlines()]


def _without(clusters: set[frozenset[str]], item: str) -> set[frozenset[str]]:
    return {group - {item} for group in clusters if len(group - {item}) > 1}


def test_a_hub_joining_three_clusters_is_cut_off_and_says_so(tmp_path: Path) -> None:
    clusters = _clusters_of()
    early = [
        clusters[0],
        clusters[4],
        clusters[8],
        HUB,
        *clusters[1:4],
        *clusters[5:8],
        *clusters[9:],
    ]
    found, events = _run(tmp_path, "hub", early)
    alone, _ = _run(tmp_path, "alone", clusters)
    assert alone == {frozenset(f"{x}{n}" for n in range(1, 5)) for x in "abc"}
    assert _without(found, "hub") == alone
    splits = [event for event in events if event["type"] == "cluster_split"]
    assert splits, "the hub held the clusters together until they were cut"
    assert all(len(split["parts"]) >= 2 for split in splits)
    assert max(len(group) for group in found) <= 5


def test_the_final_clusters_are_the_same_in_any_order(tmp_path: Path) -> None:
    records = [*_clusters_of("abcd", 5), _item("hub", "a", "b", "c"), _item("hub2", "c", "d", "x")]
    results = set()
    for seed in range(4):
        order = records[:]
        random.Random(seed).shuffle(order)
        found, _ = _run(tmp_path, f"order{seed}", order)
        results.add(frozenset(found))
    assert len(results) == 1


def test_an_item_that_changes_leaves_its_cluster_and_says_so(tmp_path: Path) -> None:
    clusters = _clusters_of("ab")
    moved = _item("a2", "b", "b", "b")  # a2 becomes like the b items
    found, events = _run(tmp_path, "update", [*clusters, moved])
    assert found == {
        frozenset({"a1", "a3", "a4"}),
        frozenset({"a2", "b1", "b2", "b3", "b4"}),
    }
    kinds = [event["type"] for event in events]
    assert "item_updated" in kinds and "cluster_split" in kinds and "cluster_merged" in kinds
    updated = next(event for event in events if event["type"] == "item_updated")
    assert updated["doc"]["url"] == "a2" and updated["cluster_size"] == 5


def test_a_tombstone_removes_an_item_and_its_cluster_goes_on(tmp_path: Path) -> None:
    clusters = _clusters_of("a", 3)
    found, events = _run(
        tmp_path, "tomb", [*clusters, {"id": "a1", "deleted": True}, {"id": "zz", "deleted": True}]
    )
    assert found == {frozenset({"a2", "a3"})}
    removed = [event for event in events if event["type"] == "item_removed"]
    assert [event["doc"]["url"] for event in removed] == ["a1"]
    renamed = [event for event in events if event["type"] == "cluster_split"]
    assert len(renamed) == 1 and renamed[0]["cluster"] == removed[0]["cluster"]
    again, _ = _run(tmp_path, "back", [*clusters, {"id": "a1", "deleted": True}, clusters[0]])
    assert again == {frozenset({"a1", "a2", "a3"})}


def test_a_tombstone_of_a_bridge_cuts_its_cluster_in_two(tmp_path: Path) -> None:
    records = [_item("x1", "a", "a", "a"), _item("x2", "a", "b", "b"), _item("x3", "b", "b", "b")]
    found, _ = _run(tmp_path, "bridge", [*records, {"id": "x2", "deleted": True}])
    assert found == set()
    assert _run(tmp_path, "whole", records)[0] == {frozenset({"x1", "x2", "x3"})}


#: the hub, its three clusters, an item of one cluster that changes to another's values,
#: and a tombstone: the Kafka test's stream, whose order a worker's partitions change
_CHANGING = [
    *_clusters_of(),
    HUB,
    _item("a2", "b", "b", "b"),
    {"id": "c1", "deleted": True},
]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(order=st.randoms(use_true_random=False), batch_size=st.sampled_from([1, 4, 32]))
def test_changes_end_the_same_and_the_events_tell_it_in_any_interleaving(
    tmp_path_factory: Any, order: random.Random, batch_size: int
) -> None:
    """Any interleaving that keeps each item's own records in order (as partitions keyed by
    id do), any batch size: the clusters are the file order's, and the events, followed
    alone, tell those clusters (a copy's original changing in the same batch, a cluster cut
    the same way twice, a score read back from the store were each a way to differ)."""
    queues: dict[str, list[dict[str, Any]]] = {}
    for record in _CHANGING:
        queues.setdefault(str(record["id"]), []).append(record)
    records = []
    while queues:
        key = order.choice(sorted(queues))
        records.append(queues[key].pop(0))
        if not queues[key]:
            del queues[key]
    expected, _ = _run(tmp_path_factory.mktemp("file"), "run", _CHANGING)
    found, events = _run(tmp_path_factory.mktemp("any"), "run", records, batch_size)
    assert found == expected
    assert {frozenset(c["members"]) for c in clusters_from_events(events)} == found
