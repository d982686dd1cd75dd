"""The service's HTTP applications, on aiohttp: the query service (``neardup serve``: the
API, the dashboard, metrics) and a writer's (``run --http``, ``worker --http``: metrics and
a liveness probe).

Every refusal is a JSON body with its status (``errors.py``); a bearer token (``--api-token``,
its scheme in any case, or ``?access_token=`` for a browser) guards every path but
``/healthz``. The queries run in a bounded pool of threads, off the event loop, so that a
slow one never holds the others, and a request past the pool's queue is a 503.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any, TypeVar

import msgspec
from aiohttp import web

from .api import API_PREFIX, Api
from .endpoints import ENDPOINTS, Endpoint, parse_inputs
from .errors import (
    ApiError,
    BadRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
    VersionError,
)
from .metrics import CONTENT_TYPE, Metrics
from .openapi import openapi
from .sources import StateSource

__all__ = ["MAX_BODY_BYTES", "QueryPool", "dashboard_page", "query_app", "writer_app"]

logger = logging.getLogger(__name__)

#: bytes of a request body (a posted document, a fold request)
MAX_BODY_BYTES = 4 << 20

T = TypeVar("T")
_JSON = msgspec.json.Encoder()
_OPEN = frozenset({"/healthz"})


@functools.cache
def dashboard_page() -> bytes:
    """The dashboard as one document: its style and script (shipped in the package) inline,
    so that a page opened with a token needs no second authorized request, and no CDN."""
    static = resources.files(__package__).joinpath("static")
    page = static.joinpath("index.html").read_text("utf-8")
    for name in ("dashboard.css", "dashboard.js"):
        page = page.replace(f"/*{name}*/", static.joinpath(name).read_text("utf-8"))
    return page.encode()


class QueryPool:
    """Threads the queries run in: ``workers`` at once, ``waiting`` more queued, and a 503
    for the next (a query holds the interpreter lock for its Python; the pool keeps the
    event loop free to accept and to answer the cheap paths)."""

    def __init__(self, workers: int = 4, waiting: int = 256) -> None:
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="neardup-query")
        self._slots = asyncio.Semaphore(workers + waiting)

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        if self._slots.locked():
            raise UnavailableError("too many queries are waiting: ask again in a moment")
        async with self._slots:
            return await asyncio.get_running_loop().run_in_executor(self._executor, call, *args)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


_POOL = web.AppKey("pool", QueryPool)


def _json(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=_JSON.encode(value), status=status, content_type="application/json", headers=headers
    )


def error_response(error: ApiError, headers: dict[str, str] | None = None) -> web.Response:
    """An ApiError as its answer: the status, and the JSON body of errors.py."""
    extra = dict(headers or {})
    if isinstance(error, UnauthorizedError):
        extra["WWW-Authenticate"] = 'Bearer realm="neardup"'
    if isinstance(error, UnavailableError):
        extra["Retry-After"] = "1"
    return _json(error.body(), error.status, extra)


@web.middleware
async def _errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every refusal as JSON: ours, aiohttp's (404, 405, 413), and a failure (500, logged)."""
    try:
        return await handler(request)
    except ApiError as error:
        return error_response(error)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        refused = ApiError(_why(request, error))
        refused.status, refused.code = error.status, error.reason.lower().replace(" ", "_")
        allow = {"Allow": error.headers["Allow"]} if "Allow" in error.headers else None
        return error_response(refused, allow)
    except Exception:
        logger.exception("neardup service: %s %s failed", request.method, request.path)
        failed = ApiError("the request failed inside the service (logged); ask again later")
        return error_response(failed)


def _why(request: web.Request, error: web.HTTPException) -> str:
    """A sentence for one of aiohttp's own refusals."""
    if error.status == 404:
        return f"no endpoint {request.path}: see {API_PREFIX}/openapi.json"
    if error.status == 405:
        allowed = error.headers.get("Allow", "")
        return f"{request.method} is not allowed on {request.path}: use {allowed}"
    if error.status == 413:
        return f"the body is over the limit of {MAX_BODY_BYTES} bytes"
    return error.text or error.reason


