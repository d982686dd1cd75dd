"""The messages of the findings topic: what one detection shard found for one prepared message.

Each shard sends one message per prepared message (log offset), keyed by its shard index;
shard 0 adds the documents' heads (id, url, fetched_at, shingle count), which the union stage
keeps and names in events. MessagePack, whose floats are the IEEE doubles themselves: the
union stage sees the very estimates the shard computed, so its events equal the embedded
detector's to the last bit.

    message  = [VERSION, shard, offset, previous, heads | None, verdicts, near, contained,
                candidates, pairs estimated]
    verdict  = 0 (new) | 1 (repeat) | [twin id, method, owner]
    pair     = [doc id, resemblance, containment, reverse containment, exact]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from neardup.core import BadRecordError, Estimate

from ..detection.admission import Admission, Twin, Verdict
from ..detection.events import METHODS
from ..detection.shard import Found, ShardFindings
from ..detection.union import DocHead

__all__ = ["ShardMessage", "decode_findings", "encode_findings"]

VERSION = 1
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()


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
    heads = (
        None
        if message.heads is None
        else [[h.doc_id, h.url, h.fetched_at, h.shingle_count] for h in message.heads]
    )
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
        fields = _decoder.decode(raw)
        version, shard, offset, previous, heads, verdicts, near, contained, candidates, pairs = (
            fields
        )
        if version != VERSION:
            raise ValueError(f"version {version!r}, this neardup reads {VERSION}")
        findings = ShardFindings(
            verdicts=tuple(_read_verdict(v) for v in verdicts),
            near=_read_pairs(near),
            contained=_read_pairs(contained),
            candidates=int(candidates),
            pairs_estimated=int(pairs),
        )
        return ShardMessage(
            int(shard),
            int(offset),
            int(previous),
            findings,
            None if heads is None else tuple(DocHead(int(i), u, f, int(n)) for i, u, f, n in heads),
        )
    except (msgspec.DecodeError, ValueError, TypeError) as error:
        raise BadRecordError(
            "bad_findings", f"a findings message cannot be read: {error}"
        ) from error


def _verdict(verdict: Verdict) -> Any:
    if isinstance(verdict, Twin):
        return [verdict.doc_id, verdict.method, verdict.owner]
    return 0 if verdict is Admission.NEW else 1


def _read_verdict(raw: Any) -> Verdict:
    if raw == 0:
        return Admission.NEW
    if raw == 1:
        return Admission.REPEAT
    doc_id, method, owner = raw
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}")
    return Twin(int(doc_id), method, int(owner))


def _pairs(found: Found) -> list[list[list[Any]]]:
    return [
        [
            [doc_id, e.resemblance, e.containment, e.containment_reverse, e.exact]
            for doc_id, e in pairs
        ]
        for pairs in found
    ]


def _read_pairs(raw: Sequence[Sequence[Sequence[Any]]]) -> Found:
    return tuple(
        tuple(
            (int(doc_id), Estimate(float(r), float(c), float(back), bool(exact)))
            for doc_id, r, c, back, exact in pairs
        )
        for pairs in raw
    )
