"""Canonical form: a page becomes text, then a sequence of 64-bit token hashes.

Markup, scripts and styles are removed with a real HTML5 parser (Lexbor, via selectolax),
entities decoded, case folded with ``str.casefold``; tokens are maximal runs of Unicode
letters and digits (the characters of the regex ``[^\\W_]``), or single letters/digits in
character mode. Everything else (punctuation, white space, symbols) separates tokens and is
otherwise ignored.

Tokens are hashed for a whole batch at once: the batch is one UTF-32 array, one lookup table
gives each code point's case fold (or nothing, between tokens), and each token's hash is a
polynomial of its folded code points computed from one prefix sum (mod 2**64, divided out
with the inverse power), then mixed. No Python code runs per character or per token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from selectolax.lexbor import LexborHTMLParser

from ._hashing import U64, PowerTable, fmix64, seeded_constant
from .settings import TokenUnit

__all__ = [
    "TokenBatch",
    "Tokenizer",
    "html_to_text",
    "looks_like_html",
    "to_canonical_text",
    "visible_text",
]

_DROPPED_ELEMENTS = ["script", "style", "noscript", "template", "svg"]
_HTML_SNIFF = re.compile(
    r"<\s*(?:!doctype\s+html|html|head|body|title|meta|div|p|br|span|a|table|ul|li|h[1-6])\b",
    re.IGNORECASE,
)
# Purposes of seeded constants in this module (see _hashing.seeded_constant).
_TOKEN_BASE, _TOKEN_MIX = 1, 2


def looks_like_html(content: str, content_type: str = "") -> bool:
    """True if the declared type says HTML, or, with no usable type, the text starts like markup."""
    declared = content_type.lower()
    if "html" in declared or "xml" in declared:
        return True
    if declared and not declared.startswith("application/octet-stream"):
        return False
    head = content[:2048].lstrip()
    return head.startswith("<") and _HTML_SNIFF.search(head) is not None


def html_to_text(html: str | bytes) -> str:
    """The visible text of an HTML document (text, or its UTF-8 bytes), with scripts, styles
    and templates dropped."""
    tree = LexborHTMLParser(html)
    tree.strip_tags(_DROPPED_ELEMENTS)
    root = tree.root
    return "" if root is None else str(root.text(separator=" "))


def visible_text(content: str, content_type: str = "", encoded: bytes | None = None) -> str:
    """Markup removed, when the content is HTML; the tokenizer folds case. ``encoded``: the
    content's UTF-8 bytes, when the caller has them (the parser reads bytes)."""
    if not looks_like_html(content, content_type):
        return content
    return html_to_text(content if encoded is None else encoded)


def to_canonical_text(content: str, content_type: str = "") -> str:
    """Markup removed (when the content is HTML) and case folded."""
    return visible_text(content, content_type).casefold()


#: marks a code point whose case fold is several characters (ß -> ss): such a text is folded
#: by ``str.casefold`` before it is tokenised
_EXPANDS = np.uint32(0xFFFFFFFF)
_CODE_POINTS = 0x110000
_FOLD_CHUNK = 4096
#: characters whose tokens are hashed from one prefix sum: with 2**16, the powers kept take
#: 1 MB, not the 32 MB of 2**20, and preparing is no slower (the chunk stays in cache)
_CHUNK = 1 << 16


def _alnum_table(every: str) -> npt.NDArray[np.bool_]:
    """Over all code points (``every``, in order): is it a letter or digit (``[^\\W_]``)?"""
    table = np.zeros(_CODE_POINTS, dtype=np.bool_)
    for match in re.finditer(r"[^\W_]+", every):
        table[match.start() : match.end()] = True
    return table


