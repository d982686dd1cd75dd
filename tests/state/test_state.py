"""The state's tables: settings, codec round trips, posting indexes, union-find, documents."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from neardup.core import IncompatibleStateError, Settings, StateError
from neardup.core.records import format_fetched_at
from neardup.state import (
    FORMAT_VERSION,
    TABLES,
    ClusterInfo,
    DocRecord,
    Meetings,
    PostingIndex,
    Postings,
    State,
    StateView,
    StopKey,
    top_stop_keys,
    unpack_samples,
)
from neardup.state.clusters import size_class
from neardup.state.codec import (
    MAX_POSITION,
    SHORT_ENTRY,
    SUPER_ENTRY,
    EntryLayout,
    fetched_at_from_micros,
    fetched_at_to_micros,
)
from neardup.state.rocksdb import RocksDBOptions, RocksDBStore
from rocksdict import Options, Rdict

from tests.helpers import merge_edges


def _add(index: PostingIndex, keys: npt.NDArray[np.uint32], doc_id: int, size: int) -> set[int]:
    """Post one document under each key; the documents that were already there."""
    return index.meet_batch([keys], [doc_id], [size]).met(0)


def test_settings_are_stored_and_incompatible_reopen_is_refused(tmp_path: Path) -> None:
    with State.open(tmp_path / "s", Settings(shingle_size=7)) as state:
        assert state.settings.shingle_size == 7
    with State.open(tmp_path / "s") as state:  # no settings given: the stored ones
        assert state.settings.shingle_size == 7
    with pytest.raises(IncompatibleStateError, match=r"shingle_size: stored 7, requested 5"):
        State.open(tmp_path / "s", Settings())
    with State.open(tmp_path / "s", Settings(shingle_size=7, posting_cap=50)) as state:
        assert state.settings.posting_cap == 50  # not a sketch parameter: may change


def test_a_state_refuses_a_switch_of_sketch(tmp_path: Path) -> None:
    with State.open(tmp_path / "s", Settings(sketch="simhash")) as state:
        assert state.settings.sketch == "simhash"
    with State.open(tmp_path / "s") as state:
        assert state.settings.to_json() == Settings(sketch="simhash").to_json()
    with pytest.raises(IncompatibleStateError, match="sketch: stored 'simhash', requested"):
        State.open(tmp_path / "s", Settings())
    with State.open(tmp_path / "m", Settings()):
        pass
    with pytest.raises(IncompatibleStateError, match="sketch: stored 'minhash', requested"):
        State.open(tmp_path / "m", Settings(sketch="simhash"))


#: the tables each older format lacks
_ADDED_SINCE = {8: ("containment_log", "stopranks"), 9: ("stopranks",)}


@pytest.mark.parametrize("old_format", sorted(_ADDED_SINCE))
def test_an_older_state_is_upgraded_by_a_writer_and_explained_to_a_reader(
    tmp_path: Path, old_format: int
) -> None:
    """Format 9 adds the containment log, empty in a state of format 8; format 10 ranks the
    stop keys, which a writer ranks when it opens an older state. A reader, which cannot add
    tables, says what to do."""
    with State.open(tmp_path / "s", Settings(posting_cap=2)) as state:
        view = state.view()
        # a state of format 8 has containment lists and no log: posted straight into them
        view.containment.lists.post_new([_k("ab")], [1], [0])
        for doc_id in (1, 2, 3):  # "s" stops at the second document, "t" at the third
            _add(view.super_shingles, _k("st" if doc_id < 3 else "s"), doc_id, 0)
        view.commit()
    old = Rdict(
        str(tmp_path / "s"),
        Options(raw_mode=True),
        column_families={table: Options(raw_mode=True) for table in TABLES if table != "default"},
    )
    for table in _ADDED_SINCE[old_format]:
        old.drop_column_family(table)
    old.get_column_family("meta").put(b"format", str(old_format).encode())  # as it wrote it
    old.close()
    del old
    with pytest.raises(StateError, match="open it once with `neardup run`"):
        State.follow(tmp_path / "s")
    with State.open(tmp_path / "s") as state:
        assert state.store.get("meta", b"format") == str(FORMAT_VERSION).encode()
        assert state.view().containment.meet([_k("a")]).met(0) == {1}
    with State.follow(tmp_path / "s") as reader:
        assert reader.view().containment.meet([_k("b")]).met(0) == {1}
        assert [(s.index, s.key, s.documents) for s in top_stop_keys(reader.store, 5)] == [
            ("supershingles", _stored("s"), 3),
            ("supershingles", _stored("t"), 2),
        ]


@given(
    st.text(min_size=1, max_size=50),
    st.datetimes(timezones=st.just(__import__("datetime").UTC)),
    st.integers(0, 10**6),
    st.lists(st.integers(0, 2**32 - 1), max_size=20),
    st.integers(0, 2**64 - 1),
)
def test_doc_record_round_trip(
    url: str, moment: object, count: int, sketch: list[int], twin: int
) -> None:
    fetched_at = format_fetched_at(moment)  # type: ignore[arg-type]
    url = url.encode("utf-8", "replace").decode("utf-8")
    record = DocRecord(url, fetched_at, count, np.array(sketch, dtype=np.uint32), twin)
    back = DocRecord.decode(record.encode())
    assert (back.url, back.fetched_at, back.shingle_count, back.duplicate_of) == (
        url,
        fetched_at,
        count,
        twin,
    )
    assert back.sketch.tolist() == sketch


@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 2**32 - 1), max_size=20), st.integers(0, 1)),
        max_size=8,
    )
)
def test_stored_sketches_decode_together(records: list[tuple[list[int], int]]) -> None:
    raws = [
        DocRecord(f"u{i}", "", len(sketch), np.array(sketch, np.uint32), twin).encode()
        for i, (sketch, twin) in enumerate(records)
    ]
    found = [DocRecord.decode_sketch(raw) for raw in raws]
    assert [None if f is None else f[0] for f in found] == [
        None if twin else len(sketch) for sketch, twin in records
    ]  # a twin keeps no sketch of its own
    kept = [f[1] for f in found if f is not None]
    samples = unpack_samples(kept)
    expected = [sketch for sketch, twin in records if not twin]
    assert samples.lengths.tolist() == [len(sketch) for sketch in expected]
    assert samples.values.dtype == np.uint32
    assert samples.values.tolist() == [v for sketch in expected for v in sketch]


@given(st.lists(st.integers(0, 2**32 - 1), max_size=20, unique=True).map(sorted))
def test_a_record_written_before_the_packing_still_reads(sketch: list[int]) -> None:
    """Records of a state written before sketches were packed keep plain 32-bit values."""
    values = np.array(sketch, np.uint32)
    old = DocRecord.encode_head("u", 5, len(sketch), 0) + values.astype("<u4").tobytes()
    new = DocRecord("u", "", len(sketch), values).encode(5)
    assert len(new) <= len(old) + 7  # a width, a count and the first value
    for raw in (old, new):
        assert DocRecord.decode(raw).sketch.tolist() == sketch
        found = DocRecord.decode_sketch(raw)
        assert found is not None
        assert unpack_samples([found[1]]).values.tolist() == sketch


def test_missing_fetched_at_round_trips() -> None:
    assert fetched_at_from_micros(fetched_at_to_micros("")) == ""
    assert ClusterInfo.decode(ClusterInfo(3, "").encode()) == ClusterInfo(3, "")


def test_posting_entries_round_trip() -> None:
    postings = Postings.decode(
        SUPER_ENTRY.pack(1, 7) + SUPER_ENTRY.pack(2**64 - 1, 255), SUPER_ENTRY
    )
    assert postings.doc_ids.tolist() == [1, 2**64 - 1]
    assert postings.entries["size"].tolist() == [7, 255]
    short = SHORT_ENTRY.pack(7, 40, 3) + SHORT_ENTRY.pack(8, 65535, 300)
    assert Postings.decode(short, SHORT_ENTRY).entries.tolist() == [
        (7, 40, 3),
        (8, 65535, MAX_POSITION),  # a later position is kept as the largest one
    ]
    for layout in (SUPER_ENTRY, SHORT_ENTRY):
        stop = Postings.decode(Postings.stop(12), layout)
        assert stop.stopped and stop.requests == 12
        with pytest.raises(StateError, match="corrupt"):
            Postings.decode(b"\x00" * (layout.dtype.itemsize + 1), layout)


@pytest.mark.parametrize("layout", [SUPER_ENTRY, SHORT_ENTRY], ids=["super", "short"])
def test_entries_packed_at_once_equal_entries_packed_one_by_one(layout: EntryLayout) -> None:
    ids = np.array([1, 2**64 - 1, 7], np.uint64)
    sizes = np.array([0, 5, 255], np.int64)
    positions = np.array([0, 3, 300])  # a later position is kept as the largest one
    assert layout.pack_many(ids, sizes, positions) == b"".join(
        layout.pack(int(i), int(s), int(p)) for i, s, p in zip(ids, sizes, positions, strict=True)
    )
    too_large = np.iinfo(layout.dtype["size"]).max + 1
    with pytest.raises(ValueError, match="does not fit"):
        layout.pack_many(ids[:1], np.array([too_large]), positions[:1])


def _docs(view: StateView, count: int) -> None:
    for doc_id in range(1, count + 1):
        view.documents.put(
            doc_id,
            DocRecord(
                f"u{doc_id}",
                f"2026-01-01T00:00:{doc_id % 60:02d}.000000Z",
                1,
                np.zeros(0, np.uint32),
            ),
        )


def _k(names: str) -> npt.NDArray[np.uint32]:
    """Index keys named by letters (one key per letter)."""
    return np.array([ord(name) for name in names], np.uint32)


def _stored(name: str) -> bytes:
    """The stored form of the key named ``name``."""
    return ord(name).to_bytes(4, "big")


def test_posting_lists_are_capped_into_stop_keys() -> None:
    with State.open(None, Settings(posting_cap=3)) as state:
        view = state.view()
        index = view.super_shingles
        assert _add(index, _k("k"), 1, 0) == set()
        assert _add(index, _k("k"), 2, 0) == {1}
        assert _add(index, _k("k"), 3, 0) == {1, 2}  # third document reaches the cap: key stops
        assert _add(index, _k("k"), 4, 0) == set()
        assert index.candidates(_k("k")) == set()
        view.commit()
        stop = dict(state.store.items("stopkeys"))
        assert int.from_bytes(stop[b"supershingles:" + _stored("k")], "big") == 4
        # ranked once, at its latest count: the rank of 3 went when 4 came
        assert len(list(state.store.items("stopranks"))) == 1
        assert top_stop_keys(state.store, 10) == [StopKey("supershingles", _stored("k"), 4)]
        # one key, counted once as a key and once as a stop key however often it is asked for
        assert view.counters.get("index_keys:supershingles") == 1
        assert view.counters.get("stop_keys:supershingles") == 1


def _rows(met: Meetings, index: int) -> dict[int, tuple[int, int, int, int]]:
    """doc id -> (shared, size, last, last_other) of one document's rows."""
    rows = met.rows(index)
    return {
        int(doc): (int(shared), int(size), int(last), int(other))
        for doc, shared, size, last, other in zip(
            met.doc_ids[rows],
            met.shared[rows],
            met.sizes[rows],
            met.last[rows],
            met.last_other[rows],
            strict=True,
        )
    }


