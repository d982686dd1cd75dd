"""The input contract's fast paths equal their definitions."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import BadRecordError, Page, page_from_json, page_from_mapping
from neardup.core.records import _standard_json, format_fetched_at


def _outcome(decode: object, line: bytes) -> Page | tuple[str, str]:
    try:
        return decode(line)  # type: ignore[operator, no-any-return]
    except BadRecordError as error:
        return error.reason, str(error)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_FIELD = st.one_of(st.text(), _JSON, st.sampled_from(["2026-01-01T00:00:00Z", "yesterday", ""]))
_RECORD = st.one_of(
    _JSON,
    st.fixed_dictionaries(
        {"url": _FIELD, "content": _FIELD},
        optional={"fetched_at": _FIELD, "content_type": _FIELD, "extra": _JSON},
    ),
)
# ways a line goes wrong that msgspec and the json module might see differently
_DAMAGE = st.sampled_from(
    [b"", b"\xff", b"\xc3", b"\\ud800", b'"', b"NaN", b"Infinity", b",", b"}", b"\x00", b"\t"]
)


@given(_RECORD, st.booleans(), _DAMAGE, st.integers(0, 200))
def test_records_decode_as_the_json_module_decodes_them(
    record: object, ascii_only: bool, damage: bytes, where: int
) -> None:
    """msgspec decodes lines first; a page, or the dead letter's reason and message, is what
    the json module and page_from_mapping give (NaN, lone surrogates, bad UTF-8 included)."""
    line = json.dumps(record, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    line = line[:where] + damage + line[where:]
    assert _outcome(page_from_json, line) == _outcome(
        lambda raw: page_from_mapping(_standard_json(raw)), line
    )


@given(st.datetimes(timezones=st.none() | st.timezones()))
def test_fetched_at_format_is_the_fixed_width_form(moment: datetime) -> None:
    assert format_fetched_at(moment) == (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
        f"{moment.minute:02d}:{moment.second:02d}.{moment.microsecond:06d}Z"
    )


@pytest.mark.parametrize("field", ["url", "content", "views"])
def test_an_integer_too_long_for_python_is_a_bad_record_in_any_field(field: str) -> None:
    record = {"url": "https://a/", "content": "text"}
    line = json.dumps(record)[:-1] + f', "{field}": ' + "9" * 100_000 + "}"
    with pytest.raises(BadRecordError) as raised:
        page_from_json(line.encode())
    assert raised.value.reason == "bad_number"
