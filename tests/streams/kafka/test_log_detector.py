"""The Kafka mode's detector as a fold over the prepared log, run in process.

``Topology`` plays the two agents and the broker: pages are split into partitions, prepared
in batches of random size (some prepared and sent twice: at-least-once), and interleaved into
one log; the detector applies the log in runs of random length and crashes at random points
(before sending a run's events, after sending but before committing, after committing but
before the input offset is acknowledged), or is replaced by a worker with a new, empty state
that catches up from the log. Whatever happens, the clusters, those a consumer rebuilds from
the events, and the state itself must be those of an uninterrupted run.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neardup.core import Page, Preparer, Settings
from neardup.core.prepared_codec import decode_batch, encode_batch
from neardup.state import TABLES, State
from neardup.streams import Detector
from neardup.streams.detection.event_clusters import clusters_from_events
from neardup.streams.kafka.log_detector import LogDetector

from tests.helpers import family_pages, partition, random_text, settled_tables

LOG = "nd-prepared"
CRASHES = ("none", "before-send", "before-commit", "before-ack", "new-worker")


def _log(pages: list[Page], partitions: int, rng: random.Random, config: Settings) -> list[bytes]:
    """Prepared messages as the prepare agents of ``partitions`` page partitions send them."""
    preparer = Preparer(config)
    queues = [[p for p in pages if p.doc_id % partitions == n] for n in range(partitions)]
    log: list[bytes] = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        size = rng.randint(1, 4)
        batch = queue[:size]
        message = encode_batch(preparer.prepare(batch), config)
        log.append(message)
        if rng.random() < 0.2:  # sent, but the offset commit was lost: prepared again
            log.append(message)
        else:
            del queue[:size]
    return log


def _catch_up(detector: LogDetector, log: list[bytes], until: int) -> None:
    """What the topology's catch-up does: apply [next offset, until) without sending."""
    while detector.next_offset < until:
        start = detector.next_offset
        records = [(o, log[o]) for o in range(start, min(until, start + 3))]
        detector.commit(detector.stage(records))


def _fold(
    log: list[bytes], config: Settings, rng: random.Random
) -> tuple[State, list[dict[str, object]]]:
    state = State.open(None, config)
    detector = LogDetector(state, LOG)
    sent: list[dict[str, object]] = []
    acked = 0  # the committed input offset: where delivery resumes after a crash
    crashes = 0
    while acked < len(log):
        if detector.next_offset < acked:
            _catch_up(detector, log, acked)
        run = [(o, log[o]) for o in range(acked, min(len(log), acked + rng.randint(1, 5)))]
        staged = detector.stage(run)
        crash = rng.choice(CRASHES) if crashes < 6 else "none"
        crashes += crash != "none"
        if crash == "before-send":
            detector = LogDetector(state, LOG)
            continue
        sent += [event.to_json() for event in staged.result.events]
        if crash == "before-commit":
            detector = LogDetector(state, LOG)
            continue
        detector.commit(staged)
        if crash == "before-ack":
            detector = LogDetector(state, LOG)
            continue
        acked = staged.next_offset
        if crash == "new-worker":  # another worker takes the partition, with an empty state
            state.close()
            state = State.open(None, config)
            detector = LogDetector(state, LOG)
    _catch_up(detector, log, len(log))  # a worker that took over last catches up on its next
    return state, sent


@settings(suppress_health_check=[HealthCheck.large_base_example], max_examples=25)
@given(st.integers(0, 10_000), st.sampled_from([1, 2, 4]), st.randoms(use_true_random=False))
def test_any_interleaving_and_any_crash_give_the_embedded_clusters(
    seed: int, partitions: int, rng: random.Random
) -> None:
    config = Settings()
    pages = family_pages(seed, families=5, size=4)
    with State.open(None, config) as embedded:
        Detector(embedded).process(pages)
        expected = partition(embedded)
    state, sent = _fold(_log(pages, partitions, rng, config), config, rng)
    with state:
        assert partition(state) == expected
    assert {frozenset(c["members"]) for c in clusters_from_events(sent)} == expected  # type: ignore[arg-type]
    first: dict[object, dict[str, object]] = {}
    for event in sent:  # a repeated event is the same event
        assert first.setdefault(event["id"], event) == event


