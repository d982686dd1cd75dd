"""Batches of prepared documents, in binary: the Kafka mode's prepared messages, and what a
prepare process sends back to ``neardup run``.

The prepare agent sends one message per batch of pages; the detect agent decodes it. A
message carries everything detection needs (ids, fingerprints, sketch, index keys, url,
fetched_at, content type) but not the content, and the settings that made it, so that a
detector refuses batches prepared with other settings instead of mixing their sketches. A
prepare process (``neardup run --prepare process``) returns the same bytes: pickling the
documents costs each side several times what this encoding and its decoding cost
(docs/benchmarks.md, "What today's defaults are measured against").

    message  = MAGIC, u32 settings length, settings JSON, u32 document count, documents
    document = header (``_HEADER``), sketch u32[], the sketch packed as stored (bytes),
               super-shingles u64[], shingle keys u32[], containment keys u32[], SimHash
               table keys u32[], url, fetched_at, content type (UTF-8)

Little-endian throughout: binary, because a sketch in JSON (base64) is several times the bytes
and the decoding time.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from .exceptions import BadRecordError
from .prepare import Fingerprints, PreparedDoc, document_id
from .records import Page, PageStatus
from .settings import Settings
from .sketch import Sketch, sketch_family

__all__ = [
    "MAGIC",
    "decode_batch",
    "encode_batch",
    "encode_document",
    "frame",
    "settings_of_batch",
]

MAGIC = b"NDP4"  # NDP1 had no containment sample, NDP2 no SimHash, NDP3 no packed sketch
_U32 = struct.Struct("<I")
# doc id, raw, canonical, shingle-set fingerprints, SimHash, shingle count, flags, containment
# level and lookup level, sketch length, packed sketch bytes, super-shingles, shingle keys,
# containment keys, SimHash table keys, url bytes, fetched_at bytes, content type bytes
_HEADER = struct.Struct("<QQQQQIBBBIIIIIBIHH")
#: the previous layout, ``NDP3``, without the packed sketch: still read, so that a deployment
#: upgraded while its prepared log holds such batches goes on (the sketches are then packed
#: as they are stored, one at a time)
_OLD_MAGIC = b"NDP3"
_OLD_HEADER = struct.Struct("<QQQQQIBBBIIIIBIHH")
_HAS_CANONICAL = 1
# the stored little-endian words as the machine's own: a view needs no byte swap on x86/ARM
_U4 = np.dtype("<u4")
_U8 = np.dtype("<u8")
_HAS_SHINGLE_SET = 2
_HAS_PACKED_SKETCH = 4
#: a record saying its url is gone, or was fetched unchanged (``Page.status``)
_DELETED = 8
_UNCHANGED = 16


def encode_batch(docs: Sequence[PreparedDoc], settings: Settings) -> bytes:
    """One message for ``docs`` (prepared with ``settings``)."""
    return frame([encode_document(doc) for doc in docs], settings.to_json().encode())


def frame(documents: Sequence[bytes], settings_json: bytes) -> bytes:
    """One message of documents encoded by ``encode_document``, with the settings (as
    ``Settings.to_json`` gives them, encoded) that prepared them."""
    head = [MAGIC, _U32.pack(len(settings_json)), settings_json, _U32.pack(len(documents))]
    return b"".join([*head, *documents])


def encode_document(doc: PreparedDoc) -> bytes:
    """One document's part of a message."""
    page, prints = doc.page, doc.fingerprints
    url, fetched_at, content_type = (
        page.url.encode(),
        page.fetched_at.encode(),
        page.content_type.encode(),
    )
    flags = (
        (_HAS_CANONICAL if prints.canonical is not None else 0)
        | (_HAS_SHINGLE_SET if prints.shingle_set is not None else 0)
        | (_HAS_PACKED_SKETCH if doc.packed_sketch is not None else 0)
        | {"fetched": 0, "deleted": _DELETED, "unchanged": _UNCHANGED}[page.status]
    )
    packed = doc.packed_sketch or b""
    sketch = doc.sketch.values.astype("<u4", copy=False)
    supers = doc.super_shingles.astype("<u8", copy=False)
    keys = doc.shingle_keys.astype("<u4", copy=False)
    contained = doc.containment_keys.astype("<u4", copy=False)
    tables = doc.simhash_keys.astype("<u4", copy=False)
    return b"".join(
        [
            _HEADER.pack(
                doc.doc_id,
                prints.raw,
                prints.canonical or 0,
                prints.shingle_set or 0,
                doc.simhash,
                doc.shingle_count,
                flags,
                doc.containment_level,
                doc.containment_lookup,
                len(sketch),
                len(packed),
                len(supers),
                len(keys),
                len(contained),
                len(tables),
                len(url),
                len(fetched_at),
                len(content_type),
            ),
            sketch.tobytes(),
            packed,
            supers.tobytes(),
            keys.tobytes(),
            contained.tobytes(),
            tables.tobytes(),
            url,
            fetched_at,
            content_type,
        ]
    )


