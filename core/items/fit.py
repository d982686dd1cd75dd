"""Fitting the model to a sample of items: counts, u from random pairs, m from anchors.

1. **Counts.** Per text field, how many items hold each word; per exact comparison, how
   many hold each whole value; how many hold each code. Counted once an entity: candidates
   that agree on two identifying comparisons, the primary text (the heaviest: a name, a
   title) one of them, are grouped (union-find), and a group counts as one item, so that
   a word is common when many entities hold it, not when one entity has many records (the
   company on hundreds of patent records; its records would otherwise agree on "common"
   words only, and be cut apart); the songs of an album, which differ in their titles
   only, are no group. One round: a second joined no more on the bench's corpora, and
   each costs a comparison of every candidate pair.
2. **u** (the levels of non-matching pairs): the levels of random pairs of the sample
   (never two of a source that lists each entity once). Almost every random pair is
   a non-match, so their levels are the non-matches' (Fellegi and Sunter; splink does the
   same). Candidates are not: most candidates of a record are near misses, and its match
   is among them. A text field's levels above the lowest need shared words, which random
   pairs seldom have: pairs sharing a word are drawn through the words and weighed by how
   much likelier the draw made them (``chance.py``), so a rare level's u is measured, not
   the prior's. When one entity fills the sample (``_CROWDED``: random pairs agree
   as confident matches do), random pairs are its matches, and u, the value counts and
   the scales are left at the schema's prior.
3. **m** (the levels of matching pairs), counted over anchor pairs: the candidates that are
   each other's best (by the schema-weighted mean of their fields' similarities) and agree
   at the top of two identifying comparisons (a name and a phone, a title and a code) other
   than the one whose m is counted, which plays no part in choosing its anchors (as splink
   trains m on blocks, leaving the blocking field out). An exact agreement on a value that
   a third item holds (a column's title, a journal) is a series', not an entity's, and
   anchors nothing (``_common_agreements``). Copies (every field equal) are left
   out, and so are pairs whose primary text (the heaviest: a name, a title) shares a word
   at most, unless an identifier or codes agree (``_named``): the songs of an album agree
   on all but their titles, and counted as matches they made a title sharing "feat." or
   nothing at all a sign of a match (iTunes-Amazon: +5 bits); held by a phone or a birth
   date, such a pair is a match written otherwise (Febrl swaps names). This is the EM of
   Fellegi-Sunter with the anchors' classes known; EM proper, over all the candidates with
   u held at the random pairs', converged on near misses (a brand, a neighbourhood) on four
   corpora of six (bench/items/README.md). A prior of a few pairs' worth, shaped by the
   schema's weights (``ItemModel.prior_of``), fills what the anchors lack.
4. **Scales and prior odds** (``calibration.py``): how much each comparison counts among
   candidates, and the odds a pair needs, halfway (in log-odds) between a random pair's and
   the point where near misses part from matches.
5. **Series** (``series.py``): fields whose shared values many distinct entities hold (a
   venue, a category), and how much likelier they make the texts' partial agreements; a
   text's evidence is discounted where a pair agrees on one.

Pure: the caller chooses the sample (``streams/detection/item_fit.py``).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from ..exceptions import AbandonedError
from .blocking import Blocker
from .calibration import LEAST_ANCHORS, NEAR_MISS_LEVEL, calibrate, prior_odds, scaled
from .chance import comparable_pairs, word_level_shares
from .compare import (
    MISSING,
    Comparison,
    Features,
    TextFeatures,
    codes_of,
    comparisons_of,
    term_hash,
    words_level,
)
from .comparing import Comparing, Elsewhere
from .model import Counts, ItemModel
from .prepare import PreparedItem
from .schema import ItemSchema
from .scorer import ItemFeatures, Scorer
from .series import series_discounts
from .values import CategoryValue, IdentifierValue, TextValue

__all__ = [
    "FIT_CANDIDATES",
    "MISSED",
    "RANDOM_PAIRS",
    "SAMPLED",
    "KeyedPairs",
    "candidate_pairs",
    "count_terms",
    "fit",
    "keyed_pairs",
    "least_shared",
]

#: random pairs whose levels give u
RANDOM_PAIRS = 40_000
#: candidates an item brings to the fit, at most (those sharing most keys)
FIT_CANDIDATES = 10
#: of an item's other candidates, those drawn to tell how many keys matches share
SAMPLED = 3
#: the share of the matches the candidates sharing fewer than ``least_shared`` keys may hold
MISSED = 0.005
#: postings per key within the sample, as the index caps them
_CAP = 1000
#: the prior's weight in m, in pairs
_PRIOR_PAIRS = 4.0
#: steps of a fit's loops between two checks for a stop
_STOP_EVERY = 2048
_T = TypeVar("_T")
#: the share of random pairs agreeing like confident matches that marks a crowded sample
_CROWDED = 0.05
I8 = npt.NDArray[np.int8]


def count_terms(
    schema: ItemSchema, items: Sequence[PreparedItem], groups: Sequence[int] | None = None
) -> tuple[tuple[Counts, ...], tuple[Counts, ...], Counts]:
    """(per field word counts, per comparison value counts, code counts) of the items; with
    ``groups`` (a label per item), each group counts as one item holding the terms of all
    its members."""
    comparisons = comparisons_of(schema)
    words: list[dict[int, int]] = [defaultdict(int) for _ in schema.fields]
    holding = [0] * len(schema.fields)
    values: list[dict[int, int]] = [defaultdict(int) for _ in comparisons]
    codes: dict[int, int] = defaultdict(int)
    exact_of = {c.field: at for at, c in enumerate(comparisons) if c.kind in _EXACT_KINDS}
    labels = range(len(items)) if groups is None else groups
    seen: set[tuple[int, int, int]] = set()

    def first(group: int, place: int, term: int) -> bool:
        if (group, place, term) in seen:
            return False
        seen.add((group, place, term))
        return True

    codes_place = len(schema.fields) + len(comparisons)
    for item, group in zip(items, labels, strict=True):
        for index, value in enumerate(item.values):
            if value is None:
                continue
            holding[index] += first(group, index, -1)
            whole: int | None = None
            if isinstance(value, TextValue):
                for term in {term_hash("t", word) for word in value.words.split()}:
                    words[index][term] += first(group, index, term)
                whole = term_hash("v", value.words)
            elif isinstance(value, (CategoryValue, IdentifierValue)):
                whole = term_hash("v", value.value)
            if whole is not None:
                place = len(schema.fields) + exact_of[index]
                values[exact_of[index]][whole] += first(group, place, whole)
        for code in codes_of(schema, item.values):
            codes[code] += first(group, codes_place, code)
    value_totals = [
        holding[c.field] if c.field >= 0 and c.kind in _EXACT_KINDS else 0 for c in comparisons
    ]
    return (
        tuple(Counts.of(holding[i], words[i]) for i in range(len(schema.fields))),
        tuple(Counts.of(value_totals[at], values[at]) for at in range(len(comparisons))),
        Counts.of(len(set(labels)), codes),
    )


_EXACT_KINDS = frozenset({"words", "category", "identifier"})


@dataclass(slots=True)
class KeyedPairs:
    """The fit's candidate pairs (by position), each once: of an item's earlier candidates,
    the ``FIT_CANDIDATES`` sharing most keys with it (an entity of hundreds of records would
    otherwise bring hundreds of thousands of pairs), and a seeded sample of the others
    (``SAMPLED`` an item), each standing for the others it was drawn from."""

    pairs: list[tuple[int, int]] = field(default_factory=list)
    shared: list[int] = field(default_factory=list)  # keys each pair shares
    sampled: list[tuple[int, int]] = field(default_factory=list)
    sampled_shared: list[int] = field(default_factory=list)
    stands_for: list[float] = field(default_factory=list)


def keyed_pairs(
    schema: ItemSchema,
    model: ItemModel,
    items: Sequence[PreparedItem],
    seed: int = 0,
    should_stop: Callable[[], bool] | None = None,
) -> KeyedPairs:
    """The pairs of ``items`` that share a key under ``model`` (``KeyedPairs``)."""
    blocker = Blocker(schema, model)
    rng = random.Random(seed)
    index: dict[int, list[int]] = defaultdict(list)
    found = KeyedPairs()
    for at, item in _Stopper(should_stop).each(enumerate(items)):
        posted, probes = blocker.keys(item.values)
        met: Counter[int] = Counter()
        for key in probes:
            met.update(index.get(key, ()))
        ranked = [
            other
            for other in sorted(met, key=lambda other: (-met[other], other))
            if _comparable(schema, items, other, at)
        ]
        for other in sorted(ranked[:FIT_CANDIDATES]):
            found.pairs.append((other, at))
            found.shared.append(met[other])
        rest = ranked[FIT_CANDIDATES:]
        for other in sorted(rng.sample(rest, min(SAMPLED, len(rest)))):
            found.sampled.append((other, at))
            found.sampled_shared.append(met[other])
            found.stands_for.append(len(rest) / min(SAMPLED, len(rest)))
        for key in posted:
            posting = index[key]
            if len(posting) < _CAP:
                posting.append(at)
    return found


def candidate_pairs(
    schema: ItemSchema,
    model: ItemModel,
    items: Sequence[PreparedItem],
    should_stop: Callable[[], bool] | None = None,
) -> list[tuple[int, int]]:
    """``keyed_pairs``' pairs sharing most keys."""
    return keyed_pairs(schema, model, items, should_stop=should_stop).pairs


