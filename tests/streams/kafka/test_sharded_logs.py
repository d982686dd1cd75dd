"""Sharded detection on Kafka as folds over two logs, run in process.

The prepared log (with gaps in its offsets, and pages prepared twice) is applied by every
shard (``ShardLog``), each sending one findings message per log message to one findings
topic, where they interleave; the union stage (``UnionLog``) reads that topic, applies each
offset once every shard reported it, sends the events and then a marker, and commits. Shards
and the union stage crash at random points, restart on their state, or are replaced by a
worker with a new, empty state. Whatever happens, the clusters and the events must be those
of the embedded detector, and no event may be lost.
"""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neardup.core import Page, Preparer, Settings
from neardup.core.prepared_codec import encode_batch
from neardup.state import Checkpoints, State
from neardup.streams import Detector
from neardup.streams.detection.event_clusters import clusters_from_events
from neardup.streams.detection.shard import Ownership
from neardup.streams.kafka.findings_codec import ShardMessage, encode_findings
from neardup.streams.kafka.shard_log import ShardLog
from neardup.streams.kafka.union_log import MARKER_KEY, UnionLog, applied_marker, read_marker

from tests.helpers import family_pages, partition, recrawl, settled_tables

LOG, FINDINGS = "nd-prepared", "nd-findings"


def _log(pages: list[Page], rng: random.Random, config: Settings) -> dict[int, bytes]:
    """Prepared messages by offset, with gaps between some offsets; some sent twice."""
    preparer = Preparer(config)
    log: dict[int, bytes] = {}
    offset = 0
    at = 0
    while at < len(pages):
        size = rng.randint(1, 4)
        log[offset] = encode_batch(preparer.prepare(pages[at : at + size]), config)
        offset += rng.choice([1, 1, 1, 2, 3])  # a gap: offsets need not be contiguous
        if rng.random() > 0.15:  # else prepared again (at-least-once)
            at += size
    return log


class _Shard:
    def __init__(self, index: int, shards: int, config: Settings) -> None:
        self.ownership = Ownership(index, shards)
        self.config = config
        self.state = State.open(None, config)
        self.fold = ShardLog(self.state, self.ownership, LOG)

    def step(self, log: dict[int, bytes], topic: list[tuple[bytes, bytes]], crash: str) -> None:
        start = self.fold.next_offset
        most = 1 if self.fold.one_message_a_batch else random.randint(1, 3)
        offsets = [o for o in sorted(log) if o >= start][:most]
        if not offsets:
            return
        staged = self.fold.stage([(o, log[o]) for o in offsets])
        if crash == "before-send":
            return
        for message in staged.messages:
            topic.append((str(self.ownership.index).encode(), encode_findings(message)))
        if crash == "before-commit":
            return
        self.fold.commit(staged)
        if crash == "new-worker":  # taken over with an empty state: the log again from 0
            self.state.close()
            self.state = State.open(None, self.config)
            self.fold = ShardLog(self.state, self.ownership, LOG)


class _Union:
    def __init__(self, shards: int, config: Settings) -> None:
        self.shards = shards
        self.config = config
        self.state = State.open(None, config)
        self._open(topic=[])

    def _open(self, topic: list[tuple[bytes, bytes]]) -> None:
        self.fold = UnionLog(self.state, self.shards, LOG, FINDINGS)
        self.read = self.fold.resume
        # a new state applies silently what a marker says was applied and sent
        self.silent_below = max(
            (read_marker(v) for k, v in topic[self.read :] if k == MARKER_KEY), default=0
        )

    def step(
        self, topic: list[tuple[bytes, bytes]], sent: list[dict[str, object]], crash: str
    ) -> None:
        end = min(len(topic), self.read + random.randint(1, 6))
        for position in range(self.read, end):
            key, value = topic[position]
            if key == MARKER_KEY:
                self.fold.passed(position)
                self.silent_below = max(self.silent_below, read_marker(value))
            else:
                self.fold.add(position, value)
        self.read = end
        staged = self.fold.stage()
        if staged is None:
            return
        if crash == "before-send":
            self._open(topic)
            return
        if staged.next_offset > self.silent_below:  # else sent by whoever applied it first
            sent += [event.to_json() for event in staged.result.events]
        topic.append((MARKER_KEY, applied_marker(staged.next_offset)))
        if crash == "before-commit":
            self._open(topic)
            return
        self.fold.commit(staged)
        if crash == "new-worker":
            self.state.close()
            self.state = State.open(None, self.config)
            self._open(topic)


CRASHES = ("none",) * 6 + ("before-send", "before-commit", "new-worker")


@settings(suppress_health_check=[HealthCheck.large_base_example], max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4), st.randoms(use_true_random=False), st.booleans())
def test_shards_and_union_over_kafka_logs_give_the_embedded_events(
    seed: int, shards: int, rng: random.Random, crashing: bool
) -> None:
    random.seed(rng.random())
    config = Settings(containment_threshold=0.5)
    _folds_give_the_embedded_events(
        config, family_pages(seed, families=5, size=4), shards, rng, crashing
    )


