"""A removed version's postings and fingerprints leave the state (``state.sweep``): after a
crawl's cycles and a drain, the indexes hold what a fresh run over the live urls holds."""

from __future__ import annotations

import numpy as np
import pytest
from neardup.core import Page, Settings
from neardup.state import State
from neardup.state.codec import CONTAINMENT_ENTRY, SHORT_ENTRY, SUPER_ENTRY, EntryLayout
from neardup.state.store import Table
from neardup.state.sweep import SLICES
from neardup.streams import Detector

from tests.helpers import edit_text, random_text

URLS = 60
LAYOUTS: dict[Table, EntryLayout] = {
    "supershingles": SUPER_ENTRY,
    "shingles": SHORT_ENTRY,
    "containment": CONTAINMENT_ENTRY,
}


def _crawl(cycles: int) -> tuple[list[list[Page]], dict[str, Page]]:
    """Cycle 1 fetches every url (families of near-duplicates and short pages); each later
    cycle changes a third of the live urls (an edit, or other words altogether), deletes one
    in twenty and fetches the rest unchanged. The cycles, and each live url's latest page."""
    rng = np.random.default_rng(11)
    bases = [random_text(rng, 150) for _ in range(URLS // 3)]
    texts = {}
    for index in range(URLS):
        url = f"https://crawl.example/{index}"
        texts[url] = (
            "a short page number " + str(index)
            if index % 10 == 9
            else edit_text(rng, bases[index // 3], 0.02)
        )
    cycles_made, live = [], {}
    for cycle in range(cycles):
        at = f"2026-03-{cycle + 1:02d}T00:00:00Z"
        pages = []
        for url in list(texts):
            roll = rng.random()
            if cycle and roll < 0.05:
                pages.append(Page(url, "", at, status="deleted"))
                del texts[url]
                live.pop(url, None)
                continue
            if cycle and roll < 0.2:
                texts[url] = edit_text(rng, texts[url].split(), 0.1)
            elif cycle and roll < 0.35:
                texts[url] = " ".join(random_text(rng, 150))
            pages.append(live.setdefault(url, Page(url, texts[url], at)))
            if live[url].content != texts[url]:
                live[url] = pages[-1] = Page(url, texts[url], at)
        cycles_made.append(pages)
    return cycles_made, live


def _entries(state: State, table: Table) -> set[tuple[bytes, int]]:
    """Every (key, document) of an index's stored lists."""
    width = LAYOUTS[table].dtype.itemsize
    found = set()
    for key, raw in state.store.items(table):
        if len(raw) % width == 0:
            ids = np.frombuffer(raw, LAYOUTS[table].dtype)["id"].tolist()
            found.update((key, int(doc_id)) for doc_id in ids)
    return found


def _fingerprints(state: State) -> set[tuple[bytes, int]]:
    return {(key, int.from_bytes(raw[:8], "big")) for key, raw in state.store.items("fingerprints")}


@pytest.mark.parametrize("store", ["memory", "rocksdb"])
def test_removed_versions_leave_the_indexes(store: str, tmp_path: object) -> None:
    mode = Settings(versions="latest", keep_versions=0)
    cycles, live = _crawl(6)
    with State.open(None if store == "memory" else str(tmp_path), mode) as state:
        detector = Detector(state)
        for pages in cycles:
            for start in range(0, len(pages), 16):
                detector.process(pages[start : start + 16])
        before = {table: _entries(state, table) for table in LAYOUTS}
        drained, until = 0, state.view().sweep.sweep_pass + 2
        while True:
            view = state.view()
            done = view.sweep.drain(SLICES // 4, until)
            view.commit()
            drained += 1
            if done:
                break
        assert drained <= 9  # at most two passes, a quarter of one a drain
        live_ids = {int.from_bytes(key, "big") for key, _ in state.store.items("docs")}
        with State.open(None, mode) as fresh:
            Detector(fresh).process(list(live.values()))
            for table in ("supershingles", "shingles"):
                assert _entries(state, table) == _entries(fresh, table)
                assert _entries(state, table) < before[table]  # removed versions were there
            assert _fingerprints(state) == _fingerprints(fresh)
            # the containment lists hold live documents only (the rest waits in the log)
            assert {doc_id for _, doc_id in _entries(state, "containment")} <= live_ids
        # the marks left wait for the log to fold the records that may hold their postings
        _, folded = state.view().containment.progress()
        waiting = [raw for _, raw in state.store.items("gone") if len(raw) > 8]
        assert all(int.from_bytes(raw[16:], "big") - 1 > folded for raw in waiting)


def test_a_crawl_sweeps_as_it_goes() -> None:
    """Without a drain, the batches sweep in proportion to what they remove: after a crawl
    of cycles, few of the removed versions' entries are left (without the sweep, they
    are more than the live ones)."""
    mode = Settings(versions="latest", keep_versions=0)
    cycles, live = _crawl(6)
    with State.open(None, mode) as state:
        detector = Detector(state)
        for pages in cycles:
            for start in range(0, len(pages), 4):
                detector.process(pages[start : start + 4])
        with State.open(None, mode) as fresh:
            Detector(fresh).process(list(live.values()))
            kept = len(_entries(state, "supershingles"))
            wanted = len(_entries(fresh, "supershingles"))
            assert wanted <= kept <= 1.5 * wanted
