"""The key plan: which fields, at which floors, are combined into keys ("super tokens").

**Atoms.** An atom is a field and a floor θ: two values whose similarity reaches θ share one
of the tokens the field contributes at that floor (``keys.KeyMaker.tokens``). A floor of 0
means any shared token: values sharing none have similarity 0. Categories and identifiers
have the one atom of floor 0 (equal values share their token). A value below a floor θ > 0
loses more than w (1 - θ) of the weighted sum; below floor 0 it loses w.

**Rules.** A rule is one to three atoms of different fields; its keys are the cross product
of their tokens, hashed with the rule's number. Items sharing a key agree on every atom of
the rule; conversely every pair whose fields all reach a rule's floors shares one of its keys.
A field may appear at several floors in several rules: a name at a high floor with a city,
at a lower one with a location.

**Coverage.** A pair is described by its level vector: per field, absent, or the floors it
reaches. The vector is feasible when the fields present weigh at least the schema's
``least_weight`` and the losses of the floors failed fit the slack (1 - T) Σ w of the fields
present: only then can the pair reach the threshold T. Every feasible vector must reach
every atom of some rule. ``level_sets`` enumerates the vectors (mixed radix, pruned when even
the best remaining fields cannot bring the slack back), keeping the inclusion-minimal sets of
atoms reached; ``uncovered`` names the ones no rule fits (empty: the guarantee holds). The
check is exact: no estimate, no probability.

**Choice.** Every field's floors come from a grid (``FLOOR_GRID``, thinned for schemas with
many graded fields); every rule of up to three atoms is a candidate, and a weighted set cover
of the minimal sets picks the rules (``cover.py``: its cost model and search). Derived once
per schema (0.1 to 1 s).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .cover import cheapest_cover, rule_cost
from .schema import FieldType, ItemSchema
from .similarity import word_floor

__all__ = [
    "FLOOR_GRID",
    "KeyPlan",
    "KeyRule",
    "level_sets",
    "plan_keys",
    "uncovered",
]

#: A text's score s is the mean of its word and n-gram Jaccards, so it needs word Jaccard
#: ≥ 2s - 1 (``word_floor``): floors above 0 start past 0.5. A location's floor θ keeps the
#: points within radius·√(1 - θ), a finer grid.
FLOOR_GRID: dict[FieldType, tuple[float, ...]] = {
    "text": (0.0, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95),
    "longtext": (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    "number": (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    "geo": (0.0, 0.5, 0.75, 0.9),
}
_GRADED = frozenset(FLOOR_GRID)
#: a plan's level vectors are enumerated; beyond this many the grids are thinned
_MAX_VECTORS = 1_000_000
#: the thinner grids of a graded field, in turn (lightest field first); the last keeps only
#: floor 0 (all tokens), for schemas of many graded fields
_THINNER = ((0.0, 0.6, 0.7, 0.8, 0.9), (0.0, 0.6, 0.8), (0.0, 0.7), (0.0,))
_EPSILON = 1e-6


@dataclass(frozen=True, slots=True)
class KeyRule:
    """Atoms (field index, floor, width) of different fields, whose tokens are combined into
    keys. Width 2 (texts only) keys on pairs of words (``keys.py``), width 1 on words."""

    atoms: tuple[tuple[int, float, int], ...]

    @property
    def fields(self) -> tuple[int, ...]:
        return tuple(atom[0] for atom in self.atoms)


@dataclass(frozen=True, slots=True)
class KeyPlan:
    """The rules, and per field the floors they use (ascending). ``cost``: the model's."""

    threshold: float
    floors: tuple[tuple[float, ...], ...]
    rules: tuple[KeyRule, ...]
    cost: float

    def describe(self, schema: ItemSchema) -> str:
        names = [spec.name for spec in schema.fields]

        def atom(index: int, floor: float, width: int) -> str:
            if schema.fields[index].type not in _GRADED:
                return names[index]
            return f"{names[index]}≥{floor:g}" + (" pairs" if width == 2 else "")

        return " | ".join("+".join(atom(*a) for a in rule.atoms) for rule in self.rules)


def _ascending(floors: Sequence[Sequence[float]]) -> list[tuple[float, ...]]:
    return [tuple(sorted(set(own))) for own in floors]


