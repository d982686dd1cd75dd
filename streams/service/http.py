"""The HTTP server: the dashboard, /metrics, a liveness probe and the JSON API on one port.

A threaded server from the standard library, run in a thread of the runtime (``neardup
run``, the worker) or of ``neardup serve``. Each request has a socket timeout, a body limit
and a JSON error for anything it gets wrong; an unexpected failure is a 500 with a JSON body,
logged, and the server goes on. A bearer token (``--api-token``) guards every path but
``/healthz``.

A worker that does not hold the detector's state redirects (307) every path but
``/healthz`` and ``/metrics`` to the worker that does (``locate``), so a browser or a client
following redirects gets its answer from any worker.
"""

from __future__ import annotations

import email.utils
import functools
import hmac
import logging
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec

from .api import API_PREFIX, Api, Limits, Request
from .errors import (
    ApiError,
    BadRequestError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    UnauthorizedError,
    UnavailableError,
)
from .metrics import CONTENT_TYPE, Metrics
from .openapi import openapi
from .relay import OWN_PATHS, Relay
from .sources import LiveState, StateSource
from .timeline import Timeline
from .wire import HeaderError, family_of, http_version, read_headers, url_of

__all__ = ["Service", "dashboard_page", "parse_address"]

_JSON = msgspec.json.Encoder()

logger = logging.getLogger(__name__)

#: seconds a connection may stay silent (a client that never sends its body)
_SOCKET_TIMEOUT = 15.0


@functools.cache
def dashboard_page() -> bytes:
    """The dashboard as one document: its style and script (shipped in the package) inline,
    so that a page opened with a token needs no second authorized request, and no CDN."""
    static = resources.files(__package__).joinpath("static")
    page = static.joinpath("index.html").read_text("utf-8")
    for name in ("dashboard.css", "dashboard.js"):
        page = page.replace(f"/*{name}*/", static.joinpath(name).read_text("utf-8"))
    return page.encode()


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (loopback); port 0 picks a free one."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"--http {text!r}: give HOST:PORT, e.g. 127.0.0.1:8080") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"--http {text!r}: the port must be from 0 to 65535")
    return host, number


