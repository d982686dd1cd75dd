"""Stage 1 of the pipeline, pure and batched: pages to fingerprints, sketches, super-shingles."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import xxhash

from ._hashing import U64, drop_repeats
from .canonical import TokenBatch, Tokenizer, visible_text
from .containment import containment_keys
from .packed_samples import pack_samples
from .records import Page
from .settings import Settings
from .shingles import shingle_sets, top_bits
from .simhash import document_simhashes
from .simhash_tables import default_tables, index_keys
from .sketch import Sketch, sketch_family
from .supershingles import super_shingles

__all__ = ["FINER_LOOKUP", "Fingerprints", "PreparedDoc", "Preparer", "document_id"]

_NO_SUPER_SHINGLES: U64 = np.zeros(0, dtype=np.uint64)
_NO_SHINGLE_KEYS: npt.NDArray[np.uint32] = np.zeros(0, dtype=np.uint32)
#: levels by which a stored document's containment lookups are finer than its postings
FINER_LOOKUP = 2


@dataclass(frozen=True, slots=True)
class Fingerprints:
    """The exact-match shortcuts, each 64 bits (``None`` where the document has no tokens).

    * ``raw``: the content's UTF-8 bytes (identical documents);
    * ``canonical``: the canonical token stream (lexically-equivalent documents: they differ
      only in markup, case, punctuation or white space);
    * ``shingle_set``: the set of shingles (shingle-equivalent documents).
    """

    raw: int
    canonical: int | None
    shingle_set: int | None


@dataclass(frozen=True, slots=True, eq=False)
class PreparedDoc:
    """Everything the later stages need to know about one page."""

    page: Page
    doc_id: int
    fingerprints: Fingerprints
    sketch: Sketch
    #: b super-shingles, or none for a document below ``Settings.super_shingle_limit``
    super_shingles: U64
    #: for short documents (below ``Settings.short_limit``), the high 32 bits of their first
    #: ``Settings.short_index_prefix`` shingles (smallest fingerprints first)
    shingle_keys: npt.NDArray[np.uint32]
    #: the containment sample (``neardup.core.containment``): the sample values whose low
    #: ``containment_lookup`` bits are 0, what the document looks up in the containment
    #: index; none when the settings keep no containment index
    containment_keys: npt.NDArray[np.uint32]
    #: the level it is posted at (its keys with that many low bits 0), and the level of
    #: ``containment_keys``: finer when containment events are asked for, so that a large
    #: document meets the small ones it contains as often as they meet it; 0 for a query
    containment_level: int
    containment_lookup: int
    #: SimHash mode (``Settings.sketch``): the page's 64-bit SimHash, and its key in each of
    #: Manku's tables as a 32-bit index key (``simhash_tables.index_keys``); 0 and none in
    #: the min-hash mode, and none for a page without shingles
    simhash: int = 0
    simhash_keys: npt.NDArray[np.uint32] = field(default_factory=lambda: _NO_SHINGLE_KEYS)
    #: the sketch as the state stores it (``neardup.core.packed_samples``), packed here with
    #: the rest of its batch; None for a document asked about, which is not stored
    packed_sketch: bytes | None = None

    def looking_up_at(self, level: int) -> PreparedDoc:
        """The same document looking up only its containment keys of ``level`` (not finer
        than the ones it has)."""
        level = max(level, self.containment_lookup)
        if level == self.containment_lookup:
            return self
        mask = np.uint32((1 << level) - 1)
        keys = self.containment_keys[(self.containment_keys & mask) == 0]
        return dataclasses.replace(self, containment_keys=keys, containment_lookup=level)

    @property
    def containment_posted(self) -> npt.NDArray[np.uint32]:
        """The keys the document is posted under in the containment index."""
        if self.containment_level <= self.containment_lookup:
            return self.containment_keys
        mask = np.uint32((1 << self.containment_level) - 1)
        posted: npt.NDArray[np.uint32] = self.containment_keys[(self.containment_keys & mask) == 0]
        return posted

    @property
    def shingle_count(self) -> int:
        return self.sketch.shingle_count


class Preparer:
    """Prepares batches of pages with one settings object (keeps its lookup tables warm)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._tokenizer = Tokenizer(settings.seed, settings.token_unit)
        self._tables = default_tables() if settings.sketch == "simhash" else None

    def prepare(self, pages: list[Page], query: bool = False) -> list[PreparedDoc]:
        """``query``: for documents asked about rather than stored, whose containment sample
        is every shingle (level 0), so that each stored document is met at its own level."""
        settings = self.settings
        encoded = [page.content.encode("utf-8") for page in pages]
        # case is folded by the tokenizer, in numpy (the same as str.casefold, without the GIL)
        tokens = self._tokenizer.hash_batch(
            [
                visible_text(page.content, page.content_type, raw)
                for page, raw in zip(pages, encoded, strict=True)
            ]
        )
        sets = shingle_sets(tokens, settings.shingle_size, settings.seed)
        if settings.sketch == "simhash":
            return self._simhash_docs(pages, encoded, tokens, sets, query)
        bands = super_shingles(sets, settings)
        family = sketch_family(settings)
        short_limit, super_limit = settings.short_limit, settings.super_shingle_limit
        bounds = tokens.offsets.tolist()
        prepared = []
        sketches = [Sketch.from_shingles(shingles, settings, family) for shingles in sets]
        packed = _packed(sketches, query)
        contained = settings.containment_sample > 0
        # events: a large new document looks up 4x its posted keys (see containment_lookup)
        finer = 0 if settings.containment_threshold is None else FINER_LOOKUP
        for index, page in enumerate(pages):
            shingles = sets[index]
            count = len(shingles)
            stream = tokens.hashes[bounds[index] : bounds[index + 1]]
            level = settings.containment_level(count)
            lookup = 0 if query else max(0, level - finer)
            raw_print = xxhash.xxh3_64_intdigest(encoded[index])
            prepared.append(
                PreparedDoc(
                    page,
                    document_id(page, raw_print, settings),
                    Fingerprints(
                        raw_print,
                        xxhash.xxh3_64_intdigest(stream.data) if count else None,  # no copies
                        xxhash.xxh3_64_intdigest(shingles.data) if count else None,
                    ),
                    sketches[index],
                    bands[index] if count >= super_limit else _NO_SUPER_SHINGLES,
                    drop_repeats(top_bits(shingles[: settings.short_index_prefix(count)]))
                    if 0 < count < short_limit
                    else _NO_SHINGLE_KEYS,
                    containment_keys(shingles, lookup) if contained else _NO_SHINGLE_KEYS,
                    level,
                    lookup,
                    packed_sketch=packed[index],
                )
            )
        return prepared

    def _simhash_docs(
        self,
        pages: list[Page],
        encoded: list[bytes],
        tokens: TokenBatch,
        sets: list[U64],
        query: bool,
    ) -> list[PreparedDoc]:
        """SimHash mode's documents: the exact fingerprints, the verifier's sample as the
        sketch, the SimHash of the page's words and its table keys; no super-shingles, no
        short-document keys, no containment sample."""
        settings = self.settings
        family = sketch_family(settings)
        simhashes = document_simhashes(tokens)
        assert self._tables is not None
        keys = index_keys(simhashes, self._tables)
        bounds = tokens.offsets.tolist()
        prepared = []
        sketches = [Sketch.from_shingles(shingles, settings, family) for shingles in sets]
        packed = _packed(sketches, query)
        for index, (page, simhash) in enumerate(zip(pages, simhashes.tolist(), strict=True)):
            shingles = sets[index]
            count = len(shingles)
            stream = tokens.hashes[bounds[index] : bounds[index + 1]]
            raw_print = xxhash.xxh3_64_intdigest(encoded[index])
            prepared.append(
                PreparedDoc(
                    page,
                    document_id(page, raw_print, settings),
                    Fingerprints(
                        raw_print,
                        xxhash.xxh3_64_intdigest(stream.data) if count else None,
                        xxhash.xxh3_64_intdigest(shingles.data) if count else None,
                    ),
                    sketches[index],
                    _NO_SUPER_SHINGLES,
                    _NO_SHINGLE_KEYS,
                    _NO_SHINGLE_KEYS,
                    0,
                    0,
                    simhash,
                    keys[index] if count else _NO_SHINGLE_KEYS,
                    packed[index],
                )
            )
        return prepared


def document_id(page: Page, raw_fingerprint: int, settings: Settings) -> int:
    """A page's document id: its url and fetched_at, and where only the latest version of a
    url counts, its content too (``Page.version_id``)."""
    return page.doc_id if settings.versions == "all" else page.version_id(raw_fingerprint)


def _packed(sketches: list[Sketch], query: bool) -> list[bytes | None]:
    """The sketches packed as the state stores them, all in one pass (none for a query)."""
    if query:
        return [None] * len(sketches)
    lengths = np.fromiter((len(sketch.values) for sketch in sketches), np.int64, len(sketches))
    values = (
        np.concatenate([sketch.values for sketch in sketches])
        if sketches
        else np.zeros(0, np.uint32)
    )
    return list(pack_samples(values, lengths))
