"""Item mode end to end: records of a schema matched field by field into clusters, in the
embedded run, through the command line, with events, merged records and queries."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from neardup.core import IncompatibleStateError
from neardup.core.items.schema import ItemSchema
from neardup.state import State
from neardup.state.items import check_or_store_schema

from bench.items import listings
from tests.helpers import partition

REPO = Path(__file__).resolve().parents[3]
SCHEMA = REPO / "bench" / "items" / "schemas" / "listings.toml"


def _records(count: int = 600, seed: int = 3) -> list[dict[str, object]]:
    return [listing.record for listing in listings.generate(count, seed)]


def _write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _run(state: State, inputs: list[str], **options: object) -> object:
    from neardup.streams.running.embedded import run

    schema = check_or_store_schema(state.store, ItemSchema.from_toml(SCHEMA.read_text()))
    assert schema is not None
    return run(state, inputs, items=schema, **options)  # type: ignore[arg-type]


def _entities(count: int = 600, seed: int = 3) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = {}
    for listing in listings.generate(count, seed):
        groups.setdefault(listing.entity, set()).add(str(listing.record["id"]))
    return {frozenset(group) for group in groups.values() if len(group) > 1}


def test_items_are_clustered_as_their_entities(tmp_path: Path) -> None:
    inputs = _write(tmp_path / "items.jsonl", _records())
    with State.open(tmp_path / "state") as state:
        _run(state, [str(inputs)])
        found = partition(state)
    expected = _entities()
    shared = sum(len(group) * (len(group) - 1) // 2 for group in found & expected)
    pairs = sum(len(group) * (len(group) - 1) // 2 for group in expected)
    # most true clusters come out whole (a model fitted on 600 records; F1: docs/accuracy.md)
    assert shared >= 0.85 * pairs
    assert max(map(len, found)) <= 6


def test_the_final_clusters_do_not_depend_on_the_order(tmp_path: Path) -> None:
    records = _records(300)
    shuffled = records[:]
    random.Random(7).shuffle(shuffled)
    clusters = []
    for name, order in (("a", records), ("b", shuffled)):
        inputs = _write(tmp_path / f"{name}.jsonl", order)
        with State.open(tmp_path / name) as state:
            _run(state, [str(inputs)], batch_size=17)
            clusters.append(partition(state))
    assert clusters[0] == clusters[1]


def test_events_report_the_score_and_each_field_s(tmp_path: Path) -> None:
    records = _records(200)
    inputs = _write(tmp_path / "items.jsonl", records)
    events = tmp_path / "events.jsonl"
    with State.open(tmp_path / "state") as state, events.open("w") as out:
        _run(state, [str(inputs)], events=out)
    duplicates = [
        json.loads(line) for line in events.read_text().splitlines() if '"duplicate"' in line
    ]
    assert duplicates
    for event in duplicates:
        assert event["method"] == "item" and 0.5 <= event["score"] <= 1.0  # the threshold
        assert set(event["fields"]) <= {"name", "address", "city", "location", "phone"}
        assert all(0.0 <= value <= 1.0 for value in event["fields"].values())


def test_bad_records_are_dead_letters_and_the_rest_goes_on(tmp_path: Path) -> None:
    good = _records(20)
    bad = [
        {"name": "no id"},
        {"id": "x1", "name": "far north", "latitude": 91.0, "longitude": 0.0},
        {"id": "x2", "name": "far east", "latitude": 0.0, "longitude": 181.0},
        {"id": "x3", "name": "half a place", "latitude": 10.0},
        {"id": "x4", "name": ["a", "list"]},
        {"id": "x5", "name": "huge", "address": "a" * 2_000_000},
    ]
    lines = [json.dumps(record) for record in good[:10] + bad + good[10:]]
    lines.insert(3, '{"id": "x6", "name": "nan", "latitude": NaN, "longitude": 1}')
    inputs = tmp_path / "items.jsonl"
    inputs.write_text("\n".join(lines) + "\n")
    with State.open(tmp_path / "state") as state:
        summary = _run(state, [str(inputs)])
        assert state.view().counters.get("documents") == 20
    reasons = dict(summary.dead_letters)  # type: ignore[attr-defined]
    assert reasons == {
        "missing_id": 1,
        "bad_location": 3,
        "bad_field": 1,
        "too_large": 1,
        "not_finite": 1,
    }


def _clustered(folder: Path, line: str, records: list[dict[str, str]]) -> set[frozenset[str]]:
    """The clusters of ``records`` run under the listings schema with ``line`` added."""
    from neardup.streams.running.embedded import run

    text = SCHEMA.read_text().replace('source = "source"', f'source = "source"\n{line}')
    schema = ItemSchema.from_toml(text)
    inputs = _write(folder.with_suffix(".jsonl"), records)
    with State.open(folder) as state:
        check_or_store_schema(state.store, schema)
        run(state, [str(inputs)], items=schema)
        return partition(state)


_CAFE = {"name": "Blue Door Cafe", "address": "12 Main Street", "city": "Salem"}


def test_link_across_sources_joins_only_items_of_different_sources(tmp_path: Path) -> None:
    records = [
        {**_CAFE, "id": "a1", "source": "atlas"},
        {**_CAFE, "id": "a2", "source": "atlas"},  # the same source: not with a1
        {**_CAFE, "id": "y1", "source": "yellow"},  # links to one of them
        {**_CAFE, "id": "a3", "source": "atlas", "name": "Green Door Bakery"},
    ]
    found = _clustered(tmp_path / "s", 'link = "across"', records)
    # one item of each source a cluster: y1 joins a1 or a2, its equals
    assert found in ({frozenset({"a1", "y1"})}, {frozenset({"a2", "y1"})})
    assert _clustered(tmp_path / "t", 'link = "across"', records[:2]) == set()


def test_a_source_listed_once_never_pairs_its_own_items(tmp_path: Path) -> None:
    records = [
        {**_CAFE, "id": "a1", "source": "atlas"},
        {**_CAFE, "id": "a2", "source": "atlas", "name": "Blue Door Cafe Two"},  # not with a1
        {**_CAFE, "id": "y1", "source": "yellow"},  # joins one of them
        {**_CAFE, "id": "y2", "source": "yellow"},  # yellow repeats: y2 goes with y1
    ]
    found = _clustered(tmp_path / "s", 'once = ["atlas"]', records)
    assert len(found) == 1
    (cluster,) = found
    assert {"y1", "y2"} <= cluster and len(cluster & {"a1", "a2"}) == 1


def test_a_state_keeps_its_schema_and_refuses_another(tmp_path: Path) -> None:
    schema = ItemSchema.from_toml(SCHEMA.read_text())
    with State.open(tmp_path / "state") as state:
        assert check_or_store_schema(state.store, schema) == schema
        assert check_or_store_schema(state.store, None) == schema  # a later run may omit it
        other = ItemSchema.from_toml(SCHEMA.read_text().replace("weight = 3", "weight = 4"))
        with pytest.raises(IncompatibleStateError, match="name"):
            check_or_store_schema(state.store, other)


def _neardup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup.streams", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_line_runs_merges_and_queries_items(tmp_path: Path) -> None:
    records = _records(200)
    inputs = _write(tmp_path / "items.jsonl", records)
    state = str(tmp_path / "state")
    first = _neardup("run", "--state", state, "--schema", str(SCHEMA), str(inputs))
    assert first.returncode == 0, first.stderr
    again = _neardup("run", "--state", state, str(inputs))  # the schema is stored
    assert again.returncode == 0 and "200 already known" in again.stderr
    clusters = [
        json.loads(line) for line in _neardup("clusters", "--state", state).stdout.splitlines()
    ]
    assert clusters and all(isinstance(m, str) for c in clusters for m in c["members"])
    merged = [json.loads(line) for line in _neardup("merged", "--state", state).stdout.splitlines()]
    assert [m["members"] for m in merged] == [sorted(c["members"]) for c in clusters]
    fitted = _neardup("fit", "--state", state)  # writes the state: opened as its writer
    assert fitted.returncode == 0, fitted.stderr
    summary = json.loads(fitted.stdout)
    assert summary["items_fitted_on"] == 200
    assert all(s["shared"] != s["text"] and s["bits"] > 0 for s in summary["series"])
    assert all(m["urls"] and "name" in m["record"] for m in merged)
    probe = tmp_path / "item.json"
    probe.write_text(json.dumps({**records[0], "id": "probe"}))
    answers = [
        json.loads(line)
        for line in _neardup("query", "--state", state, str(probe)).stdout.splitlines()
    ]
    best = [answer for answer in answers if answer["score"] == answers[0]["score"]]
    assert records[0]["id"] in [answer["id"] for answer in best]
    assert answers[0]["score"] > 0.999 and answers[0]["matched"]
    assert next(a for a in best if a["id"] == records[0]["id"])["fields"]["name"] == 1.0
    pages = _neardup(
        "run", "--state", str(tmp_path / "pages"), str(REPO / "samples" / "pages.jsonl")
    )
    assert pages.returncode == 0
    refused = _neardup(
        "run", "--state", str(tmp_path / "pages"), "--schema", str(SCHEMA), str(inputs)
    )
    assert refused.returncode == 2 and "holds pages, not items" in refused.stderr
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('id = "id"\n[fields.name]\ntype = "txt"\nweight = 1\n')
    bad = _neardup("run", "--state", str(tmp_path / "x"), "--schema", str(wrong), str(inputs))
    assert bad.returncode == 2 and "line 3" in bad.stderr and "txt" in bad.stderr


def test_the_service_answers_item_queries_and_merged_records(tmp_path: Path) -> None:
    from tests.streams.service.conftest import call, serving

    records = _records(200)
    inputs = _write(tmp_path / "items.jsonl", records)
    with State.open(tmp_path / "state") as state:
        _run(state, [str(inputs)])
        with serving(state) as service:
            api = service.url + "/api/v1"
            probe = {**records[0], "id": "probe"}
            similar = call(api + "/items/similar", "POST", {"record": probe, "limit": 3})
            assert similar.status == 200, similar.body
            matches = similar.json()["matches"]
            best = next(m for m in matches if m["id"] == records[0]["id"])
            assert best["score"] == matches[0]["score"] > 0.999 and best["matched"]
            assert set(best["fields"]) <= {"name", "address", "city", "location", "phone"}
            largest = call(api + "/items/merged?limit=2").json()["clusters"]
            assert len(largest) == 2 and largest[0]["size"] >= largest[1]["size"]
            one = call(api + f"/items/merged/{largest[0]['cluster']}").json()
            assert one == largest[0] and "name" in one["record"]
            bad = call(api + "/items/similar", "POST", {"record": {"name": "no id"}})
            assert bad.status == 400 and "missing_id" in bad.json()["error"]["message"]
    with State.open(None) as pages, serving(pages) as service:
        refused = call(service.url + "/api/v1/items/merged")
        assert refused.status == 404 and "holds pages" in refused.json()["error"]["message"]
