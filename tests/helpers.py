"""Small builders shared by tests (real-text corpora live in bench/corpus.py)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from neardup.core import Page
from neardup.core.items.model import ItemModel
from neardup.core.items.schema import ItemSchema
from neardup.state import TABLES, DocRecord, State, StateView
from neardup.state.posting_log import FOLD_RANGES

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "pages.jsonl"

VOCABULARY = [f"w{i}" for i in range(3000)]


def family_pages(seed: int, families: int = 6, size: int = 5, words: int = 150) -> list[Page]:
    """Families of edited copies of random word sequences, with increasing fetched_at."""
    rng = np.random.default_rng(seed)
    pages = []
    for family in range(families):
        length = int(rng.integers(3, words))
        base = rng.choice(VOCABULARY, size=length)
        for member in range(size):
            text = base.copy()
            rate = rng.choice([0.0, 0.02, 0.1, 0.3])
            edits = rng.random(length) < rate
            text[edits] = rng.choice(VOCABULARY, size=int(edits.sum()))
            second = int(rng.integers(0, 59))
            pages.append(
                Page(
                    f"https://f{family}.example/{member}",
                    " ".join(text),
                    f"2026-03-{1 + member:02d}T10:00:{second:02d}.000000Z",
                )
            )
    return pages


def partition(state: State) -> set[frozenset[str]]:
    """Clusters as sets of URLs (ids left out), for comparing runs."""
    from neardup.streams.running.reports import cluster_lines

    return {frozenset(line["members"]) for line in cluster_lines(state)}


def merge_edges(view: StateView, count: int, edges: list[tuple[int, int]]) -> None:
    """Documents 1..count (no sketches), then each edge (0-based) joined in union-find, the
    older root surviving, as the detector joins them."""
    for doc_id in range(1, count + 1):
        view.documents.put(doc_id, DocRecord(f"u{doc_id}", "", 1, np.zeros(0, np.uint32)))
    clusters = view.clusters
    for a, b in edges:
        ra, rb = clusters.find(a + 1), clusters.find(b + 1)
        survivor, retired = sorted((ra, rb), key=clusters.age)
        clusters.merge(survivor, retired)


def random_text(rng: np.random.Generator, words: int = 300) -> list[str]:
    return list(rng.choice(VOCABULARY, size=words))


def edit_text(rng: np.random.Generator, words: list[str], rate: float) -> str:
    edited = np.array(words)
    changed = rng.random(len(edited)) < rate
    edited[changed] = rng.choice(VOCABULARY, size=int(changed.sum()))
    return " ".join(edited)


_FEB = "2026-02-01T00:00:"


def two_sweeps() -> tuple[list[Page], list[Page], dict[str, list[str]]]:
    """Two crawls of the same sites, and the words of each text: in the second,
    /news/1 changed a little, /news/2 moved to /archive/2 (and the old URL now serves a
    different page), /blog/3 is copied exactly to mirror.example/3."""
    rng = np.random.default_rng(7)
    texts = {name: random_text(rng) for name in ("one", "two", "three", "other", "fresh")}
    first = [
        Page("https://site.example/news/1", " ".join(texts["one"]), "2026-01-01T00:00:00Z"),
        Page("https://site.example/news/2", " ".join(texts["two"]), "2026-01-01T00:00:01Z"),
        Page("https://site.example/blog/3", " ".join(texts["three"]), "2026-01-01T00:00:02Z"),
        Page("https://other.example/x", " ".join(texts["other"]), "2026-01-01T00:00:03Z"),
    ]
    second = [
        Page(
            "https://site.example/news/1",
            edit_text(rng, texts["one"], 0.05),
            "2026-02-01T00:00:00Z",
        ),
        Page(
            "https://site.example/archive/2",
            edit_text(rng, texts["two"], 0.02),
            "2026-02-01T00:00:01Z",
        ),
        Page("https://site.example/news/2", " ".join(texts["fresh"]), "2026-02-01T00:00:02Z"),
        Page("https://mirror.example/3", " ".join(texts["three"]), "2026-02-01T00:00:03Z"),
    ]
    return first, second, texts


#: containment keys of the documents ``settle_containment_log`` posts, one each (so that no
#: list of theirs reaches a cap); no test corpus posts under them
SETTLING_KEYS = tuple(0xFFFF_FF00 + n for n in range(FOLD_RANGES))


def settle_containment_log(state: State) -> frozenset[bytes]:
    """Fold every posting logged so far into the containment lists, as batches fold them:
    each batch folds one key range of every earlier record (``PostingLog.post_new``), so
    ``FOLD_RANGES`` committed batches of one settling document each fold them all. Returns
    the settling documents' keys as stored, whose lists and log records are theirs alone."""
    for n, key in enumerate(SETTLING_KEYS):
        view = state.view()
        view.containment.post_new([np.array([key], np.uint32)], [(1 << 64) - 1 - n], [1])
        view.commit()
    return frozenset(key.to_bytes(4, "big") for key in SETTLING_KEYS)