@web.middleware
async def _framing(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """A body sent in a transfer coding other than chunked is refused (RFC 9112 asks a 501),
    and the connection closed: the server would read the coded bytes as the body; so is a
    request of another version than HTTP/1.x (the parser takes any digits)."""
    if request.version.major != 1 or request.version.minor > 1:
        version = f"HTTP/{request.version.major}.{request.version.minor}"
        refused = error_response(VersionError(f"{version} is not spoken here: use HTTP/1.1"))
        refused.force_close()
        return refused
    codings = [
        coding.strip().lower()
        for header in request.headers.getall("Transfer-Encoding", [])
        for coding in header.split(",")
    ]
    if any(coding != "chunked" for coding in codings):
        response = error_response(
            UnsupportedError(
                f"the transfer coding {', '.join(codings)} is not supported: send "
                "the body as it is, or chunked"
            )
        )
        response.force_close()
        return response
    return await handler(request)


def _token_guard(token: str) -> Any:
    wanted = token.encode()

    @web.middleware
    async def guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path not in _OPEN:
            scheme, _, given = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer":
                given = request.query.get("access_token", "")
            if not hmac.compare_digest(given.strip().encode(), wanted):
                raise UnauthorizedError(
                    "this service needs its token: Authorization: Bearer TOKEN (--api-token)"
                )
        return await handler(request)

    return guard


def _application(token: str | None) -> web.Application:
    middlewares = [_errors, _framing] + ([] if token is None else [_token_guard(token)])
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=middlewares)
    app.router.add_get("/healthz", _healthz)
    return app


async def _healthz(request: web.Request) -> web.Response:
    return _json({"status": "ok"})


def _metrics_handler(metrics: Metrics, pool: QueryPool | None) -> Any:
    async def handler(request: web.Request) -> web.Response:
        # the state's numbers are a few reads: in the pool beside the queries, if there is one
        rendered = await (
            asyncio.get_running_loop().run_in_executor(None, metrics.render)
            if pool is None
            else pool.run(metrics.render)
        )
        return web.Response(body=rendered, headers={"Content-Type": CONTENT_TYPE})

    return handler


def writer_app(metrics: Metrics, token: str | None = None) -> web.Application:
    """A writer's service: ``/metrics`` and ``/healthz``; every other path says where the
    queries are answered."""
    app = _application(token)
    app.router.add_get("/metrics", _metrics_handler(metrics, None))

    async def elsewhere(request: web.Request) -> web.Response:
        raise NotFoundError(
            f"{request.path}: a writer serves /metrics and /healthz only; the API and the "
            "dashboard are `neardup serve --state DIR` (docs/service.md)"
        )

    app.router.add_route("*", "/{tail:.*}", elsewhere)
    return app


def query_app(
    source: StateSource,
    token: str | None = None,
    metrics: Metrics | None = None,
    pool: QueryPool | None = None,
) -> web.Application:
    """``neardup serve``'s service over ``source``: the API, the dashboard, metrics."""
    api = Api(source)
    pool = pool or QueryPool()
    metrics = metrics or Metrics(source)
    app = _application(token)
    app[_POOL] = pool
    app.on_cleanup.append(_close_pool)
    app.router.add_get("/metrics", _metrics_handler(metrics, pool))
    app.router.add_get("/", _dashboard)
    description = _JSON.encode(openapi(secured=token is not None))
    app.router.add_get(f"{API_PREFIX}/openapi.json", _fixed(description))
    for endpoint in ENDPOINTS:
        app.router.add_route(
            endpoint.method, API_PREFIX + endpoint.path, _handler(api, pool, endpoint)
        )
    return app


async def _close_pool(app: web.Application) -> None:
    app[_POOL].close()


async def _dashboard(request: web.Request) -> web.Response:
    return web.Response(body=dashboard_page(), content_type="text/html", charset="utf-8")


def _fixed(body: bytes) -> Any:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    return handler


def _handler(api: Api, pool: QueryPool, endpoint: Endpoint) -> Any:
    decoder = None if endpoint.body is None else msgspec.json.Decoder(endpoint.body)

    async def handler(request: web.Request) -> web.Response:
        inputs = parse_inputs(endpoint, request.query, request.match_info)
        if decoder is not None:
            raw = await request.read()
            try:
                inputs["query"] = decoder.decode(raw)
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                raise BadRequestError(f"the body is refused: {error}") from None
        answer = await pool.run(functools.partial(endpoint.call, api, **inputs))
        return _json(answer)

    return handler
