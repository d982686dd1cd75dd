"""Preparing away from the detector: JSON Lines pages are parsed where they are prepared, and
a line refused there comes back as (index, reason, message), the rest prepared as usual."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from neardup.core import Page, Settings, page_from_json
from neardup.core.prepared_codec import decode_batch
from neardup.state import State
from neardup.streams.running.embedded import run
from neardup.streams.running.prepare_work import (
    PrepareMode,
    executor,
    prepare_encoded_timed,
    prepare_pages_timed,
)

SETTINGS = Settings()


def _line(n: int) -> bytes:
    return json.dumps({"url": f"https://p.example/{n}", "content": f"page {n} " * 40}).encode()


def test_lines_are_parsed_in_the_child_and_bad_ones_refused_by_index() -> None:
    warc_page = Page(url="https://w.example/", content="a page from a WARC file " * 10)
    records: list[Page | bytes] = [_line(0), b"{not json", warc_page, b'{"url": 1}', _line(1)]
    with executor("process") as child:
        encoded, refused, seconds = child.submit(
            prepare_encoded_timed, records, SETTINGS.to_json(), 1 << 20
        ).result()
    assert isinstance(encoded, bytes) and seconds > 0
    assert [(index, reason) for index, reason, _ in refused] == [(1, "not_json"), (3, "bad_field")]
    docs = decode_batch(encoded, SETTINGS)
    assert [d.page.url for d in docs] == [
        "https://p.example/0",
        "https://w.example/",
        "https://p.example/1",
    ]
    # the same documents as preparing the parsed pages in this process
    pages = [page_from_json(_line(0)), warc_page, page_from_json(_line(1))]
    here, nothing, _ = prepare_pages_timed(pages, SETTINGS.to_json())
    assert nothing == []
    assert [d.fingerprints for d in docs] == [d.fingerprints for d in here]


@pytest.mark.parametrize("prepare", ["process", "thread"])
def test_a_run_stores_the_same_either_way_with_bad_lines_as_dead_letters(
    tmp_path: Path, prepare: PrepareMode
) -> None:
    lines = [_line(n) for n in range(300)]
    lines[5] = b"{broken"
    lines[280] = b'{"url": "https://x/", "content": 7}'
    inputs = tmp_path / "in.jsonl"
    inputs.write_bytes(b"\n".join(lines) + b"\n")
    with State.open(None) as state:
        summary = run(state, [str(inputs)], prepare=prepare)
        assert summary.documents == 298 and summary.records == 300
        assert dict(summary.dead_letters) == {"not_json": 1, "bad_field": 1}
        assert state.view().counters.get("documents") == 298
