"""The Kafka mode's detector as a fold over the prepared log, run in process.

``Topology`` plays the two agents and the broker: pages are split into partitions, prepared
in batches of random size (some prepared and sent twice: at-least-once), and interleaved into
one log; the detector applies the log in runs of random length and crashes at random points
(before sending a run's events, after sending but before committing, after committing but
before the input offset is acknowledged), or is replaced by a worker with a new, empty state
that catches up from the log. Whatever happens, the clusters, those a consumer rebuilds from
the events, and the state itself must be those of an uninterrupted run. With a retention
window (``--expire-after``) the sweeps too: decided after each message, finished after a
crash in one.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neardup.core import Page, Preparer, Settings, StateError
from neardup.core.prepared_codec import decode_batch, encode_batch
from neardup.state import TABLES, State, fetched_at_to_micros
from neardup.streams import Detector
from neardup.streams.detection.event_clusters import clusters_from_events
from neardup.streams.detection.retention import Retention
from neardup.streams.kafka.log_detector import LogDetector, Staged

from tests.helpers import edit_text, family_pages, partition, random_text, recrawl, settled_tables

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
        # the log's offset and the latest fetch it saw are the log detector's own
        own = (b"log-offset:", b"event-time:")
        folded["meta"] = [(k, v) for k, v in folded["meta"] if not k.startswith(own)]
        assert folded == tables
    assert {e["id"]: e for e in sent} == {e.to_json()["id"]: e.to_json() for e in expected}
    assert any(e["method"] == "simhash" and "distance" in e for e in sent)


@settings(suppress_health_check=[HealthCheck.large_base_example], max_examples=25)
@given(st.integers(0, 10_000), st.sampled_from([1, 2, 4]), st.randoms(use_true_random=False))
def test_a_crawl_s_versions_through_any_crash_give_a_fresh_run_s_clusters_and_events(
    seed: int, partitions: int, rng: random.Random
) -> None:
    """Re-fetches with other content (some a copy of another page), deletions and unchanged
    fetches, folded from the log through crashes and takeovers: the state's clusters and
    those a consumer rebuilds from the events (repeats dropped by id) are a fresh run's over
    the live urls. A replay applies the same messages as one run each, so it sends the
    events it sent before."""
    config = Settings(versions="latest")
    pages = family_pages(seed, families=5, size=4)
    again, live = recrawl(pages, rng)
    with State.open(None, config) as fresh:
        Detector(fresh).process(live)
        expected = partition(fresh)
    log = _log(pages + again, partitions, rng, config)  # a url's fetches close together
    state, sent = _fold(log, config, rng)
    with state:
        assert partition(state) == expected
    by_id = {event["id"]: event for event in sent}
    rebuilt = clusters_from_events(list(by_id.values()))
    assert {frozenset(c["members"]) for c in rebuilt} == expected  # type: ignore[arg-type]


def _tables(state: State) -> dict[str, list[tuple[bytes, bytes]]]:
    return {table: list(state.store.items(table)) for table in TABLES}


@pytest.mark.parametrize("versions", ["latest", "all"])
def test_a_state_rebuilt_from_the_log_is_the_state_that_applied_it(versions: str) -> None:
    config = Settings(versions=versions)  # type: ignore[arg-type]
    rng = random.Random(5)
    log = _log(family_pages(21, families=6, size=5), 3, rng, config)
    with State.open(None, config) as live, State.open(None, config) as rebuilt:
        once = LogDetector(live, LOG)
        while (at := once.next_offset) < len(log):  # a run is a message where versions depart
            once.commit(once.stage([(o, log[o]) for o in range(at, min(at + 2, len(log)))]))
        _catch_up(LogDetector(rebuilt, LOG), log, len(log))
        assert settled_tables(rebuilt) == settled_tables(live)
        assert LogDetector(live, LOG).next_offset == len(log)


def test_messages_already_applied_are_skipped() -> None:
    config = Settings(versions="all")  # every message in one run
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
    config = Settings(versions="all")  # every message in one run
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


# Retention by event time: a window behind the latest fetched_at applied (--expire-after)

LATEST = Settings(versions="latest")
#: sweeps of two urls a transaction: most sweeps take several
WINDOW = Retention(timedelta(days=3), chunk=2)


def _at_day(day: int) -> str:
    return f"2026-03-{day:02d}T10:00:00.000000Z"


def _crawls(seed: int) -> list[Page]:
    """Five crawls two days apart of twelve urls in four families: the first fetches every
    url, each later one about half of them, some with another family's content."""
    rng = np.random.default_rng(seed)
    bases = [random_text(rng, 80) for _ in range(4)]
    pages = []
    for crawl in range(5):
        for url in range(12):
            if crawl and rng.random() < 0.5:
                continue
            family = (url + (crawl if rng.random() < 0.25 else 0)) % 4
            text = edit_text(rng, bases[family], 0.02)
            pages.append(Page(f"https://r.example/{url}", text, _at_day(1 + 2 * crawl)))
    return pages


