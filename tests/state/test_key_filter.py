"""The in-memory key filter of the posting indexes: never a false negative, few false
positives, kept in the state when it closes, and read again from the index when anything was
written since."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import Settings
from neardup.state import State
from neardup.state.kept_filters import FILE_NAME
from neardup.state.key_filter import FilterBudget, KeyFilter
from neardup.state.rocksdb import RocksDBStore


def _keys(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint32)


@given(
    st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=300), max_size=12),
    st.integers(1, 64),
)
def test_every_added_key_is_held_across_stages(batches: list[list[int]], first: int) -> None:
    keys = KeyFilter(first)
    added: list[int] = []
    for batch in batches:
        keys.add(_keys(batch))  # keys repeated in a batch, or sharing a word, included
        added += batch
        assert keys.may_hold(_keys(added)).all()
    assert len(keys) == len(added)


def test_false_positives_stay_few_as_it_grows() -> None:
    """Fixed seed; the bounds hold with room: 1 % per full stage (16 bits per key), and 5 %
    over the six stages of a filter grown from 65,536 to 2M keys. The keys are random, as
    index keys are: hash values."""
    rng = np.random.default_rng(11)
    values = rng.permutation(np.unique(rng.integers(0, 2**32, 3_100_000, dtype=np.uint64)))
    values = values[:3_000_000].astype(np.uint32)
    added, absent = values[: 2**21], values[2**21 :]
    grown = KeyFilter()
    for start in range(0, len(added), 5_000):
        grown.add(added[start : start + 5_000])
    assert grown.may_hold(added).all()
    assert grown.may_hold(absent).mean() < 0.05
    sized = KeyFilter(len(added))  # one stage, exactly full
    sized.add(added)
    assert sized.nbytes == 2 * len(added)
    assert sized.may_hold(absent).mean() < 0.01


def test_a_filter_read_from_keys_has_room_for_as_many_again() -> None:
    chunks = [_keys(list(range(start, start + 40_000))) for start in range(0, 200_000, 40_000)]
    read = KeyFilter.of(chunks)
    assert len(read) == 200_000 and read.may_hold(_keys(list(range(200_000)))).all()
    assert read.nbytes == 2 * 2**19  # 400,000 keys of room, rounded up to 2**19 at 2 bytes each


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"first_capacity=0 must be a positive integer"):
        KeyFilter(0)


@given(
    st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=300), max_size=8),
    st.integers(1, 64),
    st.lists(st.integers(0, 2**32 - 1), max_size=200),
)
def test_a_filter_written_and_read_back_answers_as_before(
    batches: list[list[int]], first: int, asked: list[int]
) -> None:
    keys = KeyFilter(first)
    for batch in batches:
        keys.add(_keys(batch))
    head, *pieces = keys.pieces(1 << 20)
    again = KeyFilter.from_pieces(bytes(head), iter([*map(bytes, pieces), None]))
    assert len(again) == len(keys) and again.nbytes == keys.nbytes
    assert (again.may_hold(_keys(asked)) == keys.may_hold(_keys(asked))).all()
    again.add(_keys(asked))  # and it grows on
    assert again.may_hold(_keys(asked)).all()


def _words(kept: KeyFilter) -> bytes:
    return b"".join(map(bytes, kept.pieces(1 << 30)[1:]))


@given(
    st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=300), max_size=6),
    st.integers(1, 64),
    st.integers(1, 200),
    st.integers(1, 300),
)
def test_a_filter_kept_in_pieces_reads_back_the_same(
    batches: list[list[int]], first: int, size: int, read: int
) -> None:
    """Written in pieces of one size, read back in pieces of another (a file's chunks)."""
    keys = KeyFilter(first)
    for batch in batches:
        keys.add(_keys(batch))
    head, *pieces = keys.pieces(size)
    assert all(0 < len(piece) <= size for piece in pieces)
    words = b"".join(map(bytes, pieces))
    chunks = [words[at : at + read] for at in range(0, len(words), read)]
    extra = [b"never read: the stages are full before it"]
    again = KeyFilter.from_pieces(bytes(head), iter(chunks + extra))
    assert _words(again) == words and len(again) == len(keys)
    with pytest.raises(ValueError, match="pieces are missing"):
        KeyFilter.from_pieces(bytes(head), iter([*chunks[:-1], None]))


def test_a_damaged_filter_is_refused() -> None:
    written = KeyFilter(8)
    written.add(_keys([1, 2, 3]))
    head, *pieces = written.pieces(1 << 20)
    words = b"".join(map(bytes, pieces))
    for bad_head in (b"", b"NDKF0" + bytes(head)[5:], bytes(head)[:-1], bytes(head) + b"\0"):
        with pytest.raises(ValueError, match="key filter"):
            KeyFilter.from_pieces(bad_head, iter([words]))
    with pytest.raises(ValueError, match="more words than its stages hold"):
        KeyFilter.from_pieces(bytes(head), iter([words + b"\0"]))


def _posted(path: Path, doc_id: int, keys: np.ndarray) -> None:
    with State.open(path, Settings()) as state:
        view = state.view()
        view.super_shingles.meet_batch([keys], [doc_id], [3])
        view.commit()


def test_a_closed_state_keeps_its_filters_for_the_next_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading every index key at each opening of a large state is slow (docs/benchmarks.md):
    the filters written at closing are read back instead, when nothing was written since."""
    keys = _keys([7, 2**31 + 5, 2**32 - 1])
    _posted(tmp_path / "s", 1, keys)

    def walked(*_: object) -> None:
        raise AssertionError("the index's keys were read again")

    monkeypatch.setattr("neardup.state.state.read_key_filter", walked)
    with State.open(tmp_path / "s") as state:
        assert state.key_filter("supershingles").may_hold(keys).all()
        view = state.view()
        assert view.super_shingles.meet_batch([keys[1:]], [2], [3]).met(0) == {1}
        view.commit()
    with State.open(tmp_path / "s") as state:  # kept again, with the key of document 2
        assert state.view().super_shingles.candidates(keys) == {1, 2}
    store = RocksDBStore(tmp_path / "s")
    before = store.sequence()
    store.close()
    with State.open(tmp_path / "s") as state:  # only read: nothing is written at closing
        assert state.view().super_shingles.candidates(keys) == {1, 2}
    store = RocksDBStore(tmp_path / "s")
    assert store.sequence() == before
    store.close()


def test_filters_an_older_neardup_kept_in_the_meta_table_are_removed(tmp_path: Path) -> None:
    """Older versions kept the filters in the meta table (tens of MB on a large state): the
    keys are read once instead, and those values removed at closing."""
    keys = _keys([7, 2**31 + 5])
    _posted(tmp_path / "s", 1, keys)
    (tmp_path / "s" / FILE_NAME).unlink()
    store = RocksDBStore(tmp_path / "s")
    store.write({"meta": {b"keyfilter:supershingles": b"old", b"keyfilter:shingles:0": b"x"}})
    store.close()
    with State.open(tmp_path / "s") as state:
        assert state.key_filter("supershingles").may_hold(keys).all()
    store = RocksDBStore(tmp_path / "s")
    assert [key for key in store.keys("meta") if key.startswith(b"keyfilter:")] == []
    store.close()
    assert (tmp_path / "s" / FILE_NAME).exists()


def test_a_damaged_file_of_kept_filters_means_reading_the_keys(tmp_path: Path) -> None:
    keys = _keys([7, 2**31 + 5])
    _posted(tmp_path / "s", 1, keys)
    kept = tmp_path / "s" / FILE_NAME
    whole = kept.read_bytes()
    for damaged in (whole[:-1], whole[:40], b"NDKF9" + whole[5:], b""):
        kept.write_bytes(damaged)
        store = RocksDBStore(tmp_path / "s")
        with State(store) as state:
            assert state.view().super_shingles.candidates(keys) == {1}
            state._key_filters.clear()  # keep none: the damaged file stays for the next round


def test_a_write_after_the_filters_were_kept_voids_them(tmp_path: Path) -> None:
    """A writer that does not keep the filters (an older neardup, a crash before closing,
    a copy of a running state) leaves a later sequence: the next writer reads the keys."""
    _posted(tmp_path / "s", 1, _keys([7]))
    with State.open(tmp_path / "s") as state:
        kept = state.key_filter("supershingles")
        hidden = next(k for k in range(8, 10_000) if not kept.may_hold(_keys([k]))[0])
    store = RocksDBStore(tmp_path / "s")  # posts without the filter, as older code did
    with State(store) as state:
        view = state.view()
        state._kept = None
        state._key_filters["supershingles"] = KeyFilter()  # what a stale filter would say
        view.super_shingles.meet_batch([_keys([hidden])], [2], [3])
        view.commit()
        state._key_filters.clear()  # and keep none at closing
    with State.open(tmp_path / "s") as state:
        assert state.key_filter("supershingles").may_hold(_keys([hidden])).all()
        assert state.view().super_shingles.candidates(_keys([hidden])) == {2}


def test_a_reopened_state_meets_what_it_stored(tmp_path: Path) -> None:
    """A reopened state's filter holds every key posted before it was closed (a stale filter
    would hide a document)."""
    keys = _keys([7, 2**31 + 5, 2**32 - 1])
    with State.open(tmp_path / "s", Settings()) as state:
        view = state.view()
        view.super_shingles.meet_batch([keys], [1], [3])
        view.short_shingles.meet_batch([keys[:1]], [1], [20])
        view.commit()
    with State.open(tmp_path / "s") as state:
        assert state.key_filter("supershingles").may_hold(keys).all()
        view = state.view()
        assert view.super_shingles.meet_batch([keys[1:]], [2], [3]).met(0) == {1}
        assert view.short_shingles.candidates(keys) == {1}
        assert view.super_shingles.candidates(_keys([8])) == set()


def test_only_posting_indexes_have_filters() -> None:
    with State.open(None) as state, pytest.raises(KeyError, match="'docs' is not a posting"):
        state.key_filter("docs")


def test_a_filter_past_its_budget_gives_up_and_misses_nothing() -> None:
    budget = FilterBudget(3 * 2**17)  # room for a first stage of 2**17 bytes and the next
    keys = KeyFilter(2**16, budget)  # 2**16 keys at 2 bytes each
    keys.add(np.arange(0, 3 * 2**16, dtype=np.uint32))  # fills the first two stages
    assert not keys.full and budget.used == 3 * 2**17
    keys.add(np.arange(3 * 2**16, 3 * 2**16 + 10, dtype=np.uint32))  # a third would not fit
    assert keys.full and keys.nbytes == 0 and budget.used == 0
    assert keys.may_hold(np.arange(0, 2**18, dtype=np.uint32)).all()
    kept = KeyFilter.from_pieces(bytes(keys.pieces(1 << 20)[0]), iter([None]))
    assert kept.full  # kept full: read back full, without reading the keys


def test_reading_keys_stops_once_the_filter_cannot_fit(tmp_path: Path) -> None:
    read: list[int] = []

    def chunks() -> Iterator[np.ndarray]:
        for start in range(0, 2**20, 2**16):
            read.append(start)
            yield np.arange(start, start + 2**16, dtype=np.uint32)

    assert KeyFilter.of(chunks(), FilterBudget(2**20)).full
    assert len(read) < 16


def test_a_state_past_its_key_filter_bound_still_meets_every_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = _keys(range(5000))
    with State.open(tmp_path / "s", Settings(), key_filter_bytes=0) as state:
        view = state.view()
        view.super_shingles.meet_batch([keys], [1], [3])
        view.commit()
        assert state.key_filter("supershingles").full

    def walked(*_: object) -> None:
        raise AssertionError("the index's keys were read again")

    monkeypatch.setattr("neardup.state.state.read_key_filter", walked)
    with State.open(tmp_path / "s", key_filter_bytes=0) as state:  # kept full
        assert state.view().super_shingles.meet_batch([keys[-3:]], [2], [3]).met(0) == {1}


def test_a_filter_kept_full_is_made_again_under_a_larger_bound(tmp_path: Path) -> None:
    keys = _keys([7, 2**31 + 5])
    with State.open(tmp_path / "s", Settings(), key_filter_bytes=0) as state:
        view = state.view()
        view.super_shingles.meet_batch([keys], [1], [3])
        view.commit()
    with State.open(tmp_path / "s", key_filter_bytes=1 << 20) as state:
        made = state.key_filter("supershingles")
        assert not made.full and made.may_hold(keys).all()
