"""The containment posting log against posting straight into the lists: the same meetings
after every batch, the same lists once everything is folded, nothing left by a batch that
was not committed; on real RocksDB, a follower reads what its writer logged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from neardup.core import Settings, StateError
from neardup.state import Meetings, PostingIndex, Postings, State, posting_log
from neardup.state.codec import CONTAINMENT_ENTRY
from neardup.state.posting_log import FOLD_RANGES

from tests.helpers import settle_containment_log

#: a few keys in every range (the top four bits), so that lists are shared and reach caps
_KEYS = [(r << 28) | n for r in range(FOLD_RANGES) for n in (1, 2)]

_BATCHES = st.lists(
    st.tuples(
        st.lists(st.lists(st.sampled_from(_KEYS), max_size=6, unique=True), max_size=5),
        st.booleans(),  # committed
    ),
    min_size=1,
    max_size=2 * FOLD_RANGES + 2,
)


def _keys(values: list[int]) -> npt.NDArray[np.uint32]:
    return np.array(values, np.uint32)


def _met(meetings: Meetings, documents: int) -> list[tuple[dict[int, tuple[int, int]], int]]:
    """Per document: earlier document -> (keys shared, its size), and its stop keys."""
    return [
        (
            {
                int(d): (int(n), int(s))
                for d, n, s in zip(
                    meetings.doc_ids[meetings.rows(i)],
                    meetings.shared[meetings.rows(i)],
                    meetings.sizes[meetings.rows(i)],
                    strict=True,
                )
            },
            int(meetings.stopped[i]),
        )
        for i in range(documents)
    ]


def _lists(
    state: State, leaving_out: frozenset[bytes] = frozenset()
) -> dict[bytes, tuple[int, ...] | str]:
    return {
        key: "stop" if p.stopped else tuple(p.doc_ids.tolist())
        for key, raw in state.store.items("containment")
        if key not in leaving_out
        for p in [Postings.decode(raw, CONTAINMENT_ENTRY)]
    }


@settings(max_examples=60, deadline=None)
@given(_BATCHES, st.integers(2, 4))
def test_the_log_meets_and_stores_what_posting_straight_into_the_lists_does(
    batches: list[tuple[list[list[int]], bool]], cap: int
) -> None:
    chosen = Settings(containment_cap=cap)
    with State.open(None, chosen) as logged, State.open(None, chosen) as straight:
        next_id = 1
        for docs, committed in batches:
            ids = list(range(next_id, next_id + len(docs)))
            sizes = [doc_id % 7 for doc_id in ids]
            key_arrays = [_keys(keys) for keys in docs]
            view, plain_view = logged.view(), straight.view()
            plain = PostingIndex(plain_view.tx, "containment", cap, CONTAINMENT_ENTRY)
            assert _met(view.containment.meet(key_arrays), len(docs)) == _met(
                plain.meet(key_arrays), len(docs)
            )
            view.containment.post_new(key_arrays, ids, sizes)
            plain.post_new(key_arrays, ids, sizes)
            if committed:  # an uncommitted batch must leave nothing behind
                view.commit()
                plain_view.commit()
                next_id += len(docs)
        probe = [_keys(_KEYS)]
        assert _met(logged.view().containment.meet(probe), 1) == _met(
            PostingIndex(straight.view().tx, "containment", cap, CONTAINMENT_ENTRY).meet(probe), 1
        )
        # folded range by range as batches come, the same lists, and the records gone
        records = set(logged.store.keys("containment_log"))
        settling = settle_containment_log(logged)
        assert _lists(logged, settling) == _lists(straight)
        assert not records & set(logged.store.keys("containment_log"))


def test_a_batch_with_nothing_to_log_changes_nothing() -> None:
    """A replayed batch (its documents already applied) posts nothing: not even the marks."""
    with State.open(None) as state:
        view = state.view()
        view.containment.post_new([_keys([_KEYS[0]])], [1], [3])
        view.commit()
        before = {table: list(state.store.items(table)) for table in ("meta", "containment_log")}
        view = state.view()
        view.containment.post_new([], [], [])
        view.containment.post_new([_keys([])], [2], [3])
        view.commit()
        assert {t: list(state.store.items(t)) for t in ("meta", "containment_log")} == before


def test_a_view_that_logs_twice_reads_its_own_records() -> None:
    """Two batches in one transaction: the second is numbered after the first, and a lookup
    in between meets the first."""
    with State.open(None) as state:
        view = state.view()
        view.containment.post_new([_keys([_KEYS[0], _KEYS[5]])], [1], [3])
        met = view.containment.meet([_keys([_KEYS[5]])])
        assert _met(met, 1) == [({1: (1, 3)}, 0)]
        view.containment.post_new([_keys([_KEYS[5]])], [2], [4])
        view.commit()
        met = state.view().containment.meet([_keys([_KEYS[5]])])
        assert _met(met, 1) == [({1: (1, 3), 2: (1, 4)}, 0)]
        assert len(list(state.store.keys("containment_log"))) == 2


def test_a_follower_reads_what_its_writer_logged_and_folded(tmp_path: Path) -> None:
    writer = State.open(tmp_path / "state")
    follower = State.follow(tmp_path / "state")
    try:
        key, elsewhere = _keys([_KEYS[3]]), _keys([_KEYS[8]])
        for doc_id in range(1, 2 * FOLD_RANGES + 1):  # logged, then folded
            view = writer.view()
            view.containment.post_new([key if doc_id <= 2 else elsewhere], [doc_id], [1])
            view.commit()
            follower.catch_up()
            met = follower.view().containment.meet([key])
            assert set(met.doc_ids.tolist()) == {1, 2} - ({2} if doc_id < 2 else set())
            assert len(list(writer.store.keys("containment_log"))) <= FOLD_RANGES
        assert (_KEYS[3]).to_bytes(4, "big") in dict(writer.store.items("containment"))
    finally:
        follower.close()
        writer.close()


def test_a_damaged_record_is_an_error() -> None:
    with State.open(None) as state:
        view = state.view()
        view.containment.post_new([_keys([_KEYS[0]])], [1], [3])
        view.commit()
        state.store.write({"containment_log": {(0).to_bytes(8, "big"): b"\x00\x00\x00\x02"}})
        fresh = State(state.store)  # reads the log anew
        with pytest.raises(StateError, match="damaged"):
            fresh.view().containment.meet([_keys([_KEYS[0]])])


def test_a_reader_merges_its_recent_records_after_many_lookups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Records a reader has not merged yet are searched one by one; after ``_MERGE_AFTER``
    lookups of one snapshot (its writer gone quiet) they are merged, and meet the same."""
    monkeypatch.setattr(posting_log, "_MERGE_AFTER", 3)
    with State.open(None) as state:
        for n in range(3):  # fewer records than _RECENT: no update merges them
            view = state.view()
            view.containment.post_new([_keys([_KEYS[0], _KEYS[n + 1]])], [n + 1], [3])
            view.commit()
        probe = [_keys(_KEYS)]
        expected = [({1: (2, 3), 2: (2, 3), 3: (2, 3)}, 0)]
        assert _met(state.view().containment.meet(probe), 1) == expected
        snapshot = state._containment_log.read(state.store)
        assert snapshot.live().recent  # searched one by one
        for _ in range(4):
            assert _met(state.view().containment.meet(probe), 1) == expected
        assert not snapshot.live().recent  # merged
