"""The Faust topology against a real broker: `neardup worker` processes must find exactly
the clusters of the embedded run, with one worker or two, through a SIGKILL and a restart,
and send malformed messages to the dead-letter topic while the good ones around them pass.

Workers are real `neardup worker` processes; the crawler side is a kafka-python producer.
Clusters are followed from the events topic alone, as a downstream consumer would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from neardup.core import Page, Settings, page_from_json
from neardup.state import State
from neardup.streams import Detector

from bench.excerpts import excerpt_corpus
from tests.helpers import SAMPLE, hub_pages, partition
from tests.support.deployment import Deployment

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

MAX_RECORD_BYTES = 64 * 1024


def _sample_lines() -> list[bytes]:
    lines = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    oversized = json.dumps(
        {"url": "https://big.example/", "content": "word " * (MAX_RECORD_BYTES // 4)}
    ).encode()
    return [*lines, oversized]


def _embedded_partition(lines: list[bytes]) -> set[frozenset[str]]:
    pages: list[Page] = []
    for line in lines:
        try:
            pages.append(page_from_json(line, MAX_RECORD_BYTES))
        except ValueError:
            continue
    with State.open(None) as state:
        Detector(state).process(pages)
        return partition(state)


@contextmanager
def deployment(broker: str, root: Path) -> Iterator[Deployment]:
    running = Deployment(broker, root)
    try:
        yield running
    finally:
        running.stop()


def _documents_seen(run: Deployment) -> int:
    """Distinct documents the topology prepared: those of its prepared topic."""
    return len({doc.doc_id for doc in run.prepared()})


def test_one_worker_finds_the_embedded_clusters_and_dead_letters_bad_messages(
    broker: str, tmp_path: Path
) -> None:
    lines = _sample_lines()
    expected = _embedded_partition(lines)
    with deployment(broker, tmp_path) as run:
        run.start_worker("w1")
        run.publish(lines)
        assert run.wait_for(expected) == expected
        dead = run.read(run.dead_letters)
        reasons = sorted(str(letter["reason"]) for letter in dead)
        assert reasons == ["binary_content", "missing_field", "not_json", "too_large"]
        assert all(letter["topic"] == run.pages and "offset" in letter for letter in dead)
        # nothing lost: every record is a document or a dead letter
        assert _documents_seen(run) + len(dead) == len(lines)


def test_two_workers_on_four_partitions_find_the_embedded_clusters(
    broker: str, tmp_path: Path
) -> None:
    lines = _sample_lines()
    expected = _embedded_partition(lines)
    with deployment(broker, tmp_path) as run:
        run.start_worker("w1")
        run.start_worker("w2")
        run.publish(lines)
        assert run.wait_for(expected) == expected


@pytest.mark.parametrize("replacement", ["same-state", "fresh-state", "second-worker"])
def test_a_worker_killed_mid_stream_is_replaced_without_changing_the_clusters(
    broker: str, tmp_path: Path, replacement: str
) -> None:
    """w1 is SIGKILLed once it has detected part of the input, and replaced: by itself on its
    state directory, by a worker with a new one, or by a second worker that joined before it
    died. A new detector state must first be rebuilt from the prepared topic: the clusters of
    the rest depend on what came before."""
    lines = _sample_lines()
    expected = _embedded_partition(lines)
    with deployment(broker, tmp_path) as run:
        first = run.start_worker("w1")
        third = len(lines) // 3
        run.publish(lines[:third])
        run.wait_for_events()  # kill it while it works, once it has produced something
        if replacement == "second-worker":
            run.wait_joined(run.start_worker("w2"))
            run.kill(first)
            run.publish(lines[third:])
        else:
            run.publish(lines[third : 2 * third])
            time.sleep(0.3)
            run.kill(first)
            run.start_worker({"same-state": "w1", "fresh-state": "w2"}[replacement])
            # w1 may have finished before it died: the replacement must have work of its own
            run.publish(lines[2 * third :])
        assert run.wait_for(expected) == expected
        dead = run.read(run.dead_letters)
        assert _documents_seen(run) + len({json.dumps(d, sort_keys=True) for d in dead}) == len(
            lines
        )
        if replacement != "same-state":
            assert "detector: caught up" in (tmp_path / "w2.log").read_text()


def _prepared_order(run: Deployment) -> list[str]:
    """The URLs of the documents in the order detection took them: the prepared log's."""
    return [doc.page.url for doc in run.prepared(now=True)]


