"""The JSON query API (version 1): each endpoint is one function of a parsed request.

The answers are those of the CLI (``running.queries``, ``running.reports``), computed from
the documents a request names: no endpoint reads every cluster or every document. What a
request gets wrong is an ``ApiError`` (errors.py), answered with its status and a JSON body.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from neardup.core import Page
from neardup.state import State

from ..detection import format_id
from ..running import queries, reports
from .errors import BadRequestError, MethodNotAllowedError, NotFoundError
from .metrics import size_class_label
from .sources import StateSource
from .timeline import Timeline

__all__ = ["API_PREFIX", "Api", "Limits", "Request"]

API_PREFIX = "/api/v1"


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may ask for (documented in docs/service.md and the OpenAPI
    description)."""

    #: bytes of a request body (a posted document, a fold request)
    max_body_bytes: int = 4 << 20
    #: items of a fold request (a result page is ten; the textbook folds fifty)
    max_fold_items: int = 200
    #: ``limit`` of a listing
    max_limit: int = 1000

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_fold_items", "max_limit"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Limits({name}={value!r}): use a positive integer")


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    #: the path below API_PREFIX, e.g. "/clusters/0123456789abcdef"
    path: str
    query: Mapping[str, Sequence[str]]
    body: bytes = b""


Handler = Callable[["Api", Request, dict[str, str]], Any]


