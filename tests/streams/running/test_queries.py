"""Queries that read only what they are about, on a real RocksDB state built in two sweeps:
pages that moved to new URLs and changed, a URL's history, folding a ranked list, paging a
cluster, the largest clusters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from neardup.core import Page, Settings
from neardup.state import MemoryStore, State, Table
from neardup.streams import Detector
from neardup.streams.detection import format_id
from neardup.streams.running import queries, reports

from tests.helpers import edit_text, random_text, two_sweeps


@pytest.fixture
def swept(tmp_path: Path) -> tuple[State, dict[str, list[str]]]:
    first, second, texts = two_sweeps()
    state = State.open(tmp_path / "state", Settings(versions="all"))  # an archive
    detector = Detector(state)
    detector.process(first)
    detector.process(second)
    return state, texts


def test_lost_and_found_finds_where_a_moved_page_went(swept: tuple[State, object]) -> None:
    state, _ = swept
    with state:
        # the latest version of /news/2 is a new page: nothing of the old one is there
        assert queries.lost_and_found(state, "https://site.example/news/2", 10)["found"] == []
        moved = queries.lost_and_found(state, "https://site.example/archive/2", 10)
        assert [f["url"] for f in moved["found"]] == ["https://site.example/news/2"]
        assert moved["found"][0]["resemblance"] > 0.8
        assert moved["found"][0]["fetched_at"] == "2026-01-01T00:00:01.000000Z"
        mirrored = queries.lost_and_found(state, "https://mirror.example/3", 10)
        assert [(f["url"], f["resemblance"]) for f in mirrored["found"]] == [
            ("https://site.example/blog/3", 1.0)
        ]
        assert queries.lost_and_found(state, "https://nowhere.example/", 10)["known"] is False


def test_history_gives_each_version_its_resemblance_to_the_one_before(
    swept: tuple[State, object],
) -> None:
    state, _ = swept
    with state:
        edited = queries.history(state, "https://site.example/news/1")["versions"]
        assert [v["fetched_at"][:10] for v in edited] == ["2026-01-01", "2026-02-01"]
        assert edited[0]["resemblance_to_previous"] is None
        assert 0.5 < edited[1]["resemblance_to_previous"] < 1.0
        assert edited[0]["cluster"] == edited[1]["cluster"]  # a near duplicate of itself
        replaced = queries.history(state, "https://site.example/news/2")["versions"]
        assert replaced[1]["resemblance_to_previous"] < 0.1
        assert replaced[0]["cluster"] != replaced[1]["cluster"]
        assert queries.history(state, "https://nowhere.example/") == {
            "url": "https://nowhere.example/",
            "known": False,
            "versions": [],
        }


def test_fold_keeps_the_order_of_heads_and_folds_exact_near_and_inline_copies(
    swept: tuple[State, dict[str, list[str]]],
) -> None:
    state, texts = swept
    inline_copy = Page("https://inline.example/a", " ".join(texts["other"]))
    unrelated = Page("https://inline.example/b", " ".join(texts["fresh"][::-1]))
    ranked: list[str | Page] = [
        "https://mirror.example/3",
        "https://site.example/archive/2",
        "https://site.example/blog/3",  # exact copy of the first
        "https://other.example/x",
        "https://nowhere.example/",
        inline_copy,  # the same text as other.example/x, posted inline
        unrelated,
    ]
    with state:
        groups = queries.fold(state, ranked, 0.5)
    heads = [group["head"]["url"] for group in groups]
    assert heads == [
        "https://mirror.example/3",
        "https://site.example/archive/2",
        "https://other.example/x",
        "https://nowhere.example/",
        "https://inline.example/b",
    ]
    assert [f["url"] for f in groups[0]["folded"]] == ["https://site.example/blog/3"]
    assert groups[0]["folded"][0]["resemblance"] == 1.0
    assert [f["url"] for f in groups[2]["folded"]] == ["https://inline.example/a"]
    assert groups[3]["head"]["known"] is False and groups[3]["folded"] == []
    assert all(group["folded"] == [] for group in (groups[1], groups[4]))


def test_a_cluster_pages_by_cursor_and_a_retired_id_names_its_survivor(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    words = random_text(rng, 200)
    pages = [
        Page(
            f"https://copies.example/{i}", edit_text(rng, words, 0.03), f"2026-03-01T00:00:{i:02d}Z"
        )
        for i in range(7)
    ]
    with State.open(tmp_path / "state", Settings(versions="all")) as state:
        Detector(state).process(pages)
        ids = {page.url: page.doc_id for page in pages}  # every fetch's id: url, fetched_at
        found = queries.cluster_of_url(state, "https://copies.example/4")
        assert found["size"] == 7 and found["cluster"] == format_id(ids["https://copies.example/0"])
        root = int(found["cluster"], 16)
        seen: list[str] = []
        page = queries.cluster_by_id(state, root, limit=3)
        while True:
            seen += [member["url"] for member in page["members"]]
            if page["next"] is None:
                break
            page = queries.cluster_by_id(state, root, queries.parse_id(page["next"]), limit=3)
        assert sorted(seen) == sorted(ids) and len(seen) == 7
        member = queries.cluster_by_id(state, ids["https://copies.example/5"], limit=1)
        assert member["cluster"] == found["cluster"] and member["retired"] == format_id(
            ids["https://copies.example/5"]
        )
        assert queries.cluster_by_id(state, 12345)["known"] is False
        largest = queries.largest_clusters(state, 5)
        assert [(c["cluster"], c["size"]) for c in largest] == [(found["cluster"], 7)]
        assert reports.statistics(state)["largest_clusters"][0]["size"] == 7
    with pytest.raises(ValueError, match="16 hex digits"):
        queries.parse_id("xyz")


class _Guarded(MemoryStore):
    """A memory store that fails a read of a whole table once ``guarding``."""

    guarding = False

    def items(self, table: Table) -> Iterator[tuple[bytes, bytes]]:
        assert not self.guarding, f"read the whole {table} table"
        return super().items(table)


def test_statistics_rank_the_stop_keys_without_reading_them_all() -> None:
    """Boilerplate shared by every page makes stop keys, asked for by more and more pages:
    the top ones are those a full read of ``stopkeys`` ranks first, read from their ranks."""
    rng = np.random.default_rng(5)
    boilerplate = random_text(rng, 20)
    store = _Guarded()
    with State(store, Settings(posting_cap=3, containment_sample=0)) as state:
        for sweep in range(4):  # the later sweeps ask for the stop keys again
            pages = [
                Page(
                    f"https://site.example/{sweep}/{i}",
                    " ".join(random_text(rng, 8) + boilerplate[: 8 + 4 * sweep]),
                )
                for i in range(10)
            ]
            Detector(state).process(pages)
        stopped = sorted(
            (
                (-int.from_bytes(raw, "big"), key)
                for key, raw in MemoryStore.items(store, "stopkeys")
            )
        )
        assert len({count for count, _ in stopped}) > 2  # counts differ: a ranking to check
        store.guarding = True
        for top in (3, len(stopped) + 1):
            stats = reports.statistics(state, top=top)
            assert stats["stop_keys"] == len(stopped)
            assert [
                (-stop["documents"], f"{stop['index']}:".encode() + bytes.fromhex(stop["key"]))
                for stop in stats["top_stop_keys"]
            ] == stopped[:top]
