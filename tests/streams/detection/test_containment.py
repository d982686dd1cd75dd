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