def _bad(message: str) -> BadRecordError:
    return BadRecordError("bad_prepared_batch", f"not a prepared batch: {message}")


def settings_of_batch(raw: bytes) -> tuple[bytes, int]:
    """The settings JSON a message was prepared with, and where its documents start."""
    if raw[: len(MAGIC)] not in (MAGIC, _OLD_MAGIC):
        raise _bad(f"starts with {raw[:8]!r}, not {MAGIC!r} (a message of another program?)")
    try:
        (length,) = _U32.unpack_from(raw, len(MAGIC))
    except struct.error as error:
        raise _bad("truncated before its settings") from error
    start = len(MAGIC) + _U32.size
    if start + length > len(raw):
        raise _bad("truncated inside its settings")
    return raw[start : start + length], start + length


def decode_batch(raw: bytes, settings: Settings) -> list[PreparedDoc]:
    """The documents of a message, which must have been prepared with ``settings`` (the
    settings check is the caller's: see ``settings_of_batch``). Pages come without content."""
    _, offset = settings_of_batch(raw)
    old = raw[: len(MAGIC)] == _OLD_MAGIC
    family = sketch_family(settings)
    docs: list[PreparedDoc] = []
    try:
        (count,) = _U32.unpack_from(raw, offset)
        offset += _U32.size
        for _ in range(count):
            header = (
                _OLD_HEADER.unpack_from(raw, offset) if old else _HEADER.unpack_from(raw, offset)
            )
            if old:  # no packed sketch: its length is 0
                header = (*header[:10], 0, *header[10:])
            offset += _OLD_HEADER.size if old else _HEADER.size
            (
                doc_id,
                raw_print,
                canonical,
                shingle_set,
                simhash,
                shingle_count,
                flags,
                level,
                lookup,
                n_sketch,
                n_packed,
                n_supers,
                n_keys,
                n_contained,
                n_tables,
                n_url,
                n_fetched,
                n_type,
            ) = header
            # views of the message, not copies (read-only: nothing downstream writes them)
            sketch = np.frombuffer(raw, _U4, n_sketch, offset)
            offset += 4 * n_sketch
            packed = raw[offset : offset + n_packed] if flags & _HAS_PACKED_SKETCH else None
            offset += n_packed
            supers = np.frombuffer(raw, _U8, n_supers, offset)
            offset += 8 * n_supers
            keys = np.frombuffer(raw, _U4, n_keys, offset)
            offset += 4 * n_keys
            contained = np.frombuffer(raw, _U4, n_contained, offset)
            offset += 4 * n_contained
            tables = np.frombuffer(raw, _U4, n_tables, offset)
            offset += 4 * n_tables
            texts = []
            for length in (n_url, n_fetched, n_type):
                if offset + length > len(raw):
                    raise _bad("truncated inside a document")
                texts.append(raw[offset : offset + length].decode())
                offset += length
            status: PageStatus = (
                "deleted" if flags & _DELETED else "unchanged" if flags & _UNCHANGED else "fetched"
            )
            page = Page(texts[0], "", texts[1], texts[2], status)
            if document_id(page, raw_print, settings) != doc_id:
                raise _bad(f"document {doc_id:016x} does not match its url and fetched_at")
            docs.append(
                PreparedDoc(
                    page=page,
                    doc_id=doc_id,
                    fingerprints=Fingerprints(
                        raw_print,
                        canonical if flags & _HAS_CANONICAL else None,
                        shingle_set if flags & _HAS_SHINGLE_SET else None,
                    ),
                    sketch=Sketch(sketch, shingle_count, settings.sample_kept, family),
                    super_shingles=supers,
                    shingle_keys=keys,
                    containment_keys=contained,
                    containment_level=level,
                    containment_lookup=lookup,
                    simhash=simhash,
                    simhash_keys=tables,
                    packed_sketch=packed,
                )
            )
    except BadRecordError:
        raise
    except (struct.error, ValueError) as error:  # frombuffer past the end; bad UTF-8
        raise _bad(f"truncated or corrupt ({error})") from error
    if offset != len(raw):
        raise _bad(f"{len(raw) - offset} bytes after its last document")
    return docs
