"""Reading input: JSON Lines files (or stdin) and WARC files, record by record.

Every record either becomes a Page or a DeadLetter that says where it came from and why it
was refused; nothing is dropped silently.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

from neardup.core import (
    DEFAULT_MAX_RECORD_BYTES,
    BadRecordError,
    NeardupError,
    Page,
    page_from_json,
    page_from_mapping,
)

__all__ = [
    "DeadLetter",
    "NumberedLine",
    "check_inputs",
    "is_warc",
    "iter_lines",
    "iter_numbered_lines",
    "iter_records",
    "open_source",
]

T = TypeVar("T")

_EXCERPT = 512
# a line holds a whole page, several KB: a 256 KB buffer reads many per system call, the
# default 8 KB one about one
_READ_BUFFER = 1 << 18
# what bytes.strip removes: a line starting with anything else is not blank
_BLANK = frozenset(b" \t\n\r\x0b\x0c")


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record that could not become a document, with enough context to find it again."""

    source: str
    position: str  # "line 12" / "record 3" / "partition 2 offset 17"
    reason: str
    message: str
    excerpt: str
    #: the whole refused JSON Lines line (not for oversized lines or WARC records), so that
    #: ``neardup publish`` can pass it on to the worker's dead-letter topic unchanged
    raw: bytes | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "position": self.position,
            "reason": self.reason,
            "error": self.message,
            "excerpt": self.excerpt,
        }


def _excerpt(raw: bytes) -> str:
    return raw[:_EXCERPT].decode("utf-8", "replace")


def open_source(name: str) -> IO[bytes]:
    return sys.stdin.buffer if name == "-" else open(name, "rb", buffering=_READ_BUFFER)


def check_inputs(names: Iterable[str]) -> None:
    """Refuse, before any is read, an input that is missing, a directory or unreadable: a
    run would otherwise stop at it after storing the inputs before it."""
    for name in names:
        if name == "-":
            continue
        if not os.path.exists(name):
            raise NeardupError(f"input {name}: no such file")
        if os.path.isdir(name):
            raise NeardupError(f"input {name} is a directory: give the files in it")
        if not os.access(name, os.R_OK):
            raise NeardupError(f"input {name} cannot be read (permission denied)")


def is_warc(name: str) -> bool:
    lowered = name.lower()
    return lowered.endswith((".warc", ".warc.gz", ".arc", ".arc.gz"))


def iter_records(
    name: str, max_bytes: int = DEFAULT_MAX_RECORD_BYTES
) -> Iterator[Page | DeadLetter]:
    """Pages and dead letters of one input: a JSON Lines file, ``-`` for stdin, or a WARC file."""
    if is_warc(name):
        yield from _warc_records(name, max_bytes)
        return
    yield from iter_lines(name, page_from_json, max_bytes)


def iter_lines(
    name: str, parse: Callable[[bytes, int], T], max_bytes: int = DEFAULT_MAX_RECORD_BYTES
) -> Iterator[T | DeadLetter]:
    """What ``parse`` makes of each line of a JSON Lines file (or ``-``, stdin), and a dead
    letter for each line it refuses (a ``BadRecordError``) or that is too long."""
    for entry in iter_numbered_lines(name, max_bytes):
        if isinstance(entry, DeadLetter):
            yield entry
            continue
        try:
            yield parse(entry.raw, max_bytes)
        except BadRecordError as error:
            yield entry.refused(error.reason, str(error))


@dataclass(frozen=True, slots=True)
class NumberedLine:
    """A line of a JSON Lines input, not yet parsed, with where it came from."""

    source: str
    number: int
    raw: bytes

    def refused(self, reason: str, message: str) -> DeadLetter:
        """The dead letter of this line, refused for ``reason``."""
        return DeadLetter(
            self.source, f"line {self.number}", reason, message, _excerpt(self.raw), self.raw
        )