@settings(suppress_health_check=[HealthCheck.large_base_example], max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 3), st.randoms(use_true_random=False), st.booleans())
def test_shards_and_union_follow_a_crawl_s_versions_over_kafka_logs(
    seed: int, shards: int, rng: random.Random, crashing: bool
) -> None:
    """Where only a url's latest version counts, each stage decides the versions of every
    record a message at a time: re-fetches with other content (some a copy of another
    page), deletions and unchanged fetches give the embedded detector's events, through
    crashes and takeovers, and a fresh run's clusters over the live urls."""
    random.seed(rng.random())
    config = Settings(versions="latest")
    pages = family_pages(seed, families=5, size=4)
    again, live = recrawl(pages, rng)
    found = _folds_give_the_embedded_events(config, pages + again, shards, rng, crashing)
    with State.open(None, config) as fresh:
        Detector(fresh).process(live)
        assert found == partition(fresh)


def _folds_give_the_embedded_events(
    config: Settings, pages: list[Page], shards: int, rng: random.Random, crashing: bool
) -> set[frozenset[str]]:
    """Shards and the union stage over a prepared log of ``pages`` end as the embedded
    detector fed the log's messages; the clusters."""
    log = _log(pages, rng, config)
    preparer = Preparer(config)
    with State.open(None, config) as embedded:
        detector = Detector(embedded)
        results = [detector.ingest(_decode(log[o], preparer)) for o in sorted(log)]
        expected_events = [e.to_json() for result in results for e in result.events]
        expected = partition(embedded)
    workers = [_Shard(i, shards, config) for i in range(shards)]
    union = _Union(shards, config)
    topic: list[tuple[bytes, bytes]] = []
    sent: list[dict[str, object]] = []
    end = max(log) + 1
    for _ in range(10_000):
        if union.fold.next_offset >= end and all(w.fold.next_offset >= end for w in workers):
            break
        crash = rng.choice(CRASHES) if crashing else "none"
        if rng.random() < 0.6:
            rng.choice(workers).step(log, topic, crash)
        else:
            union.step(topic, sent, crash)
    else:
        raise AssertionError("the folds did not reach the end of the log")
    assert partition(union.state) == expected
    assert {frozenset(c["members"]) for c in clusters_from_events(sent)} == expected  # type: ignore[arg-type]
    first: dict[object, dict[str, object]] = {}
    for event in sent:  # a repeated event is the same event
        assert first.setdefault(event["id"], event) == event
    assert list(first.values()) == expected_events  # none lost, in order
    if not crashing:
        assert sent == expected_events
    for worker in workers:
        worker.state.close()
    union.state.close()
    return expected


def _found(message: ShardMessage) -> tuple[object, ...]:
    """What a findings message says of its documents (not the batch's counts)."""
    found = message.findings
    return (
        message.shard,
        message.offset,
        message.previous,
        message.heads,
        found.verdicts,
        found.near,
        found.contained,
    )


def _decode(message: bytes, preparer: Preparer) -> list:  # type: ignore[type-arg]
    from neardup.core.prepared_codec import decode_batch

    return decode_batch(message, preparer.settings)


def test_a_shard_restored_from_a_checkpoint_ends_as_one_that_applied_the_whole_log(
    tmp_path: Path,
) -> None:
    """A new owner starting from a checkpoint applies only the log after it, and ends with
    the tables and the findings of a shard that applied everything, one message at a time
    (the new owner applies the rest as one batch: the posting log's records and the
    batch's counts, which go with its first message, depend on the batching). Every fetch
    a document: where versions depart, a shard applies a message at a time, and the test
    with crashes and takeovers covers it."""
    config = Settings(containment_threshold=0.5, versions="all")
    log = _log(family_pages(9, families=6, size=5), random.Random(2), config)
    offsets = sorted(log)
    middle = offsets[len(offsets) // 2]
    checkpoints = Checkpoints(tmp_path / "checkpoints", "shard-1-of-2")
    with State.open(tmp_path / "whole", config) as whole:
        fold = ShardLog(whole, Ownership(1, 2), LOG)
        sent_whole = []
        for offset in offsets:
            staged = fold.stage([(offset, log[offset])])
            fold.commit(staged)
            sent_whole += [_found(m) for m in staged.messages]
            if offset == middle:
                checkpoints.write(whole, fold.next_offset)
        expected = settled_tables(whole)
    assert checkpoints.restore(tmp_path / "taken-over") == middle + 1
    with State.open(tmp_path / "taken-over", config) as taken:
        fold = ShardLog(taken, Ownership(1, 2), LOG)
        staged = fold.stage([(o, log[o]) for o in offsets])  # the whole log is offered
        fold.commit(staged)
        assert [m.offset for m in staged.messages] == [o for o in offsets if o > middle]
        after = [_found(m) for m in staged.messages]
        assert after == sent_whole[len(sent_whole) - len(after) :]
        assert settled_tables(taken) == expected