def test_sized_index_counts_shared_keys_sizes_and_positions_in_order() -> None:
    with State.open(None, Settings(posting_cap=3)) as state:
        view = state.view()
        view.short_shingles.meet_batch([_k("ab")], [1], [40])
        view.commit()  # the next documents read document 1 back from the store
        view = state.view()
        index = view.short_shingles
        met = index.meet_batch([_k("abc"), _k("ac")], [2, 3], [50, 60])
        # document 2 met 1 under a and b, the last of them b: 2's key 1, 1's key 1
        assert _rows(met, 0) == {1: (2, 40, 1, 1)}
        # "a" reaches the cap with document 3, which met 1 and 2 there, and 2 again under "c"
        # (3's key 1, 2's key 2)
        assert _rows(met, 1) == {1: (1, 40, 0, 0), 2: (2, 50, 1, 2)}
        assert met.stopped.tolist() == [0, 0]
        assert index.meet_batch([_k("ab")], [4], [70]).stopped.tolist() == [1]
        kept = Postings.decode(view.tx.get("shingles", _stored("c")) or b"", SHORT_ENTRY)
        assert kept.entries.tolist() == [(2, 50, 2), (3, 60, 1)]
        replay = index.meet_batch([_k("c")], [3], [60])  # posted before: meets the same
        assert _rows(replay, 0) == {2: (1, 50, 0, 2)}
        assert _add(index, _k("cd"), 9, 5) == {2, 3}
        with pytest.raises(ValueError, match="needs keys and a size per document"):
            index.meet_batch([_k("a")], [5], [])