def settled_tables(state: State) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every table of a state once its containment log is folded into the lists (which it
    commits): what two states given the same documents in other batches hold alike. The
    log's records and marks depend on the batches, and so do which of the settling
    documents' keys are folded: those are left out, lists and count of index keys."""
    settling = settle_containment_log(state)
    tables = {
        table: list(state.store.items(table)) for table in TABLES if table != "containment_log"
    }
    lists = tables["containment"]
    tables["containment"] = [item for item in lists if item[0] not in settling]
    folded = len(lists) - len(tables["containment"])  # each a new key of the index, counted
    meta = []
    for key, value in tables["meta"]:
        if key == b"count:index_keys:containment":
            value = (int.from_bytes(value, "big") - folded).to_bytes(8, "big")
        if not key.startswith(b"log:"):
            meta.append((key, value))
    tables["meta"] = meta
    return tables


def _family(name: str, base: list[str], rng: np.random.Generator, size: int = 4) -> list[Page]:
    pages = []
    for member in range(size):
        text = np.array(base)
        edits = rng.random(len(text)) < 0.02
        text[edits] = rng.choice(VOCABULARY, size=int(edits.sum()))
        pages.append(Page(f"https://{name}.example/{member}", " ".join(text), at_second(member)))
    return pages


def at_second(second: int) -> str:
    """A fetched_at on one day, ``second`` seconds into a minute."""
    return f"2026-03-01T10:00:{second:02d}.000000Z"


def hub_pages() -> tuple[list[Page], Page]:
    """Three families of four near-copies of 240 random words, and a hub page made of a third
    of each base text: it resembles each family's pages at about 0.19."""
    rng = np.random.default_rng(5)
    bases = {name: list(rng.choice(VOCABULARY, size=240)) for name in "abc"}
    pages = [page for name, base in bases.items() for page in _family(name, base, rng)]
    hub = " ".join(bases["a"][:80] + bases["b"][:80] + bases["c"][:80])
    return pages, Page("https://hub.example/", hub, at_second(30))


def item_model_where(schema: ItemSchema, agree: float, disagree: float, prior: float) -> ItemModel:
    """A hand-made item model: each comparison worth ``agree`` bits at its top level,
    ``disagree`` at its bottom one and 0 between, on ``prior`` odds (what a test sets when
    it needs known weights, not learned ones: a schema with ``learn = false``)."""
    from neardup.core.items.compare import comparisons_of

    m, u = [], []
    for comparison in comparisons_of(schema):
        bits = [disagree, *[0.0] * (comparison.levels - 2), agree]
        chance = [0.5, *[0.1] * (comparison.levels - 1)]
        u.append(tuple(chance))
        m.append(tuple(c * 2.0**b for c, b in zip(chance, bits, strict=True)))
    return ItemModel(
        tuple(c.name for c in comparisons_of(schema)), tuple(m), tuple(u), prior, items=1
    )


def store_item_model(state: State, model: ItemModel) -> None:
    view = state.view()
    view.items.put_model(model)
    view.commit()


def recrawl(pages: list[Page], rng: random.Random) -> tuple[list[Page], list[Page]]:
    """A second crawl of ``pages``' urls, later: each url fetched with other content, with
    another page's content (a copy), deleted, unchanged (a 304) or not at all; the crawl,
    and the live pages after both (each url's latest content)."""
    again: list[Page] = []
    for page in pages:
        later = "2026-05-01T00:00:00Z"
        kind = rng.choice(["other", "copy", "deleted", "unchanged", "none"])
        if kind == "other":
            again.append(Page(page.url, " ".join(reversed(page.content.split())), later))
        elif kind == "copy":
            again.append(Page(page.url, rng.choice(pages).content, later))
        elif kind != "none":
            again.append(Page(page.url, "", later, status=kind))  # type: ignore[arg-type]
    live = {page.url: page for page in pages}
    for page in again:
        if page.status == "deleted":
            del live[page.url]
        elif page.status == "fetched":
            live[page.url] = page
    return again, list(live.values())
