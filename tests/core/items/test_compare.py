"""The levels two items' fields agree at (``core.items.compare``) and the evidence they give."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from neardup.core.items.compare import FUZZY, _word_match
from neardup.core.items.model import ItemModel
from neardup.core.items.prepare import ItemPreparer
from neardup.core.items.schema import ItemSchema
from neardup.core.items.scorer import Scorer
from rapidfuzz.distance import Indel

PAPERS = """\
id = "id"
[fields.title]
type = "text"
weight = 3
[fields.venue]
type = "text"
weight = 1
"""


def _compared(a: dict[str, str], b: dict[str, str]) -> dict[str, tuple[int, float]]:
    """Per comparison, the pair's level and the evidence (bits) it gives under the prior."""
    schema = ItemSchema.from_toml(PAPERS)
    scorer = Scorer(schema, ItemModel.prior_of(schema))
    preparer = ItemPreparer(schema)
    left, right = (scorer.features(preparer.prepare(x).values) for x in (a, b))
    levels, _ = scorer.compare(left, right)
    evidence = scorer.evidence(levels, left)
    return {
        c.name: (level, bits)
        for c, level, bits in zip(scorer.comparisons, levels, evidence, strict=True)
    }


def test_a_texts_numbers_are_compared_apart_from_its_words() -> None:
    found = _compared(
        {"id": "1", "title": "Tables 1 and 2", "venue": "Proceedings of the 26th Meeting 1991"},
        {"id": "2", "title": "Tables 1 and 3", "venue": "Proc. 26th Annual Meeting, 1991"},
    )
    assert found["venue"][0] < 7  # the words differ ("Proc.", "Annual"): not equal texts
    assert found["venue#numbers"][0] == 3  # the same numbers in other words
    assert found["venue#numbers"][1] > 0.0
    assert found["title#numbers"][0] == 1  # some shared, each with one the other lacks


@given(st.text("abcde", min_size=1, max_size=14), st.text("abcde", min_size=1, max_size=14))
def test_close_words_are_indel_s_whatever_their_lengths(a: str, b: str) -> None:
    """Words whose lengths alone keep them apart skip the spelling comparison: the verdict
    is the full rule's (initials, short words, Indel similarity at FUZZY or more)."""
    if len(a) == 1 or len(b) == 1:
        expected = 0.5 if a[0] == b[0] else 0.0
    elif min(len(a), len(b)) < 4:
        expected = 0.0
    else:
        similarity = Indel.normalized_similarity(a, b)
        expected = similarity if similarity >= FUZZY else 0.0
    assert _word_match(a, b) == expected
