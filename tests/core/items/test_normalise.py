"""Normalisation: synonyms (USPS Pub. 28, saint/street), profiles, number words, codes,
stemming, identifiers."""

from __future__ import annotations

import pytest
from neardup.core.exceptions import SchemaError
from neardup.core.items.codes import codes_in
from neardup.core.items.normalise import (
    TextNormaliser,
    char_grams,
    normalise_identifier,
    raw_words,
)
from neardup.core.items.numerals import read_numerals
from neardup.core.items.profiles import infer_profile
from neardup.core.items.synonyms import listings_table, parse_synonyms


@pytest.fixture(scope="module")
def text() -> TextNormaliser:
    return TextNormaliser(listings_table())


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("St Mary's Church", ["saint", "mari", "church"]),
        ("Cathedral of St. Fin Barre", ["cathedr", "saint", "fin", "barr"]),
        ("12 St James Pl", ["12", "saint", "jame", "pl"]),
        ("N St Louis Ave", ["n", "saint", "loui", "ave"]),
        ("Main St", ["main", "st"]),
        ("Main Street", ["main", "st"]),
        ("Main St Apt 4", ["main", "st", "apt", "4"]),
        ("Main St N", ["main", "st", "n"]),
        ("5th St Pizza", ["5th", "st", "pizza"]),
        ("Main St Springfield", ["main", "st", "springfield"]),
    ],
)
def test_st_is_saint_before_a_name_and_street_otherwise(
    text: TextNormaliser, given: str, expected: list[str]
) -> None:
    assert text.words(given) == expected


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("123 North Main Avenue Suite 200", "123 n main ave ste 200"),
        ("Fifth Boulevard", "5th blvd."),
        ("Saint Finbarr's", "St. Finbarr"),
        ("Joe & Sons", "Joe and Sons"),
        ("Mountain View Parkway", "Mtn View Pkwy"),
        ("Café Ñandú", "cafe nandu"),
        ("<b>Joe's</b> Pizza &amp; Grill", "Joes Pizza & Grill"),
    ],
)
def test_variants_have_one_canonical_form(text: TextNormaliser, one: str, other: str) -> None:
    assert text.words(one) == text.words(other)


def test_the_table_maps_every_variant_to_one_canonical_form() -> None:
    table = listings_table()
    assert table.canonical["avenue"] == table.canonical["av"] == "ave"
    assert table.canonical["apartment"] == "apt" and table.kind["apt"] == "unit"
    assert table.canonical["northeast"] == "ne" and table.canonical["first"] == "1st"
    assert all(table.canonical[form] == form for form in set(table.canonical.values()))


def test_a_table_refuses_a_word_with_two_canonical_forms_naming_lines() -> None:
    with pytest.raises(SchemaError, match=r"line 3: 'av' already stands for 'ave' \(line 1\)"):
        parse_synonyms("ave avenue av\n\nav avenida\n", "extra")
    with pytest.raises(SchemaError, match="line 1: unknown section"):
        parse_synonyms("[streets]\n")


def test_a_schema_table_extends_and_overrides_the_bundled_one() -> None:
    table = listings_table().extended("[general]\nmkt market mart\nrest restaurant\n")
    words = TextNormaliser(table).words("Fresh Market Restaurant Avenue")
    assert words == ["fresh", "mkt", "rest", "ave"]


def test_raw_words_drop_possessives_and_split_on_punctuation() -> None:
    assert raw_words("O'Brien's Pub, Co.") == ["obrien", "pub", "co"]


def test_char_grams_are_per_word_and_padded() -> None:
    assert char_grams(["fin", "barr"], 2) == ["^f", "fi", "in", "n$", "^b", "ba", "ar", "rr", "r$"]
    assert char_grams(["a"], 3) == ["^a$"] and char_grams([], 3) == []


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("12 fifth ave between third and fourth", "12 5th ave between 3rd and 4th"),
        ("twenty one pilots", "21 pilots"),
        ("twenty first century", "21st century"),
        ("warlords iii", "warlords 3"),
        ("five guys", "5 guys"),
        ("a x v i", "a x v i"),  # single letters are words, not numbers
    ],
)
def test_number_words_are_read_as_digits(given: str, expected: str) -> None:
    assert read_numerals(given.split()) == expected.split()


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("epson 1500 hours 200w projector lamp elplp12", ["elplp12"]),
        ("sony dsc w80 camera", ["dscw80"]),
        ("XK-2041B switch", ["xk2041b"]),
        ("quality park 36226 - envelopes", ["36226"]),
        ("12 5th ave, 21st floor, 1080p 500gb 101.82", []),  # ordinals, sizes, prices
    ],
)
def test_codes_inside_text_are_found_joined(text: str, codes: list[str]) -> None:
    assert codes_in(text.casefold()) == codes


@pytest.mark.parametrize(
    ("field", "profile"),
    [
        ("addr", "address"),
        ("Street Address", "address"),
        ("authors", "person"),
        ("given_name", "person"),
        ("manufacturer", "organisation"),
        ("modelno", "code"),
        ("Site name", "name"),
        ("title", "text"),
    ],
)
def test_a_fields_profile_is_read_from_its_name(field: str, profile: str) -> None:
    assert infer_profile(field) == profile


def test_listing_synonyms_stay_off_people_companies_and_codes() -> None:
    table = listings_table()
    text = "St John Ave Co. N.V. XK-2041B"
    assert TextNormaliser(table, profile="name").words(text)[:3] == ["saint", "john", "ave"]
    assert TextNormaliser(table, profile="person").words(text)[:3] == ["st", "john", "ave"]
    organisation = TextNormaliser(table, profile="organisation").words(text)
    assert "co" not in organisation and "nv" not in organisation
    assert TextNormaliser(table, profile="code").words("XK-2041B, ab 12") == ["xk2041b", "ab", "12"]


@pytest.mark.parametrize(
    ("kind", "one", "other"),
    [
        ("phone", "+1 (555) 123-4567", "555.123.4567"),
        ("phone", "+353 21 496 3387", "021 496 3387"),
        ("url", "HTTPS://www.Example.com/store/?ref=x", "example.com/store"),
        ("code", "AB-12 34", "ab1234"),
    ],
)
def test_identifiers_compare_after_type_aware_normalisation(
    kind: str, one: str, other: str
) -> None:
    assert normalise_identifier(one, kind) == normalise_identifier(other, kind)  # type: ignore[arg-type]
