"""The prepared topic's messages: every field detection needs survives the wire, detection on
decoded documents gives the same events, and a damaged message is refused with a reason."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import BadRecordError, Page, PreparedDoc, Preparer, Settings, page_from_json
from neardup.core.prepared_codec import (
    _HEADER,
    _OLD_HEADER,
    decode_batch,
    encode_batch,
    encode_document,
    frame,
    settings_of_batch,
)
from neardup.state import State
from neardup.state.codec import encode_id
from neardup.streams import Detector

from tests.helpers import SAMPLE, family_pages


def _sample_pages() -> list[Page]:
    pages = []
    for line in SAMPLE.read_bytes().splitlines():
        try:
            pages.append(page_from_json(line))
        except BadRecordError:
            continue
    return pages


def _same(a: PreparedDoc, b: PreparedDoc) -> bool:
    return (
        a.doc_id == b.doc_id
        and a.fingerprints == b.fingerprints
        and a.shingle_count == b.shingle_count
        and a.sketch.values.tolist() == b.sketch.values.tolist()
        and a.sketch.family == b.sketch.family
        and a.sketch.sample_size == b.sketch.sample_size
        and a.super_shingles.tolist() == b.super_shingles.tolist()
        and a.shingle_keys.tolist() == b.shingle_keys.tolist()
        and a.containment_keys.tolist() == b.containment_keys.tolist()
        and (a.containment_level, a.containment_lookup)
        == (b.containment_level, b.containment_lookup)
        and a.simhash == b.simhash
        and a.simhash_keys.tolist() == b.simhash_keys.tolist()
        and a.packed_sketch == b.packed_sketch
        and (a.page.url, a.page.fetched_at, a.page.content_type)
        == (b.page.url, b.page.fetched_at, b.page.content_type)
    )


@pytest.mark.parametrize("sketch", ["minhash", "simhash"])
def test_every_field_detection_needs_survives_the_wire(sketch: str) -> None:
    settings = Settings(sketch=sketch)  # type: ignore[arg-type]
    wordless = [
        Page("https://empty.example/", "<html><script>var x;</script></html>", "", "text/html"),
        Page("https://two.example/", "two words", "2026-01-01T00:00:00.000000Z"),
    ]
    docs = Preparer(settings).prepare(_sample_pages() + family_pages(3) + wordless)
    decoded = decode_batch(encode_batch(docs, settings), settings)
    assert len(decoded) == len(docs)
    assert all(_same(a, b) for a, b in zip(docs, decoded, strict=True))
    assert all(doc.page.content == "" for doc in decoded)  # the content stays behind
    assert any(doc.fingerprints.canonical is None for doc in decoded)  # a page without words
    if sketch == "simhash":  # a SimHash and a key per table, for every page with shingles
        assert all(len(d.simhash_keys) == 16 for d in decoded if d.shingle_count)
        assert all(d.sketch.sample_size == 16 for d in decoded)
        assert len({d.simhash for d in decoded}) > len(decoded) / 2
        return
    banded = [len(doc.super_shingles) > 0 for doc in decoded]  # too short to band, or not
    assert any(banded) and not all(banded)


@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=40).filter(lambda u: "\x00" not in u),
            st.text(max_size=400).filter(lambda c: "\x00" not in c),
            st.sampled_from(["", "text/html", "text/plain; charset=utf-8"]),
        ),
        max_size=8,
    ),
    st.sampled_from(
        [
            Settings(),
            Settings(shingle_size=2, sample_size=16, short_limit=8, containment_sample=8),
            Settings(containment_threshold=0.5),
            Settings(sketch="simhash", shingle_size=2),
        ]
    ),
)
def test_round_trip_of_any_pages(raw: list[tuple[str, str, str]], settings: Settings) -> None:
    pages = [Page(url, content, "", ctype) for url, content, ctype in raw]
    docs = Preparer(settings).prepare(pages)
    decoded = decode_batch(encode_batch(docs, settings), settings)
    assert all(_same(a, b) for a, b in zip(docs, decoded, strict=True))
    assert len(decoded) == len(docs)


@pytest.mark.parametrize(
    "settings", [Settings(), Settings(containment_threshold=0.3), Settings(sketch="simhash")]
)
def test_detection_on_decoded_documents_gives_the_same_events(settings: Settings) -> None:
    pages = _sample_pages() + family_pages(11)
    docs = Preparer(settings).prepare(pages)
    with State.open(None, settings) as direct, State.open(None, settings) as wired:
        expected = Detector(direct).ingest(docs).events
        found = Detector(wired).ingest(decode_batch(encode_batch(docs, settings), settings)).events
    assert [e.to_json() for e in found] == [e.to_json() for e in expected]
    assert expected  # the pages do have duplicates


def _as_ndp3(docs: list[PreparedDoc], settings: Settings) -> bytes:
    """``docs`` as the previous layout carried them: no packed sketch in a document."""
    parts = []
    for doc in docs:
        raw = encode_document(doc)
        fields = list(_HEADER.unpack_from(raw))
        packed, sketch_end = fields.pop(10), _HEADER.size + 4 * fields[9]
        fields[6] &= ~4  # no packed sketch
        rest = raw[_HEADER.size : sketch_end] + raw[sketch_end + packed :]
        parts.append(_OLD_HEADER.pack(*fields) + rest)
    return b"NDP3" + frame(parts, settings.to_json().encode())[4:]


def test_a_batch_of_the_previous_layout_is_read_and_stored_alike() -> None:
    """A deployment upgraded while its prepared log holds batches of the previous layout."""
    settings = Settings()
    docs = Preparer(settings).prepare(_sample_pages() + family_pages(11))
    old = decode_batch(_as_ndp3(docs, settings), settings)
    assert all(doc.packed_sketch is None for doc in old)
    with State.open(None, settings) as direct, State.open(None, settings) as wired:
        expected = Detector(direct).ingest(docs).events
        assert [e.to_json() for e in Detector(wired).ingest(old).events] == [
            e.to_json() for e in expected
        ]
        for doc in docs[:20]:
            assert direct.store.get("docs", encode_id(doc.doc_id)) == wired.store.get(
                "docs", encode_id(doc.doc_id)
            )


def test_a_damaged_message_is_refused_with_a_reason() -> None:
    settings = Settings()
    message = encode_batch(Preparer(settings).prepare(family_pages(5, families=2)), settings)
    damaged = [
        b"",
        b"{json}",
        message[:3],
        message[:10],
        message[: len(message) // 2],
        message[:-1],
        message + b"\x00",
    ]
    for value in damaged:
        with pytest.raises(BadRecordError) as refused:
            decode_batch(value, settings)
        assert refused.value.reason == "bad_prepared_batch"
    # a document whose id does not match its url: the bytes were changed in transit
    url = b"https://f0.example/0"
    changed = message.replace(url, b"https://f0.example/X", 1)
    with pytest.raises(BadRecordError, match="does not match its url"):
        decode_batch(changed, settings)


def test_a_message_names_the_settings_it_was_prepared_with() -> None:
    settings = Settings(shingle_size=4)
    raw, _ = settings_of_batch(encode_batch([], settings))
    assert Settings.from_json(raw.decode()).to_json() == settings.to_json()
