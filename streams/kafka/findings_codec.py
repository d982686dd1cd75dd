"""The messages of the findings topic: what one detection shard found for one prepared message.

Each shard sends one message per prepared message (log offset), keyed by its shard index;
shard 0 adds the records' heads (id, url, fetched_at, shingle count, status, raw content
fingerprint), which the union stage decides versions from, keeps and names in events.
MessagePack, whose floats are the IEEE doubles themselves: the union stage sees the very
estimates the shard computed, so its events equal the embedded detector's to the last bit.

    message  = [VERSION, shard, offset, previous, heads | None, verdicts, near, contained,
                candidates, pairs estimated]
    head     = [doc id, url, fetched_at, shingle count, status, raw content fingerprint]
    verdict  = 0 (new) | 1 (repeat) | [twin id, method, owner]
    pair     = [doc id, resemblance, containment, reverse containment, exact,
                SimHash distance | nil]

Version 1 had no distance (SimHash mode's pairs carry it to the union stage's events),
version 2 no status and fingerprint in the heads (the union stage follows versions with them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

import msgspec
from neardup.core import BadRecordError, Estimate

from ..detection.admission import Admission, Twin, Verdict
from ..detection.shard import Found, ShardFindings
from ..detection.union import DocHead

__all__ = ["ShardMessage", "decode_findings", "encode_findings"]

VERSION = 3
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()
_Pair = tuple[int, float, float, float, bool, int | None]
#: the message's layout: msgspec checks every type and builds the heads and twins in C, where
#: a loop in Python over every document was most of the decoding; tuples, so that the many
#: documents that found nothing share the empty one instead of a new list each
_typed = msgspec.msgpack.Decoder(
    tuple[
        int,
        int,
        int,
        int,
        tuple[DocHead, ...] | None,
        tuple[Literal[0, 1] | Twin, ...],
        tuple[tuple[_Pair, ...], ...],
        tuple[tuple[_Pair, ...], ...],
        int,
        int,
    ]
)


@dataclass(frozen=True, slots=True)
class ShardMessage:
    """One shard's findings for the documents of one prepared message."""

    shard: int
    offset: int
    #: the offset of the message the shard applied before this one (offsets may have gaps):
    #: no message lies between the two
    previous: int
    findings: ShardFindings
    #: the documents' heads, from shard 0 only
    heads: tuple[DocHead, ...] | None = None


def encode_findings(message: ShardMessage) -> bytes:
    found = message.findings
    heads = None if message.heads is None else [list(head) for head in message.heads]
    return _encoder.encode(
        [
            VERSION,
            message.shard,
            message.offset,
            message.previous,
            heads,
            [_verdict(v) for v in found.verdicts],
            _pairs(found.near),
            _pairs(found.contained),
            found.candidates,
            found.pairs_estimated,
        ]
    )


def decode_findings(raw: bytes) -> ShardMessage:
    """A findings message; BadRecordError for one this version cannot read."""
    try:
        try:
            fields = _typed.decode(raw)
        except msgspec.ValidationError:
            version = _decoder.decode(raw)[0]  # another version's layout says which
            if version != VERSION:
                raise ValueError(f"version {version!r}, this neardup reads {VERSION}") from None
            raise
        version, shard, offset, previous, heads, verdicts, near, contained, candidates, pairs = (
            fields
        )
        if version != VERSION:
            raise ValueError(f"version {version!r}, this neardup reads {VERSION}")
        findings = ShardFindings(
            # msgspec let through only codes that _KNOWN holds, and twins, which stay
            verdicts=cast(tuple[Verdict, ...], tuple(map(_KNOWN.get, verdicts, verdicts))),
            near=_read_pairs(near),
            contained=_read_pairs(contained),
            candidates=candidates,
            pairs_estimated=pairs,
        )
        return ShardMessage(shard, offset, previous, findings, heads)
    except (msgspec.DecodeError, ValueError, TypeError, IndexError, KeyError) as error:
        raise BadRecordError(
            "bad_findings", f"a findings message cannot be read: {error}"
        ) from error


def _verdict(verdict: Verdict) -> Any:
    if isinstance(verdict, Twin):
        return [verdict.doc_id, verdict.method, verdict.owner]
    return 0 if verdict is Admission.NEW else 1


#: the verdicts that are not twins, by their code (most documents')
_KNOWN: dict[object, Verdict] = {0: Admission.NEW, 1: Admission.REPEAT}


def _pairs(found: Found) -> list[list[list[Any]]]:
    return [
        [
            [doc_id, e.resemblance, e.containment, e.containment_reverse, e.exact, e.distance]
            for doc_id, e in pairs
        ]
        for pairs in found
    ]


def _read_pairs(raw: tuple[tuple[_Pair, ...], ...]) -> Found:
    # most documents found nothing: one shared empty tuple, no generator each
    return tuple([_read_pairs_of(pairs) if pairs else () for pairs in raw])


def _read_pairs_of(pairs: tuple[_Pair, ...]) -> tuple[tuple[int, Estimate], ...]:
    return tuple(
        [
            (doc_id, Estimate(r, c, back, exact, distance))
            for doc_id, r, c, back, exact, distance in pairs
        ]
    )
