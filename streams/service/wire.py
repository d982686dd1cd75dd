"""A request's version and header lines as they come off the socket, and a server's URL.

The standard library's ``BaseHTTPRequestHandler`` parses header lines through the email
package: a sixth of a similar query's time in ``neardup serve``. They are ``Name: value``
lines, read here with ``http.client``'s limits, and refused as RFC 9112 says.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any, Protocol

__all__ = ["HeaderError", "Headers", "Lines", "http_version", "read_headers", "url_of"]

_VERSION = re.compile(r"HTTP/(\d{1,10})\.(\d{1,10})", re.ASCII)
#: as the standard library's http.client: the longest header line, the most header lines
MAX_LINE = 65536
MAX_HEADERS = 100


class Lines(Protocol):
    """Where a request is read from (the handler's ``rfile``)."""

    def readline(self, size: int = -1, /) -> bytes: ...


class HeaderError(Exception):
    """Header lines that cannot be taken, with the status that says why."""

    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Headers(dict[str, str]):
    """A request's header fields by lower-cased name (the first of a repeated one)."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)


def http_version(text: str) -> tuple[int, int] | None:
    """``HTTP/major.minor`` as two numbers, or None for anything else."""
    found = _VERSION.fullmatch(text)
    return None if found is None else (int(found[1]), int(found[2]))


def read_headers(rfile: Lines) -> Headers:
    """The header lines up to the blank line that ends them."""
    headers = Headers()
    for _ in range(MAX_HEADERS + 1):
        line = rfile.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise HeaderError(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
        if line in (b"\r\n", b"\n", b""):
            return headers
        text = line.decode("iso-8859-1").rstrip("\r\n")
        name, colon, value = text.partition(":")
        if not colon or not name or name != name.strip() or text[0] in " \t":
            # RFC 9112 5.2: a folded line (obs-fold) or a name with white space is refused
            raise HeaderError(HTTPStatus.BAD_REQUEST, f"Bad header line {text[:100]!r}")
        headers.setdefault(name.lower(), value.strip(" \t"))
    raise HeaderError(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")


def url_of(address: Any) -> str:
    """The URL of a server listening on ``address`` (a socket's name)."""
    host, port = address[:2]
    name = host.decode() if isinstance(host, bytes) else host
    shown = f"[{name}]" if ":" in name else name
    return f"http://{shown}:{port}"