def least_shared(shared: Sequence[int], matched: Sequence[float]) -> int:
    """The most keys a candidate may be asked to share while the candidates sharing fewer
    hold at most ``MISSED`` of the matches (``matched``: how many matches each candidate
    stands for, 0 if it does not match)."""
    by_shared: defaultdict[int, float] = defaultdict(float)
    for keys, weight in zip(shared, matched, strict=True):
        by_shared[keys] += weight
    total = sum(by_shared.values())
    least, below = 1, 0.0
    for keys in sorted(by_shared):
        if below > MISSED * total:
            break
        least = keys
        below += by_shared[keys]
    return least


def _comparable(schema: ItemSchema, items: Sequence[PreparedItem], a: int, b: int) -> bool:
    return schema.compares(items[a].source, items[b].source)


def _never_compared(schema: ItemSchema, items: Sequence[PreparedItem]) -> list[Hashable] | None:
    """A label per item, two items of one label never compared (their source, where it lists
    each entity once; else the item's own), or None when any two are compared."""
    if schema.link == "any" and not schema.once:
        return None
    return [
        item.source if schema.listed_once(item.source) else ("item", at)
        for at, item in enumerate(items)
    ]


def _random_pairs(
    schema: ItemSchema, items: Sequence[PreparedItem], count: int, rng: random.Random
) -> list[tuple[int, int]]:
    """Pairs drawn at random (not two items of a source that lists each entity once)."""
    n = len(items)
    if n < 2:
        return []
    everything = n * (n - 1) // 2
    if everything <= count:
        return [
            (a, b) for a in range(n) for b in range(a + 1, n) if _comparable(schema, items, a, b)
        ]
    found: set[tuple[int, int]] = set()
    tries = 0
    while len(found) < count and tries < 20 * count:
        tries += 1
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b and _comparable(schema, items, a, b):
            found.add((min(a, b), max(a, b)))
    return sorted(found)


