"""Prepare: every dead-letter reason, missing fields, numbers as scraped, the stored form;
and a pair's score under the schema's prior model."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from neardup.core.exceptions import BadRecordError
from neardup.core.items.model import ItemModel
from neardup.core.items.prepare import MAX_FIELD_CHARS, ItemPreparer, PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.items.scorer import Scorer
from neardup.core.items.values import LongTextValue, NumberValue, TextValue

SCHEMA = """\
id = "id"
url = "url"
[fields.name]
type = "text"
weight = 3
[fields.address]
type = "text"
weight = 2
[fields.city]
type = "category"
weight = 1
[fields.location]
type = "geo"
lat = "lat"
lon = "lon"
weight = 2
[fields.phone]
type = "identifier"
kind = "phone"
weight = 2
[fields.about]
type = "longtext"
weight = 0.5
[fields.price]
type = "number"
weight = 0.5
"""
RECORD: dict[str, Any] = {
    "id": "r1",
    "url": "https://example.com/r1",
    "name": "Saint Fin Barre's Cathedral",
    "address": "Bishop Street",
    "city": "Cork",
    "lat": 51.8944,
    "lon": -8.48064,
    "phone": "+353 21 496 3387",
    "about": "Begun in 1863, the cathedral was the first major work of William Burges.",
    "price": 8.0,
}


@pytest.fixture(scope="module")
def preparer() -> ItemPreparer:
    return ItemPreparer(ItemSchema.from_toml(SCHEMA))


def with_(**changes: Any) -> dict[str, Any]:
    record = dict(RECORD)
    for key, value in changes.items():
        if value is ...:
            record.pop(key, None)
        else:
            record[key] = value
    return record


@pytest.mark.parametrize(
    ("record", "reason", "named"),
    [
        (["not", "an", "object"], "not_an_object", "got list"),
        (with_(id=...), "missing_id", "'id'"),
        (with_(id=""), "missing_id", "'id'"),
        (with_(id={"nested": 1}), "bad_field", "string or an integer"),
        (with_(id=True), "bad_field", "'id' = True"),
        (with_(name=["a", "list"]), "bad_field", "field 'name' = ['a', 'list']"),
        (with_(city={"name": "Cork"}), "bad_field", "field 'city'"),
        (with_(price=True), "bad_field", "must be a number"),
        (with_(price=[8]), "bad_field", "must be a number"),
        (with_(lat=91.0), "bad_location", "'lat' = 91.0 is outside -90..90"),
        (with_(lat=-90.5), "bad_location", "outside -90..90"),
        (with_(lon=180.5), "bad_location", "'lon' = 180.5 is outside -180..180"),
        (with_(lon=-181), "bad_location", "outside -180..180"),
        (with_(lon=...), "bad_location", "only one of 'lat' and 'lon'"),
        (with_(lat=math.nan), "not_finite", "'lat' of 'location' is nan"),
        (with_(lon="inf"), "not_finite", "is inf"),
        (with_(price=-math.inf), "not_finite", "'price' of 'price' is -inf"),
        (with_(name=math.nan), "not_finite", "field 'name' is nan"),
        (with_(about="x" * 10_000_000), "too_large", "10000000 characters"),
        (with_(id="i" * (MAX_FIELD_CHARS + 1)), "too_large", "'id' has"),
    ],
)
def test_each_bad_record_goes_to_the_dead_letters_with_its_reason(
    preparer: ItemPreparer, record: Any, reason: str, named: str
) -> None:
    with pytest.raises(BadRecordError) as caught:
        preparer.prepare(record)
    assert caught.value.reason == reason
    assert named in str(caught.value)


def test_coordinates_and_numbers_may_be_strings_and_the_limits_are_inclusive(
    preparer: ItemPreparer,
) -> None:
    item = preparer.prepare(with_(lat="90", lon=" -180.0 ", price="12.5", id=7))
    assert item.id == "7"
    assert item.value(preparer.schema, "price") == NumberValue(12.5)
    location = item.value(preparer.schema, "location")
    assert location is not None and (location.lat, location.lon) == (90.0, -180.0)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("price", "value"),
    [("$1,299.00", 1299.0), ("7.50 %", 7.5), ("38.99 gbp", 38.99), ("-12", -12.0), (3, 3.0)],
)
def test_a_number_is_the_first_number_written_in_a_value(
    preparer: ItemPreparer, price: Any, value: float
) -> None:
    item = preparer.prepare(with_(price=price))
    assert item.value(preparer.schema, "price") == NumberValue(value)


@pytest.mark.parametrize(
    ("duration", "seconds"), [("3:26", 206.0), (" 1:02:05 ", 3725.0), ("0:09", 9.0)]
)
def test_a_duration_is_read_as_seconds(
    preparer: ItemPreparer, duration: str, seconds: float
) -> None:
    item = preparer.prepare(with_(price=duration))
    assert item.value(preparer.schema, "price") == NumberValue(seconds)


@pytest.mark.parametrize("placeholder", ["N/A", " n/a ", "NULL", "nan", "None", "unknown"])
def test_a_placeholder_is_a_missing_value(preparer: ItemPreparer, placeholder: str) -> None:
    item = preparer.prepare(with_(address=placeholder, city=placeholder))
    assert item.value(preparer.schema, "address") is None
    assert item.value(preparer.schema, "city") is None


def test_a_value_with_no_number_in_a_number_field_is_missing(preparer: ItemPreparer) -> None:
    item = preparer.prepare(with_(price="call for price"))
    assert item.value(preparer.schema, "price") is None


@pytest.mark.parametrize(
    "changes",
    [
        {"name": ...},  # absent
        {"name": None},  # null
        {"name": "   "},  # empty
        {"name": "the of and"},  # only stop words: nothing left to compare
        {"name": "<b></b>"},  # only markup
        {"phone": "ext."},  # no digits
        {"lat": ..., "lon": ...},
        {"lat": "", "lon": " "},
        {"price": ""},
    ],
)
def test_missing_or_empty_fields_are_left_out_of_a_pairs_score(
    preparer: ItemPreparer, changes: dict[str, Any]
) -> None:
    schema = preparer.schema
    full = preparer.prepare(RECORD)
    sparse = preparer.prepare(with_(id="r2", **changes))
    left_out = {spec.name for spec in schema.fields} - {
        spec.name for spec, value in zip(schema.fields, sparse.values, strict=True) if value
    }
    assert left_out, "the change should empty a field"
    scorer = Scorer(schema, ItemModel.prior_of(schema))
    match = scorer.score(scorer.features(full.values), scorer.features(sparse.values))
    assert set(match.fields) == {spec.name for spec in schema.fields} - left_out
    # what is left agrees in full: the missing field is no mismatch
    assert match.score > 0.99 and match.matched


def test_a_pair_sharing_less_than_min_weight_is_no_match(preparer: ItemPreparer) -> None:
    schema = ItemSchema.from_toml("min_weight = 5\n" + SCHEMA)
    scorer = Scorer(schema, ItemModel.prior_of(schema))
    full = preparer.prepare(RECORD)
    only_name = preparer.prepare({"id": "c1", "name": RECORD["name"]})
    match = scorer.score(scorer.features(full.values), scorer.features(only_name.values))
    assert match.score > 0.5 and not match.matched  # 3 of 11 in common, 5 asked


def test_encode_and_decode_round_trip(preparer: ItemPreparer) -> None:
    for record in (RECORD, with_(id="r3", lat=..., lon=..., phone=...), with_(id="r4", about=...)):
        item = preparer.prepare(record)
        data = item.encode()
        assert len(data) < 1000
        assert PreparedItem.decode(data) == item


def test_text_values_keep_display_words_and_token_sets(preparer: ItemPreparer) -> None:
    item = preparer.prepare(with_(address="12 Main Street, Suite 4"))
    address = item.value(preparer.schema, "address")
    assert isinstance(address, TextValue)
    assert address.display == "12 Main Street, Suite 4"
    assert address.words == "12 main st ste 4"
    assert len(address.numbers) == 2 and address.grams and not address.codes
    about = item.value(preparer.schema, "about")
    assert isinstance(about, LongTextValue) and 0 < len(about.sketch) <= 64
    assert list(about.sketch) == sorted(about.sketch)


_WORDS = ["saint", "st", "fin", "barre", "finbarr", "cathedral", "cork", "bishop", "street"]
_RECORDS = st.fixed_dictionaries(
    {"id": st.just("x")},
    optional={
        "name": st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5).map(" ".join),
        "address": st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join),
        "city": st.sampled_from(["Cork", "Dublin"]),
        "phone": st.sampled_from(["+353 21 496 3387", "021 496 3387", "+353 1 000 0000"]),
        "price": st.floats(1.0, 12.0),
        "about": st.lists(st.sampled_from(_WORDS), min_size=3, max_size=12).map(" ".join),
    },
)


@settings(max_examples=200, deadline=None)
@given(_RECORDS, _RECORDS, st.floats(-0.002, 0.002))
def test_a_pairs_score_is_the_same_either_way_round(
    preparer: ItemPreparer, left: dict[str, Any], right: dict[str, Any], moved: float
) -> None:
    scorer = Scorer(preparer.schema, ItemModel.prior_of(preparer.schema))
    a = scorer.features(preparer.prepare({**left, "lat": 51.8944, "lon": -8.48064}).values)
    b = scorer.features(preparer.prepare({**right, "lat": 51.8944 + moved, "lon": -8.48064}).values)
    one, other = scorer.score(a, b), scorer.score(b, a)
    assert one.fields == other.fields and one.matched == other.matched
    assert one.score == pytest.approx(other.score, abs=1e-9)