def test_meeting_a_batch_is_adding_its_documents_one_by_one() -> None:
    keys = [_k("xy"), _k("y"), _k("xyz"), _k("z"), _k("x"), _k("yz")]
    results = []
    for batched in (True, False):
        with State.open(None, Settings(posting_cap=3)) as state:
            index = state.view().super_shingles
            if batched:
                met = index.meet_batch(keys, [1, 2, 3, 4, 5, 6], [0] * 6)
                results.append([_rows(met, i) for i in range(6)] + [met.stopped.tolist()])
            else:
                each = [index.meet_batch([k], [i + 1], [0]) for i, k in enumerate(keys)]
                results.append([_rows(m, 0) for m in each] + [[int(m.stopped[0]) for m in each]])
    assert results[0] == results[1]
    # "y" reaches the cap with document 3, which still meets 1 and 2 there; document 6 then
    # finds it stopped, and meets 3 and 4 under "z"
    assert results[0][2] == {1: (2, 0, 1, 0), 2: (1, 0, 1, 0)}
    assert results[0][5] == {3: (1, 0, 1, 0), 4: (1, 0, 1, 0)}
    assert results[0][6] == [0, 0, 0, 0, 0, 1]


def test_union_find_keeps_older_root_and_sizes() -> None:
    with State.open(None) as state:
        view = state.view()
        _docs(view, 6)
        clusters = view.clusters
        assert clusters.merge(1, 2) == 2
        assert clusters.merge(3, 4) == 2
        assert clusters.find(2) == 1
        assert clusters.merge(clusters.find(4), clusters.find(2)) == 4  # survivor chosen by caller
        assert clusters.find(1) == 3 and clusters.find(2) == 3
        assert sorted(clusters.age(r) for r in (1, 3))[0][1] == 1
        view.commit()
        assert state.view().clusters.members() == {3: [1, 2, 3, 4]}
        assert dict(state.view().clusters.roots()) == {
            3: ClusterInfo(4, "2026-01-01T00:00:03.000000Z")
        }


#: batches of (doc id, its keys named by letters); a key may repeat within a document
_BATCHES = st.lists(
    st.lists(
        st.tuples(st.integers(1, 12), st.lists(st.sampled_from("abcd"), max_size=4)),
        max_size=6,
    ),
    min_size=1,
    max_size=4,
)


def _as_modelled(
    meetings: Meetings, documents: int
) -> list[tuple[dict[int, int], dict[int, int], int]]:
    """What each document met, as ``_posted_one_by_one`` states it: shared keys and size by
    earlier document, and stop keys."""
    met = []
    for i in range(documents):
        rows = _rows(meetings, i)
        shared = {doc: row[0] for doc, row in rows.items()}
        met.append((shared, {doc: row[1] for doc, row in rows.items()}, int(meetings.stopped[i])))
    return met


def _posted_one_by_one(
    batches: list[list[tuple[int, list[str]]]], cap: int, silent: frozenset[int] = frozenset()
) -> tuple[list[tuple[dict[int, int], dict[int, int], int]], dict[bytes, tuple[int, ...] | int]]:
    """The definition of a capped posting index, one document at a time: what each met (the
    documents before it under each of its keys, with their sizes, and its stop keys), and the
    final lists (a stop key as its request count). A document's size is its id + 100. The
    documents in ``silent`` meet without being posted."""
    lists: dict[str, list[int] | int] = {}
    met = []
    for batch in batches:
        for doc_id, keys in batch:
            shared: dict[int, int] = {}
            stopped = 0
            posts = doc_id not in silent
            for key in keys:
                posted = lists.setdefault(key, [])
                if isinstance(posted, int):
                    stopped += 1
                    lists[key] = posted + posts
                    continue
                before = posted[: posted.index(doc_id)] if doc_id in posted else posted
                for other in before:
                    shared[other] = shared.get(other, 0) + 1
                if posts and doc_id not in posted:
                    posted.append(doc_id)
                    if len(posted) >= cap:
                        lists[key] = len(posted)
            met.append((shared, {other: other + 100 for other in shared}, stopped))
    return met, {
        _stored(k): v if isinstance(v, int) else tuple(v) for k, v in lists.items() if v != []
    }


