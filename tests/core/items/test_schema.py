"""Schema: the documented form parses; each mistake names its line and field; JSON round trip."""

from __future__ import annotations

import pytest
from neardup.core.exceptions import NeardupError, SchemaError
from neardup.core.items.schema import ItemSchema, synonyms_path


def test_the_documented_form_parses_as_written(listings_schema: ItemSchema) -> None:
    assert [f.name for f in listings_schema.fields] == ["name", "address", "city", "location"]
    assert listings_schema.url_field == "url"
    location = listings_schema.field("location")
    assert (location.lat, location.lon, location.weight) == ("latitude", "longitude", 2)
    assert listings_schema.total_weight == 8
    assert issubclass(SchemaError, NeardupError) and issubclass(SchemaError, ValueError)


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('type = "category"', 'type = "categroy"', "line 10: [fields.city] type = 'categroy'"),
        ("weight = 1", "weight = 0", "line 11: [fields.city] weight = 0"),
        ("weight = 1", "weight = -2", "line 11: [fields.city] weight = -2"),
        ('lat = "latitude"\n', "", "[fields.location] is geo without lat and lon"),
        ("weight = 1", "wieght = 1", "line 11: [fields.city] has unknown key 'wieght'"),
        ('url = "url"', 'ulr = "url"', "line 2: unknown top-level key 'ulr'"),
        ('id = "id"\n', "", "the schema has no id"),
        ('id = "id"\n', 'id = "id"\nthreshold = 1.5\n', "line 2: threshold=1.5"),
        ('type = "text"', "type = ", "not valid TOML"),
    ],
)
def test_mistakes_name_the_line_and_field(
    listings_toml: str, old: str, new: str, named: str
) -> None:
    with pytest.raises(SchemaError) as caught:
        ItemSchema.from_toml(listings_toml.replace(old, new, 1))
    assert named in str(caught.value)


def test_fractional_weights_and_settings_are_accepted() -> None:
    text = (
        'id = "i"\nthreshold = 0.8\nmin_weight = 0.25\n[fields.a]\ntype = "number"\nweight = 0.5\n'
    )
    schema = ItemSchema.from_toml(text)
    assert schema.threshold == 0.8 and schema.fields[0].weight == 0.5
    assert schema.least_weight == 0.25


def test_synonyms_file_text_comes_from_the_caller() -> None:
    text = 'id = "i"\nsynonyms = "extra.txt"\n[fields.a]\ntype = "text"\nweight = 1\n'
    assert synonyms_path(text) == "extra.txt"
    with pytest.raises(SchemaError, match=r"extra\.txt"):
        ItemSchema.from_toml(text)
    schema = ItemSchema.from_toml(text, synonyms_text="mkt market\n")
    assert schema.synonyms == "mkt market\n"


def test_json_round_trip_and_differences(listings_schema: ItemSchema, listings_toml: str) -> None:
    assert ItemSchema.from_json(listings_schema.to_json()) == listings_schema
    assert listings_schema.differences(listings_schema) == []
    other = ItemSchema.from_toml(
        "threshold = 0.8\n" + listings_toml.replace("weight = 3", "weight = 4")
    )
    found = other.differences(listings_schema)
    assert "threshold: stored 0.5, requested 0.8" in found
    assert "fields.name.weight: stored 3, requested 4" in found
    fewer = ItemSchema.from_toml(listings_toml.split("[fields.location]")[0])
    assert "fields.location: only in the stored schema" in fewer.differences(listings_schema)


def test_sources_listed_once_are_named_checked_and_stored() -> None:
    head = 'id = "i"\nsource = "site"\n'
    fields = '[fields.a]\ntype = "text"\nweight = 1\n'
    schema = ItemSchema.from_toml(head + 'once = ["dblp"]\n' + fields)
    assert schema.once == ("dblp",)
    assert schema.listed_once("dblp") and not schema.listed_once("scholar")
    assert not schema.listed_once(None)
    assert ItemSchema.from_json(schema.to_json()) == schema
    plain = ItemSchema.from_toml(head + fields)
    assert plain.differences(schema) == ["once: stored ['dblp'], requested None"]
    across = ItemSchema.from_toml(head + 'link = "across"\n' + fields)
    assert across.listed_once("scholar") and across.listed_once(None)
    for bad, named in [
        ('once = "dblp"\n', "line 3: once = 'dblp' must be a list of source names"),
        ('once = ["dblp", 3]\n', "must be a list of source names"),
        ('once = ["dblp"]\nlink = "across"\n', 'is what link = "across" does'),
    ]:
        with pytest.raises(SchemaError) as caught:
            ItemSchema.from_toml(head + bad + fields)
        assert named in str(caught.value)
    with pytest.raises(SchemaError, match="once needs a source field"):
        ItemSchema.from_toml('id = "i"\nonce = ["dblp"]\n' + fields)
