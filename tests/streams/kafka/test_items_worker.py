"""Item mode on Kafka: records published to the pages topic, prepared and detected by a
worker with the schema, give the embedded run's clusters (rebuilt from the events alone)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from neardup.core.items.prepare import ItemPreparer
from neardup.core.items.schema import ItemSchema
from neardup.state import State
from neardup.state.items import check_or_store_schema
from neardup.streams.running.embedded import run

from bench.items import listings
from tests.helpers import partition
from tests.support.deployment import Deployment

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
SCHEMA = REPO / "bench" / "items" / "schemas" / "listings.toml"


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
        run(state, [str(inputs)], items=ItemPreparer(schema))
        expected = partition(state)
    assert expected
    deployment = Deployment(broker, tmp_path)
    try:
        deployment.start_worker("w1", "--schema", str(SCHEMA))
        deployment.publish(lines)
        assert deployment.wait_for(expected) == expected
        letters = deployment.read(deployment.dead_letters)
        assert [letter["reason"] for letter in letters] == ["missing_id"]
    finally:
        deployment.stop()
