"""SimHash mode (``Settings(sketch="simhash")``) through the state and the detector: every pair
within the distance meets through the state's table index, the pairs the detector joins are
exactly those within the distance that pass the verifier, events and queries say how far
apart a pair is, and the queries answer in the mode."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from neardup.core import Page, PreparedDoc, Preparer, Settings, estimate
from neardup.core.simhash_tables import default_tables, index_keys
from neardup.state import State
from neardup.streams import Detector
from neardup.streams.detection.events import Duplicate
from neardup.streams.detection.simhash import (
    SIMHASH_DISTANCE,
    simhash_candidates,
    simhash_query_candidates,
)
from neardup.streams.running import queries
from neardup.streams.running.reports import similar_to_content

from tests.helpers import edit_text, partition, random_text

SIMHASH = Settings(sketch="simhash")
_TEMPLATE = Preparer(SIMHASH).prepare([Page("https://t.example/", "some words to sketch")])[0]
HASHES = st.integers(0, 2**64 - 1)


def _doc(doc_id: int, simhash: int) -> PreparedDoc:
    """A document that is only its SimHash (and the template's shingle count)."""
    keys = index_keys(np.array([simhash], np.uint64), default_tables())[0]
    return dataclasses.replace(_TEMPLATE, doc_id=doc_id, simhash=simhash, simhash_keys=keys)


@st.composite
def _fingerprints(draw: st.DrawFn) -> list[int]:
    """Some SimHashes, and variants of them with up to k + 2 bits flipped."""
    bases = draw(st.lists(HASHES, min_size=1, max_size=6))
    flipped = []
    for base in bases:
        for _ in range(draw(st.integers(0, 4))):
            bits = draw(st.sets(st.integers(0, 63), max_size=SIMHASH_DISTANCE + 2))
            flipped.append(base ^ sum(1 << bit for bit in bits))
    return draw(st.permutations(bases + flipped))


@hypothesis_settings(max_examples=60, deadline=None)
@given(_fingerprints(), st.integers(1, 7))
def test_every_pair_within_the_distance_meets_through_the_state_index(
    simhashes: list[int], batch: int
) -> None:
    docs = [_doc(1000 + i, h) for i, h in enumerate(simhashes)]
    met: dict[int, set[int]] = {}
    with State.open(None, SIMHASH) as state:  # a writer's state: its key filter is used
        for start in range(0, len(docs), batch):
            view = state.view()
            chunk = docs[start : start + batch]
            for doc, found in zip(chunk, simhash_candidates(view, chunk, SIMHASH), strict=True):
                met[doc.doc_id] = found
            view.commit()
        view = state.view()
        for i, j in itertools.combinations(range(len(docs)), 2):
            earlier, later = docs[i], docs[j]
            if (earlier.simhash ^ later.simhash).bit_count() <= SIMHASH_DISTANCE:
                assert earlier.doc_id in met[later.doc_id]
                # a query meets every stored page within the distance, and posts nothing
                query = _doc(1, later.simhash)
                assert {earlier.doc_id, later.doc_id} <= simhash_query_candidates(view, query)
        assert sum(1 for _ in state.store.items("simhashes")) == len(
            {int(k) for d in docs for k in d.simhash_keys}
        )


def _pages(seed: int) -> list[Page]:
    """Families of a page and its copies edited at 0 to 10 % of their words: unrelated words
    (no function words), so only the lightest edits are within the distance."""
    rng = np.random.default_rng(seed)
    pages = []
    for family in range(8):
        words = random_text(rng, int(rng.integers(20, 400)))
        for member, rate in enumerate((0.0, 0.003, 0.01, 0.01, 0.03, 0.1)):
            text = edit_text(rng, words, rate) if rate else " ".join(words)
            pages.append(Page(f"https://f{family}.example/{member}", text, ""))
    return [pages[i] for i in rng.permutation(len(pages)).tolist()]


@hypothesis_settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_the_clusters_are_the_pairs_within_the_distance_that_pass_the_verifier(seed: int) -> None:
    pages = _pages(seed)
    docs = Preparer(SIMHASH).prepare(pages)
    with State.open(None, SIMHASH) as state:
        result = Detector(state).ingest(docs)
        clusters = partition(state)
    cluster_of = {url: cluster for cluster in clusters for url in cluster}
    joined = set()
    for a, b in itertools.combinations(docs, 2):
        if not (a.shingle_count and b.shingle_count):
            continue
        small, large = sorted((a.shingle_count, b.shingle_count))
        if (a.simhash ^ b.simhash).bit_count() > SIMHASH_DISTANCE or small < 0.7 * large:
            continue
        if estimate(a.sketch, b.sketch).resemblance >= 0.7:
            joined.add(frozenset((a.page.url, b.page.url)))
            assert cluster_of[a.page.url] == cluster_of[b.page.url]
    # and nothing else: each cluster is connected by those pairs (or exact copies)
    copies = {
        frozenset((d.page.url, e.page.url))
        for d, e in itertools.combinations(docs, 2)
        if d.fingerprints.raw == e.fingerprints.raw
    }
    for cluster in clusters:
        reached, todo = set(), [next(iter(cluster))]
        while todo:
            url = todo.pop()
            reached.add(url)
            todo += [
                other for other in cluster - reached if frozenset((url, other)) in joined | copies
            ]
        assert reached == cluster
    for event in result.events:
        if isinstance(event, Duplicate) and event.method == "simhash":
            assert event.distance is not None and event.distance <= SIMHASH_DISTANCE
            assert event.resemblance >= 0.7
            assert event.to_json()["distance"] == event.distance
    assert result.duplicates_by_method["simhash"] > 0
    assert result.duplicates_by_method["near"] == 0


def test_a_min_hash_duplicate_event_has_no_distance() -> None:
    with State.open(None, Settings()) as state:
        events = Detector(state).process(_pages(3)).events
    near = [e for e in events if isinstance(e, Duplicate) and e.method == "near"]
    assert near and all(e.distance is None and "distance" not in e.to_json() for e in near)


def test_queries_answer_in_simhash_mode_with_the_distance() -> None:
    rng = np.random.default_rng(4)
    words = random_text(rng, 300)
    one_word = [*words[:150], "changed", *words[151:]]
    pages = [
        Page("https://a.example/1", " ".join(words), "2026-01-01T00:00:00Z"),
        Page("https://a.example/1", " ".join(one_word), "2026-02-01T00:00:00Z"),
        Page("https://b.example/moved", " ".join(one_word), "2026-02-01T00:00:00Z"),
        Page("https://c.example/other", " ".join(random_text(rng, 300)), ""),
    ]
    archive = Settings(sketch="simhash", versions="all")  # lost and found sees every fetch
    with State.open(None, archive) as state:
        Detector(state).process(pages)
        edited = Page("https://new.example/", " ".join([*words[:299], "last"]), "")
        found = similar_to_content(state, edited, limit=5, floor=0.0)
        # every stored page within the distance that keeps its sketch (the moved copy is a
        # twin of the second version), with its distance
        stored = Preparer(archive).prepare([edited, *pages[:2], pages[3]])
        asked, kept = stored[0], stored[1:]
        distances = {
            f"{d.doc_id:016x}": (d.simhash ^ asked.simhash).bit_count()
            for d in kept
            if (d.simhash ^ asked.simhash).bit_count() <= SIMHASH_DISTANCE
        }
        assert distances and {m["id"]: m["distance"] for m in found} == distances
        assert all(m["method"] == "near" for m in found)
        lost = queries.lost_and_found(state, "https://a.example/1", limit=5)
        assert [m["url"] for m in lost["found"]] == ["https://b.example/moved"]
        assert lost["found"][0]["distance"] == 0  # the same words
        versions = queries.history(state, "https://a.example/1")["versions"]
        assert versions[0]["cluster"] == versions[1]["cluster"]
        assert 0 < versions[1]["distance_to_previous"] <= SIMHASH_DISTANCE
        assert versions[1]["resemblance_to_previous"] >= 0.7