class _CrashedError(Exception):
    pass


Crash = Callable[[str], bool]


def _send_and_commit(
    detector: LogDetector, staged: Staged, sent: list[dict[str, object]], crash: Crash
) -> None:
    kind = "sweep" if staged.expired is not None else "run"
    if crash(kind):  # before the events are sent
        raise _CrashedError
    sent += [event.to_json() for event in staged.result.events]
    if crash(kind):  # sent, not committed
        raise _CrashedError
    detector.commit(staged)


def _apply(
    detector: LogDetector,
    records: list[tuple[int, bytes]],
    sent: list[dict[str, object]],
    crash: Crash,
) -> None:
    """What the topology's detect agent does with a batch of the log: a sweep a crash cut
    short first, then runs of messages, each followed by the sweep it made due."""
    while (chunk := detector.sweep()) is not None:
        _send_and_commit(detector, chunk, sent, crash)
    while detector.next_offset <= records[-1][0]:
        _send_and_commit(detector, detector.stage(records), sent, crash)
        while (chunk := detector.sweep()) is not None:
            _send_and_commit(detector, chunk, sent, crash)


def _fold_retained(
    log: list[bytes], sizes: Callable[[], int], crash: Crash
) -> tuple[State, list[dict[str, object]]]:
    """The log folded with the window in runs of ``sizes()`` messages, through the crashes
    ``crash(where)`` asks for (where: "sweep" or "run", before a chunk or a run is sent or
    committed; "ack", "takeover", after): the state and the events sent."""
    state = State.open(None, LATEST)
    detector = LogDetector(state, LOG, retention=WINDOW)
    sent: list[dict[str, object]] = []
    acked = 0
    while acked < len(log):
        if detector.next_offset < acked:  # the topology's catch-up: silent, sweeps included
            detector.catch_up([(o, log[o]) for o in range(detector.next_offset, acked)])
        records = [(o, log[o]) for o in range(acked, min(len(log), acked + sizes()))]
        try:
            _apply(detector, records, sent, crash)
        except _CrashedError:  # restarted on its own state
            detector = LogDetector(state, LOG, retention=WINDOW)
            continue
        if crash("ack"):  # applied, its input offsets not acknowledged
            detector = LogDetector(state, LOG, retention=WINDOW)
            continue
        acked = records[-1][0] + 1
        if crash("takeover"):  # another worker takes the log over, with an empty state
            state.close()
            state = State.open(None, LATEST)
            detector = LogDetector(state, LOG, retention=WINDOW)
    # a worker that took over last catches up on its next batch
    detector.catch_up([(o, log[o]) for o in range(detector.next_offset, len(log))])
    return state, sent


def _never(where: str) -> bool:
    return False


def _live(state: State) -> dict[str, object]:
    return dict(state.view().live.scan())


def _event_time(state: State) -> tuple[int, int | None, int | None]:
    clock = state.view().event_time
    return clock.seen(), clock.swept(), clock.due()