def _skewed(
    by_item: tuple[tuple[Counts, ...], tuple[Counts, ...], Counts],
    by_group: tuple[tuple[Counts, ...], tuple[Counts, ...], Counts],
) -> bool:
    """Whether counting once a group changes some term's share of the items holding its
    field more than ``_SKEW`` times (more than two bits of its weight)."""
    words, values, codes = by_item
    grouped_words, grouped_values, grouped_codes = by_group
    for before, after in zip(
        (*words, *values, codes), (*grouped_words, *grouped_values, grouped_codes), strict=True
    ):
        if not before.total or not after.total:
            continue
        scale = after.total / before.total
        grouped = after.as_dict()
        if any(count * scale > _SKEW * grouped[term] for term, count in before.as_dict().items()):
            return True
    return False


#: how many times a term's share may change by counting it once a group, and the weights
#: fitted on counts by item kept
_SKEW = 4.0


def _groups(count: int, pairs: Sequence[tuple[int, int]], confident: Sequence[int]) -> list[int]:
    """A label per item of ``count`` (the least position in its group): the items joined
    along the confident pairs (rows of ``pairs``), by union-find."""
    parent = list(range(count))

    def root(at: int) -> int:
        while parent[at] != at:
            parent[at] = parent[parent[at]]
            at = parent[at]
        return at

    for row in confident:
        a, b = (root(x) for x in pairs[row])
        if a != b:
            parent[max(a, b)] = min(a, b)
    return [root(at) for at in range(len(parent))]


