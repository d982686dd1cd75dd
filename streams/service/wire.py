"""A request's version and header lines as they come off the socket, a server's URL, and
requests over kept-alive connections.

The standard library's ``BaseHTTPRequestHandler`` parses header lines through the email
package: a sixth of a similar query's time in ``neardup serve``. They are ``Name: value``
lines, read here with ``http.client``'s limits, and refused as RFC 9112 says; ``KeptAlive``
reads its answers' headers the same way (``http.client`` would take them through the email
package too).
"""

from __future__ import annotations

import re
import socket
import threading
from http import HTTPStatus
from typing import IO, Any, Protocol

__all__ = [
    "EXCHANGE_FAILURES",
    "ExchangeError",
    "HeaderError",
    "Headers",
    "KeptAlive",
    "Lines",
    "family_of",
    "http_version",
    "read_headers",
    "url_of",
]

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


def family_of(host: str) -> socket.AddressFamily:
    """The address family of a host given as an address (IPv6 has colons)."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def url_of(address: Any) -> str:
    """The URL of a server listening on ``address`` (a socket's name)."""
    host, port = address[:2]
    name = host.decode() if isinstance(host, bytes) else host
    shown = f"[{name}]" if ":" in name else name
    return f"http://{shown}:{port}"


class ExchangeError(Exception):
    """An answer that is not one: no status line (the server closed the connection), or cut
    short."""


#: what ``KeptAlive.exchange`` raises when a request gets no answer (its connection dropped)
EXCHANGE_FAILURES = (OSError, ValueError, HeaderError, ExchangeError)


class KeptAlive:
    """Requests to one server, over a kept-alive connection per thread, spoken over a raw
    socket (``timeout``: seconds a request may wait for its answer)."""

    def __init__(self, address: tuple[str, int], timeout: float) -> None:
        self._address = address
        self._timeout = timeout
        self._local = threading.local()

    def exchange(
        self, method: str, target: str, headers: str, body: bytes
    ) -> tuple[int, Headers, bytes]:
        """The status, headers and body of the answer to a request (``headers``: its header
        lines, each ending in CRLF, but Content-Length). On any error (``EXCHANGE_FAILURES``,
        or another) the connection is dropped and the error raised."""
        try:
            sock, lines = self._connection()
            head = f"{method} {target} HTTP/1.1\r\n{headers}Content-Length: {len(body)}\r\n\r\n"
            sock.sendall(head.encode("iso-8859-1") + body)
            status_line = lines.readline(MAX_LINE + 1)
            words = status_line.split(None, 2)
            if len(words) < 2 or not words[1].isdigit():
                raise ExchangeError(f"no status line ({status_line[:40]!r})")
            found = read_headers(lines)
            length = int(found.get("Content-Length", "0"))
            data = b"" if method == "HEAD" else lines.read(length)
            if len(data) != length and method != "HEAD":
                raise ExchangeError("the answer was cut short")
        except BaseException:
            self.drop()
            raise
        if found.get("Connection", "").lower() == "close":
            self.drop()
        return int(words[1]), found, data

    def _connection(self) -> tuple[socket.socket, IO[bytes]]:
        held: tuple[socket.socket, IO[bytes]] | None = getattr(self._local, "held", None)
        if held is None:
            sock = socket.create_connection(self._address, timeout=self._timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            held = self._local.held = (sock, sock.makefile("rb"))
        return held

    def drop(self) -> None:
        """Close this thread's connection, if it has one."""
        held = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None:
            held[1].close()
            held[0].close()
