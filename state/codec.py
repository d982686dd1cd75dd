"""How stored values are laid out in bytes. Every layout starts with its format version."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt
from neardup.core import StateError
from neardup.core.records import format_fetched_at

__all__ = [
    "NO_TIME",
    "ClusterInfo",
    "DocRecord",
    "Postings",
    "decode_id",
    "encode_id",
    "fetched_at_from_micros",
    "fetched_at_to_micros",
]

_ID = struct.Struct(">Q")  # big-endian, so that keys sort by id
_SIZE = struct.Struct(">H")
_DOC_HEAD = struct.Struct(
    "<BBqIQH"
)  # version, flags, fetched_at micros, shingle count, duplicate of, url length
_CLUSTER = struct.Struct("<BQq")  # version, size, root fetched_at micros
_STOP_MARK = b"\xff"
_POSTING_WIDTH = {False: 8, True: 10}  # an id, plus a 2-byte shingle count in a sized index
_VERSION = 1
NO_TIME = -(2**63)  # the micros of a missing fetched_at: older than any time
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def encode_id(doc_id: int) -> bytes:
    return _ID.pack(doc_id)


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


@dataclass(frozen=True, slots=True)
class DocRecord:
    """A stored document. Exact and canonical twins keep no sketch: ``duplicate_of`` names the
    document whose sketch they share."""

    url: str
    fetched_at: str
    shingle_count: int
    sketch: npt.NDArray[np.uint32]
    duplicate_of: int = 0

    def encode(self) -> bytes:
        url = self.url.encode("utf-8")
        head = _DOC_HEAD.pack(
            _VERSION,
            1 if self.duplicate_of else 0,
            fetched_at_to_micros(self.fetched_at),
            self.shingle_count,
            self.duplicate_of,
            len(url),
        )
        return head + url + self.sketch.astype("<u4").tobytes()

    @classmethod
    def decode(cls, raw: bytes) -> DocRecord:
        _check_version(raw, "document")
        _, _, micros, count, duplicate_of, url_length = _DOC_HEAD.unpack_from(raw)
        start = _DOC_HEAD.size
        url = raw[start : start + url_length].decode("utf-8")
        sketch = np.frombuffer(raw, dtype="<u4", offset=start + url_length).astype(np.uint32)
        return cls(url, fetched_at_from_micros(micros), count, sketch, duplicate_of)

    @staticmethod
    def decode_ref(raw: bytes) -> tuple[str, str]:
        """Only (fetched_at, url): what listing clusters reads, without the sketch."""
        _check_version(raw, "document")
        _, _, micros, _, _, url_length = _DOC_HEAD.unpack_from(raw)
        start = _DOC_HEAD.size
        return fetched_at_from_micros(micros), raw[start : start + url_length].decode("utf-8")

    @staticmethod
    def decode_head(raw: bytes) -> tuple[int, int, int]:
        """Only (fetched_at micros, shingle count, duplicate of): what cluster ages and twins
        need, without decoding the URL, the time or the sketch."""
        _check_version(raw, "document")
        _, _, micros, count, duplicate_of, _ = _DOC_HEAD.unpack_from(raw)
        return micros, count, duplicate_of

    @staticmethod
    def decode_sketch(raw: bytes) -> tuple[int, npt.NDArray[np.uint32]] | None:
        """Only (shingle count, sketch), or None for a twin that keeps none: what verifying a
        candidate reads, without decoding the URL and time of every candidate."""
        _check_version(raw, "document")
        _, _, _, count, duplicate_of, url_length = _DOC_HEAD.unpack_from(raw)
        if duplicate_of:
            return None
        offset = _DOC_HEAD.size + url_length
        return count, np.frombuffer(raw, dtype="<u4", offset=offset).astype(np.uint32)


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
class Postings:
    """A posting list, or a stop key (too common: its documents are no longer kept).

    Layout: a plain list is its 8-byte ids, then in a sized index the 2-byte shingle count of
    each (no header, since most lists hold one document); a stop key is a marker byte and the
    8-byte request count. Plain tuples, not arrays: most lists are short, and struct packs
    them faster than numpy can set up.
    """

    doc_ids: tuple[int, ...]
    stopped: bool
    requests: int  # how many documents have carried this key
    #: the shingle count of each document, in a sized index
    sizes: tuple[int, ...] | None = None

    def encode(self) -> bytes:
        if self.stopped:
            return _STOP_MARK + self.requests.to_bytes(8, "big")
        count = len(self.doc_ids)
        ids = struct.pack(f">{count}Q", *self.doc_ids)
        return ids if self.sizes is None else ids + struct.pack(f">{count}H", *self.sizes)

    @classmethod
    def decode(cls, raw: bytes, sized: bool = False) -> Postings:
        listed = cls.entries(raw, sized)
        if listed is not None:
            ids, sizes = listed
            return cls(ids, False, len(ids), sizes if sized else None)
        if raw[:1] != _STOP_MARK or len(raw) != 9:
            raise StateError(f"a stored posting list of {len(raw)} bytes is corrupt")
        return cls((), True, int.from_bytes(raw[1:], "big"))

    @staticmethod
    def entries(
        raw: bytes, sized: bool = False
    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """``decode`` without the object, for the posting loop: (ids, sizes) of a plain list
        (sizes empty outside a sized index), or ``None`` for what is not one."""
        width = _POSTING_WIDTH[sized]
        if len(raw) % width:
            return None
        count = len(raw) // width
        ids = struct.unpack_from(f">{count}Q", raw)
        return ids, struct.unpack_from(f">{count}H", raw, 8 * count) if sized else ()

    @staticmethod
    def appended(raw: bytes, doc_id: int, size: int | None = None) -> bytes:
        """The encoding of the plain list ``raw`` with one more document (and its shingle
        count, in a sized index), made from the bytes without decoding them."""
        if size is None:
            return raw + _ID.pack(doc_id)
        head = 8 * (len(raw) // _POSTING_WIDTH[True])
        return raw[:head] + _ID.pack(doc_id) + raw[head:] + _SIZE.pack(size)
