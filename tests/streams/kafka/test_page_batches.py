"""The prepare agent's work: batches of page messages to prepared batches, by size, with
refusals by index, the same in a child process as in a thread."""

from __future__ import annotations

import json

import pytest
from neardup.core import Settings
from neardup.core.prepared_codec import decode_batch
from neardup.streams.kafka.page_batches import prepare_messages
from neardup.streams.running.prepare_work import executor

from tests.helpers import family_pages


def _values() -> tuple[list[bytes], list[str]]:
    pages = family_pages(2, families=4, size=5, words=400)
    values = [
        json.dumps({"url": p.url, "content": p.content, "fetched_at": p.fetched_at}).encode()
        for p in pages
    ]
    values.insert(3, b"not json")
    values.insert(7, json.dumps({"url": "x" * 5000, "content": "a b c d e f"}).encode())
    return values, [p.url for p in pages]


def test_batches_are_split_by_size_and_bad_values_refused_by_index() -> None:
    values, urls = _values()
    settings = Settings()
    messages, refused = prepare_messages(values, settings.to_json(), 1 << 20, limit=4096)
    assert [(index, reason) for index, reason, _ in refused] == [(3, "not_json"), (7, "too_large")]
    assert "4096-byte message limit" in refused[1][2]
    assert all(len(message) <= 4096 for message in messages) and len(messages) > 1
    decoded = [doc for m in messages for doc in decode_batch(m, settings)]
    assert [doc.page.url for doc in decoded] == urls  # every good page, in order


def test_a_child_process_prepares_what_a_thread_does() -> None:
    values, _ = _values()
    settings_json = Settings(shingle_size=4).to_json()
    results = []
    for mode in ("process", "thread"):
        with executor(mode) as work:
            results.append(work.submit(prepare_messages, values, settings_json, 1 << 20).result())
    assert results[0] == results[1]


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="process, thread"):
        executor("cluster")


def test_hostile_messages_are_refused_by_index_and_the_rest_prepared() -> None:
    good = json.dumps({"url": "https://a/", "content": "a page of words " * 30}).encode()
    huge = b'{"url": "https://b/", "content": "x", "n": ' + b"1" * 100_000 + b"}"
    deep = json.dumps({"url": "https://c/", "content": "<html><body>" + "<div>" * 50_000}).encode()
    messages, refused = prepare_messages([huge, good, deep], Settings().to_json(), 1 << 20)
    assert [(index, reason) for index, reason, _ in refused] == [
        (0, "bad_number"),
        (2, "markup_too_deep"),
    ]
    assert [d.page.url for m in messages for d in decode_batch(m, Settings())] == ["https://a/"]


def test_large_pages_are_prepared_a_bounded_part_at_a_time() -> None:
    """Parts of at most ``batch_bytes`` content characters give the documents one batch
    would (the bound is on memory, not on what is found)."""
    values = _values()[0]
    settings = Settings().to_json()
    whole, _ = prepare_messages(values, settings, 1 << 20)
    parts, _ = prepare_messages(values, settings, 1 << 20, batch_bytes=5000)
    assert [d.fingerprints for m in parts for d in decode_batch(m, Settings())] == [
        d.fingerprints for m in whole for d in decode_batch(m, Settings())
    ]
