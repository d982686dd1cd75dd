"""Normalisation: synonyms (USPS Pub. 28, saint/street), stemming, identifiers, tokens."""

from __future__ import annotations

import pytest
from neardup.core.exceptions import SchemaError
from neardup.core.items.normalise import (
    TextNormaliser,
    char_grams,
    normalise_identifier,
    raw_words,
    token_hash,
    word_token,
)
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


def test_word_tokens_keep_three_letters_and_whole_numbers() -> None:
    assert [word_token(w) for w in ("insurance", "insurnace", "1781", "5th", "st")] == [
        "ins",
        "ins",
        "1781",
        "5th",
        "st",
    ]


def test_common_word_tokens_come_last_in_the_key_order(text: TextNormaliser) -> None:
    tokens = text.word_tokens(["st", "maple", "1781", "n"])
    rare = {token_hash("w", "map"), token_hash("w", "1781")}
    assert set(tokens[:2]) == rare and tokens[:2] == sorted(rare)


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
