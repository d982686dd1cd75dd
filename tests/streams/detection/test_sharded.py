"""Detection split into shards and a union stage finds what the embedded detector finds: the
same events, in the same order, the same clusters and counts, for any number of shards.

Each shard caps its own posting lists, so the equality holds exactly whenever no list of the
embedded run reaches its cap (these corpora stay under it); ``ShardedDetector`` with one
shard is the embedded detector's code path in every case.
"""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from neardup.core import Estimate, Page, Preparer, Settings, StateError
from neardup.state import State
from neardup.streams.detection import Detector
from neardup.streams.detection.admission import Admission, Twin
from neardup.streams.detection.events import Duplicate
from neardup.streams.detection.shard import Ownership, ShardFindings
from neardup.streams.detection.sharded import ShardedDetector
from neardup.streams.detection.union import DocHead, union_stage

from tests.helpers import VOCABULARY, family_pages, partition


def _corpus(seed: int) -> list[Page]:
    """Near-duplicate families, plus what exercises every verdict: exact, canonical and
    shingle-set copies, copies of copies, excerpts, short pages, and redeliveries (one with
    other content under the same url and fetched_at)."""
    rng = np.random.default_rng(seed)
    pages = family_pages(seed, families=8, size=6, words=300)
    extra: list[Page] = []
    for i, page in enumerate(rng.choice(len(pages), 6, replace=False).tolist()):
        original = pages[page]
        copy = Page(f"https://copy{i}.example/", original.content, f"2026-04-01T00:00:0{i}Z")
        upper = Page(f"https://upper{i}.example/", original.content.upper(), copy.fetched_at)
        again = Page(f"https://again{i}.example/", copy.content, "2026-04-02T00:00:00Z")
        words = original.content.split()
        part = Page(
            f"https://part{i}.example/",
            " ".join(words[: max(3, len(words) // 3)]),
            "2026-04-03T00:00:00Z",
        )
        extra += [copy, upper, again, part]
    extra += [
        Page(f"https://short{i}.example/", " ".join(rng.choice(VOCABULARY, 6)), "")
        for i in range(4)
    ]
    redelivered = [dataclasses.replace(extra[0], content="other words entirely " * 5), pages[3]]
    mixed = pages + extra + redelivered
    order = rng.permutation(len(mixed))
    return [mixed[i] for i in order.tolist()]


def _batches(pages: list[Page], size: int, settings: Settings) -> list[list]:  # type: ignore[type-arg]
    preparer = Preparer(settings)
    return [preparer.prepare(pages[i : i + size]) for i in range(0, len(pages), size)]


#: the min-hash mode, with containment events, and SimHash mode
_MODES = [Settings(), Settings(containment_threshold=0.5), Settings(sketch="simhash")]


@hypothesis_settings(max_examples=15)
@given(st.integers(0, 10_000), st.integers(1, 4), st.integers(1, 17), st.sampled_from(_MODES))
def test_shards_and_union_find_what_the_embedded_detector_finds(
    seed: int, shards: int, batch: int, settings: Settings
) -> None:
    batches = _batches(_corpus(seed), batch, settings)
    with State.open(None, settings) as embedded:
        detector = Detector(embedded)
        expected = [detector.ingest(docs) for docs in batches]
        expected_clusters = partition(embedded)
        expected_counts = embedded.view().counters.with_prefix("")
    states = [State.open(None, settings) for _ in range(shards)]
    with State.open(None, settings) as union:
        sharded = ShardedDetector(states, union)
        found = [sharded.ingest(docs) for docs in batches]
        assert found == expected  # events, in order, and every count of every batch
        assert partition(union) == expected_clusters
        counts = union.view().counters.with_prefix("")
        for name in ("documents", "repeats", "duplicates", "cluster_merges", "clusters"):
            assert counts.get(name, 0) == expected_counts.get(name, 0), name
        # each document's sketch is kept by its own shard and by no other
        kept = [{key for key, _ in state.store.items("docs")} for state in states]
        assert sum(map(len, kept)) == counts["documents"]
        for index, keys in enumerate(kept):
            ownership = Ownership(index, shards)
            assert all(ownership.keeps(int.from_bytes(key, "big")) for key in keys)
    for state in states:
        state.close()


def test_shards_share_the_work() -> None:
    """With two shards each keeps about half of the documents, sketches and index keys."""
    settings = Settings()
    batches = _batches(family_pages(7, families=40, size=5), 25, settings)
    states = [State.open(None, settings) for _ in range(2)]
    with State.open(None, settings) as union:
        sharded = ShardedDetector(states, union)
        for docs in batches:
            sharded.ingest(docs)
        documents = [sum(1 for _ in state.store.items("docs")) for state in states]
        postings = [sum(1 for _ in state.store.items("supershingles")) for state in states]
    assert sum(documents) == 200 and min(documents) > 70
    assert min(postings) > 0.35 * sum(postings)
    for state in states:
        state.close()


def test_shards_with_other_settings_are_refused() -> None:
    with (
        State.open(None, Settings()) as shard,
        State.open(None, Settings(threshold=0.7)) as union,
        pytest.raises(Exception, match="shard 0 was built with other settings"),
    ):
        ShardedDetector([shard], union)


def test_an_ownership_outside_its_shards_is_refused() -> None:
    with pytest.raises(ValueError, match="index=2, shards=2"):
        Ownership(2, 2)


def test_the_union_stage_refuses_a_twin_of_a_document_it_does_not_hold() -> None:
    heads = [DocHead(1, "https://a.example/", "", 10), DocHead(2, "https://b.example/", "", 10)]
    with State.open(None) as state:
        found = ShardFindings((Admission.NEW, Twin(1, "exact", 1)), ((), ()), ((), ()))
        assert len(union_stage(state.view(), heads, [found], keep_records=True).events) == 1
        missing = ShardFindings((Admission.NEW, Twin(7, "exact", 7)), ((), ()), ((), ()))
        with pytest.raises(StateError, match="missing document 0000000000000007"):
            union_stage(state.view(), heads, [missing], keep_records=True)


def test_the_events_and_estimates_of_a_batch_are_not_tracked_by_the_garbage_collector() -> None:
    # they live through a batch and would reach the collector's oldest generation, whose full
    # passes walk every object there (a tenth of the union stage's time as dataclasses)
    settings = Settings()
    with State.open(None, settings) as state:
        detector = Detector(state)
        events = [
            e for batch in _batches(_corpus(5), 16, settings) for e in detector.ingest(batch).events
        ]
    assert any(isinstance(event, Duplicate) for event in events)
    refs = [
        getattr(event, name)
        for event in events
        for name in ("doc", "match", "cluster_root")
        if hasattr(event, name)
    ]
    assert refs and not any(gc.is_tracked(o) for o in [*events, *refs])
    assert not gc.is_tracked(Estimate(0.9, 0.9, 0.9, False))
    assert not gc.is_tracked(Twin(1, "exact", 1))


def test_a_batch_of_repeats_only_adds_nothing_to_the_union_stage() -> None:
    heads = [DocHead(1, "https://a.example/", "", 10), DocHead(2, "https://b.example/", "", 10)]
    with State.open(None) as state:
        view = state.view()
        repeats = ShardFindings((Admission.REPEAT, Admission.REPEAT), ((), ()), ((), ()))
        result = union_stage(view, heads, [repeats], keep_records=True)
        assert (result.documents, result.repeats, result.events) == (0, 2, ())
        view.commit()
        assert list(state.store.items("docs")) == [] and list(state.store.items("urls")) == []
