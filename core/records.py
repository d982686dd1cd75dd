"""The input contract: one JSON object per page, checked and normalised without any I/O.

    {"url": str, "content": str, "fetched_at": ISO-8601 str (optional),
     "content_type": str (optional)}

A page is identified by (url, fetched_at): delivering the same pair twice is one document.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec
import xxhash

from .exceptions import BadRecordError
from .markup import check_markup

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "Page",
    "PageStatus",
    "format_fetched_at",
    "normalise_fetched_at",
    "page_from_json",
    "page_from_mapping",
    "record_from_json",
]

#: Records larger than this go to the dead letters as ``too_large`` (override per run).
DEFAULT_MAX_RECORD_BYTES = 8 * 1024 * 1024

# Share of control characters above which content is taken for binary data.
_MAX_CONTROL_SHARE = 0.01
# Control characters other than NUL and white space; in UTF-8 each is one byte of its own.
_CONTROL_BYTES = bytes([*range(0x01, 0x09), *range(0x0E, 0x20), 0x7F])


@dataclass(frozen=True, slots=True)
class Page:
    """A crawled page, validated. ``fetched_at`` is normalised to UTC (``...Z``) or empty.

    ``status``: "fetched" (a page and its content), or what a crawler says of a url it
    fetched again: "deleted" (gone: a 404 or 410) or "unchanged" (a 304); those two have no
    content, and only a state that keeps the latest version of each url acts on them
    (``Settings.versions``)."""

    url: str
    content: str
    fetched_at: str = ""
    content_type: str = ""
    status: PageStatus = "fetched"

    @property
    def doc_id(self) -> int:
        """64-bit document id: the same (url, fetched_at) always gives the same id."""
        return xxhash.xxh3_64_intdigest(f"{self.url}\x1f{self.fetched_at}".encode())

    def version_id(self, raw_fingerprint: int) -> int:
        """The id of this version of the url's content, where only the latest version counts
        (``Settings.versions = "latest"``): two fetches at one instant with other content
        are two versions, of which one wins, not one document."""
        return xxhash.xxh3_64_intdigest(
            f"{self.url}\x1f{self.fetched_at}\x1f{raw_fingerprint:016x}".encode()
        )


#: what a record says of its url (``Page.status``)
PageStatus = Literal["fetched", "deleted", "unchanged"]


def normalise_fetched_at(value: str) -> str:
    """ISO-8601 to a fixed-width UTC form whose string order is time order."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError as error:
        raise BadRecordError(
            "bad_fetched_at",
            f"fetched_at {value[:64]!r} is not an ISO-8601 timestamp (e.g. 2026-01-31T12:00:00Z)",
        ) from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return format_fetched_at(moment.astimezone(UTC))


def format_fetched_at(moment: datetime) -> str:
    """The fixed-width UTC form of a UTC time. isoformat pads years before 1000 (strftime
    does not); its first 26 characters leave out any offset."""
    return moment.isoformat(timespec="microseconds")[:26] + "Z"


def _check_text(name: str, value: str) -> None:
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise BadRecordError("undecodable", f"{name} holds unpaired surrogates") from error
    if b"\x00" in encoded:
        raise BadRecordError("binary_content", f"{name} holds NUL characters: binary data")
    sample = encoded[:65536]
    # counted by what bytes.translate deletes: one C loop, with none of a regex's per-match work
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if controls > _MAX_CONTROL_SHARE * len(sample):
        raise BadRecordError("binary_content", f"{name} is mostly control characters: binary data")


def page_from_mapping(record: Any) -> Page:
    """A Page from a decoded JSON object, or BadRecordError saying why not."""
    if not isinstance(record, dict):
        raise BadRecordError(
            "not_an_object", f"expected a JSON object, got {type(record).__name__}"
        )
    status = _status(record)
    if status != "fetched":
        record = {**record, "content": ""}  # whatever it held: only the url's fate counts
    for name in ("url", "content"):
        if name not in record:
            raise BadRecordError("missing_field", f"the record has no {name!r} field")
        if not isinstance(record[name], str):
            raise BadRecordError(
                "bad_field", f"{name!r} must be a string, not {type(record[name]).__name__}"
            )
    url, content = record["url"].strip(), record["content"]
    if not url:
        raise BadRecordError("bad_field", "'url' is empty")
    _check_text("url", url)
    _check_text("content", content)
    fetched_at = record.get("fetched_at")
    content_type = record.get("content_type")
    if fetched_at is not None and not isinstance(fetched_at, str):
        raise BadRecordError("bad_field", "'fetched_at' must be an ISO-8601 string")
    if content_type is not None and not isinstance(content_type, str):
        raise BadRecordError("bad_field", "'content_type' must be a string")
    if status == "unchanged" and not fetched_at:
        raise BadRecordError(
            "missing_field", "an unchanged record needs the 'fetched_at' of its fetch"
        )
    check_markup(content, content_type or "")
    return Page(
        url=url,
        content=content,
        fetched_at=normalise_fetched_at(fetched_at) if fetched_at else "",
        content_type=(content_type or "").strip(),
        status=status,
    )


def _status(record: dict[str, Any]) -> PageStatus:
    """ "deleted" for ``"deleted": true``, "unchanged" for ``"unchanged": true``, else
    "fetched" (the record must then hold content)."""
    flags = [name for name in ("deleted", "unchanged") if name in record]
    for name in flags:
        if not isinstance(record[name], bool):
            raise BadRecordError(
                "bad_field", f"{name!r} must be true or false, not {record[name]!r:.40}"
            )
    said = [name for name in flags if record[name]]
    if len(said) > 1:
        raise BadRecordError("bad_field", "a record is either deleted or unchanged, not both")
    if said == ["deleted"]:
        return "deleted"
    return "unchanged" if said else "fetched"


def page_from_json(line: bytes | str, max_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Page:
    """A Page from one JSON Lines line or Kafka message value."""
    return page_from_mapping(record_from_json(line, max_bytes))


def record_from_json(line: bytes | str, max_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Any:
    """The decoded JSON value of one line or message, or BadRecordError saying why not
    (too large, not UTF-8, not JSON, a number out of range)."""
    size = len(line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line)
    if size > max_bytes:
        raise BadRecordError(
            "too_large", f"the record has {size} bytes, over the limit of {max_bytes}"
        )
    try:
        return _decode_json(line)
    except (msgspec.DecodeError, ValueError, RecursionError):
        # not UTF-8, not JSON, or beyond msgspec (NaN, lone surrogates, deep nesting)
        return _standard_json(line)


# msgspec decodes a record faster than the json module, into the same objects; whatever it
# refuses is decoded (or refused, with the same reason) by the json module
_decode_json = msgspec.json.Decoder().decode


def _standard_json(line: bytes | str) -> Any:
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BadRecordError("undecodable", f"the record is not UTF-8: {error}") from error
    try:
        return json.loads(line)
    except (json.JSONDecodeError, RecursionError) as error:
        raise BadRecordError("not_json", f"the record is not JSON: {error}") from error
    except ValueError as error:
        # valid JSON that Python will not hold, such as an integer of over 4,300 digits
        # (sys.get_int_max_str_digits): refused whatever field it is in
        raise BadRecordError(
            "bad_number", f"the record holds a number out of range: {error}"
        ) from error
