"""Bad input never stops a run and is never lost: each bad record is a dead letter with a reason."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from neardup.core import BadRecordError, page_from_json
from neardup.state import State
from neardup.streams import DeadLetter, iter_records
from neardup.streams.running.embedded import run

GOOD = {
    "url": "https://ok.example/1",
    "content": "a perfectly fine page of text",
    "fetched_at": "2026-01-01T00:00:00Z",
}


def _lines(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / "input.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def test_each_kind_of_bad_record_becomes_a_dead_letter_and_good_ones_survive(
    tmp_path: Path,
) -> None:
    good = json.dumps(GOOD).encode()
    path = _lines(
        tmp_path,
        [
            good,
            b"{not json",
            json.dumps({"url": "https://x"}).encode(),
            json.dumps({"content": "no url"}).encode(),
            json.dumps({"url": "https://x", "content": 42}).encode(),
            json.dumps({"url": "https://x", "content": "\x00\x01binary"}).encode(),
            b'{"url": "https://x", "content": "\xff\xfe not utf-8"}',
            json.dumps({"url": "https://x", "content": "y" * 5000}).encode(),
            json.dumps({"url": "https://x", "content": "ok", "fetched_at": "yesterday"}).encode(),
            json.dumps(["a", "list"]).encode(),
            b"",
            json.dumps({**GOOD, "url": "https://ok.example/2"}).encode(),
        ],
    )
    items = list(iter_records(str(path), max_bytes=1000))
    dead = [i for i in items if isinstance(i, DeadLetter)]
    assert [d.reason for d in dead] == [
        "not_json",
        "missing_field",
        "missing_field",
        "bad_field",
        "binary_content",
        "undecodable",
        "too_large",
        "bad_fetched_at",
        "not_an_object",
    ]
    assert [d.position for d in dead] == [f"line {n}" for n in range(2, 11)]
    assert all(d.source == str(path) for d in dead)
    assert [i.url for i in items if not isinstance(i, DeadLetter)] == [
        "https://ok.example/1",
        "https://ok.example/2",
    ]


def test_run_counts_and_writes_dead_letters(tmp_path: Path) -> None:
    path = _lines(tmp_path, [json.dumps(GOOD).encode(), b"garbage", b"\x00\x01\x02"])
    out = io.StringIO()
    with State.open(None) as state:
        summary = run(state, [str(path)], dead_letters=out)
    assert summary.documents == 1 and summary.records == 3
    assert summary.dead_letters == {"not_json": 1, "undecodable": 1} or summary.dead_letters == {
        "not_json": 2
    }
    letters = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [letter["position"] for letter in letters] == ["line 2", "line 3"]
    assert all(letter["reason"] and letter["error"] for letter in letters)


def test_oversized_line_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = _lines(
        tmp_path,
        [b'{"url": "u", "content": "' + b"z" * 3_000_000 + b'"}', json.dumps(GOOD).encode()],
    )
    items = list(iter_records(str(path), max_bytes=10_000))
    assert isinstance(items[0], DeadLetter) and items[0].reason == "too_large"
    assert not isinstance(items[1], DeadLetter)


def test_fetched_at_is_normalised_to_utc() -> None:
    page = page_from_json(json.dumps({**GOOD, "fetched_at": "2026-01-01T02:00:00+02:00"}))
    assert page.fetched_at == "2026-01-01T00:00:00.000000Z"
    with pytest.raises(BadRecordError) as caught:
        page_from_json("[1]")
    assert caught.value.reason == "not_an_object"


def _warc_response(number: int, url: str, body: bytes, content_type: str) -> bytes:
    http = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n\r\n".encode() + body
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\n"
        f"WARC-Date: 2026-02-0{number + 1}T00:00:00Z\r\n"
        f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-00000000000{number}>\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n"
    )
    return head.encode() + http + b"\r\n\r\n"


def test_warc_responses_become_pages(tmp_path: Path) -> None:
    path = tmp_path / "crawl.warc.gz"
    records = [
        (
            "https://w.example/a",
            b"<html><body><p>Hello from a WARC</p></body></html>",
            "text/html; charset=utf-8",
        ),
        ("https://w.example/img", b"\x89PNG....", "image/png"),
        (
            "https://w.example/latin",
            "café au lait".encode("latin-1"),
            "text/plain; charset=iso-8859-1",
        ),
    ]
    path.write_bytes(b"".join(gzip.compress(_warc_response(n, *r)) for n, r in enumerate(records)))
    items = list(iter_records(str(path)))
    pages = [i for i in items if not isinstance(i, DeadLetter)]
    dead = [i for i in items if isinstance(i, DeadLetter)]
    assert [p.url for p in pages] == ["https://w.example/a", "https://w.example/latin"]
    assert pages[1].content == "café au lait" and pages[0].fetched_at.endswith("Z")
    assert [(d.reason, d.position) for d in dead] == [("not_text", "record 2")]


def test_a_broken_warc_is_a_dead_letter_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "broken.warc"
    path.write_bytes(b"<html>not a warc</html>\n\n")
    items = list(iter_records(str(path)))
    assert len(items) == 1 and isinstance(items[0], DeadLetter) and items[0].reason == "bad_warc"


@pytest.mark.parametrize("compressed", [False, True])
def test_a_cut_warc_gives_its_whole_records_and_a_dead_letter_for_the_cut_one(
    tmp_path: Path, compressed: bool
) -> None:
    bodies = [f"<p>page {n} {' '.join(str(n * k) for k in range(900))}</p>" for n in range(3)]
    records = [
        _warc_response(n, f"https://w.example/{n}", body.encode(), "text/html")
        for n, body in enumerate(bodies)
    ]
    whole = b"".join(gzip.compress(r) if compressed else r for r in records)
    last = len(gzip.compress(records[2])) if compressed else len(records[2])
    for cut in range(len(whole) - last + 200, len(whole) - 50, 97):  # inside the last body
        path = tmp_path / ("cut.warc.gz" if compressed else "cut.warc")
        path.write_bytes(whole[:cut])
        items = list(iter_records(str(path)))
        assert len(items) == 3
        assert [getattr(i, "content", None) for i in items[:2]] == bodies[:2]  # whole
        assert isinstance(items[2], DeadLetter) and items[2].reason == "truncated"


def test_a_run_counts_a_cut_warc_record_in_its_summary(tmp_path: Path) -> None:
    bodies = [f"<p>page {n} {'x ' * 500}</p>".encode() for n in range(2)]
    records = [
        _warc_response(n, f"https://w.example/{n}", b, "text/html") for n, b in enumerate(bodies)
    ]
    path = tmp_path / "cut.warc"
    path.write_bytes(records[0] + records[1][: len(records[1]) // 2])
    out = io.StringIO()
    with State.open(None) as state:
        summary = run(state, [str(path)], dead_letters=out)
    assert summary.documents == 1 and summary.dead_letters == {"truncated": 1}
    assert json.loads(out.getvalue())["reason"] == "truncated"
