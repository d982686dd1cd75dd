"""How stored values are laid out in bytes. Every layout starts with its format version."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from neardup.core import Samples, StateError
from neardup.core.packed_samples import WHOLE_TAG, pack_samples
from neardup.core.packed_samples import unpack_samples as unpack_packed
from neardup.core.records import format_fetched_at

__all__ = [
    "CLUSTER_LAYOUT",
    "CONTAINMENT_ENTRY",
    "MAX_POSITION",
    "NO_TIME",
    "SHORT_ENTRY",
    "SUPER_ENTRY",
    "VERSION",
    "ClusterInfo",
    "DocRecord",
    "EntryLayout",
    "Postings",
    "StoredRef",
    "decode_id",
    "encode_id",
    "fetched_at_from_micros",
    "fetched_at_to_micros",
    "pack_sample",
    "unpack_samples",
    "whole_sample",
]

_ID = struct.Struct(">Q")  # big-endian, so that keys sort by id
_DOC_HEAD = struct.Struct(
    "<BBqIQH"
)  # version, flags, fetched_at micros, shingle count, duplicate of, url length
#: flags of a document record: a twin (it keeps no sketch), and one that keeps its SimHash
#: (8 bytes, little-endian, after the url: SimHash mode)
_TWIN = 1
_HAS_SIMHASH = 2
#: the sketch is packed (``neardup.core.packed_samples``); records written before the
#: packing keep it as plain 32-bit values, and are read as they are
_PACKED = 4
_SIMHASH = struct.Struct("<Q")
_CLUSTER = struct.Struct("<BQq")  # version, size, root fetched_at micros
#: what ``ClusterInfo.pack`` packs (version, size, root's fetched_at in microseconds), for
#: union-find to pack without a Python call around it
CLUSTER_LAYOUT = _CLUSTER
_STOP_MARK = b"\xff\xff"  # + 8 bytes: 10, a length no list of entries has
MAX_POSITION = 255
_VERSION = 1
VERSION = _VERSION  # of every stored layout
NO_TIME = -(2**63)  # the micros of a missing fetched_at: older than any time
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


#: a doc id as a key; the struct's own method, without a Python call around it: union-find
#: and the indexes encode ids by the hundred thousand
encode_id: Callable[[int], bytes] = _ID.pack


def decode_id(raw: bytes) -> int:
    value: int = _ID.unpack(raw)[0]
    return value


def fetched_at_to_micros(fetched_at: str) -> int:
    """Normalised fetched_at ('...Z' or '') to microseconds since 1970 (a sentinel for '')."""
    if not fetched_at:
        return NO_TIME
    delta = datetime.fromisoformat(fetched_at) - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def fetched_at_from_micros(micros: int) -> str:
    if micros == NO_TIME:
        return ""
    return format_fetched_at(_EPOCH + timedelta(microseconds=micros))


def _check_version(raw: bytes, what: str) -> None:
    if not raw or raw[0] != _VERSION:
        raise StateError(
            f"a stored {what} has format {raw[:1]!r}, expected {_VERSION}: "
            "the state was written by another neardup version"
        )


class StoredRef(NamedTuple):
    """A stored document's url and fetched_at, in the field order of the events' DocRef."""

    url: str
    fetched_at: str


@dataclass(frozen=True, slots=True)
class DocRecord:
    """A stored document. Exact and canonical twins keep no sketch: ``duplicate_of`` names the
    document whose sketch they share. In SimHash mode a document that keeps its sketch (the
    verifier's sample) keeps its SimHash too."""

    url: str
    fetched_at: str
    shingle_count: int
    sketch: npt.NDArray[np.uint32]
    duplicate_of: int = 0
    simhash: int | None = None
    #: the sketch packed as stored (``pack_sample``), when the caller packed it already: a
    #: batch is packed in one numpy pass (``Preparer``), a sketch alone costs several times
    packed: bytes | None = None

    def encode(self, micros: int | None = None) -> bytes:
        """``micros``: ``fetched_at`` in microseconds, when the caller has it already."""
        if micros is None:
            micros = fetched_at_to_micros(self.fetched_at)
        sketch = self.packed if self.packed is not None else pack_sample(self.sketch)
        flags = (_PACKED if sketch else 0) | (0 if self.simhash is None else _HAS_SIMHASH)
        head = self.encode_head(self.url, micros, self.shingle_count, self.duplicate_of, flags)
        if self.simhash is None:
            return head + sketch
        return head + _SIMHASH.pack(self.simhash) + sketch

    @staticmethod
    def encode_head(
        url: str, micros: int, shingle_count: int, duplicate_of: int, flags: int = 0
    ) -> bytes:
        """A record without its sketch: the whole record of one that keeps none (``flags``:
        those of what follows it, in a record that keeps more)."""
        raw_url = url.encode("utf-8")
        flags |= _TWIN if duplicate_of else 0
        return (
            _DOC_HEAD.pack(_VERSION, flags, micros, shingle_count, duplicate_of, len(raw_url))
            + raw_url
        )

    @classmethod
    def decode(cls, raw: bytes) -> DocRecord:
        _check_version(raw, "document")
        _, flags, micros, count, duplicate_of, url_length = _DOC_HEAD.unpack_from(raw)
        start = _DOC_HEAD.size
        url = raw[start : start + url_length].decode("utf-8")
        start += url_length
        simhash = None
        if flags & _HAS_SIMHASH:
            (simhash,) = _SIMHASH.unpack_from(raw, start)
            start += _SIMHASH.size
        sketch = unpack_samples([_tagged(raw, start, flags)]).values
        return cls(url, fetched_at_from_micros(micros), count, sketch, duplicate_of, simhash)

    @staticmethod
    def decode_ref(raw: bytes) -> StoredRef:
        """Only the url and fetched_at: what listing clusters reads, without the sketch."""
        _check_version(raw, "document")
        _, _, micros, _, _, url_length = _DOC_HEAD.unpack_from(raw)
        start = _DOC_HEAD.size
        url = raw[start : start + url_length].decode("utf-8")
        return StoredRef(url, fetched_at_from_micros(micros))

    @staticmethod
    def decode_head(raw: bytes) -> tuple[int, int, int]:
        """Only (fetched_at micros, shingle count, duplicate of): what cluster ages and twins
        need, without decoding the URL, the time or the sketch."""
        _check_version(raw, "document")
        _, _, micros, count, duplicate_of, _ = _DOC_HEAD.unpack_from(raw)
        return micros, count, duplicate_of

    @staticmethod
    def decode_sketch(raw: bytes) -> tuple[int, bytes | memoryview] | None:
        """Only (shingle count, sketch as stored), or None for a twin that keeps none: what
        verifying a candidate reads, without decoding the URL and time of every candidate.
        ``unpack_samples`` decodes the sketches of many candidates at once."""
        _check_version(raw, "document")
        _, flags, _, count, duplicate_of, url_length = _DOC_HEAD.unpack_from(raw)
        if duplicate_of:
            return None
        # a SimHash, where the record keeps one, is the 8 bytes before the sketch
        return count, _tagged(raw, _DOC_HEAD.size + url_length + (flags & _HAS_SIMHASH) * 4, flags)

    @staticmethod
    def decode_simhash(raw: bytes) -> tuple[int, int, bytes | memoryview] | None:
        """(shingle count, SimHash, sketch as stored) of a SimHash mode record, or None for a
        twin that keeps none: what checking a SimHash candidate reads."""
        _check_version(raw, "document")
        _, flags, _, count, duplicate_of, url_length = _DOC_HEAD.unpack_from(raw)
        if duplicate_of:
            return None
        if not flags & _HAS_SIMHASH:
            raise StateError(
                "a stored document keeps no SimHash: the state was not built with "
                "sketch='simhash' (open it with its own settings)"
            )
        start = _DOC_HEAD.size + url_length
        (simhash,) = _SIMHASH.unpack_from(raw, start)
        return count, simhash, _tagged(raw, start + _SIMHASH.size, flags)


def _tagged(raw: bytes, start: int, flags: int) -> bytes | memoryview:
    """A record's sketch from ``start`` on, as ``unpack_samples`` reads it: a record written
    before the packing keeps plain values, which are tagged as kept whole (a copy)."""
    if flags & _PACKED or start == len(raw):
        return memoryview(raw)[start:]
    return WHOLE_TAG + raw[start:]


def pack_sample(values: npt.NDArray[np.uint32]) -> bytes:
    """A sketch as stored (``neardup.core.packed_samples``): a batch packs faster with
    ``pack_samples``, which the preparing stage calls."""
    if not values.size:  # a twin's or the union stage's record: no numpy call per document
        return b""
    return pack_samples(values, np.array([len(values)], np.int64))[0]


def whole_sample(values: npt.NDArray[np.uint32]) -> bytes:
    """A sketch in the form ``unpack_samples`` reads fastest, its values kept whole: for one
    held in memory, compared and never stored."""
    if not values.size:
        return b""
    return WHOLE_TAG + values.astype("<u4").tobytes()


def unpack_samples(parts: Sequence[bytes | memoryview]) -> Samples:
    """Stored sketches (``pack_sample``, ``whole_sample``) decoded together: one numpy pass
    for all of them, as numpy's fixed cost per call outweighs the decoding of one sketch."""
    return Samples(*unpack_packed(parts))


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """What a cluster root keeps: the cluster's size and the root's fetched_at (its age)."""

    size: int
    fetched_at: str

    def encode(self) -> bytes:
        return self.pack(self.size, fetched_at_to_micros(self.fetched_at))

    @classmethod
    def decode(cls, raw: bytes) -> ClusterInfo:
        size, micros = cls.unpack(raw)
        return cls(size, fetched_at_from_micros(micros))

    @staticmethod
    def pack(size: int, micros: int) -> bytes:
        """The encoding from the size and the root's fetched_at in microseconds."""
        return _CLUSTER.pack(_VERSION, size, micros)

    @staticmethod
    def unpack(raw: bytes) -> tuple[int, int]:
        """(size, root's fetched_at in microseconds): what union-find needs, unformatted."""
        _check_version(raw, "cluster")
        _, size, micros = _CLUSTER.unpack(raw)
        return size, micros


@dataclass(frozen=True, slots=True)
class EntryLayout:
    """What a posting list keeps of each document, in ``packer``'s order: its id, a size, and
    (``positions``) the position of the key among the document's own keys."""

    dtype: np.dtype[Any]
    packer: struct.Struct
    positions: bool

    def pack(self, doc_id: int, size: int, position: int = 0) -> bytes:
        if self.positions:
            return self.packer.pack(doc_id, size, min(position, MAX_POSITION))
        return self.packer.pack(doc_id, size)

    def pack_many(
        self, doc_ids: npt.NDArray[np.uint64], sizes: npt.NDArray[np.int64], positions: Any
    ) -> bytes:
        """``pack`` of each (doc id, size, position), concatenated."""
        if len(sizes) and (sizes.min() < 0 or sizes.max() > np.iinfo(self.dtype["size"]).max):
            raise ValueError(f"a size does not fit the {self.dtype['size']} of a posting entry")
        entries = np.empty(len(doc_ids), self.dtype)
        entries["id"] = doc_ids
        entries["size"] = sizes
        if self.positions:
            entries["position"] = np.minimum(positions, MAX_POSITION)
        return entries.tobytes()


#: super-shingle entries: the id and a one-byte size class (``neardup.core.length_filter``)
SUPER_ENTRY = EntryLayout(np.dtype([("id", ">u8"), ("size", "u1")]), struct.Struct(">QB"), False)
#: containment entries: the id and the document's containment level (``neardup.core.containment``)
CONTAINMENT_ENTRY = EntryLayout(
    np.dtype([("id", ">u8"), ("size", "u1")]), struct.Struct(">QB"), False
)
#: short-document entries: the id, the shingle count and the key's position (``MAX_POSITION``
#: for any later one: a smaller position only loosens the positional filter)
SHORT_ENTRY = EntryLayout(
    np.dtype([("id", ">u8"), ("size", ">u2"), ("position", "u1")]),
    struct.Struct(">QHB"),
    True,
)


@dataclass(frozen=True, slots=True)
class Postings:
    """A posting list, or a stop key (too common: its documents are no longer kept).

    Layout, no header (most lists hold one document): its entries (``EntryLayout``), oldest
    first. A list is appended to by concatenating bytes and read as one numpy array. A stop
    key is a 2-byte marker and the 8-byte count of documents that carried the key.
    """

    #: one row per document, oldest first (items of the layout's dtype)
    entries: npt.NDArray[Any]
    stopped: bool
    requests: int  # how many documents have carried this key

    @property
    def doc_ids(self) -> npt.NDArray[np.uint64]:
        return self.entries["id"].astype(np.uint64)

    @staticmethod
    def stop(requests: int) -> bytes:
        return _STOP_MARK + requests.to_bytes(8, "big")

    @classmethod
    def decode(cls, raw: bytes, layout: EntryLayout) -> Postings:
        if len(raw) % layout.dtype.itemsize:
            if raw[:2] != _STOP_MARK or len(raw) != 10:
                raise StateError(f"a stored posting list of {len(raw)} bytes is corrupt")
            return cls(np.zeros(0, layout.dtype), True, int.from_bytes(raw[2:], "big"))
        entries = np.frombuffer(raw, layout.dtype)
        return cls(entries, False, len(entries))
