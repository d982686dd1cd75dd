"""Merge: one rule per field type, the centroid across the antimeridian, urls and ids."""

from __future__ import annotations

from typing import Any

import pytest
from neardup.core.items.merge import merge_items
from neardup.core.items.prepare import ItemPreparer, PreparedItem
from neardup.core.items.schema import ItemSchema

SCHEMA = """\
id = "id"
url = "url"
[fields.name]
type = "text"
weight = 3
[fields.kind]
type = "category"
weight = 1
[fields.phone]
type = "identifier"
kind = "phone"
weight = 2
[fields.location]
type = "geo"
lat = "lat"
lon = "lon"
weight = 2
[fields.about]
type = "longtext"
weight = 1
[fields.price]
type = "number"
weight = 1
"""


@pytest.fixture(scope="module")
def preparer() -> ItemPreparer:
    return ItemPreparer(ItemSchema.from_toml(SCHEMA))


def items(preparer: ItemPreparer, *records: dict[str, Any]) -> list[PreparedItem]:
    return [preparer.prepare({"id": f"r{n}", **r}) for n, r in enumerate(records)]


def test_categories_and_identifiers_take_the_most_common_value(preparer: ItemPreparer) -> None:
    members = items(
        preparer,
        {"kind": "Pub", "phone": "021 496 3387"},
        {"kind": "Café", "phone": "+353 21 496 3387"},
        {"kind": "cafe", "phone": "(021) 496-3387"},
    )
    merged = merge_items(members, preparer.schema).fields
    assert merged["kind"] == "Café"  # cafe twice, shown as its first holder wrote it
    assert merged["phone"] == "021 496 3387"  # one number in three formats: the first's


def test_a_tie_goes_to_the_earliest_member(preparer: ItemPreparer) -> None:
    members = items(preparer, {"kind": "Pub"}, {"kind": "Bar"})
    assert merge_items(members, preparer.schema).fields["kind"] == "Pub"


def test_text_takes_the_most_representative_spelling_not_the_longest(
    preparer: ItemPreparer,
) -> None:
    members = items(
        preparer,
        {"name": "Saint Fin Barre's Cathedral - Cork, Ireland - Home Page"},
        {"name": "St. Fin Barre's Cathedral"},
        {"name": "Saint Finbarre Cathedral"},
        {"name": "Saint Fin Barres Cathedral"},
    )
    # the last two read the same once normalised; of equals the longer display is kept
    assert merge_items(members, preparer.schema).fields["name"] == "Saint Fin Barres Cathedral"


def test_longtext_keeps_the_longest_description(preparer: ItemPreparer) -> None:
    short, long = "Begun in 1863.", "Begun in 1863, the cathedral was the first work of Burges."
    members = items(preparer, {"about": short}, {"about": long}, {"name": "no description"})
    assert merge_items(members, preparer.schema).fields["about"] == long


def test_number_takes_the_median_so_one_typo_does_not_move_it(preparer: ItemPreparer) -> None:
    members = items(preparer, {"price": 12.0}, {"price": 120.0}, {"price": 12.5})
    assert merge_items(members, preparer.schema).fields["price"] == 12.5


def test_geo_centroid_across_the_antimeridian(preparer: ItemPreparer) -> None:
    members = items(preparer, {"lat": -17.0, "lon": 179.9}, {"lat": -17.0, "lon": -179.9})
    location = merge_items(members, preparer.schema).fields["location"]
    assert abs(abs(location["lon"]) - 180.0) < 1e-6  # not 0: the mean of 179.9 and -179.9
    assert location["lat"] == pytest.approx(-17.0, abs=1e-3)


def test_ids_urls_and_absent_fields(preparer: ItemPreparer) -> None:
    members = items(
        preparer,
        {"url": "https://a.example/1", "name": "Joe's Pizza"},
        {"url": "https://b.example/9", "name": "Joes Pizza"},
        {"url": "https://a.example/1", "name": "Joe's Pizza"},
        {"name": "Joe's"},
    )
    merged = merge_items(members, preparer.schema)
    assert merged.ids == ("r0", "r1", "r2", "r3")
    assert merged.urls == ("https://a.example/1", "https://b.example/9")
    assert set(merged.fields) == {"name"}  # no member has the others


def test_an_empty_cluster_is_refused(preparer: ItemPreparer) -> None:
    with pytest.raises(ValueError, match="at least one member"):
        merge_items([], preparer.schema)
