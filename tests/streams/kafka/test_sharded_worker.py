"""Detection shards on a real broker: `neardup worker --shards S` processes must send exactly
the events of the embedded run over the same documents in the same order (the prepared
log's), whatever the number of shards and workers, through a SIGKILL and a replacement.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from neardup.core import Settings, page_from_json
from neardup.state import State
from neardup.streams import Detector

from tests.helpers import SAMPLE, family_pages, partition
from tests.streams.service.conftest import call
from tests.support.deployment import SETTLE_SECONDS, Deployment, metric, service_url, until

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

SETTINGS = Settings(containment_threshold=0.5)
FLAGS = ("--containment-threshold", "0.5")


def _lines() -> list[bytes]:
    """The sample pages and near-duplicate families: twins, near-duplicates, excerpts."""
    sample = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    families = [
        json.dumps({"url": p.url, "content": p.content, "fetched_at": p.fetched_at}).encode()
        for p in family_pages(11, families=12, size=5, words=200)
    ]
    return sample + families


def _expected(run: Deployment, lines: list[bytes]) -> tuple[set[str], set[frozenset[str]]]:
    """The embedded run's events (as sorted JSON) and clusters over the prepared order."""
    by_key: dict[tuple[str, str], bytes] = {}
    for line in lines:
        try:
            page = page_from_json(line)
        except ValueError:
            continue
        by_key.setdefault((page.url, page.fetched_at), line)
    valid = len(by_key)
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        order = run.prepared(SETTINGS, now=True)
        keys = list(dict.fromkeys((d.page.url, d.page.fetched_at) for d in order))
        if len(keys) >= valid or time.monotonic() > deadline:
            break
        run.check_alive()
        time.sleep(1)
    pages = [page_from_json(by_key[key]) for key in keys]
    with State.open(None, SETTINGS) as state:
        result = Detector(state).process(pages)
        return {json.dumps(e.to_json(), sort_keys=True) for e in result.events}, partition(state)


def _sent(run: Deployment, expected: set[str]) -> set[str]:
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        run.check_alive()
        sent = {json.dumps(e, sort_keys=True) for e in run.read(run.events)}
        if sent >= expected or time.monotonic() > deadline:
            return sent
        time.sleep(1)


@pytest.mark.parametrize(("shards", "workers"), [(1, 1), (2, 2), (4, 3)])
def test_shards_send_the_embedded_events(
    broker: str, tmp_path: Path, shards: int, workers: int
) -> None:
    lines = _lines()
    run = Deployment(broker, tmp_path)
    try:
        for index in range(workers):
            run.start_worker(f"w{index}", "--shards", str(shards), *FLAGS)
        run.publish(lines)
        run.wait_for_events()
        expected, clusters = _expected(run, lines)
        assert sum('"type": "contained"' in e for e in expected) >= 5
        assert _sent(run, expected) == expected  # the same events, ids and all; none more
        assert run.clusters() == clusters
        for index in range(shards):  # every shard ran somewhere, on its own documents
            assert any((tmp_path / f"w{w}" / f"shard-{index}").exists() for w in range(workers))
    finally:
        run.stop()


@pytest.mark.parametrize("replacement", ["fresh-state", "both"])
def test_a_worker_killed_mid_stream_is_replaced_and_the_events_are_the_embedded_ones(
    broker: str, tmp_path: Path, replacement: str
) -> None:
    """Two workers, two shards: w0 is SIGKILLed mid-stream (with the shards and, maybe, the
    union stage it ran) and replaced by a worker with a new state, the survivor taking over
    meanwhile; or both are killed, and restarted one on its state, one with a new one (so the
    union stage is rebuilt by one of them). No event may be lost; a repeated one is the same
    event."""
    lines = _lines()
    third = len(lines) // 3
    run = Deployment(broker, tmp_path)
    try:
        first = run.start_worker("w0", "--shards", "2", *FLAGS)
        second = run.start_worker("w1", "--shards", "2", *FLAGS)
        run.publish(lines[:third])
        run.wait_for_events()
        run.publish(lines[third : 2 * third])
        time.sleep(0.3)
        run.kill(first)
        if replacement == "both":
            run.kill(second)
            run.start_worker("w1", "--shards", "2", *FLAGS)
        run.start_worker("w2", "--shards", "2", *FLAGS)
        run.publish(lines[2 * third :])
        expected, clusters = _expected(run, lines)
        assert _sent(run, expected) == expected
        assert run.clusters() == clusters
    finally:
        run.stop()


def test_a_worker_with_another_number_of_shards_is_refused(broker: str, tmp_path: Path) -> None:
    run = Deployment(broker, tmp_path)
    try:
        run.start_worker("w0", "--shards", "2")
        run.publish(_lines()[:5])
        run.wait_for_events()
        late = run.start_worker("w1", "--shards", "3")
        assert late.wait(timeout=60) != 0
        log = (tmp_path / "w1.log").read_text()
        assert "has 2 detection shards, not 3" in log
        run.workers.remove(late)
    finally:
        run.stop()


def test_a_new_owner_starts_from_the_newest_checkpoint(broker: str, tmp_path: Path) -> None:
    """Workers sharing a checkpoint directory: a worker that takes a shard over with no
    state of it starts from the newest checkpoint, and the events are still exactly the
    embedded run's."""
    lines = _lines()
    third = len(lines) // 3
    checkpoints = tmp_path / "checkpoints"
    flags = ("--shards", "2", "--checkpoints", str(checkpoints), "--checkpoint-every", "2")
    run = Deployment(broker, tmp_path)
    try:
        first = run.start_worker("w0", *flags, *FLAGS)
        run.start_worker("w1", *flags, *FLAGS)
        run.publish(lines[: 2 * third])
        run.wait_for_events()
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline and not all(
            any((checkpoints / f"shard-{s}-of-2").glob("0*")) for s in range(2)
        ):
            run.check_alive()
            time.sleep(0.5)
        run.kill(first)
        run.start_worker("w2", *flags, *FLAGS)
        run.publish(lines[2 * third :])
        expected, clusters = _expected(run, lines)
        assert _sent(run, expected) == expected
        assert run.clusters() == clusters
        log = (tmp_path / "w2.log").read_text() + (tmp_path / "w1.log").read_text()
        assert "starting from the checkpoint at log offset" in log
    finally:
        run.stop()


def test_a_sharded_worker_serves_metrics_and_says_where_queries_are_answered(
    broker: str, tmp_path: Path
) -> None:
    """The union stage times its batches in /metrics; a query there is told it is not."""
    run = Deployment(broker, tmp_path)
    try:
        run.start_worker("w0", "--shards", "1", "--http", "127.0.0.1:0")
        url = until("the worker's service", lambda: service_url(tmp_path / "w0.log"))
        run.publish(_lines())
        run.wait_for_events()
        union = 'neardup_stage_seconds_count{stage="union"}'
        assert until("union batches in /metrics", lambda: metric(url, union) or None) > 0
        answer = call(url + "/api/v1/stats")
        assert answer.status == 404
        assert "/metrics and /healthz only" in answer.json()["error"]["message"]
    finally:
        run.stop()
