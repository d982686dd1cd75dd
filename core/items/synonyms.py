"""Synonyms and abbreviations: every variant of a word mapped to one canonical form.

The bundled table for listings (``data/listings.synonyms``) follows USPS Publication 28:
street suffixes (Appendix C1), secondary unit designators (C2), directionals; it adds
ordinals (first/1st), saint and a few business words. A schema may extend it with a table of
its own in the same format (later entries override the bundled ones).

"st" is both saint and street. The rule (``resolve_st``): "st" is saint when a name word
follows it and nothing makes it a street's suffix: it starts the text, or follows a house
number, a directional or a function word ("Cathedral of St Fin Barre", "12 St James Pl",
"N St Louis Ave"). It is street at the end of the text, before a suffix, unit, directional,
ordinal or number ("Main St", "Main St Apt 4", "Main St N"), and after a name word or an
ordinal ("Main St Springfield", "5th St Pizza"). A name after a name ("Church St Mary") is
read as a street: the rule cannot tell, and streets are the common case in addresses.

Written by hand because no maintained package ships Publication 28's tables.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from types import MappingProxyType

from ..exceptions import SchemaError

__all__ = [
    "SECTIONS",
    "STOP_WORDS",
    "SynonymTable",
    "fold_word",
    "listings_table",
    "parse_synonyms",
    "resolve_st",
]

#: the kinds of groups a table may have; the "st" rule reads them
SECTIONS = ("suffix", "unit", "directional", "ordinal", "general")
#: function words dropped from text (after synonyms: none is a canonical form of the table)
STOP_WORDS = frozenset(
    {"a", "an", "and", "the", "of", "at", "on", "in", "for", "to", "by", "with", "from", "or"}
    | {"de", "la", "le", "les", "du", "des", "el", "los", "las", "der", "die", "das"}
)
_WORD = re.compile(r"^[^\W_]+$")
_SECTION = re.compile(r"^\[\s*(\w+)\s*\]$")
#: what a street suffix may be followed by
_STREET_CONTEXT = frozenset({"suffix", "unit", "directional", "ordinal"})


def fold_word(word: str) -> str:
    """Case folded, accents removed (NFKD, combining marks dropped)."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


@dataclass(frozen=True, slots=True)
class SynonymTable:
    """``canonical[variant]`` is the canonical form; ``kind[canonical]`` its section."""

    canonical: Mapping[str, str]
    kind: Mapping[str, str]

    def extended(self, text: str, name: str = "synonyms") -> SynonymTable:
        """This table with the groups of ``text`` added (they override this table's)."""
        extra = parse_synonyms(text, name)
        canonical = dict(self.canonical)
        kind = dict(self.kind)
        canonical.update(extra.canonical)
        kind.update(extra.kind)
        return SynonymTable(MappingProxyType(canonical), MappingProxyType(kind))

    def restricted(self, sections: frozenset[str]) -> SynonymTable:
        """This table with only the groups of ``sections`` (a profile's: ``profiles.py``)."""
        kind = {head: section for head, section in self.kind.items() if section in sections}
        canonical = {word: head for word, head in self.canonical.items() if head in kind}
        return SynonymTable(MappingProxyType(canonical), MappingProxyType(kind))

    def apply(self, words: Sequence[str]) -> list[str]:
        """Each folded word replaced by its canonical form ("st" by the saint/street rule,
        when the table has street suffixes)."""
        out = []
        streets = "st" in self.kind
        for index, word in enumerate(words):
            if word == "st" and streets:
                out.append(resolve_st(words, index, self))
            else:
                out.append(self.canonical.get(word, word))
        return out

    def kind_of(self, word: str) -> str | None:
        """The section of a word's canonical form, or None for a word not in the table."""
        canonical = self.canonical.get(word)
        return None if canonical is None else self.kind.get(canonical)


def resolve_st(words: Sequence[str], index: int, table: SynonymTable) -> str:
    """ "saint" or "st" (street) for the "st" at ``words[index]`` (see the module docstring)."""
    after = words[index + 1] if index + 1 < len(words) else None
    if after is None or after.isdigit() or table.kind_of(after) in _STREET_CONTEXT:
        return "st"
    before = words[index - 1] if index > 0 else None
    if (
        before is None
        or before.isdigit()
        or before in STOP_WORDS
        or table.kind_of(before) == "directional"
    ):
        return "saint"
    return "st"


def parse_synonyms(text: str, name: str = "synonyms") -> SynonymTable:
    """A table from text: ``canonical variant variant ...`` a line, ``[section]`` lines, ``#``
    comments. A word given two canonical forms is an error naming both lines."""
    canonical: dict[str, str] = {}
    kind: dict[str, str] = {}
    first_line: dict[str, int] = {}
    section = "general"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            if section not in SECTIONS:
                raise SchemaError(
                    f"{name} line {number}: unknown section [{section}]: use one of "
                    f"{', '.join(SECTIONS)}"
                )
            continue
        group = [fold_word(word) for word in line.split()]
        for word in group:
            if not _WORD.match(word):
                raise SchemaError(
                    f"{name} line {number}: {word!r} is not one word of letters or digits "
                    "(punctuation is removed before synonyms are looked up)"
                )
        if len(group) < 2:
            raise SchemaError(
                f"{name} line {number}: {line!r} has no variant: write the canonical form, "
                "then its variants"
            )
        head = group[0]
        for word in group:
            known = canonical.get(word)
            if known is not None and known != head:
                raise SchemaError(
                    f"{name} line {number}: {word!r} already stands for {known!r} "
                    f"(line {first_line[word]}): a word has one canonical form"
                )
            canonical[word] = head
            first_line.setdefault(word, number)
        kind[head] = section
    return SynonymTable(MappingProxyType(canonical), MappingProxyType(kind))


@lru_cache(maxsize=1)
def listings_table() -> SynonymTable:
    """The bundled table for listings (a package resource, read once)."""
    text = files("neardup.core.items").joinpath("data/listings.synonyms").read_text("utf-8")
    return parse_synonyms(text, "listings.synonyms")
