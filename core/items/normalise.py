"""Normalised values and tokens of item fields.

Text: markup removed (Lexbor, as for pages), case folded, accents removed (NFKD), "&" read as
"and", possessive "'s" and apostrophes dropped ("Joe's" -> "joe", "O'Brien" -> "obrien"),
punctuation removed; words are maximal runs of letters and digits. Each word is replaced by
its canonical form (``synonyms.SynonymTable``), stop words are dropped and the other words
are stemmed with Snowball (PyStemmer; canonical forms and numbers are kept as they are).

Words are read under the field's profile (``profiles.py``): number words as digits
(``numerals.py``), the synonym sections the profile applies, stop words dropped, Snowball
stemming (PyStemmer; canonical forms and numbers are kept as they are); codes inside the
text are found apart (``codes.py``). A text also keeps the character bigrams of each word
padded with "^" and "$" (a typo costs a few bigrams, not the word; split and joined words
share most of theirs), as 32-bit hashes (xxh3, tagged by kind): small to store, and a chance
collision between two of an item's tokens is negligible for a similarity.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from functools import lru_cache

import Stemmer
import xxhash

from ..canonical import html_to_text
from .codes import codes_in
from .numerals import read_numerals
from .profiles import LEGAL_FORMS, sections_of
from .schema import IdentifierKind
from .synonyms import STOP_WORDS, SynonymTable, fold_word

__all__ = [
    "GRAM_SIZE",
    "PHONE_DIGITS",
    "SHINGLE_SIZE",
    "TextNormaliser",
    "char_grams",
    "fold_text",
    "gram_tokens",
    "normalise_identifier",
    "raw_words",
    "shingle_tokens",
    "token_hash",
]

#: n of the character n-grams of text fields (chosen by measurement: bench/items/README.md)
GRAM_SIZE = 2
#: w of the word shingles of longtext fields (as pages are shingled, shorter: descriptions are)
SHINGLE_SIZE = 3

_WORD = re.compile(r"[^\W_]+")
# apostrophes: ASCII, right single quotation mark, grave and acute accents
_QUOTES = "'\u2019`\u00b4"
_POSSESSIVE = re.compile(rf"[{_QUOTES}]s\b")
_APOSTROPHE = re.compile(rf"(?<=[^\W_])[{_QUOTES}](?=[^\W_])")
_MARKUP = re.compile(r"<[A-Za-z!/]")
_NOT_DIGIT = re.compile(r"\D")
_URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*://")
_NOT_CODE = re.compile(r"[^\w]|_")
# letters spelt with dots ("N.V.", "U.S.A."): one word
_DOTTED = re.compile(r"(?<![^\W_])(?:[^\W\d_]\.){2,}")
_CODE_RUN = re.compile(r"[^\W_]+(?:[-/.][^\W_]+)*")
_SEPARATOR = re.compile(r"[-/.]")
#: phone numbers are compared on their last digits: long enough to identify a line, short
#: enough to ignore country codes and trunk prefixes ("+353 21 ..." and "021 ...")
PHONE_DIGITS = 9


def fold_text(text: str) -> str:
    """Markup removed (when the text has tags), accents removed, case folded."""
    if _MARKUP.search(text):
        text = html_to_text(text)  # decodes entities too
    elif "&" in text:
        text = html.unescape(text)
    return fold_word(text)


def raw_words(text: str, dotted: bool = False) -> list[str]:
    """The folded words of a text, before synonyms, stop words and stemming (``dotted``:
    letters spelt with dots read as one word)."""
    folded = fold_text(text).replace("&", " and ")
    folded = _APOSTROPHE.sub("", _POSSESSIVE.sub("", folded))
    if dotted:
        folded = _DOTTED.sub(lambda found: found.group().replace(".", "") + " ", folded)
    return _WORD.findall(folded)


def code_words(text: str) -> list[str]:
    """A code field's words: runs of letters and digits, separators inside dropped."""
    return [_SEPARATOR.sub("", run) for run in _CODE_RUN.findall(fold_text(text))]


class TextNormaliser:
    """Words of a text in canonical form under a profile (``profiles.py``): number words
    as digits, synonyms, stop words, Snowball stemming."""

    def __init__(
        self, table: SynonymTable, language: str = "english", profile: str = "name"
    ) -> None:
        self.profile = profile
        self._full_table = table
        table = table.restricted(sections_of(profile))
        self._table = table
        self._canonical_forms = frozenset(table.canonical.values())
        self._full_forms = frozenset(self._full_table.canonical.values())
        self._stem = lru_cache(maxsize=65536)(Stemmer.Stemmer(language).stemWord)

    @property
    def table(self) -> SynonymTable:
        return self._table

    def words(self, text: str) -> list[str]:
        """The canonical words of a text, in order."""
        profile = self.profile
        if profile == "code":
            return code_words(text)
        raw = raw_words(text, dotted=profile != "person")
        if profile == "person":
            return [word for word in raw if word not in STOP_WORDS]
        out = []
        for word in self._table.apply(read_numerals(raw)):
            if word in STOP_WORDS or (profile == "organisation" and word in LEGAL_FORMS):
                continue
            if word in self._canonical_forms or not word.isalpha():
                out.append(word)
            else:
                out.append(self._stem(word))
        return out

    def codes(self, text: str) -> list[str]:
        """The codes inside a text (none in addresses and people's names)."""
        if self.profile in ("address", "person"):
            return []
        if self.profile == "code":
            return code_words(text)
        return codes_in(fold_text(text))

    def category(self, text: str) -> str:
        """A category's value: its canonical words (stop words kept), joined by spaces."""
        words = self._full_table.apply(read_numerals(raw_words(text)))
        return " ".join(
            word if word in self._full_forms or not word.isalpha() else self._stem(word)
            for word in words
        )


def char_grams(words: Sequence[str], size: int = GRAM_SIZE) -> list[str]:
    """The character n-grams of each word padded with "^" and "$", in order."""
    return [
        padded[start : start + size]
        for word in words
        for padded in (f"^{word}$",)
        for start in range(len(padded) - size + 1)
    ]


def token_hash(kind: str, value: str) -> int:
    """32-bit hash of a token, tagged by its kind (word, gram, shingle, value)."""
    return xxhash.xxh3_64_intdigest(f"{kind}\x1f{value}".encode()) & 0xFFFFFFFF


def gram_tokens(words: Sequence[str], size: int = GRAM_SIZE) -> list[int]:
    """A text's character n-grams (``char_grams``), as sorted distinct hashes."""
    return sorted({token_hash("g", gram) for gram in char_grams(words, size)})


def shingle_tokens(words: Sequence[str], size: int = SHINGLE_SIZE) -> list[int]:
    """A long text's w-shingles (all of its words when it has fewer), as sorted hashes."""
    if len(words) <= size:
        return [token_hash("s", " ".join(words))] if words else []
    return sorted(
        {token_hash("s", " ".join(words[at : at + size])) for at in range(len(words) - size + 1)}
    )


def normalise_identifier(value: str, kind: IdentifierKind) -> str:
    """An identifier's comparable form: a phone's last digits, a URL's host and path without
    scheme, "www." or trailing slash, a code's letters and digits (case folded)."""
    folded = fold_text(value).strip()
    if kind == "phone":
        digits = _NOT_DIGIT.sub("", folded)
        return digits[-PHONE_DIGITS:]
    if kind == "url":
        bare = _URL_SCHEME.sub("", folded).split("#", 1)[0].split("?", 1)[0]
        return bare.removeprefix("www.").rstrip("/")
    return _NOT_CODE.sub("", folded)