@lru_cache(maxsize=1)
def _token_table() -> npt.NDArray[np.uint32]:
    """A lookup table over all code points c: ``casefold(c) + 1`` when that is one letter or
    digit, 0 when it is one other character, ``_EXPANDS`` when it is several characters.

    ``str.casefold`` maps each character on its own, so folding a text is this table applied
    to each code point (but for the 104 expanding ones); a lookup and a multiply then give
    each character's term of its token's hash, with no Python code per character."""
    every = np.arange(_CODE_POINTS, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    folded = np.arange(_CODE_POINTS, dtype=np.uint32)
    for start in range(0, _CODE_POINTS, _FOLD_CHUNK):  # whole chunks where nothing expands
        chunk = every[start : start + _FOLD_CHUNK]
        chunk_folded = chunk.casefold()
        if len(chunk_folded) == len(chunk):
            folded[start : start + len(chunk)] = np.frombuffer(
                chunk_folded.encode("utf-32-le", "surrogatepass"), dtype=np.uint32
            )
            continue
        for offset, char in enumerate(chunk):
            char_folded = char.casefold()
            folded[start + offset] = ord(char_folded) if len(char_folded) == 1 else _EXPANDS
    expands = folded == _EXPANDS
    table = np.where(_alnum_table(every)[np.where(expands, 0, folded)], folded + 1, 0)
    table[expands] = _EXPANDS
    result: npt.NDArray[np.uint32] = table.astype(np.uint32)
    return result


@dataclass(frozen=True, slots=True)
class TokenBatch:
    """Token hashes of a batch of documents: document i owns ``hashes[offsets[i]:offsets[i+1]]``."""

    hashes: U64
    offsets: npt.NDArray[np.int64]

    def of(self, index: int) -> U64:
        return self.hashes[self.offsets[index] : self.offsets[index + 1]]


class Tokenizer:
    """Turns canonical texts into token hashes, a whole batch per call."""

    def __init__(self, seed: int, unit: TokenUnit = "word") -> None:
        self.unit = unit
        self._powers = PowerTable(seeded_constant(seed, _TOKEN_BASE, odd=True))
        self._mix = np.uint64(seeded_constant(seed, _TOKEN_MIX))

    def hash_batch(self, texts: list[str]) -> TokenBatch:
        """Token hashes of ``casefold(text)`` for each text (folding is idempotent, so texts
        already folded, such as ``to_canonical_text`` returns, give the same hashes)."""
        if not texts:
            return TokenBatch(np.zeros(0, np.uint64), np.zeros(1, np.int64))
        # A NUL between documents is not a letter or digit, so no token spans two documents.
        joined = "\x00".join(texts)
        code_points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        terms = _token_table().take(code_points)  # folded code point + 1, 0 between tokens
        if len(terms) and terms.max() == _EXPANDS:
            texts, terms = _fold_expanding(texts, terms)
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        doc_starts = np.cumsum(lengths + 1) - (lengths + 1)
        if self.unit == "character":
            positions = np.flatnonzero(terms)
            hashes = fmix64((terms[positions] - 1).astype(np.uint64) ^ self._mix)
        else:
            positions, hashes = self._word_hashes(terms)
        offsets = np.append(np.searchsorted(positions, doc_starts), len(positions))
        return TokenBatch(hashes, offsets.astype(np.int64))

    def _word_hashes(self, terms: npt.NDArray[np.uint32]) -> tuple[npt.NDArray[np.intp], U64]:
        size = len(terms)
        # token boundaries: where a run of token characters rises and falls, alternately
        padded = np.zeros(size + 2, dtype=np.bool_)
        np.not_equal(terms, 0, out=padded[1:-1])
        edges = np.flatnonzero(padded[1:] != padded[:-1])
        starts, ends = edges[0::2], edges[1::2]
        hashes = np.empty(len(starts), dtype=np.uint64)
        # the tokens a chunk of characters at a time: the prefix sums and the table of
        # powers are then as long as a chunk, not as the batch (a batch of 16 MB of text
        # would keep a table of 256 MB); a token longer than a chunk is a chunk of its own
        first = 0
        while first < len(starts):
            last = max(first + 1, int(np.searchsorted(starts, starts[first] + _CHUNK)))
            low, high = int(starts[first]), int(ends[last - 1])
            hashes[first:last] = self._chunk_hashes(
                terms[low:high], starts[first:last] - low, ends[first:last] - low
            )
            first = last
        lengths = (ends - starts).astype(np.uint64)
        return starts, fmix64(hashes ^ (lengths * np.uint64(0x9E3779B97F4A7C15)) ^ self._mix)

    def _chunk_hashes(
        self,
        terms: npt.NDArray[np.uint32],
        starts: npt.NDArray[np.intp],
        ends: npt.NDArray[np.intp],
    ) -> U64:
        """Each token's polynomial of its folded code points, from one prefix sum over the
        chunk (``starts`` and ``ends`` relative to it)."""
        size = len(terms)
        self._powers.ensure(size + 1)
        # (c + 1) * p**i for token characters, 0 elsewhere; summed from the start of the chunk
        prefix = terms.astype(np.uint64)
        prefix *= self._powers.forward[:size]
        np.cumsum(prefix, out=prefix)
        below = prefix[starts - 1]
        below[starts == 0] = 0
        # sum of c_i * p**i over the token, shifted to start at p**0
        polynomial: U64 = (prefix[ends - 1] - below) * self._powers.backward[starts]
        return polynomial


def _fold_expanding(
    texts: list[str], terms: npt.NDArray[np.uint32]
) -> tuple[list[str], npt.NDArray[np.uint32]]:
    """The texts, those holding a character that folds to several ones folded by Python, and
    the terms of them all (only the folded texts are looked up again)."""
    lengths = np.fromiter((len(t) + 1 for t in texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(lengths)  # each text with the NUL after it
    folding = np.unique(np.searchsorted(ends, np.flatnonzero(terms == _EXPANDS), side="right"))
    folded, pieces, done = list(texts), [], 0
    for index in folding.tolist():
        start = int(ends[index] - lengths[index])
        folded[index] = texts[index].casefold()
        code_points = folded[index].encode("utf-32-le", "surrogatepass")
        pieces += [terms[done:start], _token_table().take(np.frombuffer(code_points, np.uint32))]
        done = start + len(texts[index])
    pieces.append(terms[done:])
    return folded, np.concatenate(pieces)