class Api:
    """The endpoints over one state source; ``answer`` routes a request to one of them."""

    def __init__(
        self, source: StateSource, timeline: Timeline | None = None, limits: Limits | None = None
    ) -> None:
        self.source = source
        self.timeline = timeline
        self.limits = limits or Limits()

    def answer(self, request: Request) -> Any:
        """The JSON answer to a request, or an ApiError."""
        allowed: list[str] = []
        for method, pattern, handler in _ROUTES:
            found = pattern.fullmatch(request.path)
            if found is None:
                continue
            if method != request.method:
                allowed.append(method)
                continue
            return handler(self, request, found.groupdict())
        if allowed:
            methods = tuple(sorted(set(allowed)))
            raise MethodNotAllowedError(
                f"{request.method} is not allowed on {API_PREFIX}{request.path}: use "
                + " or ".join(methods),
                methods,
            )
        raise NotFoundError(
            f"no endpoint {API_PREFIX}{request.path}: see {API_PREFIX}/openapi.json"
        )

    # -- the endpoints -------------------------------------------------------------------

    def stats(self, request: Request, _: dict[str, str]) -> Any:
        with self.source.reading() as state:
            return reports.statistics(state, flush=False)

    def similar_to_url(self, request: Request, _: dict[str, str]) -> Any:
        url = _text(request, "url")
        limit = self._limit(request, 10)
        with self.source.reading() as state:
            return _known(queries.similar_to_stored(state, url, limit), f"url {url!r}")

    def similar_to_content(self, request: Request, _: dict[str, str]) -> Any:
        body = self._object(request)
        content = _field(body, "content", str, required=True)
        content_type = _field(body, "content_type", str) or "text/html"
        url = _field(body, "url", str) or "query:"
        limit = _field(body, "limit", int)
        limit = 10 if limit is None else self._check_limit(limit)
        floor = _field(body, "min_resemblance", float)
        floor = 0.0 if floor is None else _fraction("min_resemblance", floor)
        containment = _field(body, "containment", float)
        if containment is not None and not 0.0 < containment <= 1.0:
            raise BadRequestError(f"containment={containment} must be above 0 and at most 1")
        excerpts = _field(body, "excerpts", bool) or False
        _only(
            body,
            {
                "content",
                "content_type",
                "url",
                "limit",
                "min_resemblance",
                "containment",
                "excerpts",
            },
        )
        page = Page(url=url, content=content, content_type=content_type)
        with self.source.reading() as state:
            if containment is not None and not state.settings.containment_sample:
                raise BadRequestError(
                    "this state keeps no containment index (containment_sample 0): "
                    "leave out containment"
                )
            matches = reports.similar_to_content(state, page, limit, floor, containment, excerpts)
            return {"matches": matches}

    def cluster_of_url(self, request: Request, _: dict[str, str]) -> Any:
        url = _text(request, "url")
        with self.source.reading() as state:
            return _known(queries.cluster_of_url(state, url), f"url {url!r}")

    def cluster(self, request: Request, path: dict[str, str]) -> Any:
        cluster_id = _id(path["id"], "cluster id")
        after_text = _optional_text(request, "after")
        after = None if after_text is None else _id(after_text, "after")
        limit = self._limit(request, 100)
        with self.source.reading() as state:
            answer = queries.cluster_by_id(state, cluster_id, after, limit)
        return _known(answer, f"cluster {path['id']}")

    def largest(self, request: Request, _: dict[str, str]) -> Any:
        limit = self._limit(request, 10)
        with self.source.reading() as state:
            return {"clusters": queries.largest_clusters(state, limit)}

    def growing(self, request: Request, _: dict[str, str]) -> Any:
        limit = self._limit(request, 10)
        with self.source.reading() as state:
            return {
                "window_seconds": None if self.timeline is None else self.timeline.growth.window,
                "clusters": self._growing(state, limit),
            }

    def lost_and_found(self, request: Request, _: dict[str, str]) -> Any:
        url = _text(request, "url")
        limit = self._limit(request, 10)
        with self.source.reading() as state:
            return _known(queries.lost_and_found(state, url, limit), f"url {url!r}")

    def history(self, request: Request, _: dict[str, str]) -> Any:
        url = _text(request, "url")
        with self.source.reading() as state:
            return _known(queries.history(state, url), f"url {url!r}")

    def fold(self, request: Request, _: dict[str, str]) -> Any:
        body = self._object(request)
        raw_items = _field(body, "items", list, required=True)
        threshold = _field(body, "threshold", float)
        _only(body, {"items", "threshold"})
        if len(raw_items) > self.limits.max_fold_items:
            raise BadRequestError(
                f"{len(raw_items)} items to fold, over the limit of {self.limits.max_fold_items}"
            )
        items = [_fold_item(item, at) for at, item in enumerate(raw_items)]
        with self.source.reading() as state:
            chosen = state.settings.threshold if threshold is None else threshold
            return {"groups": queries.fold(state, items, _fraction("threshold", chosen))}

    def dashboard(self, request: Request, _: dict[str, str]) -> Any:
        since = _optional_float(request, "since") or 0.0
        with self.source.reading() as state:
            view = state.view()
            sizes = view.clusters.size_classes()
            return {
                "now": round(time.time(), 3),
                "samples": [] if self.timeline is None else self.timeline.samples(since),
                "size_distribution": [
                    {"size": size_class_label(c), "clusters": sizes[c]} for c in sorted(sizes)
                ],
                "largest": queries.largest_clusters(state, 10),
                "growing": self._growing(state, 10),
                "window_seconds": None if self.timeline is None else self.timeline.growth.window,
            }

    # -- helpers -------------------------------------------------------------------------

    def _growing(self, state: State, limit: int) -> list[dict[str, Any]]:
        if self.timeline is None:
            return []
        view = state.view()
        answer = []
        for cluster, joined in self.timeline.growth.fastest(limit, time.time()):
            root = view.clusters.find(cluster)
            ref = view.documents.ref(root)
            answer.append(
                {
                    "cluster": format_id(root),
                    "joined": joined,
                    "size": view.clusters.info(root).size,
                    "first": {"id": format_id(root), "url": ref.url if ref else None},
                }
            )
        return answer

    def _limit(self, request: Request, default: int) -> int:
        text = _optional_text(request, "limit")
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            raise BadRequestError(f"limit={text!r} is not an integer") from None
        return self._check_limit(value)

    def _check_limit(self, value: int) -> int:
        if not 1 <= value <= self.limits.max_limit:
            raise BadRequestError(f"limit={value} must be from 1 to {self.limits.max_limit}")
        return value

    def _object(self, request: Request) -> dict[str, Any]:
        try:
            body = _BODY.decode(request.body)  # msgspec: strict UTF-8 and JSON, no NaN
        except (ValueError, UnicodeDecodeError) as error:
            raise BadRequestError(f"the body is not JSON: {error}") from None
        if not isinstance(body, dict):
            raise BadRequestError(f"the body must be a JSON object, not {type(body).__name__}")
        return body


