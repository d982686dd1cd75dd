"""What a key rule costs per item, and the cheapest set of rules covering the level sets.

**Cost.** Per item, the keys a rule posts (each worth 1.5 candidates: a key is written and
stored for good, a candidate read and verified once) plus the candidates its lookups bring,
as if the token sets of two atoms were independent. Candidates are estimated from nominal
shares of items sharing a token, measured on the bench's corpora at 20,000 items
(bench/items/README.md) and taken as the density of a much larger real corpus: 2 to 5 words
a name or an address; its first words (rare ones first) shared by 1-2 % of the items, a pair
of them by 0.02 % (addresses) to 0.4 % (names), any word or n-gram by 10 %, a city by 8 %, a
description's shingle by 5 %; a geohash cell holds the items of its area at the bench's
density. Only the plan's choice depends on these figures: with 1 key = 1 candidate the
listings' plan posts 24 keys and brings 17 candidates, with 2, 15 and 30.

**Cover.** Weighted set cover is NP-hard; a greedy pass (rule of least cost per newly covered
set) then local search (drop a rule, cover what it leaves with the others' greedy choice,
keep the change when cheaper), from three greedy weightings, keeping the cheapest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .geo import precision_for
from .schema import FieldSpec
from .similarity import number_ratio, word_floor

__all__ = ["cheapest_cover", "prefix_length", "rule_cost"]

_WORD_COUNTS = (2, 3, 4, 5)  # words of a name or an address
_GRAMS = 16  # character n-grams of a name or an address
_SKETCH = 64  # a longtext's sample
_ITEMS = 20_000
_KEY_COST = 1.5  # a key stored, in candidates verified
_SHARE = {
    "word": 0.015,  # the first words of a prefix
    "pair": 0.003,  # two of them (0.0002 for addresses, 0.004 for names)
    "size": 0.3,  # texts of one length
    "text": 0.1,  # any word or n-gram
    "longtext": 0.05,  # a shingle of a description (templates, boilerplate)
    "category": 0.05,
    "identifier": 1e-4,
    "number": 0.5,  # per unit of log: prices spread over a few units
}
#: share of the items per square metre (the bench: 20,000 listings over 12 cities of 144 km²)
_DENSITY = 6e-10
_COS_LATITUDE = 0.77  # cells narrow with latitude: widths at 40°


def prefix_length(count: int, floor: float) -> int:
    """How many of ``count`` ordered tokens to post so that sets of Jaccard ≥ floor share one
    (prefix filtering: the first shared token in the one order is among them)."""
    if count <= 0:
        return 0
    return max(1, min(count, count - math.ceil(floor * count - 1e-9) + 1))


def _atom(spec: FieldSpec, floor: float, width: int) -> tuple[float, float]:
    """(tokens posted, items of a random corpus sharing one of the tokens looked up, as a
    share of the corpus) of an atom."""
    if spec.type == "text":
        words = word_floor(floor)
        if words <= 0.0:
            tokens = float(max(_WORD_COUNTS) + _GRAMS)
            return tokens, tokens * _SHARE["text"]
        counts = [_text_atom(n, words, width) for n in _WORD_COUNTS]
        return (
            sum(c[0] for c in counts) / len(counts),
            sum(c[1] for c in counts) / len(counts),
        )
    if spec.type == "longtext":
        tokens = float(prefix_length(_SKETCH, floor))
        return tokens, tokens * _SHARE["longtext"]
    if spec.type == "geo":
        radius = (spec.radius or 1.0) * math.sqrt(1.0 - floor)
        bits = 5 * precision_for(radius)
        height = 180.0 / (1 << (bits // 2)) * 111_195.0
        width_m = 360.0 / (1 << ((bits + 1) // 2)) * 111_195.0 * _COS_LATITUDE
        # the cells a disk of that radius around a uniform point overlaps, on average
        lookups = (1.0 + 2.0 * radius / height) * (1.0 + 2.0 * radius / width_m)
        return 1.0, lookups * _DENSITY * height * width_m
    if spec.type == "number":  # three buckets of a log-scale width ln(1/ratio)
        return 1.0, 3.0 * _SHARE["number"] * -math.log(number_ratio(floor))
    return 1.0, _SHARE[spec.type]


def _text_atom(count: int, word_floor: float, width: int) -> tuple[float, float]:
    """(tokens posted, share looked up) of a text of ``count`` words (as ``keys.py`` keys it)."""
    if width == 1:
        tokens = prefix_length(count, word_floor)
        return tokens, tokens * _SHARE["word"]
    least = max(1, math.ceil(word_floor * count - 1e-9))
    pairs = math.comb(count - max(least, 2) + 2, 2)
    if least >= 2:
        return pairs, pairs * _SHARE["pair"]
    sizes = math.floor(1.0 / word_floor + 1.0 - count + 1e-9)
    share = pairs * _SHARE["pair"] + count * sizes * _SHARE["word"] * _SHARE["size"]
    return pairs + count, share


def rule_cost(specs: Sequence[FieldSpec], atoms: Sequence[tuple[int, float, int]]) -> float:
    """Keys posted plus candidates looked up, per item, of a rule of atoms (field index,
    floor, width)."""
    posted = shared = 1.0
    for index, floor, width in atoms:
        tokens, share = _atom(specs[index], floor, width)
        posted *= tokens
        shared *= share
    return _KEY_COST * posted + _ITEMS * min(1.0, shared)


def _greedy(
    by_set: np.ndarray, cost: np.ndarray, open_sets: np.ndarray, power: float, banned: int
) -> list[int] | None:
    """``by_set``: the cover matrix transposed (sets by rules), float32."""
    chosen: list[int] = []
    open_sets = open_sets.copy()
    gains = by_set[open_sets].sum(axis=0, dtype=np.float64)
    while open_sets.any():
        ratio = np.where(gains > 0, cost / np.maximum(gains, 1.0) ** power, np.inf)
        if banned >= 0:
            ratio[banned] = np.inf
        best = int(np.argmin(ratio))
        if not math.isfinite(ratio[best]):
            return None
        chosen.append(best)
        newly = open_sets & (by_set[:, best] > 0)
        open_sets &= ~newly
        gains -= by_set[newly].sum(axis=0, dtype=np.float64)
    return chosen


def _improve(by_set: np.ndarray, cost: np.ndarray, chosen: list[int]) -> list[int]:
    total = float(cost[chosen].sum())
    improved = True
    while improved:
        improved = False
        for rule in sorted(chosen, key=lambda r: -cost[r]):
            rest = [r for r in chosen if r != rule]
            left = np.asarray(~(by_set[:, rest] > 0).any(axis=1), dtype=bool)
            fill = _greedy(by_set, cost, left, 1.0, rule) if left.any() else []
            if fill is None:
                continue
            trial = rest + [r for r in fill if r not in rest]
            if float(cost[trial].sum()) < total - 1e-9:
                chosen, total, improved = trial, float(cost[trial].sum()), True
                break
    return chosen


def cheapest_cover(covers: np.ndarray, cost: np.ndarray) -> list[int] | None:
    """Rows (rules) of ``covers`` (rules by sets) covering every set at a low total ``cost``;
    None when some set has no rule."""
    if not covers.any(axis=0).all():
        return None
    # of rules covering the same sets only the cheapest can be in a cheapest cover
    order = np.lexsort((cost,))
    _, first = np.unique(np.packbits(covers[order], axis=1), axis=0, return_index=True)
    kept = np.sort(order[first])
    kept = kept[covers[kept].any(axis=1)]
    found = _cheapest(np.ascontiguousarray(covers[kept].T, dtype=np.float32), cost[kept])
    return None if found is None else [int(kept[i]) for i in found]


def _cheapest(by_set: np.ndarray, cost: np.ndarray) -> list[int] | None:
    best: list[int] | None = None
    for power in (1.0, 0.5, 2.0):
        chosen = _greedy(by_set, cost, np.ones(by_set.shape[0], dtype=bool), power, -1)
        if chosen is None:
            return None
        chosen = _improve(by_set, cost, chosen)
        if best is None or cost[chosen].sum() < cost[best].sum() - 1e-9:
            best = chosen
    return best
