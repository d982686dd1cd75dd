"""How often two random items agree on a text field's words, level by level: u, sampled
where the agreement is.

Every level of word agreement but the lowest asks two items to share words, and two random
items seldom do: among the fit's 40,000 random pairs a title "sharing half its weight" turns
up a few times or never, and its u would be the prior's guess, not the data's (on
DBLP-Scholar, a guess that makes such a title worth 15 bits against prior odds of -16, and
joins papers on one topic into clusters of hundreds). Ten times as many random pairs would
measure it, at up to three times the fit's time.

So pairs that share a word are drawn on purpose: an item at random, one of its words (held
by another item) at random, an item holding that word at random; each drawn pair is
weighed by how much likelier the draw made it than a uniform draw (importance sampling:
the estimate of each level's share of all pairs is unbiased, and its error is that of the
draws, not of the rare levels among uniform ones). Pairs sharing no word are counted from
the uniform random pairs, as before; the two parts add up to u.

Written here: a sampler that knows its own proposal probability is a few lines over the
fit's own inverted index of words; no library samples pairs by shared tokens.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence

import numpy as np
import numpy.typing as npt

from .compare import TextFeatures

__all__ = ["SHARED_DRAWS", "comparable_pairs", "word_level_shares"]

#: pairs drawn through a shared word, per text field
SHARED_DRAWS = 20_000


def word_level_shares(
    texts: Sequence[TextFeatures | None],
    level_of: Callable[[TextFeatures, TextFeatures], int],
    levels: int,
    uniform: Sequence[tuple[int, int]],
    uniform_levels: Sequence[int],
    sources: Sequence[Hashable] | None,
    rng: random.Random,
    draws: int = SHARED_DRAWS,
) -> npt.NDArray[np.float64] | None:
    """Each level's share of the pairs whose field is present in both items (``sources``:
    a label per item, two items of one label never compared): pairs sharing a word
    estimated from ``draws`` pairs drawn through a shared word, the others from the
    ``uniform`` random pairs sharing no word (``uniform_levels``: the levels of all of
    them, MISSING where either lacks the field). None when there is nothing to draw
    from (no word held twice, or no uniform pair with the field)."""
    holders: dict[str, list[int]] = {}
    for at, text in enumerate(texts):
        if text is not None:
            for word in text.words:
                holders.setdefault(word, []).append(at)
    present = [at for at, text in enumerate(texts) if text is not None]
    own = [_held(texts[at], holders) for at in range(len(texts))]
    starts = [at for at in present if own[at]]
    both = [
        (a, b, level)
        for (a, b), level in zip(uniform, uniform_levels, strict=True)
        if texts[a] is not None and texts[b] is not None
    ]
    pairs = comparable_pairs(present, sources)
    if not starts or not both or pairs <= 0.0:
        return None
    shares = np.zeros(levels)
    for a, b, level in both:
        left, right = texts[a], texts[b]
        assert left is not None and right is not None
        if not _shared(left, right):
            shares[level] += 1.0 / len(both)
    # a uniform draw: one of the comparable pairs, in either order
    uniform_probability = 1.0 / (2.0 * pairs)
    for _ in range(draws):
        a = starts[rng.randrange(len(starts))]
        word = own[a][rng.randrange(len(own[a]))]
        others = holders[word]
        b = others[rng.randrange(len(others) - 1)]
        if b == a:
            b = others[-1]
        if sources is not None and sources[a] == sources[b]:
            continue
        left, right = texts[a], texts[b]
        assert left is not None and right is not None
        proposal = sum(
            1.0 / (len(own[a]) * (len(holders[shared]) - 1))
            for shared in own[a]
            if shared in right.where
        ) / len(starts)
        shares[level_of(left, right)] += uniform_probability / proposal / draws
    total = float(shares.sum())
    return shares / total if total > 0.0 else None


def comparable_pairs(present: Sequence[int], sources: Sequence[Hashable] | None) -> float:
    """The pairs of the items at ``present`` that are compared: all of them, or those of
    different labels (``sources``: a label per item, two of one label never compared)."""
    n = len(present)
    if sources is None:
        return n * (n - 1) / 2.0
    by_source: dict[Hashable, int] = {}
    for at in present:
        by_source[sources[at]] = by_source.get(sources[at], 0) + 1
    return n * (n - 1) / 2.0 - sum(k * (k - 1) / 2.0 for k in by_source.values())


def _held(text: TextFeatures | None, holders: dict[str, list[int]]) -> list[str]:
    """The item's words that another item holds too."""
    if text is None:
        return []
    return [word for word in text.words if len(holders[word]) > 1]


def _shared(a: TextFeatures, b: TextFeatures) -> bool:
    return any(word in b.where for word in a.words)