def _known(answer: dict[str, Any], what: str) -> dict[str, Any]:
    if not answer.get("known", True):
        raise NotFoundError(f"{what} is not in the state")
    return answer


def _optional_text(request: Request, name: str) -> str | None:
    values = request.query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise BadRequestError(f"{name} is given {len(values)} times: give it once")
    return values[0]


def _text(request: Request, name: str) -> str:
    value = _optional_text(request, name)
    if value is None or not value:
        raise BadRequestError(f"the query parameter {name} is required")
    return value


def _optional_float(request: Request, name: str) -> float | None:
    text = _optional_text(request, name)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise BadRequestError(f"{name}={text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise BadRequestError(f"{name}={text!r} is not a finite number")
    return value


def _id(text: str, name: str) -> int:
    try:
        return queries.parse_id(text)
    except ValueError as error:
        raise BadRequestError(f"{name}: {error}") from None


def _field(body: Mapping[str, Any], name: str, kind: type, required: bool = False) -> Any:
    if name not in body:
        if required:
            raise BadRequestError(f"the field {name!r} is required")
        return None
    value = body[name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadRequestError(
            f"the field {name!r} must be {_KINDS[kind]}, not {type(value).__name__}"
        )
    return value


_KINDS: dict[type, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    list: "a list",
    bool: "true or false",
}


def _only(body: Mapping[str, Any], known: set[str]) -> None:
    unknown = sorted(set(body) - known)
    if unknown:
        raise BadRequestError(
            f"unknown fields: {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )


def _fraction(name: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise BadRequestError(f"{name}={value} must be from 0 to 1")
    return value


def _fold_item(item: Any, at: int) -> str | Page:
    if isinstance(item, str):
        if not item:
            raise BadRequestError(f"items[{at}] is an empty URL")
        return item
    if isinstance(item, dict):
        try:
            _only(item, {"url", "content", "content_type"})
            url = _field(item, "url", str, required=True)
            content = _field(item, "content", str, required=True)
            content_type = _field(item, "content_type", str) or "text/html"
        except BadRequestError as error:
            raise BadRequestError(f"items[{at}]: {error.message}") from None
        return Page(url=url, content=content, content_type=content_type)
    raise BadRequestError(
        f"items[{at}] must be a URL (string) or a page ({{url, content}}), "
        f"not {type(item).__name__}"
    )


#: request bodies: JSON objects (three times the json module's speed on a 5 KB page)
_BODY = msgspec.json.Decoder()

_ID = r"(?P<id>[^/]+)"
_ROUTES: tuple[tuple[str, re.Pattern[str], Handler], ...] = tuple(
    (method, re.compile(pattern), handler)
    for method, pattern, handler in (
        ("GET", "/stats", Api.stats),
        ("GET", "/similar", Api.similar_to_url),
        ("POST", "/similar", Api.similar_to_content),
        ("GET", "/cluster-of", Api.cluster_of_url),
        ("GET", "/clusters/largest", Api.largest),
        ("GET", "/clusters/growing", Api.growing),
        ("GET", "/clusters/" + _ID, Api.cluster),
        ("GET", "/lost-and-found", Api.lost_and_found),
        ("GET", "/history", Api.history),
        ("POST", "/fold", Api.fold),
        ("GET", "/dashboard", Api.dashboard),
    )
)