@given(
    _BATCHES,
    st.integers(2, 5),
    st.booleans(),
    st.booleans(),
)
def test_posting_index_batches_equal_one_by_one(
    batches: list[list[tuple[int, list[str]]]], cap: int, short: bool, new: bool
) -> None:
    """Posting in batches (keys shared inside a batch, stored lists appended to as bytes,
    replays, keys repeated by one document, stop keys) meets what posting one document at a
    time meets, and leaves the same lists; so does posting documents vouched new (no
    replays), which searches no list for them."""
    if new:  # each document once: what ingestion posts
        seen: set[int] = set()
        batches = [
            [(d, keys) for d, keys in batch if not (d in seen or seen.add(d))]  # type: ignore[func-returns-value]
            for batch in batches
        ]
    expected_met, expected_lists = _posted_one_by_one(batches, cap)
    with State.open(None, Settings(posting_cap=cap)) as state:
        met: list[tuple[dict[int, int], dict[int, int], int]] = []
        for batch in batches:
            view = state.view()
            index = view.short_shingles if short else view.super_shingles
            meetings = index.meet_batch(
                [_k("".join(keys)) for _, keys in batch],
                [doc_id for doc_id, _ in batch],
                [doc_id + 100 for doc_id, _ in batch],
                new_documents=new,
            )
            met += _as_modelled(meetings, len(batch))
            view.commit()
        table = "shingles" if short else "supershingles"
        stored: dict[bytes, tuple[int, ...] | int] = {}
        for key, raw in state.store.items(table):
            postings = Postings.decode(raw, SHORT_ENTRY if short else SUPER_ENTRY)
            ids = tuple(postings.doc_ids.tolist())
            stored[key] = postings.requests if postings.stopped else ids
            if not postings.stopped:
                assert postings.entries["size"].tolist() == [doc_id + 100 for doc_id in ids]
    assert stored == expected_lists
    assert met == expected_met
    if new:  # posting without meetings (ingestion's containment index) writes the same lists
        with State.open(None, Settings(posting_cap=cap)) as state:
            for batch in batches:
                view = state.view()
                index = view.short_shingles if short else view.super_shingles
                index.post_new(
                    [_k("".join(keys)) for _, keys in batch],
                    [doc_id for doc_id, _ in batch],
                    [doc_id + 100 for doc_id, _ in batch],
                )
                view.commit()
            again = {
                key: (p.requests if p.stopped else tuple(p.doc_ids.tolist()))
                for key, raw in state.store.items(table)
                for p in [Postings.decode(raw, SHORT_ENTRY if short else SUPER_ENTRY)]
            }
        assert again == expected_lists


@given(
    _BATCHES,
    st.integers(2, 5),
    st.frozensets(st.integers(1, 12)),
)
def test_documents_that_do_not_post_meet_what_they_would_and_leave_no_trace(
    batches: list[list[tuple[int, list[str]]]], cap: int, silent: frozenset[int]
) -> None:
    """A detection shard posts only its own documents and looks up everyone's keys: the
    documents not posting meet, at their place in the batch, what the posted ones before them
    left (stop keys counted), and write nothing."""
    seen: set[int] = set()
    batches = [
        [(d, keys) for d, keys in batch if not (d in seen or seen.add(d))]  # type: ignore[func-returns-value]
        for batch in batches
    ]
    expected_met, expected_lists = _posted_one_by_one(batches, cap, silent)
    with State.open(None, Settings(posting_cap=cap)) as state:
        met: list[tuple[dict[int, int], dict[int, int], int]] = []
        for batch in batches:
            view = state.view()
            meetings = view.super_shingles.meet_batch(
                [_k("".join(keys)) for _, keys in batch],
                [doc_id for doc_id, _ in batch],
                [doc_id + 100 for doc_id, _ in batch],
                new_documents=True,
                posting=[doc_id not in silent for doc_id, _ in batch],
            )
            met += _as_modelled(meetings, len(batch))
            view.commit()
        stored: dict[bytes, tuple[int, ...] | int] = {}
        for key, raw in state.store.items("supershingles"):
            postings = Postings.decode(raw, SUPER_ENTRY)
            stored[key] = (
                postings.requests if postings.stopped else tuple(postings.doc_ids.tolist())
            )
        keys_counted = state.view().counters.get("index_keys:supershingles")
    assert met == expected_met
    assert stored == expected_lists
    assert keys_counted == len(expected_lists)


def test_cheap_document_reads_agree_with_full_records() -> None:
    """``ref``, ``fetched_micros`` and ``owner_id`` read a record's head only; they say what
    ``get`` and ``sketch_owner`` say."""
    with State.open(None) as state:
        view = state.view()
        _docs(view, 2)
        view.documents.put(3, DocRecord("u3", "", 1, np.zeros(0, np.uint32), duplicate_of=1))
        view.documents.put(4, DocRecord("u4", "", 1, np.zeros(0, np.uint32), duplicate_of=99))
        for doc_id in (1, 2, 3, 4, 5):
            record = view.documents.get(doc_id)
            owner = view.documents.sketch_owner(doc_id)
            assert view.documents.owner_id(doc_id) == (owner[0] if owner else None)
            assert view.documents.ref(doc_id) == (
                (record.url, record.fetched_at) if record else None
            )
            assert view.documents.fetched_micros(doc_id) == fetched_at_to_micros(
                record.fetched_at if record else ""
            )