def test_a_worker_killed_in_a_sweep_ends_as_one_never_interrupted() -> None:
    """Killed before a sweep's chunk is sent or committed, a worker restarted on its state
    finishes the sweep first: the state is the uninterrupted one table by table, and the
    events are its events (a repeat the same); a worker rebuilding the state from the log
    silently, sweeps included, holds it too."""
    log = _log(_crawls(3), 1, random.Random(3), LATEST)
    reference, expected = _fold_retained(log, lambda: 1, _never)
    kills = iter([True, False, False, True, True, False, True] * 4)
    killed, sent = _fold_retained(
        log, lambda: 1, lambda where: where == "sweep" and next(kills, False)
    )
    rebuilt = State.open(None, LATEST)
    silent = LogDetector(rebuilt, LOG, retention=WINDOW)
    for offset in range(len(log)):
        silent.catch_up([(offset, log[offset])])
    with reference, killed, rebuilt:
        assert next(kills, None) is None  # every kill was used: sweeps of several chunks
        tables = settled_tables(reference)
        assert settled_tables(killed) == tables
        assert settled_tables(rebuilt) == tables
        assert _event_time(reference)[2] is None and _event_time(reference)[1] is not None
    assert sum(event["type"] == "page_removed" for event in expected) >= 4
    first: dict[object, dict[str, object]] = {}
    for event in sent:
        assert first.setdefault(event["id"], event) == event
    assert first == {event["id"]: event for event in expected}


@settings(suppress_health_check=[HealthCheck.large_base_example], max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([1, 3]), st.integers(0, 2**32))
def test_a_window_sweeps_the_same_urls_through_any_runs_and_crashes(
    seed: int, partitions: int, folding: int
) -> None:
    """The sweeps of a window are decided after each message of the log, whatever the runs:
    folded a message at a time, or in runs of any length through crashes anywhere (a
    sweep's chunks included), restarts and takeovers by a worker that catches up, every
    url's version is the same, and so is the event time; and the clusters are a fresh
    run's over the live urls' latest content. (With versions = latest, which of a url's
    versions were ever detected depends on the runs: the tables beyond these may differ, and
    so may the events of runs cut short and applied again in other runs.)"""
    pages = _crawls(seed)
    rng = random.Random(folding)  # the log's interleaving, the runs and the crashes
    log = _log(pages, partitions, rng, LATEST)
    reference, expected = _fold_retained(log, lambda: 1, _never)
    crashes = iter(range(12))

    def crash(where: str) -> bool:
        return rng.random() < 0.15 and next(crashes, None) is not None

    state, _ = _fold_retained(log, lambda: rng.randint(1, 5), crash)
    with reference, state:
        live = _live(reference)
        assert _live(state) == live
        assert _event_time(state) == _event_time(reference)
        content = {(page.url, fetched_at_to_micros(page.fetched_at)): page for page in pages}
        latest = [content[url, v.micros] for url, v in live.items() if not v.deleted]  # type: ignore[attr-defined]
        with State.open(None, LATEST) as fresh:
            Detector(fresh).process(latest)
            assert partition(state) == partition(reference) == partition(fresh)
        # a consumer follows the sweeps' removals and splits
        assert {frozenset(c["members"]) for c in clusters_from_events(expected)} == partition(
            reference
        )
        assert state.view().counters.get("documents") == len(latest)
        assert reference.view().counters.get("pages_expired") > 0


def test_a_run_of_messages_stops_where_a_sweep_is_due() -> None:
    pages = [Page(f"https://s.example/{n}", f"page {n} " * 30, _at_day(1 + n)) for n in range(6)]
    preparer = Preparer(LATEST)
    log = [encode_batch(preparer.prepare([page]), LATEST) for page in pages]
    with State.open(None, LATEST) as state:
        detector = LogDetector(state, LOG, retention=Retention(timedelta(days=2)))
        staged = detector.stage([(o, log[o]) for o in range(len(log))])
        assert staged.next_offset == 1  # the first time seen: a first sweep, of nothing
        detector.commit(staged)
        with pytest.raises(StateError, match="sweep is due"):
            detector.stage([(o, log[o]) for o in range(1, len(log))])
        detector.sweep_silently()
        # day 2: the bound moved by a day, over a tenth of the window: swept again
        assert detector.stage([(o, log[o]) for o in range(1, len(log))]).next_offset == 2
        # caught up in one call, sweeps and all: days 1 to 3 are more than 2 days before day 6
        detector = LogDetector(state, LOG, retention=Retention(timedelta(days=2)))
        assert detector.catch_up([(o, log[o]) for o in range(len(log))]) == 5
        live = {url for url, version in state.view().live.scan() if not version.deleted}
        assert live == {f"https://s.example/{n}" for n in (3, 4, 5)}
        assert state.view().counters.get("pages_expired") == 3