class _Stopper:
    """Asks ``should_stop`` every ``_STOP_EVERY`` steps of the loops it wraps."""

    def __init__(self, should_stop: Callable[[], bool] | None) -> None:
        self.should_stop = should_stop

    def each(self, steps: Iterable[_T]) -> Iterator[_T]:
        for at, step in enumerate(steps):
            if at % _STOP_EVERY == 0 and self.should_stop is not None and self.should_stop():
                raise AbandonedError("a stop was asked for while the model was being fitted")
            yield step


def _text(features: Features | None) -> TextFeatures | None:
    return features if isinstance(features, TextFeatures) else None


def _words_level(a: TextFeatures, b: TextFeatures) -> int:
    return words_level(a, b)[0]


def _shares(levels: I8, weights: npt.NDArray[np.float64], size: int) -> npt.NDArray[np.float64]:
    """Per level, the weighted count of pairs at it (pairs MISSING here left out)."""
    present = levels != MISSING
    counts = np.bincount(levels[present].astype(np.int64), weights=weights[present], minlength=size)
    return counts.astype(np.float64)


def _mutual_best(pairs: Sequence[tuple[int, int]], weights: npt.NDArray[np.float64]) -> list[int]:
    """The rows of the pairs whose items are each other's best candidate."""
    best: dict[int, tuple[float, int]] = {}
    for row, (a, b) in enumerate(pairs):
        for item in (a, b):
            if item not in best or weights[row] > best[item][0]:
                best[item] = (float(weights[row]), row)
    return sorted(
        row for row, (a, b) in enumerate(pairs) if best[a][1] == row and best[b][1] == row
    )


def _estimate_m(
    comparisons: Sequence[Comparison],
    levels: I8,
    anchors: Sequence[int],
    m0: Sequence[npt.NDArray[np.float64]],
    primary: int | None = None,
    common: npt.NDArray[np.bool_] | None = None,
) -> list[npt.NDArray[np.float64]]:
    """m of every comparison, counted over anchor pairs: mutual best candidates that agree
    at the top of two identifying comparisons other than the one estimated (a name and a
    phone, a title and a code). Two such agreements are rarely by chance, and the estimated
    comparison plays no part in choosing its pairs (as splink trains on blocks, leaving the
    blocking field out); one agreement alone is not enough: a chain's branches share a name
    and nothing else. An agreement on a value that a third item holds identifies neither
    (``common``, per row of ``levels``: ``_common_agreements``). A comparison whose schema
    has too few identifying others is counted over anchors agreeing on the one there is.
    The prior fills in what the anchors lack."""
    anchor_levels = levels[anchors]
    identifying = [
        at for at, comparison in enumerate(comparisons) if comparison.kind in _ANCHOR_KINDS
    ]
    top = np.zeros(anchor_levels.shape, dtype=bool)
    for at in identifying:
        top[:, at] = anchor_levels[:, at] >= _near_top(comparisons[at])
    if common is not None:
        top &= ~common[anchors]
    named = _named(comparisons, anchor_levels, primary)
    estimated = []
    for column, start in enumerate(m0):
        others = [at for at in identifying if at != column]
        agreeing = top[:, others].sum(axis=1) if others else np.zeros(len(anchor_levels))
        chosen = agreeing >= min(2, len(others))
        if len(others) == 0 or int(chosen.sum()) < LEAST_ANCHORS:
            chosen = agreeing >= 1
        if column == primary:
            # its lowest levels counted where an identifier holds the pair (module docstring)
            chosen &= named
        counts = _shares(anchor_levels[chosen, column], np.ones(int(chosen.sum())), len(start))
        estimated.append((counts + _PRIOR_PAIRS * start) / (counts.sum() + _PRIOR_PAIRS))
    return estimated


