"""The union-find values a writer's state keeps decoded between transactions (``committed.py``)
must always be what the store holds: after a view dropped uncommitted, a restart on the same
directory, a restore from a checkpoint, and with a cache too small to hold them all."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from neardup.core import Page, Preparer, Settings
from neardup.core.prepared_codec import encode_batch
from neardup.state import Checkpoints, DocRecord, State
from neardup.state.committed import CommittedCache
from neardup.streams.detection.shard import Ownership
from neardup.streams.kafka.findings_codec import encode_findings
from neardup.streams.kafka.shard_log import ShardLog
from neardup.streams.kafka.union_log import UnionLog

from bench.corpus import generate

LOG, FINDINGS = "log", "findings"


def _put(state: State, *doc_ids: int) -> None:
    view = state.view()
    for doc_id in doc_ids:
        view.documents.put(doc_id, DocRecord(f"u{doc_id}", "", 1, np.zeros(0, np.uint32)))
        view.clusters.add_singles([doc_id])
    view.commit()


def _merged(state: State, survivor: int, retired: int, commit: bool) -> None:
    view = state.view()
    clusters = view.clusters
    clusters.merge(clusters.find(survivor), clusters.find(retired))
    if commit:
        view.commit()


def test_a_view_dropped_uncommitted_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    with State.open(tmp_path / "state") as state:
        _put(state, 1, 2, 3, 4)
        _merged(state, 1, 2, commit=True)
        _merged(state, 1, 3, commit=False)  # a staged batch discarded
        _merged(state, 4, 1, commit=False)
        view = state.view()
        assert view.clusters.find(3) == 3
        assert view.clusters.find(2) == 1
        assert view.clusters.info(1).size == 2
        assert view.clusters.members_of(1) == ([1, 2], None)
        assert view.clusters.members_of(3) == ([3], None)
        view.clusters.merge(4, 3)
        view.commit()
    with State.open(tmp_path / "state") as reopened:  # the store says the same
        view = reopened.view()
        assert [view.clusters.find(d) for d in (1, 2, 3, 4)] == [1, 1, 4, 4]
        assert view.clusters.members_of(4) == ([4, 3], None)


def _findings(config: Settings) -> list[bytes]:
    """Findings messages of one shard over a corpus whose clusters also merge."""
    preparer = Preparer(config)
    pages = [Page(p.url, p.content, p.fetched_at, p.content_type) for p in generate(1500, 3)]
    found: list[bytes] = []
    with State.open(None, config) as shard_state:
        shard = ShardLog(shard_state, Ownership(0, 1), LOG)
        for offset, at in enumerate(range(0, len(pages), 50)):
            batch = encode_batch(preparer.prepare(pages[at : at + 50]), config)
            staged = shard.stage([(offset, batch)])
            shard.commit(staged)
            found += [encode_findings(message) for message in staged.messages]
    return found


def _events(union: UnionLog, findings: list[bytes], start: int, end: int) -> list[object]:
    """Apply the findings from ``start`` to ``end`` two at a time; their events."""
    events: list[object] = []
    for at in range(start, end, 2):
        for position in range(at, min(at + 2, end)):
            union.add(position, findings[position])
        staged = union.stage()
        if staged is not None:
            union.commit(staged)
            events += [event.to_json() for event in staged.result.events]
    return events


def test_the_union_stage_gives_the_same_events_through_discards_restarts_and_restores(
    tmp_path: Path,
) -> None:
    config = Settings(containment_threshold=0.5)
    findings = _findings(config)
    end = len(findings)
    with State.open(tmp_path / "whole", config) as whole:
        expected = _events(UnionLog(whole, 1, LOG, FINDINGS), findings, 0, end)
    assert any(event["type"] == "cluster_merged" for event in expected)  # type: ignore[index]

    third, half = end // 3, end // 2
    checkpoints = Checkpoints(tmp_path / "checkpoints", "union")
    path = tmp_path / "union"
    with State.open(path, config) as state:
        union = UnionLog(state, 1, LOG, FINDINGS)
        events = _events(union, findings, 0, third)
        checkpoints.write(state, union.next_offset)
        for position in range(third, half):  # staged, then discarded: a crash before commit
            union.add(position, findings[position])
        assert union.stage() is not None
        union = UnionLog(state, 1, LOG, FINDINGS)  # the same state, as a restarted stage
        events += _events(union, findings, union.resume, half)
    with State.open(path, config) as state:  # reopened: a restart on its directory
        union = UnionLog(state, 1, LOG, FINDINGS)
        events += _events(union, findings, union.resume, end)
    assert events == expected

    assert checkpoints.restore(tmp_path / "restored") is not None
    with State.open(tmp_path / "restored", config) as restored:
        union = UnionLog(restored, 1, LOG, FINDINGS)
        assert union.resume == third
        after = _events(union, findings, third, end)
    assert after == expected[len(expected) - len(after) :]

    with State.open(tmp_path / "small", config, cache_entries=4) as small:  # evicting
        assert _events(UnionLog(small, 1, LOG, FINDINGS), findings, 0, end) == expected


def test_a_read_that_straddles_a_commit_is_not_kept_and_the_cache_stays_bounded() -> None:
    cache = CommittedCache(entries=4)
    before = cache.generation
    cache.apply({"nodes": {1: 10}}, before)  # a writer commits while a reader reads key 2
    cache.fill("nodes", 2, 20, before)
    assert 2 not in cache.table("nodes")
    cache.fill("nodes", 2, 20, cache.generation)
    assert cache.table("nodes") == {1: 10, 2: 20}
    cache.apply({"nodes": dict.fromkeys(range(3, 9), 0)}, cache.generation)
    assert len(cache.table("nodes")) <= 4
    assert 8 in cache.table("nodes")  # the newest stay
    follower = CommittedCache(entries=0)
    follower.fill("nodes", 1, 10, follower.generation)
    follower.apply({"nodes": {2: 20}}, follower.generation)
    assert follower.table("nodes") == {}


def test_a_view_that_another_commit_overtook_passes_nothing_on() -> None:
    stored = {1: 10}
    cache = CommittedCache(entries=16)
    first, second = cache.view(), cache.view()
    early = first.table("nodes", stored.get)
    assert early[1] == 10
    early[5] = 50
    late = second.table("nodes", stored.get)
    late[1] = stored[1] = 11
    second.commit()
    assert cache.table("nodes") == {1: 11}
    first.commit()  # its read of key 1 is stale, and its write is not told from its reads
    assert cache.table("nodes") == {}
    assert cache.view().table("nodes", stored.get)[1] == 11
    third = cache.view()
    third.table("nodes", stored.get)[7] = 70
    third.commit()  # no commit in between: what it knows is committed
    assert cache.table("nodes") == {1: 11, 7: 70}


def test_a_cached_table_reads_each_key_once_and_get_reads_it_too() -> None:
    loads: list[int] = []

    def load(key: int) -> int | None:
        loads.append(key)
        return key * 10 if key % 2 else None

    cache = CommittedCache(entries=16)
    table = cache.view().table("nodes", load)
    assert table.get(1) == 10  # not dict.get's None for a key the view has not read yet
    assert table[1] == 10
    assert table[2] is None and table.get(2) is None  # absent from the store
    assert loads == [1, 2]
    assert cache.table("nodes") == {1: 10, 2: None}  # for the views after this one
    table[3] = 30
    assert table[3] == 30 and loads == [1, 2]  # a view reads its own writes
    assert 3 not in cache.table("nodes")  # not committed