def iter_numbered_lines(
    name: str, max_bytes: int = DEFAULT_MAX_RECORD_BYTES
) -> Iterator[NumberedLine | DeadLetter]:
    """The non-blank lines of a JSON Lines file (or ``-``, stdin), unparsed, and a dead letter
    for each line that is too long."""
    stream = open_source(name)
    try:
        for number, line in enumerate(_lines(stream, max_bytes), start=1):
            if isinstance(line, DeadLetter):
                yield DeadLetter(name, f"line {number}", line.reason, line.message, line.excerpt)
                continue
            if (not line or line[0] in _BLANK) and not line.strip():
                continue
            yield NumberedLine(name, number, line)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _lines(stream: IO[bytes], max_bytes: int) -> Iterator[bytes | DeadLetter]:
    """Lines without holding an oversized one in memory: its rest is skipped and reported."""
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            head = line
            skipped = len(line)
            while (more := stream.readline(1 << 20)) and not more.endswith(b"\n"):
                skipped += len(more)
            skipped += len(more)
            yield DeadLetter(
                "",
                "",
                "too_large",
                f"the record has {skipped} bytes, over the limit of {max_bytes}",
                _excerpt(head),
            )
            continue
        yield line


def _warc_records(name: str, max_bytes: int) -> Iterator[Page | DeadLetter]:
    number = 0
    try:
        for item in _warc_items(name, max_bytes):
            number += 1
            yield item
    # warcio meets a damaged or cut file with errors of many kinds (a record's headers cut
    # short end in an AttributeError inside it): whichever, the file ends here, and says so
    except Exception as error:
        yield DeadLetter(
            name,
            f"after record {number}",
            "bad_warc",
            f"the WARC file cannot be read further: {type(error).__name__}: "
            f"{str(error).strip()[:300]}",
            "",
        )


def _warc_items(name: str, max_bytes: int) -> Iterator[Page | DeadLetter]:
    from warcio.archiveiterator import ArchiveIterator

    with open(name, "rb") as stream:
        number = 0
        records = ArchiveIterator(stream, arc2warc=True)
        for record in records:
            if record.rec_type not in ("response", "resource", "conversion"):
                continue
            number += 1
            position = f"record {number}"
            url = record.rec_headers.get_header("WARC-Target-URI") or ""
            content_type = ""
            if record.http_headers is not None:
                content_type = record.http_headers.get_header("Content-Type") or ""
            else:
                content_type = record.rec_headers.get_header("Content-Type") or ""
            body = record.content_stream().read(max_bytes + 1)
            if len(body) > max_bytes:
                yield DeadLetter(
                    name,
                    position,
                    "too_large",
                    f"the body of {url} is over the limit of {max_bytes} bytes",
                    url,
                )
                continue
            missing = getattr(record.raw_stream, "limit", 0)
            if missing > 0:  # the file ends inside the record: a copy cut short
                yield DeadLetter(
                    name,
                    position,
                    "truncated",
                    f"the record of {url} ends {missing} bytes short of its declared length: "
                    "the file is cut",
                    url,
                )
                continue
            lowered = content_type.lower()
            if lowered and not lowered.startswith(
                ("text/", "application/xhtml", "application/xml")
            ):
                yield DeadLetter(
                    name,
                    position,
                    "not_text",
                    f"{url} has content type {content_type!r}, not text",
                    url,
                )
                continue
            try:
                content = body.decode(_charset(content_type))
                yield page_from_mapping(
                    {
                        "url": url,
                        "content": content,
                        "fetched_at": record.rec_headers.get_header("WARC-Date"),
                        "content_type": content_type,
                    }
                )
            except (UnicodeDecodeError, LookupError) as error:
                yield DeadLetter(name, position, "undecodable", f"{url}: {error}", _excerpt(body))
            except BadRecordError as error:
                yield DeadLetter(name, position, error.reason, str(error), _excerpt(body))
        yield from _cut_after(name, stream, records.offset, number)


def _cut_after(name: str, stream: IO[bytes], offset: int, number: int) -> Iterator[DeadLetter]:
    """A dead letter for bytes after the last whole record: warcio ends quietly at a
    record whose headers are cut short."""
    size = os.fstat(stream.fileno()).st_size
    stream.seek(offset)
    rest = stream.read(_EXCERPT)
    if offset < size and rest.strip():
        yield DeadLetter(
            name,
            f"after record {number}",
            "truncated",
            f"the file ends inside a record: its last {size - offset} bytes are not a whole "
            "record (the file is cut)",
            _excerpt(rest),
        )


def _charset(content_type: str) -> str:
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
            codecs.lookup(charset)  # LookupError for an unknown charset
            return charset
    return "utf-8"