def test_contained_events_are_those_of_the_embedded_run(broker: str, tmp_path: Path) -> None:
    """With --containment-threshold, the worker's events (ids and content, contained ones
    included) are those of the embedded run over the same documents in the same order: the
    order of the prepared log, since pages published to several partitions interleave, and
    which of two documents is the new one decides a contained event's direction."""
    sources, queries = excerpt_corpus(sources=8, per_source=2, unrelated=4, seed=2)
    texts = [(s.url, s.text) for s in sources] + [(q.url, q.text) for q in queries]
    texts = texts[1::2] + texts[::2]  # some excerpts come first
    lines = {
        url: json.dumps({"url": url, "content": text, "content_type": "text/plain"}).encode()
        for url, text in texts
    }
    with deployment(broker, tmp_path) as run:
        run.start_worker("w1", "--containment-threshold", "0.5")
        run.publish(list(lines.values()))
        run.wait_for_events()  # the topology has made its topics (reading one first would)
        deadline = time.monotonic() + 120
        while len(order := _prepared_order(run)) < len(lines) and time.monotonic() < deadline:
            run.check_alive()
            time.sleep(1)
        with State.open(None, Settings(containment_threshold=0.5)) as state:
            result = Detector(state).process([page_from_json(lines[url]) for url in order])
            expected = {json.dumps(e.to_json(), sort_keys=True) for e in result.events}
            clusters = partition(state)
        assert sum('"type": "contained"' in line for line in expected) >= 8  # asked for
        assert run.wait_for(clusters) == clusters
        while True:
            sent = {json.dumps(e, sort_keys=True) for e in run.read(run.events)}
            if sent >= expected or time.monotonic() > deadline:
                break
            time.sleep(1)
    assert sent == expected


def test_pages_cut_on_kafka_are_the_embedded_run_s_clusters(broker: str, tmp_path: Path) -> None:
    """With ``--split-clusters on``, a hub page that chains three clusters is cut off on
    Kafka as in the embedded run; the clusters followed from the events are the same."""
    pages, hub = hub_pages()
    ordered = [pages[0], pages[4], pages[8], hub, *pages[1:4], *pages[5:8], *pages[9:]]
    lines = [
        json.dumps({"url": p.url, "content": p.content, "fetched_at": p.fetched_at}).encode()
        for p in ordered
    ]
    with State.open(None, Settings(threshold=0.17, split_clusters=True)) as state:
        Detector(state).process(ordered)
        expected = partition(state)
    assert len(expected) == 3  # not the one chain union-find alone makes
    with deployment(broker, tmp_path) as run:
        run.start_worker("w1", "--threshold", "0.17", "--split-clusters", "on")
        run.publish(lines)
        assert run.wait_for(expected) == expected


def test_the_simhash_mode_on_kafka_finds_the_embedded_clusters(broker: str, tmp_path: Path) -> None:
    """``--sketch simhash`` on a worker: its prepared messages carry SimHashes and table keys,
    and the clusters followed from the events are the embedded run's in that mode."""
    lines = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    pages: list[Page] = []
    for line in lines:
        try:
            pages.append(page_from_json(line))
        except ValueError:
            continue
    with State.open(None, Settings(sketch="simhash")) as state:
        Detector(state).process(pages)
        expected = partition(state)
    assert any(len(cluster) > 1 for cluster in expected)
    with deployment(broker, tmp_path) as run:
        run.start_worker("w1", "--sketch", "simhash")
        run.publish(lines)
        assert run.wait_for(expected) == expected