@given(st.lists(st.one_of(st.none(), st.datetimes(timezones=st.just(UTC))), min_size=2))
def test_cluster_age_orders_as_fetched_at_strings(moments: list[datetime | None]) -> None:
    """Union-find compares roots by fetched_at in microseconds; that is the order of the
    fixed-width strings (missing ones first), then of the ids."""
    with State.open(None) as state:
        view = state.view()
        stamps = {}
        for doc_id, moment in enumerate(moments, start=1):
            stamps[doc_id] = format_fetched_at(moment) if moment else ""
            view.documents.put(doc_id, DocRecord("u", stamps[doc_id], 1, np.zeros(0, np.uint32)))
        by_age = sorted(stamps, key=view.clusters.age)
        assert by_age == sorted(stamps, key=lambda doc_id: (stamps[doc_id], doc_id))
        assert view.clusters.merge(by_age[0], by_age[1]) == 2
        assert view.clusters.info(by_age[0]) == ClusterInfo(2, stamps[by_age[0]])


@given(
    st.integers(2, 14).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=25),
        )
    )
)
def test_member_rings_and_the_size_index_follow_every_merge(
    graph: tuple[int, list[tuple[int, int]]],
) -> None:
    count, edges = graph
    with State.open(None) as state:
        view = state.view()
        merge_edges(view, count, edges)
        view.commit()
        _check_clusters(state, count)


def _check_clusters(state: State, count: int) -> dict[int, list[int]]:
    """Rings, pages of members, the size index and the gauges agree with the clusters."""
    view = state.view()
    groups = view.clusters.members()
    for root, members in groups.items():
        walked, cursor = view.clusters.members_of(root)
        assert cursor is None and sorted(walked) == members and walked[0] == root
        paged: list[int] = []
        page, cursor = view.clusters.members_of(root, limit=2)
        while True:
            paged += page
            if cursor is None:
                break
            page, cursor = view.clusters.members_of(root, after=cursor, limit=2)
        assert paged == walked
        assert all(view.clusters.find(member) == root for member in members)
    singles = set(range(1, count + 1)) - {m for ms in groups.values() for m in ms}
    for single in singles:
        assert view.clusters.members_of(single) == ([single], None)
    expected = sorted(((len(ms), root) for root, ms in groups.items()), key=lambda s: (-s[0], s[1]))
    assert [(size, root) for root, size in view.clusters.largest(count)] == expected
    # the gauges a scrape reads agree with the tables they describe
    assert view.counters.get("clusters") == len(groups)
    assert view.counters.get("documents_in_clusters") == sum(map(len, groups.values()))
    assert view.clusters.size_classes() == dict(
        Counter(size_class(len(ms)) for ms in groups.values())
    )
    return groups


@given(
    st.integers(2, 14).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=25),
            st.lists(st.integers(0, 5), min_size=n, max_size=n),
        )
    )
)
def test_clusters_regrouped_keep_their_rings_sizes_and_gauges(
    graph: tuple[int, list[tuple[int, int]], list[int]],
) -> None:
    """Clusters cut and joined again (``regroup``, what splitting items needs) are as
    consistent as clusters only joined; each group is rooted at its oldest member."""
    count, edges, labels = graph
    with State.open(None) as state:
        view = state.view()
        merge_edges(view, count, edges)
        view.commit()
        before = _check_clusters(state, count)
        view = state.view()
        roots = {view.clusters.find(doc_id) for doc_id in range(1, count + 1)}
        parts: dict[int, list[int]] = {}
        for doc_id, label in zip(range(1, count + 1), labels, strict=True):
            parts.setdefault(label, []).append(doc_id)
        groups = [sorted(group) for group in parts.values()]
        made = view.clusters.regroup(roots, groups, gauges := {})
        view.counters.add_many(gauges)
        view.commit()
        after = _check_clusters(state, count)
        assert made == [min(group, key=state.view().clusters.age) for group in groups]
        assert sorted(after.values()) == sorted(g for g in groups if len(g) > 1)
        assert {m for ms in before.values() for m in ms} <= set(range(1, count + 1))


def test_a_size_key_put_and_replaced_in_one_transaction_is_never_written(tmp_path: Path) -> None:
    with State.open(tmp_path / "state") as state:
        view = state.view()
        view.clusters.add_singles([1, 2, 3, 4])
        view.clusters.merge(1, 2)
        view.clusters.merge(1, 3)  # size 2, then 3: the key of size 2 was never stored
        assert None not in view.tx.writes("sizes").values()
        assert len(view.tx.writes("sizes")) == 1
        view.commit()
        view = state.view()
        view.clusters.merge(1, 4)  # the stored key of size 3 is deleted
        assert sorted(view.tx.writes("sizes").values(), key=bool) == [None, b"\x01"]
        view.commit()
        assert state.view().clusters.largest(10) == [(1, 4)]
        assert len(list(state.store.items("sizes"))) == 1