def _common_agreements(
    scorer: Scorer,
    features: Sequence[ItemFeatures],
    pairs: Sequence[tuple[int, int]],
    levels: I8,
    held: Sequence[Counts],
) -> npt.NDArray[np.bool_]:
    """Per pair and comparison, whether the pair agrees exactly on a whole value that a
    third item of the sample holds too: a column's title ("Recent BT Patents", "Foreword"),
    a journal, an author who wrote several papers. Such an agreement is how a series looks,
    not an entity; anchored on it, the matches' m took in the series' other pages, whose
    authors and years differ (DBLP-Scholar: m of authors disagreeing 0.28, 0.10 in truth).
    An entity's records that are three or more do not anchor on the value then; the pairs
    that do are enough to count m. ``held``: each comparison's whole values counted by item
    (``count_terms``)."""
    common = np.zeros(levels.shape, dtype=bool)
    if not len(pairs):
        return common
    firsts = np.array([a for a, _ in pairs], dtype=np.int64)
    for at, comparison in enumerate(scorer.comparisons):
        if comparison.kind not in _ANCHOR_KINDS:
            continue
        holders = held[at].as_dict()
        values = [scorer.exact_value(at, item) for item in features]
        shared = np.array([v is not None and holders.get(v, 0) > 2 for v in values], dtype=bool)
        common[:, at] = (levels[:, at] == comparison.levels - 1) & shared[firsts]
    return common


def _not_copies(comparisons: Sequence[Comparison], levels: I8, rows: Sequence[int]) -> list[int]:
    """``rows`` without the pairs of copies (every level at the top): they say nothing of
    how a match's fields differ, and a source that repeats its own records would make every
    field look as if it always agreed."""
    tops = np.array([c.levels - 1 for c in comparisons])
    present = levels[rows] != MISSING
    copies = np.all(np.where(present, levels[rows] == tops, True), axis=1)
    return [row for row, copy in zip(rows, copies.tolist(), strict=True) if not copy]


def _anchors(comparisons: Sequence[Comparison], levels: I8, best: Sequence[int]) -> list[int]:
    """The mutual best pairs that agree at the top of two identifying comparisons (or of
    the one there is): confident matches."""
    identifying = [at for at, c in enumerate(comparisons) if c.kind in _ANCHOR_KINDS]
    chosen = []
    for row in best:
        agreeing = sum(1 for at in identifying if levels[row, at] >= _near_top(comparisons[at]))
        if agreeing >= min(2, len(identifying)):
            chosen.append(row)
    return chosen


def _agreeing(comparisons: Sequence[Comparison], levels: I8, primary: int | None) -> list[int]:
    """The rows agreeing on two identifying comparisons (or on the one there is), one of
    them the primary text (the heaviest: a name, a title) when there is one: at the top of
    an identifier or codes, at "contained" or above for words ("1200 main street" in
    "1200 main street suite 4": an entity's own words count for little before its records
    are grouped, so a word it lacks weighs more than the many it shares). The songs of an
    album agree on all but their titles: they are not one entity."""
    identifying = [at for at, c in enumerate(comparisons) if c.kind in _ANCHOR_KINDS]
    if not identifying:
        return []
    least = np.array(
        [
            _CONTAINED if comparisons[at].kind == "words" else comparisons[at].levels - 1
            for at in identifying
        ]
    )
    agrees = levels[:, identifying] >= least
    chosen = agrees.sum(axis=1) >= min(2, len(identifying))
    if primary is not None:
        chosen &= agrees[:, identifying.index(primary)]
    return np.flatnonzero(chosen).tolist()


def _named(
    comparisons: Sequence[Comparison], levels: I8, primary: int | None
) -> npt.NDArray[np.bool_]:
    """Per row, whether it may be a confident match: its primary text (a name, a title)
    shares more than a word, or an identifier or codes agree at the top (a phone, an id, a
    birth date: what one record holds). A pair held only by words a group shares (an album,
    an artist, a building) is the next song or shop; held by an identifier, it is a match
    written otherwise (names swapped, a name changed)."""
    if primary is None:
        return np.ones(len(levels), dtype=bool)
    found = levels[:, primary] > NEAR_MISS_LEVEL
    for at, comparison in enumerate(comparisons):
        if comparison.kind in _ANCHOR_KINDS and comparison.kind != "words":
            found |= levels[:, at] >= comparison.levels - 1
    return found


