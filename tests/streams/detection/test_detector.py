"""Invariants of the detection pipeline, as properties."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import Page, Preparer, Settings
from neardup.state import State
from neardup.streams import ClusterMerged, Detector, Duplicate
from neardup.streams.detection import METHODS

from tests.helpers import VOCABULARY, family_pages, merge_edges, partition


@given(
    st.integers(2, 12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=20),
        )
    ),
    st.randoms(use_true_random=False),
)
def test_union_find_partition_and_ids_do_not_depend_on_edge_order(
    graph: tuple[int, list[tuple[int, int]]], random: object
) -> None:
    count, edges = graph
    shuffled = list(edges)
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    results = []
    for order in (edges, shuffled):
        with State.open(None) as state:
            view = state.view()
            merge_edges(view, count, order)
            clusters = view.clusters
            groups = {doc: clusters.find(doc) for doc in range(1, count + 1)}
            results.append(groups)
            sizes = {root: clusters.info(root).size for root in set(groups.values())}
            assert sum(sizes.values()) == count  # a partition: every document exactly once
            for root, size in sizes.items():
                assert size == sum(1 for r in groups.values() if r == root)
                assert root == min(
                    doc for doc, r in groups.items() if r == root
                )  # the oldest keeps the id
    assert results[0] == results[1]


def _run(
    pages: list[Page], batch_size: int = 7, settings: Settings | None = None
) -> tuple[set[frozenset[str]], list[object]]:
    with State.open(None, settings) as state:
        detector = Detector(state)
        events: list[object] = []
        for start in range(0, len(pages), batch_size):
            events.extend(detector.process(pages[start : start + batch_size]).events)
        return partition(state), events


@given(st.integers(0, 10_000), st.randoms(use_true_random=False), st.integers(1, 40))
def test_arrival_order_and_batching_do_not_change_clusters(
    seed: int, random: object, batch: int
) -> None:
    pages = family_pages(seed)
    shuffled = list(pages)
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    assert _run(pages)[0] == _run(shuffled, batch)[0]


@given(st.integers(0, 10_000))
def test_reingest_adds_nothing(seed: int) -> None:
    pages = family_pages(seed, families=4)
    with State.open(None) as state:
        detector = Detector(state)
        first = detector.process(pages)
        before = partition(state)
        again = detector.process(pages + pages[:3])
        assert again.events == () and again.documents == 0 and again.repeats == len(pages) + 3
        assert partition(state) == before
        assert first.documents == len(pages)


@given(st.integers(0, 1000), st.randoms(use_true_random=False))
def test_a_page_twice_in_one_batch_is_one_document(seed: int, rng: object) -> None:
    pages = family_pages(seed, families=3, size=3)
    repeated = [*pages, *rng.sample(pages, 4)]  # type: ignore[attr-defined]
    rng.shuffle(repeated)  # type: ignore[attr-defined]
    once = sorted(set(repeated), key=repeated.index)  # first deliveries, in arrival order
    with State.open(None) as plain, State.open(None) as doubled:
        expected = Detector(plain).process(once)
        found = Detector(doubled).process(repeated)
        assert (found.documents, found.repeats) == (len(once), len(repeated) - len(once))
        assert [e.to_json() for e in found.events] == [e.to_json() for e in expected.events]
        assert partition(doubled) == partition(plain)


def test_a_bridging_document_merges_two_clusters_into_the_older() -> None:
    words = [f"word{i}" for i in range(60)]
    pages = [
        Page("https://a/1", " ".join(words[:35]), "2026-01-01T00:00:00Z"),
        Page("https://b/1", " ".join(words[25:]), "2026-01-02T00:00:00Z"),
        Page("https://b/2", " ".join(words[25:]) + " end", "2026-01-03T00:00:00Z"),
        Page("https://c/1", " ".join(words), "2026-01-04T00:00:00Z"),  # resembles both at 0.55
    ]
    # every fetch a document: its id is its url's and fetched_at's (``Page.doc_id``)
    clusters, events = _run(pages, settings=Settings(threshold=0.3, versions="all"))
    assert clusters == {frozenset(p.url for p in pages)}
    merges = [e for e in events if isinstance(e, ClusterMerged)]
    assert len(merges) == 1
    a, b = pages[0].doc_id, pages[1].doc_id
    assert (merges[0].cluster, merges[0].retired, merges[0].size) == (a, b, 4)
    joined = [e for e in events if isinstance(e, Duplicate) and e.doc.url == "https://c/1"]
    assert joined[0].cluster == a and joined[0].method == "near"


def test_each_batch_counts_the_candidates_and_pairs_it_estimated() -> None:
    words = [f"term{i}" for i in range(600)]
    pages = [
        Page("https://a/1", " ".join(words[:300]), "2026-01-01T00:00:00Z"),
        Page("https://a/2", " ".join([*words[:299], "changed"]), "2026-01-02T00:00:00Z"),
        Page("https://u/1", " ".join(words[300:]), "2026-01-03T00:00:00Z"),  # shares nothing
        Page("https://a/3", " ".join(words[:300]), "2026-01-04T00:00:00Z"),  # an exact copy
    ]
    with State.open(None) as state:
        detector = Detector(state)
        work = [
            (result.candidates, result.pairs_estimated)
            for result in (detector.process([page]) for page in pages)
        ]
        # the near copy meets its original; the unrelated page meets nothing, and an exact
        # copy is matched by its fingerprint before any index is asked
        assert work == [(0, 0), (1, 1), (0, 0), (0, 0)]
        counters = state.view().counters
        assert (counters.get("candidates"), counters.get("pairs_estimated")) == (1, 1)
    with State.open(None) as state:  # within one batch, the earlier page is a candidate too
        one_batch = Detector(state).process(pages)
        assert (one_batch.candidates, one_batch.pairs_estimated) == (1, 1)


def test_identical_canonical_and_shingle_equivalent_shortcuts() -> None:
    text = "The quick brown fox jumps over the lazy dog near the river bank today"
    pages = [
        Page("https://o/1", text, "2026-01-01T00:00:00Z"),
        Page("https://o/2", text, "2026-01-02T00:00:00Z"),
        Page(
            "https://o/3",
            "<html><body><p>" + text.upper() + "!</p></body></html>",
            "2026-01-03T00:00:00Z",
        ),
        Page("https://o/4", text + " the quick brown fox jumps", "2026-01-04T00:00:00Z"),
        Page("https://r/1", "la " * 7, "2026-01-05T00:00:00Z"),
        Page("https://r/2", "la " * 6, "2026-01-06T00:00:00Z"),  # the same single shingle
    ]
    _, events = _run(pages)
    methods = {e.doc.url: e.method for e in events if isinstance(e, Duplicate)}
    assert methods == {
        "https://o/2": "exact",
        "https://o/3": "canonical",
        "https://o/4": "near",
        "https://r/2": "shingle",
    }


@given(st.integers(0, 10_000), st.sampled_from([0.5, 0.7]))
def test_no_short_pair_at_or_above_the_threshold_is_lost(seed: int, threshold: float) -> None:
    # Short pages over shared boilerplate: many pairs meet in the short-document index, and
    # those at or above T must survive the prefix and shared-key filters.
    rng = np.random.default_rng(seed)
    blocks = [" ".join(rng.choice(VOCABULARY[:50], size=int(rng.integers(5, 30)))) for _ in "ab"]
    pages = []
    for index in range(40):
        body = rng.choice(VOCABULARY[: int(rng.integers(20, 400))], size=int(rng.integers(3, 60)))
        if index % 2 and pages:  # an edited copy of an earlier body
            earlier = pages[int(rng.integers(0, len(pages)))].content.split()
            body = np.array(earlier[: int(rng.integers(len(earlier) // 2, len(earlier) + 1))])
        text = f"{blocks[index % 2]} {' '.join(body)}"
        pages.append(Page(f"https://s.example/{index}", text, "2026-03-01T10:00:00.000000Z"))
    settings = Settings(threshold=threshold)
    with State.open(None, settings) as state:
        Detector(state).process(pages)
        together = {url: group for group in partition(state) for url in group}
        prepared = Preparer(settings).prepare(pages)
        for first in prepared:
            for second in prepared:
                a, b = set(first.sketch.values.tolist()), set(second.sketch.values.tolist())
                assert first.sketch.complete and second.sketch.complete
                if a and b and len(a & b) >= threshold * len(a | b) - 1e-9:
                    assert second.page.url in together.get(first.page.url, {first.page.url})


def test_a_short_page_and_a_longer_one_resembling_it_meet_through_super_shingles() -> None:
    # 80 words (76 shingles: short, in the short-document index) and the same with 30 more
    # (106 shingles: not short). Only documents from T * short_limit = 50 shingles up can be
    # such a pair, and those are banded: J = 76 / 106 = 0.72 is found.
    rng = np.random.default_rng(3)
    words = [str(w) for w in rng.choice(VOCABULARY, size=110)]
    pages = [
        Page("https://p/short", " ".join(words[:80]), "2026-03-01T10:00:00.000000Z"),
        Page("https://p/long", " ".join(words), "2026-03-01T10:00:01.000000Z"),
    ]
    settings = Settings()
    short, longer = Preparer(settings).prepare(pages)
    assert short.shingle_count < settings.short_limit <= longer.shingle_count
    assert len(short.super_shingles) == settings.band_count and len(longer.shingle_keys) == 0
    assert _run(pages)[0] == {frozenset({"https://p/short", "https://p/long"})}


def test_the_batch_result_is_what_the_counters_summary_and_kafka_detector_report() -> None:
    from neardup.core.prepared_codec import encode_batch
    from neardup.streams.kafka.log_detector import LogDetector
    from neardup.streams.running.run_summary import RunSummary

    pages = family_pages(11, families=4, size=4)
    exact = Page("https://copy.example/0", pages[0].content, pages[0].fetched_at)
    upper = Page("https://copy.example/1", pages[1].content.upper(), pages[1].fetched_at)
    batch = [*pages, exact, upper, pages[2]]  # near duplicates, two twins, one repeat
    settings = Settings()
    prepared = Preparer(settings).prepare(batch)
    with State.open(None, settings) as state, State.open(None, settings) as logged:
        result = Detector(state).ingest(prepared)
        staged = LogDetector(logged, "log").stage([(0, encode_batch(prepared, settings))])
        counters = state.view().counters
        stored = {name: counters.get(name) for name in result.counter_increments()}
        summary = RunSummary()
        summary.add(result)
    events = result.events
    assert result.repeats == 1 and result.documents == len(batch) - 1
    by_method = {
        m: sum(isinstance(e, Duplicate) and e.method == m for e in events) for m in METHODS
    }
    assert dict(result.duplicates_by_method) == by_method
    assert by_method["exact"] and by_method["canonical"] and by_method["near"]
    assert result.duplicates == sum(isinstance(e, Duplicate) for e in events)
    assert result.merges == sum(isinstance(e, ClusterMerged) for e in events)
    assert result.candidates >= result.pairs_estimated > 0
    assert stored == result.counter_increments()
    assert (summary.records, summary.documents, summary.repeats) == (
        len(batch),
        result.documents,
        result.repeats,
    )
    assert (summary.duplicates, summary.merges) == (result.duplicates, result.merges)
    assert (summary.candidates, summary.pairs_estimated) == (
        result.candidates,
        result.pairs_estimated,
    )
    assert staged.result.counter_increments() == result.counter_increments()
    assert [e.to_json() for e in staged.result.events] == [e.to_json() for e in events]