def test_a_follower_reads_what_a_writer_commits_and_never_creates_a_state(
    tmp_path: Path,
) -> None:
    with pytest.raises(StateError, match="there is no state"):
        State.follow(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()
    writer = State.open(tmp_path / "state")
    follower = State.follow(tmp_path / "state")
    try:
        view = writer.view()
        view.counters.add("documents", 3)
        view.commit()
        assert follower.view().counters.get("documents") == 0  # until it catches up
        follower.catch_up()
        assert follower.view().counters.get("documents") == 3
        assert not follower.outdated
        assert writer.writer_log is None
        log = follower.writer_log
        view = writer.view()
        view.counters.add("documents", 4)
        view.commit()
        assert follower.writer_log != log  # the writer's log moves as it writes
        writer.close()  # flushes: the follower's replayed log now hides the flushed value
        assert follower.outdated
        follower.catch_up()
        assert follower.view().counters.get("documents") == 3  # why a follower is reopened
        with State.follow(tmp_path / "state") as fresh:
            assert fresh.view().counters.get("documents") == 7
    finally:
        follower.close()
        writer.close()


def test_a_follower_sees_its_writer_go_on_in_a_new_log(tmp_path: Path) -> None:
    """The writer's log is watched by its size; a flush starts a new log file, which the
    follower finds, and then watches in turn."""
    writer = State.open(tmp_path / "state")
    follower = State.follow(tmp_path / "state")
    try:
        seen = [follower.writer_log]
        for round_ in range(3):
            view = writer.view()
            view.counters.add("documents", 1)
            view.commit()
            seen.append(follower.writer_log)
            assert seen[-1] != seen[-2], round_  # grew
            assert follower.writer_log == seen[-1]  # and stays put while nothing is written
            writer.store.flush_in_background()  # a new log for the next writes
            time.sleep(0.2)
        assert len({name for name, _ in seen[1:]}) > 1  # more than one log file was followed
    finally:
        follower.close()
        writer.close()


def test_a_query_meets_what_a_new_document_would_and_posts_nothing() -> None:
    """``meet`` (a query) finds the documents and shared-key counts that posting the same
    keys would, counts stop keys, and writes nothing."""
    with State.open(None, Settings(containment_cap=3)) as state:
        view = state.view()
        view.containment.lists.meet_batch(
            [_k("ab"), _k("bcd"), _k("d"), _k("d")], [1, 2, 3, 4], [5, 6, 7, 8]
        )
        view.commit()
        before = dict(state.store.items("containment"))
        view = state.view()
        met = view.containment.meet([_k("abcd")])
        assert _rows(met, 0) == {1: (2, 5, 1, 0), 2: (2, 6, 2, 0)}  # "d" became a stop key
        assert met.stopped.tolist() == [1]
        view.commit()
        assert dict(state.store.items("containment")) == before


def _same_meetings(fast: Meetings, general: Meetings) -> None:
    for name in ("starts", "doc_ids", "shared", "sizes", "last", "last_other", "stopped"):
        mine, theirs = getattr(fast, name), getattr(general, name)
        assert (mine.tolist(), mine.dtype) == (theirs.tolist(), theirs.dtype), name


@given(
    _BATCHES,
    st.integers(2, 5),
    st.booleans(),
    st.lists(st.sampled_from("abcde"), max_size=5),
)
def test_one_document_meets_what_the_general_path_meets(
    batches: list[list[tuple[int, list[str]]]], cap: int, short: bool, query: list[str]
) -> None:
    """A query's ``meet`` (one document, its keys distinct: no carriers to group; a repeated
    key takes the general path) gives the general path's meetings: rows, counts, positions,
    stop keys, and the posting log's entries not yet in the lists."""
    seen: set[int] = set()
    batches = [
        [(d, keys) for d, keys in batch if not (d in seen or seen.add(d))]  # type: ignore[func-returns-value]
        for batch in batches
    ]
    with State.open(None, Settings(posting_cap=cap, containment_cap=cap)) as state:
        for batch in batches:
            view = state.view()
            keys = [_k("".join(keys)) for _, keys in batch]
            ids = [doc_id for doc_id, _ in batch]
            sizes = [doc_id + 100 for doc_id in ids]
            (view.short_shingles if short else view.super_shingles).meet_batch(keys, ids, sizes)
            view.containment.post_new(keys, ids, sizes)
            view.commit()
        view = state.view()
        asked = [_k("".join(query))]
        index = view.short_shingles if short else view.super_shingles
        _same_meetings(index.meet(asked), index._meet_many(asked, None))
        logged = view.containment
        _same_meetings(
            logged.meet(asked), logged._index._meet_many(asked, logged._snapshot().entries)
        )


def test_a_follower_meets_keys_its_writer_posted_after_it_first_looked(tmp_path: Path) -> None:
    """A follower's lookups see the keys its writer posts after the follower's first lookup
    (a key filter made then would not know them)."""
    writer = State.open(tmp_path / "state")
    follower = State.follow(tmp_path / "state")
    try:
        view = writer.view()
        view.containment.post_new([_k("ab")], [1], [0])
        view.commit()
        follower.catch_up()
        assert follower.view().containment.meet([_k("abc")]).met(0) == {1}
        view = writer.view()
        view.containment.post_new([_k("c")], [2], [0])
        view.commit()
        follower.catch_up()
        assert follower.view().containment.meet([_k("abc")]).met(0) == {1, 2}
    finally:
        follower.close()
        writer.close()


def test_a_follower_reads_a_file_its_writer_compacted_away_since_it_caught_up(
    tmp_path: Path,
) -> None:
    """A follower keeps a bounded number of table files open (all of them would make each
    catch-up load every file): a read that meets a file the writer's compaction deleted
    before the follower opened it catches up and reads the file that replaced it."""
    writer = RocksDBStore(tmp_path / "state")
    follower = RocksDBStore(tmp_path / "state", RocksDBOptions(follower_open_files=16), True)
    try:
        for part in range(40):  # forty files: more than a follower of 16 opens ahead
            writer.write({"docs": {b"%02d%06d" % (part, n): b"first" for n in range(50)}})
            writer.compact()  # a file of its own: its keys overlap no other file
        follower.catch_up()  # it knows every file, and has read none
        known = {path.name for path in (tmp_path / "state").glob("*.sst")}
        writer.write({"docs": {b"%02d%06d" % (part, 0): b"second" for part in range(40)}})
        writer.compact()  # rewrites them: the follower's files are gone
        assert known and not known & {path.name for path in (tmp_path / "state").glob("*.sst")}
        for part in range(40):
            assert follower.get("docs", b"%02d%06d" % (part, 1)) == b"first"
        wanted = [b"%02d%06d" % (part, 0) for part in range(40)]
        assert follower.get_many("docs", wanted) == [b"second"] * 40
    finally:
        follower.close()
        writer.close()


def test_a_follower_walks_a_table_on_after_its_writer_compacted_it_away(
    tmp_path: Path,
) -> None:
    """A follower's scan that meets a table file the writer's compaction deleted catches up
    and goes on after the last key it gave: every key once, in order."""
    writer = RocksDBStore(tmp_path / "state")
    followers = [
        RocksDBStore(tmp_path / "state", RocksDBOptions(follower_open_files=16), True)
        for _ in range(3)
    ]
    every = [b"%02d%06d" % (part, n) for part in range(40) for n in range(50)]
    try:
        for part in range(40):
            writer.write({"docs": dict.fromkeys(every[part * 50 : part * 50 + 50], b"first")})
            writer.compact()
        for follower in followers:
            follower.catch_up()
        writer.write({"docs": {b"%02d%06d" % (part, 0): b"second" for part in range(40)}})
        writer.compact()
        walks = [
            [key for key, _ in followers[0].items("docs")],
            [key for key, _ in followers[1].scan("docs", every[10])],
            list(followers[2].keys("docs")),
        ]
        assert walks == [every, every[10:], every]
    finally:
        for follower in followers:
            follower.close()
        writer.close()


@pytest.mark.skipif(
    not Path("/proc/sys/kernel/ns_last_pid").exists(), reason="Linux's last-pid counter"
)
def test_a_follower_catches_up_with_new_table_files_without_starting_threads(
    tmp_path: Path,
) -> None:
    """A catch-up that meets flushed files opens their handlers in its own thread: RocksDB's
    default starts 16 threads per version edit, and the caller (holding the interpreter
    lock) waits for them. Threads are counted by the system's last process id, which each
    new thread moves on; the fewest of three catch-ups is kept (other processes move it too)."""
    writer = RocksDBStore(tmp_path / "state")
    follower = RocksDBStore(tmp_path / "state", follow=True)
    last_pid = Path("/proc/sys/kernel/ns_last_pid")
    started = []
    try:
        for round_ in range(3):
            writer.write({table: {b"k%d" % round_: b"v"} for table in ("docs", "urls", "meta")})
            writer.disk_bytes()  # flushes every table: one version edit each
            before = int(last_pid.read_text())
            follower.catch_up()
            started.append(int(last_pid.read_text()) - before)
            assert follower.get("urls", b"k%d" % round_) == b"v"
    finally:
        follower.close()
        writer.close()
    assert min(started) < 4, started


def test_url_histories_keep_every_version_once_in_time_order(tmp_path: Path) -> None:
    def micros(*seconds: int) -> list[int]:
        return [second * 1_000_000 for second in seconds]

    with State.open(tmp_path / "state") as state:
        view = state.view()
        view.urls.add_many(["https://a/", "https://b/"], micros(5, 1), [50, 10])
        view.commit()
        view = state.view()
        # new urls, one of them twice in the batch
        view.urls.add_many(
            ["https://c/", "https://d/", "https://c/"], micros(2, 3, 8), [20, 30, 80]
        )
        # a stored url, one this transaction wrote (a version it has already), and a new one
        view.urls.add_many(
            ["https://a/", "https://c/", "https://e/"], micros(4, 8, 6), [40, 80, 60]
        )
        view.commit()
        view = state.view()
        assert {u: [doc for _, doc in view.urls.versions(f"https://{u}/")] for u in "abcde"} == {
            "a": [40, 50],
            "b": [10],
            "c": [20, 80],
            "d": [30],
            "e": [60],
        }
        assert view.urls.versions("https://a/")[0][0] == "1970-01-01T00:00:04.000000Z"


@given(st.lists(st.none() | st.datetimes(timezones=st.just(UTC)), min_size=4, max_size=7))
@hypothesis_settings(max_examples=25, deadline=None)
def test_a_clusters_size_age_and_ring_read_the_same_from_the_view_the_cache_and_the_store(
    moments: list[datetime | None],
) -> None:
    fetched = ["" if moment is None else format_fetched_at(moment) for moment in moments]
    ids = range(1, len(fetched) + 1)
    with tempfile.TemporaryDirectory() as tmp:
        with State.open(Path(tmp) / "state") as state:
            view = state.view()
            for doc_id in ids:
                record = DocRecord(f"u{doc_id}", fetched[doc_id - 1], 1, np.zeros(0, np.uint32))
                view.documents.put(doc_id, record)
            view.clusters.add_singles(ids)
            view.clusters.merge(1, 2)
            view.clusters.merge(3, 4)
            view.clusters.merge(1, 3)  # a root retired into another
            for doc_id in ids[4:]:
                view.clusters.merge(1, doc_id)
            expected = (
                view.clusters.info(1),
                view.clusters.age(1),
                view.clusters.members_of(1),
                [view.clusters.find(doc_id) for doc_id in ids],
            )
            assert expected[0] == ClusterInfo(len(fetched), fetched[0])
            view.commit()
            cached = state.view().clusters  # from the committed cache
            assert (cached.info(1), cached.age(1), cached.members_of(1)) == expected[:3]
        with State.open(Path(tmp) / "state") as reopened:  # from the store
            stored = reopened.view().clusters
            assert (stored.info(1), stored.age(1), stored.members_of(1)) == expected[:3]
            assert [stored.find(doc_id) for doc_id in ids] == expected[3]


def test_reads_prefetched_for_a_query_give_what_reads_one_by_one_give(tmp_path: Path) -> None:
    """A query reads the refs and clusters of its matches at once (``prefetch_refs``,
    ``Clusters.prefetch``): roots, members, members of members and single documents come
    out as reading them one at a time gives them, unknown ids included. Read by a follower,
    which caches no committed values (a writer's are mostly in its cache already)."""
    from neardup.streams import Detector

    from tests.helpers import family_pages

    with State.open(tmp_path / "state") as state:
        detector = Detector(state)
        pages = family_pages(3, families=4, size=6)
        for at in range(0, len(pages), 5):
            detector.process(pages[at : at + 5])
        ids = [doc_id for doc_id, _ in state.view().documents.scan_refs()]
        ids += [12345, 67890]  # never stored

        def read(view: StateView) -> list[object]:
            clusters = view.clusters
            return [(view.documents.ref(d), clusters.info(clusters.find(d))) for d in ids]

        expected = read(state.view())
        with State.follow(tmp_path / "state") as follower:
            assert read(follower.view()) == expected
            batched = follower.view()
            batched.documents.prefetch_refs(ids)
            batched.clusters.prefetch(ids)
            assert read(batched) == expected
        assert len({info.size for _, info in expected}) > 2  # clusters of several sizes


def test_a_follower_removes_the_directories_of_followers_that_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id that nothing holds now (reused ids are left alone)
    dead = tmp_path / "tmp" / f"neardup-follower-{gone.pid}-abc"
    alive = tmp_path / "tmp" / f"neardup-follower-{os.getppid()}-def"
    older = tmp_path / "tmp" / "neardup-follower-xyz"
    for directory in (dead, alive, older):
        directory.mkdir()
        (directory / "LOG").write_text("catch-ups")
    State.open(tmp_path / "state").close()
    with State.follow(tmp_path / "state"):
        own = [
            p
            for p in (tmp_path / "tmp").iterdir()
            if p.name.startswith(f"neardup-follower-{os.getpid()}-")
        ]
        assert len(own) == 1
    assert not dead.exists()
    assert alive.exists() and older.exists()
    assert not own[0].exists()  # a follower closed removes its own


def test_a_regrouped_cluster_keeps_the_root_it_holds_when_asked() -> None:
    """Documents 1..4 with no fetched_at, joined 3-1, 3-2, 3-4 (root 1, the oldest): cut into
    {2, 3} and {1, 4}. By age, {2, 3} is rooted at 2; ``keep_roots`` changes nothing there
    (it holds no old root), and {1, 4} keeps 1 either way. Joined 2-1 under root 2 by hand,
    a regroup of all four keeps 2 with ``keep_roots``, takes 1 without."""
    with State.open(None) as state:
        view = state.view()
        merge_edges(view, 4, [(2, 0), (2, 1), (2, 3)])
        root = view.clusters.find(1)
        assert view.clusters.regroup([root], [[2, 3], [1, 4]], {}, keep_roots=True) == [2, 1]
        view.clusters.merge(2, 1, {})
        assert view.clusters.find(1) == 2
        assert view.clusters.regroup([2], [[1, 2, 3, 4]], {}, keep_roots=True) == [2]
        assert view.clusters.regroup([2], [[1, 2, 3, 4]], {}) == [1]


@pytest.mark.parametrize("backend", ["memory", "rocksdb"])
def test_departed_documents_say_whether_any_has_an_heir(backend: str, tmp_path: Path) -> None:
    """``Departed.any`` (which spares a state that never lost a page its heir lookups) sees
    pending and stored marks, and no longer sees one unmarked."""
    with State.open(None if backend == "memory" else tmp_path / "state") as state:
        view = state.view()
        assert not view.departed.any()
        view.departed.mark(7, 9)
        assert view.departed.any()  # pending
        view.commit()
        view = state.view()
        assert view.departed.any() and view.departed.live([7, 8]) == {7: 9}
        view.departed.unmark(7)
        assert not view.departed.any()  # pending delete of the only mark
        view.commit()
        assert not state.view().departed.any()


@pytest.mark.parametrize("backend", ["memory", "rocksdb"])
def test_copy_groups_keep_their_live_copies_in_order(backend: str, tmp_path: Path) -> None:
    """A copy joins the group of the document it copies; the first copy left stands for one
    that departs; a group of one is dropped; a departed id that comes back is a document of
    its own again, whatever group it left. Read back across commits."""
    with State.open(None if backend == "memory" else tmp_path / "state") as state:
        view = state.view()
        view.copies.join(5, 9)
        view.copies.join(9, 3)  # a copy of a copy: the same group
        view.copies.join(4, 8)
        assert view.copies.others(5) == [9, 3] and view.copies.heir(5) == 9
        view.commit()
        view = state.view()
        assert view.copies.others(3) == [5, 9] and view.copies.others(8) == [4]
        view.copies.leave(5)
        assert view.copies.heir(9) == 3 and view.copies.heir(5) == 0
        view.copies.leave(4)  # its group of two is one: no group
        assert view.copies.others(8) == [] and view.copies.heir(8) == 0
        view.copies.join(5, 6)  # 5 is back, with other content: a new group
        view.commit()
        view = state.view()
        assert view.copies.others(5) == [6] and view.copies.others(9) == [3]
        view.copies.leave(3)
        view.copies.leave(6)
        view.commit()
        assert [key for key, _ in state.store.items("copies")] == [b"n"]  # the counter