@settings(suppress_health_check=[HealthCheck.large_base_example], max_examples=10)
@given(st.integers(0, 10_000), st.sampled_from([1, 3]), st.randoms(use_true_random=False))
def test_simhash_mode_folded_from_the_log_is_the_embedded_run(
    seed: int, partitions: int, rng: random.Random
) -> None:
    """Prepared messages carry each page's SimHash and table keys; a log detector applying
    them through crashes and takeovers ends as the embedded detector given the same pages
    in the log's order: the same clusters, events (their distances too) and tables."""
    config = Settings(sketch="simhash")
    pages = family_pages(seed, families=5, size=4)
    pages += [Page(p.url + "?copy", p.content, p.fetched_at) for p in pages[::3]]
    words = random_text(np.random.default_rng(seed), 200)
    swapped = [*words[:100], words[101], words[100], *words[102:]]  # the same words: distance 0
    pages += [
        Page("https://w.example/1", " ".join(words)),
        Page("https://w.example/2", " ".join(swapped)),
    ]
    log = _log(pages, partitions, rng, config)
    prepared = Preparer(config).prepare(pages)
    by_id = {doc.doc_id: page for page, doc in zip(pages, prepared, strict=True)}
    order = [by_id[d.doc_id] for message in log for d in decode_batch(message, config)]
    with State.open(None, config) as embedded:
        expected = Detector(embedded).process(order).events
        tables = settled_tables(embedded)
        clusters = partition(embedded)
    state, sent = _fold(log, config, rng)
    with state:
        assert partition(state) == clusters
        folded = settled_tables(state)
        folded["meta"] = [(k, v) for k, v in folded["meta"] if not k.startswith(b"log-offset:")]
        assert folded == tables
    assert {e["id"]: e for e in sent} == {e.to_json()["id"]: e.to_json() for e in expected}
    assert any(e["method"] == "simhash" and "distance" in e for e in sent)


def _tables(state: State) -> dict[str, list[tuple[bytes, bytes]]]:
    return {table: list(state.store.items(table)) for table in TABLES}


def test_a_state_rebuilt_from_the_log_is_the_state_that_applied_it() -> None:
    config = Settings()
    rng = random.Random(5)
    log = _log(family_pages(21, families=6, size=5), 3, rng, config)
    with State.open(None, config) as live, State.open(None, config) as rebuilt:
        once = LogDetector(live, LOG)
        for offset in range(0, len(log), 2):
            once.commit(once.stage([(o, log[o]) for o in range(offset, min(offset + 2, len(log)))]))
        _catch_up(LogDetector(rebuilt, LOG), log, len(log))
        assert settled_tables(rebuilt) == settled_tables(live)
        assert LogDetector(live, LOG).next_offset == len(log)


def test_messages_already_applied_are_skipped() -> None:
    config = Settings()
    log = _log(family_pages(4), 1, random.Random(1), config)
    with State.open(None, config) as state:
        detector = LogDetector(state, LOG)
        first = detector.stage([(o, log[o]) for o in range(len(log))])
        assert first.result.events
        detector.commit(first)
        before = _tables(state)
        again = detector.stage([(o, log[o]) for o in range(len(log))])
        assert again.result.events == () and again.result.documents == 0
        detector.commit(again)
        assert _tables(state) == before  # not even a counter: the offset it rewrote is the same
        with pytest.raises(ValueError, match="ascend"):
            detector.stage([(len(log) + 1, log[0]), (len(log), log[0])])


def test_bad_messages_are_rejected_and_the_rest_applied() -> None:
    config = Settings()
    pages = family_pages(8, families=2, size=3)
    other = Settings(shingle_size=3)
    good = encode_batch(Preparer(config).prepare(pages[:3]), config)
    foreign = encode_batch(Preparer(other).prepare(pages[3:]), other)
    compatible = encode_batch(Preparer(config).prepare(pages[3:]), config.replace(posting_cap=50))
    with State.open(None, config) as state:
        detector = LogDetector(state, LOG)
        staged = detector.stage([(0, good), (1, b"garbage"), (2, foreign), (3, compatible)])
        reasons = {offset: error.reason for offset, error in staged.rejected}
        assert reasons == {1: "bad_prepared_batch", 2: "settings_mismatch"}
        assert "shingle_size" in str(dict(staged.rejected)[2])
        assert staged.result.documents == 6  # the good batch and the compatible one
        detector.commit(staged)
        assert detector.next_offset == 4  # past the rejected ones: they are dead letters now
