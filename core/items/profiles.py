"""Profiles: how the words of a text field are read, by what the field holds.

A listing's synonyms belong to addresses ("St" is a street or a saint, "Ave" an avenue) and
to the names of places; on a person's or a company's name or on a code they only do harm.
A field's profile says which readings apply:

==============  ================================================================
profile         words
==============  ================================================================
address         the listings table (suffixes, units, directionals, ordinals, "st")
name            the same: names of businesses and places ("St Fin Barre's", "5th St Pizza")
organisation    ordinals and general abbreviations; legal forms dropped (Inc, N.V., GmbH)
person          as written: no synonyms, no stemming
code            letters and digits, separators dropped ("XK-2041B" is "xk2041b")
text            ordinals and general abbreviations (titles, descriptions)
==============  ================================================================

Number words are read as digits in every profile but ``code`` (``numerals.py``). A schema
names a field's profile with ``profile = "..."``; without it the profile is read from the
field's name (``infer_profile``): "addr", "street" are addresses, "author", "inventor",
"surname" people, "company", "brand", "manufacturer" organisations, "sku", "model", "code"
codes, "name" names, and anything else text.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

__all__ = ["LEGAL_FORMS", "PROFILES", "Profile", "infer_profile", "sections_of"]

Profile = Literal["address", "name", "organisation", "person", "code", "text"]
PROFILES: tuple[str, ...] = get_args(Profile)

#: company legal forms, as folded words (dotted forms are joined first: "N.V." is "nv")
LEGAL_FORMS = frozenset(
    [
        "inc",
        "incorporated",
        "ltd",
        "limited",
        "llc",
        "llp",
        "lp",
        "plc",
        "corp",
        "corporation",
        "co",
        "company",
        "gmbh",
        "mbh",
        "ag",
        "kg",
        "nv",
        "bv",
        "sa",
        "sas",
        "sarl",
        "srl",
        "spa",
        "ab",
        "asa",
        "oy",
        "oyj",
        "kk",
        "pty",
        "pte",
        "bhd",
        "sdn",
        "cv",
        "sl",
        "sro",
        "zrt",
    ]
)

_HINTS: tuple[tuple[Profile, frozenset[str]], ...] = (
    (
        "code",
        frozenset(
            [
                "code",
                "sku",
                "model",
                "modelno",
                "mpn",
                "isbn",
                "upc",
                "ean",
                "gtin",
                "partno",
                "part",
                "serial",
            ]
        ),
    ),
    ("address", frozenset(["addr", "address", "street", "road"])),
    (
        "person",
        frozenset(
            [
                "author",
                "authors",
                "inventor",
                "inventors",
                "person",
                "people",
                "given",
                "surname",
                "forename",
                "firstname",
                "lastname",
                "middlename",
                "coauthor",
                "coauthors",
            ]
        ),
    ),
    (
        "organisation",
        frozenset(
            [
                "company",
                "companies",
                "organisation",
                "organization",
                "org",
                "assignee",
                "applicant",
                "employer",
                "manufacturer",
                "brand",
                "publisher",
                "firm",
                "vendor",
            ]
        ),
    ),
    ("name", frozenset({"name"})),
)
#: the synonym table's sections each profile applies, and whether "st" is read as a street
_SECTIONS: dict[str, frozenset[str]] = {
    "address": frozenset({"suffix", "unit", "directional", "ordinal", "general"}),
    "name": frozenset({"suffix", "unit", "directional", "ordinal", "general"}),
    "organisation": frozenset({"ordinal", "general"}),
    "person": frozenset(),
    "code": frozenset(),
    "text": frozenset({"ordinal", "general"}),
}


def _words_of_name(field: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", field)
    return [word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word]


def infer_profile(field: str) -> Profile:
    """The profile a field's name suggests ("text" when it suggests none)."""
    words = _words_of_name(field)
    for profile, hints in _HINTS:
        if any(word in hints for word in words):
            return profile
        if profile == "address" and any(word.startswith("addr") for word in words):
            return profile
    return "text"


def sections_of(profile: str) -> frozenset[str]:
    """The synonym table's sections a profile applies."""
    return _SECTIONS[profile]
