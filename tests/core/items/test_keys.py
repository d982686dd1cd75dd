"""Keys: every pair whose combined score reaches the threshold shares a key."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from neardup.core.items.keys import number_keys, plan_keys, prefix_length, uncovered, word_keys
from neardup.core.items.plan import FLOOR_GRID, level_sets
from neardup.core.items.prepare import ItemPreparer, verify
from neardup.core.items.schema import ItemSchema
from neardup.core.items.similarity import number_similarity

FIELDS = """\
[fields.name]
type = "text"
weight = {name}
[fields.address]
type = "text"
weight = {address}
[fields.city]
type = "category"
weight = {city}
[fields.location]
type = "geo"
lat = "lat"
lon = "lon"
weight = {location}
radius = 150
[fields.phone]
type = "identifier"
kind = "phone"
weight = {phone}
[fields.about]
type = "longtext"
weight = {about}
[fields.price]
type = "number"
weight = {price}
"""
WORDS = [
    "joe",
    "pizza",
    "saint",
    "mary",
    "church",
    "main",
    "street",
    "oak",
    "avenue",
    "cafe",
    "grill",
    "north",
    "12",
    "14",
    "first",
]


def schema_of(threshold: float, weights: dict[str, float]) -> ItemSchema:
    return ItemSchema.from_toml(f'id = "id"\nthreshold = {threshold}\n' + FIELDS.format(**weights))


weights_st = st.fixed_dictionaries(
    {
        name: st.sampled_from([0.5, 1.0, 2.0, 3.0])
        for name in ("name", "address", "city", "location", "phone", "about", "price")
    }
)


def phrase(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def mutate_text(rng: random.Random, text: str) -> str:
    words = text.split()
    roll = rng.random()
    if roll < 0.3 and words:
        words[rng.randrange(len(words))] = rng.choice(WORDS)
    elif roll < 0.5 and len(words) > 1:
        at = rng.randrange(len(words) - 1)
        words[at : at + 2] = [words[at] + words[at + 1]]
    elif roll < 0.7 and words:
        word = words[-1]
        words[-1] = word[:-1] if len(word) > 2 else word + "x"
    return " ".join(words)


def record(rng: random.Random, base: dict[str, object] | None, index: int) -> dict[str, object]:
    """A full record (base None) or a variant of one; ``drop`` removes fields afterwards."""
    out: dict[str, object] = {"id": str(index)}
    if base is None:
        out.update(
            name=phrase(rng, rng.randint(1, 4)),
            address=phrase(rng, rng.randint(1, 4)),
            city=rng.choice(["Cork", "Salem", "Madison"]),
            lat=rng.uniform(-89, 89),
            lon=rng.uniform(-180, 180),
            phone=str(rng.randint(10**8, 10**9)),
            about=phrase(rng, rng.randint(3, 30)),
            price=rng.choice([0.0, 5.0, 9.99, 120.0, -3.0]),
        )
    else:
        out.update(base, id=str(index))
        for name in ("name", "address", "about"):
            if rng.random() < 0.6:
                out[name] = mutate_text(rng, str(base[name]))
        if rng.random() < 0.3:
            out["city"] = rng.choice(["Cork", "Salem"])
        if rng.random() < 0.5:
            out["lat"] = float(base["lat"]) + rng.uniform(-0.002, 0.002)  # type: ignore[arg-type]
        if rng.random() < 0.3:
            out["price"] = float(base["price"]) * rng.uniform(0.5, 1.5)  # type: ignore[arg-type]
        if rng.random() < 0.2:
            out["phone"] = str(rng.randint(10**8, 10**9))
    return out


def drop(rng: random.Random, full: dict[str, object]) -> dict[str, object]:
    out = dict(full)
    for name in ("name", "address", "city", "phone", "about", "price"):
        if rng.random() < 0.2:
            out.pop(name, None)
    if rng.random() < 0.2:
        out.pop("lat", None)
        out.pop("lon", None)
    return out


@settings(max_examples=12)
@given(
    threshold=st.sampled_from([0.5, 0.6, 0.7, 0.8, 0.9]),
    weights=weights_st,
    seed=st.integers(0, 2**32 - 1),
)
def test_every_pair_reaching_the_threshold_shares_a_key(
    threshold: float, weights: dict[str, float], seed: int
) -> None:
    schema = schema_of(threshold, weights)
    preparer = ItemPreparer(schema)
    rng = random.Random(seed)
    reached = 0
    for trial in range(40):
        base = record(rng, None, 2 * trial)
        a = preparer.prepare(drop(rng, base))
        b = preparer.prepare(drop(rng, record(rng, base, 2 * trial + 1)))
        match = verify(a, b, schema)
        if match.matched:
            reached += 1
            assert set(a.probes) & set(b.keys), (match, plan_keys(schema).describe(schema))
            assert set(b.probes) & set(a.keys), (match, plan_keys(schema).describe(schema))
    assert reached > 0  # the generator does make matching pairs


@settings(max_examples=12)
@given(threshold=st.floats(0.3, 1.0), weights=weights_st)
def test_plans_cover_every_passing_set(threshold: float, weights: dict[str, float]) -> None:
    schema = schema_of(round(threshold, 3), weights)
    plan = plan_keys(schema)
    assert uncovered(schema, plan) == []
    assert all(1 <= len(set(rule.fields)) == len(rule.fields) <= 3 for rule in plan.rules)


def test_a_pair_with_too_little_weight_in_common_needs_no_key() -> None:
    schema = schema_of(0.7, dict.fromkeys(("name", "address", "city", "location"), 1.0)
                       | {"phone": 1.0, "about": 1.0, "price": 1.0})  # fmt: skip
    floors = [FLOOR_GRID.get(spec.type, (0.0,)) for spec in schema.fields]
    sets = level_sets(schema, floors)
    assert sets is not None
    fields = [i for i, own in enumerate(floors) for _ in own]  # the field of each bit
    # half the weight (3.5 of 7) must be shared, four fields of which one at most may fail
    # entirely (slack 1.2): every minimal set reaches floors of three fields
    assert all(len({fields[b] for b in range(len(fields)) if mask >> b & 1}) >= 3 for mask in sets)


@pytest.mark.parametrize(
    ("count", "floor", "expected"), [(10, 0.5, 6), (10, 0.0, 10), (10, 1.0, 1), (3, 0.7, 1)]
)
def test_prefix_length(count: int, floor: float, expected: int) -> None:
    assert prefix_length(count, floor) == expected


@pytest.mark.parametrize("floor", [0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.75, 0.8, 1.0])
def test_word_prefixes_and_pairs_meet_for_every_pair_of_sets_at_the_floor(floor: float) -> None:
    # every pair of sets of 1 to 5 tokens out of 7 (sorted: the one global order)
    universe = range(7)
    sets = [c for size in range(1, 6) for c in itertools.combinations(universe, size)]
    for a in sets:
        a_single, a_pairs = word_keys(a, floor, 1), word_keys(a, floor, 2)
        for b in sets:
            shared = len(set(a) & set(b))
            if shared / len(set(a) | set(b)) < floor - 1e-12:
                continue
            b_single, b_pairs = word_keys(b, floor, 1), word_keys(b, floor, 2)
            assert set(a_single[1]) & set(b_single[0]), (a, b)
            assert set(a_pairs[1]) & set(b_pairs[0]), (a, b)


@given(
    a=st.one_of(st.floats(-1e9, 1e9), st.sampled_from([0.0, 1.0, -1.0, 9.99, 10.0])),
    change=st.floats(0.0, 0.3),
    floor=st.sampled_from([0.0, 0.3, 0.5, 0.7, 0.9, 1.0]),
)
def test_numbers_scoring_the_floor_share_a_bucket(a: float, change: float, floor: float) -> None:
    b = a * (1.0 - change)
    if number_similarity(a, b) < max(floor, 1e-12):  # floor 0 keys any score above 0
        return
    assert set(number_keys(a, floor)[1]) & set(number_keys(b, floor)[0])
    assert set(number_keys(b, floor)[1]) & set(number_keys(a, floor)[0])


def test_numbers_a_quarter_apart_or_more_score_0() -> None:
    assert number_similarity(100.0, 75.0) == 0.0 == number_similarity(5.0, -5.0)
    assert number_similarity(100.0, 90.0) == pytest.approx(0.6)
    assert number_similarity(0.0, 0.0) == 1.0
