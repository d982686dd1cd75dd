"""The findings topic's messages: what a shard found survives the wire to the union stage, the
estimates to the last bit, and a damaged message is refused with a reason."""

from __future__ import annotations

import msgspec
import pytest
from neardup.core import BadRecordError, Estimate
from neardup.streams.detection.admission import Admission, Twin
from neardup.streams.detection.shard import ShardFindings
from neardup.streams.detection.union import DocHead
from neardup.streams.kafka.findings_codec import ShardMessage, decode_findings, encode_findings

_HEADS = (
    DocHead(11, "https://a.example/", "2026-01-01T00:00:00Z", 300),
    DocHead(12, "https://b.example/", "", 40),
    DocHead(13, "https://c.example/", "2026-01-02T00:00:00.5Z", 9),
    DocHead(14, "https://d.example/", "", 40),
)


#: a SimHash mode pair: its distance goes to the union stage's event
_SIMHASH = Estimate(0.75, 0.8, 0.7, False, 3)


def _message() -> ShardMessage:
    near = Estimate(0.1 + 0.2, 0.9, 1 / 3, False)  # floats with no short decimal form
    found = ShardFindings(
        verdicts=(Admission.NEW, Twin(7, "canonical", 5), Admission.NEW, Admission.REPEAT),
        near=(((5, near), (3, Estimate(0.8, 0.8, 0.8, True))), (), ((9, _SIMHASH),), ()),
        contained=((), (), ((11, Estimate(0.05, 0.02, 0.97, False)),), ()),
        candidates=9,
        pairs_estimated=4,
    )
    return ShardMessage(0, 42, 40, found, _HEADS)


def test_a_shards_findings_survive_the_wire() -> None:
    sent = _message()
    got = decode_findings(encode_findings(sent))
    assert (got.shard, got.offset, got.previous, got.heads) == (0, 42, 40, _HEADS)
    assert got.findings == sent.findings  # verdicts, twins and estimates equal to the bit
    other = ShardMessage(1, 42, 40, sent.findings)  # shards other than 0 send no heads
    assert decode_findings(encode_findings(other)).heads is None


def _fields() -> list[object]:
    fields: list[object] = msgspec.msgpack.decode(encode_findings(_message()))
    return fields


def _with(position: int, value: object) -> bytes:
    fields = _fields()
    fields[position] = value
    return msgspec.msgpack.encode(fields)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"\x93\x01", "cannot be read"),  # cut short
        (b"not msgpack at all", "cannot be read"),
        (_with(0, 1), "version 1, this neardup reads 3"),
        (_with(6, [[[5, 0.9, 0.9, 0.3, False]], [], [], []]), "cannot be read"),  # version 1
        (_with(5, [0, 2, 0, 1]), "cannot be read"),  # no verdict 2
        (_with(5, [0, [7, "similar", 5], 0, 1]), "cannot be read"),  # no such method
        (_with(5, [0, [7, "exact"], 0, 1]), "cannot be read"),  # a twin without its owner
        (_with(6, [[[5, "high", 0.9, 0.3, False, None]], [], [], []]), "cannot be read"),
    ],
)
def test_a_damaged_findings_message_is_refused_with_a_reason(raw: bytes, says: str) -> None:
    with pytest.raises(BadRecordError, match=says) as refused:
        decode_findings(raw)
    assert refused.value.reason == "bad_findings"