class Service:
    """Metrics, the dashboard's timeline and the API over one state source, served over HTTP
    in a thread of its own. ``listeners`` are what the runtime feeds with its batches."""

    def __init__(
        self,
        source: StateSource,
        address: tuple[str, int] = ("127.0.0.1", 0),
        token: str | None = None,
        limits: Limits | None = None,
        locate: Callable[[], str | None] | None = None,
        followed: int = 0,
        interval: float = 2.0,
        query_switch_interval: float | None = None,
        relay: Relay | None = None,
        listening: socket.socket | None = None,
        shared: Service | None = None,
        on_state_query: Callable[[], bool] | None = None,
    ) -> None:
        self.source = source
        #: where the paths only a run can answer go, for a run's front (relay.py)
        self.relay = relay
        #: called at a request that reads the state until it returns True: the address has
        #: been handed over to a front (relay.py), which a worker does only while it holds
        #: the detector
        self._on_state_query = on_state_query
        self._state_asked = threading.Lock()
        self._handing: threading.Thread | None = None
        self._stopped = False
        #: set once the address is handed over: answers close their connection, so that the
        #: client's next one goes to the front
        self.handed_over = False
        # ``shared``: the service whose metrics and timeline this one shows (a run's own
        # service, behind its front, shows those its public one is fed)
        self._own_timeline = shared is None and relay is None
        self.metrics: Metrics = Metrics(source) if shared is None else shared.metrics
        self.timeline: Timeline = (
            Timeline(source, self.metrics, interval, followed=followed)
            if shared is None
            else shared.timeline
        )
        self.api = Api(source, self.timeline, limits)
        self.token = token or None
        self.locate = locate
        self.answering = _Answering(query_switch_interval)
        self._server = _Server(address, _Handler, self, listening)
        self._thread: threading.Thread | None = None

    @property
    def listeners(self) -> tuple[Metrics, Timeline]:
        return (self.metrics, self.timeline)

    @property
    def url(self) -> str:
        return url_of(self._server.server_address)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def advertised_url(self) -> str:
        """The URL other processes reach this service at: ``url``, with the machine's host
        name for a server bound to every address (0.0.0.0 or ::)."""
        port = self.port
        if self.url in (f"http://0.0.0.0:{port}", f"http://[::]:{port}"):
            return f"http://{socket.gethostname()}:{port}"
        return self.url

    def announce(self) -> None:
        """Say on stderr where the service is: ``neardup: serving URL`` (port 0 picked one)."""
        print(f"neardup: serving {self.url}", file=sys.stderr, flush=True)

    def start(self) -> Service:
        if self._own_timeline:  # a front relays the run's; a run's own service shares one
            self.timeline.start()
        self._serve()
        return self

    def _serve(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="neardup-http", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        with self._state_asked:
            self._on_state_query = None  # and no taking the address back after this
            self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        if self._own_timeline:
            self.timeline.stop()
        if self._thread is not None:
            self._thread.join()

    def state_asked(self) -> None:
        """A request is about to read the state: ``on_state_query`` may hand the address
        over."""
        if self._on_state_query is None or self.handed_over:
            return
        with self._state_asked:
            if self._on_state_query is not None and not self.handed_over and self._on_state_query():
                self.handed_over = True
                # no more accepting here (the socket stays open: the front accepts on it);
                # not from this request's thread, which the loop's shutdown would wait for
                self._handing = threading.Thread(target=self._server.shutdown, daemon=True)
                self._handing.start()

    def take_back(self, for_good: bool = True) -> None:
        """Serve the address here again: the front it was handed to is gone. For good when
        the process gave up starting it (it answers its queries itself, slower, rather than
        leave them waiting in the socket's backlog); not when a worker stopped it as it let
        go of the detector (the next state query may hand the address over again)."""
        with self._state_asked:
            if for_good:
                self._on_state_query = None
            if not self.handed_over or self._stopped:
                return
            if self._handing is not None:
                self._handing.join()
            self.handed_over = False
            self._serve()

    def owner_url(self) -> str | None:
        """Where to send a request this process cannot answer: the worker holding the state."""
        if self.locate is None or not isinstance(self.source, LiveState):
            return None
        if self.source.attached:
            return None
        found = self.locate()
        if found is None or found.rstrip("/") in (self.url, self.advertised_url):
            return None  # no owner known, or an advertisement of this worker's own, now stale
        return found.rstrip("/")


class _Answering:
    """API requests answered one at a time, with the interpreter's thread switch interval
    lowered (``interval``) while one is.

    One at a time: the answers are Python holding the interpreter lock, so threads answering
    side by side only trade it, and each trade costs (four client threads took 3.4 ms of CPU a
    similar query in ``neardup serve``, one at a time 2.4 ms, one client 2.0 ms). A long
    request (a fold of many pages) makes the next wait, as it would slow them side by side.

    The short switch interval is for a runtime's service: its detector holds the interpreter
    lock between switches, and a query waits for it at each of its state reads; but short
    switches cost the runtime's own threads (its prepare pool's) when no query waits, so it is
    lowered for no longer than an answer."""

    def __init__(self, interval: float | None) -> None:
        self._interval = interval
        self._one = threading.Lock()
        self._saved = sys.getswitchinterval()

    def __enter__(self) -> None:
        self._one.acquire()
        if self._interval is not None:
            self._saved = sys.getswitchinterval()
            sys.setswitchinterval(self._interval)

    def __exit__(self, *_: object) -> None:
        if self._interval is not None:
            sys.setswitchinterval(self._saved)
        self._one.release()


class _InternalError(ApiError):
    status = 500
    code = "internal"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type,
        service: Service,
        listening: socket.socket | None = None,
    ) -> None:
        self.service = service
        # closed by server_close, which the base class calls also when the bind fails
        self._wake, self._waker = socket.socketpair()
        self._wake.setblocking(False)
        self._stop_asked = threading.Event()
        self._not_serving = threading.Event()
        self._not_serving.set()
        if listening is None:
            self.address_family = family_of(address[0])
            super().__init__(address, handler)
        else:
            # a socket bound elsewhere: a run's, served by the run until its front takes it over
            super().__init__(listening.getsockname()[:2], handler, bind_and_activate=False)
            self.socket.close()
            self.socket = listening
            self.server_address = listening.getsockname()

    # socketserver's own loop looks for a request to stop every half second: a run with
    # --http waited 0.8 s at its end for its two servers (its public and its own loopback
    # one), the whole of what the metrics cost in the 100k bench. This one is woken.
    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._not_serving.clear()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wake, selectors.EVENT_READ)
                while not self._stop_asked.is_set():
                    ready = [key.fileobj for key, _ in selector.select()]
                    if self._wake in ready:
                        self._drain_wake()
                    if self in ready and not self._stop_asked.is_set():
                        self._accept()
                    self.service_actions()
        finally:
            self._stop_asked.clear()
            self._not_serving.set()

    def shutdown(self) -> None:
        self._stop_asked.set()
        self._waker.send(b"\0")
        self._not_serving.wait()

    def _accept(self) -> None:
        # socketserver's _handle_request_noblock, which its types do not show
        try:
            request, client_address = self.get_request()
        except OSError:
            return
        try:
            self.process_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
            self.shutdown_request(request)

    def _drain_wake(self) -> None:
        try:
            while self._wake.recv(64):
                pass
        except BlockingIOError:
            pass

    def server_close(self) -> None:
        super().server_close()
        self._wake.close()
        self._waker.close()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    _body_read = False
    protocol_version = "HTTP/1.1"
    timeout = _SOCKET_TIMEOUT
    server_version = "neardup"
    # headers and body go out in two writes: with Nagle's algorithm the second waits for the
    # client's delayed ACK, 40 ms per answer on a kept-alive connection
    disable_nagle_algorithm = True

    def __getattr__(self, name: str) -> Any:
        # every method reaches the router (do_GET, do_TRACE, ...): a path that does not take
        # it answers 405 with its Allow header, not the base class's HTML 501
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def parse_request(self) -> bool:
        # the standard library's header parsing goes through the email package: a sixth of
        # a similar query's time in `serve`. The request line and the header lines ("Name:
        # value" each) are read here, with its limits and answers.
        if not self._request_line():
            return False
        try:
            self.headers = read_headers(self.rfile)  # type: ignore[assignment]
        except HeaderError as error:
            self.close_connection = True
            self.send_error(error.status, error.reason)
            return False
        connection = self.headers.get("Connection", "").lower()
        if connection == "close":
            self.close_connection = True
        elif connection == "keep-alive":
            self.close_connection = False
        if (
            self.headers.get("Expect", "").lower() == "100-continue"
            and self.request_version >= "HTTP/1.1"
        ):
            return self.handle_expect_100()
        return True

    def _request_line(self) -> bool:
        """Method, path and version (HTTP/1.0 or 1.1; not 0.9, which has no headers), as
        the standard library reads them; a bad line is answered here."""
        self.command = None  # type: ignore[assignment]
        self.request_version = self.default_request_version
        self.close_connection = True
        line = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.requestline = line
        words = line.split()
        if not words:
            return False
        if len(words) != 3:
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request syntax ({line[:100]!r})")
            return False
        command, path, version = words
        self.request_version = "HTTP/1.0"  # its refusals below get a status line
        number = http_version(version)
        if number is None:
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request version ({version[:20]!r})")
            return False
        major, minor = number
        if major >= 2:
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"Invalid HTTP version {major}")
            return False
        self.close_connection = (major, minor) < (1, 1)
        self.request_version = version
        # as the standard library: "//host/x" would read as a URL with no scheme (a redirect)
        self.command = command
        self.path = "/" + path.lstrip("/") if path[:2] == "//" else path
        return True

    def log_message(self, format: str, *args: Any) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s " + format, self.address_string(), *args)

    def _handle(self) -> None:
        service = self.server.service
        parts = urlsplit(self.path)
        path = parts.path
        self._body_read = False
        query = parse_qs(parts.query, keep_blank_values=True)
        try:
            if path == "/healthz":
                self._json(200, {"status": "ok"})
                return
            self._authorize(service, query)
            if path != "/metrics":
                owner = service.owner_url()
                if owner is not None:
                    self._redirect(owner + self.path)
                    return
            body = self._body(service)
            if self._relayed(service, path, body):
                return
            if path == "/metrics":
                self._only("GET", "HEAD")
                self._send(200, service.metrics.render(), CONTENT_TYPE)
            elif path in ("/", "/index.html"):
                self._only("GET", "HEAD")
                self._send(200, dashboard_page(), "text/html; charset=utf-8")
            elif path == API_PREFIX + "/openapi.json":
                self._only("GET", "HEAD")
                self._json(200, openapi(service.api.limits, service.token is not None))
            elif path.startswith(API_PREFIX + "/"):
                if path not in OWN_PATHS:
                    service.state_asked()
                query.pop("access_token", None)
                request = Request(self.command, path[len(API_PREFIX) :], query, body)
                with service.answering:
                    answer = service.api.answer(request)
                self._json(200, answer)
            else:
                raise NotFoundError(f"no page {path}: the API is under {API_PREFIX}/")
        except ApiError as error:
            self._error(error)
        except Exception:  # a bug must not take the server down: answer, log, go on
            logger.exception("neardup service: %s %s failed", self.command, self.path)
            self._error(_InternalError("internal error; the server's log has the details"))

    def _relayed(self, service: Service, path: str, body: bytes) -> bool:
        """Whether the run behind this front answered (a path only it can answer); if it
        does not, this server answers from the state."""
        relay = service.relay
        if relay is None or not relay.takes(path):
            return False
        answer = relay.forward(self.command, self.path, body)
        if answer is None:
            return False
        self._send(answer.status, answer.body, answer.content_type, answer.headers)
        return True

    def _authorize(self, service: Service, query: dict[str, list[str]]) -> None:
        if service.token is None:
            return
        given = ""
        header = self.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            given = header[len("Bearer ") :].strip()
        elif query.get("access_token"):  # RFC 6750's query form: how a browser opens the page
            given = query["access_token"][0]
        if not hmac.compare_digest(given.encode(), service.token.encode()):
            raise UnauthorizedError("this server needs a bearer token (Authorization: Bearer ...)")

    def _body(self, service: Service) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise BadRequestError("chunked bodies are not taken: send a Content-Length")
        length_text = self.headers.get("Content-Length", "0") or "0"
        try:
            length = int(length_text)
        except ValueError:
            self.close_connection = True
            raise BadRequestError(f"Content-Length {length_text!r} is not a number") from None
        if length < 0:
            self.close_connection = True
            raise BadRequestError(f"Content-Length {length} is negative")
        limit = service.api.limits.max_body_bytes
        if length > limit:
            self.close_connection = True  # the body is not read: the connection cannot go on
            raise PayloadTooLargeError(f"the body is {length} bytes, over the limit of {limit}")
        body = self.rfile.read(length) if length else b""
        self._body_read = True
        return body

    def _only(self, *methods: str) -> None:
        if self.command not in methods:
            raise MethodNotAllowedError(f"{self.command} is not allowed here: use GET", methods)

    def _redirect(self, location: str) -> None:
        self.close_connection = True  # the body, if any, was not read
        self._send(307, b"", "text/plain; charset=utf-8", {"Location": location})

    def _error(self, error: ApiError) -> None:
        if not self._body_read:
            self.close_connection = True  # an unread body would be taken for the next request
        headers: dict[str, str] = {}
        if isinstance(error, UnauthorizedError):
            headers["WWW-Authenticate"] = 'Bearer realm="neardup"'
        allow = getattr(error, "allow", ())
        if allow:
            headers["Allow"] = ", ".join(allow)
        if isinstance(error, UnavailableError):
            headers["Retry-After"] = "1"
        self._json(error.status, error.body(), headers)

    def _json(self, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
        data = _JSON.encode(value)  # msgspec: a fifth of the json module's time
        self._send(status, data, "application/json", headers)

    def _send(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        # the status line, headers and body in one write: one system call and one packet an
        # answer (the base class writes headers and body apart, and dates each answer anew)
        self.log_request(status, len(data))
        if self.server.service.handed_over:
            self.close_connection = True  # the client's next connection reaches the front
        lines = [
            f"{self.protocol_version} {status} {HTTPStatus(status).phrase}",
            f"Server: {self.version_string()}",
            f"Date: {_http_date()}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(data)}",
            "Cache-Control: no-store",
            *(f"{name}: {value}" for name, value in (headers or {}).items()),
        ]
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("iso-8859-1")
        self.wfile.write(head if self.command == "HEAD" else head + data)


#: (second, its Date header value): an answer's date changes once a second
_DATE: tuple[int, str] = (0, "")


def _http_date() -> str:
    global _DATE
    now = int(time.time())
    second, text = _DATE
    if second != now:
        text = email.utils.formatdate(now, usegmt=True)
        _DATE = (now, text)
    return text