def _primary(schema: ItemSchema, comparisons: Sequence[Comparison]) -> int | None:
    """The comparison of the heaviest words field (a name, a title), if any."""
    texts = [at for at, c in enumerate(comparisons) if c.kind == "words"]
    if not texts:
        return None
    return max(texts, key=lambda at: schema.fields[comparisons[at].field].weight)


#: the level of words at which the lighter side is contained in the other
_CONTAINED = 3


def _near_top(comparison: Comparison) -> int:
    """The least level at which an identifying comparison agrees as a match does (the top
    three of words: equal, nearly, mostly; the top of the others)."""
    return comparison.levels - (3 if comparison.kind == "words" else 1)


_ANCHOR_KINDS = frozenset({"words", "identifier", "codes"})


def fit(
    schema: ItemSchema,
    items: Sequence[PreparedItem],
    seed: int = 0,
    should_stop: Callable[[], bool] | None = None,
    elsewhere: Elsewhere | None = None,
) -> ItemModel:
    """The model fitted to ``items`` (in a fixed order: the result depends on it only through
    the seeded sampling of pairs). ``should_stop`` is asked every few thousand pairs; when it
    says so, ``AbandonedError`` is raised (a fit of 20,000 items takes tens of seconds).
    ``elsewhere``: where some pairs are compared meanwhile (``comparing.py``: the same
    levels, on a second core)."""
    stop = _Stopper(should_stop)
    prior = ItemModel.prior_of(schema)
    words, values, codes = count_terms(schema, items)
    by_item = values  # each item's whole values, before an entity's records count once
    counted = ItemModel(
        prior.comparisons, prior.m, prior.u, prior.prior, len(items), words, values, codes
    )
    if len(items) < 2:
        return counted
    rng = random.Random(seed)
    random_pairs = _random_pairs(schema, items, RANDOM_PAIRS, rng)
    comparing = Comparing(schema, counted, items, stop.each, elsewhere)
    randoms_later = comparing.later(random_pairs)
    scorer, features = comparing.scorer, comparing.features
    keyed = keyed_pairs(schema, counted, items, seed, should_stop)
    pairs = keyed.pairs
    candidates, ranking = comparing.now(pairs)
    drawn_later = comparing.later(keyed.sampled)
    # an entity's records repeat its words: counted once an entity, the name of a company
    # on hundreds of records tells as much as a name on two (and its records then agree as
    # confidently as a small entity's); entities of even sizes keep the same shares, and
    # the model counted by item
    primary = _primary(schema, scorer.comparisons)
    confident = _agreeing(scorer.comparisons, candidates, primary)
    groups = _groups(len(items), pairs, confident)
    grouped_counts = count_terms(schema, items, groups)
    if _skewed((words, values, codes), grouped_counts):
        words, values, codes = grouped_counts
        counted = ItemModel(
            prior.comparisons, prior.m, prior.u, prior.prior, len(items), words, values, codes
        )
        comparing.cancel()  # compared under the counts by item: again, under these
        comparing = Comparing(schema, counted, items, stop.each, elsewhere)
        scorer, features = comparing.scorer, comparing.features
        candidates, ranking = comparing.now(pairs)
        randoms_later = comparing.later(random_pairs)
        drawn_later = comparing.later(keyed.sampled)
    sources = _never_compared(schema, items)
    comparable = comparable_pairs(range(len(items)), sources)
    randoms, _ = randoms_later()
    m0 = [np.asarray(row, dtype=float) for row in prior.m]
    if len(candidates):
        best = _not_copies(scorer.comparisons, candidates, _mutual_best(pairs, ranking))
        anchors = _anchors(scorer.comparisons, candidates, best)
        common = _common_agreements(scorer, features, pairs, candidates, by_item)
        m = _estimate_m(scorer.comparisons, candidates, best, m0, primary, common)
        if anchors:
            rows = np.asarray(anchors, dtype=np.int64)
            anchors = rows[_named(scorer.comparisons, candidates[rows], primary)].tolist()
    else:
        m, anchors = m0, []
    u0 = [np.asarray(row, dtype=float) for row in prior.u]
    sure = _anchors(scorer.comparisons, randoms, range(len(randoms)))
    if len(sure) >= _CROWDED * len(randoms):
        # one entity fills the sample (thousands of near-equal records): random pairs are
        # its matches, and telling agreement by chance from a match is left to the schema
        # (a value's frequency is the entity's size here, not the odds of a chance match)
        u, anchors, values = u0, [], prior.values
    else:
        u = []
        # when the random pairs are every pair, their levels are exact: nothing to draw
        sampled = len(random_pairs) < comparable
        for column, chance_prior in enumerate(u0):
            counts = _shares(randoms[:, column], np.ones(len(randoms)), len(chance_prior))
            comparison = scorer.comparisons[column]
            if sampled and comparison.kind == "words":
                texts = [_text(f.fields[comparison.field]) for f in features]
                drawn = word_level_shares(
                    texts,
                    _words_level,
                    len(chance_prior),
                    random_pairs,
                    randoms[:, column].tolist(),
                    sources,
                    rng,
                )
                if drawn is not None:
                    counts = drawn * counts.sum()
            u.append((counts + _PRIOR_PAIRS * chance_prior) / (counts.sum() + _PRIOR_PAIRS))
    fitted = ItemModel(
        prior.comparisons, _rows_of(m), _rows_of(u), 0.0, len(items), words, values, codes
    )
    final = Scorer(schema, fitted)
    evidence = final.evidence_rows(candidates, [features[a] for a, _ in pairs])
    chance = final.evidence_rows(randoms, [features[a] for a, _ in random_pairs])
    if len(candidates):
        primary_levels = None if primary is None else candidates[:, primary]
        start = prior_odds(evidence.sum(axis=1), comparable)
        scales, intercept = calibrate(
            pairs, evidence, chance, anchors, len(items), primary_levels, start
        )
        fitted = msgspec.structs.replace(fitted, scales=scales)
    else:
        intercept = None
    if intercept is not None:
        # halfway (in log-odds) between the prior odds of a pair and the odds at which near
        # misses part from matches: candidates that share a building, an album or a brand
        # need more than a random pair, and the boundary the few labels of a small sample
        # suggest is too strict alone (bench/items/README.md)
        fitted = msgspec.structs.replace(fitted, prior=(start + min(start, intercept)) / 2.0)
    else:
        weights = scaled(evidence, fitted.scales)
        odds = prior_odds(weights, comparable)
        fitted = msgspec.structs.replace(fitted, prior=odds)
    series = series_discounts(Scorer(schema, fitted), features, rng, stop.each)
    fitted = msgspec.structs.replace(fitted, series=series)
    if series and len(candidates):
        evidence = Scorer(schema, fitted).evidence_rows(candidates, [features[a] for a, _ in pairs])
    others, _ = drawn_later()
    return _keys_matches_share(schema, fitted, features, keyed, evidence, others)


def _keys_matches_share(
    schema: ItemSchema,
    model: ItemModel,
    features: Sequence[ItemFeatures],
    keyed: KeyedPairs,
    evidence: npt.NDArray[np.float64],
    drawn: I8,
) -> ItemModel:
    """``model`` with its ``least_shared``: the keys the sample's matches share, counted
    over the candidates sharing most keys (their ``evidence``) and a drawn sample of the
    others (their levels, ``drawn``)."""
    final = Scorer(schema, model)
    needed = final.needed
    top = model.prior + scaled(evidence, model.scales) if len(keyed.pairs) else np.zeros(0)
    matched = [1.0 if weight >= needed else 0.0 for weight in top.tolist()]
    if keyed.sampled:
        firsts = [features[a] for a, _ in keyed.sampled]
        weights = model.prior + scaled(final.evidence_rows(drawn, firsts), model.scales)
        for weight, stands_for in zip(weights.tolist(), keyed.stands_for, strict=True):
            matched.append(stands_for if weight >= needed else 0.0)
    shared = keyed.shared + keyed.sampled_shared
    return msgspec.structs.replace(model, least_shared=least_shared(shared, matched))


def _rows_of(rows: Sequence[npt.NDArray[np.float64]]) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(x) for x in row) for row in rows)
