"""Item mode on Kafka: records published to the pages topic, prepared and detected by a
worker with the schema, give the embedded run's clusters (rebuilt from the events alone).

The clusters are a function of the items given the model; the worker's state is given the
model the embedded run fitted (a worker fits its own from ``FIRST_FIT`` items on)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from neardup.core.items.model import ItemModel
from neardup.core.items.schema import ItemSchema
from neardup.state import State
from neardup.state.items import check_or_store_schema, stored_model
from neardup.streams.kafka.config import detector_dir
from neardup.streams.running.embedded import run

from bench.items import listings
from tests.helpers import item_model_where, partition, store_item_model
from tests.support.deployment import Deployment

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
SCHEMA = REPO / "bench" / "items" / "schemas" / "listings.toml"


def _seed(deployment: Deployment, worker: str, schema: ItemSchema, model: ItemModel) -> None:
    """A worker's detector state made ahead of it, holding the schema and ``model``."""
    with State.open(detector_dir(deployment.root / worker)) as state:
        check_or_store_schema(state.store, schema)
        store_item_model(state, model)


def test_a_worker_with_a_schema_finds_the_embedded_run_s_item_clusters(
    broker: str, tmp_path: Path
) -> None:
    records = [listing.record for listing in listings.generate(300, 5)]
    lines = [json.dumps(record).encode() for record in records]
    lines.insert(17, b'{"name": "a record without its id"}')
    inputs = tmp_path / "items.jsonl"
    inputs.write_bytes(b"\n".join(lines) + b"\n")
    schema = ItemSchema.from_toml(SCHEMA.read_text())
    with State.open(None) as state:
        check_or_store_schema(state.store, schema)
        run(state, [str(inputs)], items=schema)
        expected = partition(state)
        model = stored_model(state.store)
    assert expected and model is not None and model.fitted
    deployment = Deployment(broker, tmp_path)
    _seed(deployment, "w1", schema, model)
    try:
        deployment.start_worker("w1", "--schema", str(SCHEMA))
        published = subprocess.run(
            [
                sys.executable,
                "-m",
                "neardup.streams",
                "publish",
                "--broker",
                broker,
                "--topic",
                deployment.pages,
                "--key",
                "id",
                str(inputs),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert json.loads(published.stdout)["raw"] == 301  # every line, as it is
        assert deployment.wait_for(expected) == expected
        letters = deployment.read(deployment.dead_letters)
        assert [letter["reason"] for letter in letters] == ["missing_id"]
    finally:
        deployment.stop()


def test_splits_updates_and_tombstones_on_kafka_give_the_embedded_clusters(
    broker: str, tmp_path: Path
) -> None:
    """A hub that holds three clusters together until they are cut, an item that changes,
    a tombstone: followed from the events alone, the clusters are the embedded run's."""
    schema_text = 'id = "id"\nlearn = false\n' + "".join(
        f'[fields.t{n}]\ntype = "category"\nweight = 1\n' for n in (1, 2, 3)
    )
    schema_file = tmp_path / "schema.toml"
    schema_file.write_text(schema_text)

    def item(item_id: str, *values: str) -> dict[str, object]:
        return {"id": item_id, **{f"t{n}": v for n, v in enumerate(values, start=1)}}

    clusters = [item(f"{x}{n}", x, x, x) for x in "abc" for n in range(1, 5)]
    records: list[dict[str, object]] = [
        clusters[0],
        clusters[4],
        clusters[8],
        item("hub", "a", "b", "c"),
        *clusters[1:4],
        *clusters[5:8],
        *clusters[9:],
        item("a2", "b", "b", "b"),
        {"id": "c1", "deleted": True},
    ]
    lines = [json.dumps(record).encode() for record in records]
    inputs = tmp_path / "items.jsonl"
    inputs.write_bytes(b"\n".join(lines) + b"\n")
    schema = ItemSchema.from_toml(schema_text)
    model = item_model_where(schema, agree=10.0, disagree=-2.0, prior=-5.0)
    with State.open(None) as state:
        check_or_store_schema(state.store, schema)
        store_item_model(state, model)
        run(state, [str(inputs)], items=schema, batch_size=4)
        expected = partition(state)
    assert any(group >= {"c2", "c3", "c4"} for group in expected)
    deployment = Deployment(broker, tmp_path)
    _seed(deployment, "w1", schema, model)
    try:
        deployment.start_worker("w1", "--schema", str(schema_file))
        deployment.publish(lines)
        assert deployment.wait_for(expected) == expected
    finally:
        deployment.stop()