def level_sets(schema: ItemSchema, floors: Sequence[Sequence[float]]) -> list[int] | None:
    """The inclusion-minimal sets of atoms (bit masks, atoms numbered field by field, floors
    ascending) reached by some feasible level vector; None when a feasible vector reaches none
    (no rule can catch it)."""
    floors = _ascending(floors)
    slack_share = 1.0 - schema.threshold
    remaining = sum(spec.weight for spec in schema.fields)
    weight = np.zeros(1)
    excess = np.zeros(1)  # losses minus the slack of the fields present so far
    masks = np.zeros(1, dtype=np.int64)
    # the least extra loss of reaching one floor fewer in some field (inf: none reached)
    step_down = np.full(1, np.inf)
    bit = 0
    for spec, own in zip(schema.fields, floors, strict=True):
        w = spec.weight
        # states: absent, then failing floor k (k = 0 .. n-1), then reaching every floor
        state_weight = np.array([0.0] + [w] * (len(own) + 1))
        state_loss = np.array([0.0] + [w * (1.0 - f) for f in own] + [0.0])
        state_mask = np.array(
            [0] + [((1 << k) - 1) << bit for k in range(len(own) + 1)], dtype=np.int64
        )
        state_step = np.full(len(own) + 2, np.inf)
        state_step[2:] = state_loss[1:-1] - state_loss[2:]
        weight = (weight[:, None] + state_weight[None, :]).ravel()
        excess = (excess[:, None] + (state_loss - slack_share * state_weight)[None, :]).ravel()
        masks = (masks[:, None] | state_mask[None, :]).ravel()
        step_down = np.minimum(step_down[:, None], state_step[None, :]).ravel()
        bit += len(own)
        remaining -= w
        # prune vectors that even full, present remaining fields cannot make feasible
        keep = (excess <= slack_share * remaining + _EPSILON * (weight + remaining)) & (
            weight + remaining >= schema.least_weight - _EPSILON
        )
        weight, excess, masks, step_down = (x[keep] for x in (weight, excess, masks, step_down))
    # feasible, and no floor fewer would be: the others reach a superset of some such one
    tight = (excess <= _EPSILON * weight) & (excess + step_down > _EPSILON * weight)
    found = np.unique(masks[tight])
    if found.size and found[0] == 0:
        return None
    counts = np.array([bin(m).count("1") for m in found.tolist()], dtype=np.int64)
    found = found[np.argsort(counts, kind="stable")]
    minimal = np.zeros(0, dtype=np.int64)
    for mask in found.tolist():
        if not np.any((minimal & mask) == minimal):
            minimal = np.append(minimal, mask)
    return [int(m) for m in minimal]


def _vector_count(schema: ItemSchema, floors: Sequence[Sequence[float]]) -> int:
    return math.prod(len(f) + 2 for f in floors) if schema.fields else 0


def _cover(
    schema: ItemSchema, floors: Sequence[Sequence[float]]
) -> tuple[tuple[KeyRule, ...], float]:
    floors = _ascending(floors)
    sets = level_sets(schema, floors)
    if sets is None:
        return (), math.inf
    levels = [(i, f) for i, own in enumerate(floors) for f in own]
    bits = {level: 1 << n for n, level in enumerate(levels)}
    # a rule of one field's higher floor implies its lower ones: spell them out in the mask
    lower = {
        (i, f): sum(bits[(i, g)] for g in floors[i] if g <= f)
        for i, own in enumerate(floors)
        for f in own
    }
    atoms = [
        (i, f, width)
        for i, f in levels
        for width in (1, 2)
        if width == 1 or (schema.fields[i].type == "text" and word_floor(f) > 0.0)
    ]
    rules = [
        combo
        for size in (1, 2, 3)
        for combo in itertools.combinations(atoms, size)
        if len({atom[0] for atom in combo}) == size
    ]
    if not rules or not sets:
        return (), 0.0 if not sets else math.inf
    need = np.array([sum(lower[a[:2]] for a in rule) for rule in rules], dtype=np.int64)
    covers = (need[:, None] & np.array(sets, dtype=np.int64)[None, :]) == need[:, None]
    cost = np.array([rule_cost(schema.fields, rule) for rule in rules])
    chosen = cheapest_cover(covers, cost)
    if chosen is None:
        return (), math.inf
    picked = tuple(KeyRule(rules[r]) for r in sorted(chosen, key=lambda r: rules[r]))
    return picked, float(cost[chosen].sum())


def plan_keys(schema: ItemSchema) -> KeyPlan:
    """The cheapest plan found (cached per schema)."""
    return _plan(schema.to_json())


def _grid(schema: ItemSchema) -> list[tuple[float, ...]]:
    """Every field's floors from the grid, thinned (the lightest field first, a step at a time)
    until the level vectors are few enough to enumerate and the atoms fit a 63-bit mask."""
    floors = [FLOOR_GRID.get(spec.type, (0.0,)) for spec in schema.fields]
    by_weight = sorted(range(len(floors)), key=lambda i: schema.fields[i].weight)
    for thinner in _THINNER:
        for index in by_weight:
            if _vector_count(schema, floors) <= _MAX_VECTORS and sum(map(len, floors)) < 63:
                return floors
            if len(floors[index]) > len(thinner):
                floors[index] = thinner
    return floors


@lru_cache(maxsize=64)
def _plan(schema_json: str) -> KeyPlan:
    schema = ItemSchema.from_json(schema_json)
    rules, cost = _cover(schema, _grid(schema))
    if not math.isfinite(cost):
        raise AssertionError("no plan covers the level vectors")  # floors 0 always can
    used: list[set[float]] = [set() for _ in schema.fields]
    for rule in rules:
        for index, floor, _ in rule.atoms:
            used[index].add(floor)
    return KeyPlan(schema.threshold, tuple(tuple(sorted(f)) for f in used), rules, cost)


def uncovered(schema: ItemSchema, plan: KeyPlan) -> list[int]:
    """The minimal atom sets (bit masks over the plan's floors) reached by a feasible pair that
    contain no rule: empty when the guarantee holds."""
    sets = level_sets(schema, plan.floors)
    if sets is None:
        return [0]
    bits = {
        (i, f): 1 << n
        for n, (i, f) in enumerate((i, f) for i, own in enumerate(plan.floors) for f in own)
    }
    needs = [
        sum(bits[(i, g)] for i, f, _ in rule.atoms for g in plan.floors[i] if g <= f)
        for rule in plan.rules
    ]
    return [s for s in sets if not any(need & s == need for need in needs)]
