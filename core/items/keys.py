"""Candidate keys ("super tokens"): few per item, shared by every pair that can match.

**Floors.** Each field gets a floor θ: two values whose similarity reaches θ share a token of
the field. A text (or longtext, whose sketch obeys the same bound) posts the prefix of its
sorted token hashes, the first n - ⌈θn⌉ + 1: with one global order, two sets of Jaccard ≥ θ
share one of them (AllPairs/PPJoin prefix filtering), and a text's similarity is at most the
Jaccard of its tokens. A category or identifier posts its value; a location its geohash cell
(``geo.GeoGrid``; it looks up the cells a point within the radius may have); a number its
log-scale bucket of width ln(1/θ) (it looks up the neighbouring buckets). For these a pair
that shares no token has similarity 0. A field that fails its floor loses more than
c = w (1 - θ) of the weighted sum (exactly w for a similarity of 0).

**Passing sets.** Two items with fields P in common (weighing at least the schema's
``least_weight``: lighter pairs are not scored) reach the threshold T only if the
fields failing their floors, F, cost at most the slack: Σ_F c ≤ (1 - T) Σ_P w. For every P and
every largest such F, the fields P \\ F must all pass: a passing set. Every passing set must
contain a rule, a set of one or two fields whose tokens are combined into keys (the cross
product of their tokens, hashed to 64 bits with the rule's number). Then every pair that can
reach T, whatever fields it misses, shares a key: all of a passing set's fields pass, so
both items have every token of some rule in common. The check is exact: no estimate, no
probability (``uncovered`` finds a counterexample when there is one).

**Choice.** Floors come from a grid, rules from a greedy weighted set cover of the passing
sets; both minimise a cost per item: posted keys plus the candidates their lookups would
bring (from nominal token counts and selectivities per field type below). A high floor posts
few tokens but fails cheaply, so it must be combined with more fields; a category alone
brings every item of its city. Derived once per schema.
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import xxhash

from .geo import GeoGrid
from .normalise import token_hash
from .schema import FieldSpec, FieldType, ItemSchema
from .values import (
    CategoryValue,
    FieldValue,
    GeoValue,
    IdentifierValue,
    LongTextValue,
    NumberValue,
    TextValue,
)

__all__ = ["FLOOR_GRID", "KeyMaker", "KeyPlan", "KeyRule", "plan_keys", "prefix_length"]

#: the floors tried for graded fields (text, longtext, number)
FLOOR_GRID = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
_GRADED: frozenset[FieldType] = frozenset({"text", "longtext", "number"})
# Nominal cost model: tokens per value, tokens looked up per posted one, and the chance that
# one token is shared by two unrelated items. Only the plan's choice depends on them.
_TOKENS = {"text": 20, "longtext": 64}
_LOOKUPS = {"geo": 4.0, "number": 3.0}
_SELECTIVITY = {
    "text": 0.02,
    "longtext": 0.002,
    "category": 0.05,
    "identifier": 1e-5,
    "geo": 1e-3,
    "number": 0.05,
}
_ITEMS = 1_000_000  # corpus size at which candidates are counted
_CANDIDATES_PER_KEY = 10.0  # candidates verified cost as much as one key stored
_EPSILON = 1e-6


def prefix_length(count: int, floor: float) -> int:
    """How many of ``count`` sorted tokens to post so that sets of Jaccard ≥ floor share one."""
    if count <= 0:
        return 0
    return max(1, min(count, count - math.ceil(floor * count - 1e-9) + 1))


@dataclass(frozen=True, slots=True)
class KeyRule:
    """Fields (schema indexes) whose tokens are combined into keys."""

    fields: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class KeyPlan:
    """Per field its floor, and the rules. ``cost`` is the model's cost per item."""

    threshold: float
    floors: tuple[float, ...]
    rules: tuple[KeyRule, ...]
    cost: float

    def describe(self, schema: ItemSchema) -> str:
        names = [spec.name for spec in schema.fields]
        floors = ", ".join(f"{n}≥{f:g}" for n, f in zip(names, self.floors, strict=True))
        rules = " | ".join("+".join(names[i] for i in rule.fields) for rule in self.rules)
        return f"floors: {floors}; rules: {rules}"


