"""Containment queries on small examples against exact counts: exact when both sets are
whole in their sketches, and both directions reported."""

from __future__ import annotations

import numpy as np
from neardup.core import Page, Preparer, Settings, Tokenizer, shingle_sets, to_canonical_text
from neardup.state import State
from neardup.streams import Detector
from neardup.streams.detection import Contained, find_containing, find_similar

from tests.helpers import random_text


def _set(text: str, settings: Settings) -> set[int]:
    tokens = Tokenizer(settings.seed, settings.token_unit).hash_batch(
        [to_canonical_text(text, "text/plain")]
    )
    return set(shingle_sets(tokens, settings.shingle_size, settings.seed)[0].tolist())


def test_small_documents_are_compared_exactly() -> None:
    settings = Settings()
    rng = np.random.default_rng(3)
    words = random_text(rng, 200)  # under sample_size shingles: its sketch is its whole set
    source = " ".join(words)
    excerpt = " ".join(words[40:100] + random_text(rng, 15))
    with State.open(None, settings) as state:
        Detector(state).process([Page("https://a.example/source", source)])
        query = Preparer(settings).prepare([Page("q:", excerpt)], query=True)[0]
        (match,) = find_containing(state.view(), query, settings, 0.5)
    a, b = _set(excerpt, settings), _set(source, settings)
    assert match.estimate.exact
    assert match.estimate.containment == len(a & b) / len(a)
    assert match.estimate.containment_reverse == len(a & b) / len(b)
    assert match.method == "contained"


def test_a_new_document_contained_in_an_earlier_one_and_one_containing_it() -> None:
    settings = Settings(containment_threshold=0.5)
    rng = np.random.default_rng(4)
    words = random_text(rng, 1500)
    source = " ".join(words)
    first, later = " ".join(words[:200]), " ".join(words[600:800])
    with State.open(None, settings) as state:
        detector = Detector(state)
        events = detector.process([Page("https://a.example/excerpt", first)]).events
        events += detector.process([Page("https://a.example/source", source)]).events
        events += detector.process([Page("https://a.example/later", later)]).events
        other = Page("q:", " ".join(random_text(rng, 300)))
        unrelated = Preparer(settings).prepare([other], query=True)[0]
        assert find_similar(state.view(), unrelated, settings) == []
    contained = [e for e in events if isinstance(e, Contained)]
    assert [(e.doc.url, e.match.url) for e in contained] == [
        ("https://a.example/source", "https://a.example/excerpt"),  # the source contains it
        ("https://a.example/later", "https://a.example/source"),  # in the source
    ]
    assert contained[0].contains > 0.9 and contained[0].containment < 0.3
    assert contained[1].containment > 0.9 and contained[1].contains < 0.3
    assert all(e.to_json()["type"] == "contained" for e in contained)


def test_the_default_query_finds_the_sources_and_asked_for_excerpts_the_excerpts() -> None:
    """A digest quoting three stored pages whole (a quarter of it each): the pages are all
    inside it and it is a quarter inside each, so the default query's sources miss them
    (resemblance, 0.25, may meet one); asked for excerpts, the query finds each. An excerpt
    of a stored page finds its source either way."""
    settings = Settings()
    rng = np.random.default_rng(5)
    texts = [random_text(rng, 1500) for _ in range(4)]
    urls = [f"https://a.example/{n}" for n in range(3)]
    with State.open(None, settings) as state:
        Detector(state).process([Page(u, " ".join(t)) for u, t in zip(urls, texts, strict=False)])
        prepare = Preparer(settings).prepare
        digest = prepare([Page("q:", " ".join(" ".join(t) for t in texts))], query=True)[0]
        plain = find_similar(state.view(), digest, settings)
        assert len(plain) < 3 and all(m.method == "near" for m in plain)  # by chance, r=0.25
        found = find_similar(state.view(), digest, settings, excerpts=True)
        assert sorted(m.doc.url for m in found) == urls
        assert {m.method for m in found} - {"near"} == {"contained"}
        assert all(m.estimate.containment_reverse > 0.9 for m in found)
        assert all(m.estimate.containment < 0.35 for m in found)
        assert find_containing(state.view(), digest, settings, 0.8) == []
        inside = find_containing(state.view(), digest, settings, 0.8, excerpts=True)
        assert sorted(m.doc.url for m in inside) == urls
        excerpt = prepare([Page("q:", " ".join(texts[1][300:900]))], query=True)[0]
        for excerpts in (False, True):
            (source,) = find_similar(state.view(), excerpt, settings, excerpts=excerpts)
            assert source.doc.url == urls[1] and source.estimate.containment > 0.9


def test_a_limited_query_keeps_the_best_of_the_full_ranking() -> None:
    """``limit`` ranks before it reads the matches' URLs and clusters: the kept matches are
    the first of the unlimited answer, in its order, for both kinds of query."""
    settings = Settings()
    rng = np.random.default_rng(6)
    words = random_text(rng, 900)
    # copies of one page with more and more of it replaced, and an exact copy
    pages = [
        Page("https://a.example/0", " ".join(words)),
        Page("https://b.example/0", " ".join(words)),
    ]
    for n in range(1, 8):
        edited = list(words)
        for at in rng.choice(len(words), size=40 * n, replace=False):
            edited[int(at)] = "changed"
        pages.append(Page(f"https://a.example/{n}", " ".join(edited)))
    with State.open(None, settings) as state:
        Detector(state).process(pages)
        query = Preparer(settings).prepare([Page("q:", " ".join(words[:700]))], query=True)[0]
        view = state.view()
        similar = find_similar(view, query, settings)
        containing = find_containing(view, query, settings, 0.5)
        assert len(similar) > 3 and len(containing) >= 3
        ranks = [(-m.estimate.resemblance, -m.estimate.containment) for m in similar]
        assert ranks == sorted(ranks)
        held = [-m.estimate.containment for m in containing]
        assert held == sorted(held)
        for limit in (1, 3, len(pages)):
            assert find_similar(view, query, settings, limit=limit) == similar[:limit]
            assert find_containing(view, query, settings, 0.5, limit=limit) == containing[:limit]
