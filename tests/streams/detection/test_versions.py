"""``versions = "latest"``: after any sequence of fetches, re-fetches, unchanged fetches and
deletions, in any batch sizes, the clusters are a fresh run's over each live url's latest
content, and ``documents`` counts the live urls."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from neardup.core import Page, Preparer, Settings
from neardup.state import State
from neardup.streams import Detector
from neardup.streams.detection.event_clusters import clusters_from_events
from neardup.streams.detection.sharded import ShardedDetector

from tests.helpers import at_second, edit_text, family_pages, partition, random_text

LATEST = Settings(versions="latest")
URLS = [f"https://site.example/{index}" for index in range(6)]


def _contents() -> list[str]:
    """Two near-duplicate families (one of three pages, one of two), a page of its own, an
    exact copy and a canonical copy (case) of the first family's pages, and a short page:
    every shortcut and both indexes are met, and a departing page's copy inherits its
    near-duplicates."""
    rng = np.random.default_rng(7)
    first, second, third = (random_text(rng, 120) for _ in range(3))
    family = [" ".join(first), edit_text(rng, first, 0.02), edit_text(rng, first, 0.03)]
    pair = [" ".join(second), edit_text(rng, second, 0.02)]
    return [*family, *pair, " ".join(third), family[0], family[1].upper(), "a short page"]


CONTENTS = _contents()
FINGERPRINTS = [
    doc.fingerprints.raw
    for doc in Preparer(LATEST).prepare([Page("https://x/", text) for text in CONTENTS])
]


@dataclass(frozen=True)
class Record:
    kind: str  # fetched, deleted, unchanged
    url: int
    second: int | None
    content: int

    def page(self) -> Page:
        fetched_at = "" if self.second is None else f"2026-03-01T00:00:{self.second:02d}Z"
        status = "fetched" if self.kind == "fetched" else self.kind
        text = CONTENTS[self.content] if self.kind == "fetched" else ""
        return Page(URLS[self.url], text, fetched_at, status=status)  # type: ignore[arg-type]


#: contents drawn: the first family and its copies more often than the rest
CONTENT_INDEXES = st.sampled_from([0, 0, 6, 6, 7, 1, 2, *range(len(CONTENTS))])
records = st.builds(
    Record,
    st.sampled_from(["fetched", "fetched", "fetched", "deleted", "unchanged"]),
    st.integers(0, len(URLS) - 1),
    st.integers(0, 9),
    CONTENT_INDEXES,
)
untimed = st.builds(
    Record,
    st.sampled_from(["fetched", "deleted"]),
    st.integers(0, len(URLS) - 1),
    st.none(),
    CONTENT_INDEXES,
)


def _live(sequence: list[Record]) -> dict[str, Record]:
    """The reference: each url's live fetch after the records, by the documented rules:
    the latest fetch wins, at one instant a deletion, then the larger content fingerprint;
    the same content again only moves the time; untimed records count in arrival order,
    after none that is timed, and an untimed deletion removes what is there."""
    now: dict[int, tuple[int, int, int, Record | None]] = {}  # last time, deleted, print
    for record in sequence:
        known = now.get(record.url)
        live = known is not None and known[3] is not None
        deleted = record.kind == "deleted"
        second = -1 if record.second is None else record.second
        if record.kind == "unchanged":
            if live and known and second > known[0]:
                now[record.url] = (second, *known[1:])
            continue
        printed = 0 if deleted else FINGERPRINTS[record.content]
        if record.second is None and deleted:
            if known is None or live:
                now[record.url] = (-1 if known is None else known[0], 1, 0, None)
            continue
        if record.second is None:
            accepted = known is None or known[0] == -1
        else:
            accepted = known is None or (second, deleted, printed) > known[:3]
        if not accepted:
            continue
        if live and known and not deleted and printed == known[2]:
            now[record.url] = (max(second, known[0]), 0, printed, known[3])
            continue
        now[record.url] = (second, int(deleted), printed, None if deleted else record)
    return {URLS[url]: found[3] for url, found in now.items() if found[3] is not None}


def _clusters(state: State) -> set[tuple[str, ...]]:
    """Clusters as their members' urls, each as often as it is there: a departed version
    that stayed would show as its url twice."""
    from neardup.streams.running.reports import cluster_lines

    return {tuple(sorted(line["members"])) for line in cluster_lines(state)}


def _fresh(live: dict[str, Record], mode: Settings) -> set[tuple[str, ...]]:
    with State.open(None, mode) as state:
        Detector(state).process([record.page() for record in live.values()])
        return _clusters(state)


#: the default mode (3 departed versions kept), none kept, clusters cut as well, SimHash
#: mode, containment events
MODES = [
    LATEST,
    Settings(versions="latest", keep_versions=0),
    Settings(versions="latest", split_clusters=True),
    Settings(versions="latest", sketch="simhash"),
    Settings(versions="latest", containment_threshold=0.5),
]


@pytest.mark.parametrize(
    "mode", MODES, ids=["minhash", "keep-none", "split", "simhash", "containment"]
)
@settings(max_examples=200)
@given(
    st.lists(st.one_of(records, records, records, untimed), max_size=24),
    st.lists(st.integers(1, 6), min_size=1, max_size=8),
)
def test_clusters_are_a_fresh_runs_over_the_live_urls(
    mode: Settings, sequence: list[Record], sizes: list[int]
) -> None:
    events = []
    with State.open(None, mode) as state:
        detector = Detector(state)
        at, batch = 0, 0
        while at < len(sequence):
            size = sizes[batch % len(sizes)]
            result = detector.process([record.page() for record in sequence[at : at + size]])
            events += [event.to_json() for event in result.events]
            at, batch = at + size, batch + 1
        live = _live(sequence)
        assert _clusters(state) == _fresh(live, mode)
        assert state.view().counters.get("documents") == len(live)
        followed = {tuple(sorted(c["members"])) for c in clusters_from_events(events)}
        assert followed == _clusters(state)


@pytest.mark.parametrize(
    "mode", [MODES[0], MODES[3], MODES[4]], ids=["minhash", "simhash", "containment"]
)
@settings(max_examples=100)
@given(
    st.lists(st.one_of(records, records, records, untimed), max_size=24),
    st.lists(st.integers(1, 6), min_size=1, max_size=8),
    st.integers(2, 3),
)
def test_detection_shards_follow_versions_as_one_detector_does(
    mode: Settings, sequence: list[Record], sizes: list[int], shards: int
) -> None:
    """Shards and a union stage, each deciding every record's version on its own, send the
    one detector's events and counts, batch by batch, and end with a fresh run's clusters
    (a departed page's copy may be another shard's document)."""
    preparer, batches, at = Preparer(mode), [], 0
    while at < len(sequence):
        size = sizes[len(batches) % len(sizes)]
        batches.append(preparer.prepare([record.page() for record in sequence[at : at + size]]))
        at += size
    with State.open(None, mode) as state:
        detector = Detector(state)
        expected = [detector.ingest(docs) for docs in batches]
    parts = [State.open(None, mode) for _ in range(shards)]
    try:
        with State.open(None, mode) as union:
            sharded = ShardedDetector(parts, union)
            assert [sharded.ingest(docs) for docs in batches] == expected
            assert _clusters(union) == _fresh(_live(sequence), mode)
            assert union.view().counters.get("documents") == len(_live(sequence))
    finally:
        for part in parts:
            part.close()


def test_a_changed_page_leaves_its_cluster_and_a_deleted_one_is_gone() -> None:
    rng = np.random.default_rng(3)
    first, second = random_text(rng, 120), random_text(rng, 120)
    family = [edit_text(rng, first, 0.02) for _ in range(3)]

    def fetch(url: int, at: int, text: str) -> Page:
        return Page(URLS[url], text, at_second(at))

    with State.open(None, LATEST) as state:
        detector = Detector(state)
        detector.process([fetch(i, 1, family[i]) for i in range(3)])
        assert partition(state) == {frozenset(URLS[:3])}
        changed = detector.process([fetch(1, 2, " ".join(second))])
        assert [e.to_json()["type"] for e in changed.events][-1] == "page_changed"
        assert partition(state) == {frozenset({URLS[0], URLS[2]})}
        removed = detector.process([Page(URLS[0], "", status="deleted")])
        assert "page_removed" in [e.to_json()["type"] for e in removed.events]
        assert partition(state) == set()
        # an untimed deletion comes just after the version it removed: an older fetch stays
        # out, a later one brings the url back
        stale = detector.process([fetch(0, 0, family[0])])
        assert partition(state) == set() and stale.documents == 0
        back = detector.process([fetch(0, 3, family[0])])
        assert partition(state) == {frozenset({URLS[0], URLS[2]})} and back.documents == 1
        older = detector.process([fetch(2, 0, " ".join(second))])  # older than its version
        assert older.documents == 0
        assert state.view().counters.get("documents") == 3


def test_an_archive_keeps_every_fetch() -> None:
    text = family_pages(5, families=1, size=1, words=100)[0].content
    with State.open(None, Settings(versions="all")) as state:
        detector = Detector(state)
        detector.process([Page(URLS[0], text, "2026-03-01T00:00:01Z")])
        detector.process([Page(URLS[0], text + " more", "2026-03-01T00:00:02Z")])
        detector.process([Page(URLS[0], "", status="deleted")])
        assert partition(state) == {frozenset({URLS[0]})}
        assert state.view().counters.get("documents") == 2
        assert state.view().counters.get("versions_ignored") == 1


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"url": "https://a/", "deleted": "yes"}, "bad_field"),
        ({"url": "https://a/", "unchanged": True}, "missing_field"),
        ({"url": "https://a/", "deleted": True, "unchanged": True}, "bad_field"),
        ({"url": "https://a/"}, "missing_field"),
    ],
)
def test_records_that_say_nothing_clear_are_refused(record: dict[str, object], reason: str) -> None:
    from neardup.core import page_from_json
    from neardup.core.exceptions import BadRecordError

    with pytest.raises(BadRecordError) as refused:
        page_from_json(json.dumps(record))
    assert refused.value.reason == reason


def test_states_made_before_the_setting_keep_every_fetch() -> None:
    stored = json.loads(Settings().to_json())
    del stored["versions"]
    assert Settings.from_json(json.dumps(stored)).versions == "all"


def test_a_copy_stands_for_the_departed_page_it_copies() -> None:
    """Page A and its exact copy B; A changes. B is now the page later near-duplicates
    join (through A's postings, which lead to B), and a copy of B's content joins B."""
    rng = np.random.default_rng(11)
    words = random_text(rng, 150)
    text, near = " ".join(words), edit_text(rng, words, 0.02)
    other = " ".join(random_text(rng, 150))
    with State.open(None, LATEST) as state:
        detector = Detector(state)
        detector.process([Page(URLS[0], text, at_second(1)), Page(URLS[1], text, at_second(2))])
        detector.process([Page(URLS[0], other, at_second(3))])
        assert _clusters(state) == set()
        detector.process([Page(URLS[2], near, at_second(4)), Page(URLS[3], text, at_second(5))])
        assert _clusters(state) == {(URLS[1], URLS[2], URLS[3])}
        detector.process([Page(URLS[1], "", at_second(6), status="deleted")])
        assert _clusters(state) == {(URLS[2], URLS[3])}
        fresh = {URLS[0]: other, URLS[2]: near, URLS[3]: text}
    with State.open(None, LATEST) as state:
        Detector(state).process([Page(url, body, at_second(9)) for url, body in fresh.items()])
        assert _clusters(state) == {(URLS[2], URLS[3])}


def test_a_version_fetched_again_after_it_departed_is_found_again() -> None:
    """Untimed fetches follow their arrival: A's first content departs (its copy B stands
    for it), comes back, and B changes; A then stands for its content again, and a near
    duplicate of it joins A."""
    rng = np.random.default_rng(12)
    words = random_text(rng, 150)
    text, near = " ".join(words), edit_text(rng, words, 0.02)
    other, third = " ".join(random_text(rng, 150)), " ".join(random_text(rng, 150))
    with State.open(None, LATEST) as state:
        detector = Detector(state)
        for url, body in [(0, text), (1, text), (0, other), (0, text), (1, third), (2, near)]:
            detector.process([Page(URLS[url], body)])
        assert _clusters(state) == {(URLS[0], URLS[2])}


def test_departed_versions_are_kept_for_days_of_event_time() -> None:
    """``keep_versions_days``: a departed version is forgotten once a batch holds a fetch
    that many days after it departed (event time, never the clock); 0 keeps it."""
    rng = np.random.default_rng(13)
    texts = [" ".join(random_text(rng, 120)) for _ in range(4)]
    first = Page(URLS[0], texts[0], "2026-03-01T00:00:00Z")
    later = [
        [Page(URLS[0], texts[1], "2026-03-02T00:00:00Z")],  # the first version departs
        [Page(URLS[1], texts[2], "2026-03-31T00:00:00Z")],  # 29 days after
        [Page(URLS[2], texts[3], "2026-04-02T00:00:00Z")],  # 31 days after
    ]
    for days, kept in ((30, [True, True, False]), (0, [True, True, True])):
        mode = Settings(keep_versions_days=days)
        old = Preparer(mode).prepare([first])[0].doc_id
        with State.open(None, mode) as state:
            detector = Detector(state)
            detector.process([first])
            found = []
            for batch in later:
                detector.process(batch)
                found.append(state.view().kept.get(old) is not None)
            assert found == kept
            times = sum(1 for _ in state.store.items("departures"))
            assert times == (0 if days else 1)