def _losses(schema: ItemSchema, floors: Sequence[float]) -> list[float]:
    return [
        spec.weight * (1.0 - floor if spec.type in _GRADED else 1.0)
        for spec, floor in zip(schema.fields, floors, strict=True)
    ]


@lru_cache(maxsize=4096)
def _ternary(count: int) -> np.ndarray:
    """Every assignment of absent (0), passing (1), failing (2) to ``count`` fields."""
    codes = np.arange(3**count, dtype=np.int64)
    return np.stack([(codes // 3**i) % 3 for i in range(count)], axis=1).astype(np.int8)


def passing_sets(schema: ItemSchema, floors: Sequence[float]) -> list[int] | None:
    """The inclusion-minimal passing sets as bit masks of field indexes, or None when some pair
    could reach the threshold with every field failing its floor (no rule can catch it)."""
    weights = np.array([spec.weight for spec in schema.fields], dtype=np.float64)
    losses = np.array(_losses(schema, floors), dtype=np.float64)
    digits = _ternary(len(weights))
    present, passing, failing = digits > 0, digits == 1, digits == 2
    total = present @ weights
    slack = (1.0 - schema.threshold) * total + _EPSILON * total
    lost = failing @ losses
    cheapest_more = np.where(passing, losses, np.inf).min(axis=1)
    largest = (
        (total >= schema.least_weight - _EPSILON) & (lost <= slack) & (lost + cheapest_more > slack)
    )
    masks = passing[largest] @ (1 << np.arange(len(weights), dtype=np.int64))
    unique = sorted(set(masks.tolist()), key=lambda mask: (bin(mask).count("1"), mask))
    if unique and unique[0] == 0:
        return None
    minimal: list[int] = []
    for mask in unique:
        if not any(kept & mask == kept for kept in minimal):
            minimal.append(mask)
    return minimal


def _rule_cost(specs: Sequence[FieldSpec], floors: Sequence[float], rule: tuple[int, ...]) -> float:
    posted = looked_up = shared = 1.0
    for index in rule:
        spec = specs[index]
        count = _TOKENS.get(spec.type)
        tokens = 1.0 if count is None else float(prefix_length(count, floors[index]))
        lookups = _LOOKUPS.get(spec.type, 1.0) if spec.type != "number" or floors[index] else 1.0
        posted *= tokens
        looked_up *= tokens * lookups
        shared *= _SELECTIVITY[spec.type]
    return posted + looked_up * _ITEMS * shared / _CANDIDATES_PER_KEY


def _cover(schema: ItemSchema, floors: Sequence[float]) -> tuple[tuple[KeyRule, ...], float]:
    sets = passing_sets(schema, floors)
    if sets is None:
        return (), math.inf
    count = len(schema.fields)
    candidates = [rule for size in (1, 2) for rule in itertools.combinations(range(count), size)]
    cost = {rule: _rule_cost(schema.fields, floors, rule) for rule in candidates}
    mask = {rule: sum(1 << i for i in rule) for rule in candidates}
    uncovered, chosen = set(sets), []
    while uncovered:
        best = min(
            (rule for rule in candidates if any(mask[rule] & s == mask[rule] for s in uncovered)),
            key=lambda r: cost[r] / sum(1 for s in uncovered if mask[r] & s == mask[r]),
        )
        chosen.append(best)
        uncovered = {s for s in uncovered if mask[best] & s != mask[best]}
    # drop rules the others make redundant, the costliest first
    for rule in sorted(chosen, key=lambda r: -cost[r]):
        rest = [r for r in chosen if r != rule]
        if all(any(mask[r] & s == mask[r] for r in rest) for s in sets):
            chosen = rest
    rules = tuple(KeyRule(rule) for rule in sorted(chosen))
    return rules, sum(cost[rule] for rule in chosen)


def plan_keys(schema: ItemSchema) -> KeyPlan:
    """The cheapest plan found by coordinate descent over the graded fields' floors."""
    return _plan(schema.to_json())


@lru_cache(maxsize=64)
def _plan(schema_json: str) -> KeyPlan:
    schema = ItemSchema.from_json(schema_json)
    # all floors 0: a pair failing every field has score 0, so this start is always coverable
    floors = [0.0 for _ in schema.fields]
    rules, cost = _cover(schema, floors)
    improved = True
    while improved:
        improved = False
        for index, spec in enumerate(schema.fields):
            if spec.type not in _GRADED:
                continue
            for floor in FLOOR_GRID:
                trial = [*floors[:index], floor, *floors[index + 1 :]]
                trial_rules, trial_cost = _cover(schema, trial)
                if trial_cost < cost - 1e-9:
                    floors, rules, cost, improved = trial, trial_rules, trial_cost, True
    if not math.isfinite(cost):
        raise AssertionError("no floor assignment can be covered")  # floor 0 always can
    return KeyPlan(schema.threshold, tuple(floors), rules, cost)


def uncovered(schema: ItemSchema, plan: KeyPlan) -> list[int]:
    """The passing sets (bit masks) that contain no rule of the plan: empty when the guarantee
    holds."""
    sets = passing_sets(schema, plan.floors)
    if sets is None:
        return [0]
    masks = [sum(1 << i for i in rule.fields) for rule in plan.rules]
    return [s for s in sets if not any(m & s == m for m in masks)]


class KeyMaker:
    """An item's keys under a plan: ``posted`` (stored in the index) and ``probes`` (looked up,
    a superset). For every pair that can reach the threshold, each one's probes meet the other's
    posted keys."""

    def __init__(self, schema: ItemSchema, plan: KeyPlan | None = None) -> None:
        self.schema = schema
        self.plan = plan_keys(schema) if plan is None else plan
        self._grids = {
            index: GeoGrid(spec.radius or 1.0)
            for index, spec in enumerate(schema.fields)
            if spec.type == "geo"
        }

    def tokens(self, index: int, value: FieldValue) -> tuple[list[int], list[int]]:
        """The tokens field ``index`` contributes to keys: (posted, looked up)."""
        floor = self.plan.floors[index]
        if isinstance(value, TextValue):
            prefix = list(value.tokens[: prefix_length(len(value.tokens), floor)])
            return prefix, prefix
        if isinstance(value, LongTextValue):
            prefix = list(value.sketch[: prefix_length(len(value.sketch), floor)])
            return prefix, prefix
        if isinstance(value, (CategoryValue, IdentifierValue)):
            return [value.token], [value.token]
        if isinstance(value, GeoValue):
            grid = self._grids[index]
            cell = token_hash("geo", grid.cell(value.lat, value.lon))
            return [cell], [token_hash("geo", c) for c in grid.cells_within(value.lat, value.lon)]
        return _number_tokens(value, floor)

    def keys(self, values: Sequence[FieldValue | None]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(posted, probes): sorted distinct 64-bit keys of every rule whose fields are present."""
        cache: dict[int, tuple[list[int], list[int]]] = {}
        posted: set[int] = set()
        probes: set[int] = set()
        for number, rule in enumerate(self.plan.rules):
            parts = []
            for index in rule.fields:
                value = values[index]
                if value is None:
                    break
                if index not in cache:
                    cache[index] = self.tokens(index, value)
                parts.append(cache[index])
            else:
                posted.update(_combine(number, [post for post, _ in parts]))
                probes.update(_combine(number, [probe for _, probe in parts]))
        return tuple(sorted(posted)), tuple(sorted(probes | posted))


def _combine(rule_number: int, lists: Sequence[Sequence[int]]) -> list[int]:
    return [
        xxhash.xxh3_64_intdigest(struct.pack(f"<B{len(combo)}I", rule_number, *combo))
        for combo in itertools.product(*lists)
    ]


def _number_tokens(value: FieldValue, floor: float) -> tuple[list[int], list[int]]:
    assert isinstance(value, NumberValue)
    number = value.value
    if number == 0.0:
        token = token_hash("num", "0")
        return [token], [token]
    sign = "+" if number > 0 else "-"
    if floor <= 0.0:
        token = token_hash("num", sign)
        return [token], [token]
    bucket = math.floor(math.log(abs(number)) / -math.log(floor))
    post = [token_hash("num", f"{sign}{bucket}")]
    return post, [token_hash("num", f"{sign}{bucket + step}") for step in (-1, 0, 1)]
